/* The action list: for each rank, the ordered actions it executes (compute,
 * point-to-point communication, allreduce, optimizer step). Every schedule
 * is one of these; generators make them, the validator checks them, the
 * simulator times them and the runtime interprets them. */
#ifndef WP_SCHED_ACTION_H
#define WP_SCHED_ACTION_H

#include <stdint.h>
#include <stdio.h>
#include "util/error.h"

enum wp_op {
    WP_OP_F,         /* forward of (stage, micro-batch) */
    WP_OP_B,         /* backward; the input-gradient half where W is split off */
    WP_OP_W,         /* weight-gradient half (zero-bubble schedules) */
    WP_OP_SEND_ACT,  /* activation of (stage, mb) to the rank of stage+1 */
    WP_OP_RECV_ACT,  /* activation for (stage, mb) from the rank of stage-1 */
    WP_OP_SEND_GRAD, /* input gradient of (stage, mb) to the rank of stage-1 */
    WP_OP_RECV_GRAD, /* output gradient for (stage, mb) from the rank of stage+1 */
    WP_OP_ALLREDUCE, /* gradients of stage across every rank that holds it */
    WP_OP_STEP,      /* optimizer step of stage */
    WP_OP_COUNT
};

const char *wp_op_name(enum wp_op op);
int wp_op_from_name(const char *name); /* -1 when unknown */
static inline int wp_op_is_compute(int op) { return op <= WP_OP_W; }
static inline int wp_op_is_send(int op) { return op == WP_OP_SEND_ACT || op == WP_OP_SEND_GRAD; }
static inline int wp_op_is_recv(int op) { return op == WP_OP_RECV_ACT || op == WP_OP_RECV_GRAD; }

/* One action in 8 bytes (a 1,024-rank, 4,096-micro-batch schedule has 25
 * million): stages, micro-batches and ranks below WP_ACTION_FIELD_MAX. */
#define WP_ACTION_FIELD_MAX ((1 << 19) - 1)
struct wp_action {
    uint64_t op : 4;
    int64_t stage : 20;
    int64_t microbatch : 20; /* -1 for ALLREDUCE and STEP */
    int64_t peer : 20;       /* communication peer rank, -1 otherwise */
};

struct wp_action_list {
    struct wp_action *actions;
    int count;
    int capacity;
    int in_store; /* actions lie in the schedule's action store (wp_schedule_reserve), not freed alone */
};

#endif
