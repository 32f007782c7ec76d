/* Shared command-line helpers: usage errors, integer, mesh and pair
 * options, versions. */
#include "cli/cli.h"

#include <config.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/device_info.h"

int wp_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "wavepipe %s: ", command);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'wavepipe %s --help'.\n", command);
    return 2;
}

int wp_parse_int_option(const char *command, const char *option, const char *text, int min,
                        int max, int *value)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        wp_usage_error(command, "%s '%s' must be an integer in [%d, %d]", option, text, min, max);
        return -1;
    }
    *value = (int)v;
    return 0;
}

int wp_parse_seed_option(const char *command, const char *option, const char *text, long long *value)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || v < 0) {
        wp_usage_error(command, "%s '%s' must be an integer >= 0", option, text);
        return -1;
    }
    *value = v;
    return 0;
}

int wp_parse_grad_overlap(const char *command, const char *text, int *overlap)
{
    if (strcmp(text, "on") != 0 && strcmp(text, "off") != 0) {
        wp_usage_error(command, "--grad-overlap must be on or off");
        return -1;
    }
    *overlap = strcmp(text, "on") == 0;
    return 0;
}

int wp_parse_grad_bucket_mb(const char *command, const char *text, double *bytes)
{
    char *end;
    double mb = strtod(text, &end);
    if (end == text || *end || !(mb >= 1e-3 && mb <= 1e6)) {
        wp_usage_error(command, "--grad-bucket-mb '%s' must be a size in MiB from 0.001 to 1e6", text);
        return -1;
    }
    *bytes = mb * 1024 * 1024;
    return 0;
}

int wp_parse_choice_option(const char *command, const char *option, const char *text, const char *const *choices,
                           int *index)
{
    int n = 0;
    while (choices[n])
        n++;
    for (int i = 0; i < n; i++)
        if (strcmp(text, choices[i]) == 0) {
            *index = i;
            return 0;
        }
    char list[512] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                 choices[i]);
    wp_usage_error(command, "%s must be %s", option, list);
    return -1;
}

int wp_parse_percent_option(const char *command, const char *option, const char *text, double max_pct,
                            double *fraction)
{
    char *end;
    double pct = strtod(text, &end);
    if (end == text || *end || !(pct >= 0 && pct <= max_pct)) {
        wp_usage_error(command, "%s '%s' must be a percentage from 0 to %g", option, text, max_pct);
        return -1;
    }
    *fraction = pct / 100;
    return 0;
}

int wp_parse_factor_option(const char *command, const char *option, const char *text, double min, double max,
                           double *value)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= min && v <= max)) {
        wp_usage_error(command, "%s '%s' must be a number from %g to %g", option, text, min, max);
        return -1;
    }
    *value = v;
    return 0;
}

int wp_parse_mesh_option(const char *command, const char *option, const char *text, int factors, int mesh[3])
{
    /* P1[xP2] (factors 2: 1 x P1 x P2) or P0xP1xP2 (factors 3) */
    const char *form = factors == 3 ? "P0xP1xP2" : "P1 or P1xP2";
    long f[3] = {1, 1, 1};
    int nf = 0;
    const char *x = text;
    while (nf < 3) {
        char *end = NULL;
        f[nf++] = strtol(x, &end, 10);
        if (end == x || (*end && *end != 'x' && *end != 'X') || f[nf - 1] < 1 || f[nf - 1] > 4096) {
            wp_usage_error(command, "%s takes %s, not %s", option, form, text);
            return -1;
        }
        if (!*end)
            break;
        x = end + 1;
    }
    int xs = 0;
    for (const char *q = text; *q; q++)
        xs += *q == 'x' || *q == 'X';
    if (xs >= nf || (factors == 3 && nf != 3) || (factors != 3 && nf > 2) || f[0] * f[1] * f[2] > 4096) {
        wp_usage_error(command, "%s takes %s, not %s", option, form, text);
        return -1;
    }
    for (int i = 0; i < 3; i++)
        mesh[i] = factors == 3 ? (int)f[i] : i == 0 ? 1 : (int)f[i - 1];
    return 0;
}

int wp_parse_pairs_option(const char *command, const char *option, const char *text, const char *what, int max,
                          int *pairs, int *n)
{
    int ngiven = 0, used = 0;
    const char *c = text;
    while (*c && ngiven < max) {
        int a, b;
        if (sscanf(c, "%d:%d%n", &a, &b, &used) != 2 || a < 1 || b < 1)
            break;
        pairs[2 * ngiven] = a;
        pairs[2 * ngiven + 1] = b;
        ngiven++;
        c += used;
        if (*c != ',')
            break;
        c++;
    }
    if (ngiven == 0 || *c) {
        wp_usage_error(command, "%s '%s' must be %s separated by commas, at most %d", option, text, what, max);
        return -1;
    }
    *n = ngiven;
    return 0;
}

void wp_print_versions(void)
{
    /* The library the loader found may not be the one compiled against (an
     * MPICH-ABI library swapped in on LD_LIBRARY_PATH): ask it. This call is
     * allowed before MPI_Init. Its first line names it. */
    char loaded_mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(loaded_mpi, &len) != MPI_SUCCESS)
        snprintf(loaded_mpi, sizeof loaded_mpi, "unknown (MPI_Get_library_version failed)");
    loaded_mpi[strcspn(loaded_mpi, "\n")] = '\0';
    char *to = loaded_mpi; /* "MPICH Version:\t4.0.2": blanks become one space */
    for (const char *from = loaded_mpi; *from; from++)
        if (!isspace((unsigned char)*from) || (to > loaded_mpi && to[-1] != ' '))
            *to++ = isspace((unsigned char)*from) ? ' ' : *from;
    *to = '\0';
    printf("wavepipe %s (git %s)\n", PACKAGE_VERSION, WP_GIT_REVISION);
    printf("  compiler  : %s\n", WP_CC_VERSION);
    printf("  MPI       : %s (headers built against)\n", WP_MPI_VERSION);
    printf("  MPI loaded: %s\n", loaded_mpi);
    printf("  hwloc     : %s\n", WP_HWLOC_VERSION);
    printf("  PMIx      : %s\n", WP_PMIX_VERSION);
    printf("  libconfig : %s\n", WP_LIBCONFIG_VERSION);
    printf("  CBLAS     : %s (built against)\n", WP_CBLAS_VERSION);
    char loaded_blas[512];
    wp_cpu_blas_describe(loaded_blas, sizeof loaded_blas);
    printf("  CBLAS loaded: %s\n", loaded_blas);
    struct wp_device_info info;
    wp_device_query(&info);
    printf("  CUDA/NCCL : %s\n", info.summary);
}
