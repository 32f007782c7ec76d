/* Reading a whole file into memory (NUL-terminated), for the readers of
 * corpora, result files and logs. */
#ifndef WP_UTIL_READ_FILE_H
#define WP_UTIL_READ_FILE_H

#include <stddef.h>

/* malloc'ed contents plus a terminating NUL, length in *len; NULL with
 * errno set (ENOENT, EIO, ENOMEM, ...) when the file cannot be read. */
char *wp_read_file(const char *path, size_t *len);

#endif
