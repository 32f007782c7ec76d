/* DAPPLE's pipeline latency (section IV-A/IV-C1): the time of one global
 * batch of M micro-batches through S stages (computation stages and, as the
 * paper does, communication stages with AR = 0), estimated from the pivot
 * stage Q as L = Tw + Ts + Te. The planner's dynamic programming evaluates
 * every candidate partition with it. */
#ifndef WP_PLAN_LATENCY_H
#define WP_PLAN_LATENCY_H

struct wp_pipe_stage {
    double forward_s;   /* F_s: one micro-batch (a communication stage: its forward transfer) */
    double backward_s;  /* B_s */
    double allreduce_s; /* AR(P_s, g_s): the stage's gradient allreduce over its replicas; 0 if none */
};

struct wp_pipe_latency {
    int pivot;            /* Q */
    double warmup_s;      /* Tw = sum_{s<=Q} F_s */
    double steady_s;      /* Ts = (M-1)(F_Q + B_Q) */
    double ending_s;      /* Te: from the end of the steady phase to the last allreduce */
    double total_s;       /* L */
};

/* Formula 3: Q starts at S-1 and moves to s (s from S-2 down to 0) when
 * (M-1)(F_s+B_s) > (M-1)(F_Q+B_Q) + sum_{s<s'<Q} (F_s'+B_s'): the steady
 * phase has fewer bubbles with s as its pivot. */
int wp_dapple_pivot(const struct wp_pipe_stage *stages, int nstages, int microbatches);

/* Formulas 1-2. Te is derived again (the extracted paper text is garbled
 * there): after Tw + Ts the pivot has run M forwards and M-1 backwards; its
 * last backward ends at +B_Q, stage s < Q ends at sum_{a=s}^{Q} B_a, and
 * stage s > Q ends -sum_{Q<a<s} B_a (before Q's last backward starts, since
 * Q waits for its gradient); each then runs its allreduce:
 * Te = max_s (end_s + AR_s). For S equal stages without allreduce this is
 * 1F1B's closed form (M+S-1)(F+B). */
struct wp_pipe_latency wp_dapple_latency(const struct wp_pipe_stage *stages, int nstages, int microbatches);

#endif
