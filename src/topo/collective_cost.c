/* Ring collective costs under the alpha-beta model (see collective_cost.h). */
#include "topo/collective_cost.h"

#include <string.h>

static const char *const names[WP_COLL_COUNT] = {"allreduce", "allgather", "reducescatter", "alltoall", "p2p"};

const char *wp_collective_name(enum wp_collective kind)
{
    return kind >= 0 && kind < WP_COLL_COUNT ? names[kind] : "?";
}

int wp_collective_from_name(const char *name)
{
    for (int c = 0; c < WP_COLL_COUNT; c++)
        if (strcmp(name, names[c]) == 0)
            return c;
    return -1;
}

double wp_collective_busbw_factor(enum wp_collective kind, int g)
{
    if (kind == WP_COLL_P2P || g <= 1)
        return 1;
    double share = (double)(g - 1) / g;
    return kind == WP_COLL_ALLREDUCE ? 2 * share : share;
}

double wp_collective_messages(enum wp_collective kind, int g)
{
    if (kind == WP_COLL_P2P)
        return 1;
    if (g <= 1)
        return 0;
    return kind == WP_COLL_ALLREDUCE ? 2.0 * (g - 1) : (double)(g - 1);
}

double wp_collective_sent_bytes(enum wp_collective kind, int g, double n_bytes)
{
    if (kind == WP_COLL_P2P)
        return n_bytes;
    if (g <= 1)
        return 0;
    double share = (double)(g - 1) / g * n_bytes;
    return kind == WP_COLL_ALLREDUCE ? 2 * share : share;
}

double wp_collective_s(enum wp_collective kind, int g, double n_bytes, const struct wp_link_cost *link)
{
    return wp_collective_messages(kind, g) * link->alpha_s +
           wp_collective_sent_bytes(kind, g, n_bytes) * link->beta_s_per_byte;
}

double wp_allreduce_lanes_s(int nodes, int per_node, int lanes, double n_bytes, const struct wp_link_cost *intra,
                            const struct wp_link_cost *inter)
{
    double t = wp_collective_s(WP_COLL_ALLREDUCE, per_node, n_bytes, intra);
    if (nodes > 1)
        t += wp_collective_s(WP_COLL_ALLREDUCE, nodes, lanes * n_bytes, inter);
    return t;
}

double wp_allreduce_hier_s(int nodes, int per_node, double n_bytes, const struct wp_link_cost *intra,
                           const struct wp_link_cost *inter)
{
    return wp_allreduce_lanes_s(nodes, per_node, 1, n_bytes, intra, inter);
}
