/* Fuzz target: a campaign's per-point files as `harvest` reads them
 * (wp_harvest_scan over one point directory: point.cfg, results.csv,
 * run.log, changes.txt, DONE/FAILED), then its CSV and table written.
 * The input is the files one after another, each after a line
 * "==> NAME <==" (what `head -n -0 FILES` prints); other names are ignored. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "campaign/harvest.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const point_files[] = {"point.cfg", "results.csv", "run.log", "changes.txt", "DONE", "FAILED"};
#define NFILES (sizeof point_files / sizeof point_files[0])

/* The file a section header line names, or -1. */
static int section_of(const uint8_t *line, size_t len)
{
    if (len < 9 || memcmp(line, "==> ", 4) != 0 || memcmp(line + len - 4, " <==", 4) != 0)
        return -1;
    for (size_t i = 0; i < NFILES; i++)
        if (strlen(point_files[i]) == len - 8 && memcmp(line + 4, point_files[i], len - 8) == 0)
            return (int)i;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = wp_fuzz_sink();
    char name[64];
    for (size_t i = 0; i < NFILES; i++) {
        snprintf(name, sizeof name, "campaign/p000/%s", point_files[i]);
        wp_fuzz_remove(name);
    }
    /* split at the header lines; bytes before the first header are ignored */
    int current = -1;
    size_t start = 0;
    for (size_t pos = 0; pos <= size;) {
        const uint8_t *nl = pos < size ? memchr(data + pos, '\n', size - pos) : NULL;
        size_t end = nl ? (size_t)(nl - data) : size;
        int next = section_of(data + pos, end - pos);
        if (next >= 0 || pos == size) {
            if (current >= 0) {
                snprintf(name, sizeof name, "campaign/p000/%s", point_files[current]);
                wp_fuzz_file(name, data + start, pos - start);
            }
            current = next;
            start = nl ? end + 1 : size;
        }
        if (pos == size)
            break;
        pos = nl ? end + 1 : size;
    }
    char dir[600];
    snprintf(dir, sizeof dir, "%s/campaign", wp_fuzz_dir());
    struct wp_harvest h;
    struct wp_err err;
    if (wp_harvest_scan(dir, -1, sink, &h, &err) == 0) {
        wp_harvest_write_csv(sink, &h);
        wp_harvest_print_table(sink, &h);
        wp_harvest_free(&h);
    }
    return 0;
}
