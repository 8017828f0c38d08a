/* segment.c — creating, attaching and aborting the job segment (segment.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../core/core.h"
#include "cpus.h"
#include "segment.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

/* Cells per ring: a power of two (shm.c indexes a ring by sequence number
 * & (ncells - 1)), halved when memory is short.
 *
 * Up to 8 ranks, none sharing a core, a ring spans twice a core's L2: a
 * ring that fits the L2 keeps its lines in the reader's cache, so each
 * line the sender rewrites must first be taken back from the other core.
 * Two threads streaming 16 KiB chunks from one core to the other here (1
 * MiB L2 per core) moved 7.5-8 GB/s through a 64-512 KiB ring, 13 through
 * 1 MiB and 16-25 through 2 MiB; a 2-rank allreduce of 1 MiB through cells
 * took 67 us with 2 MiB rings against 96 with 512 KiB (PERFORMANCE-LOG.md).
 * Ranks that share cores keep 512 KiB: at 4 ranks on 2 cores the larger
 * rings made allreduce of 64 KiB-1 MiB about twice as slow (likely because
 * two ranks on one core pass lines through their common L2, which a larger
 * ring no longer fits). */
static uint32_t cells_for(int nrank, uint32_t cores)
{
    if (nrank <= 8 && (uint32_t)nrank <= cores) {
        long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        size_t want = 2 * (size_t)(l2 > 0 && l2 <= (64l << 20) ? l2 : 1l << 20);
        uint32_t n = CELLS_SMALL_P;
        while ((size_t)n * CELL_PAYLOAD < want && n < CELLS_MAX)
            n *= 2;
        return n;
    }
    if (nrank <= 8)
        return CELLS_SMALL_P;
    if (nrank <= 32)
        return 8;
    if (nrank <= 128)
        return 4;
    return 2;
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* Rings planned for when choosing the geometry: every pair up to 33 ranks,
 * then 32 peers per rank (the ring, tree, doubling and dissemination
 * families talk to O(log P) peers; pairwise and linear ones to all, and
 * take rings beyond the plan while the budget lasts). */
#define PEERS_PLANNED 32u

/* Where the segment's parts go for a ring geometry. */
typedef struct geometry {
    uint32_t ncells, payload, cell_bytes;
    uint32_t board_payload; /* bytes a board slot carries */
    size_t ranks_off, board_off, arrival_off, log_off, dir_off, chans_off, stride;
    size_t size;   /* the file: room for a ring per ordered pair (sparse) */
    size_t needed; /* the fixed part and the planned rings */
} geometry_t;

static void lay_out(int nrank, uint32_t ncells, uint32_t payload, geometry_t *g)
{
    size_t P = (size_t)nrank, peers = P - 1 < PEERS_PLANNED ? P - 1 : PEERS_PLANNED;
    g->ncells = ncells;
    g->payload = payload;
    g->cell_bytes = (uint32_t)align_up(sizeof(cell_t) + payload, 64);
    g->ranks_off = align_up(sizeof(seg_hdr_t), 4096);
    g->board_off = align_up(g->ranks_off + P * sizeof(seg_rank_t), 4096);
    g->board_payload = board_payload_for(nrank);
    g->arrival_off = align_up(g->board_off + P * BOARD_SLOTS * board_slot_bytes(g->board_payload),
                              4096);
    g->log_off = align_up(g->arrival_off + P * SEG_ARRIVAL_BYTES_PER_RANK, 4096);
    g->dir_off = align_up(g->log_off + P * (SEG_CALLLOG + SEG_CALLPIN) * sizeof(call_rec_t),
                          4096);
    g->chans_off = align_up(g->dir_off + P * P * sizeof(uint32_t), 4096);
    g->stride = sizeof(ring_hdr_t) + (size_t)ncells * g->cell_bytes;
    g->size = g->chans_off + P * P * g->stride;
    g->needed = g->chans_off + P * peers * g->stride;
}

/* The rings' geometry: as many cells as the rank count suits, of
 * CELL_PAYLOAD bytes, shrunk (the cells beyond CELLS_SMALL_P first, then
 * the payload, then the cells) until the planned rings fit in what the job
 * may take; the least it shrinks to is CELLS_MIN cells of
 * CELL_PAYLOAD_MIN.  A smaller geometry only costs speed. */
static void choose_geometry(int nrank, uint32_t cores, size_t avail, geometry_t *g)
{
    uint32_t ncells = cells_for(nrank, cores), payload = CELL_PAYLOAD;
    for (;;) {
        lay_out(nrank, ncells, payload, g);
        if (g->needed <= avail)
            return;
        if (ncells > CELLS_SMALL_P)
            ncells /= 2;
        else if (payload > CELL_PAYLOAD_MIN)
            payload /= 2;
        else if (ncells > CELLS_MIN)
            ncells /= 2;
        else
            return; /* the least: let the caller say it does not fit */
    }
}

/* What the segment may take: /dev/shm's free space, or less by
 * WEFT_SHM_MAX (MiB; digits only, else ignored with the free space). */
static size_t shm_budget(size_t *free_bytes)
{
    struct statvfs v;
    *free_bytes = statvfs("/dev/shm", &v) == 0 ? (size_t)v.f_bavail * v.f_frsize : SIZE_MAX;
    const char *m = getenv("WEFT_SHM_MAX");
    size_t cap = SIZE_MAX;
    if (m && *m && strspn(m, "0123456789") == strlen(m) && strlen(m) < 9)
        cap = (size_t)strtoul(m, NULL, 10) << 20;
    return cap < *free_bytes ? cap : *free_bytes;
}

/* Creates and maps the segment's file (g->size bytes, the fixed part
 * backed now) into *out, its descriptor in *fdp; on an error nothing is
 * left behind. */
static int seg_map_new(const char *name, int nrank, const geometry_t *g, void **out, int *fdp)
{
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
        return weft_error(WEFT_ESYS, "shm_open(%s): %s", name, strerror(errno));
    /* Reserve the fixed part now and each ring when it is taken: a sparse
     * page that /dev/shm cannot back kills a rank with SIGBUS in mid-run. */
    int e = ftruncate(fd, (off_t)g->size) != 0 ? errno
                                                : posix_fallocate(fd, 0, (off_t)g->chans_off);
    if (e) {
        close(fd);
        shm_unlink(name);
        return weft_error(WEFT_ENOMEM, "the job segment for %d ranks needs %zu MiB of "
                          "/dev/shm and could not have it: %s; make /dev/shm larger (docker run "
                          "--shm-size=%zum) or use fewer ranks", nrank, (g->chans_off >> 20) + 1,
                          strerror(e), (g->needed >> 20) + 65);
    }
    void *p = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        shm_unlink(name);
        return weft_error(WEFT_ENOMEM, "mmap of the job segment failed: %s", strerror(errno));
    }
    *out = p, *fdp = fd;
    return WEFT_OK;
}

/* The header of a new segment: its geometry, then its magic, released
 * last, so a rank that sees the magic sees the rest. */
static void seg_header_init(seg_hdr_t *h, int nrank, uint32_t cores, const geometry_t *g,
                            size_t avail, const char *name)
{
    h->nrank = (uint32_t)nrank;
    h->ncells = g->ncells;
    h->payload = g->payload;
    h->cell_bytes = g->cell_bytes;
    h->size = g->size;
    h->ranks_off = g->ranks_off;
    h->board_off = g->board_off;
    h->arrival_off = g->arrival_off;
    h->chans_off = g->chans_off;
    h->log_off = g->log_off;
    h->dir_off = g->dir_off;
    h->fixed = g->chans_off;
    h->budget = avail;
    h->launcher = (int32_t)getpid();
    h->cores = cores;
    h->board_payload = g->board_payload;
    h->chan_stride = g->stride;
    atomic_store(&h->abort_rank, -1);
    snprintf(h->name, sizeof h->name, "%s", name);
    atomic_thread_fence(memory_order_release);
    h->magic = SEG_MAGIC;
}

int seg_create(int nrank, uint32_t cores, seg_t *s, char *name, size_t namelen, int *keep_fd)
{
    if (!cores)
        cores = cpu_cores_self();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, namelen, "/weft-%d-%lx", (int)getpid(),
             (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 20)));
    geometry_t g;
    size_t free_bytes, avail = shm_budget(&free_bytes);
    choose_geometry(nrank, cores, avail, &g);
    if (g.needed > avail)
        return weft_error(WEFT_ENOMEM, "the job segment for %d ranks needs at least %zu MiB of "
                          "/dev/shm; %zu MiB may be used (free: %zu MiB, WEFT_SHM_MAX: %s): make "
                          "/dev/shm larger (docker run --shm-size=%zum) or use fewer ranks",
                          nrank, (g.needed >> 20) + 1, avail >> 20,
                          free_bytes == SIZE_MAX ? 0 : free_bytes >> 20,
                          getenv("WEFT_SHM_MAX") ? getenv("WEFT_SHM_MAX") : "unset",
                          (g.needed >> 20) + 65);
    int fd = -1;
    void *p = NULL;
    int rc = seg_map_new(name, nrank, &g, &p, &fd);
    if (rc)
        return rc;
    s->fd = -1; /* the creator takes no rings: it attaches again as a rank, or is the launcher */
    s->populate = false;
    if (keep_fd) {
        /* the ranks inherit the descriptor: the name can go at once, so
         * nothing is left in /dev/shm however the launcher ends */
        shm_unlink(name);
        *keep_fd = fd;
        snprintf(name, namelen, "fd:%d", fd);
    } else {
        close(fd);
    }
    seg_header_init(p, nrank, cores, &g, avail, name);
    s->hdr = p;
    s->size = g.size;
    return WEFT_OK;
}

int seg_attach(const char *name, int rank, int nrank, seg_t *s)
{
    int fd = -1;
    bool inherited = !strncmp(name, "fd:", 3);
    if (inherited) {
        char *e;
        long v = strtol(name + 3, &e, 10);
        fd = *e || v < 0 || v > INT_MAX ? -1 : (int)v;
        if (fd < 0 || fcntl(fd, F_GETFD) < 0)
            return weft_error(WEFT_ESYS, "WEFT_SHM=%s: the job segment's descriptor is not open in "
                                         "this process (was it started by `weft run`, through "
                                         "a program that closes descriptors?)", name);
        /* kept to reserve rings; the program's children need not inherit it */
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    } else if ((fd = shm_open(name, O_RDWR | O_CLOEXEC, 0)) < 0) {
        return weft_error(WEFT_ESYS, "cannot open the job segment %s: %s (was this process "
                                     "started by `weft run`?)", name, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(seg_hdr_t)) {
        close(fd);
        return weft_error(WEFT_ESYS, "job segment %s is unusable", name);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return weft_error(WEFT_ENOMEM, "mmap of the job segment failed: %s", strerror(errno));
    }
    seg_hdr_t *h = p;
    if (h->magic != SEG_MAGIC || h->nrank != (uint32_t)nrank || rank < 0 || rank >= nrank ||
        h->size != (uint64_t)st.st_size) {
        munmap(p, (size_t)st.st_size);
        close(fd);
        return weft_error(WEFT_EINVAL, "job segment %s does not match rank %d of %d", name, rank,
                          nrank);
    }
    seg_rank_t *me = seg_rank(&(seg_t){h, (size_t)st.st_size, -1, false}, rank);
    uint32_t fresh = RANK_NEW;
    if (!atomic_compare_exchange_strong(&me->state, &fresh, RANK_ATTACHED)) {
        int32_t other = me->pid;
        munmap(p, (size_t)st.st_size);
        close(fd);
        return weft_error(WEFT_EINVAL, "rank %d of this job has already joined it (process %d): "
                                       "two processes cannot be one rank", rank, (int)other);
    }
    s->hdr = h;
    s->size = (size_t)st.st_size;
    s->fd = fd;
    s->populate = false;
    /* Where the kernel prefaults a shared mapping and reports what would
     * have been a SIGBUS (MADV_POPULATE_WRITE, Linux 5.14), rings are
     * reserved that way and no descriptor is kept: under the MPI drop-in
     * every communicator has a segment, and a descriptor each would count
     * against the program's own limit of open files.  (The header's page
     * is reserved already: the probe changes nothing.) */
    if (madvise(p, 1, MADV_POPULATE_WRITE) == 0) {
        close(fd);
        s->fd = -1;
        s->populate = true;
    }
    me->pid = (int32_t)getpid();
    if (atomic_fetch_add(&h->attached, 1) + 1 == (uint32_t)nrank && !inherited)
        shm_unlink(name); /* everyone is in: a crash can no longer leak it */
    return WEFT_OK;
}

void seg_detach(seg_t *s)
{
    if (s->hdr) {
        munmap(s->hdr, s->size);
        if (s->fd >= 0)
            close(s->fd);
    }
    s->hdr = NULL;
    s->fd = -1;
}

/* Backs [off, off + len) of the segment with pages of /dev/shm now, so
 * that a full /dev/shm is an error here rather than a SIGBUS in mid-run;
 * an errno value, 0 on success. */
static int reserve(const seg_t *s, size_t off, size_t len)
{
    if (s->populate) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), lo = off & ~(page - 1);
        if (madvise((char *)s->hdr + lo, off + len - lo, MADV_POPULATE_WRITE) == 0)
            return 0;
        return errno == EFAULT ? ENOSPC : errno; /* EFAULT: it would have been a SIGBUS */
    }
    return s->fd < 0 ? EBADF : posix_fallocate(s->fd, (off_t)off, (off_t)len);
}

int seg_ring_take(seg_t *s, int src, int dst, ring_hdr_t **ring)
{
    seg_hdr_t *h = s->hdr;
    size_t stride = h->chan_stride;
    uint32_t n = atomic_fetch_add(&h->rings_taken, 1);
    size_t off = h->chans_off + (size_t)n * stride;
    int e = off + stride > h->size ? ENOSPC
          : h->fixed + ((size_t)n + 1) * stride > h->budget ? EDQUOT
          : reserve(s, off, stride);
    if (e)
        return weft_error(WEFT_ENOMEM, "shared memory is full: rank %d cannot open a ring to "
                          "rank %d (%u rings of %zu KiB taken, %.1f MiB in all; %s): make /dev/shm "
                          "larger (docker run --shm-size=...), raise WEFT_SHM_MAX, or use an "
                          "algorithm that talks to fewer peers", src, dst, n, stride >> 10,
                          (double)(h->fixed + (size_t)n * stride) / 1048576.0,
                          e == EDQUOT ? "the limit set when the job started"
                                      : strerror(e));
    *ring = (ring_hdr_t *)((char *)h + off);
    atomic_store_explicit(seg_dir(s, src, dst), n + 1, memory_order_release);
    return WEFT_OK;
}

void seg_unlink(const char *name) { shm_unlink(name); }

void futex_wait_u32(_Atomic uint32_t *addr, uint32_t val, int timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

void futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static bool membarrier_ok;
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static void membarrier_probe(void)
{
    const char *v = getenv("WEFT_MEMBARRIER");
    if (v && !strcmp(v, "0"))
        return;
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    membarrier_ok = cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
                    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

bool membarrier_register(void)
{
    pthread_once(&membarrier_once, membarrier_probe);
    return membarrier_ok;
}

bool membarrier_global(void)
{
    return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
}

void seg_wake(seg_t *s, int r)
{
    seg_rank_t *rk = seg_rank(s, r);
    atomic_fetch_add(&rk->doorbell, 1);
    futex_wake_all(&rk->doorbell);
}

void seg_wake_all(seg_t *s)
{
    for (uint32_t r = 0; r < s->hdr->nrank; r++)
        seg_wake(s, (int)r);
}

void seg_abort(seg_t *s, int rank, uint32_t code, const char *msg)
{
    int32_t none = -1;
    if (atomic_compare_exchange_strong(&s->hdr->abort_rank, &none, rank)) {
        snprintf(s->hdr->abort_msg, sizeof s->hdr->abort_msg, "%s", msg);
        atomic_store(&s->hdr->abort_code, code);
    }
    seg_wake_all(s);
}
