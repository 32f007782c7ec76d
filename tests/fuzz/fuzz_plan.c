/* Fuzz target: plan files (`run --plan FILE`, wp_plan_read), printed as
 * `plan` prints them. */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_input.h"
#include "plan/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = wp_fuzz_sink();
    const char *path = wp_fuzz_file("plan.cfg", data, size);
    struct wp_plan p;
    struct wp_err err;
    if (wp_plan_read(path, &p, &err) == 0) {
        wp_plan_print_csv(sink, &p);
        wp_plan_print_text(sink, &p, NULL);
        wp_plan_destroy(&p);
    }
    return 0;
}
