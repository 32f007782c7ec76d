/* Network lanes of the simulator's nodes, booked as time intervals. A
 * message between nodes holds one lane of its source node's network for
 * the time its bytes take; an allreduce across nodes holds one lane of
 * each of its nodes. The simulator books in the order it plays the ranks'
 * lists, not in time order, so a lane keeps every busy interval and a
 * booking takes the earliest gap long enough (first come in time, first
 * served), never just the end of the last booking. */
#ifndef WP_SCHED_LANES_H
#define WP_SCHED_LANES_H

#define WP_LANES_MAX 16 /* per node */

struct wp_lane {
    double *start, *end; /* busy intervals, sorted, disjoint */
    int n, cap;
};

struct wp_lanes {
    int nnodes;
    int *count;            /* per node: lanes (1..WP_LANES_MAX) */
    struct wp_lane *lanes; /* nnodes x WP_LANES_MAX */
};

/* count[i] lanes for node i (clamped to 1..WP_LANES_MAX); 0 or -1 (no memory). */
int wp_lanes_init(struct wp_lanes *l, int nnodes, const int *count);
void wp_lanes_destroy(struct wp_lanes *l);

/* The earliest time >= t at which some lane of node is free for occupy
 * seconds; *lane says which. */
double wp_lanes_earliest(const struct wp_lanes *l, int node, double t, double occupy, int *lane);

/* Books [start, start + occupy) on a lane that wp_lanes_earliest found
 * free; 0 or -1 (no memory). */
int wp_lanes_book(struct wp_lanes *l, int node, int lane, double start, double occupy);

#endif
