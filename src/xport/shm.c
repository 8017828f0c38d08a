/* shm.c — the shared-memory transport.
 *
 * Each ordered pair of ranks that talks has a ring of fixed-size cells in
 * the job segment (segment.h; taken by the sender on its first message).
 * Cells are written only by the sender, which numbers each (release store);
 * the receiver reads a cell when it holds the number expected next
 * (acquire load) and publishes how many it has consumed, which the sender
 * rereads only when the ring looks full: no lock, and a cell's cache line
 * moves once per message (with its payload, up to 32 bytes).  A message is a run of consecutive cells, each carrying
 * the message header, so the receiver can start matching at any cell
 * boundary.  Between one pair, messages leave in the order they were posted;
 * a message whose receive is not posted yet stays in the ring, unless a
 * receive posted behind it is waiting, in which case it is drained into a
 * private buffer (so out-of-order tags never deadlock).  Receive-and-reduce
 * reduces each cell straight from the ring into the destination.
 *
 * Single copy: a message of at least cma_min bytes travels as one cell
 * holding its address in the sender (CELL_READ_ME); the receiver reads the
 * bytes straight from the sender's memory with process_vm_readv into the
 * destination (a receive-and-reduce reads 256 KiB pieces into a bounce
 * buffer that stays in cache and reduces each), then counts the message in
 * the ring header, which completes the send.  Each receiver learns once
 * per ring whether the kernel lets it read the sender (Yama, seccomp,
 * containers), by reading a word the sender published; until it has said
 * yes, and wherever it says no or WEFT_CMA=0, messages go through cells.
 * A send completes only when its bytes are read, as an MPI rendezvous:
 * schedules never wait for a send before posting their receives.
 *
 * Both copy: a single-copy read that only copies (of COOP_MIN bytes or
 * more) is cut in pieces, which the receiver reads and the sender,
 * otherwise idle until its send completes, writes into the receiver with
 * process_vm_writev; both take pieces from one claim word in the ring
 * header, so two cores copy at once (a 2-rank bcast of 1 MiB in about
 * half the time).  On where ranks do not outnumber the cores (a sender
 * with no core of its own would make its receiver wait for its pieces);
 * WEFT_CMA_HELP=0 or 1 decides instead.  Not for a sender busy receiving
 * in its call (xreq.sender_busy, CELL_SENDER_BUSY): in an exchange each
 * core has its own message to read, no core is idle, and sharing the
 * pieces only added their claims (2-rank allgather, 64-512 KiB blocks:
 * 5.9-41.8 us alone against 7.6-48.3 shared; 16 MiB 2.68-2.69 ms against
 * 2.92-3.10).
 *
 * In place: a send of at least arena_min bytes from the sender's arena
 * (weft_alloc, arena.h) names its offset there instead; the receiver, which
 * mapped that arena when it found the ring, copies or reduces straight from
 * the sender's pages, with no system call and no bounce buffer.
 *
 * Withdrawn sends: a send whose call fails before its receiver has all
 * of it gives the caller's buffer back (exec_disown_buffers), while the
 * receiver may still read it by single copy or in place, and its cells
 * still to go come from memory of the call's own.  The sender marks it:
 * a word beside a posted single-copy cell's address, set before the
 * failed call returns, which the receiver reads after the bytes (so a
 * read that finds it clear had them before the caller could write over
 * them), and CELL_WITHDRAWN on every cell it writes of it afterwards.  A
 * receive that meets either fails with WEFT_EPEER instead of returning
 * what may no longer be the message (test_mismatch withdrawn_send); a
 * read that faults because the caller freed the buffer fails only that
 * receive (withdrawn_send_freed), where it used to end the rank's
 * transport.
 *
 * Slow cells: a sender times how fast it copies each message of 64 KiB or
 * more into cells, and a receiver how fast it takes a matched one of up to
 * 4 MiB out (its copies or reductions from them, not its waits, telling
 * the sender in the ring header); three slow ones in a row, under a few
 * GB/s, make the cells slow for that pair.  On
 * this 2-core VM that happens in phases in which a line one core wrote
 * reaches the other several times slower (a two-thread ping-pong: a round
 * trip of 345-386 ns, 64 KiB written and read across at 1.7-1.9 GB/s,
 * against 55-80 ns and 5.8-6.7 GB/s):
 * every path in which the sender copies then loses to the receiver reading
 * the sender's buffer itself, by 2.7x for a 2-rank reduce of 1 MiB
 * (PERFORMANCE-LOG.md).  While the flag is up, messages from 64 KiB go by
 * single copy (reductions, an idle sender's too, and copies, which rings
 * past the L2 otherwise keep from 1 MiB), and every 16th one through
 * cells again to look whether the phase is over.  Where ranks do not
 * outnumber the cores only: that is where it was measured (oversubscribed,
 * which path serves a slow pair best is not known).
 *
 * Copies measured: which way a copy-only message (a bcast's, an
 * allgather's: xreq.copied) of 64 KiB or more goes is measured per pair
 * and per power-of-two size, where single copy is possible.  Two
 * machines disagreed by 1.5-3x either way:
 * a 2-rank bcast of 1 MiB took 33.5 us through rings past the L2 against
 * 47-52 by single copy on an AMD EPYC VM, and 83-109 us against 28-34 on
 * an Intel Xeon VM, whose cores pass each other's lines 5x slower (16 MiB:
 * 0.83-0.90 ms against 1.68-1.81; 1.75-2.26 against 1.07-1.12).  So the
 * receiver times each such message from the moment it could start on it
 * (its first cell, or its read) to its last byte, for both ways, and
 * publishes the faster per size in the ring header (copyway.h).  Where
 * ranks outnumber the cores the clock starts when the sender posted the
 * message (stamped in its first cell): a single copy holds its sender
 * until the reader is scheduled, which the reader's own clock never sees,
 * and a bcast paid for it (4 ranks on the 2 cores of the AMD VM, linear
 * of 64 KiB-1 MiB: 2-3x slower than through cells, which the fixed
 * thresholds had taken for single copy).  The sender marks the messages
 * it lets be timed (CELL_MEASURED) and takes the published way: before
 * there is one, a clear verdict at the next smaller size that has one,
 * else the way its fixed thresholds (below) take and the other take
 * turns, three messages each; after, the loser still has three in every
 * 64 (in 256 where the winner was 1.5x faster), so a change of phase is
 * seen (copyway.h says why in threes).  A copy whose sender is busy
 * receiving in the same call (an allgather's exchange, where ranks have
 * cores: xreq.sender_busy) is a kind of its own, judged for both
 * directions of a pair at once, as a busy sender's reducing message is
 * (busy_judge), and both are timed by the work the two cores spend on a
 * message, not by a clock that runs through waits (copy_clock_start):
 * per message, cells read faster there on the Intel VM while each core
 * also copied its own message in, so the whole exchange was slower
 * (single_copy).  Slow
 * cells (above) still come first.  WEFT_COPY_WAY=cells|single|fixed
 * takes one way, or the thresholds, instead.  Between two ranks with a
 * core each, copies of 16-64 KiB (CMA_MIN_COPY_SMALL) and an idle
 * sender's reducing messages of 8-64 KiB (idle_reduce_single_copy) are
 * measured too, each kind in buckets of its own, by the mean of their
 * samples: by the best, cells won on the Intel VM (a 2-rank reduce of 64 KiB: 7.1
 * GB/s against 5.6) where whole calls were faster by single copy (7.4-9.4
 * us against 9.1-13.7), because a sender that arrives first fills the
 * cells before the clock starts and the best of three picks those times.
 *
 * Waiting: the engine polls; when nothing moves it calls block(), which sets
 * the rank's sleeping flag, re-checks, and sleeps on its doorbell futex.  A
 * peer that fills or frees a cell bumps the doorbell only when the flag is
 * set, so the fast path costs no system call.  Between the two sides'
 * store and load (Dekker) a fence is needed on both, and the waker's was a
 * fifth of a 2-rank allreduce of 64 bytes: it waits for the line of the
 * board slot just written to come back from the peer that read it last.
 * So the fence is asymmetric where the kernel allows (membarrier(2)'s
 * global expedited barrier, Linux 4.16): the sleeper, which is about to
 * spend microseconds in futex anyway, issues the barrier, which runs a
 * full fence on every CPU running a registered process, and the waker
 * needs only the compiler's (8-17% off a 2-rank allreduce of 64-256
 * bytes called back to back, PERFORMANCE-LOG.md).  Only where ranks do not outnumber the
 * cores: oversubscribed, ranks sleep all the time and the barriers cost
 * more than the fences.  Each rank says in its segment record
 * whether its sleeps do that; a waker skips its fence only toward a
 * sleeper that does and when it is registered itself.  A wake-up lost all
 * the same (a kernel that refused the barrier after registering) would
 * cost a sleep, which the engine bounds at 20 ms, never a hang.  The
 * launcher bumps every doorbell when a rank dies. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../core/bigmem.h"
#include "../core/copy.h"
#include "arena.h"
#include "copyway.h"
#include "segment.h"
#include "xport.h"

/* Messages of calls refused here (below): how many refusals are kept. */
#define REFUSED_KEPT 64
#define REFUSED_USED (1ull << 63)

typedef struct unexp {
    uint64_t tag;
    uint32_t sig;
    size_t total, done;
    char *data;      /* cap bytes from unexp_buf_take */
    size_t cap;
    bool withdrawn;  /* its sender's call failed before it was whole */
    xreq_t *waiting; /* receive matched while still arriving */
    struct unexp *next;
} unexp_t;

/* Slow cells (below): one side's clock on the message it moves through a
 * ring, and how many timed messages in a row came slowly. */
typedef struct cells_clock {
    bool on;           /* the message under way is timed */
    uint64_t ns;       /* its time so far, copying only */
    uint32_t slow_run;
} cells_clock_t;

typedef struct peer_state {
    uint64_t wseq, rseq;      /* cells written to the peer / read from it (the
                               * next cell is seq mod ncells, a power of two) */
    uint64_t consumed_seen;   /* the peer's last count of cells consumed */
    ring_hdr_t *out, *in;      /* the rings to and from the peer, once known */
    bool out_warm, in_warm;    /* every page of out / in touched here (ring_warm) */
    xreq_t *rd_head, *rd_tail; /* single-copy sends the peer has yet to read */
    uint64_t rd_done;          /* single-copy sends to the peer completed */
    uint32_t may_write;        /* RING_CMA_*: can this rank write the peer's memory? */
    const char *arena;         /* the peer's arena, mapped read-only, or NULL */
    size_t arena_span;
    size_t arena_readable; /* bytes of it mapped readable (arena.h) */
    xreq_t *sq_head, *sq_tail; /* sends to this peer, in order */
    xreq_t *rq_head, *rq_tail; /* posted receives from this peer */
    xreq_t *cur;               /* receive being delivered */
    unexp_t *cur_unexp;        /* or unexpected message being drained */
    struct {                   /* or a message of a call refused here */
        bool on;               /* being dropped (messages of calls refused here) */
        size_t left;           /* its bytes still to come */
    } drop;
    unexp_t *unexp;            /* unexpected messages (arrival order) */
    cells_clock_t in_clock;    /* cur's cells taken out (slow cells) */
    cells_clock_t out_clock;   /* the send at sq_head copied in */
    /* a busy sender's measured message through cells (copy_clock_stop):
     * the sender's copying in so far, the receiver's taking out, and the
     * sender's figure as the message's last cell carried it */
    cells_clock_t work_out, work_in;
    uint64_t work_sender_ns;
    bool out_slow;             /* by out_clock, these cells are slow */
    uint32_t slow_sends;       /* reducing sends made single copy by slow cells */
    /* copies measured, per kind (copyway.h; both sides' state), once used */
    copy_ways_t *ways[WAY_KINDS];
    uint16_t out_measured; /* the send at sq_head: its cells' CELL_MEASURED flags */
    /* the receiver's clock on the measured message under way */
    uint64_t copy_t0;
    unsigned copy_way;  /* COPY_WAY_UNKNOWN: no measured message under way */
    unsigned copy_kind; /* the kind it is measured as */
    /* a both-copy read whose sender still writes pieces: the ring waits
     * behind it until they land */
    struct {
        bool on;
        xreq_t *r;              /* the receive it fills, or */
        unexp_t *u;             /* the unexpected message */
        cma_desc_t d;
        char *dst;
        size_t piece, total;
        uint64_t sender, landed; /* pieces the sender took; orphans read here */
        unsigned polls;
    } coop;
} peer_state_t;

/* Unexpected messages' buffers.  Calls in flight together meet them as a
 * matter of course: a peer that is one call ahead sends a message whose
 * receive this rank posts only when its own part of that call is done,
 * while a receive it posted behind it waits.  Each such message was a
 * fresh malloc of its size, freed once delivered: on this project's AMD VM
 * a fresh page costs some 14 us at its first touch, so an 8 MiB message
 * paid 29 ms besides its copies (four 16 MiB ring allreduces in flight at
 * 2 ranks: 47 ms a round, against 12 one after the other).  Buffers from
 * UNEXP_SPARE_MIN bytes come from big_alloc (2 MiB pages where the kernel
 * gives them) and are kept once given back, at most UNEXP_SPARES of them
 * and UNEXP_KEEP_MAX bytes in all, the largest kept first. */
#define UNEXP_SPARE_MIN ((size_t)128 << 10)
#define UNEXP_SPARES 8
#define UNEXP_KEEP_MAX ((size_t)64 << 20)

typedef struct shm_xport {
    xport_t base;
    seg_t seg;
    peer_state_t *peers;
    uint32_t ncells, payload;
    int err;
    size_t cma_min;      /* single copy from this many bytes; SIZE_MAX: never */
    size_t cma_min_copy; /* the same for sends whose receiver only copies */
    size_t cma_max_copy; /* and up to this many bytes */
    size_t arena_min;    /* a send from the arena is read in place from this many bytes */
    bool both_copy;      /* single-copy reads are shared with their sender */
    bool help_forced;    /* WEFT_CMA_HELP=1: shared at every size, not from COOP_MIN */
    bool cores_enough;   /* no more ranks than cores */
    bool forced_min;     /* WEFT_CMA_MIN given: every message from it by single copy */
    double cells_slow_gbps; /* slow cells (above); 0: never */
    int copy_way_fixed;     /* copies measured: 0, or the way WEFT_COPY_WAY takes, or -1
                             * for the fixed thresholds */
    bool core_pair;         /* two ranks, a core each, WEFT_CMA_MIN not given */
    int32_t pid;
    bool membarrier; /* this rank's sleeps issue the heavy fence ("Waiting") */
    char *bounce;   /* CMA_PIECE bytes for single-copy receive-and-reduce */
    /* buffers of unexpected messages given back, kept for the next
     * (unexp_buf_take): spare[i] holds spare_len[i] bytes */
    char *spare[UNEXP_SPARES];
    size_t spare_len[UNEXP_SPARES];
    /* this rank's refusals (messages of calls refused here, below): key | REFUSED_USED
     * at refused_keys[i % REFUSED_KEPT], refused_live of them in use */
    pthread_mutex_t refused_lock;
    uint64_t refused_keys[REFUSED_KEPT];
    uint32_t refused_next;
    _Atomic uint32_t refused_live;
} shm_xport_t;

/* Measured here (weft bench, P = 2): a plain copy reads 1.3-2x faster by
 * single copy from 64 KiB to 1 MiB and ties from 4 MiB (memory-bound), but
 * a receive-and-reduce pays the kernel's page pinning and a bounce buffer
 * and loses below ~1 MiB (ring allreduce of 64 KiB: 14.5 us against 8.9).
 * A send knows whether its call reduces (xreq.copied), so the two take
 * their own thresholds; WEFT_CMA_MIN sets both.  Above 4 MiB a copy-only
 * call (a bcast: its root only sends) is faster through cells, where
 * sender and receiver copy at once (16 MiB bcast: 1.31 ms against 1.45);
 * in a reducing call every rank sends and receives, and single copy saves
 * the copy in.  With both copying (below) single copy wins at every size
 * from 64 KiB (16 MiB bcast: 1.03-1.07 ms), so that limit goes. */
#define CMA_MIN_DEFAULT (1u << 20)
/* Rings larger than a core's L2 (segment.c: up to 8 ranks, none sharing a
 * core) move cells twice as fast.  A reducing message is then faster
 * through them at every size: a 2-rank rabenseifner allreduce took 132-135
 * us at 2 MiB against 246-249 by single copy, 3.6-3.8 ms against 4.4-4.8
 * at 16 MiB, 7.4-7.9 against 10.0-11.0 at 32 MiB.  So is a copy from 1 MiB
 * (once large messages were streamed out of the cells): a 2-rank binomial
 * bcast (single copy with both copying) took 33.5-34 us at 1 MiB against
 * 47-52, 0.83-0.90 ms at 16 MiB against 1.68-1.81, 4.55-4.66 at 64 MiB
 * against 7.6-7.9; below 1 MiB cells were bimodal from run to run (256
 * KiB: 9.8-10.2 or 23.7-24.4 us, against 13.3-16.3), so copies keep
 * single copy there.  Such messages go by single copy otherwise only while
 * slow cells say so.  (That was the AMD VM; on the Intel one cells lost
 * the copies 1.6-3x, and a busy sender's reducing messages 1.2x from 512
 * KiB: copies measured, above, and WAY_REDUCE_BUSY now choose, and these
 * thresholds only say which way a pair tries first.) */
#define CMA_MIN_LARGE_RINGS (SIZE_MAX / 2)
#define CMA_MAX_COPY_LARGE_RINGS (1u << 20)
#define CMA_MIN_COPY_DEFAULT (64u << 10)
/* Where every rank has a core, copies go by single copy from 16 KiB, read
 * by the receiver alone (COOP_MIN): a 2-rank binomial bcast under mpirun
 * (this 2-core Intel VM, 2026-11-28) took 2.58 us at 16 KiB and 3.80 at 32
 * KiB so, against 3.08 and 4.18 through one or two cells, and 5.3-6.2 with
 * the sender helping (Open MPI's own: 2.9-3.2 and 3.2-4.0).  At 8 KiB it
 * was a tie (2.13 against 2.21).  Oversubscribed, a rendezvous would hold
 * the sender until its receiver is scheduled: cells stay.  And only where
 * the transport holds two ranks, the case measured: with more, a bcast's
 * chunks of up to 48 KiB (ALGORITHMS.md) would each become a rendezvous,
 * on machines with the cores for it, which this one does not have.  On
 * the AMD VM of the session after, cells won there by 2-4x, so from 16
 * KiB this is the way taken until the copies measured (WAY_SMALL_COPY)
 * have a verdict. */
#define CMA_MIN_COPY_SMALL (16u << 10)
#define CMA_MAX_COPY_DEFAULT (4u << 20)
/* From the arena a message costs its receiver one copy (or reduce) from
 * the sender's pages and no system call, against two copies through cells. */
#define ARENA_MIN_DEFAULT (4u << 10)
/* in_place_pays: an idle sender's message read in place up to these */
#define IN_PLACE_IDLE_MAX (1u << 20)
#define IN_PLACE_WAIT_MAX (256u << 10)
#define IN_PLACE_PIECE_FRACTION 8
/* A receive-and-reduce's pieces: a multiple of every element size, and
 * with its piece of the destination well inside a 1 MiB L2.  Reading and
 * reducing 1 MiB from another process here: 134-136 us in 64 KiB pieces
 * (a system call and its page pinning each), 121-123 in 128 KiB, 114-118
 * in 256 KiB, 110-111 in 512 KiB. */
#define CMA_PIECE (256u << 10)
/* Slow cells (above): the messages timed, the rate below which cells are
 * slow, and how often a sender tries cells again while they are.  A 2-rank
 * reduce of 64 KiB-4 MiB, median (5th percentile) GB/s of a run: copying
 * in 9.5-17 (6.7-9.6) in the fast phase, 2.6 (1.4) in the slow one; taking
 * out 26-37 (13-34), and 10 (4.3).  WEFT_CELLS_SLOW_GBPS sets the rate
 * (0: never slow; tests set it high to take the switch every time).
 * Since the rings past the L2 carry large messages, the fast phase gave
 * messages of 3-5 GB/s on either side (a destination beyond the caches;
 * 2-3 GB/s while a ring's pages still faulted in; ring_warm), which at
 * 5 GB/s and two in a row kept switching pairs to single copy: so 3 GB/s,
 * three in a row (CELLS_SLOW_RUN).  In the slow phase a sender then copied
 * in at 2.3-2.9 GB/s and switched; its retries through cells read 3.7-4.3
 * and switched back, so about 4 messages in 19 still take the slow
 * cells. */
_Static_assert(sizeof((ring_hdr_t *)0)->way == WAY_KINDS * COPY_WAY_BUCKETS,
               "a verdict byte per kind and bucket of copies measured");
#define CELLS_SLOW_RUN 3u
#define CELLS_TIMED_MIN (64u << 10)
#define CELLS_TIMED_MAX (4u << 20)
#define CELLS_SLOW_GBPS_DEFAULT 3.0
#define CELLS_RETRY 16u
/* what a rank's probe word holds: peers that read it back can read us */
static uint64_t cma_probe_word;

/* Appends r to the queue head..tail. */
static void enqueue(xreq_t **head, xreq_t **tail, xreq_t *r)
{
    r->next = NULL;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

/* The waker's side of the fence before it looks whether its sleepers
 * sleep ("Waiting" above): the compiler's alone when each of them issues
 * the heavy side (light), a full one otherwise. */
static inline void waker_fence(bool light)
{
    if (light)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

static bool heavy_sleeper(const shm_xport_t *x, int rank)
{
    return atomic_load_explicit(&seg_rank(&x->seg, rank)->membarrier, memory_order_relaxed);
}

static void notify(shm_xport_t *x, int peer)
{
    seg_rank_t *rk = seg_rank(&x->seg, peer);
    waker_fence(x->membarrier && heavy_sleeper(x, peer));
    if (atomic_load_explicit(&rk->sleeping, memory_order_relaxed))
        seg_wake(&x->seg, peer);
}

static bool rec_read(call_rec_t *rec, call_desc_t *d, int *state);
static call_rec_t *rec_of(shm_xport_t *x, int rank, uint64_t key);
static bool rec_find(shm_xport_t *x, int peer, uint64_t key, call_desc_t *d, int *state);

/* The rank an error names for rank r of this transport: its own, or where
 * the segment is one node's part of a larger transport, the rank there
 * (xport.h, named). */
static int named(const shm_xport_t *x, int r)
{
    return x->base.named ? x->base.named[r] : r;
}

/* Ends the job: this rank and src disagree on call key.  Says how from
 * both ranks' records where the call logs still hold them, else in
 * fallback's words.  x and src are this transport's ranks; the message
 * names them as the job does (named). */
static int disagreement(shm_xport_t *x, int src, uint64_t key, const char *fallback)
{
    char msg[512];
    call_desc_t mine, theirs;
    int st, my_st = 0;
    bool have_mine = rec_find(x, x->base.rank, key, &mine, &my_st);
    if (have_mine && rec_find(x, src, key, &theirs, &st) && mine.sig != theirs.sig) {
        call_disagreement(&mine, named(x, x->base.rank), &theirs, named(x, src),
                          my_st == CALL_REFUSED ? named(x, x->base.rank) : -1, msg, sizeof msg);
    } else if (have_mine && my_st == CALL_REFUSED) { /* api.c, call_refused */
        char mine_s[160];
        call_describe(&mine, mine_s, sizeof mine_s);
        snprintf(msg, sizeof msg, "ranks %d and %d disagree on a collective: rank %d refused %s, "
                 "and rank %d made it (a message of it came)", named(x, x->base.rank),
                 named(x, src), named(x, x->base.rank), mine_s, named(x, src));
    } else {
        snprintf(msg, sizeof msg, "%s", fallback);
    }
    seg_abort(&x->seg, x->base.rank, ABORT_ERROR, msg);
    x->err = WEFT_EMISMATCH;
    return weft_error(WEFT_EMISMATCH, "%s", msg);
}

/* A message from src that does not fit the receive of tag. */
static int mismatch(shm_xport_t *x, int src, uint64_t tag, const char *what,
                    unsigned long long a, unsigned long long b)
{
    char fb[300];
    snprintf(fb, sizeof fb,
             "rank %d and rank %d disagree on a collective (%s %llu vs %llu): do all ranks "
             "pass the same count, datatype, op, root and algorithm?",
             named(x, x->base.rank), named(x, src), what, a, b);
    return disagreement(x, src, call_key_of_tag(tag), fb);
}

/* ---- messages of calls refused here ----
 * A call this rank refused for its own reasons (api.c, call_refused: a
 * NULL buffer at a gather's root, say) is one its peers made, and their
 * messages of it come anyway: a gather's leaf only sends, and ends well.
 * No receive here will take them.  They are dropped as they come (cells
 * freed unread, a single-copy one counted read without a read), where
 * they used to end the job as proof of a disagreement.  Their signature
 * is not compared: whatever the peers made, the call failed here already,
 * and a peer that waits on this rank learns of the refusal from its
 * record (watch.c).  A refused call counts as ended (api.c), so the list
 * is read only for a message of a call this rank has ended well, which no
 * receive took: never on a call's way.  The last REFUSED_KEPT refusals
 * are kept, past their communicator's free too (a message may come after
 * it, and calls ended well stay known then: comm_destroy; the id's next
 * communicator numbers its calls on, so none is taken for a refused
 * one); a message of a refusal forgotten is proof again, and where the
 * communicator holds a failed call (none of its calls then counts as
 * ended well) one is buffered, and dropped by the next stall's look
 * (look_for_proof).  The list has a lock of its own, since call_refused
 * notes a refusal outside the transport's. */
static void refused_note(shm_xport_t *x, uint64_t key)
{
    key = (key & ~(uint64_t)UINT32_MAX) | (key & CALL_NUM_MASK); /* as tags carry it */
    pthread_mutex_lock(&x->refused_lock);
    uint64_t *slot = &x->refused_keys[x->refused_next++ % REFUSED_KEPT];
    if (!(*slot & REFUSED_USED))
        atomic_fetch_add_explicit(&x->refused_live, 1, memory_order_relaxed);
    *slot = key | REFUSED_USED;
    pthread_mutex_unlock(&x->refused_lock);
}

/* Did this rank refuse the call of a message tagged tag? */
static bool refused_here(shm_xport_t *x, uint64_t tag)
{
    if (!atomic_load_explicit(&x->refused_live, memory_order_relaxed))
        return false;
    uint64_t want = call_key_of_tag(tag) | REFUSED_USED;
    bool found = false;
    pthread_mutex_lock(&x->refused_lock);
    for (unsigned i = 0; i < REFUSED_KEPT && !found; i++)
        found = x->refused_keys[i] == want;
    pthread_mutex_unlock(&x->refused_lock);
    return found;
}

/* ---- messages of calls that ended ----
 * A call that only sends (a bcast's root, a reduce's leaf) ends when its
 * messages are out, and compares its call with its peers' records at its
 * end; where the peer has not made the call yet, or newer calls (other
 * threads', calls in flight) have taken its record's place, nothing is
 * proven.  Two ranks that each took the other for a bcast's root, or one
 * called a bcast where the other called a reduce, then both end without
 * an error.  The proof comes later, at the receiver: a message of a call
 * it ended well, which no receive of that call took.  Likewise a rank
 * that waits in a call for a peer whose record is gone, where the peer
 * has ended that call well and all it sent has been taken in (the
 * watch: peer_view's ended_well, drained_from).  The core says which
 * calls ended well (calls_ended); each rank keeps it in its seg_rank_t,
 * one word per context id, for itself and its peers. */
static void shm_calls_ended(xport_t *xp, uint32_t ctx, uint32_t first, uint32_t below, bool well)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    uint64_t v = (uint64_t)ctx << 48; /* !well: none (below = first) */
    if (well)
        v |= (uint64_t)(first & CALL_NUM_MASK) << 24 | (below & CALL_NUM_MASK);
    atomic_store_explicit(&seg_rank(&x->seg, x->base.rank)->ended[ctx % SEG_ENDED], v,
                          memory_order_release);
}

static void shm_comm_freed(xport_t *xp, uint32_t ctx, uint32_t next_call, bool freed)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    _Atomic uint64_t *w = &seg_rank(&x->seg, x->base.rank)->freed[ctx % SEG_ENDED];
    if (freed)
        atomic_store_explicit(w, (uint64_t)ctx << 32 | SEG_FREED | (next_call & CALL_NUM_MASK),
                              memory_order_release);
    else if (atomic_load_explicit(w, memory_order_relaxed) >> 32 == ctx)
        atomic_store_explicit(w, 0, memory_order_release);
}

/* Has rank freed the communicator of call key before making it? */
static bool freed_before(shm_xport_t *x, int rank, uint64_t key)
{
    uint32_t ctx = (uint32_t)(key >> 32), n = (uint32_t)key & CALL_NUM_MASK;
    uint64_t w = atomic_load_explicit(&seg_rank(&x->seg, rank)->freed[ctx % SEG_ENDED],
                                      memory_order_acquire);
    return w >> 32 == ctx && (w & SEG_FREED) &&
           ((n - (uint32_t)w) & CALL_NUM_MASK) < (CALL_NUM_MASK >> 1);
}

/* Has rank ended call key (context << 32 | number) well?  false where its
 * word holds another context id (they share the word) or nothing. */
static bool ended_well(shm_xport_t *x, int rank, uint64_t key)
{
    uint32_t ctx = (uint32_t)(key >> 32), call = (uint32_t)key & CALL_NUM_MASK;
    uint64_t v = atomic_load_explicit(&seg_rank(&x->seg, rank)->ended[ctx % SEG_ENDED],
                                      memory_order_acquire);
    uint32_t first = (uint32_t)(v >> 24) & CALL_NUM_MASK;
    return (v >> 48) == ctx && ((call - first) & CALL_NUM_MASK) < (((uint32_t)v - first) & CALL_NUM_MASK);
}

/* A message from src of a call this rank ended well, which no receive took. */
static int stale_message(shm_xport_t *x, int src, uint64_t tag)
{
    uint64_t key = call_key_of_tag(tag);
    int me = named(x, x->base.rank), from = named(x, src);
    char fb[256]; /* (what other ranks read of it is cut there) */
    snprintf(fb, sizeof fb,
             "ranks %d and %d disagree on call #%u on communicator %u: rank %d ended it, then "
             "a message of it came from rank %d (two roots, say, or a bcast and a reduce)",
             me, from, (unsigned)key, (unsigned)(key >> 32), me, from);
    return disagreement(x, src, key, fb);
}

/* Can this rank read src's memory?  Asked once per ring, by reading the
 * word src published (it took the ring, so it has published it). */
static uint32_t cma_probe(shm_xport_t *x, int src)
{
    seg_rank_t *rk = seg_rank(&x->seg, src);
    if (x->cma_min == SIZE_MAX || !rk->probe)
        return RING_CMA_NO;
    uint64_t v = 0;
    struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)rk->probe, sizeof v};
    ssize_t n = process_vm_readv(rk->pid, &l, 1, &r, 1, 0);
    return n == (ssize_t)sizeof v && v == ((uint64_t)(uint32_t)rk->pid ^ SEG_MAGIC)
               ? RING_CMA_YES : RING_CMA_NO;
}

/* Can this rank map src's arena?  Asked once per ring, by mapping it
 * (read-only; the mapping is kept until the transport closes). */
static uint32_t arena_probe(shm_xport_t *x, int src)
{
    seg_rank_t *rk = seg_rank(&x->seg, src);
    peer_state_t *ps = &x->peers[src];
    if (x->cma_min == SIZE_MAX || !rk->arena_span)
        return RING_CMA_NO;
    if (!ps->arena) {
        char why[160];
        ps->arena = arena_map_peer(rk->pid, rk->arena_fd, rk->arena_span, why, sizeof why);
        ps->arena_span = rk->arena_span;
        if (!ps->arena && weft_verbose())
            fprintf(stderr, "weft: shm rank %d: rank %d's arena: %s\n", x->base.rank, src, why);
    }
    return ps->arena ? RING_CMA_YES : RING_CMA_NO;
}

/* WEFT_VERBOSE: which single-copy paths the first ring found offers (the
 * others are probed the same way; a refusal is said for each). */
static void say_paths(shm_xport_t *x, int src)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    ring_hdr_t *in = x->peers[src].in;
    bool arena = atomic_load(&in->arena) == RING_CMA_YES, cma = atomic_load(&in->cma) == RING_CMA_YES;
    if (!weft_verbose() || ((arena && cma) && atomic_flag_test_and_set(&said)))
        return;
    const char *copies = x->copy_way_fixed == 0  ? "copies from 64 KiB the way measured faster"
                         : x->copy_way_fixed > 0 ? "copies from 64 KiB as WEFT_COPY_WAY says"
                                                 : "copies below 1 MiB";
    char which[128] = "";
    if (cma && x->cma_min == CMA_MIN_LARGE_RINGS)
        snprintf(which, sizeof which, " (%s; others only while cells are slow)", copies);
    else if (cma && x->copy_way_fixed >= 0)
        snprintf(which, sizeof which, " (%s)", copies);
    fprintf(stderr, "weft: shm rank %d reads rank %d's large messages by single copy: "
            "weft_alloc buffers in place (arena): %s; others by process_vm_readv: %s%s%s%s; "
            "rings of %u cells of %u KiB\n",
            x->base.rank, src, arena ? "yes" : "no", cma ? "yes" : "no", which,
            x->cma_min == SIZE_MAX ? " (WEFT_CMA=0)" : arena && cma ? "" : "; else through cells",
            cma && x->both_copy ? ", the sender writing pieces too (WEFT_CMA_HELP)" : "",
            x->ncells, x->payload >> 10);
}

/* Touches every page of a ring in this process now: its sender writes
 * each page's first word (an atomic or of 0, which leaves the word as it
 * finds it: the receiver may be writing the ring's header meanwhile), its
 * receiver reads it.  Otherwise a ring's pages are first touched as
 * messages reach them (small messages touch only a cell's first page),
 * and on the VM of 2026-11-30 (a PVM guest) a process's first touch of a
 * page costs some 10 us even where the kernel has it mapped (no fault is
 * counted; MADV_POPULATE_* did not help): a 2-rank allgather of 64 KiB
 * took 145-600 us a call through cells for the ring's first pass (32
 * calls), against 3.2 after, and copies measured chose single copy on
 * those samples (0.3 GB/s against 7.0).  A 2 MiB ring costs each side
 * about 6 ms once per pair, so it is paid at the pair's first message that
 * may reach past a cell's first page (RING_WARM_MIN), not by pairs that
 * only ever pass small messages, which touch only those first pages. */
#define RING_WARM_MIN 2048u
static void ring_warm(shm_xport_t *x, ring_hdr_t *ring, bool writing)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t end = (uintptr_t)ring + x->seg.hdr->chan_stride;
    for (uintptr_t p = (uintptr_t)ring; p < end; p = (p & ~(page - 1)) + page) {
        uint64_t *word = (uint64_t *)(p & ~(uintptr_t)7);
        if (writing)
            (void)__atomic_fetch_or(word, 0, __ATOMIC_RELAXED);
        else
            (void)__atomic_load_n(word, __ATOMIC_RELAXED);
    }
}

/* The ring from src, or NULL while src has sent nothing. */
static ring_hdr_t *ring_from(shm_xport_t *x, int src)
{
    peer_state_t *ps = &x->peers[src];
    if (!ps->in && (ps->in = seg_ring_find(&x->seg, src, x->base.rank))) {
        atomic_store_explicit(&ps->in->cma, cma_probe(x, src), memory_order_release);
        atomic_store_explicit(&ps->in->arena, arena_probe(x, src), memory_order_release);
        say_paths(x, src);
    }
    return ps->in;
}

/* The cell at the head of ps's ring from its peer, published or not. */
static inline cell_t *head_cell(shm_xport_t *x, const peer_state_t *ps, ring_hdr_t *ring)
{
    return seg_cell(&x->seg, ring, (uint32_t)(ps->rseq & (x->ncells - 1)));
}

/* Whether the sender of the single-copy message in c withdrew it
 * ("Withdrawn sends", above).  Asked once its bytes are read: the fence
 * keeps those reads before this one. */
static bool read_me_withdrawn(cell_t *c)
{
    atomic_thread_fence(memory_order_seq_cst);
    return (c->flags & CELL_WITHDRAWN) || __atomic_load_n(cell_withdrawn_word(c), __ATOMIC_SEQ_CST);
}

/* Reads a single-copy message of total bytes from the sender's memory
 * into sink (a receive-and-reduce through the bounce buffer).  A sender
 * that is gone or unmapped its buffer is the peer's failure, unless it
 * withdrew the message in c (its call failed, and its caller may free the
 * buffer): the rest is then not read, and the receive fails by the
 * withdrawal, the transport going on. */
static int cma_read(shm_xport_t *x, int src, const cma_desc_t *d, const xsink_t *sk,
                    size_t total, cell_t *c)
{
    for (size_t off = 0; off < total;) {
        size_t len = total - off;
        char *to = (char *)sk->dst + off;
        if (sk->red) {
            len = len < CMA_PIECE ? len : CMA_PIECE;
            to = x->bounce;
        }
        struct iovec l = {to, len}, r = {(void *)(uintptr_t)(d->addr + off), len};
        ssize_t n = process_vm_readv(d->pid, &l, 1, &r, 1, 0);
        /* a reduction needs whole elements: a short read is a failure too */
        if (n <= 0 || (sk->red && (size_t)n != len)) {
            if (c && read_me_withdrawn(c))
                return WEFT_OK;
            x->err = WEFT_EPEER;
            return weft_error(WEFT_EPEER, "rank %d's message could not be read from its "
                              "memory (process %d): %s", named(x, src), (int)d->pid,
                              n < 0 ? strerror(errno) : "short read");
        }
        if (sk->red)
            xsink_deliver(sk, off, to, (size_t)n);
        off += (size_t)n;
    }
    return WEFT_OK;
}

/* ---- both copy ---- */

/* Below this a single-copy read is the receiver's alone (unless
 * WEFT_CMA_HELP=1 asks for help at every size): offering pieces costs the
 * sender a poll and a system call each for little to share (CMA_MIN_COPY_SMALL). */
#define COOP_MIN (64u << 10)

/* Halves: the sender notices the offer within a poll, so two pieces keep
 * both cores busy with the fewest system calls (each pins its pages);
 * measured, halves beat eighths at 128 KiB-1 MiB (2-rank bcast of 256 KiB:
 * 11 us against 16).  At most 512 KiB a piece, so that the side that
 * finishes first waits for at most one piece of the other.  Below 64 KiB
 * (only when WEFT_CMA_MIN forces single copy there and WEFT_CMA_HELP=1
 * asks for help below COOP_MIN) the message is cut in eighths, so that
 * tests meet every interleaving. */
static size_t coop_piece_of(size_t total)
{
    if (total < (64u << 10))
        return ((total + 7) / 8 + 63) & ~(size_t)63;
    size_t piece = ((total + 1) / 2 + 4095) & ~(size_t)4095;
    return piece > (512u << 10) ? 512u << 10 : piece;
}

static uint64_t coop_base(uint64_t msg) { return COOP_LIVE | (msg & 0x7fffffffu) << 32; }

/* Takes the next piece of the message whose claim word starts with base;
 * false when none is left (or the word has moved on to another message). */
static bool coop_take(ring_hdr_t *ring, uint64_t base, uint64_t n, uint64_t *idx)
{
    uint64_t v = atomic_load_explicit(&ring->coop_claim, memory_order_acquire);
    while ((v & ~0xffffffffull) == base && (v & 0xffffffffu) < n)
        if (atomic_compare_exchange_weak_explicit(&ring->coop_claim, &v, v + 1,
                                                  memory_order_acq_rel, memory_order_acquire)) {
            *idx = v & 0xffffffffu;
            return true;
        }
    return false;
}

/* Starts a both-copy read of total bytes into dst: publishes the message
 * in the ring header, reads pieces until none is left to take, and closes
 * the claim.  Pending (ps->coop.on) while pieces the sender took are still
 * to land: coop_poll finishes it. */
static int coop_read(shm_xport_t *x, int src, ring_hdr_t *ring, const cma_desc_t *d, char *dst,
                     size_t total, cell_t *c)
{
    size_t piece = coop_piece_of(total);
    uint64_t n = (total + piece - 1) / piece;
    uint64_t base = coop_base(atomic_load_explicit(&ring->read, memory_order_relaxed) + 1);
    atomic_store_explicit(&ring->coop_dst, (uint64_t)(uintptr_t)dst, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_total, total, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_piece, (uint32_t)piece, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_pid, x->pid, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_done, 0, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_orphan, 0, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_cancel, 0, memory_order_relaxed);
    atomic_store_explicit(&ring->coop_claim, base, memory_order_release);
    notify(x, src);
    uint64_t mine = 0, idx;
    int rc = WEFT_OK;
    while (!rc && coop_take(ring, base, n, &idx)) {
        size_t off = (size_t)idx * piece, len = total - off < piece ? total - off : piece;
        rc = cma_read(x, src, &(cma_desc_t){d->addr + off, d->pid, 0, 0},
                      &(xsink_t){.dst = dst + off}, len, c);
        mine++;
    }
    /* nothing more is taken, even after an error */
    uint64_t v = atomic_exchange_explicit(&ring->coop_claim, base | 0xffffffffu,
                                          memory_order_acq_rel);
    uint64_t taken = (v & ~0xffffffffull) == base && (v & 0xffffffffu) < n ? v & 0xffffffffu : n;
    if (rc)
        return rc;
    peer_state_t *ps = &x->peers[src];
    ps->coop.d = *d;
    ps->coop.dst = dst;
    ps->coop.piece = piece;
    ps->coop.total = total;
    ps->coop.sender = taken - mine;
    ps->coop.landed = 0;
    ps->coop.polls = 0;
    ps->coop.on = ps->coop.sender > 0;
    return WEFT_OK;
}

/* Have all the sender's pieces of the pending both-copy read landed? */
static bool coop_all_landed(const peer_state_t *ps)
{
    return atomic_load_explicit(&ps->in->coop_done, memory_order_acquire) + ps->coop.landed >=
           ps->coop.sender;
}

/* Is there work for the pending both-copy read: its pieces landed, or an
 * orphan to read?  A hint for the waits; only coop_poll completes it. */
static bool coop_landed(const peer_state_t *ps)
{
    return atomic_load_explicit(&ps->in->coop_orphan, memory_order_acquire) ||
           coop_all_landed(ps);
}

/* The pending both-copy read from src: 1 once every piece has landed, 0
 * while the sender still writes, negative on an error.  An orphan (a
 * piece the sender took but could not write) is read here.  Each of the
 * sender's pieces is one bounded system call; a sender that stops for good
 * is the communicator's timeout's to find, one that dies is found here. */
static int coop_poll(shm_xport_t *x, int src)
{
    peer_state_t *ps = &x->peers[src];
    ring_hdr_t *ring = ps->in;
    uint64_t o = atomic_load_explicit(&ring->coop_orphan, memory_order_acquire);
    if (o && atomic_exchange_explicit(&ring->coop_orphan, 0, memory_order_acq_rel) == o) {
        size_t off = (size_t)(o - 1) * ps->coop.piece;
        size_t len = ps->coop.total - off < ps->coop.piece ? ps->coop.total - off : ps->coop.piece;
        int rc = cma_read(x, src, &(cma_desc_t){ps->coop.d.addr + off, ps->coop.d.pid, 0, 0},
                          &(xsink_t){.dst = ps->coop.dst + off}, len, head_cell(x, ps, ring));
        if (rc)
            return -rc;
        ps->coop.landed++;
    }
    /* not coop_landed: an orphan posted since the load above would pass
     * it, completing the read with that piece never read */
    if (!coop_all_landed(ps)) {
        if ((++ps->coop.polls & 1023) == 0 && kill(ps->coop.d.pid, 0) != 0 && errno == ESRCH) {
            x->err = WEFT_EPEER;
            return -weft_error(WEFT_EPEER, "rank %d died while copying its message into rank %d",
                               named(x, src), named(x, x->base.rank));
        }
        return 0;
    }
    ps->coop.on = false;
    return 1;
}

/* r, a send of a call that failed, is withdrawn ("Withdrawn sends",
 * above): its cells from now on say so, and its single-copy cell, if
 * posted and not yet consumed, is marked.  True if r was a send still
 * under way. */
static bool withdraw_send(shm_xport_t *x, peer_state_t *ps, xreq_t *r)
{
    for (xreq_t *q = ps->sq_head; q; q = q->next)
        if (q == r) {
            r->withdrawn = true;
            return true;
        }
    for (xreq_t *q = ps->rd_head; q; q = q->next) {
        if (q != r)
            continue;
        /* consumed: read, and the cell may hold a newer message */
        if (atomic_load_explicit(&ps->out->consumed, memory_order_acquire) <= r->cell_no)
            __atomic_store_n(cell_withdrawn_word(seg_cell(&x->seg, ps->out, (uint32_t)(r->cell_no &
                                                          (x->ncells - 1)))), 1, __ATOMIC_SEQ_CST);
        return true;
    }
    return false;
}

/* r, a send or a receive of a call that failed, gives its buffer back to
 * its caller.  A send is withdrawn (above).  A both-copy read into a
 * receive whose sender still writes pieces is cancelled, the piece being
 * written waited for, and what is left lands in dst (exec_disown_buffers'
 * memory).  A sender stopped inside a write is waited for a second at
 * most: the one way left for a late piece to land in the caller's buffer
 * (docs: a failed call's buffers). */
static void shm_disown(xport_t *xp, xreq_t *r, void *dst)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    if (r->peer < 0 || r->peer >= x->base.size)
        return;
    peer_state_t *ps = &x->peers[r->peer];
    if (withdraw_send(x, ps, r) || !ps->coop.on || ps->coop.r != r)
        return;
    ring_hdr_t *ring = ps->in;
    atomic_store(&ring->coop_cancel, 1);
    for (int waits = 0; atomic_load(&ring->coop_writing) && waits < 20000; waits++) {
        if (kill(ps->coop.d.pid, 0) != 0 && errno == ESRCH)
            break;
        nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    ps->coop.dst = dst;
}

/* Can this rank write dst's memory?  Learnt once per ring by writing dst's
 * probe word with the value it holds. */
static bool may_write(shm_xport_t *x, int dst)
{
    peer_state_t *ps = &x->peers[dst];
    if (ps->may_write == RING_CMA_UNKNOWN) {
        seg_rank_t *rk = seg_rank(&x->seg, dst);
        uint64_t v = (uint64_t)(uint32_t)rk->pid ^ SEG_MAGIC;
        struct iovec l = {&v, sizeof v}, r = {(void *)(uintptr_t)rk->probe, sizeof v};
        ps->may_write = rk->probe && process_vm_writev(rk->pid, &l, 1, &r, 1, 0) ==
                                         (ssize_t)sizeof v ? RING_CMA_YES : RING_CMA_NO;
    }
    return ps->may_write == RING_CMA_YES;
}

/* Whether dst offers pieces of the single-copy send at the head of this
 * rank's queue to it (the base of its claim word in *base). */
static bool coop_offered(shm_xport_t *x, int dst, uint64_t *base)
{
    peer_state_t *ps = &x->peers[dst];
    if (!x->both_copy || !ps->rd_head || ps->may_write == RING_CMA_NO)
        return false;
    *base = coop_base(ps->rd_done + 1);
    uint64_t v = atomic_load_explicit(&ps->out->coop_claim, memory_order_acquire);
    if ((v & ~0xffffffffull) != *base)
        return false;
    uint64_t total = atomic_load_explicit(&ps->out->coop_total, memory_order_relaxed);
    uint32_t piece = atomic_load_explicit(&ps->out->coop_piece, memory_order_relaxed);
    return piece && (v & 0xffffffffu) < (total + piece - 1) / piece;
}

/* The sender's side: writes pieces of its send into dst while any is left
 * to take.  A piece it cannot write is left to dst (the orphan), and this
 * rank stops helping dst. */
static int coop_write(shm_xport_t *x, int dst)
{
    peer_state_t *ps = &x->peers[dst];
    ring_hdr_t *ring = ps->out;
    uint64_t base, idx;
    if (!coop_offered(x, dst, &base) || !may_write(x, dst))
        return 0;
    const xreq_t *r = ps->rd_head;
    uint64_t total = atomic_load_explicit(&ring->coop_total, memory_order_relaxed);
    size_t piece = atomic_load_explicit(&ring->coop_piece, memory_order_relaxed);
    uint64_t to = atomic_load_explicit(&ring->coop_dst, memory_order_relaxed);
    pid_t pid = atomic_load_explicit(&ring->coop_pid, memory_order_relaxed);
    if (total != r->bytes || !piece)
        return 0;
    uint64_t n = (total + piece - 1) / piece;
    int moved = 0;
    while (coop_take(ring, base, n, &idx)) {
        size_t off = (size_t)idx * piece, len = total - off < piece ? total - off : piece;
        struct iovec l = {(char *)r->sbuf + off, len}, rm = {(void *)(uintptr_t)(to + off), len};
        /* a receiver whose call failed gives its buffer back (cancel), and
         * so may a job that failed meanwhile: leave the piece to it, which
         * will read it into memory of its own */
        atomic_store(&ring->coop_writing, 1);
        bool cancelled = atomic_load(&ring->coop_cancel);
        bool failed = !cancelled && (atomic_load(&x->seg.hdr->abort_code) != ABORT_NONE ||
                                     process_vm_writev(pid, &l, 1, &rm, 1, 0) != (ssize_t)len);
        atomic_store_explicit(&ring->coop_writing, 0, memory_order_release);
        if (cancelled || failed) {
            if (failed)
                ps->may_write = RING_CMA_NO;
            atomic_store_explicit(&ring->coop_orphan, idx + 1, memory_order_release);
            return 1;
        }
        atomic_fetch_add_explicit(&ring->coop_done, 1, memory_order_release);
        moved = 1;
    }
    if (moved)
        notify(x, dst);
    return moved;
}

/* Completes the single-copy sends to dst that dst has read. */
static int reads_done(shm_xport_t *x, int dst)
{
    peer_state_t *ps = &x->peers[dst];
    uint64_t rd = atomic_load_explicit(&ps->out->read, memory_order_acquire);
    int moved = 0;
    while (ps->rd_done < rd && ps->rd_head) {
        xreq_t *r = ps->rd_head;
        ps->rd_head = r->next;
        if (!ps->rd_head)
            ps->rd_tail = NULL;
        ps->rd_done++;
        r->cb(r, WEFT_OK);
        moved = 1;
    }
    return moved;
}

/* The next cell to write to dst's ring, or NULL while the ring is full. */
static cell_t *cell_to_write(shm_xport_t *x, peer_state_t *ps)
{
    if (ps->wseq - ps->consumed_seen >= x->ncells) {
        ps->consumed_seen = atomic_load_explicit(&ps->out->consumed, memory_order_acquire);
        if (ps->wseq - ps->consumed_seen >= x->ncells)
            return NULL;
    }
    return seg_cell(&x->seg, ps->out, (uint32_t)(ps->wseq & (x->ncells - 1)));
}

static void cell_post(shm_xport_t *x, peer_state_t *ps, cell_t *c)
{
    atomic_store_explicit(&c->seq, (uint32_t)(ps->wseq + 1), memory_order_release);
    ps->wseq++;
}

/* The next cell from a ring if it holds a message cell, else NULL. */
static cell_t *cell_to_read(shm_xport_t *x, peer_state_t *ps, ring_hdr_t *ring)
{
    cell_t *c = head_cell(x, ps, ring);
    return atomic_load_explicit(&c->seq, memory_order_acquire) == (uint32_t)(ps->rseq + 1) ? c
                                                                                          : NULL;
}

static void cell_free(shm_xport_t *x, peer_state_t *ps, ring_hdr_t *ring)
{
    ps->rseq++;
    atomic_store_explicit(&ring->consumed, ps->rseq, memory_order_release);
}

/* Whether a message of these bytes through cells is timed (slow cells),
 * on the sending side or on the receiving side with the receiver's
 * reducer (NULL for a copy): only where the work timed is far faster than
 * the rate in any phase.  A receiver's larger messages are not timed: it
 * writes a destination that no longer fits the caches (or faults it in),
 * which took 1-5 GB/s in the fast phase once such messages went through
 * the rings past the L2. */
static bool cells_timed(const shm_xport_t *x, size_t bytes, bool sending, const reducer_t *red)
{
    return x->cells_slow_gbps && x->cores_enough && bytes >= CELLS_TIMED_MIN &&
           (sending || (bytes <= CELLS_TIMED_MAX && (!red || (!red->user && red->esize >= 4))));
}

/* A clock runs from *t_run (0: not running) to now, within one call that
 * moves cells: two clock reads a call, not a cell (but for a busy
 * sender's measured message, each of whose cells carries the sum so far),
 * and no waits.  The run just ended goes to the clocks that are on (slow
 * cells, a busy sender's measured message). */
static void clocks_lap(cells_clock_t *a, cells_clock_t *b, uint64_t *t_run)
{
    if (!*t_run)
        return;
    uint64_t ns = weft_now_ns() - *t_run;
    if (a->on)
        a->ns += ns;
    if (b->on)
        b->ns += ns;
    *t_run = 0;
}

/* the sender's clocks on the message it copies in */
static inline void copy_lap(peer_state_t *ps, uint64_t *t_run)
{
    clocks_lap(&ps->out_clock, &ps->work_out, t_run);
}

/* the receiver's on cur, whose cells it takes out */
static inline void take_lap(peer_state_t *ps, uint64_t *t_run)
{
    clocks_lap(&ps->in_clock, &ps->work_in, t_run);
}

/* A timed message of bytes has been moved: whether the cells are slow
 * now.  One slow message in a few hundred is an interrupt or a page
 * fault: CELLS_SLOW_RUN in a row make the cells slow, one fast message
 * fast again. */
static bool cells_clock_stop(const shm_xport_t *x, cells_clock_t *k, size_t bytes, double *gbps)
{
    k->on = false;
    *gbps = (double)bytes / (double)(k->ns ? k->ns : 1);
    k->slow_run = *gbps < x->cells_slow_gbps ? k->slow_run + 1 : 0;
    return k->slow_run >= CELLS_SLOW_RUN;
}

static void cells_say(const shm_xport_t *x, bool sending, int peer, double gbps, bool slow)
{
    static unsigned said; /* a phase that comes and goes: say it a few times */
    if (weft_verbose() && said++ < 8)
        fprintf(stderr, "weft: rank %d: %s rank %d through cells at %.1f GB/s (%s %g): "
                "messages of 64 KiB or more from rank %d to rank %d now go %s\n", x->base.rank,
                sending ? "copied a message to" : "took a message from", peer, gbps,
                slow ? "below" : "at least", x->cells_slow_gbps,
                sending ? x->base.rank : peer, sending ? peer : x->base.rank,
                slow ? "by single copy" : "as before");
}

/* The sending side: how fast this rank copied a message into dst's cells
 * (slow when the lines it writes must first be taken from dst's core). */
static void cells_out_timed(shm_xport_t *x, peer_state_t *ps, int dst, size_t bytes)
{
    double gbps;
    bool slow = cells_clock_stop(x, &ps->out_clock, bytes, &gbps);
    if (slow != ps->out_slow) {
        ps->out_slow = slow;
        cells_say(x, true, dst, gbps, slow);
    }
}

/* A send while this pair's cells are slow (by the receiver's clock, in the
 * ring header, or by this rank's own): single copy from 64 KiB, but every
 * CELLS_RETRY-th one goes through cells (timed by this rank), to learn
 * when they are fast again: a job of large messages alone must not stay
 * on single copy for good after a false alarm.  Copies too: with rings
 * past the L2 those of 1 MiB and more take cells by default, and in the
 * slow phase a receiver reading the sender's buffer itself loses least. */
static bool slow_cells_say_cma(shm_xport_t *x, ring_hdr_t *ring, const xreq_t *r)
{
    peer_state_t *ps = &x->peers[r->peer];
    if (!x->cells_slow_gbps || x->forced_min || r->bytes < CELLS_TIMED_MIN ||
        !(ps->out_slow || atomic_load_explicit(&ring->cells_slow, memory_order_relaxed)))
        return false;
    return ++ps->slow_sends % CELLS_RETRY != 0;
}

/* An idle sender's reducing message of IDLE_REDUCE_CMA_MIN bytes up to two
 * cells went by single copy (above, where cells pipeline, they stay).  2
 * ranks, binomial reduce (the 2-core Intel VM, 2026-11-28; three rounds
 * each, µs, cells against WEFT_CMA_MIN=2048): 2 KiB 1.4-4.8 against
 * 1.3-1.8, 4 KiB 2.0-3.6 against 1.5-4.4, 8 KiB 2.9-4.9 against 1.9-4.1,
 * 16 KiB 4.4-7.1 against 2.9-4.6, 32 KiB 6.6-9.0 against 4.5-4.7, 64 KiB
 * 9.6-26 against 8.0-8.1, 512 KiB 50-58 against 60-65.  Below 8 KiB the
 * system call and page pinning cost about what a crossing saves.  It stops
 * at two cells although 64 KiB still gained here: on the AMD VM of the
 * sessions before, cells won at 64 KiB (7.9 us against Open MPI's single
 * copy at 8.4-11), and the machines between are not known.  And only
 * where the transport holds two ranks: a receiver with several senders
 * (a linear or binomial reduce's root) reduces one ring while the others
 * fill theirs, where single copy would read them one system call after
 * another; that case is not measured.  On the AMD VM of the session
 * after, though, the same rule made that reduce 3-5x slower (under mpirun,
 * three rounds, µs, single copy against cells: 8 KiB 2.34-2.35 against
 * 0.48-0.51, 16 KiB 3.00-3.03 against 0.75-0.78, 32 KiB 4.32-4.36 against
 * 1.21-1.32; Open MPI 2.31-2.37, 2.86-2.98, 4.01-4.20).  So the way is
 * measured (below, "Copies measured"), the rule only its start. */
#define IDLE_REDUCE_CMA_MIN (8u << 10)
static bool idle_reduce_single_copy(const shm_xport_t *x, size_t bytes)
{
    return bytes >= IDLE_REDUCE_CMA_MIN && bytes <= 2 * (size_t)x->payload;
}

/* A pair's state for copies measured of a kind, allocated on its first
 * such message (NULL without memory: the fixed thresholds then decide). */
static copy_ways_t *ways_of(peer_state_t *ps, unsigned kind)
{
    static const uint32_t min[WAY_KINDS] = {COPY_WAY_MIN, REDUCE_WAY_MIN, SMALL_COPY_WAY_MIN,
                                            REDUCE_BUSY_WAY_MIN, COPY_BUSY_WAY_MIN};
    copy_ways_t **w = &ps->ways[kind];
    if (!*w && (*w = calloc(1, sizeof **w)))
        (*w)->min = min[kind], (*w)->typical = way_kind_small(kind),
        (*w)->settle = way_kind_busy(kind);
    return *w;
}

/* The header whose verdicts a busy sender's reducing message to peer
 * follows: one way for both directions of a pair, the way the lower
 * rank's timings of the higher's messages found faster, so the header of
 * the ring from the higher rank to the lower.  Both ranks of a symmetric
 * exchange (rabenseifner, or a ring at 2 ranks) send one such message a
 * call, so their trials fall on the same calls.  A verdict for each
 * direction, each timed while the other direction went either way,
 * misjudged: through cells a receiver first copies its own message in,
 * and a single-copy message waiting for that was timed slow (the Intel
 * VM: 2.5-6 GB/s against 7-10 when both went by single copy); verdicts
 * flipped from call to call, and a 2-rank rabenseifner of 1 MiB took
 * 188-215 us, where single copy alone took 138-154 and cells 170-197.
 * out (the receiver's own verdicts, as for copies) while the lower rank's
 * ring is not there yet, and way_pick falls back to them where the lower
 * rank has no verdict for a size (a ring's messages going one way only).
 * A way's figure is its best sample, not the mean: messages alternated
 * between 62-68 and 99 us by single copy, 70-78 and 99-150 through
 * cells, and means of three misjudged. */
static const ring_hdr_t *busy_judge(shm_xport_t *x, const ring_hdr_t *out, int peer)
{
    const ring_hdr_t *in = peer < x->base.rank ? NULL : ring_from(x, peer);
    return in ? in : out;
}

/* The sender's side of copies measured (above): whether r, measured as
 * kind, which the fixed thresholds would send by single copy or not
 * (by_rule), goes by single copy; *measured: the flags its cells carry
 * when its receiver is to time it. */
static bool way_pick(shm_xport_t *x, ring_hdr_t *ring, const xreq_t *r, unsigned kind,
                     bool by_rule, uint16_t *measured)
{
    if (x->copy_way_fixed > 0)
        return x->copy_way_fixed == COPY_WAY_SINGLE;
    copy_ways_t *w = x->copy_way_fixed == 0 ? ways_of(&x->peers[r->peer], kind) : NULL;
    if (!w)
        return by_rule;
    unsigned b = copy_way_bucket_of(w, r->bytes);
    uint8_t verdicts[COPY_WAY_BUCKETS];
    const ring_hdr_t *judge = way_kind_busy(kind) ? busy_judge(x, ring, r->peer) : ring;
    for (unsigned i = 0; i <= b; i++) {
        verdicts[i] = atomic_load_explicit(&judge->way[kind][i], memory_order_relaxed);
        if (COPY_WAY_OF(verdicts[i]) == COPY_WAY_UNKNOWN && judge != ring)
            verdicts[i] = atomic_load_explicit(&ring->way[kind][i], memory_order_relaxed);
    }
    bool timed = false;
    bool single = copy_way_single(w, copy_way_prior(verdicts, b, !x->cores_enough), r->bytes,
                                  by_rule, &timed);
    *measured = timed ? (uint16_t)(CELL_MEASURED | kind << 1) : 0;
    return single;
}

/* Whether a send from this rank's arena is best read in place by its
 * receiver.  Not always (PERFORMANCE-LOG.md, "malloc from the arena"):
 * - between two ranks with a core each, a sender with nothing left to
 *   receive sits idle while its receiver reads alone; from 1 MiB the usual
 *   ways, where both copy (cells, or single copy shared with the sender),
 *   were faster (bcast of 1-16 MiB: 20-848 us against 32-1326 in place;
 *   reduce 87-390 against 91-428 to 4 MiB, tied at 16).  By the call's
 *   size, not the message's: a pipeline's pieces (the two-tree reduce's)
 *   are small, and through cells the sender copies one in while the
 *   receiver reduces the last.  With more receivers in parallel (a
 *   bcast's) it was not measured, and stays in place;
 * - where ranks outnumber the cores, a reducing message read in place holds
 *   its sender until the reader is scheduled, where through cells it
 *   leaves at once: to 256 KiB (one ring) cells, which cost the root a
 *   copy (8-rank linear reduce of 64-256 KiB: every rank's mean 6-28 us
 *   through cells against 14-70 in place; the root's 31-135 against
 *   17-94).  Busy senders too, as Rabenseifner's pairs are: each would
 *   wait for its partner's turn on a core (the AMD VM, 2026-12-04, weft
 *   run, buffers from weft_alloc, 4 ranks: 16 KiB 28 us against 100, 256
 *   KiB 68 against 109).  Not an algorithm built for its peers to read
 *   in place (linear_arena: every rank waits for all its readers anyway),
 *   whose busy senders keep it: at 8 ranks, 1 MiB, its 128 KiB blocks
 *   through cells took 835 us against 411.  Nor a pipeline's pieces
 *   (under an eighth of the call), whose busy sender would copy each in
 *   while it has the next to take: the two-tree reduce of 4 MiB at 4
 *   ranks took 1134 us so against 539.  Nor a whole input sent to a root
 *   whose result its sender then waits for (a linear reduce + bcast: 8
 *   ranks, 64 KiB, 113 us through cells against 88). */
static bool in_place_pays(const shm_xport_t *x, const xreq_t *r)
{
    if (x->forced_min)
        return true;
    bool idle = r->sender_idles || (r->copied && !r->sender_busy);
    if (x->core_pair)
        return !idle || r->call_bytes < IN_PLACE_IDLE_MAX;
    if (x->cores_enough || r->copied || r->bytes > IN_PLACE_WAIT_MAX)
        return true;
    if (r->sender_idles)
        return false;
    return r->read_by_all || r->bytes >= r->call_bytes ||
           r->bytes * IN_PLACE_PIECE_FRACTION < r->call_bytes;
}

/* Whether r goes by single copy, and from where: in place from this
 * rank's arena (no system call, any size from arena_min), else by
 * process_vm_readv within the thresholds measured for it, or as copies
 * measured say.  *measured: the flags of r's cells when its receiver is
 * to time it (CELL_MEASURED), else 0. */
static bool single_copy(shm_xport_t *x, ring_hdr_t *ring, const xreq_t *r, cma_desc_t *d,
                        uint16_t *measured)
{
    *measured = 0;
    *d = (cma_desc_t){(uint64_t)(uintptr_t)r->sbuf, x->pid, 0, 0};
    if (r->bytes >= x->arena_min &&
        atomic_load_explicit(&ring->arena, memory_order_acquire) == RING_CMA_YES &&
        arena_offset(r->sbuf, r->bytes, &d->arena_off) && in_place_pays(x, r)) {
        d->in_arena = 1;
        return true;
    }
    bool cma = atomic_load_explicit(&ring->cma, memory_order_acquire) == RING_CMA_YES;
    if (cma && slow_cells_say_cma(x, ring, r))
        return true;
    /* a receiver that reduces a single-copy message reads it into a bounce
     * buffer and reduces it, alone; through cells the idle sender copies
     * in while it reduces out (2-rank reduce of 1 MiB: 70 us against 150).
     * A message of one or two cells has little to overlap, though: through
     * cells its lines cross between the cores twice (copied in, reduced
     * out) one after the other, where single copy reads them once for a
     * system call on some machines, and not on others; see
     * idle_reduce_single_copy. */
    if (r->sender_idles && x->cores_enough && !x->forced_min) {
        /* measured between two ranks, 8-64 KiB (single copy won at 64 KiB on
         * the Intel VM, and above cells pipeline on both machines) */
        if (!cma || !x->core_pair || r->bytes < REDUCE_WAY_MIN || r->bytes > REDUCE_WAY_MAX)
            return false;
        return way_pick(x, ring, r, WAY_REDUCE, idle_reduce_single_copy(x, r->bytes), measured);
    }
    bool by_rule = r->bytes >= (r->copied ? x->cma_min_copy : x->cma_min) &&
                   (!r->copied || r->bytes < x->cma_max_copy) && cma;
    /* a busy sender's copy (an allgather's, which receives as it sends):
     * through cells each core copies its own message in and its peer's
     * out, by single copy only the latter, which per message the receiver
     * may time slower (the Intel VM: cells 14.6-15.8 GB/s against
     * 12.5-13.5) while the whole exchange is faster (a 2-rank allgather
     * of 1 MiB blocks: 135 us against 199 through cells).  So it is judged
     * as a busy sender's reducing message is, by the work both cores
     * spend on it (copy_clock_start), one way for both directions of a
     * pair; where every rank has a core */
    if (cma && r->sender_busy && x->cores_enough && r->bytes >= COPY_BUSY_WAY_MIN &&
        x->copy_way_fixed >= 0)
        return way_pick(x, ring, r, WAY_COPY_BUSY, by_rule, measured);
    if (cma && r->copied && r->bytes >= COPY_WAY_MIN && x->copy_way_fixed >= 0)
        return way_pick(x, ring, r, WAY_COPY, by_rule, measured);
    /* a busy sender's reducing message (an allreduce's, which receives as
     * it sends): cells won from 64 KiB on the AMD VM (CMA_MIN_LARGE_RINGS),
     * single copy from 256 KiB on the Intel VM (2-rank rabenseifner of 1-16
     * MiB 1.2-1.26x faster; PERFORMANCE-LOG.md, "Reducing messages measured"),
     * so it is measured too, where every rank has a core (where ranks
     * share them a rendezvous waits for its reader to be scheduled) */
    if (cma && !r->copied && x->cores_enough && r->bytes >= REDUCE_BUSY_WAY_MIN &&
        x->copy_way_fixed >= 0)
        return way_pick(x, ring, r, WAY_REDUCE_BUSY, by_rule, measured);
    /* between two ranks with a core each, a copy from 16 KiB went by
     * single copy, read by the receiver alone, on the Intel VM (CMA_MIN_
     * COPY_SMALL); on the AMD VM of the session after, cells were faster
     * (PERFORMANCE-LOG.md), so these are measured too */
    if (cma && r->copied && x->core_pair && r->bytes >= SMALL_COPY_WAY_MIN &&
        x->copy_way_fixed >= 0)
        return way_pick(x, ring, r, WAY_SMALL_COPY, by_rule, measured);
    return by_rule;
}

/* A measured message's first cell carries the time its sender posted it,
 * in the inline bytes a message of REDUCE_WAY_MIN or more leaves unused:
 * the receiver's clock starts there for the small kinds, and for a copy
 * where ranks outnumber the cores (below). */
_Static_assert(COPY_WAY_MIN > CELL_INLINE && REDUCE_WAY_MIN > CELL_INLINE &&
                   SMALL_COPY_WAY_MIN > CELL_INLINE && CELL_INLINE >= sizeof(uint64_t),
               "a measured message's first cell has its inline bytes free for the stamp");
static inline void stamp_posted(cell_t *c)
{
    uint64_t now = weft_now_ns();
    memcpy(c->inline_data, &now, sizeof now);
}

/* And every cell of a busy sender's measured message (way_kind_busy), at
 * this offset, the sender's time copying the message in so far: its last
 * cell carries the whole. */
#define WORK_STAMP_AT 8
_Static_assert(WORK_STAMP_AT + sizeof(uint64_t) <= CELL_INLINE &&
                   REDUCE_BUSY_WAY_MIN > CELL_INLINE && COPY_BUSY_WAY_MIN > CELL_INLINE,
               "a busy measured message's cells have inline bytes free for the work stamp");

/* Sends r, first in ps's queue, by single copy: one cell with d, where
 * the receiver finds r's bytes; r then waits for its reader (rd queue). */
static inline void post_read_me(shm_xport_t *x, peer_state_t *ps, cell_t *c, xreq_t *r,
                                const cma_desc_t *d)
{
    c->len = sizeof *d;
    c->sig = r->sig;
    c->kind = CELL_READ_ME;
    c->flags = ps->out_measured | (r->withdrawn ? CELL_WITHDRAWN : 0) |
               (r->sender_busy ? CELL_SENDER_BUSY : 0);
    c->tag = r->tag;
    c->total = r->bytes;
    memcpy(c->payload, d, sizeof *d);
    __atomic_store_n(cell_withdrawn_word(c), 0, __ATOMIC_RELAXED);
    r->cell_no = ps->wseq; /* withdraw_send's, while r waits for its reader */
    if (ps->out_measured)
        stamp_posted(c);
    cell_post(x, ps, c);
    ps->sq_head = r->next;
    if (!ps->sq_head)
        ps->sq_tail = NULL;
    enqueue(&ps->rd_head, &ps->rd_tail, r);
}

/* Pushes as many cells of queued sends to dst as the ring has room for;
 * takes the ring on the first message to dst.  Negative on an error. */
static int push_sends(shm_xport_t *x, int dst)
{
    peer_state_t *ps = &x->peers[dst];
    if (!ps->out) {
        int rc = seg_ring_take(&x->seg, x->base.rank, dst, &ps->out);
        if (rc) {
            /* the peer would wait for ever: end the job */
            seg_abort(&x->seg, x->base.rank, ABORT_ERROR, weft_last_error());
            x->err = rc;
            return -rc;
        }
    }
    ring_hdr_t *ring = ps->out;
    int moved = 0;
    cma_desc_t d;
    uint64_t t_run = 0; /* slow cells: a timed message's cells copied in this call from */
    while (ps->sq_head) {
        xreq_t *r = ps->sq_head;
        cell_t *c = cell_to_write(x, ps);
        if (!c)
            break;
        if (r->done == 0 && r->bytes > RING_WARM_MIN && !ps->out_warm) {
            ring_warm(x, ring, true);
            ps->out_warm = true;
        }
        if (r->done == 0 && single_copy(x, ring, r, &d, &ps->out_measured)) {
            post_read_me(x, ps, c, r, &d);
            moved = 1;
            continue;
        }
        size_t len = r->bytes - r->done;
        if (len > x->payload)
            len = x->payload;
        c->len = (uint32_t)len;
        c->sig = r->sig;
        c->kind = CELL_DATA;
        c->flags = ps->out_measured | (r->withdrawn ? CELL_WITHDRAWN : 0);
        c->tag = r->tag;
        c->total = r->bytes;
        if (r->done == 0 && ps->out_measured)
            stamp_posted(c);
        if (r->done == 0) {
            ps->work_out.on = (ps->out_measured & CELL_MEASURED) &&
                              way_kind_busy(CELL_WAY_KIND(ps->out_measured));
            /* not on the ring's first pass, whose lines may still be in
             * neither core's cache */
            ps->out_clock.on = ps->wseq >= x->ncells && cells_timed(x, r->bytes, true, NULL);
            ps->work_out.ns = ps->out_clock.ns = 0;
        }
        if ((ps->out_clock.on || ps->work_out.on) && !t_run)
            t_run = weft_now_ns();
        if (len)
            copy_bytes(cell_data(c, r->bytes), (const char *)r->sbuf + r->done, len);
        if (ps->work_out.on) { /* each cell carries the copying in so far */
            copy_lap(ps, &t_run);
            memcpy(c->inline_data + WORK_STAMP_AT, &ps->work_out.ns, sizeof ps->work_out.ns);
        }
        cell_post(x, ps, c);
        r->done += len;
        moved = 1;
        if (r->done == r->bytes) {
            ps->sq_head = r->next;
            if (!ps->sq_head)
                ps->sq_tail = NULL;
            copy_lap(ps, &t_run);
            if (ps->out_clock.on)
                cells_out_timed(x, ps, dst, r->bytes);
            r->cb(r, WEFT_OK);
        }
    }
    copy_lap(ps, &t_run); /* the ring is full: the rest later */
    if (moved)
        notify(x, dst);
    return moved;
}

/* A receive whose sender withdrew the message fails ("Withdrawn sends",
 * above). */
static void finish_recv(const shm_xport_t *x, xreq_t *r, int err)
{
    if (!err && r->sender_failed) {
        uint64_t key = call_key_of_tag(r->tag);
        err = weft_error(WEFT_EPEER, "rank %d's call #%u on communicator %u failed (its time "
                         "limit, a revoke or an error) before this rank had read all of its "
                         "message of %zu bytes: the rest may no longer be the call's data",
                         named(x, r->peer), (unsigned)key, (unsigned)(key >> 32), r->bytes);
    }
    r->cb(r, err);
}

/* A buffer for an unexpected message of bytes, *cap bytes long: a kept
 * one that holds it (the smallest), else a new one; NULL when out of
 * memory. */
static char *unexp_buf_take(shm_xport_t *x, size_t bytes, size_t *cap)
{
    *cap = bytes ? bytes : 1;
    if (bytes < UNEXP_SPARE_MIN)
        return malloc(*cap);
    int best = -1;
    for (int i = 0; i < UNEXP_SPARES; i++)
        if (x->spare[i] && x->spare_len[i] >= bytes &&
            (best < 0 || x->spare_len[i] < x->spare_len[best]))
            best = i;
    if (best < 0)
        return big_alloc(bytes);
    char *p = x->spare[best];
    *cap = x->spare_len[best];
    x->spare[best] = NULL;
    return p;
}

/* Gives back a buffer of cap bytes that unexp_buf_take gave: kept while
 * the kept ones stay within their bounds, smaller ones freed to make room
 * for it, else freed itself. */
static void unexp_buf_give(shm_xport_t *x, char *p, size_t cap)
{
    if (cap < UNEXP_SPARE_MIN) {
        free(p);
        return;
    }
    for (;;) {
        size_t kept = 0;
        int slot = -1, smallest = -1;
        for (int i = 0; i < UNEXP_SPARES; i++) {
            if (!x->spare[i]) {
                slot = slot < 0 ? i : slot;
                continue;
            }
            kept += x->spare_len[i];
            if (smallest < 0 || x->spare_len[i] < x->spare_len[smallest])
                smallest = i;
        }
        if (slot >= 0 && kept + cap <= UNEXP_KEEP_MAX) {
            x->spare[slot] = p, x->spare_len[slot] = cap;
            return;
        }
        if (smallest < 0 || x->spare_len[smallest] >= cap || cap > UNEXP_KEEP_MAX) {
            big_free(p, cap);
            return;
        }
        big_free(x->spare[smallest], x->spare_len[smallest]);
        x->spare[smallest] = NULL;
    }
}

/* Delivers a complete unexpected message to r and frees it. */
static void unexp_deliver(shm_xport_t *x, xreq_t *r, unexp_t *u)
{
    xsink_deliver(&r->sink, 0, u->data, u->total);
    r->sender_failed = u->withdrawn;
    unexp_buf_give(x, u->data, u->cap);
    free(u);
    finish_recv(x, r, WEFT_OK);
}

/* A message of a call in flight here, made otherwise by its sender: a
 * receive posted from src for the same call (communicator and call number,
 * another step) under another signature.  Every message of a call carries
 * the call's signature, so the steps need not match for the proof (a
 * sender that made the call with another algorithm sends steps this
 * rank's schedule never posts; shm_sent_otherwise looks where no receive
 * is posted). */
static const xreq_t *posted_otherwise(const peer_state_t *ps, uint64_t tag, uint32_t sig)
{
    uint64_t key = call_key_of_tag(tag);
    for (const xreq_t *r = ps->rq_head; r; r = r->next)
        if (call_key_of_tag(r->tag) == key && r->sig != sig)
            return r;
    return NULL;
}

static xreq_t *take_posted(peer_state_t *ps, uint64_t tag)
{
    xreq_t **pp = &ps->rq_head, *prev = NULL;
    for (xreq_t *r = ps->rq_head; r; prev = r, pp = &r->next, r = r->next) {
        if (r->tag == tag) {
            *pp = r->next;
            if (ps->rq_tail == r)
                ps->rq_tail = prev;
            r->next = NULL;
            return r;
        }
    }
    return NULL;
}

/* Copies measured (above): the receiver's clock on a message its sender
 * marked, from the moment this rank can start on it (its first cell, or
 * its read) to its last byte, waits for the sender's cells or pieces
 * included: what the way costs the call.  Where ranks outnumber the
 * cores a copy's clock starts when the sender posted it (a single copy
 * holds its sender until the reader is scheduled, and what the call pays
 * is mostly that wait); a message of the small kinds (an idle sender's
 * reducing one, a small copy between two ranks), at the later of that
 * and the receive's post, so that neither a late receiver nor, in calls
 * back to back, an eager sender's lead is counted.  Also on the ring's
 * first pass (slow cells skip it): a ring of 2 MiB carries 32 copies of
 * 64 KiB before its second pass, and all that while the two ways would
 * take turns.  Its pages are touched before its first such message
 * (ring_warm), so the first pass is not the slow one it was. */
static void copy_clock_start(shm_xport_t *x, peer_state_t *ps, const cell_t *c,
                             const xreq_t *r, unsigned way)
{
    /* the clock is read only for a measured message: not a cost every message pays */
    unsigned kind = CELL_WAY_KIND(c->flags);
    bool small = way_kind_small(kind);
    bool reducing = kind == WAY_REDUCE || kind == WAY_REDUCE_BUSY;
    ps->copy_way = (c->flags & CELL_MEASURED) && kind < WAY_KINDS &&
                           (reducing || !r->sink.red)
                       ? way
                       : COPY_WAY_UNKNOWN;
    ps->copy_kind = kind;
    /* A busy sender's message (both cores busy in the call) is judged by
     * the work the two cores spend on it: through cells the sender's
     * copying in and the receiver's taking out, each timed only while it
     * runs (work_out, work_in); by single copy the receiver's read, from
     * its start.  Any clock that included a wait misjudged it, since
     * what each side does between post and take differs by algorithm:
     * from the sender's post (the sessions before), cells read faster on
     * the Intel VM where whole calls were 1.2-1.6x slower (2-rank
     * allgather of 4-32 MiB blocks, allreduce of 16 MiB: the receiver's
     * own local copy or reduction ran between the two, which the
     * sender's copying in overlapped); from the receiver's start alone,
     * the copying in went uncounted (2-rank rabenseifner of 1 MiB,
     * 170-188 us through cells against 137 by single copy). */
    ps->work_in.on = ps->copy_way == COPY_WAY_CELLS && way_kind_busy(kind);
    ps->work_in.ns = 0, ps->work_sender_ns = 0;
    if (ps->copy_way == COPY_WAY_UNKNOWN)
        return;
    uint64_t now = weft_now_ns(), posted;
    memcpy(&posted, c->inline_data, sizeof posted);
    if (small && r->posted_ns > posted) /* not the time it waited for its receive */
        posted = r->posted_ns;
    ps->copy_t0 = (x->cores_enough && !small) || posted > now ? now : posted;
}

static void copy_say(const shm_xport_t *x, int src, unsigned kind, const copy_ways_t *w,
                     unsigned b, unsigned v, const uint32_t best[2])
{
    static unsigned said; /* per process: a phase that comes and goes says it a few times */
    if (!weft_verbose() || said++ >= 16)
        return;
    bool single = COPY_WAY_OF(v) == COPY_WAY_SINGLE;
    bool red = kind == WAY_REDUCE || kind == WAY_REDUCE_BUSY;
    const char *what = red                     ? "reducing messages"
                       : kind == WAY_COPY_BUSY ? "exchanged copies"
                                               : "copies";
    size_t lo = (size_t)(w->min >> 10) << b;
    char range[48];
    if (b + 1 < COPY_WAY_BUCKETS)
        snprintf(range, sizeof range, "%zu-%zu KiB", lo, 2 * lo);
    else
        snprintf(range, sizeof range, "%zu KiB or more", lo);
    fprintf(stderr, "weft: rank %d: %s of %s from rank %d now go %s (%.1f GB/s against "
            "%.1f %s)\n", x->base.rank, what, range, src,
            single ? "by single copy" : "through cells", 1024.0 / best[single],
            1024.0 / best[!single], single ? "through cells" : "by single copy");
}

static void copy_clock_stop(shm_xport_t *x, peer_state_t *ps, ring_hdr_t *ring, size_t bytes)
{
    if (ps->copy_way == COPY_WAY_UNKNOWN)
        return;
    uint64_t ns = weft_now_ns() - ps->copy_t0;
    if (ps->work_in.on) /* a busy sender's, through cells: both sides' work */
        ns = ps->work_in.ns + ps->work_sender_ns, ps->work_in.on = false;
    copy_ways_t *w = ways_of(ps, ps->copy_kind);
    unsigned way = ps->copy_way;
    ps->copy_way = COPY_WAY_UNKNOWN;
    if (!w)
        return;
    unsigned b = copy_way_bucket_of(w, bytes), before = w->verdict[b];
    uint32_t best[2];
    unsigned v = copy_way_sample(w, bytes, way, ns, best);
    if (v == before)
        return;
    atomic_store_explicit(&ring->way[ps->copy_kind][b], (uint8_t)v, memory_order_relaxed);
    if (COPY_WAY_OF(v) != COPY_WAY_OF(before))
        copy_say(x, (int)(ps - x->peers), ps->copy_kind, w, b, v, best);
}

/* The single-copy message at the head of src's ring is read: free its
 * cell and count it (which completes the send). */
static void read_counted(shm_xport_t *x, int src, ring_hdr_t *ring)
{
    cell_free(x, &x->peers[src], ring);
    atomic_fetch_add_explicit(&ring->read, 1, memory_order_release);
}

/* A CELL_READ_ME cell at the head of src's ring: reads its message into sk,
 * frees the cell and counts the read, unless its sender still writes
 * pieces of it (ps->coop.on: coop_finish does that once they land).
 * *withdrawn: read_me_withdrawn, once read. */
static int read_whole(shm_xport_t *x, int src, ring_hdr_t *ring, cell_t *c, const xsink_t *sk,
                      bool *withdrawn)
{
    cma_desc_t d;
    memcpy(&d, c->payload, sizeof d);
    peer_state_t *ps = &x->peers[src];
    if (d.in_arena && ps->arena && d.arena_off <= ps->arena_span &&
        c->total <= ps->arena_span - d.arena_off) {
        if (!arena_peer_readable(ps->arena, ps->arena_span, &ps->arena_readable,
                                 d.arena_off + c->total)) {
            x->err = WEFT_ESYS;
            return weft_error(WEFT_ESYS, "rank %d's arena could not be made readable here "
                              "(%llu bytes): %s", named(x, src),
                              (unsigned long long)(d.arena_off + c->total), strerror(errno));
        }
        xsink_deliver(sk, 0, ps->arena + d.arena_off, c->total);
    } else if (d.in_arena) {
        x->err = WEFT_EINTERNAL;
        return weft_error(WEFT_EINTERNAL, "rank %d sent from its arena, which this rank has "
                          "not mapped", named(x, src));
    } else {
        bool coop = x->both_copy && !sk->red &&
                    ((c->total >= COOP_MIN && !(c->flags & CELL_SENDER_BUSY)) || x->help_forced);
        int rc = coop ? coop_read(x, src, ring, &d, sk->dst, c->total, c)
                      : cma_read(x, src, &d, sk, c->total, c);
        if (rc)
            return rc;
        if (ps->coop.on) /* the sender's pieces land later */
            return WEFT_OK;
    }
    *withdrawn = read_me_withdrawn(c);
    read_counted(x, src, ring);
    return WEFT_OK;
}

/* An unexpected message is whole: a receive that waits for it takes it. */
static void unexp_complete(shm_xport_t *x, peer_state_t *ps, unexp_t *u)
{
    u->done = u->total;
    if (u->waiting) {
        unexp_t **pp = &ps->unexp;
        while (*pp != u)
            pp = &(*pp)->next;
        *pp = u->next;
        unexp_deliver(x, u->waiting, u);
    }
}

/* The pending both-copy read from src: 1 when it has landed (its receive
 * completed), 0 while it has not, negative on an error. */
static int coop_finish(shm_xport_t *x, int src, ring_hdr_t *ring)
{
    peer_state_t *ps = &x->peers[src];
    int m = coop_poll(x, src);
    if (m <= 0)
        return m;
    bool withdrawn = read_me_withdrawn(head_cell(x, ps, ring));
    read_counted(x, src, ring);
    xreq_t *r = ps->coop.r;
    unexp_t *u = ps->coop.u;
    ps->coop.r = NULL, ps->coop.u = NULL;
    if (r) {
        r->sender_failed = withdrawn;
        copy_clock_stop(x, ps, ring, r->bytes);
        finish_recv(x, r, WEFT_OK);
    } else {
        u->withdrawn = withdrawn;
        unexp_complete(x, ps, u);
    }
    return 1;
}

/* Slow cells (above): the receiver's clock on a message through cells.
 * It runs only while the receiver takes the message's cells out (its
 * copies or reductions from them), not while it waits for them or serves
 * anything else: how fast lines the sender wrote reach this core.  The
 * sender's clock (push_sends) runs likewise only while it copies in. */
static void cells_time_start(shm_xport_t *x, peer_state_t *ps, const cell_t *c)
{
    /* Only where the receiver's own work is far faster than the rate: a
     * copy, or a built-in op on 4- or 8-byte elements (a user's op, or a
     * bfloat16 sum, may well reduce slower than that in any phase). */
    ps->in_clock.on = ps->rseq >= x->ncells && cells_timed(x, c->total, false, ps->cur->sink.red);
    ps->in_clock.ns = 0;
}

static void cells_time_end(shm_xport_t *x, peer_state_t *ps, ring_hdr_t *ring, size_t bytes)
{
    if (!ps->in_clock.on)
        return;
    double gbps;
    uint32_t slow = cells_clock_stop(x, &ps->in_clock, bytes, &gbps);
    if (atomic_load_explicit(&ring->cells_slow, memory_order_relaxed) == slow)
        return;
    atomic_store_explicit(&ring->cells_slow, slow, memory_order_relaxed);
    cells_say(x, false, (int)(ps - x->peers), gbps, slow);
}

/* What start_message made of the message at the head of src's ring. */
enum {
    START_CELLS,   /* a receive (ps->cur), a buffer (ps->cur_unexp) or a drop takes its cells */
    START_READ,    /* it was read whole by single copy, its cell freed */
    START_PENDING, /* it is being read, the sender's pieces still to land */
    START_NOBODY,  /* no receive waits on this peer: it stays in the ring */
};

/* The message whose first cell c heads src's ring is of a call refused
 * here (messages of calls refused here): one by single copy is counted read
 * without a read; cells are freed as they come (poll_from). */
static int start_drop(shm_xport_t *x, int src, ring_hdr_t *ring, cell_t *c)
{
    if (c->kind == CELL_READ_ME) {
        read_counted(x, src, ring);
        return START_READ;
    }
    x->peers[src].drop.on = true;
    x->peers[src].drop.left = c->total;
    return START_CELLS;
}

/* The message whose first cell c heads src's ring: matches it to a posted
 * receive, or buffers it while other receives from src wait behind it,
 * and reads it at once when it comes by single copy.  A START_* above, or
 * a negative error (a mismatch ends the job). */
static int start_message(shm_xport_t *x, int src, ring_hdr_t *ring, cell_t *c)
{
    peer_state_t *ps = &x->peers[src];
    if (c->total > RING_WARM_MIN && !ps->in_warm) {
        ring_warm(x, ring, false);
        ps->in_warm = true;
    }
    xreq_t *r = take_posted(ps, c->tag);
    if (r) {
        if (c->sig != r->sig)
            return -mismatch(x, src, r->tag, "signature", c->sig, r->sig);
        if (c->total != r->bytes)
            return -mismatch(x, src, r->tag, "message bytes", c->total, r->bytes);
        r->done = 0;
        if (c->kind != CELL_READ_ME) {
            ps->cur = r;
            cells_time_start(x, ps, c);
            copy_clock_start(x, ps, c, r, COPY_WAY_CELLS);
            return START_CELLS;
        }
        copy_clock_start(x, ps, c, r, COPY_WAY_SINGLE);
        int rc = read_whole(x, src, ring, c, &r->sink, &r->sender_failed);
        if (rc)
            return -rc;
        if (ps->coop.on) {
            ps->coop.r = r;
            return START_PENDING;
        }
        copy_clock_stop(x, ps, ring, r->bytes);
        finish_recv(x, r, WEFT_OK);
        return START_READ;
    }
    if (ended_well(x, x->base.rank, call_key_of_tag(c->tag)))
        return refused_here(x, c->tag) ? start_drop(x, src, ring, c)
                                       : -stale_message(x, src, c->tag);
    const xreq_t *other = posted_otherwise(ps, c->tag, c->sig);
    if (other)
        return -mismatch(x, src, c->tag, "signature", c->sig, other->sig);
    if (!ps->rq_head)
        return START_NOBODY;
    unexp_t *u = calloc(1, sizeof *u);
    if (!u || !(u->data = unexp_buf_take(x, c->total, &u->cap))) {
        free(u);
        x->err = WEFT_ENOMEM;
        return -weft_error(WEFT_ENOMEM, "no memory to buffer an unexpected message");
    }
    u->tag = c->tag, u->sig = c->sig, u->total = c->total;
    unexp_t **tail = &ps->unexp;
    while (*tail)
        tail = &(*tail)->next;
    *tail = u;
    if (c->kind != CELL_READ_ME) {
        ps->cur_unexp = u;
        return START_CELLS;
    }
    int rc = read_whole(x, src, ring, c, &(xsink_t){.dst = u->data}, &u->withdrawn);
    if (rc)
        return -rc;
    if (ps->coop.on) {
        ps->coop.u = u;
        return START_PENDING;
    }
    u->done = u->total;
    return START_READ;
}

/* Reads cells from src while they belong to a matched receive, or must be
 * drained to let a waiting receive through. */
static int poll_from(shm_xport_t *x, int src)
{
    peer_state_t *ps = &x->peers[src];
    ring_hdr_t *ring = ring_from(x, src);
    int moved = 0;
    uint64_t t_run = 0; /* slow cells: cur's cells taken out in this call from */
    if (ps->coop.on) {
        int m = coop_finish(x, src, ring);
        if (m <= 0)
            return m;
        moved = 1;
    }
    for (;;) {
        if (!ring)
            break;
        cell_t *c = cell_to_read(x, ps, ring);
        if (!c)
            break;
        if (!ps->cur && !ps->cur_unexp && !ps->drop.on) {
            int st = start_message(x, src, ring, c);
            if (st < 0)
                return st;
            if (st == START_NOBODY)
                break;
            if (st != START_CELLS) {
                moved = 1;
                if (st == START_PENDING)
                    break;
                continue;
            }
        }
        size_t len = c->len;
        if (ps->drop.on) {
            ps->drop.left -= len < ps->drop.left ? len : ps->drop.left;
            ps->drop.on = ps->drop.left > 0;
            cell_free(x, ps, ring);
            moved = 1;
            continue;
        }
        if (c->flags & CELL_WITHDRAWN) {
            if (ps->cur)
                ps->cur->sender_failed = true;
            else
                ps->cur_unexp->withdrawn = true;
        }
        if (ps->cur) {
            if ((ps->in_clock.on || ps->work_in.on) && !t_run)
                t_run = weft_now_ns();
            xsink_deliver(&ps->cur->sink, ps->cur->done, cell_data(c, c->total), len);
            ps->cur->done += len;
            if (ps->work_in.on && ps->cur->done == ps->cur->bytes)
                memcpy(&ps->work_sender_ns, c->inline_data + WORK_STAMP_AT,
                       sizeof ps->work_sender_ns);
        } else if (len) {
            copy_bytes(ps->cur_unexp->data + ps->cur_unexp->done, cell_data(c, c->total), len);
            ps->cur_unexp->done += len;
        }
        cell_free(x, ps, ring);
        moved = 1;
        if (ps->cur && ps->cur->done == ps->cur->bytes) {
            xreq_t *r = ps->cur;
            ps->cur = NULL;
            take_lap(ps, &t_run);
            cells_time_end(x, ps, ring, r->bytes);
            copy_clock_stop(x, ps, ring, r->bytes);
            finish_recv(x, r, WEFT_OK);
        } else if (ps->cur_unexp && ps->cur_unexp->done == ps->cur_unexp->total) {
            unexp_t *u = ps->cur_unexp;
            ps->cur_unexp = NULL;
            unexp_complete(x, ps, u);
        }
    }
    take_lap(ps, &t_run); /* cur waits for more cells: untimed */
    if (moved)
        notify(x, src); /* cells freed: a sender may be waiting for room */
    return moved;
}

static int shm_health(xport_t *xp)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    /* said again for every call that meets it (another thread's, say):
     * the message set where it happened is that thread's */
    if (x->err && atomic_load(&x->seg.hdr->abort_code) != ABORT_NONE)
        return weft_error(x->err, "%s", x->seg.hdr->abort_msg);
    if (x->err)
        return weft_error(x->err, "an earlier call on this rank failed: %s",
                          weft_strerror((weft_err_t)x->err));
    if (atomic_load(&x->seg.hdr->abort_code) != ABORT_NONE)
        return weft_error(WEFT_EPEER, "%s", x->seg.hdr->abort_msg);
    return WEFT_OK;
}

static int shm_progress(xport_t *xp)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    int moved = 0;
    for (int p = 0; p < x->base.size; p++) {
        peer_state_t *ps = &x->peers[p];
        if (ps->rd_head)
            moved |= reads_done(x, p);
        if (ps->rd_head)
            moved |= coop_write(x, p);
        if (ps->sq_head) {
            int m = push_sends(x, p);
            if (m < 0)
                return m;
            moved |= m;
        }
        if (ps->rq_head || ps->cur || ps->cur_unexp || ps->coop.on || ps->drop.on) {
            int m = poll_from(x, p);
            if (m < 0)
                return m;
            moved |= m;
        }
    }
    if (!moved) {
        int h = shm_health(xp);
        if (h)
            return -h;
    }
    return moved;
}

static int shm_isend(xport_t *xp, xreq_t *r)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    peer_state_t *ps = &x->peers[r->peer];
    r->done = 0;
    r->withdrawn = false;
    enqueue(&ps->sq_head, &ps->sq_tail, r);
    /* a zero-byte message still takes one cell: it carries the signature */
    int m = push_sends(x, r->peer);
    return m < 0 ? -m : WEFT_OK;
}

static int shm_irecv(xport_t *xp, xreq_t *r)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    peer_state_t *ps = &x->peers[r->peer];
    r->done = 0;
    r->sender_failed = false;
    r->next = NULL;
    for (unexp_t **pp = &ps->unexp, *u = ps->unexp; u; pp = &u->next, u = u->next) {
        if (u->sig != r->sig && call_key_of_tag(u->tag) == call_key_of_tag(r->tag))
            return mismatch(x, r->peer, r->tag, "signature", u->sig, r->sig);
        if (u->tag != r->tag || u->waiting)
            continue;
        if (u->sig != r->sig)
            return mismatch(x, r->peer, r->tag, "signature", u->sig, r->sig);
        if (u->total != r->bytes)
            return mismatch(x, r->peer, r->tag, "message bytes", u->total, r->bytes);
        if (u->done == u->total) {
            *pp = u->next;
            unexp_deliver(x, r, u);
        } else {
            u->waiting = r;
        }
        return WEFT_OK;
    }
    /* a message of the small kinds is timed from when both sides are in
     * the call ("Copies measured"); one clock read, in their range only */
    bool timed = x->core_pair && x->copy_way_fixed == 0 && r->bytes >= REDUCE_WAY_MIN &&
                 r->bytes <= REDUCE_WAY_MAX;
    r->posted_ns = timed ? weft_now_ns() : 0;
    enqueue(&ps->rq_head, &ps->rq_tail, r);
    int m = poll_from(x, r->peer);
    return m < 0 ? -m : WEFT_OK;
}

/* Is there anything this rank could do right now? */
static bool shm_ready(shm_xport_t *x)
{
    for (int p = 0; p < x->base.size; p++) {
        peer_state_t *ps = &x->peers[p];
        if (ps->sq_head && (!ps->out || cell_to_write(x, ps)))
            return true;
        uint64_t base;
        if (ps->rd_head && (atomic_load(&ps->out->read) > ps->rd_done || coop_offered(x, p, &base)))
            return true;
        if (ps->coop.on && coop_landed(ps))
            return true;
        if (ps->rq_head || ps->cur || ps->cur_unexp || ps->drop.on) {
            ring_hdr_t *ring = ring_from(x, p);
            if (ring && cell_to_read(x, ps, ring))
                return true;
        }
    }
    if (x->base.also_ready && x->base.also_ready(x->base.also_arg))
        return true;
    return atomic_load(&x->seg.hdr->abort_code) != ABORT_NONE;
}

static void shm_block(xport_t *xp, int timeout_ms)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    seg_rank_t *me = seg_rank(&x->seg, x->base.rank);
    uint32_t v = atomic_load(&me->doorbell);
    atomic_store(&me->sleeping, 1);
    if (!x->membarrier || !membarrier_global()) {
        if (x->membarrier) /* refused after all: wakers fence again */
            atomic_store(&me->membarrier, 0), x->membarrier = false;
        atomic_thread_fence(memory_order_seq_cst);
    }
    if (!shm_ready(x)) {
        pthread_mutex_unlock(&x->base.lock);
        futex_wait_u32(&me->doorbell, v, timeout_ms);
        pthread_mutex_lock(&x->base.lock);
        /* PR_SET_PDEATHSIG reaches the launcher's children only: a rank
         * behind a forking wrapper looks for itself */
        pid_t l = x->seg.hdr->launcher;
        if (l > 0 && kill(l, 0) != 0 && errno == ESRCH) {
            char msg[96];
            snprintf(msg, sizeof msg, "the launcher (weft run, process %d) is gone", (int)l);
            seg_abort(&x->seg, x->base.rank, ABORT_DIED, msg);
        }
    }
    atomic_store(&me->sleeping, 0);
}

/* ---- the call log (segment.h): what each rank is calling ---- */

/* A call's record sits at a slot given by its key, so a peer finds it with
 * one read; the log keeps the newest call of each slot. */
static call_rec_t *rec_of(shm_xport_t *x, int rank, uint64_t key)
{
    return seg_calllog(&x->seg, rank) + call_slot(key, SEG_CALLLOG);
}

/* Kept apart from the record, which a skipped publication or a newer call
 * in its slot may lose: whether this rank ever gave up a call must not be.
 * The key names the call a peer's message cites as the fault; the barrier
 * of weft_finalize failing is a consequence, never that cause. */
static void note_abandoned(shm_xport_t *x, const call_desc_t *d)
{
    seg_rank_t *me = seg_rank(&x->seg, x->base.rank);
    if (!(d->flags & CALL_FINALIZE)) {
        /* threads may fail calls at once: each claims its own slot; a
         * peer that reads the count before the key sees it at its next
         * watch round */
        uint32_t k = atomic_fetch_add_explicit(&me->abandoned_keyed, 1, memory_order_relaxed);
        atomic_store_explicit(&me->abandoned_keys[k % SEG_ABANDONED], d->key,
                              memory_order_release);
    }
    atomic_fetch_add_explicit(&me->abandoned, 1, memory_order_release);
}

/* Takes rec (its version odd while this rank rewrites it): false when
 * another thread holds it. */
static bool rec_take(call_rec_t *rec, uint64_t *v)
{
    *v = atomic_load_explicit(&rec->ver, memory_order_relaxed);
    return !(*v & 1) && atomic_compare_exchange_strong_explicit(&rec->ver, v, *v + 1,
                                                                memory_order_acquire,
                                                                memory_order_relaxed);
}

static void rec_fill(call_rec_t *rec, const call_desc_t *d, uint32_t state)
{
    uint64_t w[6];
    _Static_assert(sizeof(call_desc_t) == sizeof w, "call_desc_t is six words");
    memcpy(w, d, sizeof w);
    for (int i = 0; i < 6; i++)
        atomic_store_explicit(&rec->w[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&rec->state, state, memory_order_relaxed);
}

/* The record pinned for key among the rank's pinned ones (key 0: a free
 * one); NULL if none. */
static call_rec_t *pinned_of(shm_xport_t *x, int rank, uint64_t key)
{
    call_rec_t *pin = seg_calllog(&x->seg, rank) + SEG_CALLLOG;
    for (int i = 0; i < SEG_CALLPIN; i++)
        if (atomic_load_explicit(&pin[i].w[0], memory_order_relaxed) == key)
            return &pin[i];
    return NULL;
}

/* CALL_PIN and CALL_UNPIN: a copy of the call's record among the pinned
 * ones, made when its wait stalls and cleared when it ends.  With all
 * taken, the call goes unpinned (a diagnosis may be lost, as before). */
static void call_pin(shm_xport_t *x, const call_desc_t *d, bool pin)
{
    call_rec_t *rec = pinned_of(x, x->base.rank, pin ? 0 : d->key);
    uint64_t v;
    if (!rec || !d->key || !rec_take(rec, &v))
        return;
    if (pin) {
        rec_fill(rec, d, CALL_STARTED);
    } else {
        atomic_store_explicit(&rec->w[0], 0, memory_order_relaxed);
        atomic_store_explicit(&rec->state, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&rec->ver, v + 2, memory_order_release);
}

/* Lock-free: threads on different communicators may publish at once, and a
 * writer takes a record by making its version odd (a record another thread
 * holds is skipped: its call goes unpublished, which loses a diagnosis,
 * never a result). */
static void shm_call_note(xport_t *xp, const call_desc_t *d, int state)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    if (state == CALL_PIN || state == CALL_UNPIN) {
        call_pin(x, d, state == CALL_PIN);
        return;
    }
    call_rec_t *rec = rec_of(x, x->base.rank, d->key);
    uint64_t v;
    bool gave_up = state == CALL_ABANDONED && (d->flags & CALL_GAVE_UP);
    if (state == CALL_ABANDONED) {
        note_abandoned(x, d);
        call_rec_t *pin = pinned_of(x, x->base.rank, d->key);
        if (pin && rec_take(pin, &v)) {
            atomic_store_explicit(&pin->state, CALL_ABANDONED, memory_order_relaxed);
            atomic_store_explicit(&pin->ver, v + 2, memory_order_release);
        }
    }
    if (state == CALL_REFUSED) {
        refused_note(x, d->key);
        uint64_t ctx = d->key >> 32;
        uint64_t n = d->key & CALL_NUM_MASK;
        atomic_store_explicit(
            &seg_rank(&x->seg, x->base.rank)->refused[ctx % SEG_ENDED][n % SEG_REFUSED],
            ctx << 48 | n << 24 | (d->sig & 0xffffffu), memory_order_release);
    }
    if (!rec_take(rec, &v))
        return;
    if (state == CALL_STARTED || state == CALL_REFUSED)
        rec_fill(rec, d, (uint32_t)state);
    else if (gave_up && atomic_load_explicit(&rec->w[0], memory_order_relaxed) == d->key)
        rec_fill(rec, d, (uint32_t)state); /* its flags say so */
    else if (atomic_load_explicit(&rec->w[0], memory_order_relaxed) == d->key)
        atomic_store_explicit(&rec->state, (uint32_t)state, memory_order_relaxed);
    atomic_store_explicit(&rec->ver, v + 2, memory_order_release);
}

/* A consistent copy of a record; false if it is empty, or still being
 * rewritten after REC_WAIT_NS.  A diagnosis rests on the read (a record
 * missed turns EPEER into EMISMATCH), and its owner may rewrite it at the
 * very moment a peer looks: both ranks of a disagreement find it at once,
 * and the owner then marks its own call abandoned.  A writer that lost its
 * core mid-rewrite is waited for with yields, a bounded time, since one
 * that died there leaves the version odd for good. */
#define REC_WAIT_NS 20000000ull
static bool rec_read(call_rec_t *rec, call_desc_t *d, int *state)
{
    uint64_t give_up = 0;
    for (int tries = 0;; tries++) {
        if (tries >= 4) { /* the owner is rewriting it: let it finish */
            uint64_t now = weft_now_ns();
            if (!give_up)
                give_up = now + REC_WAIT_NS;
            else if (now > give_up)
                return false;
            sched_yield();
        }
        uint64_t v1 = atomic_load_explicit(&rec->ver, memory_order_acquire), w[6];
        if (v1 & 1)
            continue;
        for (int i = 0; i < 6; i++)
            w[i] = atomic_load_explicit(&rec->w[i], memory_order_relaxed);
        *state = (int)atomic_load_explicit(&rec->state, memory_order_acquire);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&rec->ver, memory_order_relaxed) != v1)
            continue;
        memcpy(d, w, sizeof w);
        return v1 != 0;
    }
}

/* Peer's record of call key: where the key puts it, else among the pinned
 * ones (which are rarely written, so their lines stay in this core's
 * cache and a miss costs a few loads). */
static bool rec_find(shm_xport_t *x, int peer, uint64_t key, call_desc_t *d, int *state)
{
    if (rec_read(rec_of(x, peer, key), d, state) && d->key == key)
        return true;
    call_rec_t *pin = key ? pinned_of(x, peer, key) : NULL;
    return pin && rec_read(pin, d, state) && d->key == key;
}

/* A message from src is part way in: its cells, a buffered copy or a
 * both-copy read. */
static bool taking_in(const peer_state_t *ps)
{
    return ps->cur || ps->cur_unexp || ps->coop.on || ps->drop.on;
}

/* The first cell of src's ring still to read, or NULL. */
static cell_t *ring_head(shm_xport_t *x, int src)
{
    ring_hdr_t *ring = ring_from(x, src);
    return ring ? cell_to_read(x, &x->peers[src], ring) : NULL;
}

/* Nothing src sent waits in this rank's ring or is being taken in. */
static bool shm_drained_from(xport_t *xp, int src)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    return !taking_in(&x->peers[src]) && !ring_head(x, src);
}

/* A message from src of call key (as tags carry it: call_key_of_tag),
 * made there otherwise: the job ends. */
static int sent_otherwise_found(shm_xport_t *x, int src, uint64_t key)
{
    char fb[300];
    int me = named(x, x->base.rank), from = named(x, src);
    snprintf(fb, sizeof fb,
             "ranks %d and %d disagree on call #%u on communicator %u: rank %d sent rank %d a "
             "message of it that rank %d's call never takes (another collective, algorithm, "
             "count, datatype, op or root)",
             me, from, (unsigned)key, (unsigned)(key >> 32), from, me, me);
    return disagreement(x, src, key, fb);
}

#define NO_CALL UINT64_MAX /* look_for_proof: of calls ended well only */

/* xport.h: every message of a call carries the call's signature, so one
 * under another is proof, taken in (buffered) or not (still in its ring:
 * nobody here receives from its sender in that step); and so is one of a
 * call this rank has ended well (stale_message: it took all it expected),
 * which start_message finds only where a receive from that sender is
 * posted (a rank that ended a reduce as a leaf, and waits in other calls
 * for ranks that wait for it).  The rings are read as far as their
 * senders have written, without taking anything in.  key NO_CALL: the
 * latter only (shm_sweep). */
static int look_for_proof(shm_xport_t *x, uint64_t key, uint32_t sig, bool complete)
{
    int me = x->base.rank;
    for (int src = 0; src < x->base.size; src++) {
        peer_state_t *ps = &x->peers[src];
        for (unexp_t **pp = &ps->unexp, *u; (u = *pp);) {
            if (refused_here(x, u->tag)) { /* buffered before its call was refused */
                if (u->done == u->total && !u->waiting) {
                    *pp = u->next;
                    unexp_buf_give(x, u->data, u->cap);
                    free(u);
                } else {
                    pp = &u->next;
                }
                continue;
            }
            if (call_key_of_tag(u->tag) == key && (u->sig != sig || complete))
                return sent_otherwise_found(x, src, key);
            if (ended_well(x, me, call_key_of_tag(u->tag)))
                return stale_message(x, src, u->tag);
            pp = &u->next;
        }
        ring_hdr_t *ring = src == me ? NULL : ring_from(x, src);
        for (uint64_t i = ps->rseq; ring && i < ps->rseq + x->ncells; i++) {
            const cell_t *c = seg_cell(&x->seg, ring, (uint32_t)(i & (x->ncells - 1)));
            if (atomic_load_explicit(&c->seq, memory_order_acquire) != (uint32_t)(i + 1))
                break;
            if (refused_here(x, c->tag)) /* dropped once its turn comes (start_drop) */
                continue;
            if (call_key_of_tag(c->tag) == key && (c->sig != sig || complete))
                return sent_otherwise_found(x, src, key);
            if (ended_well(x, me, call_key_of_tag(c->tag)))
                return stale_message(x, src, c->tag);
        }
    }
    return WEFT_OK;
}

static int shm_sent_otherwise(xport_t *xp, uint64_t key, uint32_t sig, bool complete)
{
    key = (key & ~(uint64_t)UINT32_MAX) | (key & CALL_NUM_MASK); /* as tags carry it */
    return look_for_proof((shm_xport_t *)xp, key, sig, complete);
}

/* At weft_finalize, once every rank's calls have ended and their
 * messages are out: a message left of a call this rank ended well (a
 * buffered one, or one in a ring) proves a disagreement that no later call
 * from its sender came to show.  WEFT_EMISMATCH (the job ended) or
 * WEFT_OK. */
static int shm_sweep(xport_t *xp)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    pthread_mutex_lock(&x->base.lock);
    int rc = look_for_proof(x, NO_CALL, 0, false);
    pthread_mutex_unlock(&x->base.lock);
    return rc;
}

static int shm_peer_view(xport_t *xp, int peer, uint64_t key, bool quick, peer_view_t *out)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    memset(out, 0, sizeof *out);
    call_desc_t d;
    int state;
    if (rec_find(x, peer, key, &d, &state)) {
        out->found = true;
        out->state = state;
        out->call = d;
    }
    out->ended_well = ended_well(x, peer, key);
    seg_rank_t *pr = seg_rank(&x->seg, peer);
    uint64_t ctx = key >> 32, n = key & CALL_NUM_MASK,
             rw = atomic_load_explicit(&pr->refused[ctx % SEG_ENDED][n % SEG_REFUSED],
                                       memory_order_acquire);
    if (rw >> 48 == ctx && (rw >> 24 & CALL_NUM_MASK) == n) {
        out->refused = true;
        out->refused_sig24 = (uint32_t)(rw & 0xffffffu);
    }
    if (atomic_load_explicit(&pr->abandoned, memory_order_acquire)) {
        uint32_t nk = atomic_load_explicit(&pr->abandoned_keyed, memory_order_acquire);
        uint64_t ak = nk ? atomic_load_explicit(&pr->abandoned_keys[(nk - 1) % SEG_ABANDONED],
                                                memory_order_relaxed)
                         : 0;
        for (uint32_t i = 0; i < nk && i < SEG_ABANDONED; i++)
            if (atomic_load_explicit(&pr->abandoned_keys[i], memory_order_relaxed) == key)
                out->abandoned_this = true;
        call_desc_t a;
        out->abandoned = true;
        out->abandoned_found = rec_find(x, peer, ak, &a, &state);
        if (out->abandoned_found)
            out->abandoned_call = a;
    }
    if (quick)
        return WEFT_OK;
    switch (atomic_load(&pr->state)) {
    case RANK_NEW: out->rank_state = PEER_NEW; break;
    case RANK_ATTACHED: out->rank_state = PEER_ATTACHED; break;
    case RANK_FINALIZING: out->rank_state = PEER_FINALIZING; break;
    default: out->rank_state = PEER_FINALIZED; break;
    }
    if (out->rank_state == PEER_ATTACHED && !out->found && freed_before(x, peer, key))
        out->rank_state = PEER_FREED;
    call_rec_t *log = seg_calllog(&x->seg, peer);
    for (int i = 0; i < SEG_CALLLOG + SEG_CALLPIN; i++) {
        if (!rec_read(&log[i], &d, &state) || d.key >> 32 != key >> 32)
            continue;
        if (!out->any_on_ctx || (uint32_t)d.key > out->latest_seq)
            out->latest_seq = (uint32_t)d.key;
        out->any_on_ctx = true;
    }
    return WEFT_OK;
}

static void shm_note_finalize(xport_t *xp, int entering)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    atomic_store(&seg_rank(&x->seg, x->base.rank)->state,
                 entering ? RANK_FINALIZING : RANK_ATTACHED);
}

static void shm_fail_job(xport_t *xp, const char *msg)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    seg_abort(&x->seg, x->base.rank, ABORT_ERROR, msg);
    x->err = WEFT_EMISMATCH;
}

static void shm_close(xport_t *xp)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    if (x->seg.hdr) {
        atomic_store(&seg_rank(&x->seg, x->base.rank)->state, RANK_FINALIZED);
        seg_detach(&x->seg);
    }
    for (int p = 0; p < x->base.size; p++) {
        unexp_t *u = x->peers[p].unexp;
        while (u) {
            unexp_t *n = u->next;
            unexp_buf_give(x, u->data, u->cap);
            free(u);
            u = n;
        }
    }
    for (int i = 0; i < UNEXP_SPARES; i++)
        big_free(x->spare[i], x->spare_len[i]);
    for (int p = 0; p < x->base.size; p++) {
        arena_unmap_peer(x->peers[p].arena, x->peers[p].arena_span);
        for (unsigned k = 0; k < WAY_KINDS; k++)
            free(x->peers[p].ways[k]);
    }
    free(x->peers);
    free(x->bounce);
    free(x->base.mpi_world);
    pthread_mutex_destroy(&x->base.lock);
    pthread_mutex_destroy(&x->refused_lock);
    free(x);
}

static struct board_slot *shm_board_slot(xport_t *xp, int rank, unsigned i)
{
    return seg_board(&((shm_xport_t *)xp)->seg, rank, i);
}

static struct arrival_rec *shm_arrival_rec(xport_t *xp, int rank, unsigned i)
{
    return seg_arrival(&((shm_xport_t *)xp)->seg, rank, i);
}

/* As notify, one fence for all (the slot was written before): a full one
 * unless every rank to wake has the heavy side. */
static void shm_wake_ranks(xport_t *xp, const int *ranks, int n)
{
    shm_xport_t *x = (shm_xport_t *)xp;
    bool light = x->membarrier;
    for (int i = 0; i < n && light; i++)
        light = heavy_sleeper(x, ranks[i]);
    waker_fence(light);
    for (int i = 0; i < n; i++)
        if (ranks[i] != x->base.rank &&
            atomic_load_explicit(&seg_rank(&x->seg, ranks[i])->sleeping, memory_order_relaxed))
            seg_wake(&x->seg, ranks[i]);
}

static const xport_ops_t shm_ops = {
    "shm", shm_isend, shm_irecv, shm_progress, shm_block, shm_health, shm_close,
    NULL, shm_call_note, shm_peer_view, shm_note_finalize, shm_fail_job, NULL,
    shm_board_slot, shm_wake_ranks, shm_arrival_rec, shm_calls_ended, shm_drained_from,
    shm_disown, shm_sweep, shm_sent_otherwise, NULL, shm_comm_freed,
};

/* Single copy unless WEFT_CMA=0: lets peers read this process (Yama's
 * ptrace_scope 1 allows only ancestors otherwise; Open MPI's CMA path does
 * the same) and publishes the probe word.  WEFT_CMA_MIN sets the size from
 * which it is used. */
static int cma_offer(shm_xport_t *x, int size)
{
    const char *on = getenv("WEFT_CMA"), *min = getenv("WEFT_CMA_MIN");
    x->cma_min = CMA_MIN_DEFAULT;
    x->cma_min_copy = CMA_MIN_COPY_DEFAULT;
    x->cma_max_copy = CMA_MAX_COPY_DEFAULT;
    x->arena_min = ARENA_MIN_DEFAULT;
    if (on && strcmp(on, "0") && strcmp(on, "1"))
        return weft_error(WEFT_EINVAL, "WEFT_CMA=%s: want 0 (messages through shared-memory "
                          "cells only) or 1 (single copy where the kernel allows it)", on);
    if (min && *min) {
        char *e;
        unsigned long long v = strtoull(min, &e, 10);
        if (*e || *min == '-' || v == 0 || v > (1ull << 40))
            return weft_error(WEFT_EINVAL, "WEFT_CMA_MIN=%s: want a size in bytes, 1 to 2^40",
                              min);
        x->cma_min = x->cma_min_copy = x->arena_min = (size_t)v;
        x->cma_max_copy = SIZE_MAX; /* forced: every message from v bytes */
        x->forced_min = true;
    }
    if (on && !strcmp(on, "0")) {
        x->cma_min = x->cma_min_copy = x->arena_min = SIZE_MAX;
        return WEFT_OK;
    }
    const char *help = getenv("WEFT_CMA_HELP");
    if (help && *help && strcmp(help, "0") && strcmp(help, "1"))
        return weft_error(WEFT_EINVAL, "WEFT_CMA_HELP=%s: want 0 (a single-copy message is "
                          "copied by its receiver alone) or 1 (its sender copies pieces too)",
                          help);
    const char *gbps = getenv("WEFT_CELLS_SLOW_GBPS");
    x->cells_slow_gbps = CELLS_SLOW_GBPS_DEFAULT;
    if (gbps && *gbps) {
        char *e;
        double v = strtod(gbps, &e);
        if (*e || !(v >= 0 && v <= 1e6))
            return weft_error(WEFT_EINVAL, "WEFT_CELLS_SLOW_GBPS=%s: want a rate in GB/s, 0 "
                              "(never switch) to 1e6", gbps);
        x->cells_slow_gbps = v;
    }
    const char *way = getenv("WEFT_COPY_WAY");
    /* ranks that share cores measure too, from the sender's post (above) */
    x->copy_way_fixed = !x->forced_min ? 0 : -1;
    if (way && *way) {
        static const char *const names[] = {"measure", "cells", "single", "fixed"};
        static const int fixed[] = {0, COPY_WAY_CELLS, COPY_WAY_SINGLE, -1};
        int k = 0;
        while (k < 4 && strcmp(way, names[k]))
            k++;
        if (k == 4)
            return weft_error(WEFT_EINVAL, "WEFT_COPY_WAY=%s: want measure (the faster way "
                              "measured per pair and size), cells, single or fixed (the "
                              "built-in thresholds)", way);
        x->copy_way_fixed = fixed[k];
    }
    x->core_pair = size == 2 && x->cores_enough && !x->forced_min;
    x->both_copy = help && *help ? *help == '1' : x->cores_enough;
    x->help_forced = help && *help == '1';
    if (x->both_copy)
        x->cma_max_copy = SIZE_MAX;
    if (x->core_pair)
        x->cma_min_copy = CMA_MIN_COPY_SMALL;
    x->bounce = malloc(CMA_PIECE);
    if (!x->bounce)
        return weft_error(WEFT_ENOMEM, "out of memory");
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    return WEFT_OK;
}

int xport_shm_open(const char *segname, int rank, int size, xport_t **out)
{
    shm_xport_t *x = calloc(1, sizeof *x);
    if (!x)
        return weft_error(WEFT_ENOMEM, "out of memory");
    x->peers = calloc((size_t)size, sizeof *x->peers);
    if (!x->peers) {
        free(x);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    x->pid = (int32_t)getpid();
    int rc = seg_attach(segname, rank, size, &x->seg);
    if (!rc) {
        x->cores_enough = (uint32_t)size <= x->seg.hdr->cores;
        if ((rc = cma_offer(x, size)))
            seg_detach(&x->seg);
    }
    if (rc) {
        free(x->bounce);
        free(x->peers);
        free(x);
        return rc;
    }
    x->ncells = x->seg.hdr->ncells;
    x->payload = x->seg.hdr->payload;
    /* Not where ranks outnumber the cores: they sleep often there, and the
     * barriers cost more than the fences they saved (4 ranks on 2 cores,
     * an 8-byte allreduce in a loop: 9.2-10.8 us against 8.3-10.7).  Set
     * before any peer can see this rank sleep. */
    x->membarrier = x->cores_enough && membarrier_register();
    atomic_store(&seg_rank(&x->seg, rank)->membarrier, x->membarrier);
    if (x->ncells > CELLS_SMALL_P && x->cma_min == CMA_MIN_DEFAULT && !x->forced_min) {
        x->cma_min = CMA_MIN_LARGE_RINGS;
        x->cma_max_copy = CMA_MAX_COPY_LARGE_RINGS;
    }
    if (x->cma_min != SIZE_MAX) {
        cma_probe_word = (uint64_t)(uint32_t)x->pid ^ SEG_MAGIC;
        seg_rank(&x->seg, rank)->probe = (uint64_t)(uintptr_t)&cma_probe_word;
        /* peers map this process's arena: weft_alloc'd buffers are read in place */
        arena_info_t ai;
        rc = arena_open(&ai);
        if (rc == WEFT_EINVAL) { /* a bad WEFT_ARENA_MAX */
            seg_detach(&x->seg);
            free(x->bounce);
            free(x->peers);
            free(x);
            return rc;
        }
        if (rc == WEFT_OK) {
            seg_rank(&x->seg, rank)->arena_fd = ai.fd;
            seg_rank(&x->seg, rank)->arena_span = ai.span;
            x->base.arena_reads_from = x->arena_min;
        }
        weft_error_clear(); /* without an arena, messages take the other paths */
    }
    x->base.ops = &shm_ops;
    x->base.rank = rank;
    x->base.size = size;
    x->base.local_size = size; /* one node: every rank shares its cores */
    x->base.cores = (int)x->seg.hdr->cores;
    x->base.board_payload = x->seg.hdr->board_payload;
    x->base.tag_limit = 1u << 24;
    pthread_mutex_init(&x->base.lock, NULL);
    pthread_mutex_init(&x->refused_lock, NULL);
    *out = &x->base;
    return WEFT_OK;
}

/* ---- the transport of a one-rank job: no peer exists ---- */

static int self_comm(xport_t *x, xreq_t *r)
{
    return weft_error(WEFT_EINTERNAL, "message to rank %d in a job of one rank", r->peer);
}
static int self_progress(xport_t *x) { return 0; }
static void self_block(xport_t *x, int t) {}
static int self_health(xport_t *x) { return WEFT_OK; }
static void self_close(xport_t *x)
{
    free(x->mpi_world);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

static const xport_ops_t self_ops = {
    "self", self_comm, self_comm, self_progress, self_block, self_health, self_close,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int xport_self_open(xport_t **out)
{
    xport_t *x = calloc(1, sizeof *x);
    if (!x)
        return weft_error(WEFT_ENOMEM, "out of memory");
    x->ops = &self_ops;
    x->rank = 0;
    x->size = 1;
    x->local_size = 1;
    x->tag_limit = 1u << 24;
    pthread_mutex_init(&x->lock, NULL);
    *out = x;
    return WEFT_OK;
}
