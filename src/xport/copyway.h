/* copyway.h — which way a message goes between two ranks of the
 * shared-memory transport: through the pair's cells (sender copies in,
 * receiver copies or reduces out, at once) or by single copy (the
 * receiver reads the sender's buffer, the sender writing pieces too).
 * Five kinds are measured, each in its own copy_ways_t: copy-only
 * messages of 64 KiB or more, reducing messages of 64 KiB or more from a
 * sender that is busy in its call (an allreduce's: it receives too), the
 * same for copy-only messages (an allgather's, where ranks have cores), and
 * between two ranks an idle sender's reducing messages of 8-64 KiB and
 * copy-only ones of 16-64 KiB (shm.c, "Copies measured").  Which way is
 * faster depends on the machine, by 1.5-6x either way, so the receiver
 * times both and the sender follows its verdict, trying the other way now
 * and then.  The decision is kept apart from the transport so that tests
 * can drive it with chosen times. */
#ifndef WEFT_COPYWAY_H
#define WEFT_COPYWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/tool_api.h"

/* The kinds, and the sizes each is measured from */
enum {
    WAY_COPY = 0,
    WAY_REDUCE = 1,
    WAY_SMALL_COPY = 2,
    WAY_REDUCE_BUSY = 3,
    WAY_COPY_BUSY = 4,
    WAY_KINDS = 5
};
#define COPY_WAY_MIN (64u << 10)      /* WAY_COPY: copies from here, any ranks */
#define REDUCE_BUSY_WAY_MIN (64u << 10) /* WAY_REDUCE_BUSY: from here, ranks with cores */
#define COPY_BUSY_WAY_MIN (64u << 10)   /* WAY_COPY_BUSY: the same */
#define REDUCE_WAY_MIN (8u << 10)     /* WAY_REDUCE: an idle sender's, 2 ranks, .. */
#define REDUCE_WAY_MAX (64u << 10)    /* .. to here (included) */
#define SMALL_COPY_WAY_MIN (16u << 10) /* WAY_SMALL_COPY: 2 ranks, to COPY_WAY_MIN */
#define COPY_WAY_BUCKETS 12 /* powers of two from the kind's least: 64 KiB .. 64 MiB and more */
#define COPY_WAY_SAMPLES 3  /* a way's figure: the best (or mean) of its latest three */
#define COPY_WAY_NEEDED 2   /* samples of each way before a verdict */

/* The kinds below COPY_WAY_MIN, timed from when both sides are in the
 * call and judged by the mean of their samples (typical, below). */
static inline bool way_kind_small(unsigned kind)
{
    return kind == WAY_REDUCE || kind == WAY_SMALL_COPY;
}

/* The kinds whose sender is busy in its call too (it receives as it
 * sends): judged by the work both cores spend on a message (shm.c,
 * "Copies measured"). */
static inline bool way_kind_busy(unsigned kind)
{
    return kind == WAY_REDUCE_BUSY || kind == WAY_COPY_BUSY;
}

/* A verdict as the receiver publishes it (one byte a bucket in the ring
 * header): the way, and whether it won by far (the other way is then
 * tried less often). */
enum { COPY_WAY_UNKNOWN = 0, COPY_WAY_CELLS = 1, COPY_WAY_SINGLE = 2, COPY_WAY_CLEAR = 4 };
/* Never published: copy_way_prior's mark on a verdict carried from a
 * smaller size (the bucket has none of its own yet) */
#define COPY_WAY_CARRIED 8u
#define COPY_WAY_OF(v) ((v) & 3u)

/* A way is timed only on a copy that follows one of the same size that
 * went the same way: a copy after one the other way finds the caches as
 * that way left them.  A 2-rank bcast of 16 MiB by single copy took
 * 1.9-2.0 ms right after two through cells (whose streaming stores had
 * evicted its destination), 1.6-1.9 as the second in a row, then 1.4,
 * 1.2, 1.0 and 0.92-1.03 from the fifth on; through cells 2.4-2.7 ms.
 * So a way is tried COPY_WAY_RUN copies in a row, all but the first timed:
 * until a verdict, the two ways take turns, the one the fixed rule does
 * not take first; after it, the other way has one run in COPY_WAY_RETRY
 * copies (COPY_WAY_RETRY_CLEAR when the winner was at least
 * COPY_WAY_CLEAR_RATIO times faster, COPY_WAY_RETRY_CARRIED while the
 * verdict is one carried from a smaller size), so that a change of
 * phase is noticed.  The doubtful way goes first so that its run falls
 * among a caller's first calls, which benchmarks leave out as warm-up
 * and which fault pages in anyway: a 2-rank bcast of 16 MiB in `weft
 * bench` (two warm-up calls, five timed) had the rule's way (cells, 0.6
 * ms) in calls 0-2 and single copy (1.1-1.4 ms) in 3-5, so its median
 * was single copy's.  The winner changes only when the other way is
 * COPY_WAY_SWITCH_RATIO times faster (no flapping on noise).  Once there
 * is a verdict only the winner's run just before the other way's and that
 * run are timed: two clock reads a message are 5-8 % of an 8 KiB reduce
 * here, and both ways' figures then come from the same moment. */
#define COPY_WAY_RUN 3u
#define COPY_WAY_RETRY 64u
#define COPY_WAY_RETRY_CLEAR 256u
#define COPY_WAY_RETRY_CARRIED 16u
#define COPY_WAY_CLEAR_RATIO 1.5
#define COPY_WAY_SWITCH_RATIO 1.1
/* The small kinds (WAY_REDUCE, WAY_SMALL_COPY) take the mean (typical):
 * their clock starts once both sides are in the call, so a sender that
 * came first has filled the cells and the receiver only drains them,
 * which is the fastest sample cells ever give; the best of three picked
 * those where most calls went the other way (shm.c, "Copies measured"). */

typedef struct copy_ways {
    uint32_t min; /* the smallest size measured (bucket 0's); 0: COPY_WAY_MIN */
    bool typical; /* a way's figure: the mean of its samples, not the best */
    /* the first round of turns (2 * COPY_WAY_RUN messages a bucket) is not
     * timed: a busy sender's first reducing messages by single copy ran at
     * 2.3-2.8 GB/s, at 6-10 from then on (the Intel VM), and a clear
     * verdict from them would stand for COPY_WAY_RETRY_CLEAR messages */
    bool settle;
    /* the receiver's: each way's latest samples per bucket, ns per KiB */
    uint32_t ns_kib[COPY_WAY_BUCKETS][2][COPY_WAY_SAMPLES];
    uint8_t taken[COPY_WAY_BUCKETS][2]; /* samples held, up to COPY_WAY_SAMPLES */
    uint8_t next[COPY_WAY_BUCKETS][2];  /* the slot the next sample takes */
    uint8_t last[COPY_WAY_BUCKETS];     /* the way the bucket's last copy went */
    uint8_t verdict[COPY_WAY_BUCKETS];
    /* the sender's: measured copies sent per bucket */
    uint32_t sent[COPY_WAY_BUCKETS];
} copy_ways_t;

/* The bucket of a message of bytes in w, whose buckets start at w->min. */
WEFT_TOOL_API unsigned copy_way_bucket_of(const copy_ways_t *w, size_t bytes);
/* The sender: whether this message of bytes goes by single copy, given the
 * receiver's published verdict and the transport's fixed rule; *timed
 * (may be NULL): whether its receiver is to time it. */
WEFT_TOOL_API bool copy_way_single(copy_ways_t *w, unsigned verdict, size_t bytes,
                                   bool by_default, bool *timed);
/* The verdict the sender follows in bucket b, given every bucket's
 * published verdict (b + 1 of them): b's own; else, when the nearest
 * smaller size with a verdict has a clear one, that way, marked
 * COPY_WAY_CARRIED (not clear); else none.  A bucket without its own
 * would take turns, three copies each way, until it had one, and a job
 * that makes few large calls (a benchmark's five bcasts of 16 MiB) spends
 * several of them on the slower way, where a way that won by 1.5x at the
 * size below often wins again.  A close verdict is not followed: near it
 * the ways cross.  Where each rank has a core (any_distance false) only a
 * verdict of the next smaller size (half) is: the ways cross where a
 * message outgrows a cache (2 ranks on the AMD VM: single copy 1.1-1.5x
 * faster from 512 KiB to 2 MiB, cells 1.5-2.4x from 8 MiB), and single
 * copy's clear win at 1 MiB, carried to 16 MiB, made a `weft run` bcast
 * of 16 MiB 1.9x slower.  Where ranks share cores, from any smaller
 * size: single copy loses there at every size, 3-5x, each rendezvous
 * waiting for its reader to be scheduled.  A carried verdict has the
 * other way tried three copies in every COPY_WAY_RETRY_CARRIED, which
 * gives the bucket its own verdict soon. */
WEFT_TOOL_API unsigned copy_way_prior(const uint8_t *verdicts, unsigned b, bool any_distance);
/* The receiver: a copy of bytes went way (COPY_WAY_CELLS or _SINGLE) and
 * took ns from the moment it could start to its last byte (counted only
 * after a copy of its size that went the same way).  Returns the bucket's
 * verdict after it; *best_ns_kib (may be NULL) gets each way's figure. */
WEFT_TOOL_API unsigned copy_way_sample(copy_ways_t *w, size_t bytes, unsigned way, uint64_t ns,
                                       uint32_t best_ns_kib[2]);

#endif
