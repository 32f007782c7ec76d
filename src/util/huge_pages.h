/* Large zeroed tables on transparent huge pages where the kernel offers
 * them: a schedule's action lists and the validator's and simulator's
 * per-slice and per-link tables, which a lock-step walk visits a few bytes
 * per rank at a time across a thousand ranks (on 4 KiB pages nearly every
 * visit would miss the TLB). */
#ifndef WP_UTIL_HUGE_PAGES_H
#define WP_UTIL_HUGE_PAGES_H

#include <stddef.h>

/* n * size zeroed bytes, or NULL (no memory, or n * size overflows). */
void *wp_huge_calloc(size_t n, size_t size);
/* Frees what wp_huge_calloc returned (NULL is fine). */
void wp_huge_free(void *p);

#endif
