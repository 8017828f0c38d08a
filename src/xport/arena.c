/* arena.c — weft_alloc / weft_free: buffers in the process's shared arena
 * (arena.h), which peers on the same machine read without a copy in.
 *
 * The allocator is deliberately simple: collectives' buffers are few and
 * large (under the drop-in's WEFT_MALLOC=arena, pmpi/arena_malloc.c, a
 * program's blocks of 64 KiB and more, still few enough for a first fit
 * over a table, linear in the blocks).  Blocks are whole pages, kept in a sorted table (in this
 * process's private memory, so a peer cannot corrupt it); a request takes
 * the first free block that fits, else the top of the arena grows.  A
 * block's pages are reserved when it is handed out (posix_fallocate: a page
 * the kernel cannot back is an error now, not SIGBUS later) and returned
 * to the kernel when it is freed (a hole punched in the memfd), except
 * freed blocks up to KEEP_MAX_MIB in all: those stay resident, as glibc keeps
 * freed memory below its trim threshold, because a page handed back costs
 * a fault to touch again, in the owner and in every peer that reads it,
 * and on a virtual machine that fault is dear (2.9 ms a MiB on this
 * project's VM, against 19 us to zero a resident MiB; docs/PERFORMANCE-LOG.md,
 * "Arena blocks kept").  A kept block is zeroed when weft_alloc hands it
 * out again, so "zeroed on first use" holds; the staging buffers of the
 * collectives (arena_alloc_scratch) skip that, as they are written whole
 * before they are read. */
#define _GNU_SOURCE /* memfd_create, fallocate */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/core.h"
#include "arena.h"

#define ARENA_MAGIC 0x616e657261746677ull

typedef struct block {
    size_t off, len;
    bool used;
    bool kept; /* free, its pages still backed and holding old bytes */
} block_t;

/* The most freed bytes kept resident: 64 MiB, or a quarter of a smaller
 * arena. */
enum { KEEP_MAX_MIB = 64 };

static struct {
    pthread_mutex_t lock;
    int fd;
    char *_Atomic base; /* published last: arena_offset reads it without the lock */
    size_t span, top, page;
    size_t open; /* bytes from base accessible (PROT_READ|PROT_WRITE): the top's */
    size_t kept, keep_max; /* bytes in kept blocks, and their bound */
    block_t *blk; /* in a mapping of its own, not malloc's: see blk_insert */
    size_t nblk, cap;
} A = {PTHREAD_MUTEX_INITIALIZER, -1, NULL, 0, 0, 0, 0, 0, 0, NULL, 0, 0};

/* The arenas of this process's forebears, which a child of fork() still
 * maps (shared with them): their blocks are neither the child's to free nor
 * to hand out, but the drop-in's free() must know them (arena_contains).
 * The latest INHERITED_MAX forks back; set in the child only. */
enum { INHERITED_MAX = 4 };
static struct inherited {
    const char *base;
    size_t span;
    block_t *blk; /* the forebear's table as it was at the fork */
    size_t nblk;
} inh[INHERITED_MAX];
static _Atomic int ninh;

/* The arena's span: WEFT_ARENA_MAX (MiB), else the machine's memory. */
static int arena_span(size_t *span)
{
    const char *m = getenv("WEFT_ARENA_MAX");
    if (m && *m) {
        char *e;
        unsigned long long v = strtoull(m, &e, 10);
        if (*e || *m == '-' || v == 0 || v > (1ull << 26))
            return weft_error(WEFT_EINVAL, "WEFT_ARENA_MAX=%s: want the arena's size in MiB, "
                              "1 to 67108864", m);
        *span = (size_t)v << 20;
        return WEFT_OK;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    *span = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : (size_t)1 << 34;
    return WEFT_OK;
}

/* A child of fork shares the parent's arena pages (MAP_SHARED) but would
 * hand out the same blocks from its copy of the table: it starts an arena
 * of its own instead, and its copies of the parent's blocks are neither
 * its to free nor private (weft.h says so). */
static void forget_in_child(void)
{
    pthread_mutex_init(&A.lock, NULL);
    if (A.fd >= 0)
        close(A.fd);
    A.fd = -1;
    char *b = atomic_load_explicit(&A.base, memory_order_relaxed);
    if (b) {
        int n = atomic_load_explicit(&ninh, memory_order_relaxed);
        if (n == INHERITED_MAX) { /* the oldest forebear's is forgotten */
            memmove(inh, inh + 1, (INHERITED_MAX - 1) * sizeof *inh);
            n--;
        }
        inh[n] = (struct inherited){b, A.span, A.blk, A.nblk};
        atomic_store_explicit(&ninh, n + 1, memory_order_release);
        A.blk = NULL, A.cap = 0; /* the forebear's table stays with inh[n] */
    }
    atomic_store_explicit(&A.base, NULL, memory_order_relaxed);
    A.span = A.top = A.open = A.kept = 0;
    A.nblk = 0;
}

/* The arena accessible exactly up to its top (arena.h: the rest is
 * PROT_NONE), growing or shrinking the accessible part. */
static int open_to_top(void)
{
    char *b = atomic_load_explicit(&A.base, memory_order_relaxed);
    int rc = 0;
    if (A.top > A.open)
        rc = mprotect(b + A.open, A.top - A.open, PROT_READ | PROT_WRITE);
    else if (A.top < A.open)
        rc = mprotect(b + A.top, A.open - A.top, PROT_NONE);
    if (rc)
        return weft_error(WEFT_ENOMEM, "weft_alloc: cannot open %zu MiB of the arena: %s",
                          A.top >> 20, strerror(errno));
    A.open = A.top;
    return WEFT_OK;
}

static int open_locked(void)
{
    static bool hooked;
    if (A.base)
        return WEFT_OK;
    if (!hooked && pthread_atfork(NULL, NULL, forget_in_child) == 0)
        hooked = true;
    size_t span = 0;
    int rc = arena_span(&span);
    if (rc)
        return rc;
    A.page = (size_t)sysconf(_SC_PAGESIZE);
    span = (span + A.page - 1) / A.page * A.page;
    int fd = memfd_create("weft-arena", MFD_CLOEXEC);
    if (fd < 0)
        return weft_error(WEFT_ESYS, "weft_alloc: memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)span) != 0) {
        int e = errno;
        close(fd);
        return weft_error(WEFT_ENOMEM, "weft_alloc: cannot size the arena to %zu MiB: %s "
                          "(WEFT_ARENA_MAX sets it)", span >> 20, strerror(e));
    }
    void *p = mmap(NULL, span, PROT_NONE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED && mprotect(p, A.page, PROT_READ | PROT_WRITE) != 0) {
        munmap(p, span);
        p = MAP_FAILED;
    }
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return weft_error(WEFT_ENOMEM, "weft_alloc: cannot map an arena of %zu MiB: %s "
                          "(WEFT_ARENA_MAX sets it)", span >> 20, strerror(e));
    }
    /* page 0 says whose arena this is: a peer that opened a descriptor
     * number the owner has since closed and reused cannot mistake another
     * file for it */
    int e = posix_fallocate(fd, 0, (off_t)A.page);
    if (e) {
        munmap(p, span);
        close(fd);
        return weft_error(WEFT_ENOMEM, "weft_alloc: the arena's first page: %s", strerror(e));
    }
    ((uint64_t *)p)[0] = ARENA_MAGIC;
    ((uint64_t *)p)[1] = (uint64_t)getpid();
    A.fd = fd;
    A.span = span;
    A.top = A.open = A.page;
    A.keep_max = span / 4 < (size_t)KEEP_MAX_MIB << 20 ? span / 4 : (size_t)KEEP_MAX_MIB << 20;
    atomic_store_explicit(&A.base, (char *)p, memory_order_release);
    return WEFT_OK;
}

int arena_open(arena_info_t *out)
{
    pthread_mutex_lock(&A.lock);
    int rc = open_locked();
    if (!rc && out) {
        out->fd = A.fd;
        out->span = A.span;
    }
    pthread_mutex_unlock(&A.lock);
    return rc;
}

bool arena_offset(const void *p, size_t len, uint64_t *off)
{
    const char *b = atomic_load_explicit(&A.base, memory_order_acquire), *q = p;
    if (!b || q < b || len > A.span || (size_t)(q - b) > A.span - len)
        return false;
    *off = (uint64_t)(q - b);
    return true;
}

const char *arena_map_peer(int pid, int fd, size_t span, char *why, size_t whylen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    void *p = fstat(f, &st) == 0 && (size_t)st.st_size == span
                  ? mmap(NULL, span, PROT_NONE, MAP_SHARED, f, 0) : MAP_FAILED;
    size_t first = 0;
    if (p != MAP_FAILED && !arena_peer_readable(p, span, &first, 2 * sizeof(uint64_t))) {
        munmap(p, span);
        p = MAP_FAILED;
    }
    int e = errno;
    close(f);
    if (p == MAP_FAILED) {
        snprintf(why, whylen, "cannot map %s (%zu MiB): %s", path, span >> 20,
                 strerror(e ? e : EINVAL));
        return NULL;
    }
    const uint64_t *h = p;
    if (h[0] != ARENA_MAGIC || h[1] != (uint64_t)pid) {
        munmap(p, span);
        snprintf(why, whylen, "%s is not process %d's arena", path, pid);
        return NULL;
    }
    return p;
}

bool arena_peer_readable(const char *base, size_t span, size_t *readable, size_t end)
{
    if (end <= *readable)
        return true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t to = end > span - page ? span : (end + page - 1) / page * page;
    if (mprotect((void *)(base + *readable), to - *readable, PROT_READ) != 0)
        return false;
    *readable = to;
    return true;
}

void arena_unmap_peer(const char *base, size_t span)
{
    if (base)
        munmap((void *)base, span);
}

/* ---- the block table ---- */

static int blk_insert(size_t at, block_t b)
{
    if (A.nblk == A.cap) {
        /* mmap, not realloc: under the drop-in's WEFT_MALLOC=arena a large
         * realloc would come back here, into the lock this thread holds */
        size_t cap = A.cap ? 2 * A.cap : 256;
        void *n = A.blk ? mremap(A.blk, A.cap * sizeof *A.blk, cap * sizeof *A.blk, MREMAP_MAYMOVE)
                        : mmap(NULL, cap * sizeof *A.blk, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (n == MAP_FAILED)
            return weft_error(WEFT_ENOMEM, "weft_alloc: no memory for the arena's block table");
        A.blk = n;
        A.cap = cap;
    }
    memmove(A.blk + at + 1, A.blk + at, (A.nblk - at) * sizeof *A.blk);
    A.blk[at] = b;
    A.nblk++;
    return WEFT_OK;
}

static void blk_remove(size_t at)
{
    memmove(A.blk + at, A.blk + at + 1, (A.nblk - at - 1) * sizeof *A.blk);
    A.nblk--;
}

/* The block of tbl (n entries, sorted) that starts at off, or n. */
static size_t block_at(const block_t *tbl, size_t n, size_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tbl[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && tbl[lo].off == off ? lo : n;
}

/* The block that starts at off, or A.nblk. */
static size_t blk_find(size_t off) { return block_at(A.blk, A.nblk, off); }

/* Gives block i's range to its free neighbours of the same kind (kept
 * or not); returns where the block now is. */
static size_t merge_free(size_t i)
{
    block_t *b = &A.blk[i];
    if (i + 1 < A.nblk && !A.blk[i + 1].used && A.blk[i + 1].kept == b->kept) {
        b->len += A.blk[i + 1].len;
        blk_remove(i + 1);
    }
    if (i > 0 && !A.blk[i - 1].used && A.blk[i - 1].kept == A.blk[i].kept) {
        A.blk[i - 1].len += A.blk[i].len;
        blk_remove(i);
        i--;
    }
    return i;
}

/* Block i, free and not kept: the top comes back down to it if it is the
 * last. */
static void lower_top(size_t i)
{
    if (i + 1 == A.nblk && !A.blk[i].used && !A.blk[i].kept) {
        A.top = A.blk[i].off;
        blk_remove(i);
        (void)open_to_top(); /* closing cannot fail but on a bad range */
    }
}

/* Gives block i back: kept (if may_keep: its pages are backed) while the
 * kept bytes stay within their bound, else its pages to the kernel; its
 * range to the free neighbours, and the top back where the last block is
 * free. */
static void give_back(size_t i, bool may_keep)
{
    block_t *b = &A.blk[i];
    b->used = false;
    b->kept = may_keep && A.kept + b->len <= A.keep_max;
    if (b->kept)
        A.kept += b->len;
    else
        fallocate(A.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)b->off, (off_t)b->len);
    lower_top(merge_free(i));
}

/* Every kept block's pages back to the kernel: room for a request that
 * the kept blocks fragment. */
static void release_kept(void)
{
    for (size_t i = 0; i < A.nblk; i++) {
        block_t *b = &A.blk[i];
        if (b->used || !b->kept)
            continue;
        fallocate(A.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)b->off, (off_t)b->len);
        b->kept = false;
        A.kept -= b->len;
        i = merge_free(i);
    }
    if (A.nblk)
        lower_top(A.nblk - 1);
}

/* The first free block of the kind asked for that fits need bytes, split
 * to size and marked used; A.nblk if none. */
static size_t take_free(size_t need, bool kept)
{
    for (size_t i = 0; i < A.nblk; i++) {
        block_t *b = &A.blk[i];
        if (b->used || b->kept != kept || b->len < need)
            continue;
        if (b->len > need &&
            blk_insert(i + 1, (block_t){b->off + need, b->len - need, false, kept}))
            return A.nblk;
        b = &A.blk[i];
        b->len = need;
        b->used = true;
        b->kept = false; /* a used block is neither: give_back decides anew */
        if (kept)
            A.kept -= need;
        return i;
    }
    return A.nblk;
}

/* Hands out need bytes at offset *off: a kept block that fits (resident
 * already: *kept is set), else a free one, else the top, else the top
 * once the kept blocks are given back. */
static int take(size_t need, size_t *off, bool *kept)
{
    size_t i = take_free(need, true);
    *kept = i < A.nblk;
    if (i == A.nblk)
        i = take_free(need, false);
    if (i < A.nblk) {
        *off = A.blk[i].off;
        return WEFT_OK;
    }
    if (need > A.span - A.top && A.kept) {
        release_kept();
        if ((i = take_free(need, false)) < A.nblk) {
            *off = A.blk[i].off;
            return WEFT_OK;
        }
    }
    if (need > A.span - A.top)
        return weft_error(WEFT_ENOMEM, "weft_alloc: the arena is full (%zu MiB in use of %zu; "
                          "WEFT_ARENA_MAX sets its size)", A.top >> 20, A.span >> 20);
    int rc = blk_insert(A.nblk, (block_t){A.top, need, true, false});
    if (rc)
        return rc;
    *off = A.top;
    A.top += need;
    if ((rc = open_to_top())) {
        A.top -= need;
        blk_remove(A.nblk - 1);
    }
    return rc;
}

/* zeroed: a kept block is zeroed (fresh pages are zeros anyway);
 * reserved: fresh pages are backed now (posix_fallocate), else at first
 * touch, as malloc's are. */
static int alloc_block(size_t bytes, void **ptr, bool zeroed, bool reserved)
{
    if (!ptr)
        return weft_error(WEFT_EINVAL, "weft_alloc: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0)
        return weft_error(WEFT_EINVAL, "weft_alloc: 0 bytes: ask for at least one");
    size_t need = 0, off = 0;
    bool kept = false; /* a kept block: resident, with old bytes */
    pthread_mutex_lock(&A.lock);
    int rc = open_locked();
    if (rc)
        goto out;
    if (bytes > A.span) {
        rc = weft_error(WEFT_ENOMEM, "weft_alloc: %zu bytes is more than the arena's %zu MiB "
                        "(WEFT_ARENA_MAX sets its size)", bytes, A.span >> 20);
        goto out;
    }
    need = (bytes + A.page - 1) / A.page * A.page;
    if ((rc = take(need, &off, &kept)))
        goto out;
    if (!kept && reserved) {
        int e = posix_fallocate(A.fd, (off_t)off, (off_t)need);
        if (e) {
            give_back(blk_find(off), false);
            rc = weft_error(WEFT_ENOMEM, "weft_alloc: the system cannot back %zu bytes: %s",
                            bytes, strerror(e));
            goto out;
        }
    }
    *ptr = A.base + off;
out:
    pthread_mutex_unlock(&A.lock);
    /* the block is the caller's now: zeroed without holding up other
     * threads' allocations (64 MiB takes a millisecond or more) */
    if (!rc && kept && zeroed)
        memset(*ptr, 0, need);
    return rc;
}

weft_err_t weft_alloc(size_t bytes, void **ptr)
{
    return (weft_err_t)alloc_block(bytes, ptr, true, true);
}

int arena_alloc_scratch(size_t bytes, void **ptr)
{
    return alloc_block(bytes, ptr, false, true);
}

int arena_alloc_lazy(size_t bytes, bool zeroed, void **ptr)
{
    return alloc_block(bytes, ptr, zeroed, false);
}

bool arena_contains(const void *p)
{
    uint64_t off;
    if (arena_offset(p, 1, &off))
        return true;
    const char *q = p;
    for (int i = atomic_load_explicit(&ninh, memory_order_acquire) - 1; i >= 0; i--)
        if (q >= inh[i].base && (size_t)(q - inh[i].base) < inh[i].span)
            return true;
    return false;
}

/* The used block of tbl (n entries) that starts at off, or n. */
static size_t used_block_at(const block_t *tbl, size_t n, size_t off)
{
    size_t i = block_at(tbl, n, off);
    return i < n && tbl[i].used ? i : n;
}

int arena_block_bytes(const void *p, size_t *bytes)
{
    uint64_t off;
    int kind = 0;
    pthread_mutex_lock(&A.lock);
    if (arena_offset(p, 1, &off)) {
        size_t i = used_block_at(A.blk, A.nblk, (size_t)off);
        if (i < A.nblk)
            *bytes = A.blk[i].len, kind = 1;
    }
    pthread_mutex_unlock(&A.lock);
    const char *q = p;
    for (int k = atomic_load_explicit(&ninh, memory_order_acquire) - 1; k >= 0 && !kind; k--) {
        if (q < inh[k].base || (size_t)(q - inh[k].base) >= inh[k].span)
            continue;
        size_t i = used_block_at(inh[k].blk, inh[k].nblk, (size_t)(q - inh[k].base));
        if (i < inh[k].nblk)
            *bytes = inh[k].blk[i].len, kind = 2;
    }
    return kind;
}

weft_err_t weft_free(void *ptr)
{
    if (!ptr)
        return WEFT_OK; /* as free(NULL) */
    pthread_mutex_lock(&A.lock);
    uint64_t off;
    size_t i = arena_offset(ptr, 1, &off) ? blk_find((size_t)off) : A.nblk;
    int rc = WEFT_OK;
    if (i == A.nblk || !A.blk[i].used)
        rc = weft_error(WEFT_EINVAL, "weft_free: %p was not returned by weft_alloc, or was "
                        "freed already", ptr);
    else
        give_back(i, true);
    pthread_mutex_unlock(&A.lock);
    return (weft_err_t)rc;
}

