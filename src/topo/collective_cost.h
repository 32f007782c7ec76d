/* Ring collectives under the alpha-beta model (AutoDDL, section 3.1 and
 * Table 2): the time of AllReduce, AllGather, ReduceScatter and AlltoAll
 * over a group of g devices on one link level, and the bytes each device
 * sends. A message of n bytes costs alpha + n * beta. The planner, the SBP
 * search and the simulator all charge collectives through this file. */
#ifndef WP_TOPO_COLLECTIVE_COST_H
#define WP_TOPO_COLLECTIVE_COST_H

/* One link level (NVLink within a node, the network between nodes). */
struct wp_link_cost {
    double alpha_s;         /* latency of one message, seconds */
    double beta_s_per_byte; /* inverse bandwidth, seconds per byte */
};

enum wp_collective {
    /* 2(g-1) alpha + 2 (g-1)/g n beta; n: the vector every device holds
     * (a ring ReduceScatter then a ring AllGather) */
    WP_COLL_ALLREDUCE,
    /* (g-1) alpha + (g-1)/g n beta; n: the gathered output per device */
    WP_COLL_ALLGATHER,
    /* (g-1) alpha + (g-1)/g n beta; n: the input per device (Table 2's N
     * for ReduceScatter) */
    WP_COLL_REDUCE_SCATTER,
    /* (g-1) alpha + (g-1)/g n beta; n: the output per device (the same
     * size as its input): each device keeps 1/g and sends (g-1)/g */
    WP_COLL_ALLTOALL,
    /* alpha + n beta: every device sends its whole n bytes to one other
     * device (a permutation of blocks, or one message between two ranks),
     * whatever g is */
    WP_COLL_P2P,
    WP_COLL_COUNT
};

/* "allreduce", "allgather", "reducescatter", "alltoall", "p2p"; -1 from
 * from_name when name is none of them. */
const char *wp_collective_name(enum wp_collective kind);
int wp_collective_from_name(const char *name);

/* nccl-tests' bus bandwidth: busbw = algbw * factor with algbw = n / time:
 * 2(g-1)/g for allreduce, (g-1)/g for allgather, reducescatter and
 * alltoall, 1 for p2p. */
double wp_collective_busbw_factor(enum wp_collective kind, int g);

/* Seconds for `kind` over g devices with n bytes as defined above; 0 when
 * g <= 1 (nothing to exchange), except WP_COLL_P2P, which always moves. */
double wp_collective_s(enum wp_collective kind, int g, double n_bytes, const struct wp_link_cost *link);

/* The bytes each device sends (the factor of beta above). */
double wp_collective_sent_bytes(enum wp_collective kind, int g, double n_bytes);

/* The number of alpha terms (messages each device sends in turn). */
double wp_collective_messages(enum wp_collective kind, int g);

/* AllReduce of n bytes over ranks on `nodes` nodes with at most per_node on
 * a node (NCCL-like): one node is a ring on the intra-node link; otherwise
 * a ring inside each node and rings across nodes, the per_node shards going
 * across at once and together moving 2(nodes-1)/nodes of the bytes through
 * each node's network link:
 *   2(g-1)(a_in + n/g b_in) + 2(k-1)(a_net + n/k b_net). */
double wp_allreduce_hier_s(int nodes, int per_node, double n_bytes, const struct wp_link_cost *intra,
                           const struct wp_link_cost *inter);

/* `lanes` such AllReduces side by side, n bytes each on GPUs of their own
 * (the lanes of a tensor-parallel group: lane l of every replica), sharing
 * each node's network link: the rings inside a node run on separate GPUs
 * at once, the rings across nodes carry lanes x n bytes through the link:
 *   2(g-1)(a_in + n/g b_in) + 2(k-1)(a_net + lanes n/k b_net).
 * One lane is wp_allreduce_hier_s. */
double wp_allreduce_lanes_s(int nodes, int per_node, int lanes, double n_bytes, const struct wp_link_cost *intra,
                            const struct wp_link_cost *inter);

#endif
