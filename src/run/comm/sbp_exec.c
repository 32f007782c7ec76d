/* The executor of one SBP strategy's communication (see sbp_exec.h): the
 * groups of every layer's axes and alltoalls, the step's calls in training
 * order, their timing and their counted bytes. */
#include "run/comm/sbp_exec.h"

#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/comm/comm_mpi.h"
#include "topo/calibrate_mpi.h"
#include "util/stats.h"

#define DEFAULT_BUCKET_BYTES (256.0 * 1024 * 1024)

void wp_sbp_exec_default(struct wp_sbp_exec_opts *o)
{
    o->repeats = 5;
    o->compute_s = 0;
    o->bucket_bytes = DEFAULT_BUCKET_BYTES;
    o->spin = 0;
}

enum call_kind { CALL_ALLTOALL, CALL_SENDRECV, CALL_ALLGATHER, CALL_REDUCE_SCATTER, CALL_ALLREDUCE };

/* One MPI call of the step. */
struct call {
    int layer;
    enum wp_sbp_term term;
    enum call_kind kind;
    MPI_Comm comm;          /* not owned (the layer's group) */
    int group;
    MPI_Datatype type;
    size_t count;           /* alltoall: bytes per member; sendrecv: bytes; allgather, reduce-scatter:
                             * elements per member; allreduce: elements in all buckets */
    size_t bucket;          /* allreduce: elements per call */
    int send_to, recv_from; /* sendrecv */
    int sleeps_after;       /* layers' compute (emulated, a sleep each) after this call in a step */
    double sent_bytes;      /* this rank's, by the ring counts */
};

/* A split of the ranks made into a communicator: every rank's group (the
 * lowest rank in it) and place in it, the same arrays on every rank. */
struct split {
    int *group, *place;
    MPI_Comm comm;
};

struct plan {
    int nodes, gpus;        /* N x G */
    int rank;
    struct call *calls;
    int ncalls;
    MPI_Comm *comms;        /* per layer: axes 0-2 and the alltoall (MPI_COMM_NULL: none), from owned */
    int ncomms;
    struct split *owned;    /* each distinct split made once */
    int nowned;
    int sleeps_before;      /* layers' compute before the first call */
    size_t send_bytes, recv_bytes;
};

static int reduction_type(double element_bytes, MPI_Datatype *type)
{
    if (element_bytes == 4)
        *type = MPI_FLOAT;
    else if (element_bytes == 8)
        *type = MPI_DOUBLE;
    else if (element_bytes == 2)
        *type = MPI_INT16_T; /* 16-bit sums stand in for half precision: the same bytes */
    else if (element_bytes == 1)
        *type = MPI_INT8_T;
    else
        return -1;
    return 0;
}

static int gcd_int(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* This device's coordinate j_k on each axis of mesh m. */
static void mesh_coords(const struct wp_sbp_mesh *m, int n, int q, int j[3])
{
    int a[3], b[3];
    a[2] = n % m->nodes[2];
    a[1] = (n / m->nodes[2]) % m->nodes[1];
    a[0] = n / (m->nodes[2] * m->nodes[1]);
    b[2] = q % m->gpus[2];
    b[1] = (q / m->gpus[2]) % m->gpus[1];
    b[0] = q / (m->gpus[2] * m->gpus[1]);
    for (int k = 0; k < 3; k++)
        j[k] = a[k] * m->gpus[k] + b[k];
}

/* ceil(x) as a count, and whether it was rounded (sizes that divide
 * evenly are exact in double: products of integers divided by a factor). */
static size_t whole(double x, int *rounded)
{
    double c = ceil(x);
    if (c != x)
        *rounded = 1;
    return c > 0 ? (size_t)c : 0;
}

static int add_call(struct plan *pl, struct call c, struct wp_err *err)
{
    struct call *grown = realloc(pl->calls, (size_t)(pl->ncalls + 1) * sizeof *grown);
    if (!grown)
        return wp_errorf(err, "out of memory");
    pl->calls = grown;
    pl->calls[pl->ncalls++] = c;
    return 0;
}

/* The forward or backward call of a term's collective c over group g. */
static int term_call(struct plan *pl, int layer, enum wp_sbp_term term, int backward, const struct wp_sbp_coll *c,
                     MPI_Comm g, MPI_Datatype type, size_t type_bytes, double bucket_bytes, int *rounded,
                     struct wp_err *err)
{
    struct call k = {layer, term, CALL_ALLTOALL, g, c->group, type, 0, 0, -1, -1, 0, 0};
    double e = (double)type_bytes;
    enum wp_collective ring = c->kind; /* the collective whose ring count the call sends */
    double call_bytes;
    switch (c->kind) {
    case WP_COLL_P2P: {
        k.kind = CALL_SENDRECV;
        int n = pl->rank / pl->gpus, q = pl->rank % pl->gpus;
        int next = ((n + 1) % pl->nodes) * pl->gpus + q, prev = ((n + pl->nodes - 1) % pl->nodes) * pl->gpus + q;
        k.send_to = backward ? prev : next;
        k.recv_from = backward ? next : prev;
        k.type = MPI_BYTE;
        k.count = whole(c->n_bytes, rounded);
        call_bytes = (double)k.count;
        break;
    }
    case WP_COLL_ALLTOALL:
        k.kind = CALL_ALLTOALL;
        k.type = MPI_BYTE;
        k.count = whole(c->n_bytes / c->group, rounded);
        call_bytes = (double)k.count * c->group;
        break;
    case WP_COLL_ALLGATHER:      /* the gather forward, the reduce backward */
    case WP_COLL_REDUCE_SCATTER: /* the reduce forward, the gather backward */
        k.kind = (c->kind == WP_COLL_ALLGATHER) != backward ? CALL_ALLGATHER : CALL_REDUCE_SCATTER;
        ring = k.kind == CALL_ALLGATHER ? WP_COLL_ALLGATHER : WP_COLL_REDUCE_SCATTER;
        k.count = whole(c->n_bytes / e / c->group, rounded);
        call_bytes = (double)k.count * c->group * e;
        break;
    case WP_COLL_ALLREDUCE: {
        k.kind = CALL_ALLREDUCE;
        k.count = whole(c->n_bytes / e, rounded);
        size_t per = bucket_bytes <= 0 ? k.count : bucket_bytes >= e ? (size_t)(bucket_bytes / e) : 1;
        k.bucket = per < k.count ? per : k.count;
        call_bytes = (double)k.count * e;
        break;
    }
    default:
        return wp_errorf(err, "layer %d: no executor for collective %s", layer, wp_collective_name(c->kind));
    }
    if ((k.kind == CALL_ALLREDUCE ? k.bucket : k.count) > (size_t)INT_MAX)
        return wp_errorf(err, "layer %d %s: %.6g bytes over %d ranks is more than one MPI call takes (INT_MAX "
                              "elements)", layer, wp_sbp_term_name(term), c->n_bytes, c->group);
    k.sent_bytes = wp_collective_sent_bytes(ring, c->group, call_bytes);
    /* the buffers every call reuses */
    size_t in = 0, out = 0;
    switch (k.kind) {
    case CALL_SENDRECV: in = out = k.count; break;
    case CALL_ALLTOALL: in = out = k.count * (size_t)k.group; break;
    case CALL_ALLGATHER: in = k.count * type_bytes; out = in * (size_t)k.group; break;
    case CALL_REDUCE_SCATTER: out = k.count * type_bytes; in = out * (size_t)k.group; break;
    case CALL_ALLREDUCE: out = k.bucket * type_bytes; break; /* in place */
    }
    if (in > pl->send_bytes)
        pl->send_bytes = in;
    if (out > pl->recv_bytes)
        pl->recv_bytes = out;
    return add_call(pl, k, err);
}

/* Axis k's groups of mesh m: the ranks sharing the other two coordinates,
 * in the order of their coordinate on k (colors < p, see sbp_exec.h). */
static void axis_colors(const struct wp_sbp_mesh *m, int k, int gpus, int p, int *color, int *key)
{
    int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
    for (int d = 0; d < p; d++) {
        int j[3];
        mesh_coords(m, d / gpus, d % gpus, j);
        color[d] = j[k1] * wp_sbp_mesh_axis(m, k2) + j[k2];
        key[d] = j[k];
    }
}

/* The alltoall mv's groups (see sbp_exec.h). */
static void alltoall_colors(const struct wp_sbp_move *mv, int nodes, int gpus, int p, int *color, int *key)
{
    for (int d = 0; d < p; d++) {
        int n = d / gpus, q = d % gpus;
        if (mv->from.nodes == mv->to.nodes) { /* each node keeps its region */
            int gcd = gcd_int(mv->from.gpus, mv->to.gpus);
            int lcm = mv->from.gpus / gcd * mv->to.gpus;
            color[d] = n * gpus + (q / lcm) * gcd + q % gcd;
            key[d] = q;
        } else {
            int e = q * nodes + n; /* node fastest */
            color[d] = e / mv->coll.group;
            key[d] = e;
        }
    }
}

/* The communicator of the split by color and key (arrays over all p
 * ranks, the same on every rank), whose every group must have `want`
 * ranks: made by MPI_Comm_split (collective), or an equal split's reused
 * (a split costs a collective, slow where ranks outnumber cores). */
static int split_comm(MPI_Comm comm, struct plan *pl, int p, const int *color, const int *key, int want,
                      MPI_Comm *out, int layer, const char *what, struct wp_err *err)
{
    int *first = malloc((size_t)p * sizeof *first), *count = calloc((size_t)p, sizeof *count);
    struct split sp = {malloc((size_t)p * sizeof *sp.group), malloc((size_t)p * sizeof *sp.place), MPI_COMM_NULL};
    int status = first && count && sp.group && sp.place ? 0 : wp_errorf(err, "out of memory");
    for (int d = 0; status == 0 && d < p; d++)
        first[d] = -1;
    for (int d = 0; status == 0 && d < p; d++) {
        if (first[color[d]] < 0)
            first[color[d]] = d;
        sp.group[d] = first[color[d]];
        count[sp.group[d]]++;
    }
    for (int d = 0; status == 0 && d < p; d++) {
        if (count[sp.group[d]] != want)
            status = wp_errorf(err, "layer %d: a %s group has %d ranks, the model's %d (device coordinates "
                                    "inconsistent with the mesh)", layer, what, count[sp.group[d]], want);
        sp.place[d] = 0;
        for (int x = 0; x < p; x++)
            sp.place[d] += sp.group[x] == sp.group[d] && (key[x] < key[d] || (key[x] == key[d] && x < d));
    }
    free(first);
    free(count);
    for (int i = 0; status == 0 && i < pl->nowned; i++)
        if (memcmp(pl->owned[i].group, sp.group, (size_t)p * sizeof *sp.group) == 0 &&
            memcmp(pl->owned[i].place, sp.place, (size_t)p * sizeof *sp.place) == 0) {
            *out = pl->owned[i].comm;
            free(sp.group);
            free(sp.place);
            return 0;
        }
    struct split *grown = status == 0 ? realloc(pl->owned, (size_t)(pl->nowned + 1) * sizeof *grown) : NULL;
    if (status == 0 && !grown)
        status = wp_errorf(err, "out of memory");
    if (status) {
        free(sp.group);
        free(sp.place);
        return status;
    }
    MPI_Comm_split(comm, sp.group[pl->rank], sp.place[pl->rank], &sp.comm);
    pl->owned = grown;
    pl->owned[pl->nowned++] = sp;
    *out = sp.comm;
    return 0;
}

/* Every call of a step in training order, and the groups they need. */
static int build(MPI_Comm comm, const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                 const struct wp_sbp_exec_opts *o, struct plan *pl, struct wp_sbp_exec_result *out,
                 struct wp_err *err)
{
    MPI_Datatype type;
    if (reduction_type(pr->element_bytes, &type))
        return wp_errorf(err, "--element-bytes %g: the executor sums elements of 1, 2, 4 or 8 bytes",
                         pr->element_bytes);
    size_t e = (size_t)pr->element_bytes;
    int L = pr->nlayers;
    pl->ncomms = 4 * L;
    pl->comms = malloc((size_t)pl->ncomms * sizeof *pl->comms);
    struct wp_sbp_move *moves = calloc((size_t)L, sizeof *moves);
    struct wp_sbp_coll(*colls)[WP_SBP_TERM_COUNT] = calloc((size_t)L, sizeof *colls);
    if (!pl->comms || !moves || !colls) {
        free(moves);
        free(colls);
        return wp_errorf(err, "out of memory");
    }
    for (int i = 0; i < pl->ncomms; i++)
        pl->comms[i] = MPI_COMM_NULL;
    int p = pl->nodes * pl->gpus;
    int *color = malloc((size_t)p * sizeof *color), *key = malloc((size_t)p * sizeof *key);
    int status = color && key ? 0 : wp_errorf(err, "out of memory");
    /* groups: computed alike on every rank, so every rank makes the same
     * splits in the same order (MPI_Comm_split is collective) and meets
     * the same errors */
    for (int l = 0; l < L && status == 0; l++) {
        const struct wp_sbp_layer_cost *lc = &res->layers[l];
        const struct wp_sbp_mesh *m = &lc->mesh;
        static const enum wp_sbp_term axis_term[3] = {WP_SBP_WEIGHT_SYNC, WP_SBP_GATHER, WP_SBP_REDUCE};
        for (int k = 0; k < 3 && status == 0; k++) {
            wp_sbp_layer_coll(pr, l, m, axis_term[k], &colls[l][axis_term[k]]);
            int pk = wp_sbp_mesh_axis(m, k);
            if (pk < 2 || colls[l][axis_term[k]].passes == 0)
                continue;
            axis_colors(m, k, pl->gpus, p, color, key);
            status = split_comm(comm, pl, p, color, key, pk, &pl->comms[4 * l + k], l,
                                wp_sbp_term_name(axis_term[k]), err);
        }
        if (status == 0 && (l > 0 || pr->input == WP_SBP_INPUT_BATCH_SPLIT)) {
            wp_sbp_move(pr, pl->nodes, pl->gpus, l > 0 ? &res->layers[l - 1].mesh : NULL,
                        l > 0 ? res->layers[l - 1].reduce_to : WP_SBP_COLS, l, m, lc->gather_from, &moves[l]);
            colls[l][WP_SBP_ALLTOALL] = moves[l].coll;
            if (moves[l].coll.passes && moves[l].coll.kind == WP_COLL_ALLTOALL) {
                alltoall_colors(&moves[l], pl->nodes, pl->gpus, p, color, key);
                status = split_comm(comm, pl, p, color, key, moves[l].coll.group, &pl->comms[4 * l + 3], l,
                                    "alltoall", err);
            }
        }
    }
    free(color);
    free(key);
    /* the calls: forward through the layers, backward in reverse */
    static const int axis_of[WP_SBP_TERM_COUNT] = {3, 1, 2, 0}; /* comms slot per term */
    for (int pass = 0; pass < 2 && status == 0; pass++)
        for (int i = 0; i < L && status == 0; i++) {
            int l = pass == 0 ? i : L - 1 - i;
            static const enum wp_sbp_term fwd[] = {WP_SBP_ALLTOALL, WP_SBP_GATHER, WP_SBP_REDUCE};
            static const enum wp_sbp_term bwd[] = {WP_SBP_REDUCE, WP_SBP_GATHER, WP_SBP_WEIGHT_SYNC,
                                                   WP_SBP_ALLTOALL};
            const enum wp_sbp_term *order = pass == 0 ? fwd : bwd;
            int nterms = pass == 0 ? 3 : 4;
            for (int t = 0; t < nterms && status == 0; t++) {
                enum wp_sbp_term term = order[t];
                const struct wp_sbp_coll *c = &colls[l][term];
                /* the layer's compute: after the gather forward, after the reduce's dual backward */
                int compute_next = (pass == 0 && term == WP_SBP_GATHER) || (pass == 1 && term == WP_SBP_REDUCE);
                int runs = c->passes > pass || (term == WP_SBP_WEIGHT_SYNC && c->passes > 0);
                if (runs && (c->kind == WP_COLL_P2P || c->group > 1)) {
                    int r = 0;
                    status = term_call(pl, l, term, pass, c, pl->comms[4 * l + axis_of[term]], type, e,
                                       o->bucket_bytes, &r, err);
                    out->terms[l][term].rounded |= r;
                }
                if (compute_next && status == 0) {
                    if (pl->ncalls > 0)
                        pl->calls[pl->ncalls - 1].sleeps_after++;
                    else
                        pl->sleeps_before++;
                }
            }
        }
    for (int l = 0; l < L; l++)
        for (int t = 0; t < WP_SBP_TERM_COUNT; t++)
            out->terms[l][t].model = colls[l][t];
    free(moves);
    free(colls);
    return status;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Waits for started requests: polling and sleeping as wavepipe run waits
 * (comm_mpi.h), so that ranks outnumbering cores yield them, or in MPI_Wait. */
static void wait_all(MPI_Request *req, int n, int spin)
{
    for (int i = 0; i < n; i++)
        if (spin)
            MPI_Wait(&req[i], MPI_STATUS_IGNORE);
        else
            wp_comm_mpi_wait(MPI_SUCCESS, &req[i]);
}

static void barrier(MPI_Comm comm, int spin)
{
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    wait_all(&req, 1, spin);
}

/* One call; warm_up: an AllReduce's first bucket only (enough to set up
 * its connections; a whole weight gradient can take minutes). */
static void run_call(const struct call *c, char *send, char *recv, int spin, int warm_up)
{
    MPI_Request req[2];
    int n = 1;
    switch (c->kind) {
    case CALL_SENDRECV:
        MPI_Irecv(recv, (int)c->count, MPI_BYTE, c->recv_from, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(send, (int)c->count, MPI_BYTE, c->send_to, 0, MPI_COMM_WORLD, &req[1]);
        n = 2;
        break;
    case CALL_ALLTOALL:
        MPI_Ialltoall(send, (int)c->count, MPI_BYTE, recv, (int)c->count, MPI_BYTE, c->comm, &req[0]);
        break;
    case CALL_ALLGATHER:
        MPI_Iallgather(send, (int)c->count, c->type, recv, (int)c->count, c->type, c->comm, &req[0]);
        break;
    case CALL_REDUCE_SCATTER:
        MPI_Ireduce_scatter_block(send, recv, (int)c->count, c->type, MPI_SUM, c->comm, &req[0]);
        break;
    case CALL_ALLREDUCE: /* bucket after bucket */
        for (size_t done = 0; done < c->count && !(warm_up && done > 0); done += c->bucket) {
            size_t k = c->count - done < c->bucket ? c->count - done : c->bucket;
            MPI_Iallreduce(MPI_IN_PLACE, recv, (int)k, c->type, MPI_SUM, c->comm, &req[0]);
            wait_all(req, 1, spin);
        }
        return;
    }
    wait_all(req, n, spin);
}

static double median_of(double *v, int n)
{
    return wp_stat3_sorted(v, (size_t)n).median;
}

/* Are this rank's partners in call c on other nodes of the job? Local:
 * the group's world ranks from MPI_Group_translate_ranks. */
static int crosses_job_nodes(const struct call *c, const struct wp_calib_job *job)
{
    int mine = job->node[job->rank];
    if (c->kind == CALL_SENDRECV)
        return job->node[c->send_to] != mine || job->node[c->recv_from] != mine;
    MPI_Group group, world;
    MPI_Comm_group(c->comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int crosses = 0;
    for (int i = 0; i < c->group && !crosses; i++) {
        int w;
        MPI_Group_translate_ranks(group, 1, &i, world, &w);
        crosses = w != MPI_UNDEFINED && job->node[w] != mine;
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    return crosses;
}

static void plan_destroy(struct plan *pl)
{
    for (int i = 0; i < pl->nowned; i++) {
        MPI_Comm_free(&pl->owned[i].comm);
        free(pl->owned[i].group);
        free(pl->owned[i].place);
    }
    free(pl->owned);
    free(pl->comms);
    free(pl->calls);
    memset(pl, 0, sizeof *pl);
}

/* Agrees a status over all ranks: nonzero anywhere is nonzero everywhere,
 * with this rank's message or a general one. */
static int agree(MPI_Comm comm, int status, struct wp_err *err)
{
    int any = status != 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any && status == 0)
        return wp_errorf(err, "another rank failed (out of memory?)");
    return any ? -1 : 0;
}

int wp_sbp_exec_run(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                    const struct wp_sbp_exec_opts *o, struct wp_sbp_exec_result *out, struct wp_err *err)
{
    MPI_Comm comm = MPI_COMM_WORLD; /* device d is world rank d */
    memset(out, 0, sizeof *out);
    struct plan pl;
    memset(&pl, 0, sizeof pl);
    int size;
    MPI_Comm_rank(comm, &pl.rank);
    MPI_Comm_size(comm, &size);
    /* the same checks on every rank, so the same verdict */
    if (size != pr->devices)
        return wp_errorf(err, "--devices %d but the job has %d MPI ranks: one rank per device "
                              "(mpiexec -n %d, srun -n %d)", pr->devices, size, pr->devices, pr->devices);
    if (wp_sbp_check_problem(pr, &pl.nodes, &pl.gpus, err))
        return -1;
    if (res->nlayers != pr->nlayers)
        return wp_errorf(err, "the strategy has %d layers, the problem %d", res->nlayers, pr->nlayers);
    if (o->repeats < 1)
        return wp_errorf(err, "repeats %d must be at least 1", o->repeats);
    struct wp_calib_job job;
    if (wp_calib_job_init(&job, comm, 0, err))
        return -1;
    out->ranks = size;
    out->job_nodes = job.nnodes;
    out->node_major = job.nnodes == pl.nodes;
    for (int r = 0; r < size; r++)
        out->node_major &= job.node[r] == r / pl.gpus;
    out->nlayers = pr->nlayers;
    out->terms = calloc((size_t)pr->nlayers, sizeof *out->terms);
    int status = agree(comm, out->terms ? 0 : wp_errorf(err, "out of memory"), err);
    if (status == 0)
        status = agree(comm, build(comm, pr, res, o, &pl, out, err), err);
    char *send = NULL, *recv = NULL;
    double *times = NULL;
    int R = o->repeats, C = pl.ncalls;
    if (status == 0) {
        send = malloc(pl.send_bytes ? pl.send_bytes : 1);
        recv = malloc(pl.recv_bytes ? pl.recv_bytes : 1);
        times = calloc((size_t)(C + 1) * (size_t)R, sizeof *times);
        if (send && recv && times) { /* touched now, not while timed */
            memset(send, 0, pl.send_bytes);
            memset(recv, 0, pl.recv_bytes);
        }
        status = agree(comm, send && recv && times ? 0 : wp_errorf(err, "out of memory: %zu + %zu bytes of buffers",
                                                                    pl.send_bytes, pl.recv_bytes), err);
    }
    if (status == 0) {
        out->buffer_bytes = (double)pl.send_bytes + (double)pl.recv_bytes;
        out->slept_s = 2.0 * pr->nlayers * o->compute_s;
        for (int c = 0; c < C; c++) { /* warm-up: every call once (an AllReduce's first bucket) */
            barrier(comm, o->spin);
            run_call(&pl.calls[c], send, recv, o->spin, 1);
        }
        for (int r = 0; r < R; r++) /* each call after a barrier */
            for (int c = 0; c < C; c++) {
                barrier(comm, o->spin);
                double t0 = MPI_Wtime();
                run_call(&pl.calls[c], send, recv, o->spin, 0);
                times[(size_t)c * R + r] = MPI_Wtime() - t0;
            }
        for (int r = 0; r < R; r++) { /* the step back to back */
            barrier(comm, o->spin);
            double t0 = MPI_Wtime();
            sleep_s(pl.sleeps_before * o->compute_s);
            for (int c = 0; c < C; c++) {
                run_call(&pl.calls[c], send, recv, o->spin, 0);
                sleep_s(pl.calls[c].sleeps_after * o->compute_s);
            }
            times[(size_t)C * R + r] = MPI_Wtime() - t0;
        }
        MPI_Allreduce(MPI_IN_PLACE, times, (C + 1) * R, MPI_DOUBLE, MPI_MAX, comm); /* the slowest rank */
        for (int c = 0; c < C; c++) {
            const struct call *k = &pl.calls[c];
            struct wp_sbp_exec_term *t = &out->terms[k->layer][k->term];
            t->calls += k->kind == CALL_ALLREDUCE ? (int)((k->count + k->bucket - 1) / k->bucket) : 1;
            t->group = k->kind == CALL_SENDRECV ? 1 : k->group;
            t->measured_s += median_of(times + (size_t)c * R, R);
            t->counted_bytes += k->sent_bytes;
            t->job_crosses_nodes |= crosses_job_nodes(k, &job);
        }
        out->step_s = median_of(times + (size_t)C * R, R) - out->slept_s;
        /* over the ranks, in one reduction: any group across nodes, and the
         * most and (negated) least bytes of every term and in all */
        int T = pr->nlayers * WP_SBP_TERM_COUNT;
        double *agg = malloc((size_t)(3 * T + 2) * sizeof *agg);
        if (agg) {
            for (int i = 0; i < T; i++) {
                const struct wp_sbp_exec_term *x = &out->terms[i / WP_SBP_TERM_COUNT][i % WP_SBP_TERM_COUNT];
                agg[3 * i] = x->job_crosses_nodes;
                agg[3 * i + 1] = x->counted_bytes;
                agg[3 * i + 2] = -x->counted_bytes;
                out->measured_s += x->measured_s;
                out->counted_bytes += x->counted_bytes;
            }
            agg[3 * T] = out->counted_bytes;
            agg[3 * T + 1] = -out->counted_bytes;
        }
        status = agree(comm, agg ? 0 : wp_errorf(err, "out of memory"), err);
        if (status == 0) {
            MPI_Allreduce(MPI_IN_PLACE, agg, 3 * T + 2, MPI_DOUBLE, MPI_MAX, comm);
            for (int i = 0; i < T; i++) {
                struct wp_sbp_exec_term *x = &out->terms[i / WP_SBP_TERM_COUNT][i % WP_SBP_TERM_COUNT];
                x->job_crosses_nodes = agg[3 * i] > 0;
                x->counted_max_bytes = agg[3 * i + 1];
                x->counted_min_bytes = -agg[3 * i + 2];
            }
            out->counted_max_bytes = agg[3 * T];
            out->counted_min_bytes = -agg[3 * T + 1];
        }
        free(agg);
    }
    free(send);
    free(recv);
    free(times);
    plan_destroy(&pl);
    wp_calib_job_destroy(&job);
    if (status)
        wp_sbp_exec_result_destroy(out);
    return status;
}

void wp_sbp_exec_result_destroy(struct wp_sbp_exec_result *out)
{
    free(out->terms);
    out->terms = NULL;
    out->nlayers = 0;
}
