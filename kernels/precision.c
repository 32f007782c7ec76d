/* Training precisions: names and the bytes each keeps (precision.h). */
#include "kernels/precision.h"

static const char *const names[WP_PRECISION_COUNT] = {"fp32", "tf32", "bf16"};

const char *wp_precision_name(enum wp_precision p)
{
    return (unsigned)p < WP_PRECISION_COUNT ? names[p] : "?";
}

int wp_precision_parse(const char *s)
{
    for (int p = 0; s && p < WP_PRECISION_COUNT; p++)
        if (strcmp(s, names[p]) == 0)
            return p;
    return -1;
}

const char *wp_precision_names(void)
{
    return "fp32, tf32, bf16";
}

struct wp_precision_bytes wp_precision_bytes(enum wp_precision p)
{
    int half = p == WP_PRECISION_BF16;
    struct wp_precision_bytes b = {half ? 2 : 4, half ? 2 : 4, 4, half ? 12 : 8};
    return b;
}
