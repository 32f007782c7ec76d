/* Errors as values: library routines fill a wp_err and return -1; only the
 * command-line edge prints them. */
#ifndef WP_UTIL_ERROR_H
#define WP_UTIL_ERROR_H

#include <stdarg.h>

#define WP_ERR_MAX 1024

struct wp_err {
    char msg[WP_ERR_MAX];
};

/* Sets err->msg (if err is not NULL) and returns -1, so callers can write
 * `return wp_errorf(err, "...")`. */
int wp_errorf(struct wp_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message, e.g. with "file.cfg:12: ". Returns -1. */
int wp_err_prefix(struct wp_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "wavepipe <command>: <msg>" to stderr. */
void wp_err_print(const char *command, const struct wp_err *err);

#endif
