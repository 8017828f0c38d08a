/* arena.h — the process's shared arena: the memory behind weft_alloc.
 *
 * One memfd per process, sized once to a fixed span (sparse: pages are
 * reserved as blocks are allocated and given back when they are freed) and
 * mapped at one address for the life of the process.  A peer on the same
 * machine maps it read-only through /proc/PID/fd/FD, so a message whose
 * bytes lie in the arena is read by its receiver straight from the
 * sender's pages: no copy into a cell, no system call per message, and a
 * receive-and-reduce reduces from the peer's memory without a bounce
 * buffer (shm.c).  Being a memfd, it leaves nothing behind in /dev/shm
 * however the process ends.
 *
 * Only the part in use is accessible, in the owner (up to the arena's top)
 * and in each peer (up to the furthest byte it has read); the rest of the
 * span is mapped PROT_NONE.  A tool that reads every readable page of a
 * process (valgrind's leak check) would otherwise read the whole span, the
 * machine's memory, and have the kernel back every page it touched: under
 * valgrind a 2-rank job was killed by the OOM killer at exit. */
#ifndef WEFT_ARENA_H
#define WEFT_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/tool_api.h"

/* What peers need to map this process's arena. */
typedef struct arena_info {
    int fd;      /* the memfd, as numbered in this process */
    size_t span; /* bytes mapped (the file's size) */
} arena_info_t;

/* Creates the arena if it does not exist yet; WEFT_ENOMEM/WEFT_ESYS with a
 * message if the kernel refuses.  Thread-safe. */
int arena_open(arena_info_t *out);

/* weft_alloc without its promise of zeros: a block whose old bytes may
 * remain (one freed and kept resident), for scratch written whole before
 * it is read.  Freed with weft_free. */
int arena_alloc_scratch(size_t bytes, void **ptr);

/* For the drop-in's malloc (pmpi/arena_malloc.c, WEFT_MALLOC=arena):
 * a block whose fresh pages are backed at first touch, as malloc's are,
 * not reserved at once (a program may malloc far more than it touches);
 * zeroed as weft_alloc's when asked (calloc), else a kept block keeps its
 * old bytes.  Freed with weft_free. */
WEFT_TOOL_API int arena_alloc_lazy(size_t bytes, bool zeroed, void **ptr);

/* Whether p lies in this process's arena or in one it inherited over
 * fork() (a forebear's, still mapped and shared); lock-free. */
WEFT_TOOL_API bool arena_contains(const void *p);

/* Whether p starts a block handed out: 1 of this process's arena, 2 of an
 * inherited one (not this process's to free); its bytes in *bytes.  0 if
 * neither. */
WEFT_TOOL_API int arena_block_bytes(const void *p, size_t *bytes);

/* If [p, p + len) lies inside one allocated block of this process's arena,
 * its offset from the arena's start; else false.  Lock-free: the blocks a
 * collective sends from cannot be freed while it runs. */
bool arena_offset(const void *p, size_t len, uint64_t *off);

/* A peer's arena mapped read-only (pid, fd and span as it published them),
 * or NULL with the reason in why (not an error of any call: the peer's
 * messages then take the other paths). */
const char *arena_map_peer(int pid, int fd, size_t span, char *why, size_t whylen);
void arena_unmap_peer(const char *base, size_t span);
/* Makes a peer's arena mapped at base readable up to end bytes, past
 * *readable (its mark, raised); false if the kernel refuses. */
bool arena_peer_readable(const char *base, size_t span, size_t *readable, size_t end);

#endif
