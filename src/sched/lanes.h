/* Network lanes of the simulator's nodes, booked as time intervals. A
 * message between nodes uses one lane of its source node's network for the
 * time its bytes take; an allreduce across nodes uses one lane of each of
 * its nodes. Two classes of traffic share a lane as TCP flows share a
 * link: messages take turns among themselves, and so do sums (bulk), but a
 * message and a sum at once each go at half the lane's rate, so a short
 * message is slowed by a long sum, not held until it ends (and the sum is
 * slowed by the message alike). The simulator books in the order it plays
 * the ranks' lists, not in time order, so a lane keeps every busy interval
 * of each class and a booking takes the earliest gap of its class long
 * enough (first come in time, first served), never just the end of the
 * last booking; a booking stretches over the other class's intervals
 * already booked, not over those booked after it. */
#ifndef WP_SCHED_LANES_H
#define WP_SCHED_LANES_H

#define WP_LANES_MAX 16 /* per node */

enum wp_lane_class { WP_LANE_MESSAGE, WP_LANE_BULK, WP_LANE_CLASSES };

struct wp_busy {
    double *start, *end; /* busy intervals, sorted, disjoint */
    int n, cap;
};

struct wp_lane {
    struct wp_busy cls[WP_LANE_CLASSES];
};

struct wp_lanes {
    int nnodes;
    int *count;            /* per node: lanes (1..WP_LANES_MAX) */
    struct wp_lane *lanes; /* nnodes x WP_LANES_MAX */
};

/* count[i] lanes for node i (clamped to 1..WP_LANES_MAX); 0 or -1 (no memory). */
int wp_lanes_init(struct wp_lanes *l, int nnodes, const int *count);
void wp_lanes_destroy(struct wp_lanes *l);

/* The earliest time >= t at which some lane of node can carry `work`
 * seconds (at the lane's full rate) of class cls with no other booking of
 * that class in the way; *lane says which and *end when it would end
 * (later than the start by more than work where it shares the lane with
 * the other class). Of the lanes, the one that ends first. */
double wp_lanes_earliest(const struct wp_lanes *l, int node, enum wp_lane_class cls, double t, double work,
                         int *lane, double *end);

/* Whether some lane of node has no booking of class cls in [start, end):
 * start if so (*lane says which), else the earliest time after start from
 * which one might (the end of a booking in the way). */
double wp_lanes_clear(const struct wp_lanes *l, int node, enum wp_lane_class cls, double start, double end,
                      int *lane);

/* Books [start, end) for class cls on a lane found free; 0 or -1 (no memory). */
int wp_lanes_book(struct wp_lanes *l, int node, int lane, enum wp_lane_class cls, double start, double end);

#endif
