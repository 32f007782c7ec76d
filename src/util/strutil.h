/* Small string helpers shared by the parsers: edit distance for "did you
 * mean", bounded copies, and the nearest of a set of names. */
#ifndef WP_UTIL_STRUTIL_H
#define WP_UTIL_STRUTIL_H

#include <stddef.h>

/* Levenshtein distance between a and b (case-sensitive). */
size_t wp_edit_distance(const char *a, const char *b);
/* Of the NULL-terminated list names, the one nearest to word, or NULL when
 * none is close enough to be a plausible typo. */
const char *wp_nearest_name(const char *word, const char *const *names);
/* snprintf-style bounded copy that always terminates. */
void wp_strlcpy(char *dst, const char *src, size_t size);

#endif
