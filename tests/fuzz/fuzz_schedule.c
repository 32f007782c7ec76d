/* Fuzz target: schedule files (`--schedule-file`, wp_schedule_load):
 * wavepipe's CSV and PyTorch's compute-only CSV, read, completed with
 * communication and validated; a schedule read is written back in
 * PyTorch's form. */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_input.h"
#include "sched/schedule_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = wp_fuzz_sink();
    const char *path = wp_fuzz_file("schedule.csv", data, size);
    struct wp_sched_params costs = {.tf = 1, .tb = 2, .tw = 1, .tc = 0.1};
    struct wp_schedule s;
    struct wp_err err;
    if (wp_schedule_load(path, &costs, &s, &err) == 0) {
        (void)wp_schedule_write_torch_csv(sink, &s, &err);
        wp_schedule_destroy(&s);
    }
    return 0;
}
