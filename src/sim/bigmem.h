/* bigmem.h — memory for the simulator's large tables, which it reads at
 * random over millions of ranks (each rank's record, the ranks' own
 * blocks).  With 4 KiB pages a touch of a cold rank cost a TLB miss and a
 * page walk besides its cache miss: 256 MiB of records at 4 Mi ranks is
 * 65536 pages, where the TLB holds a few thousand.  These regions ask the
 * kernel for 2 MiB pages (madvise; transparent huge pages in "madvise" or
 * "always" mode), and are ordinary pages where it gives none. */
#ifndef WEFT_SIM_BIGMEM_H
#define WEFT_SIM_BIGMEM_H

#include <stddef.h>

/* bytes of zeroed memory, aligned to 2 MiB from 2 MiB on (below, from
 * calloc: a small run's tables are hot anyway, and each huge page is
 * zeroed whole at its first touch, which made sweeps of small runs 2.6x
 * slower); NULL when out of memory. */
void *sim_big_alloc(size_t bytes);
/* Gives back what sim_big_alloc(bytes) gave (p may be NULL). */
void sim_big_free(void *p, size_t bytes);

#endif
