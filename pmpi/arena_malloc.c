/* arena_malloc.c — WEFT_MALLOC=arena: the malloc family of the drop-in
 * (libweft-mpi.so) and of libweft-malloc.so (the same alone, for programs
 * without MPI: under `weft run`, Python's) hands out weft's shared arena
 * for large blocks, so that an unmodified program's buffers are read in
 * place by its peers.
 *
 * A collective whose buffers lie in the arena (weft_alloc, MPI_Alloc_mem)
 * moves each byte once, straight from the sender's pages; a malloc'd
 * buffer is copied into the arena's stage first, or through a cell, or by
 * process_vm_readv, each costing about as much as the reads themselves
 * (docs/PERFORMANCE-LOG.md, "malloc from the arena").  Programs rarely
 * call MPI_Alloc_mem, so with WEFT_MALLOC=arena every malloc, calloc,
 * realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc
 * and pvalloc of WEFT_MALLOC_MIN bytes or more (64 KiB unless set) takes
 * an arena block, from the first allocation of the process on; smaller
 * ones, and any the arena cannot serve, go to glibc's allocator (its
 * __libc_* entry points), as every block goes without the variable.  free,
 * realloc and malloc_usable_size tell the two apart by address.  This is
 * the interposition glibc documents ("Replacing malloc"): the four
 * functions it requires, the six it lists beside them, and reallocarray,
 * free_sized and free_aligned_sized, whose glibc versions would hand an
 * arena block to glibc's realloc or free.
 *
 * Decisions, written in docs/MPI.md:
 * - Opt-in.  Arena pages are shared memory: a child of fork() shares its
 *   parent's arena blocks instead of getting copies (weft.h says so of
 *   weft_alloc), which changes what a program that forks and writes to
 *   its heap sees.  A child may free or realloc them (free does nothing,
 *   realloc copies); exec discards them as usual.
 * - Pages are backed at first touch, as malloc's, not reserved at the
 *   call as weft_alloc's are: a program may allocate far more than it
 *   touches.  Where the kernel then cannot back a page, the toucher may
 *   get SIGBUS (shared memory's way of saying so) rather than meet the
 *   OOM killer.
 * - Blocks are whole pages: a request of 64 KiB wastes at most 6 %.
 * - A pointer inside the arena that no block starts at (a double free, a
 *   wild pointer) is ignored by free, where glibc would abort.
 * - glibc only: the fallback is glibc's own allocator, reached by its
 *   __libc_* names; with another C library nothing is interposed.
 * - Not in a sanitizer build: ASan and TSan replace malloc themselves, and
 *   a preloaded library's malloc would take their place.  There, and with
 *   another C library, WEFT_MALLOC=arena is refused with a message at load. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/xport/arena.h"
#include "weft.h"

#include "arena_malloc.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEFT_NO_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define WEFT_NO_MALLOC 1
#endif
#endif

#if defined(__GLIBC__) && !defined(WEFT_NO_MALLOC)
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

enum { MIN_DEFAULT = 64 << 10 };

/* 0: off; else the smallest request the arena serves.  Read once, from the
 * environment, at the first allocation (environ is set before any code of
 * the process runs). */
static _Atomic size_t route_min = SIZE_MAX;
static atomic_long arena_mallocs;

/* Prints to stderr without stdio, which allocates. */
static void say(const char *msg) { (void)!write(2, msg, strlen(msg)); }

static size_t decide(void)
{
    size_t m = 0;
    const char *v = getenv("WEFT_MALLOC");
    if (v && !strcmp(v, "arena")) {
        m = MIN_DEFAULT;
        const char *mv = getenv("WEFT_MALLOC_MIN");
        if (mv && *mv) {
            char *e;
            unsigned long long x = strtoull(mv, &e, 10);
            if (*e || *mv == '-' || x == 0 || x > (1ull << 40))
                say("weft: WEFT_MALLOC_MIN: want a size in bytes, 1 to 2^40; 65536 taken\n");
            else
                m = (size_t)x;
        }
    } else if (v && *v && strcmp(v, "libc")) {
        say("weft: WEFT_MALLOC: want arena (large blocks from weft's shared arena) or libc; "
            "libc taken\n");
    }
    atomic_store_explicit(&route_min, m, memory_order_relaxed);
    return m;
}

/* Whether a request of n bytes, aligned to align, goes to the arena. */
static bool routed(size_t n, size_t align)
{
    size_t m = atomic_load_explicit(&route_min, memory_order_relaxed);
    if (m == SIZE_MAX)
        m = decide();
    return m && n >= m && align <= 4096;
}

/* An arena block of n bytes, or NULL (errno untouched: the caller falls
 * back to glibc, which sets it if it fails too). */
static void *from_arena(size_t n, bool zeroed)
{
    int e = errno;
    void *p = NULL;
    if (arena_alloc_lazy(n, zeroed, &p) != WEFT_OK)
        p = NULL;
    else
        atomic_fetch_add_explicit(&arena_mallocs, 1, memory_order_relaxed);
    errno = e;
    return p;
}

long arena_malloc_blocks(void) { return atomic_load_explicit(&arena_mallocs, memory_order_relaxed); }

#ifdef WEFT_MALLOC_ALONE
/* libweft-malloc.so says at exit what it did, with WEFT_VERBOSE=1 (the
 * drop-in says it in its report at MPI_Finalize). */
__attribute__((destructor)) static void report(void)
{
    const char *v = getenv("WEFT_VERBOSE");
    long n = arena_malloc_blocks();
    if (v && atoi(v) > 0 && n) {
        char line[128];
        snprintf(line, sizeof line, "weft[pid %d]: malloc (WEFT_MALLOC=arena): %ld blocks from "
                 "weft's arena\n", (int)getpid(), n);
        say(line);
    }
}
#endif

void *malloc(size_t n)
{
    void *p = routed(n, 1) ? from_arena(n, false) : NULL;
    return p ? p : __libc_malloc(n);
}

void free(void *p)
{
    if (!p)
        return;
    if (!arena_contains(p)) {
        __libc_free(p);
        return;
    }
    int e = errno;
    size_t len;
    if (arena_block_bytes(p, &len) == 1)
        weft_free(p);
    errno = e;
}

/* C23's sized frees (glibc 2.39): glibc's would hand an arena block to
 * its own free. */
void free_sized(void *p, size_t n)
{
    (void)n;
    free(p);
}

void free_aligned_sized(void *p, size_t align, size_t n)
{
    (void)align, (void)n;
    free(p);
}

void *calloc(size_t nm, size_t sz)
{
    size_t n;
    if (__builtin_mul_overflow(nm, sz, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = routed(n, 1) ? from_arena(n, true) : NULL;
    return p ? p : __libc_calloc(nm, sz);
}

/* glibc's usable size of one of its blocks (it has no __libc_ name). */
static size_t libc_usable(void *p)
{
    static size_t (*real)(void *);
    if (!real)
        real = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    return real ? real(p) : 0;
}

/* A block of n bytes holding the first `have` bytes of p (p untouched). */
static void *moved(void *p, size_t have, size_t n)
{
    void *q = malloc(n);
    if (q)
        memcpy(q, p, have < n ? have : n);
    return q;
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (!n) { /* glibc frees and returns NULL */
        free(p);
        return NULL;
    }
    size_t len;
    if (arena_contains(p)) {
        int kind = arena_block_bytes(p, &len);
        if (!kind) { /* no block starts there: as glibc, refuse */
            errno = EINVAL;
            return NULL;
        }
        if (kind == 1 && n <= len && n >= len / 2)
            return p; /* it fits without wasting half */
        void *q = moved(p, len, n);
        if (q && kind == 1)
            weft_free(p); /* an inherited block is the forebear's */
        return q;
    }
    len = routed(n, 1) ? libc_usable(p) : 0;
    if (len) { /* a growing glibc block comes into the arena */
        void *q = from_arena(n, false);
        if (q) {
            memcpy(q, p, len < n ? len : n);
            __libc_free(p);
            return q;
        }
    }
    return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t nm, size_t sz)
{
    size_t n;
    if (__builtin_mul_overflow(nm, sz, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

static bool pow2(size_t a) { return a && !(a & (a - 1)); }

void *memalign(size_t align, size_t n)
{
    void *p = routed(n, align) ? from_arena(n, false) : NULL;
    return p ? p : __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    /* an alignment that is no power of two is glibc's to judge (2.36
     * rounds it up, 2.38 refuses it), as any call it takes */
    static void *(*real)(size_t, size_t);
    if (pow2(align) && routed(n, align)) {
        void *p = from_arena(n, false);
        if (p)
            return p;
    }
    if (!real)
        real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    return real ? real(align, n) : __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!pow2(align) || align % sizeof(void *))
        return EINVAL;
    int e = errno;
    void *p = memalign(align, n);
    errno = e;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    void *p = routed(n, 4096) ? from_arena(n, false) : NULL;
    return p ? p : __libc_valloc(n);
}

void *pvalloc(size_t n)
{
    void *p = routed(n, 4096) ? from_arena(n, false) : NULL;
    return p ? p : __libc_pvalloc(n);
}

size_t malloc_usable_size(void *p)
{
    size_t len;
    if (!p)
        return 0;
    if (arena_contains(p))
        return arena_block_bytes(p, &len) ? len : 0;
    return libc_usable(p);
}
#else
long arena_malloc_blocks(void) { return 0; }

__attribute__((constructor)) static void refuse_arena_malloc(void)
{
    const char *v = getenv("WEFT_MALLOC");
    if (v && !strcmp(v, "arena"))
        fprintf(stderr, "weft: WEFT_MALLOC=arena: not in this build (a sanitizer's or "
                        "another C library's, whose malloc weft does not replace); malloc is "
                        "left alone\n");
}
#endif
