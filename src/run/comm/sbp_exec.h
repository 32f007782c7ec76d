/* Executes one SBP strategy's communication (plan/sbp.h) over MPI with the
 * compute emulated: every collective the cost model charges for a training
 * step, forward and backward, with the model's group and byte count, on
 * real buffers, timed; nothing is computed (a layer's compute is at most a
 * sleep). Beside the training runtime, not inside its interpreter: it
 * measures the model's claim, it does not train.
 *
 * Devices and ranks: the job's p ranks are N nodes x G GPUs, world rank
 * d = n G + q (node n, GPU q); whether the job's ranks lie so (rank d on
 * the job's node d / G, nodes from MPI_COMM_TYPE_SHARED) is reported, not
 * required (one machine may pose as N nodes). A layer's mesh gives axis k the tuple
 * (nodes_k, gpus_k); the node index splits as n = (a0 nodes_1 + a1)
 * nodes_2 + a2 and the GPU index as q = (b0 gpus_1 + b1) gpus_2 + b2, and
 * the device's coordinate on axis k is j_k = a_k gpus_k + b_k. The ranks
 * sharing the other two coordinates form axis k's group, which stays
 * inside a node exactly when nodes_k = 1, as the model assumes. Axis 1
 * carries the gather (AllGather forward, ReduceScatter backward), axis 2
 * the reduce (ReduceScatter forward, AllGather backward), axis 0 the
 * weight_sync (AllReduce, in buckets of at most bucket_bytes as DDP does:
 * the same bytes, one 2(g-1) alpha per bucket).
 *
 * The alltoall between two fully split states with rows split (rn, rg)
 * and (rn', rg') (plan/sbp_cost.h's wp_sbp_move) runs over groups of the
 * model's g devices. When rn = rn' each node keeps its region and the
 * groups are those the data needs if a state with rows split r gives GPU
 * q the rows i = q (mod r) and the q div r-th block of columns: the GPUs
 * of a node with the same q mod gcd(rg, rg') and q div lcm(rg, rg').
 * When the node split changes the groups cross nodes: g consecutive
 * devices in node-fastest order (e = q N + n), each on another node while
 * g <= N; where the model says P2P (same row count, other node split)
 * every device sends its whole block to the same GPU of the next node and
 * receives from the previous one (backward: the reverse).
 *
 * Every call is non-blocking MPI (MPI_Ialltoall, MPI_Iallgather, ...), waited
 * for by polling with short sleeps as wavepipe run waits (run/comm/comm_mpi.h)
 * unless spin is set. Timing: a warm-up (every call once, an AllReduce
 * its first bucket only); then `repeats` rounds in which every collective
 * runs once after a barrier of all ranks (the slowest rank's time of each
 * round, median over rounds); then `repeats` steps back to back (forward
 * of every layer, backward in reverse, a sleep of compute_s per layer and
 * pass), after one barrier each. Bytes sent are counted per rank from each
 * call's group and size by collective_cost.h's ring counts. */
#ifndef WP_RUN_SBP_EXEC_H
#define WP_RUN_SBP_EXEC_H

#include "plan/sbp.h"
#include "plan/sbp_cost.h"
#include "util/error.h"

struct wp_sbp_exec_opts {
    int repeats;         /* timed rounds of the collectives, and of the step (default 5) */
    double compute_s;    /* slept per layer in the forward and again in the backward of a timed step (default 0) */
    double bucket_bytes; /* weight_sync's AllReduce in calls of at most this (default 256 MiB; 0: one call) */
    int spin;            /* 0: non-blocking calls polled with sleeps between polls, as wavepipe run waits
                          * (ranks outnumbering cores yield them; default); 1: waits in MPI_Wait */
};
void wp_sbp_exec_default(struct wp_sbp_exec_opts *o);

/* One term of one layer (sbp_cost.h's enum wp_sbp_term). */
struct wp_sbp_exec_term {
    struct wp_sbp_coll model;  /* what the cost model charges for it (passes 0: nothing) */
    int calls;                 /* MPI calls per step */
    int group;                 /* ranks in each call's group; 0 when nothing runs */
    int job_crosses_nodes;     /* some group has ranks on more than one node of the job */
    int rounded;               /* a call was rounded up to whole elements per rank */
    double measured_s;         /* sum over its calls of the median round's slowest rank */
    double counted_bytes;      /* sent by this rank per step */
    double counted_min_bytes;  /* least and most over the ranks */
    double counted_max_bytes;
};

struct wp_sbp_exec_result {
    int ranks;
    int job_nodes;             /* nodes of the job (MPI_COMM_TYPE_SHARED) */
    int node_major;            /* 1: the job's node of rank d is d / G, on N nodes, as the model's */
    int nlayers;
    struct wp_sbp_exec_term (*terms)[WP_SBP_TERM_COUNT];
    double measured_s;         /* sum of the terms' */
    double step_s;             /* median of the slowest rank's back-to-back step, less the sleeps */
    double slept_s;            /* compute slept per step */
    double counted_bytes;      /* this rank's per step, and least and most over the ranks */
    double counted_min_bytes;
    double counted_max_bytes;
    double buffer_bytes;       /* per rank: the send and receive buffers every call reuses */
};

/* Collective over MPI_COMM_WORLD (every rank calls it with the same
 * problem and strategy): res is a wp_sbp_evaluate or wp_sbp_plan result
 * for pr. Errors, the same on every rank: the job's size is not pr->devices, a bad
 * problem, element bytes not 1, 2, 4 or 8 (reductions need an MPI type), a
 * call over INT_MAX elements, out of memory. */
int wp_sbp_exec_run(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                    const struct wp_sbp_exec_opts *o, struct wp_sbp_exec_result *out, struct wp_err *err);
void wp_sbp_exec_result_destroy(struct wp_sbp_exec_result *out);

#endif
