/* Fuzz target: DAPPLE and PipeDream layer profiles (text in memory,
 * wp_layer_table_parse_profile), each input under one contract (its length
 * modulo 4 picks it: one parse an input, four times the speed of all). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "plan/layers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum wp_layer_contract contracts[] = {WP_CONTRACT_CUTS, WP_CONTRACT_FRONTIER,
                                                       WP_CONTRACT_LINES, WP_CONTRACT_AUTO};
    char *text = wp_fuzz_text(data, size);
    struct wp_layer_table t;
    struct wp_err err;
    if (wp_layer_table_parse_profile(&t, text, "fuzz-pbs-8.txt", 0, contracts[size % 4], &err) == 0) {
        (void)wp_layer_table_forward_s(&t);
        (void)wp_layer_table_parameter_bytes(&t);
        wp_layer_table_destroy(&t);
    }
    free(text);
    return 0;
}
