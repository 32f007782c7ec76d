/* Alpha-beta costs of the collectives the planner and the simulator charge
 * for gradient synchronisation (NCCL-style: rings inside a node, rings
 * across nodes, AutoDDL table 2). One place, so that the planner's estimate
 * and the simulator's timeline cannot disagree about an allreduce. */
#ifndef WP_TOPO_COLLECTIVE_COST_H
#define WP_TOPO_COLLECTIVE_COST_H

/* One link class: latency per message and bandwidth per rank. */
struct wp_link_cost {
    double latency_s;
    double bandwidth_Bps; /* <= 0: free (infinitely fast) */
};

/* Ring allreduce of bytes over n ranks: 2(n-1) steps, each moving bytes/n
 * over the link: 2(n-1) (alpha + bytes / (n B)). 0 for n <= 1. */
double wp_ring_allreduce_s(int n, double bytes, struct wp_link_cost link);

/* Allreduce over ranks on `nodes` nodes with at most per_node on any node:
 * one node is a ring over the intra-node links; otherwise hierarchical:
 * reduce-scatter inside each node (per_node - 1 steps of bytes/per_node),
 * the per_node shards allreduced across nodes at once (together they move
 * 2(nodes-1)/nodes of the bytes through each node's network link), then an
 * allgather inside the node:
 *   2(g-1)(a_in + bytes/(g B_in)) + 2(k-1)(a_net + bytes/(k B_net)). */
double wp_allreduce_s(int nodes, int per_node, double bytes, struct wp_link_cost intra,
                      struct wp_link_cost inter);

#endif
