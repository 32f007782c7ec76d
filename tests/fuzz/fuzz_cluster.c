/* Fuzz target: cluster descriptions (`--cluster FILE`, wp_cluster_read). */
#include <stdint.h>

#include "fuzz_input.h"
#include "topo/cluster_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("cluster.cfg", data, size);
    struct wp_cluster c;
    struct wp_err err;
    if (wp_cluster_read(path, &c, &err) == 0)
        wp_cluster_destroy(&c);
    return 0;
}
