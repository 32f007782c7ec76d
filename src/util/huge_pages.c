/* Huge-page tables (see huge_pages.h): an anonymous mapping aligned to
 * 2 MiB and advised MADV_HUGEPAGE; small tables and systems without it
 * get calloc. A header before the table says which, and the mapping's
 * length. */
#include "util/huge_pages.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define HEADER ((size_t)64) /* keeps the table cache-line aligned */

struct header {
    size_t mapped; /* bytes mapped from the header on; 0: calloc'ed */
};

void *wp_huge_calloc(size_t n, size_t size)
{
    if (size && n > (SIZE_MAX - HEADER - 2 * HUGE_PAGE) / size)
        return NULL;
    size_t bytes = HEADER + n * size;
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_PAGE) {
        size_t mapped = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        char *raw = mmap(NULL, mapped + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw != MAP_FAILED) {
            /* keep the 2 MiB-aligned part, give the rest back */
            char *base = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
            if (base > raw)
                munmap(raw, (size_t)(base - raw));
            if (raw + HUGE_PAGE > base)
                munmap(base + mapped, (size_t)(raw + HUGE_PAGE - base));
            madvise(base, mapped, MADV_HUGEPAGE); /* advice only: 4 KiB pages if refused */
            ((struct header *)base)->mapped = mapped;
            return base + HEADER;
        }
    }
#endif
    char *p = aligned_alloc(HEADER, (bytes + HEADER - 1) / HEADER * HEADER);
    if (!p)
        return NULL;
    memset(p, 0, bytes);
    ((struct header *)p)->mapped = 0;
    return p + HEADER;
}

void wp_huge_free(void *p)
{
    if (!p)
        return;
    char *base = (char *)p - HEADER;
    size_t mapped = ((struct header *)base)->mapped;
    if (mapped)
        munmap(base, mapped);
    else
        free(base);
}
