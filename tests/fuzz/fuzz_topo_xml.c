/* Fuzz target: hwloc XML exports through the topology path (`topo --xml
 * FILE`, wp_discover_node). */
#include <stdint.h>

#include "fuzz_input.h"
#include "topo/cluster.h"
#include "topo/discover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("node.xml", data, size);
    struct wp_node_type t;
    struct wp_err err;
    if (wp_discover_node(path, &t, &err) == 0)
        wp_node_type_destroy(&t);
    return 0;
}
