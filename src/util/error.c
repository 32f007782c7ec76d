/* Errors as values: formatting and printing of struct wp_err. */
#include "util/error.h"

#include <stdio.h>
#include <string.h>

int wp_errorf(struct wp_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int wp_err_prefix(struct wp_err *err, const char *fmt, ...)
{
    if (err) {
        char prefix[WP_ERR_MAX], old[WP_ERR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof old);
        size_t plen = strnlen(prefix, sizeof err->msg - 1);
        memcpy(err->msg, prefix, plen);
        size_t olen = strnlen(old, sizeof err->msg - 1 - plen);
        memcpy(err->msg + plen, old, olen);
        err->msg[plen + olen] = '\0';
    }
    return -1;
}

void wp_err_print(const char *command, const struct wp_err *err)
{
    fprintf(stderr, "wavepipe %s: %s\n", command, err->msg[0] ? err->msg : "unknown error");
}
