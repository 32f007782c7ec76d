/* Fuzz target: campaign files (`sweep CAMPAIGN`: wp_campaign_read, then
 * wp_campaign_expand). The file sits at jobs/campaigns/ of a scratch tree
 * whose jobs/, profiles/ and tests/ are the source tree's, so the models and
 * layer tables the shipped campaigns name resolve. */
#include <stdint.h>
#include <stdlib.h>

#include "campaign/campaign.h"
#include "fuzz_input.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    wp_fuzz_link_source("jobs/models", "jobs/models");
    wp_fuzz_link_source("jobs/tables", "jobs/tables");
    wp_fuzz_link_source("jobs/data", "jobs/data");
    wp_fuzz_link_source("profiles", "profiles");
    wp_fuzz_link_source("tests", "tests");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = wp_fuzz_file("jobs/campaigns/fuzz.cfg", data, size);
    static struct wp_campaign c; /* large: not on the stack */
    struct wp_err err;
    if (wp_campaign_read(path, &c, &err) == 0) {
        struct wp_campaign_point *points = NULL;
        int n = 0;
        if (wp_campaign_expand(&c, &points, &n, &err) == 0)
            free(points);
    }
    return 0;
}
