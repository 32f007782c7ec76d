/* CSV files that runs append to, one whole row or block of rows per write
 * (a crash never leaves half a row), with their header on the first line:
 * rows go only into a file that is new, empty or has the same header. */
#ifndef WP_UTIL_CSV_APPEND_H
#define WP_UTIL_CSV_APPEND_H

#include <stddef.h>
#include "util/error.h"

/* 0 when path is absent or empty or begins with header; otherwise an error
 * "path:1: its header is not that of <what>; give <option> another file". */
int wp_csv_check_header(const char *path, const char *header, const char *what, const char *option,
                        struct wp_err *err);
/* Appends rows (whole lines, len bytes) in one write, the header before
 * them when the file is new or empty; checks the header as above first. */
int wp_csv_append(const char *path, const char *header, const char *what, const char *option, const char *rows,
                  size_t len, struct wp_err *err);

/* Makes s one unquoted CSV field in place: each comma, double quote and
 * line end becomes with. */
void wp_csv_field(char *s, char with);

#endif
