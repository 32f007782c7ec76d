/* Fuzz target: scenario change lists (a point's changes.txt, `run
 * --changes FILE`; wp_changes_parse on text in memory). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "run/adapt/changes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = wp_fuzz_text(data, size);
    struct wp_changes c;
    struct wp_err err;
    if (wp_changes_parse(text, "changes.txt", &c, &err) == 0)
        wp_changes_free(&c);
    free(text);
    return 0;
}
