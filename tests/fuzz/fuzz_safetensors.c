/* Fuzz target: safetensors files (wp_safetensors_read), every tensor's
 * values copied out and the metadata a checkpoint reads looked up. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "run/train/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("model.safetensors", data, size);
    struct wp_st_file f;
    struct wp_err err;
    if (wp_safetensors_read(path, &f, &err) != 0)
        return 0;
    for (int i = 0; i < f.n; i++) {
        const struct wp_st_tensor *t = wp_safetensors_find(&f, f.tensors[i].name);
        float *v = malloc((t->numel ? t->numel : 1) * sizeof *v);
        if (!v)
            abort();
        wp_safetensors_values(&f, t, v);
        free(v);
    }
    (void)wp_safetensors_meta(&f, "wavepipe_steps_done");
    (void)wp_safetensors_meta(&f, "wavepipe_partition");
    wp_safetensors_free(&f);
    return 0;
}
