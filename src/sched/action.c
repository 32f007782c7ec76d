/* The names of the actions, as schedule files and listings write them. */
#include "sched/action.h"

#include <string.h>

static const char *const op_names[WP_OP_COUNT] = {
    [WP_OP_F] = "F",
    [WP_OP_B] = "B",
    [WP_OP_W] = "W",
    [WP_OP_SEND_ACT] = "SEND_ACT",
    [WP_OP_RECV_ACT] = "RECV_ACT",
    [WP_OP_SEND_GRAD] = "SEND_GRAD",
    [WP_OP_RECV_GRAD] = "RECV_GRAD",
    [WP_OP_ALLREDUCE] = "ALLREDUCE",
    [WP_OP_STEP] = "STEP",
};

const char *wp_op_name(enum wp_op op)
{
    return (unsigned)op < WP_OP_COUNT ? op_names[op] : "?";
}

int wp_op_from_name(const char *name)
{
    for (int i = 0; i < WP_OP_COUNT; i++)
        if (strcmp(op_names[i], name) == 0)
            return i;
    return -1;
}
