/* bigmem.c — 2 MiB-aligned anonymous mappings for large private buffers
 * (bigmem.h says why). */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define BIG_PAGE ((size_t)2 << 20)

static size_t big_round(size_t bytes) { return (bytes + BIG_PAGE - 1) & ~(BIG_PAGE - 1); }

void *big_alloc(size_t bytes)
{
    if (!bytes)
        bytes = 1;
    if (bytes < BIG_PAGE) /* a small run's: a huge page to zero would cost more */
        return calloc(1, bytes);
    size_t len = big_round(bytes);
    if (len < bytes)
        return NULL; /* overflow */
    /* one huge page more than needed, then the ends cut off, so that the
     * region starts on a 2 MiB boundary whatever address mmap chose */
    char *raw = mmap(NULL, len + BIG_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + BIG_PAGE - 1) & ~(uintptr_t)(BIG_PAGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + len + BIG_PAGE - (p + len));
    if (tail)
        munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* a hint: ordinary pages if refused */
#endif
    return p;
}

void big_free(void *p, size_t bytes)
{
    if (p && bytes < BIG_PAGE)
        free(p);
    else if (p)
        munmap(p, big_round(bytes));
}
