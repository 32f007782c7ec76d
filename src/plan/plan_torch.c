/* A plan as torch.distributed.pipelining runs it: the stage split and the
 * schedule's compute-only CSV (plan_torch.h). */
#include "plan/plan_torch.h"

#include <stdlib.h>
#include <string.h>

#include "sched/generate.h"
#include "sched/schedule_file.h"
#include "util/csv_append.h"

/* The plan's schedule (k = 1: what the planner simulated and the plan file
 * names) into s, and its compute-only CSV into *csv (malloc'd). */
static int schedule_csv(const struct wp_plan *p, struct wp_schedule *s, char **csv, struct wp_err *err)
{
    int *reps = calloc((size_t)p->nstages, sizeof *reps);
    if (!reps)
        return wp_errorf(err, "out of memory");
    struct wp_sched_params sp;
    wp_plan_sched_params(p, 1, p->microbatches, reps, &sp);
    int rc = wp_schedule_generate(&sp, s, err);
    free(reps);
    if (rc)
        return -1;
    int P = s->nranks;
    for (int j = 0; j < s->nstages; j++)
        if (s->place[j].ranks[0] != j % P) { /* the plan's devices: stage j on those of stage j mod P */
            wp_schedule_destroy(s);
            return wp_errorf(err, "the %s schedule puts stage %d on rank %d, the plan on rank %d",
                             wp_sched_kind_name(sp.kind), j, s->place[j].ranks[0], j % P);
        }
    size_t len = 0;
    FILE *mem = open_memstream(csv, &len);
    if (!mem) {
        wp_schedule_destroy(s);
        return wp_errorf(err, "out of memory");
    }
    rc = wp_schedule_write_torch_csv(mem, s, err);
    if (fclose(mem) && rc == 0)
        rc = wp_errorf(err, "out of memory");
    if (rc) {
        free(*csv);
        *csv = NULL;
        wp_schedule_destroy(s);
    }
    return rc;
}

static const char *recompute_name(const struct wp_plan_stage *st)
{
    return st->recompute ? "full" : st->selective ? "selective" : "none";
}

/* What the lines are, and the plan's settings as key=value. */
static void write_header(FILE *out, const struct wp_plan *p, const struct wp_schedule *s)
{
    int P = s->nranks, S = s->nstages, dp = p->stages[0].replicas;
    fprintf(out, "# %s as torch.distributed.pipelining runs it (PyTorch 2.15.0's schedules.py): pipeline ranks %d, "
                 "stages %d (%d a rank), micro-batches %d\n",
            p->model, P, S, S / P, s->nmicro);
    fprintf(out, "# pipeline: pipeline_ranks=%d stages=%d stages_per_rank=%d n_microbatches=%d schedule=%s "
                 "warmup_policy=%c data_parallel=%d tensor=%dx%d micro_batch=%d samples_per_replica=%d "
                 "global_batch=%d sequence_parallel=%s distributed_optimizer=%s\n",
            P, S, S / P, s->nmicro, wp_sched_kind_name(s->params.kind), s->params.policy, dp, p->tensor.p1,
            p->tensor.p2, p->micro_batch, p->stages[0].slice, p->global_batch, p->sequence_parallel ? "on" : "off",
            p->distributed_optimizer ? "on" : "off");
    fprintf(out, "# use: a device mesh of pipeline_ranks x data_parallel x tensor (each stage's devices below, "
                 "replica by replica, a replica's tensor lanes in turn); on each pipeline rank its stages as "
                 "PipelineStage(module, stage_index, num_stages=%d, ...), a schedule over them with n_microbatches=%d "
                 "(_PipelineScheduleRuntime, or PipelineScheduleMulti, which needs the grid's empty cells), then "
                 "schedule._load_csv(FILE) of the schedule lines; step() takes a data-parallel rank's "
                 "global_batch / data_parallel samples\n",
            S, s->nmicro);
    fprintf(out, "# recompute: none; full = torch.utils.checkpoint around each of the stage's layers; selective = "
                 "around its blocks' attention core (PyTorch recomputes inside a stage's backward: no action of "
                 "its own in the schedule)\n");
    if (p->tensor.p2 > 1)
        fprintf(out, "# the tensor group %d x %d is AutoDDL's 2-D mesh (the heads split on the first axis, the "
                     "channels and a slice's sequences on the second); torch.distributed.tensor.parallel's "
                     "ColwiseParallel/RowwiseParallel split on one axis: the second is yours to build\n",
                p->tensor.p1, p->tensor.p2);
}

/* One "# split:" line per stage, after its header. */
static int write_split(FILE *out, const struct wp_plan *p, const struct wp_layer_table *t, int P,
                       struct wp_err *err)
{
    int tp = wp_plan_tensor_size(p->tensor);
    fprintf(out, "# split: stage,rank,chunk,first_layer,last_layer,first_index,last_index,replicas,tensor,"
                 "recompute,devices\n");
    for (int j = 0; j < p->nstages; j++) {
        const struct wp_plan_stage *st = &p->stages[j];
        if (st->first_layer < 0 || st->last_layer >= t->nlayers || st->first_layer > st->last_layer)
            return wp_errorf(err, "stage %d holds layers %d-%d of a table of %d", j, st->first_layer,
                             st->last_layer, t->nlayers);
        char first[WP_LAYER_NAME_MAX], last[WP_LAYER_NAME_MAX];
        snprintf(first, sizeof first, "%s", t->layers[st->first_layer].name);
        snprintf(last, sizeof last, "%s", t->layers[st->last_layer].name);
        wp_csv_field(first, '_');
        wp_csv_field(last, '_');
        size_t size = (size_t)st->replicas * tp * 24 + 1;
        char *devices = malloc(size);
        if (!devices)
            return wp_errorf(err, "out of memory");
        devices[0] = '\0';
        if (st->devices)
            wp_plan_devices_list(st, tp, devices, size);
        fprintf(out, "# split: %d,%d,%d,%s,%s,%d,%d,%d,%dx%d,%s,%s\n", j, j % P, j / P, first, last,
                st->first_layer, st->last_layer, st->replicas, p->tensor.p1, p->tensor.p2, recompute_name(st),
                devices);
        free(devices);
    }
    return 0;
}

int wp_plan_write_torch(FILE *out, const struct wp_plan *p, const struct wp_layer_table *t, struct wp_err *err)
{
    if (p->nstages < 1 || p->microbatches < 1)
        return wp_errorf(err, "the plan has %d stages and %d micro-batches: nothing to schedule", p->nstages,
                         p->microbatches);
    for (int j = 1; j < p->nstages; j++)
        if (p->stages[j].replicas != p->stages[0].replicas)
            return wp_errorf(err, "torch.distributed.pipelining composes with data parallelism through one device "
                                  "mesh, one data-parallel size for every stage; this plan's stage %d has %d "
                                  "replicas, stage 0 %d (wavepipe run --plan runs such plans)",
                             j, p->stages[j].replicas, p->stages[0].replicas);
    struct wp_schedule s;
    char *csv = NULL;
    memset(&s, 0, sizeof s);
    if (schedule_csv(p, &s, &csv, err))
        return -1;
    /* the whole text first, so that an error leaves nothing half written */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int rc = mem ? 0 : wp_errorf(err, "out of memory");
    if (rc == 0) {
        write_header(mem, p, &s);
        rc = write_split(mem, p, t, s.nranks, err);
        fprintf(mem, "# schedule: the %d lines below without '#' are PipelineScheduleMulti._load_csv's "
                     "compute_only CSV (grep -v '^#'): row r is pipeline rank r, cells STAGE F|B|I|W "
                     "MICRO-BATCH (0F3: stage 0's forward of micro-batch 3; B a full backward; I and W its input "
                     "and weight halves), empty cells idle steps of the lock-step grid\n",
                s.nranks);
        fputs(csv, mem);
        if (fclose(mem) && rc == 0)
            rc = wp_errorf(err, "out of memory");
    }
    if (rc == 0)
        fwrite(text, 1, len, out);
    free(text);
    free(csv);
    wp_schedule_destroy(&s);
    return rc;
}
