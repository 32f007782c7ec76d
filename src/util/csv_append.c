/* Appending whole CSV rows under a checked header (see csv_append.h). */
#include "util/csv_append.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The first line of the open file against header (an empty file passes). */
static int header_matches(int fd, const char *path, const char *header, const char *what, const char *option,
                          struct wp_err *err)
{
    size_t want = strlen(header);
    char *first = malloc(want + 2);
    if (!first)
        return wp_errorf(err, "out of memory");
    ssize_t got = pread(fd, first, want + 1, 0);
    int ok = got <= 0 || ((size_t)got == want + 1 && memcmp(first, header, want) == 0 && first[want] == '\n');
    free(first);
    return ok ? 0 : wp_errorf(err, "%s:1: its header is not that of %s; give %s another file", path, what, option);
}

int wp_csv_check_header(const char *path, const char *header, const char *what, const char *option,
                        struct wp_err *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0; /* made at the first row */
    int rc = header_matches(fd, path, header, what, option, err);
    close(fd);
    return rc;
}

int wp_csv_append(const char *path, const char *header, const char *what, const char *option, const char *rows,
                  size_t len, struct wp_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return wp_errorf(err, "cannot append to %s: %s", path, strerror(errno));
    off_t size = lseek(fd, 0, SEEK_END);
    if (size > 0 && header_matches(fd, path, header, what, option, err)) {
        close(fd);
        return -1;
    }
    size_t hlen = size == 0 ? strlen(header) + 1 : 0;
    char *buf = malloc(hlen + len);
    if (!buf) {
        close(fd);
        return wp_errorf(err, "out of memory");
    }
    if (hlen) {
        memcpy(buf, header, hlen - 1);
        buf[hlen - 1] = '\n';
    }
    memcpy(buf + hlen, rows, len);
    ssize_t w = write(fd, buf, hlen + len);
    int saved = errno;
    free(buf);
    close(fd);
    return w == (ssize_t)(hlen + len) ? 0 : wp_errorf(err, "cannot append to %s: %s", path, strerror(saved));
}

void wp_csv_field(char *s, char with)
{
    for (char *c = s; *c; c++)
        if (*c == ',' || *c == '"' || *c == '\n' || *c == '\r')
            *c = with;
}
