/* A plan as the runtime runs it: the generator's settings and the units
 * (blocks, or the table's layers) per stage (plan_schedule.h). */
#include "plan/plan_schedule.h"

int wp_plan_schedule_params(const struct wp_plan *pl, const char *plan_path, struct wp_sched_params *p,
                            int *replicas, struct wp_err *err)
{
    int interleaved = pl->chunks > 1;
    for (int s = 0; interleaved && s < pl->nstages; s++)
        if (pl->stages[s].replicas != 1)
            return wp_errorf(err, "%s interleaves %d chunks per GPU over replicated stages (stage %d has %d "
                                  "replicas); the runtime's interleaved schedule runs one replica per stage",
                             plan_path, pl->chunks, s, pl->stages[s].replicas);
    if (pl->nstages > WP_SCHED_MAX_STAGES)
        return wp_errorf(err, "%s has %d stages; the runtime takes at most %d", plan_path, pl->nstages,
                         WP_SCHED_MAX_STAGES);
    for (int s = 0; s < pl->nstages; s++)
        replicas[s] = pl->stages[s].replicas;
    p->kind = WP_SCHED_1F1B;
    p->policy = pl->policy;
    p->nreplicas = pl->nstages;
    p->replicas = replicas;
    p->microbatches = pl->microbatches;
    if (interleaved) { /* Megatron-LM's order: virtual stage j on the ranks of stage j mod P, as the plan's */
        p->kind = WP_SCHED_INTERLEAVED;
        p->chunks = pl->chunks;
        p->nreplicas = 0;
        p->replicas = NULL;
    }
    return 0;
}

int wp_plan_stage_units(const struct wp_plan *pl, const char *plan_path, int blocks, int *units,
                        struct wp_err *err)
{
    for (int s = 0; s < pl->nstages; s++) {
        /* the table's layers; or layer 0 the embedding, 1..blocks the blocks, blocks + 1 the head */
        int a = blocks == 0 || pl->stages[s].first_layer >= 1 ? pl->stages[s].first_layer : 1;
        int b = blocks == 0 || pl->stages[s].last_layer <= blocks ? pl->stages[s].last_layer : blocks;
        if (b < a)
            return wp_errorf(err, "%s: stage %d (layers %d-%d) holds no transformer block; the runtime keeps the "
                                  "embedding and the head with the first and last block",
                             plan_path, s, pl->stages[s].first_layer, pl->stages[s].last_layer);
        units[s] = b - a + 1;
    }
    return 0;
}
