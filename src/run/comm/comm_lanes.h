/* The schedule's ranks over a job whose ranks come in tensor groups of t
 * (tensor_group.h): a comm table that wraps another (MPI or NCCL) so that
 * the interpreter of lane l runs schedule rank v as world rank v t + l,
 * its messages going to the same lane of the peer stage and its group sums
 * (a replicated stage's gradients, the tied embedding) summing each lane's
 * pieces apart. Nothing in the interpreter knows of lanes. */
#ifndef WP_RUN_COMM_LANES_H
#define WP_RUN_COMM_LANES_H

#include "run/comm/comm.h"

extern const struct wp_comm_ops wp_comm_lanes;

/* A wrapper over (inner_ops, inner) for lane `lane` of groups of t; freed
 * by wp_comm_lanes.destroy (the inner comm stays the caller's). */
int wp_comm_lanes_make(const struct wp_comm_ops *inner_ops, struct wp_comm *inner, int t, int lane,
                       struct wp_comm **out, struct wp_err *err);

#endif
