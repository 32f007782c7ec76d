/* Timing point-to-point messages and collectives over MPI, within a node
 * and across nodes: which rank is on which node, and the sweep over link
 * levels, group sizes, collectives and message sizes with repetitions
 * (the driver owns the loop, as nccl-tests' does). */
#ifndef WP_TOPO_CALIBRATE_MPI_H
#define WP_TOPO_CALIBRATE_MPI_H

#include <mpi.h>
#include <stddef.h>

#include "topo/calibrate_fit.h"
#include "util/error.h"

enum wp_link_level { WP_LEVEL_INTRA, WP_LEVEL_INTER, WP_LEVEL_COUNT };

/* "intra-node", "inter-node". */
const char *wp_link_level_name(enum wp_link_level level);

/* The ranks of a job by node. Nodes are numbered in order of their lowest
 * rank, so node 0 holds rank 0, and rank 0 has local rank 0. */
struct wp_calib_job {
    MPI_Comm comm;
    int rank, size;
    int nnodes;
    int emulated;     /* nodes are blocks of consecutive ranks, not machines */
    int *node;        /* per rank of comm */
    int *local_rank;  /* per rank of comm */
};

/* Collective over comm. emulate_nodes 0: nodes from MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED); K > 0: K equal blocks of consecutive ranks (K must
 * divide the size). The same result (and status) on every rank. */
int wp_calib_job_init(struct wp_calib_job *job, MPI_Comm comm, int emulate_nodes, struct wp_err *err);
void wp_calib_job_destroy(struct wp_calib_job *job);

/* The largest group a level can time: ranks on node 0 (intra-node), nodes
 * (inter-node, one rank each). Below 2 the level cannot be measured. */
int wp_calib_level_ranks(const struct wp_calib_job *job, enum wp_link_level level);

/* What moves the bytes: the group (this rank is grank of p, the group's
 * MPI communicator g) is opened once with buffers for max_bytes, run does
 * one operation and returns when it is complete on this rank. */
struct wp_calib_backend {
    const char *name;
    int (*open)(void **ctx, MPI_Comm g, int grank, int p, size_t max_bytes);
    void (*run)(void *ctx, enum wp_collective coll, size_t bytes);
    void (*close)(void *ctx);
};
/* MPI on host buffers (calibrate_mpi.c); NCCL on device buffers in the
 * CUDA build (calibrate_nccl.c). */
extern const struct wp_calib_backend wp_calib_mpi;
extern const struct wp_calib_backend wp_calib_nccl;

struct wp_calib_options {
    double min_bytes, max_bytes; /* message sizes min, min*factor, ... up to max */
    int size_factor;
    int repeat;                  /* timed repetitions per point (after one warm-up) */
    unsigned coll_mask;          /* bit (1u << enum wp_collective) per operation to time */
    /* a dilated test cluster (links F x S times slower, wavepipe run --dilate F
     * --scale-bytes S): each operation moves 1/S of its size and its time is
     * divided by F, so the fit is the undilated network's (0: 1) */
    double dilation, byte_scale;
};

/* One timed point: sample.time_s is the median over the repetitions of the
 * slowest rank's time (p2p: half the round trip on the group's first rank),
 * min_s the fastest repetition. */
struct wp_calib_point {
    enum wp_link_level level;
    struct wp_calib_sample sample;
    double min_s;
};

/* The message sizes of the sweep. Group operations move a multiple of
 * 4 bytes per rank (float sums), so a size is rounded down to a multiple of
 * 4 x ranks, at least 4 x ranks; this gives the size a group of ranks moves. */
double wp_calib_group_bytes(double bytes, enum wp_collective coll, int ranks);

/* Collective over job->comm: every level that has at least 2 ranks, group
 * sizes 2, 4, 8, ... and the level's largest, every operation of the mask
 * (p2p on groups of 2 only), every size. Ranks outside the group being
 * timed wait without spinning. On rank 0 *points (malloc'ed) and *npoints
 * hold the results in that order; the status is the same on every rank. */
int wp_calibrate(const struct wp_calib_job *job, const struct wp_calib_options *o, const struct wp_calib_backend *be,
                 struct wp_calib_point **points, int *npoints, struct wp_err *err);

#endif
