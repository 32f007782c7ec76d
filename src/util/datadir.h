/* Where wavepipe's shipped files are (templates, topology, profiles, jobs):
 * the installed data directory found from the running program, so that an
 * installed prefix works wherever it was moved to. */
#ifndef WP_UTIL_DATADIR_H
#define WP_UTIL_DATADIR_H

#include <stddef.h>

/* The data directory into out: the source tree when this program is the
 * build tree's src/wavepipe; else PREFIX/share/wavepipe beside the
 * program's PREFIX/bin (an install, moved or not); else the configured
 * pkgdatadir (a --datadir away from the prefix). 0, or -1 when none of
 * them exists (out then holds the configured pkgdatadir). */
int wp_data_dir(char *out, size_t size);

/* The shipped file REL (e.g. "templates/probe.sbatch") in the data
 * directory into out: 0 when it is readable, -1 otherwise (out then holds
 * the path tried, for the error message). */
int wp_data_path(const char *rel, char *out, size_t size);

/* An input file named on the command line: PATH itself when it is readable,
 * absolute or not found in the data directory either; else (a relative
 * path such as "topology/dapple-config-a.cfg" run away from the source
 * tree) the shipped file of that name, copied into buf. */
const char *wp_data_input(const char *path, char *buf, size_t size);

#endif
