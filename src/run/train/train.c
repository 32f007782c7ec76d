/* The training object (train.h): init, the step loop, finish and destroy;
 * the interpreter underneath, the tuner and the faults beside it. */
#include "run/train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernel_times.h"
#include "plan/layer_stages.h"
#include "run/adapt/repartition.h"
#include "run/comm/comm.h"
#include "run/comm/comm_mpi.h"
#include "run/fault/stop_signal.h"
#include "run/fault/watchdog.h"
#include "run/train/checkpoint.h"
#include "run/train/cores.h"
#include "run/train/report.h"
#include "sched/generate.h"
#include "util/csv_append.h"
#include "util/stats.h"
#include "util/strutil.h"

/* How far wp_train_init got, for wp_train_destroy. */
enum { READY_NONE, READY_SETUP, READY_INTERP };

/* A failure that leaves the ranks apart (one half way through a move, a
 * backend that did not start): said, and the job ended. */
static void die(const struct wp_train *t, const struct wp_err *err)
{
    wp_err_print(t->o.command, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int make_plan(void *ctx, int k, int nmicro, struct wp_schedule *out, struct wp_err *err)
{
    const struct wp_train_plan_maker *pm = ctx;
    struct wp_sched_params p = pm->params;
    p.kind = k > 1 ? WP_SCHED_KFKB : WP_SCHED_1F1B;
    p.k = k;
    p.microbatches = nmicro;
    if (wp_schedule_generate(&p, out, err))
        return -1;
    return pm->rank_map ? wp_schedule_rename_ranks(out, pm->rank_map, err) : 0;
}

/* Activation memory: the slots a rank needs at once (the schedule's peak
 * of micro-batches in flight, plus the one being received ahead) and what
 * its stages keep once (a recomputing stage's work slot), the most of any
 * rank (collective). */
static double activation_peak_bytes(const struct wp_interp *in)
{
    double peak = 0;
    for (int h = 0; h < in->nheld; h++)
        peak += (double)in->held[h].exec.nslots * in->held[h].exec.slot_bytes + in->held[h].exec.work_bytes;
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return peak;
}

/* Blocks per stage as a checkpoint records them (real compute only). */
static const char *partition_text(const struct wp_train *t, char *buf, size_t size)
{
    if (t->o.emulated || !t->unit_count)
        return NULL;
    wp_adapt_partition_text(t->unit_count, t->setup.s.nstages, buf, size);
    return buf;
}

/* wp_checkpoint_save under the watchdog's limit for pauses (watchdog.h). */
static int watched_checkpoint_save(struct wp_train *t, long steps_done, struct wp_err *err)
{
    char ptext[4096]; /* the blocks per stage a checkpoint records */
    wp_watchdog_pause_begin("a checkpoint save");
    int rc = wp_checkpoint_save(&t->in, t->setup.tensor > 1 ? &t->backend.tgroup : NULL, t->o.save, steps_done,
                                partition_text(t, ptext, sizeof ptext), t->o.keep, err);
    wp_watchdog_pause_end();
    return rc;
}

/* The stages' costs in the layer table for the schedule running (emulated). */
static int remake_table_costs(struct wp_train *t, struct wp_err *err)
{
    wp_layer_stage_arrays_free(&t->table_costs);
    if (!t->o.emulated)
        return 0;
    struct wp_train_setup *ts = &t->setup;
    return wp_layer_stage_arrays_make(&ts->table, t->run_s, ts->cfg.train.global_batch, ts->first, ts->end,
                                      &t->table_costs, err);
}

int wp_train_move_layers(struct wp_train *t, const int *count, double *pause_s, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    int S = t->in.s->nstages, inclusive = t->o.emulated;
    int *lo = malloc((size_t)4 * S * sizeof *lo);
    if (!lo) {
        wp_errorf(err, "out of memory");
        die(t, err);
    }
    if (count != t->unit_count)
        memcpy(t->unit_count, count, (size_t)S * sizeof *count);
    /* the stage kinds' contexts read first and end: blocks [first, end), or
     * emulated the table's layers [first, end] */
    int *hi = lo + S, *new_lo = lo + 2 * S, *new_hi = lo + 3 * S, next = ts->first[0];
    for (int st = 0; st < S; st++) {
        lo[st] = ts->first[st];
        hi[st] = ts->end[st] + inclusive;
        new_lo[st] = next;
        new_hi[st] = next += t->unit_count[st];
        ts->first[st] = new_lo[st];
        ts->end[st] = new_hi[st] - inclusive;
    }
    double t0 = MPI_Wtime(), bytes = 0;
    wp_watchdog_pause_begin("a move of layers"); /* large transfers: the watchdog's pause limit */
    int rc = wp_interp_repartition(&t->in, lo, hi, new_lo, new_hi,
                                   t->o.emulated ? wp_stage_emulated_make : wp_stage_gpt2_make,
                                   t->o.emulated ? (void *)&t->emu_ctx : (void *)&t->gpt2_ctx, &bytes, err);
    wp_watchdog_pause_end();
    /* undilated seconds, the model's bytes (emulated runs move 1/S of them) */
    double took[2] = {(MPI_Wtime() - t0) / t->o.dilation, bytes * t->o.byte_scale};
    MPI_Allreduce(MPI_IN_PLACE, &took[0], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &took[1], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *pause_s = took[0];
    if (rc == 0 && t->rank == 0)
        printf("adapt partition: moved %.2f MiB of parameters and AdamW moments between ranks in %.3f s\n",
               took[1] / 1048576, took[0]);
    free(lo);
    if (rc)
        die(t, err); /* a rank half way between two partitions cannot go on */
    if (t->o.adapt.k || t->o.adapt.partition)
        wp_adapt_moved(&t->adapt, t->unit_count, *pause_s);
    t->peak_bytes = activation_peak_bytes(&t->in);
    return remake_table_costs(t, err);
}

/* The kernels, the communication and the interpreter over this rank's
 * stages; every rank agrees that they started, or the job ends. Then the
 * common clock and the measurements every iteration makes. */
static void start_interpreter(struct wp_train *t, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    const struct wp_train_options *o = &t->o;
    enum wp_precision precision = o->emulated ? WP_PRECISION_FP32 : ts->cfg.train.precision;
    int status =
        wp_train_backend_init(&t->backend, o->device, precision, o->kernel_times != NULL, ts->mesh, t->rank, err);
    wp_slowdown_init(&t->slowdown, o->slowdown_path, t->rank);
    int slowed = o->slowdown_path || wp_changes_slow(&ts->changes);
    t->gpt2_ctx = (struct wp_stage_gpt2_ctx){t->backend.kernels, &ts->cfg, &ts->corpus, ts->first, ts->end,
                                             slowed ? &t->slowdown : NULL, 1e-6 * o->progress_us,
                                             ts->tensor > 1 ? &t->backend.tgroup : NULL, ts->recompute};
    t->emu_ctx = (struct wp_stage_emulated_ctx){&ts->table,          ts->first,    ts->end, &t->slowdown,
                                                1e-6 * o->progress_us, o->dilation, o->byte_scale};
    const struct wp_run_config *cfg = &ts->cfg;
    float dloss = 1.0f / ((float)cfg->train.global_batch * (float)cfg->model.sequence_length);
    if (status == 0)
        status = wp_interp_init(&t->in, &ts->s, ts->srank, t->backend.kernels, t->backend.interp_cops,
                                t->backend.interp_comm, cfg->train.global_batch, dloss,
                                o->emulated ? wp_stage_emulated_make : wp_stage_gpt2_make,
                                o->emulated ? (void *)&t->emu_ctx : (void *)&t->gpt2_ctx, err);
    t->ready = READY_INTERP;
    t->in.cfg = o->emulated ? NULL : cfg;
    if (status == 0) { /* buckets of the model's bytes: 1/S of them where messages are */
        wp_interp_set_scaling(&t->in, o->dilation, o->byte_scale);
        wp_interp_set_message_scale(&t->in, t->backend.message_scale);
        wp_comm_set_wait_dilation(o->dilation);
        wp_interp_set_grad_overlap(&t->in, o->grad_overlap, o->grad_bucket_bytes / o->byte_scale);
    }
    int any = status != 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (status)
            wp_err_print(o->command, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    t->in.record_events = 1; /* the last step's timeline feeds the summary's simulation */
    /* every iteration measures (measure.h): one timeline for message times */
    if (wp_clock_estimate(&t->clock, MPI_COMM_WORLD, 32) || wp_measure_init(&t->measure, ts->s.nstages, err))
        die(t, err->msg[0] ? err : &(struct wp_err){"estimating the ranks' clock offsets failed"});
    t->clock.dilation = o->dilation; /* the timeline the run reports is undilated */
    if (t->rank == 0 && o->measure)
        printf("measure: message times on one timeline, two nodes' clocks within %.3f ms of each other "
               "(half their shortest round trips to rank 0)\n",
               1e3 * t->clock.error_s / o->dilation);
    /* a tensor group's lane 0 measures for its schedule rank: its lanes 0 exchange the messages' times */
    if (ts->tensor > 1) {
        MPI_Comm_split(MPI_COMM_WORLD, ts->lane == 0 ? 0 : MPI_UNDEFINED, t->rank, &t->lanes0);
        t->measure.messages_comm = t->lanes0;
    }
    t->in.measure = ts->lane == 0 ? &t->measure : NULL;
    t->in.clock = &t->clock;
}

/* Rank 0 says what the tuner will do. */
static void announce_tuner(const struct wp_train *t)
{
    const struct wp_adapt_options *a = &t->o.adapt;
    if (a->k) {
        printf("adapt k: every %d iterations, candidates", a->every);
        for (int i = 0; i < t->adapt.tune.nplans; i++)
            printf(" k=%d b=%d (M=%d)%s", t->adapt.tune.plans[i].k, t->adapt.tune.plans[i].micro_batch,
                   t->adapt.tune.plans[i].nmicro, i == t->adapt.tune.current ? " [start]" : "");
        printf("%s\n", a->replay_path ? "; switches replayed from the log" : "");
    }
    if (a->partition) {
        char text[512];
        wp_adapt_partition_text(t->unit_count, t->setup.s.nstages, text, sizeof text);
        printf("adapt partition: every %d iterations, %s per stage %s, moves of one boundary (or both of a "
               "stage) by up to %d, a gain counted over %.0f iterations%s\n",
               a->every, t->o.emulated ? "layers" : "blocks", text, t->adapt.parts.max_shift, a->horizon,
               a->replay_path ? "; moves replayed from the log" : "");
    }
}

/* --adapt: the plans (k) and the units moved (partition: blocks, or the
 * table's layers, with the reference costs of the layers: real compute
 * GPT-2's analytic table at one sequence, the rank's measured speed against
 * it is what counts), made alike on every rank. -1 when any rank cannot
 * start the tuner (each has said why). */
static int start_tuner(struct wp_train *t, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    struct wp_train_options *o = &t->o;
    const struct wp_schedule *s = &ts->s;
    t->maker = (struct wp_train_plan_maker){s->params, ts->rank_map};
    if (o->adapt.k && !o->adapt.ngiven && o->plan_path && ts->plan.nkfkb > 0) { /* the planner's curve */
        int *kb = t->adapt_given = malloc((size_t)2 * ts->plan.nkfkb * sizeof *kb);
        for (int i = 0; kb && i < ts->plan.nkfkb; i++) {
            kb[2 * i] = ts->plan.kfkb[i].k;
            kb[2 * i + 1] = ts->plan.kfkb[i].micro_batch;
        }
        o->adapt.given = kb;
        o->adapt.ngiven = kb ? ts->plan.nkfkb : 0;
    }
    t->unit_count = calloc((size_t)s->nstages, sizeof *t->unit_count);
    for (int st = 0; t->unit_count && st < s->nstages; st++)
        t->unit_count[st] = o->emulated ? ts->end[st] - ts->first[st] + 1 : ts->end[st] - ts->first[st];
    if (!o->adapt.k && !o->adapt.partition)
        return 0;
    int start_k = s->params.kind == WP_SCHED_KFKB ? s->params.k : 1;
    int bad = t->unit_count ? 0 : wp_errorf(err, "out of memory");
    if (bad == 0 && o->adapt.partition && t->in.nheld > 1)
        bad = wp_errorf(err, "--adapt partition moves layers between ranks that hold one stage each; rank %d "
                             "holds %d (%s)",
                        t->rank, t->in.nheld, wp_sched_kind_name(s->params.kind));
    if (bad == 0 && o->adapt.partition && !o->emulated) {
        const struct wp_gpt2_config *g = &ts->cfg.model;
        struct wp_gpt_shape shape = {g->layers,     g->channels, g->heads, g->sequence_length,
                                     g->vocabulary, 1,           WP_PRECISION_FP32};
        bad = wp_layer_table_gpt(&t->ref_table, &shape, 1e9, err);
    }
    struct wp_adapt_units units = {o->emulated ? &ts->table : &t->ref_table, o->emulated ? 0 : 1,
                                   o->emulated ? 0 : 1, o->emulated ? 0 : 1, t->unit_count};
    if (bad == 0)
        bad = wp_adapt_init(&t->adapt, &o->adapt, s, start_k, ts->cfg.train.global_batch, &units, ts->srank,
                            make_plan, &t->maker, err);
    if (o->adapt.k)
        t->adapt.tune.cores = o->emulated ? 0 : t->shared_cores; /* emulated passes sleep: no core is shared */
    if (bad) /* said before any rank can end the job */
        wp_err_print(o->command, err);
    int any_bad = bad != 0;
    MPI_Allreduce(MPI_IN_PLACE, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) { /* every rank ends, no step taken, everything freed: no abort that could swallow the
                    * message, which is said */
        err->msg[0] = '\0';
        return -1;
    }
    if (t->rank == 0)
        announce_tuner(t);
    return 0;
}

/* For --changes-hook, before any change is made (the start's too): a link
 * rate the hook sets is dilated and byte-scaled as the run is. */
static void export_scaling(const struct wp_train_options *o)
{
    char factor[32];
    snprintf(factor, sizeof factor, "%g", o->dilation);
    setenv("WAVEPIPE_DILATION", factor, 1);
    snprintf(factor, sizeof factor, "%g", o->byte_scale);
    setenv("WAVEPIPE_BYTE_SCALE", factor, 1);
}

/* --resume, and the scenario's changes up to the first step (a resumed
 * run makes the earlier ones again): status stays -1 once anything failed. */
static int resume(struct wp_train *t, int status, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    if (t->o.resume && status == 0) {
        /* a checkpoint that does not load ends the run, no step taken, everything freed */
        status = wp_checkpoint_load(&t->in, t->o.resume, &t->first_step, err);
        if (status == 0 && t->rank == 0)
            printf("resumed from %s after %ld steps\n", t->o.resume, t->first_step);
    }
    /* --changes: the start's (and, resumed, every earlier one) before the first iteration */
    if (ts->changes.n && status == 0) {
        if (wp_changes_apply(&ts->changes, -1, t->first_step, t->rank, t->rank == 0 ? t->o.changes_hook : NULL,
                             t->hook_timeout_s, &t->slowdown, err))
            status = -1; /* rank 0's hook: said at the end */
        MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    return status;
}

/* What every row and the summary say about the run: replicas per stage,
 * how gradients are summed, activation memory, how compute is done. */
static void describe_run(struct wp_train *t, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    const struct wp_schedule *s = &ts->s;
    const struct wp_train_options *o = &t->o;
    for (int st = 0; st < s->nstages && strlen(t->replicas) < sizeof t->replicas - 8; st++)
        snprintf(t->replicas + strlen(t->replicas), sizeof t->replicas - strlen(t->replicas), "%s%d", st ? ":" : "",
                 s->place[st].nreplicas * s->place[st].ncopies);
    int replicated = 0;
    for (int st = 0; st < s->nstages; st++)
        replicated |= s->place[st].nreplicas * s->place[st].ncopies > 1;
    if (t->rank == 0 && replicated && o->grad_overlap)
        printf("gradients: replicated stages sum theirs in buckets of %.3g MiB started as the backward finishes "
               "their layers (--grad-overlap on)\n",
               o->grad_bucket_bytes / 1048576);
    else if (t->rank == 0 && replicated)
        printf("gradients: replicated stages sum theirs at the ALLREDUCE, all at once (--grad-overlap off)\n");
    t->peak_bytes = activation_peak_bytes(&t->in);
    if (!o->emulated) {
        snprintf(t->compute_cols, sizeof t->compute_cols, "%s", wp_precision_name(t->setup.cfg.train.precision));
        return;
    }
    char name[512];
    wp_strlcpy(name, o->layers_path, sizeof name);
    wp_csv_field(name, '_');
    snprintf(t->compute_cols, sizeof t->compute_cols, "emulated,%s,%g,%g", name, o->dilation, o->byte_scale);
    if (remake_table_costs(t, err)) {
        if (t->rank == 0)
            wp_err_print(o->command, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (t->rank == 0)
        printf("compute=emulated: each pass sleeps what %s (%s, profile batch %d) says for its stage's layers; "
               "messages are real\n",
               o->layers_path, ts->table.name, ts->table.profile_batch);
    if (t->rank == 0 && (o->dilation != 1 || o->byte_scale != 1))
        printf("dilation=%g byte_scale=%g: every pass and optimizer step lasts %g times the table's time and "
               "messages and sums carry 1/%g of the model's bytes (links shaped %g times slower carry them in %g "
               "times the time); every time reported is divided by %g and every byte count is the model's\n",
               o->dilation, o->byte_scale, o->dilation, o->byte_scale, o->byte_scale, o->dilation, o->dilation);
}

/* The buffers of the step loop; then the ranks' map said and the watchdog started. */
static void prepare_steps(struct wp_train *t)
{
    const struct wp_schedule *s = &t->setup.s;
    const struct wp_train_options *o = &t->o;
    int steps = t->setup.cfg.train.steps;
    long nsteps = steps > t->first_step ? steps - t->first_step : 0;
    t->iters = calloc((size_t)(nsteps ? nsteps : 1), sizeof *t->iters);
    t->measure_s = calloc((size_t)(nsteps ? nsteps : 1), sizeof *t->measure_s); /* pairing and agreeing */
    /* a row: its fixed columns, compute_cols and the adapt columns (per stage) */
    t->row_cap = 1024 + sizeof t->compute_cols + (size_t)s->nstages * 48;
    t->row = t->rank == 0 ? malloc(t->row_cap) : NULL;
    t->ran_partition = malloc((size_t)s->nstages * 12 + 1);
    if ((t->rank == 0 && !t->row) || !t->ran_partition || !t->unit_count)
        die(t, &(struct wp_err){"out of memory"});
    t->step = t->first_step;
    t->done_steps = steps > t->first_step ? steps : t->first_step; /* less when a signal stops it */
    if (t->rank == 0)
        wp_rank_loss_print_map(&t->rank_loss, stdout);
    struct wp_err err = {""};
    if (wp_rank_loss_watch(&t->rank_loss, wp_train_options_watch_s(o, t->hook_timeout_s), &err))
        die(t, &err);
}

int wp_train_init(struct wp_train *t, const struct wp_train_options *o, struct wp_err *err)
{
    memset(t, 0, sizeof *t);
    t->o = *o;
    if (!t->o.command)
        t->o.command = "run";
    t->lanes0 = MPI_COMM_NULL;
    t->hook_timeout_s = 120;
    wp_layer_table_init(&t->ref_table);
    wp_stop_signals_install();
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    /* a lost rank or node ends the job with a message naming it (rank_loss.h) */
    struct wp_err loss_err = {""};
    if (wp_rank_loss_init(&t->rank_loss, &loss_err))
        die(t, &loss_err);
    t->shared_cores = wp_train_share_cores(t->rank, &t->nodes);
    /* Everything that can be wrong with the settings is found before any
     * rank computes, identically on every rank. */
    t->ready = READY_SETUP;
    if (wp_train_setup_init(&t->setup, &t->o, err))
        return -1;
    start_interpreter(t, err);
    t->run_s = &t->setup.s;
    int status = start_tuner(t, err);
    /* per action: the send time paired with each receive (the trace's transfers) */
    int actions = t->setup.s.lists[t->setup.srank].count;
    t->msg_sent_cap = actions ? actions : 1;
    t->msg_sent_s = calloc((size_t)t->msg_sent_cap, sizeof *t->msg_sent_s);
    t->measure_cap = (size_t)(6 * t->setup.s.nstages + 1) * 128;
    t->measure_rows = t->rank == 0 && o->measure ? malloc(t->measure_cap) : NULL;
    export_scaling(&t->o); /* before resume() makes the start's changes */
    status = resume(t, status, err);
    describe_run(t, err);
    prepare_steps(t);
    return status;
}

/* What one iteration gave, agreed over the ranks. */
struct iteration {
    double loss_sum, busy_s, iter_s;  /* summed token losses, summed busy seconds, the slowest rank's time */
    const struct wp_schedule *next;   /* the tuner's switch, from the next step on */
    int moved;                        /* the tuner's move: unit_count holds the new units */
};

/* The iteration itself, its sums and measurements, and the tuner's look
 * at them. The status of a failed pass is kept; the ranks still meet. */
static int iterate(struct wp_train *t, struct iteration *it, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    const struct wp_train_options *o = &t->o;
    long step = t->step;
    int steps = ts->cfg.train.steps;
    /* the units per stage this iteration runs on, before a move after it */
    wp_adapt_partition_text(t->unit_count, ts->s.nstages, t->ran_partition, (size_t)ts->s.nstages * 12 + 1);
    wp_measure_reset(&t->measure);
    if (ts->tensor > 1)
        wp_tensor_group_reset(&t->backend.tgroup);
    double loss_sum = 0;
    if (t->rank == 0) /* how busy the host is while the ranks run the iteration */
        t->host_at_step = wp_host_cpu_sample(NULL);
    if (t->rank == 0 && step == t->first_step + 1)
        t->host_at_measured = t->host_at_step;
    int status = wp_interp_step(&t->in, step, &loss_sum, err);
    if (t->rank == 0) {
        t->host_at_end = wp_host_cpu_sample(NULL);
        t->host_busy = wp_host_busy_fraction(t->host_at_step, t->host_at_end);
    }
    if (step == t->first_step)
        t->run_start_s = t->in.timing.start_s;
    if (o->kernel_times && step == t->first_step && steps - t->first_step > 1)
        wp_kernel_times_reset(); /* the first step warms up */
    /* a tensor group's lanes run the same list: its lane 0 speaks for the schedule rank */
    double sums[3] = {loss_sum, ts->lane == 0 ? t->in.timing.busy_s : 0, 0};
    double iter = t->in.timing.iter_s;
    /* waited for as messages are, under the watchdog */
    MPI_Request sums_req, iter_req;
    wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &sums_req),
                     &sums_req);
    wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, &iter, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &iter_req),
                     &iter_req);
    wp_watchdog_iteration_end(iter * o->dilation); /* the watchdog's limits are in wall-clock seconds */
    /* after the ranks met above, so that its time is its own */
    double measure_t0 = MPI_Wtime();
    if (((ts->lane == 0 && wp_measure_messages(&t->measure, t->run_s, ts->srank, t->in.msg_posted_s,
                                               t->in.msg_done_s, t->in.msg_bytes, t->msg_sent_s,
                                               status ? NULL : err)) ||
         wp_measure_agree(&t->measure, status ? NULL : err)) &&
        status == 0)
        status = -1;
    /* --adapt: the tuner sees the agreed measurements; a new plan runs from the next step */
    *it = (struct iteration){sums[0], sums[1], iter, NULL, 0};
    if ((o->adapt.k || o->adapt.partition) &&
        wp_adapt_iteration(&t->adapt, &t->measure, step, step + 1 == steps, &it->next, &it->moved, t->unit_count,
                           status ? NULL : err) &&
        status == 0)
        status = -1;
    if (t->measure_s)
        t->measure_s[step - t->first_step] = (MPI_Wtime() - measure_t0) / o->dilation;
    return status;
}

/* The tuner's switch to another plan from the next step on. */
static int reschedule(struct wp_train *t, const struct wp_schedule *next, struct wp_err *err)
{
    if (wp_interp_reschedule(&t->in, next, err))
        die(t, err); /* a rank half way between two plans cannot go on */
    t->run_s = next;
    t->peak_bytes = activation_peak_bytes(&t->in);
    int srank = t->setup.srank;
    if (next->lists[srank].count > t->msg_sent_cap) {
        t->msg_sent_cap = next->lists[srank].count;
        free(t->msg_sent_s);
        t->msg_sent_s = calloc((size_t)t->msg_sent_cap, sizeof *t->msg_sent_s);
    }
    return remake_table_costs(t, err);
}

/* Rank 0: the iteration's results row and its line, and while status is
 * 0 its measurement rows; the status after them. */
static int write_rows(struct wp_train *t, const struct wp_schedule *ran, double iter, double bubble, double peak,
                      double loss, double pause_s, int status, struct wp_err *err)
{
    const struct wp_train_options *o = &t->o;
    const struct wp_run_config *cfg = &t->setup.cfg;
    long step = t->step;
    struct wp_report_row r = {ran,          t->setup.world_ranks, t->nodes,      t->replicas, step,
                              iter,         bubble,               peak,          loss,        cfg->train.global_batch,
                              cfg->model.sequence_length,         o->emulated,   t->compute_cols,
                              t->host_busy, &o->adapt,            t->ran_partition, pause_s,  &t->measure};
    int len = wp_report_results_row(&r, t->row, t->row_cap);
    wp_report_step_line(step, cfg->train.steps, loss, iter, cfg->train.global_batch, bubble);
    if (o->results && len < 0)
        status = wp_errorf(err, "the results row of step %ld does not fit", step);
    else if (o->results && wp_csv_append(o->results, wp_report_results_header(o->emulated),
                                         wp_report_results_kind(o->emulated), "--results", t->row, (size_t)len, err))
        status = -1; /* said at the end */
    if (status == 0 && o->measure) {
        int n = t->measure_rows ? wp_measure_csv_rows(&t->measure, step, t->measure_rows, t->measure_cap) : -1;
        if (n < 0 || wp_csv_append(o->measure, WP_MEASURE_CSV_HEADER, "measurement rows", "--measure",
                                   t->measure_rows, (size_t)n, err))
            status = n < 0 ? wp_errorf(err, "the measurement rows of step %ld do not fit", step) : -1;
    }
    return status;
}

int wp_train_step(struct wp_train *t, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    const struct wp_train_options *o = &t->o;
    int steps = ts->cfg.train.steps, rank = t->rank;
    long step = t->step;
    if (step >= steps)
        return 1;
    struct iteration it;
    int status = iterate(t, &it, err);
    const struct wp_schedule *ran = t->run_s; /* this step's row */
    double ran_peak_bytes = t->peak_bytes;
    double pause_s = 0; /* this row's: the job stood after the iteration to move layers */
    if (it.moved && wp_train_move_layers(t, t->unit_count, &pause_s, err)) /* live: the job goes on */
        status = -1;
    if (it.next && reschedule(t, it.next, err))
        status = -1;
    const struct wp_run_config *cfg = &ts->cfg;
    double loss = o->emulated ? NAN : it.loss_sum / ((double)cfg->train.global_batch * cfg->model.sequence_length);
    t->in.last_loss = loss;
    if (t->iters)
        t->iters[step - t->first_step] = it.iter_s;
    double bubble = it.iter_s > 0 ? 1.0 - it.busy_s / (ts->ranks * it.iter_s) : 0;
    /* rank 0 appends the rows (a shared file system may stall for a while) and runs the
     * --changes hook while the others wait on the status below: a pause, not a lost rank */
    wp_watchdog_pause_begin("rank 0 writing the results rows");
    if (rank == 0)
        status = write_rows(t, ran, it.iter_s, bubble, ran_peak_bytes, loss, pause_s, status, err);
    /* --changes before the next iteration: rank 0's hook ends before the broadcast below lets any rank on */
    if (status == 0 && ts->changes.n && step + 1 < steps &&
        wp_changes_apply(&ts->changes, step, step + 1, rank, rank == 0 ? o->changes_hook : NULL, t->hook_timeout_s,
                         &t->slowdown, err))
        status = -1;
    MPI_Request status_req;
    wp_comm_mpi_wait(MPI_Ibcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD, &status_req), &status_req);
    wp_watchdog_pause_end();
    /* a stop signal on any rank (Slurm's time-limit warning or SIGTERM, ^C): this iteration's row is
     * written; checkpoint at the finish and stop (stop_signal.h) */
    int stop_sig = wp_stop_signal();
    MPI_Request stop_req;
    wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, &stop_sig, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &stop_req),
                     &stop_req);
    t->step = step + 1;
    if (status == 0 && stop_sig && step + 1 < steps) {
        t->stopped_by = stop_sig;
        t->done_steps = step + 1;
        return 1;
    }
    if (status == 0 && o->save && o->save_every && (step + 1) % o->save_every == 0 && step + 1 < steps)
        status = watched_checkpoint_save(t, step + 1, err);
    return status ? -1 : t->step < steps ? 0 : 1;
}

int wp_train_finish(struct wp_train *t, int status, struct wp_err *err)
{
    struct wp_train_setup *ts = &t->setup;
    const struct wp_train_options *o = &t->o;
    int steps = ts->cfg.train.steps, rank = t->rank;
    if (status == 0 && o->save) {
        status = watched_checkpoint_save(t, t->done_steps, err);
        if (status == 0 && rank == 0)
            printf("saved %s/step-%08ld (%s/latest)\n", o->save, t->done_steps, o->save);
    }
    if (status == 0 && steps > t->first_step) {
        double median = 0;
        long ran = t->done_steps - t->first_step;
        long n = ran > 2 ? ran - 1 : 0; /* the steps after the first */
        if (t->iters && n > 0)
            median = wp_stat3_sorted(t->iters + 1, (size_t)n).median;
        struct wp_report_summary rs = {ts->ranks,    rank,          t->shared_cores, ts->lane == 0,
                                       ts->mesh,     t->peak_bytes, median,          o->emulated ? &t->table_costs : NULL,
                                       o->layers_path, o->dilation, o->byte_scale,
                                       wp_host_busy_fraction(t->host_at_measured, t->host_at_end),
                                       wp_precision_name(ts->cfg.train.precision)};
        wp_report_summary(&t->in, t->run_s, &rs);
        if (!o->emulated)
            wp_report_bytes(&t->in, ts->tensor > 1 ? &t->backend.tgroup : NULL, t->run_s, &ts->cfg.model,
                            ts->cfg.train.precision, rank);
        if (rank == 0 && t->measure_s && n > 0 && median > 0)
            wp_report_measuring(t->measure_s, n, median, o->adapt.k);
    }
    if (status == 0 && o->kernel_times) {
        long timed = steps - t->first_step > 1 ? steps - t->first_step - 1 : 1;
        status = wp_report_kernel_times(o->kernel_times, rank, ts->world_ranks, timed, err);
    }
    if (status == 0 && (o->trace || o->svg)) {
        long nsteps = steps > t->first_step ? steps - t->first_step : 0;
        struct wp_report_timeline tl = {(o->adapt.k || o->adapt.partition) && nsteps > 0 ? &t->adapt : NULL,
                                        &t->clock, t->run_start_s, steps - 1};
        wp_report_measured_trace(&t->in, t->run_s, t->msg_sent_s, o->trace, o->svg, &tl, rank, ts->world_ranks,
                                 ts->lane, o->command);
    }
    if (status == 0 && t->stopped_by && rank == 0)
        printf("stopped by signal %d after %ld of %d steps%s%s: exit status %d; resume with --resume and the "
               "same --steps\n",
               t->stopped_by, t->done_steps, steps, o->save ? ", checkpoint in " : "", o->save ? o->save : "",
               WP_EXIT_STOPPED);
    return status;
}

int wp_train_run(struct wp_train *t, struct wp_err *err)
{
    int rc;
    while ((rc = wp_train_step(t, err)) == 0)
        ;
    return wp_train_finish(t, rc < 0 ? -1 : 0, err);
}

int wp_train_exit_status(const struct wp_train *t, int status)
{
    if (status == 0 && t->stopped_by)
        return WP_EXIT_STOPPED;
    return status ? 1 : 0;
}

void wp_train_destroy(struct wp_train *t)
{
    free(t->iters);
    free(t->row);
    free(t->ran_partition);
    free(t->measure_rows);
    free(t->msg_sent_s);
    free(t->measure_s);
    if (t->ready >= READY_INTERP) {
        wp_measure_destroy(&t->measure);
        wp_adapt_destroy(&t->adapt);
    }
    wp_layer_table_destroy(&t->ref_table);
    free(t->unit_count);
    free(t->adapt_given);
    wp_layer_stage_arrays_free(&t->table_costs);
    if (t->ready >= READY_INTERP) {
        wp_interp_destroy(&t->in);
        if (t->lanes0 != MPI_COMM_NULL)
            MPI_Comm_free(&t->lanes0);
        wp_train_backend_destroy(&t->backend);
    }
    if (t->ready >= READY_SETUP) {
        wp_train_setup_destroy(&t->setup);
        wp_rank_loss_destroy(&t->rank_loss);
    }
    memset(t, 0, sizeof *t);
}
