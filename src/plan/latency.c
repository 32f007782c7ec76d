/* DAPPLE's pipeline latency estimate from the pivot stage (see latency.h). */
#include "plan/latency.h"

static double steady(const struct wp_pipe_stage *st, int M)
{
    return (double)(M - 1) * (st->forward_s + st->backward_s);
}

int wp_dapple_pivot(const struct wp_pipe_stage *stages, int nstages, int microbatches)
{
    int Q = nstages - 1;
    double between = 0; /* sum of F + B over the stages strictly between s and Q */
    for (int s = nstages - 2; s >= 0; s--) {
        if (steady(&stages[s], microbatches) > steady(&stages[Q], microbatches) + between) {
            Q = s;
            between = 0;
        } else {
            between += stages[s].forward_s + stages[s].backward_s;
        }
    }
    return Q;
}

struct wp_pipe_latency wp_dapple_latency(const struct wp_pipe_stage *stages, int nstages, int microbatches)
{
    struct wp_pipe_latency r = {0};
    int Q = wp_dapple_pivot(stages, nstages, microbatches);
    r.pivot = Q;
    for (int s = 0; s <= Q; s++)
        r.warmup_s += stages[s].forward_s;
    r.steady_s = steady(&stages[Q], microbatches);
    double end_q = stages[Q].backward_s;
    r.ending_s = end_q + stages[Q].allreduce_s;
    double end = end_q;
    for (int s = Q - 1; s >= 0; s--) { /* stage s ends sum_{a=s}^{Q} B_a */
        end += stages[s].backward_s;
        if (end + stages[s].allreduce_s > r.ending_s)
            r.ending_s = end + stages[s].allreduce_s;
    }
    end = 0;
    for (int s = Q + 1; s < nstages; s++) { /* stage s ends -sum_{Q<a<s} B_a */
        if (end + stages[s].allreduce_s > r.ending_s)
            r.ending_s = end + stages[s].allreduce_s;
        end -= stages[s].backward_s;
    }
    r.total_s = r.warmup_s + r.steady_s + r.ending_s;
    return r;
}
