/* Shared command-line helpers: usage errors, integer options, versions. */
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
