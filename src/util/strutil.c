/* Edit distance, nearest-name suggestions and bounded string copies. */
#include "util/strutil.h"

#include <stdlib.h>
#include <string.h>

size_t wp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = malloc((lb + 1) * sizeof *row);
    if (!row)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diagonal + cost;
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

const char *wp_nearest_name(const char *word, const char *const *names)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (const char *const *n = names; *n; n++) {
        size_t d = wp_edit_distance(word, *n);
        if (d < best_d) {
            best_d = d;
            best = *n;
        }
    }
    /* A typo is at most a third of the word's letters away (and at least 2). */
    size_t limit = strlen(word) / 3;
    if (limit < 2)
        limit = 2;
    return best_d <= limit ? best : NULL;
}

void wp_strlcpy(char *dst, const char *src, size_t size)
{
    if (size == 0)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}
