/* Strings inside the JSON wavepipe writes (traces): quoted, with quotes,
 * backslashes and control characters escaped; other bytes pass as UTF-8. */
#ifndef WP_UTIL_JSON_H
#define WP_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

/* s as a JSON string, quotes included, into buf (size bytes, always
 * terminated when size > 0). Returns the length the whole string takes,
 * as snprintf does: (NULL, 0) sizes it. */
size_t wp_json_string(char *buf, size_t size, const char *s);
/* The same onto a stream. */
void wp_json_write_string(FILE *f, const char *s);

#endif
