/* Alpha-beta collective costs (see collective_cost.h). */
#include "topo/collective_cost.h"

static double per_byte_s(struct wp_link_cost link)
{
    return link.bandwidth_Bps > 0 ? 1.0 / link.bandwidth_Bps : 0.0;
}

double wp_ring_allreduce_s(int n, double bytes, struct wp_link_cost link)
{
    if (n <= 1)
        return 0.0;
    return 2.0 * (n - 1) * (link.latency_s + bytes / n * per_byte_s(link));
}

double wp_allreduce_s(int nodes, int per_node, double bytes, struct wp_link_cost intra,
                      struct wp_link_cost inter)
{
    if (nodes <= 1)
        return wp_ring_allreduce_s(per_node, bytes, intra);
    return wp_ring_allreduce_s(per_node, bytes, intra) + wp_ring_allreduce_s(nodes, bytes, inter);
}
