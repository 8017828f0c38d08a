/* bigmem.h — large private buffers in 2 MiB pages where the kernel gives
 * them (madvise; transparent huge pages in "madvise" or "always" mode),
 * ordinary pages where it does not.
 *
 * Two users.  The simulator's large tables, read at random over millions
 * of ranks: with 4 KiB pages a touch of a cold rank cost a TLB miss and a
 * page walk besides its cache miss (256 MiB of records at 4 Mi ranks is
 * 65536 pages, where the TLB holds a few thousand).  And the shared-memory
 * transport's buffers for unexpected messages: on this project's AMD VM a
 * fresh 4 KiB page costs 14-18 us at its first touch (8 MiB: 28-38 ms),
 * while 8 MiB in 2 MiB pages took 0.3-0.7 ms once the kernel had huge
 * pages free (PERFORMANCE-LOG.md, "Calls in flight, and unexpected messages"). */
#ifndef WEFT_CORE_BIGMEM_H
#define WEFT_CORE_BIGMEM_H

#include <stddef.h>

#include "tool_api.h"

/* bytes of zeroed memory, aligned to 2 MiB from 2 MiB on (below, from
 * calloc: a small run's tables are hot anyway, and each huge page is
 * zeroed whole at its first touch, which made sweeps of small runs 2.6x
 * slower); NULL when out of memory. */
WEFT_TOOL_API void *big_alloc(size_t bytes);
/* Gives back what big_alloc(bytes) gave (p may be NULL). */
WEFT_TOOL_API void big_free(void *p, size_t bytes);

#endif
