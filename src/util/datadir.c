/* The data directory (datadir.h): the build tree's sources, the prefix the
 * program runs from, or the configured pkgdatadir, in that order. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/datadir.h"
#include "util/strutil.h"

#ifndef WP_PKGDATADIR
#error "WP_PKGDATADIR (the configured pkgdatadir) is defined by Makefile.am"
#endif

/* The directory of the running program (symbolic links resolved) into out. */
static int program_dir(char *out, size_t size)
{
    char *self = realpath("/proc/self/exe", NULL);
    if (!self)
        return -1;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    wp_strlcpy(out, self, size);
    free(self);
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int wp_data_dir(char *out, size_t size)
{
    char bin[PATH_MAX];
    if (program_dir(bin, sizeof bin) == 0) {
#if defined(WP_BUILD_DIR) && defined(WP_SOURCE_DIR)
        /* the build tree's program: its own sources, never an older install */
        char *build_src = realpath(WP_BUILD_DIR "/src", NULL);
        int in_build_tree = build_src && strcmp(build_src, bin) == 0;
        free(build_src);
        if (in_build_tree && is_dir(WP_SOURCE_DIR "/templates")) {
            wp_strlcpy(out, WP_SOURCE_DIR, size);
            return 0;
        }
#endif
        char beside[PATH_MAX + 32];
        snprintf(beside, sizeof beside, "%s/../share/wavepipe", bin);
        char *prefix_data = realpath(beside, NULL);
        if (prefix_data && is_dir(prefix_data)) {
            wp_strlcpy(out, prefix_data, size);
            free(prefix_data);
            return 0;
        }
        free(prefix_data);
    }
    wp_strlcpy(out, WP_PKGDATADIR, size);
    return is_dir(WP_PKGDATADIR) ? 0 : -1;
}

int wp_data_path(const char *rel, char *out, size_t size)
{
    char dir[PATH_MAX];
    int found = wp_data_dir(dir, sizeof dir);
    if ((size_t)snprintf(out, size, "%s/%s", dir, rel) >= size)
        return -1;
    return found == 0 && access(out, R_OK) == 0 ? 0 : -1;
}

const char *wp_data_input(const char *path, char *buf, size_t size)
{
    if (path[0] == '/' || access(path, R_OK) == 0)
        return path;
    return wp_data_path(path, buf, size) == 0 ? buf : path;
}
