/* Discrete-event simulation over action lists: a lock-step walk in which
 * every rank keeps a clock, sends stamp their message's arrival, receives
 * wait for it, and an ALLREDUCE starts when its last holder arrives. When
 * ranks share fewer cores than there are ranks, a second engine plays the
 * lists in global time order with the cores shared among the ranks that
 * compute (processor sharing). wp_validate_and_simulate plays the walk
 * inside the validator's. */
#include "sched/simulate.h"
#include "topo/collective_cost.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/lanes.h"
#include "sched/validate.h"
#include "sched/walk.h"
#include "util/huge_pages.h"

void wp_cost_model_default(struct wp_cost_model *c)
{
    memset(c, 0, sizeof *c);
    c->tf = 1;
    c->tb = 2;
    c->prefetch = 1;
}

void wp_cost_model_per_stage(struct wp_cost_model *c, const double *f, const double *b, const double *w,
                             const double *boundary_s, const double *allreduce_s)
{
    wp_cost_model_default(c);
    c->stage_f = f;
    c->stage_b = b;
    c->stage_w = w;
    c->boundary_s = boundary_s;
    c->stage_allreduce_s = allreduce_s;
    c->prefetch = 1;
}

/* What one compute does to its rank: the seconds it takes, and the
 * activations it takes hold of (F: the stage's weight) or frees (the op
 * that frees them: minus the weight), so that a compute is played without
 * a branch on its op. */
struct compute_step {
    double seconds;
    double held_delta;
};

struct sim {
    const struct wp_schedule *s;
    const struct wp_cost_model *cost;
    struct wp_sim_result *res;
    double *clock;     /* per rank */
    double *held;      /* per rank */
    double *link_free; /* per (src * P + dst) */
    struct compute_step *compute; /* per (op F, B, W) * stages + stage */
    int *node_of;      /* per rank, with a cluster: node index */
    int *type_of;      /* per rank, with a cluster: node type index */
    struct wp_lanes lanes; /* with a cluster: each node's network lanes (fabric NICs, at least 1) */
    int have_lanes;
    /* with grad_overlap: per rank * stages + stage, when the rank began and
     * ended the stage's last pass so far that adds to its weight gradients
     * (-1: none; ends after the P x stages starts) */
    double *grad_pass_start;
    int grad_op; /* that pass: W when the backward is split, else B */
};

/* Activations held from F until the op that frees them (B, or W when the
 * backward is split), and the peak of what a rank holds. The same
 * additions as a branch per op: x + -w is x - w, x + 0 is x, and with
 * positive stage weights only an F can take held past its peak. */
static inline void hold_activations(const struct compute_step *step, double *held, double *peak)
{
    *held += step->held_delta;
    if (*held > *peak)
        *peak = *held;
}

static int record_event(const struct sim *sm, int rank, int op, int stage, int mb, int peer, double start,
                        double end, struct wp_err *err)
{
    struct wp_sim_result *res = sm->res;
    if (res->nevents == res->cap_events) {
        long cap = res->cap_events ? 2 * res->cap_events : 1024;
        struct wp_sim_event *grown = realloc(res->events, (size_t)cap * sizeof *grown);
        if (!grown)
            return wp_errorf(err, "out of memory for the timeline");
        res->events = grown;
        res->cap_events = cap;
    }
    res->events[res->nevents++] = (struct wp_sim_event){rank, (int8_t)op, stage, mb, peer, start, end};
    return 0;
}

static inline int add_event(const struct sim *sm, int rank, int op, int stage, int mb, int peer, double start,
                            double end, struct wp_err *err)
{
    return sm->cost->record_events ? record_event(sm, rank, op, stage, mb, peer, start, end, err) : 0;
}

static inline double bandwidth_factor(const struct wp_cost_model *c, int src, int dst, double t)
{
    double f = 1;
    for (int i = 0; i < c->nchanges; i++) {
        const struct wp_bandwidth_change *ch = &c->changes[i];
        if (ch->time_s <= t && (ch->src < 0 || ch->src == src) && (ch->dst < 0 || ch->dst == dst))
            f = ch->factor;
    }
    return f;
}

/* Latency and seconds per byte of the link between two ranks. */
static void link_params(const struct sim *sm, int a, int b, double *alpha, double *beta)
{
    const struct wp_cluster *cl = sm->cost->cluster;
    if (!cl) {
        *alpha = 0;
        *beta = 0;
        return;
    }
    int na = sm->node_of[a], nb = sm->node_of[b];
    if (na != nb || cl->ntypes == 0) {
        *alpha = cl->network.given ? cl->network.latency_s : 0;
        *beta = cl->network.given ? 1.0 / cl->network.bandwidth_Bps : 0;
        return;
    }
    const struct wp_node_type *t = &cl->types[sm->type_of[a]];
    int ga = t->ngpus ? a % t->ngpus : 0, gb = t->ngpus ? b % t->ngpus : 0;
    double bw = t->ngpus > 1 ? t->link_Bps[ga * t->ngpus + gb] : 0;
    if (bw <= 0 && cl->intra_network.given) { /* no GPU link: the calibrated intra-node level */
        *alpha = cl->intra_network.latency_s;
        *beta = 1.0 / cl->intra_network.bandwidth_Bps;
        return;
    }
    *alpha = 1e-6;
    *beta = bw > 0 ? 1.0 / bw : 0;
}

/* With a cluster, a message between nodes also waits for a lane of its
 * source node's network: as many as the node type has fabric NICs (at least
 * one), the earliest gap in time free of other messages (lanes.h). Returns
 * when the message may start and books the lane until it ends; *occupy, the
 * seconds its bytes take alone on the lane, becomes the seconds they take
 * there (more where a gradient sum shares the lane). */
static double nic_book_lane(struct sim *sm, int src, double start, double *occupy)
{
    int lane = 0, node = sm->node_of[src];
    double end;
    start = wp_lanes_earliest(&sm->lanes, node, WP_LANE_MESSAGE, start, *occupy, &lane, &end);
    if (wp_lanes_book(&sm->lanes, node, lane, WP_LANE_MESSAGE, start, end))
        sm->have_lanes = 0; /* no memory: lanes no longer modelled */
    *occupy = end - start;
    return start;
}

static inline double nic_book(struct sim *sm, int src, int dst, double start, double *occupy)
{
    if (!sm->have_lanes || sm->node_of[src] == sm->node_of[dst])
        return start;
    return nic_book_lane(sm, src, start, occupy);
}

/* Whether rank i of the n is the first of them on its node. */
static int first_on_node(const struct sim *sm, const int *ranks, int i)
{
    for (int j = 0; j < i; j++)
        if (sm->node_of[ranks[j]] == sm->node_of[ranks[i]])
            return 0;
    return 1;
}

/* With a cluster, an allreduce whose ranks span nodes also holds a lane of
 * each of those nodes' networks while it runs (its rings cross them;
 * concurrent allreduces over one node's network take turns, and messages
 * share the lane with them: lanes.h). Returns when it may start, books the
 * lanes, and makes *duration the seconds it then takes: until the node
 * whose lane it shares most is done. */
static double nic_book_collective(struct sim *sm, const int *ranks, int n, double start, double *duration)
{
    if (!sm->have_lanes || n < 2)
        return start;
    int spans = 0;
    for (int i = 1; i < n && !spans; i++)
        spans = sm->node_of[ranks[i]] != sm->node_of[ranks[0]];
    if (!spans)
        return start;
    /* the earliest time every node has a lane free of other sums until the
     * slowest of them is done */
    double end = start;
    for (int moved = 1; moved;) {
        moved = 0;
        end = start;
        for (int i = 0; i < n && !moved; i++) {
            int lane;
            double e, t = wp_lanes_earliest(&sm->lanes, sm->node_of[ranks[i]], WP_LANE_BULK, start, *duration,
                                            &lane, &e);
            if (t > start) {
                start = t;
                moved = 1;
            } else if (e > end)
                end = e;
        }
        for (int i = 0; i < n && !moved; i++) {
            int lane;
            double t = wp_lanes_clear(&sm->lanes, sm->node_of[ranks[i]], WP_LANE_BULK, start, end, &lane);
            if (t > start) {
                start = t;
                moved = 1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (!first_on_node(sm, ranks, i))
            continue;
        int lane = 0;
        wp_lanes_clear(&sm->lanes, sm->node_of[ranks[i]], WP_LANE_BULK, start, end, &lane);
        if (wp_lanes_book(&sm->lanes, sm->node_of[ranks[i]], lane, WP_LANE_BULK, start, end))
            sm->have_lanes = 0;
    }
    *duration = end - start;
    return start;
}

/* Whether message_time would look up per-boundary costs past either end
 * (a message that crosses no boundary: only unchecked lists have one). */
static inline int boundary_unknown(const struct sim *sm, int boundary)
{
    const struct wp_cost_model *c = sm->cost;
    return (c->boundary_s || (c->cluster && c->boundary_bytes)) &&
           (unsigned)boundary >= (unsigned)(sm->s->nstages - 1);
}

/* Seconds a message occupies its link (bandwidth part) and its latency. */
static inline void message_time(const struct sim *sm, int src, int dst, int boundary, double t,
                                double *occupy, double *latency)
{
    const struct wp_cost_model *c = sm->cost;
    double f = bandwidth_factor(c, src, dst, t);
    if (!(f > 0))
        f = 1e-9;
    if (c->boundary_s) {
        *occupy = c->boundary_s[boundary] / f;
        *latency = 0;
    } else if (c->cluster) {
        double alpha, beta;
        link_params(sm, src, dst, &alpha, &beta);
        double bytes = c->message_bytes;
        if (c->boundary_bytes) {
            int ra = sm->s->place[boundary].nreplicas, rb = sm->s->place[boundary + 1].nreplicas;
            bytes = c->boundary_bytes[boundary] / (ra > rb ? ra : rb);
        }
        *occupy = bytes * beta / f;
        *latency = alpha;
    } else {
        *occupy = c->tc / f;
        *latency = 0;
    }
}

static double compute_cost(const struct sim *sm, int op, int stage)
{
    const struct wp_cost_model *c = sm->cost;
    if (c->stage_f)
        return op == WP_OP_F ? c->stage_f[stage] : op == WP_OP_B ? c->stage_b[stage] : c->stage_w[stage];
    double t = op == WP_OP_F ? c->tf : op == WP_OP_B ? (sm->s->split_backward ? c->tb : c->tb + c->tw) : c->tw;
    return t * wp_stage_weight(sm->s, stage);
}

/* The compute_step of every op F, B, W and stage, looked up per action
 * (seconds 0 for an op whose measured times were not given: no list that
 * runs it has them). */
static struct compute_step *compute_table(const struct sim *sm)
{
    const struct wp_cost_model *c = sm->cost;
    int S = sm->s->nstages;
    struct compute_step *t = calloc((size_t)(3 * S), sizeof *t);
    for (int op = WP_OP_F; t && op <= WP_OP_W; op++)
        for (int st = 0; st < S; st++) {
            if (!c->stage_f || (op == WP_OP_F ? c->stage_f : op == WP_OP_B ? c->stage_b : c->stage_w))
                t[op * S + st].seconds = compute_cost(sm, op, st);
            double w = wp_stage_weight(sm->s, st);
            t[op * S + st].held_delta = op == WP_OP_F ? w : op == wp_sched_frees_op(sm->s) ? -w : 0;
        }
    return t;
}

/* A send at time now: *msg is when its message arrives (prefetch: the
 * transfer starts at the send, once the link is free), or when it was
 * posted. */
static inline int send_message(struct sim *sm, int rank, const struct wp_action *a, double now, double *msg,
                               struct wp_err *err)
{
    if (!sm->cost->prefetch) {
        *msg = now;
        return 0;
    }
    double occupy, latency;
    int peer = a->peer, stage = a->stage, boundary = a->op == WP_OP_SEND_ACT ? stage : stage - 1;
    if (boundary_unknown(sm, boundary)) /* unchecked lists (validate.h) */
        return wp_errorf(err, "rank %d: %s of stage %d crosses no stage boundary", rank, wp_op_name(a->op), stage);
    size_t link = (size_t)rank * (size_t)sm->s->nranks + (size_t)peer;
    double start = now > sm->link_free[link] ? now : sm->link_free[link];
    message_time(sm, rank, peer, boundary, start, &occupy, &latency);
    start = nic_book(sm, rank, peer, start, &occupy);
    sm->link_free[link] = start + occupy;
    *msg = start + occupy + latency;
    return add_event(sm, rank, a->op, stage, a->microbatch, peer, start, *msg, err);
}

/* A receive, at time now, of the message that send_message gave msg:
 * *arrival is when it is there (without prefetch the transfer starts only
 * now, once both sides are there). */
static int receive_posted(struct sim *sm, int rank, const struct wp_action *a, double now, double msg,
                          double *arrival, struct wp_err *err)
{
    double occupy, latency;
    int peer = a->peer, stage = a->stage, boundary = a->op == WP_OP_RECV_ACT ? stage - 1 : stage;
    if (boundary_unknown(sm, boundary)) /* unchecked lists (validate.h) */
        return wp_errorf(err, "rank %d: %s of stage %d crosses no stage boundary", rank, wp_op_name(a->op), stage);
    size_t link = (size_t)peer * (size_t)sm->s->nranks + (size_t)rank;
    double start = msg > now ? msg : now;
    if (sm->link_free[link] > start)
        start = sm->link_free[link];
    message_time(sm, peer, rank, boundary, start, &occupy, &latency);
    start = nic_book(sm, peer, rank, start, &occupy);
    sm->link_free[link] = start + occupy;
    *arrival = start + occupy + latency;
    int send_op = a->op == WP_OP_RECV_ACT ? WP_OP_SEND_ACT : WP_OP_SEND_GRAD;
    return add_event(sm, peer, send_op, stage, a->microbatch, rank, start, *arrival, err);
}

/* A pass of the rank that adds to the stage's weight gradients ran from
 * start to end (the last one before the ALLREDUCE is the final one). */
static void grad_pass(struct sim *sm, int rank, int stage, double start, double end)
{
    size_t at = (size_t)rank * sm->s->nstages + stage;
    sm->grad_pass_start[at] = start;
    sm->grad_pass_start[(size_t)sm->s->nranks * sm->s->nstages + at] = end;
}

/* Plays a run of one rank's actions: computes advance its clock, a
 * receive waits for its message. The rank's clock and tallies stay in
 * registers for the run. */
static int sim_run(void *ctx, int rank, int from, int to, double *msg, struct wp_err *err)
{
    struct sim *sm = ctx;
    const struct wp_schedule *s = sm->s;
    const struct wp_action *a = s->lists[rank].actions + from, *end = s->lists[rank].actions + to;
    const struct compute_step *compute = sm->compute;
    const int S = s->nstages, events = sm->cost->record_events, prefetch = sm->cost->prefetch;
    double now = sm->clock[rank], busy = sm->res->busy[rank];
    double held = sm->held[rank], peak = sm->res->peak_activations[rank];
    int rc = 0;
    for (; a < end; a++) {
        int op = a->op;
        if ((unsigned)a->stage >= (unsigned)S) { /* the lists may not be checked yet (validate.h) */
            rc = wp_errorf(err, "rank %d step %ld: stage %d out of range", rank, (long)(a - s->lists[rank].actions),
                           (int)a->stage);
            break;
        }
        if (op <= WP_OP_W) { /* F, B, W */
            const struct compute_step *step = &compute[op * S + a->stage];
            double done = now + step->seconds;
            if (sm->grad_pass_start && op == sm->grad_op)
                grad_pass(sm, rank, a->stage, now, done);
            busy += done - now;
            if (events)
                rc = add_event(sm, rank, op, a->stage, a->microbatch, -1, now, done, err);
            now = done;
            hold_activations(step, &held, &peak);
        } else if (op == WP_OP_RECV_ACT || op == WP_OP_RECV_GRAD) {
            double arrival = *msg++;
            if (!prefetch)
                rc = receive_posted(sm, rank, a, now, arrival, &arrival, err);
            if (arrival > now)
                now = arrival;
        } else if (op == WP_OP_SEND_ACT || op == WP_OP_SEND_GRAD) {
            rc = send_message(sm, rank, a, now, msg++, err);
        } else if (op == WP_OP_STEP) {
            double step_s = sm->cost->stage_step_s ? sm->cost->stage_step_s[a->stage] : 0;
            if (step_s > 0) {
                rc = add_event(sm, rank, op, a->stage, -1, -1, now, now + step_s, err);
                now += step_s;
            }
        } else {
            rc = wp_errorf(err, "rank %d step %ld: unexpected action", rank, (long)(a - s->lists[rank].actions));
        }
        if (rc)
            break;
    }
    sm->clock[rank] = now;
    sm->res->busy[rank] = busy;
    sm->held[rank] = held;
    sm->res->peak_activations[rank] = peak;
    return rc;
}

/* A stage's gradient allreduce over its n ranks: seconds for any part of
 * its gradient (the whole: total_bytes). */
struct allreduce_model {
    double given_s;     /* the planner's seconds for the whole gradient, or -1 */
    double total_bytes; /* the gradient (units of beta without a cluster; 1 when unknown) */
    struct wp_hier_allreduce hier;
};

static double allreduce_model_s(const void *ctx, double bytes)
{
    const struct allreduce_model *m = ctx;
    if (m->given_s >= 0)
        return m->given_s * bytes / m->total_bytes;
    return wp_hier_allreduce_s(&m->hier, bytes);
}

static void allreduce_model(const struct sim *sm, int stage, int n, const int *ranks, struct allreduce_model *m)
{
    const double *known = sm->cost->stage_gradient_bytes;
    *m = (struct allreduce_model){-1, known && known[stage] > 0 ? known[stage] : 1, {1, n, 1, {0, 1.0}, {0, 0}}};
    if (sm->cost->stage_allreduce_s) {
        m->given_s = sm->cost->stage_allreduce_s[stage];
    } else if (sm->cost->cluster) {
        /* NCCL-like: a ring inside each node over its slowest link, rings
         * across nodes over the network (collective_cost.h) */
        double share = sm->cost->gradient_bytes * wp_stage_weight(sm->s, stage);
        m->total_bytes = known ? known[stage] : share * sm->s->place[stage].nreplicas;
        struct wp_link_cost intra = {0, 0}, inter = {0, 0};
        int nodes = 0, per_node = 0, top = 0;
        for (int i = 0; i < n; i++)
            top = sm->node_of[ranks[i]] > top ? sm->node_of[ranks[i]] : top;
        int *count = calloc((size_t)top + 1, sizeof *count), *prev = malloc(((size_t)top + 1) * sizeof *prev);
        for (int i = 0; count && prev && i <= top; i++)
            prev[i] = -1;
        for (int i = 0; count && prev && i < n; i++) {
            int node = sm->node_of[ranks[i]];
            if (count[node]++ == 0)
                nodes++;
            per_node = count[node] > per_node ? count[node] : per_node;
            if (prev[node] >= 0) { /* the in-node ring's links: each member to the next on its node */
                double a, b;
                link_params(sm, prev[node], ranks[i], &a, &b);
                intra.alpha_s = a > intra.alpha_s ? a : intra.alpha_s;
                intra.beta_s_per_byte = b > intra.beta_s_per_byte ? b : intra.beta_s_per_byte;
            }
            prev[node] = ranks[i];
        }
        if (!count || !prev) { /* no memory for the tally: one flat ring over the network */
            nodes = n;
            per_node = 1;
        }
        free(count);
        free(prev);
        const struct wp_network *net = &sm->cost->cluster->network;
        if (net->given)
            inter = (struct wp_link_cost){net->latency_s, 1.0 / net->bandwidth_Bps};
        m->hier = (struct wp_hier_allreduce){nodes, per_node, 1, intra, inter};
    } else {
        /* ring allreduce: 2(n-1) steps, each 1/n of the gradients (one ring of n at beta 1) */
        double units = sm->cost->tar * wp_stage_weight(sm->s, stage) * sm->s->place[stage].nreplicas;
        if (known && known[stage] > 0) /* a layer table's bytes: the parts priced in proportion */
            m->given_s = wp_hier_allreduce_s(&m->hier, units);
        else
            m->total_bytes = units;
    }
}

/* A bucket's sum holds its nodes' network lanes while it runs, as a whole
 * allreduce does (times from the final pass's start). */
struct bucket_lanes {
    struct sim *sm;
    const int *ranks;
    int n;
    double pass_start;
};

static double book_bucket(void *ctx, double ready_s, double *seconds)
{
    struct bucket_lanes *b = ctx;
    return nic_book_collective(b->sm, b->ranks, b->n, b->pass_start + ready_s, seconds) - b->pass_start;
}

/* When a stage's allreduce over its n ranks runs, the last of them there
 * at `arrive`: from *start, the rank's clocks all at *end. Without overlap
 * the sum starts at `arrive`; with it, its buckets run from the slowest
 * holder's start of its final pass (grad_overlap.h), and the holders go on
 * once both they are all there and the last bucket is done. Either way a
 * sum holds its nodes' network lanes while it runs. */
static void allreduce_span(struct sim *sm, int stage, int n, const int *ranks, double arrive, double *start,
                           double *end)
{
    struct allreduce_model m;
    allreduce_model(sm, stage, n, ranks, &m);
    /* the holder whose final pass ended last, and that pass (longer than
     * its cost when ranks share cores) */
    double pass_start = sm->grad_pass_start ? 0 : -1, pass_end = -1;
    for (int i = 0; i < n && pass_start >= 0; i++) {
        size_t at = (size_t)ranks[i] * sm->s->nstages + stage;
        double t0 = sm->grad_pass_start[at], t1 = sm->grad_pass_start[(size_t)sm->s->nranks * sm->s->nstages + at];
        if (t0 < 0)
            pass_start = -1;
        else if (t1 > pass_end) {
            pass_start = t0;
            pass_end = t1;
        }
    }
    if (pass_start < 0) { /* off, or a holder that made none of the stage's gradients */
        double duration = allreduce_model_s(&m, m.total_bytes);
        *start = nic_book_collective(sm, ranks, n, arrive, &duration);
        *end = *start + duration;
        return;
    }
    const struct wp_cost_model *c = sm->cost;
    struct bucket_lanes lanes = {sm, ranks, n, pass_start};
    struct wp_bucket_cost cost = {allreduce_model_s, &m, book_bucket, &lanes};
    struct wp_grad_overlap o;
    const struct wp_grad_layers *layers = c->stage_grad_layers ? &c->stage_grad_layers[stage] : NULL;
    wp_grad_overlap_time(pass_end - pass_start, m.total_bytes, layers, c->grad_bucket_bytes, &cost, &o);
    *start = pass_start + o.first_start_s;
    *end = pass_start + o.end_s > arrive ? pass_start + o.end_s : arrive;
}

static int sim_collective(void *ctx, int stage, int n, const int *ranks, const int *steps, struct wp_err *err)
{
    struct sim *sm = ctx;
    double arrive = 0, start, end;
    for (int i = 0; i < n; i++)
        if (sm->clock[ranks[i]] > arrive)
            arrive = sm->clock[ranks[i]];
    allreduce_span(sm, stage, n, ranks, arrive, &start, &end);
    for (int i = 0; i < n; i++) {
        sm->clock[ranks[i]] = end;
        if (add_event(sm, ranks[i], WP_OP_ALLREDUCE, stage, -1, -1, start, end, err))
            return -1;
    }
    (void)steps;
    return 0;
}

/* ---- ranks sharing cores ---------------------------------------------------------- */

/* Plays the lists in time order: ranks run their non-compute actions at
 * once (sends stamp an arrival, receives wait for it, an ALLREDUCE waits for
 * all holders and then takes its ring time), computes share the cores. */
static int simulate_shared_cores(struct sim *sm, struct wp_err *err)
{
    const struct wp_schedule *s = sm->s;
    struct wp_msg_match match;
    if (wp_match_messages(s, &match, err))
        return -1;
    const struct wp_msg_match *mm = &match;
    int P = s->nranks;
    int *pc = calloc((size_t)P, sizeof *pc), *arrived = calloc((size_t)s->nstages, sizeof *arrived);
    int *at_collective = calloc((size_t)P, sizeof *at_collective);
    double *remaining = malloc((size_t)P * sizeof *remaining), *started = calloc((size_t)P, sizeof *started);
    double *wait_until = calloc((size_t)P, sizeof *wait_until);
    int *ranks = malloc((size_t)P * sizeof *ranks);
    /* per global action id of a send: when its message arrives */
    double *msg_time = malloc((size_t)(mm->total ? mm->total : 1) * sizeof *msg_time);
    if (!pc || !arrived || !at_collective || !remaining || !started || !wait_until || !ranks || !msg_time) {
        free(pc); free(arrived); free(at_collective); free(remaining); free(started); free(wait_until); free(ranks);
        free(msg_time);
        wp_match_destroy(&match);
        return wp_errorf(err, "out of memory");
    }
    for (int r = 0; r < P; r++)
        remaining[r] = -1;
    for (long g = 0; g < mm->total; g++)
        msg_time[g] = -1;
    double now = 0;
    int rc = 0;
    for (;;) {
        /* run every rank as far as it goes without time passing */
        int progress = 1;
        while (progress && rc == 0) {
            progress = 0;
            for (int r = 0; r < P && rc == 0; r++) {
                while (remaining[r] < 0 && wait_until[r] <= now && pc[r] < s->lists[r].count) {
                    const struct wp_action *a = &s->lists[r].actions[pc[r]];
                    long gid = mm->offset[r] + pc[r];
                    if (wp_op_is_compute(a->op)) {
                        remaining[r] = compute_cost(sm, a->op, a->stage);
                        started[r] = now;
                        progress = 1;
                        break;
                    }
                    if (wp_op_is_send(a->op)) {
                        double occupy, latency;
                        message_time(sm, r, a->peer, a->op == WP_OP_SEND_ACT ? a->stage : a->stage - 1, now,
                                     &occupy, &latency);
                        double at = nic_book(sm, r, a->peer, now, &occupy);
                        msg_time[gid] = at + occupy + latency;
                    } else if (wp_op_is_recv(a->op)) {
                        double arrival = msg_time[mm->partner[gid]];
                        if (arrival < 0 || arrival > now)
                            break;
                    } else if (a->op == WP_OP_STEP && sm->cost->stage_step_s && sm->cost->stage_step_s[a->stage] > 0) {
                        wait_until[r] = now + sm->cost->stage_step_s[a->stage];
                    } else if (a->op == WP_OP_ALLREDUCE) {
                        if (!at_collective[r]) {
                            at_collective[r] = 1;
                            arrived[a->stage]++;
                        }
                        const struct wp_stage_place *pl = &s->place[a->stage];
                        int n = pl->ncopies * pl->nreplicas;
                        if (arrived[a->stage] < n)
                            break;
                        double start, end;
                        allreduce_span(sm, a->stage, n, pl->ranks, now, &start, &end);
                        for (int i = 0; i < n; i++) {
                            int q = pl->ranks[i];
                            wait_until[q] = end;
                            at_collective[q] = 0;
                            pc[q]++;
                            rc |= add_event(sm, q, WP_OP_ALLREDUCE, a->stage, -1, -1, start, end, err);
                        }
                        arrived[a->stage] = 0;
                        progress = 1;
                        continue;
                    }
                    pc[r]++;
                    progress = 1;
                }
            }
        }
        if (rc)
            break;
        int computing = 0, done = 1;
        double next = INFINITY;
        for (int r = 0; r < P; r++) {
            computing += remaining[r] >= 0;
            done &= pc[r] >= s->lists[r].count;
            if (wait_until[r] > now && wait_until[r] < next)
                next = wait_until[r];
            if (remaining[r] < 0 && pc[r] < s->lists[r].count && wp_op_is_recv(s->lists[r].actions[pc[r]].op)) {
                double arrival = msg_time[mm->partner[mm->offset[r] + pc[r]]];
                if (arrival > now && arrival < next)
                    next = arrival;
            }
        }
        if (done)
            break;
        double rate = computing > sm->cost->cores ? (double)sm->cost->cores / computing : 1.0;
        for (int r = 0; r < P; r++)
            if (remaining[r] >= 0 && now + remaining[r] / rate < next)
                next = now + remaining[r] / rate;
        if (!isfinite(next)) {
            rc = wp_errorf(err, "deadlock while simulating shared cores");
            break;
        }
        double dt = next - now;
        now = next;
        for (int r = 0; r < P; r++) {
            if (remaining[r] < 0)
                continue;
            sm->res->busy[r] += dt;
            remaining[r] -= dt * rate;
            if (remaining[r] > 1e-12 * (1 + now))
                continue;
            const struct wp_action *a = &s->lists[r].actions[pc[r]];
            hold_activations(&sm->compute[a->op * s->nstages + a->stage], &sm->held[r],
                             &sm->res->peak_activations[r]);
            if (sm->grad_pass_start && a->op == sm->grad_op)
                grad_pass(sm, r, a->stage, started[r], now);
            rc |= add_event(sm, r, a->op, a->stage, a->microbatch, -1, started[r], now, err);
            remaining[r] = -1;
            pc[r]++;
        }
    }
    for (int r = 0; r < P; r++)
        sm->clock[r] = now;
    free(pc); free(arrived); free(at_collective); free(remaining); free(started); free(wait_until); free(ranks);
    free(msg_time);
    wp_match_destroy(&match);
    return rc;
}

void wp_sim_result_destroy(struct wp_sim_result *res)
{
    free(res->busy);
    free(res->peak_activations);
    free(res->events);
    memset(res, 0, sizeof *res);
}

/* The simulator's tables and, with a cluster, where ranks sit: everything
 * a simulation needs before its walk. sim_end frees them, also after an
 * error here. */
static int sim_begin(struct sim *out, const struct wp_schedule *s, const struct wp_cost_model *cost,
                     struct wp_sim_result *res, struct wp_err *err)
{
    memset(res, 0, sizeof *res);
    int P = s->nranks;
    res->nranks = P;
    res->busy = calloc((size_t)P, sizeof *res->busy);
    res->peak_activations = calloc((size_t)P, sizeof *res->peak_activations);
    struct sim sm = {s, cost, res, NULL, NULL, NULL, NULL, NULL, NULL, {0, NULL, NULL}, 0, NULL,
                     s->split_backward ? WP_OP_W : WP_OP_B};
    sm.clock = calloc((size_t)P, sizeof *sm.clock);
    sm.held = calloc((size_t)P, sizeof *sm.held);
    sm.link_free = wp_huge_calloc((size_t)P * (size_t)P, sizeof *sm.link_free);
    sm.compute = compute_table(&sm);
    sm.node_of = calloc((size_t)P, sizeof *sm.node_of);
    sm.type_of = calloc((size_t)P, sizeof *sm.type_of);
    int rc = 0;
    if (cost->grad_overlap) {
        size_t n = 2 * (size_t)P * (size_t)s->nstages;
        sm.grad_pass_start = malloc((n ? n : 1) * sizeof *sm.grad_pass_start);
        for (size_t i = 0; sm.grad_pass_start && i < n; i++)
            sm.grad_pass_start[i] = -1;
        if (!sm.grad_pass_start)
            rc = wp_errorf(err, "out of memory");
    }
    if (!res->busy || !res->peak_activations || !sm.clock || !sm.held || !sm.link_free || !sm.compute ||
        !sm.node_of || !sm.type_of)
        rc = wp_errorf(err, "out of memory");
    if (rc == 0 && cost->cluster) {
        /* ranks fill nodes in order: the job's own rank list when it has one,
         * else as many ranks per node as the node type has GPUs (1 if none) */
        const struct wp_cluster *cl = cost->cluster;
        int nodes_total = 0;
        for (int ti = 0; ti < cl->ntypes; ti++)
            nodes_total += cl->types[ti].count;
        if (cost->ranks_per_node > 0) {
            if ((P + cost->ranks_per_node - 1) / cost->ranks_per_node > nodes_total)
                rc = wp_errorf(err, "%d ranks at %d per node need %d nodes; the cluster has %d", P,
                               cost->ranks_per_node, (P + cost->ranks_per_node - 1) / cost->ranks_per_node,
                               nodes_total);
            for (int r = 0; rc == 0 && r < P; r++) {
                int node = r / cost->ranks_per_node, ti = 0, below = 0;
                while (ti < cl->ntypes - 1 && node >= below + cl->types[ti].count)
                    below += cl->types[ti++].count;
                sm.node_of[r] = node;
                sm.type_of[r] = ti;
            }
        } else if (cl->nranks >= P) {
            for (int r = 0; r < P; r++) {
                sm.node_of[r] = cl->ranks[r].node;
                sm.type_of[r] = cl->nodes[cl->ranks[r].node].type;
            }
        } else {
            int r = 0, node = 0;
            for (int ti = 0; ti < cl->ntypes && r < P; ti++)
                for (int n = 0; n < cl->types[ti].count && r < P; n++, node++) {
                    int per = cl->types[ti].ngpus > 0 ? cl->types[ti].ngpus : 1;
                    for (int g = 0; g < per && r < P; g++, r++) {
                        sm.node_of[r] = node;
                        sm.type_of[r] = ti;
                    }
                }
            if (r < P)
                rc = wp_errorf(err, "the cluster has room for %d ranks (one per GPU), the schedule needs %d", r, P);
        }
    }
    if (rc == 0 && cost->cluster) { /* the network lanes of every node a rank is on */
        const struct wp_cluster *cl = cost->cluster;
        int nodes = 0;
        for (int r = 0; r < P; r++)
            nodes = sm.node_of[r] + 1 > nodes ? sm.node_of[r] + 1 : nodes;
        int *count = calloc((size_t)(nodes > 0 ? nodes : 1), sizeof *count);
        if (!count)
            rc = wp_errorf(err, "out of memory");
        for (int r = 0; rc == 0 && r < P; r++) {
            const struct wp_node_type *t = &cl->types[sm.type_of[r]];
            int fabric = 0;
            for (int i = 0; i < t->nnics; i++)
                fabric += t->nics[i].fabric;
            count[sm.node_of[r]] = fabric;
        }
        if (rc == 0 && wp_lanes_init(&sm.lanes, nodes, count))
            rc = wp_errorf(err, "out of memory");
        sm.have_lanes = rc == 0;
        free(count);
    }
    *out = sm;
    return rc;
}

/* Whether the simulation plays the lists in one lock-step walk (else
 * ranks share cores: simulate_shared_cores). */
static int sim_walks(const struct wp_schedule *s, const struct wp_cost_model *cost)
{
    return !(cost->cores > 0 && cost->cores < s->nranks);
}

/* After the walk (rc its outcome): the makespan, bubble and peaks into
 * res; frees what sim_begin made, and res too on an error. */
static int sim_end(struct sim *sm, int rc)
{
    struct wp_sim_result *res = sm->res;
    int P = sm->s->nranks;
    if (rc == 0) {
        double busy = 0;
        for (int r = 0; r < P; r++) {
            if (sm->clock[r] > res->makespan)
                res->makespan = sm->clock[r];
            busy += res->busy[r];
            if (res->peak_activations[r] > res->peak_max)
                res->peak_max = res->peak_activations[r];
        }
        res->bubble_ratio = res->makespan > 0 ? 1.0 - busy / (P * res->makespan) : 0;
    }
    free(sm->clock);
    free(sm->held);
    wp_huge_free(sm->link_free);
    free(sm->compute);
    free(sm->node_of);
    free(sm->type_of);
    free(sm->grad_pass_start);
    if (sm->lanes.lanes)
        wp_lanes_destroy(&sm->lanes);
    if (rc)
        wp_sim_result_destroy(res);
    return rc;
}

int wp_simulate(const struct wp_schedule *s, const struct wp_cost_model *cost, struct wp_sim_result *res,
                struct wp_err *err)
{
    struct sim sm;
    int rc = sim_begin(&sm, s, cost, res, err);
    if (rc == 0 && !sim_walks(s, cost)) {
        rc = simulate_shared_cores(&sm, err);
    } else if (rc == 0) {
        struct wp_walk_visitor v = {&sm, sim_run, sim_collective, NULL};
        rc = wp_walk(s, &v, NULL, err);
    }
    return sim_end(&sm, rc);
}

int wp_simulate_own_costs(const struct wp_schedule *s, double *makespan, double *peak, int *within_bound,
                          struct wp_err *err)
{
    struct wp_cost_model c;
    wp_cost_model_default(&c);
    c.tf = s->params.tf;
    c.tb = s->params.tb;
    c.tw = s->params.tw;
    c.tc = s->params.tc;
    struct wp_sim_result res;
    if (wp_simulate(s, &c, &res, err))
        return -1;
    *makespan = res.makespan;
    *peak = res.peak_max;
    *within_bound = 1;
    for (int r = 0; r < s->nranks; r++)
        *within_bound &= res.peak_activations[r] <= s->activation_bound[r] + 1e-9;
    wp_sim_result_destroy(&res);
    return 0;
}

int wp_validate_and_simulate(const struct wp_schedule *s, const struct wp_cost_model *cost,
                             struct wp_validation *v, struct wp_sim_result *res, struct wp_err *err)
{
    memset(res, 0, sizeof *res);
    if (!sim_walks(s, cost)) { /* ranks share cores: no walk to share */
        if (wp_schedule_validate(s, v, err))
            return -1;
        int rc = wp_simulate(s, cost, res, err);
        if (rc)
            wp_validation_destroy(v);
        return rc;
    }
    struct sim sm;
    struct wp_err setup_err = {""};
    if (sim_begin(&sm, s, cost, res, &setup_err)) {
        sim_end(&sm, -1);
        if (wp_schedule_validate(s, v, err)) /* as the two calls in turn: the validator's error first */
            return -1;
        wp_validation_destroy(v);
        if (err)
            *err = setup_err;
        return -1;
    }
    struct wp_walk_visitor visitor = {&sm, sim_run, sim_collective, NULL};
    int walked = 0;
    int rc = wp_schedule_validate_walking(s, &visitor, &walked, v, err);
    if (rc == 0 && !walked) { /* validated by a walk with checks: the simulation afresh */
        sim_end(&sm, -1);
        rc = wp_simulate(s, cost, res, err);
        if (rc)
            wp_validation_destroy(v);
        return rc;
    }
    if (rc)
        wp_validation_destroy(v);
    return sim_end(&sm, rc);
}

int wp_bandwidth_trace_read(const char *path, struct wp_bandwidth_change **changes, int *n, struct wp_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return wp_errorf(err, "cannot read %s: %s", path, strerror(errno));
    char line[256];
    int lineno = 0, cap = 0;
    *changes = NULL;
    *n = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n' || (lineno == 1 && strncmp(line, "time_s", 6) == 0))
            continue;
        char src[32], dst[32];
        struct wp_bandwidth_change ch;
        if (sscanf(line, "%lf,%31[^,],%31[^,],%lf", &ch.time_s, src, dst, &ch.factor) != 4 || ch.time_s < 0 ||
            !(ch.factor > 0)) {
            fclose(fp);
            free(*changes);
            *changes = NULL;
            return wp_errorf(err, "%s:%d: expected time_s,src,dst,factor with time_s >= 0 and factor > 0", path,
                             lineno);
        }
        ch.src = strcmp(src, "*") == 0 ? -1 : atoi(src);
        ch.dst = strcmp(dst, "*") == 0 ? -1 : atoi(dst);
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            struct wp_bandwidth_change *grown = realloc(*changes, (size_t)cap * sizeof *grown);
            if (!grown) {
                fclose(fp);
                free(*changes);
                return wp_errorf(err, "out of memory");
            }
            *changes = grown;
        }
        (*changes)[(*n)++] = ch;
    }
    fclose(fp);
    return 0;
}
