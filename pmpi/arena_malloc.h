/* arena_malloc.h — what the malloc of WEFT_MALLOC=arena (arena_malloc.c)
 * tells the library it is built into: libweft-mpi.so, the drop-in, and
 * libweft-malloc.so, the same malloc alone for programs without MPI. */
#ifndef WEFT_ARENA_MALLOC_H
#define WEFT_ARENA_MALLOC_H

/* Blocks WEFT_MALLOC=arena has taken from weft's arena so far. */
__attribute__((visibility("hidden"))) long arena_malloc_blocks(void);

#endif
