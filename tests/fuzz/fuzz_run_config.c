/* Fuzz target: model and training configurations (`run --config FILE`,
 * wp_run_config_read over the defaults, then the cross-field checks). */
#include <stdint.h>

#include "fuzz_input.h"
#include "run/model/gpt2_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("model.cfg", data, size);
    static struct wp_run_config c; /* large: not on the stack */
    struct wp_err err;
    wp_run_config_default(&c);
    if (wp_run_config_read(path, &c, &err) == 0)
        (void)wp_run_config_check(&c, &err);
    return 0;
}
