/* Fuzz target: layer table files as `plan --layers` reads them
 * (wp_layer_table_read: wavepipe's libconfig table or a profile, told
 * apart by content). */
#include <stdint.h>

#include "fuzz_input.h"
#include "plan/layers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("table.cfg", data, size);
    struct wp_layer_table t;
    struct wp_err err;
    if (wp_layer_table_read(&t, path, 0, WP_CONTRACT_AUTO, &err) == 0) {
        (void)wp_layer_table_forward_s(&t);
        (void)wp_layer_table_backward_s(&t);
        (void)wp_layer_table_optimizer_bytes(&t);
        wp_layer_table_destroy(&t);
    }
    return 0;
}
