/* A training run's settings, checked before any rank computes
 * (train_setup.h): configuration, schedule, stages' units, recomputation,
 * corpus and changes; the same settings or the same error on every rank. */
#include "run/train/train_setup.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/layer_stages.h"
#include "plan/plan_ranks.h"
#include "plan/plan_schedule.h"
#include "plan/tp_block.h"
#include "run/adapt/measure.h"
#include "run/model/gpt2_stage.h"
#include "run/train/checkpoint.h"
#include "run/train/report.h"
#include "sched/generate.h"
#include "sched/schedule_file.h"
#include "util/csv_append.h"
#include "util/datadir.h"
#include "util/strutil.h"

/* The settings a plan fixes, checked against the model and the job: the
 * schedule's settings and each stage's units (plan_schedule.h). */
static int apply_plan(struct wp_train_setup *ts, const struct wp_train_options *o, int P, int *units,
                      struct wp_err *err)
{
    const struct wp_plan *pl = &ts->plan;
    int L = ts->cfg.model.layers, t = wp_plan_tensor_size(pl->tensor);
    struct wp_sched_params p = ts->params;
    if (wp_plan_schedule_params(pl, o->plan_path, &p, ts->replicas, err))
        return -1;
    if (pl->sequence_parallel)
        return wp_errorf(err, "%s uses Megatron-LM's sequence parallelism, which wavepipe run does not: plan with "
                              "--sequence-parallel off", o->plan_path);
    for (int s = 0; s < pl->nstages; s++)
        if (pl->stages[s].selective)
            return wp_errorf(err, "%s: stage %d recomputes its attention core (Megatron-LM's selective "
                                  "recomputation), which wavepipe run does not: plan with --recompute never or always",
                             o->plan_path, s);
    for (int s = 0; s < pl->nstages && o->emulated; s++)
        if (pl->stages[s].recompute)
            return wp_errorf(err, "%s: stage %d recomputes its forward, which emulated stages do not: plan with "
                                  "--recompute never", o->plan_path, s);
    if (t > 1 && o->emulated)
        return wp_errorf(err, "%s splits blocks over tensor groups of %d: not with --compute emulated yet",
                         o->plan_path, t);
    if (o->emulated && pl->nlayers != ts->table.nlayers)
        return wp_errorf(err, "%s is for %s, a table of %d layers; --layers %s has %d", o->plan_path, pl->model,
                         pl->nlayers, o->layers_path, ts->table.nlayers);
    if (!o->emulated && pl->nlayers != L + 2)
        return wp_errorf(err, "%s is for %s, a table of %d layers; %s has %d blocks, whose table has %d (embedding, "
                              "blocks, head): plan from `wavepipe profile --model %s -o LAYERS.cfg`",
                         o->plan_path, pl->model, pl->nlayers, o->config, L, L + 2, o->config);
    if (pl->devices_used != P * t)
        return wp_errorf(err, "%s places its stages on %d devices: launch %d ranks (mpiexec -n %d), not %d",
                         o->plan_path, pl->devices_used, pl->devices_used, pl->devices_used, P * t);
    if (wp_plan_stage_units(pl, o->plan_path, o->emulated ? 0 : L, units, err))
        return -1;
    size_t len = 0;
    for (int s = 0; s < pl->nstages; s++)
        len += (size_t)snprintf(ts->units_text + len, sizeof ts->units_text - len, "%s%d", s ? "," : "",
                                units[s]);
    ts->params = p;
    ts->cfg.train.global_batch = pl->global_batch;
    return 0;
}

/* The options over the configuration, the plan's settings, a schedule
 * file (read here: it fixes the micro-batches) and data-parallel copies;
 * a generated schedule is made afterwards. */
static int read_settings(struct wp_train_setup *ts, const struct wp_train_options *o, int P, int *plan_units,
                         struct wp_err *err)
{
    struct wp_run_config *cfg = &ts->cfg;
    wp_run_config_default(cfg);
    if (o->config && wp_run_config_read(o->config, cfg, err))
        return -1;
    if (o->emulated && wp_layer_table_read(&ts->table, o->layers_path, 0, WP_CONTRACT_AUTO, err))
        return -1;
    struct wp_train_config *t = &cfg->train;
    if (o->global_batch > 0)
        t->global_batch = o->global_batch;
    if (o->steps >= 0)
        t->steps = o->steps;
    if (o->seed >= 0)
        t->seed = (unsigned long long)o->seed;
    if (o->data)
        wp_strlcpy(t->data, o->data, sizeof t->data);
    if (o->synthetic)
        t->synthetic_data = 1;
    if (o->precision >= 0)
        t->precision = (enum wp_precision)o->precision;
    int micro_given = o->micro_given;
    if (o->plan_path) {
        if (apply_plan(ts, o, P, plan_units, err))
            return -1;
        micro_given = 1;
    }
    struct wp_sched_params *p = &ts->params;
    if (o->schedule_file) {
        if (wp_schedule_load(o->schedule_file, p, &ts->s, err))
            return -1;
        if (ts->s.nranks != P)
            return wp_errorf(err, "%s is a schedule of %d ranks: launch %d (mpiexec -n %d), not %d",
                             o->schedule_file, ts->s.nranks, ts->s.nranks, ts->s.nranks, P);
        p->microbatches = ts->s.nmicro;
        micro_given = 1;
    }
    if (micro_given)
        t->micro_batches = p->microbatches;
    p->microbatches = t->micro_batches;
    /* emulated without a model file: micro-batches of the table's profile batch */
    if (o->emulated && !o->config && o->global_batch <= 0 && !o->plan_path)
        t->global_batch = t->micro_batches * ts->table.profile_batch;
    p->ranks = P;
    if (o->stages) {
        /* data-parallel pipelines of S ranks (any kind; for gpipe, 1f1b and
         * kfkb the S stages replicated P/S times, as --replicas r,r,..
         * would): replica j of each rank talks to replica j of its peers,
         * so the copies run apart and meet only at the gradient allreduce */
        if (p->nreplicas)
            return wp_errorf(err, "give --stages or --replicas, not both");
        if (p->data_parallel > 1)
            return wp_errorf(err, "give --stages S or --data-parallel P/S, not both");
        if (P % o->stages)
            return wp_errorf(err, "--stages %d does not divide the %d ranks into pipeline copies", o->stages, P);
        p->data_parallel = P / o->stages;
    }
    return wp_run_config_check(cfg, err);
}

/* The mesh against the schedule and the model, and the output files
 * against what they hold already. */
static int check_mesh_and_outputs(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err)
{
    const int *mesh = ts->mesh;
    const struct wp_schedule *s = &ts->s;
    if (mesh[0] > 1)
        for (int st = 1; st < s->nstages; st++)
            if (s->place[st].nreplicas != s->place[0].nreplicas)
                return wp_errorf(err, "--mesh %dx%dx%d: stages of different replica counts (%d, %d) would trade "
                                      "pieces of sequences; give every stage the same",
                                 mesh[0], mesh[1], mesh[2], s->place[0].nreplicas, s->place[st].nreplicas);
    if (ts->tensor > 1) {
        char why[160];
        if (wp_tp_group_check(mesh[1], mesh[2], ts->cfg.model.heads, ts->cfg.model.channels, mesh[2], why,
                              sizeof why))
            return wp_errorf(err, "mesh %dx%dx%d: %s", mesh[0], mesh[1], mesh[2], why);
    }
    if (o->measure &&
        wp_csv_check_header(o->measure, WP_MEASURE_CSV_HEADER, "measurement rows", "--measure", err))
        return -1;
    if (o->results && wp_csv_check_header(o->results, wp_report_results_header(o->emulated),
                                          wp_report_results_kind(o->emulated), "--results", err))
        return -1;
    return 0;
}

/* A schedule file's shape said; a plan's devices found among the job's
 * ranks (the plan's r-th device is schedule rank r: moved to the rank on
 * that device) and the plan said. */
static int place_on_ranks(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err)
{
    struct wp_schedule *s = &ts->s;
    int P = ts->ranks, rank = ts->world_rank;
    if (o->schedule_file && rank == 0)
        printf("schedule file %s: %d ranks, %d stages, %d micro-batches%s\n", o->schedule_file, s->nranks,
               s->nstages, s->nmicro, s->split_backward ? ", backward split into B and W" : "");
    if (!o->plan_path)
        return 0;
    int *to = ts->rank_map = malloc((size_t)P * sizeof *to);
    if (!to)
        return wp_errorf(err, "out of memory");
    if (wp_plan_rank_map(&ts->plan, to, err) || wp_schedule_rename_ranks(s, to, err))
        return -1;
    if (rank != 0)
        return 0;
    const struct wp_plan *pl = &ts->plan;
    char shape[256];
    wp_plan_shape(pl, shape, sizeof shape);
    char group[64] = "";
    if (ts->tensor > 1)
        snprintf(group, sizeof group, ", tensor groups of %dx%d", pl->tensor.p1, pl->tensor.p2);
    printf("plan %s: %s, %d stages%s, blocks per stage %s, %d micro-batches of %d, policy %c, predicted %.4f s "
           "per iteration on %s\n",
           o->plan_path, shape, pl->nstages, group, ts->units_text, pl->microbatches, pl->micro_batch, pl->policy,
           pl->predicted_iter_s, pl->hw.cluster);
    int moved = 0;
    for (int r = 0; r < P; r++)
        moved += to[r] != r;
    if (moved)
        printf("plan: %d of %d ranks run another place of the schedule than their rank number, as the "
               "plan's devices ask\n", moved, P);
    return 0;
}

/* Blocks per stage from counts (spec names them in errors): [first, end). */
static int blocks_from_counts(const int *count, int n, const char *spec, int L, int S, int *first, int *end,
                              struct wp_err *err)
{
    int next = 0;
    for (int s = 0; s < n; s++) {
        if (s >= S || count[s] < 1)
            return wp_errorf(err, "--partition '%s' must give %d block counts >= 1", spec, S);
        first[s] = next;
        next += count[s];
        end[s] = next;
    }
    if (n != S || next != L)
        return wp_errorf(err, "--partition '%s' must give %d stages adding up to %d blocks", spec, S, L);
    return 0;
}

/* Blocks per stage: even, the counts given (n of them, a plan's; spec
 * their text), or the counts of spec "n0,n1,...". */
static int blocks_per_stage(const char *spec, const int *given, int n_given, int L, int S, int *first, int *end,
                            struct wp_err *err)
{
    if (L < S)
        return wp_errorf(err, "the model has %d blocks but the schedule has %d stages (more stages than layers)", L,
                         S);
    if (given)
        return blocks_from_counts(given, n_given, spec, L, S, first, end, err);
    if (!spec) {
        for (int s = 0; s < S; s++) {
            first[s] = (int)((long)s * L / S);
            end[s] = (int)((long)(s + 1) * L / S);
        }
        return 0;
    }
    char copy[4096];
    wp_strlcpy(copy, spec, sizeof copy);
    int count[4096], n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
        if (n >= S || n >= (int)(sizeof count / sizeof count[0]))
            return wp_errorf(err, "--partition '%s' must give %d block counts >= 1", spec, S);
        count[n] = atoi(tok);
    }
    return blocks_from_counts(count, n, spec, L, S, first, end, err);
}

/* Resuming without a partition: the checkpoint's (blocks per stage "n0:n1:..."),
 * when it has as many stages; into resumed as "n0,n1,...", else "". */
static int resumed_partition(const struct wp_train_options *o, int S, int rank, char *resumed, size_t size,
                             struct wp_err *err)
{
    char recorded[256] = "";
    resumed[0] = '\0';
    if (wp_checkpoint_partition(o->resume, recorded, sizeof recorded, err))
        return -1;
    if (!recorded[0])
        return 0;
    int colons = 0;
    wp_strlcpy(resumed, recorded, size);
    for (char *c = resumed; *c; c++)
        if (*c == ':') {
            *c = ',';
            colons++;
        }
    if (colons + 1 == S) {
        if (rank == 0)
            printf("resuming with the partition %s recorded (blocks per stage)\n", recorded);
        return 0;
    }
    if (rank == 0)
        printf("the checkpoint's partition %s is of %d stages, this run has %d: blocks split evenly\n", recorded,
               colons + 1, S);
    resumed[0] = '\0';
    return 0;
}

/* Each stage's units: blocks [first, end) of the model, or emulated the
 * table's layers [first, end]; from the plan, --partition, a resumed
 * checkpoint, or split evenly (emulated: balanced by the table). */
static int stage_ranges(struct wp_train_setup *ts, const struct wp_train_options *o, const int *plan_units,
                        struct wp_err *err)
{
    int S = ts->s.nstages;
    ts->first = malloc((size_t)S * sizeof *ts->first);
    ts->end = malloc((size_t)S * sizeof *ts->end);
    if (!ts->first || !ts->end)
        return wp_errorf(err, "out of memory");
    const char *spec = o->plan_path ? ts->units_text : o->partition;
    const int *given = o->plan_path ? plan_units : NULL;
    int ngiven = o->plan_path ? ts->plan.nstages : 0;
    if (o->emulated) {
        if (given)
            return wp_layer_stages_from_counts(&ts->table, given, ngiven, spec, S, ts->first, ts->end, err);
        if (spec)
            return wp_layer_stages_parse(&ts->table, spec, S, ts->first, ts->end, err);
        return wp_layer_stages_balanced(&ts->table, S, ts->first, ts->end, err);
    }
    char resumed[256] = "";
    if (o->resume && !spec) {
        if (resumed_partition(o, S, ts->world_rank, resumed, sizeof resumed, err))
            return -1;
        if (resumed[0])
            spec = resumed;
    }
    return blocks_per_stage(spec, given, ngiven, ts->cfg.model.layers, S, ts->first, ts->end, err);
}

/* The stages that recompute their forward before each backward (--recompute:
 * all; --plan: those it marks), NULL when none; checked against the
 * schedule, and rank 0 says which. */
static int recompute_stages(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err)
{
    const struct wp_schedule *s = &ts->s;
    int S = s->nstages, n = 0;
    ts->recompute = NULL;
    if (!o->recompute && !o->plan_path)
        return 0;
    int *marked = calloc((size_t)S, sizeof *marked);
    if (!marked)
        return wp_errorf(err, "out of memory");
    for (int st = 0; st < S; st++) { /* a plan's stages are the schedule's (virtual ones when interleaved) */
        marked[st] = o->recompute || (st < ts->plan.nstages && ts->plan.stages[st].recompute);
        n += marked[st];
    }
    if (n == 0) {
        free(marked);
        return 0;
    }
    ts->recompute = marked;
    if (wp_gpt2_stage_modes_check(s->split_backward, 1, err))
        return wp_err_prefix(err, "%s %s: ", o->schedule_file ? "schedule file" : "schedule",
                             o->schedule_file ? o->schedule_file : wp_sched_kind_name(s->params.kind));
    if (ts->world_rank != 0)
        return 0;
    if (n == S) {
        printf("recompute: all %d stages run their forward again before each backward, keeping per micro-batch "
               "in flight only their boundaries (%s)\n", S, o->recompute ? "--recompute" : "the plan's");
        return 0;
    }
    printf("recompute: stage%s", n > 1 ? "s" : "");
    for (int st = 0, said = 0; st < S; st++)
        if (marked[st])
            printf("%s %d", said++ ? "," : "", st);
    printf(" of %d run their forward again before each backward, keeping per micro-batch in flight only their "
           "boundaries (the plan's)\n", S);
    return 0;
}

/* Real compute: the tokens, from the corpus (the shipped one by default) or random. */
static int load_corpus(struct wp_train_setup *ts, struct wp_err *err)
{
    const struct wp_run_config *cfg = &ts->cfg;
    if (cfg->train.synthetic_data)
        return wp_corpus_synthetic(1 << 20, cfg->model.vocabulary, cfg->train.seed, &ts->corpus, err);
    char shipped[PATH_MAX]; /* the demo corpus, installed or in the source tree */
    if (!cfg->train.data[0])
        wp_data_path("jobs/data/sonnets.txt", shipped, sizeof shipped);
    if (wp_corpus_load(cfg->train.data[0] ? cfg->train.data : shipped, cfg->model.sequence_length, &ts->corpus,
                       err))
        return -1;
    if (!cfg->train.synthetic_data && cfg->model.vocabulary < 256)
        return wp_errorf(err, "byte-level tokens need vocabulary 256 (the model has %d)", cfg->model.vocabulary);
    return 0;
}

/* --changes: every rank holds the scenario (its slow changes are its own). */
static int load_changes(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err)
{
    struct wp_changes *c = &ts->changes;
    if (wp_changes_load(o->changes_path, c, err))
        return -1;
    if (wp_changes_max_rank(c) >= ts->world_ranks)
        return wp_errorf(err, "%s: slows rank %d of a run of %d ranks", o->changes_path, wp_changes_max_rank(c),
                         ts->world_ranks);
    if (wp_changes_need_hook(c) && !o->changes_hook)
        return wp_errorf(err, "%s: changes other than slow need --changes-hook PROGRAM", o->changes_path);
    if (wp_changes_slow(c) && o->slowdown_path)
        return wp_errorf(err, "%s slows ranks, and so does --slowdown-file: give one of them", o->changes_path);
    return 0;
}

int wp_train_setup_init(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err)
{
    memset(ts, 0, sizeof *ts);
    wp_plan_init(&ts->plan);
    wp_layer_table_init(&ts->table);
    MPI_Comm_rank(MPI_COMM_WORLD, &ts->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ts->world_ranks);
    memcpy(ts->mesh, o->mesh, sizeof ts->mesh);
    ts->params = o->sched;
    if (ts->params.nreplicas) { /* the schedule's replicas are the run's own, as a plan writes them */
        memcpy(ts->replicas, ts->params.replicas, (size_t)ts->params.nreplicas * sizeof *ts->replicas);
        ts->params.replicas = ts->replicas;
    }
    /* with tensor groups the schedule has one rank per group: srank, run by
     * every lane of the group (comm_lanes.h); a plan gives its group */
    struct wp_err plan_err = {""};
    int plan_status = o->plan_path ? wp_plan_read(o->plan_path, &ts->plan, &plan_err) : 0;
    if (o->plan_path && plan_status == 0) {
        ts->mesh[1] = ts->plan.tensor.p1;
        ts->mesh[2] = ts->plan.tensor.p2;
    }
    ts->tensor = ts->mesh[0] * ts->mesh[1] * ts->mesh[2];
    ts->lane = ts->world_rank % ts->tensor;
    ts->srank = ts->world_rank / ts->tensor;
    if (plan_status)
        return wp_errorf(err, "%s", plan_err.msg);
    if (ts->world_ranks % ts->tensor)
        return wp_errorf(err, "mesh %dx%dx%d: groups of %d ranks do not divide the %d ranks", ts->mesh[0],
                         ts->mesh[1], ts->mesh[2], ts->tensor, ts->world_ranks);
    ts->ranks = ts->world_ranks / ts->tensor; /* from here on, the schedule's ranks */
    int *plan_units = o->plan_path ? calloc((size_t)ts->plan.nstages + 1, sizeof *plan_units) : NULL;
    if (o->plan_path && !plan_units)
        return wp_errorf(err, "out of memory");
    int rc = read_settings(ts, o, ts->ranks, plan_units, err);
    if (rc == 0)
        rc = check_mesh_and_outputs(ts, o, err);
    if (rc == 0 && !o->schedule_file)
        rc = wp_schedule_generate(&ts->params, &ts->s, err);
    if (rc == 0)
        rc = place_on_ranks(ts, o, err);
    if (rc == 0)
        rc = stage_ranges(ts, o, plan_units, err);
    if (rc == 0 && !o->emulated)
        rc = recompute_stages(ts, o, err);
    if (rc == 0 && !o->emulated)
        rc = load_corpus(ts, err);
    if (rc == 0 && o->changes_path)
        rc = load_changes(ts, o, err);
    free(plan_units);
    return rc;
}

void wp_train_setup_destroy(struct wp_train_setup *ts)
{
    wp_changes_free(&ts->changes);
    wp_corpus_destroy(&ts->corpus);
    wp_schedule_destroy(&ts->s);
    wp_plan_destroy(&ts->plan);
    wp_layer_table_destroy(&ts->table);
    free(ts->first);
    free(ts->end);
    free(ts->rank_map);
    free(ts->recompute);
    memset(ts, 0, sizeof *ts);
}
