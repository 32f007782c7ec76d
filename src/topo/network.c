/* The user's description of the inter-node network. */
#include "topo/network.h"

#include <string.h>

#include "util/strutil.h"
#include "util/units.h"

int wp_network_parse_spec(const char *spec, struct wp_network *net, struct wp_err *err)
{
    char copy[256];
    if (strlen(spec) >= sizeof copy)
        return wp_errorf(err, "network description too long: %s", spec);
    wp_strlcpy(copy, spec, sizeof copy);
    char *bw = strchr(copy, ',');
    char *lat = bw ? strchr(bw + 1, ',') : NULL;
    if (!bw || !lat || strchr(lat + 1, ','))
        return wp_errorf(err, "network '%s' must be NAME,BANDWIDTH,LATENCY (e.g. ib-hdr,200Gbit/s,1.5us)",
                         spec);
    *bw++ = '\0';
    *lat++ = '\0';
    if (!copy[0] || strlen(copy) >= sizeof net->name)
        return wp_errorf(err, "network name must be 1 to %zu characters", sizeof net->name - 1);
    struct wp_network parsed;
    memset(&parsed, 0, sizeof parsed);
    if (wp_parse_bandwidth_Bps(bw, &parsed.bandwidth_Bps, err) ||
        wp_parse_time_s(lat, &parsed.latency_s, err))
        return wp_err_prefix(err, "network '%s': ", spec);
    if (parsed.bandwidth_Bps <= 0)
        return wp_errorf(err, "network '%s': bandwidth must be positive", spec);
    wp_strlcpy(parsed.name, copy, sizeof parsed.name);
    wp_strlcpy(parsed.source, "user", sizeof parsed.source);
    parsed.given = 1;
    *net = parsed;
    return 0;
}
