/* evq.h — the simulator's event queue: a radix heap (Ahuja, Mehlhorn, Orlin
 * and Tarjan, "Faster algorithms for the shortest path problem", 1990)
 * keyed by the bits of an event's time.
 *
 * A non-negative double's bits, read as an integer, order as the double
 * does.  Time never goes back in a discrete-event simulation, so every key
 * pushed is at least `last`, the key popped last.  Bucket 0 holds the
 * events whose key is last, in the order they came; bucket b > 0 those whose
 * key first differs from last at bit b - 1.  A pop takes bucket 0's oldest
 * or, when it is empty, moves the smallest non-empty bucket's events down
 * by its smallest key, the new last.  An event moves at most 64 times, in
 * practice a few, always in sequential scans: none of a binary heap's cache
 * misses per level, which took three quarters of a large run's time.
 *
 * Ties: every event of one key is in one bucket (the bucket is a function
 * of the key and last), and a move keeps the order of the bucket it
 * empties, so events of equal time pop in the order they were pushed, as
 * LogGOPSim's heap (time, then insertion) pops them: the simulator's times
 * depend on that order. */
#ifndef WEFT_SIM_EVQ_H
#define WEFT_SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct evq_item {
    double t;
    uint32_t a, b; /* the caller's */
} evq_item_t;

#define EVQ_BUCKETS 65
/* A bucket is a chain of blocks of 255 events (4 KiB), taken from and given
 * back to one free list: a bucket that empties frees its blocks as it is
 * read, and the buckets that fill from it take them back while they are
 * still in the cache.  The queue holds about as many blocks as events were
 * ever queued at once (arrays, regrown by each bucket in turn, were copied
 * at every doubling and faulted their pages in again each time: 72 M page
 * faults in the 2^24-rank run). */
#define EVQ_BLOCK 255
typedef struct evq_block {
    struct evq_block *next;
    uint64_t pad;
    evq_item_t it[EVQ_BLOCK];
} evq_block_t;

typedef struct evq_slab {
    struct evq_slab *next;
    size_t nblk;
    evq_block_t blk[];
} evq_slab_t;

typedef struct evq {
    evq_block_t *head[EVQ_BUCKETS], *tail[EVQ_BUCKETS];
    uint32_t tail_n[EVQ_BUCKETS]; /* events in the tail block */
    uint32_t head0;               /* bucket 0's next event, in its head block */
    uint64_t min[EVQ_BUCKETS];    /* the smallest key in each bucket */
    uint64_t used[2];             /* bit b: bucket b is not empty */
    uint64_t last;
    evq_block_t *free;  /* blocks no bucket holds */
    evq_slab_t *slabs;  /* where the blocks come from */
    size_t size;  /* events queued */
    size_t bytes; /* memory held */
} evq_t;

static inline uint64_t evq_key(double t)
{
    uint64_t k;
    t += 0.0; /* -0 becomes +0 */
    memcpy(&k, &t, sizeof k);
    return k;
}

static inline double evq_key_time(uint64_t k)
{
    double t;
    memcpy(&t, &k, sizeof t);
    return t;
}

static inline int evq_bucket(uint64_t key, uint64_t last)
{
    return key == last ? 0 : 64 - __builtin_clzll(key ^ last);
}

static inline void evq_mark(evq_t *q, int b, bool on)
{
    if (on)
        q->used[b >> 6] |= 1ull << (b & 63);
    else
        q->used[b >> 6] &= ~(1ull << (b & 63));
}

static inline bool evq_used(const evq_t *q, int b)
{
    return q->used[b >> 6] >> (b & 63) & 1;
}

/* A block from the free list, or from a new slab (16 blocks, doubling to
 * 512: 2 MiB); NULL when out of memory. */
static inline evq_block_t *evq_block_get(evq_t *q)
{
    if (!q->free) {
        size_t nblk = q->slabs ? q->slabs->nblk * 2 : 16;
        if (nblk > 512)
            nblk = 512;
        evq_slab_t *sl = (evq_slab_t *)malloc(sizeof *sl + nblk * sizeof(evq_block_t));
        if (!sl)
            return NULL;
        sl->next = q->slabs, sl->nblk = nblk;
        q->slabs = sl;
        q->bytes += sizeof *sl + nblk * sizeof(evq_block_t);
        for (size_t i = nblk; i-- > 0;)
            sl->blk[i].next = q->free, q->free = &sl->blk[i];
    }
    evq_block_t *blk = q->free;
    q->free = blk->next;
    blk->next = NULL;
    return blk;
}

static inline void evq_block_put(evq_t *q, evq_block_t *blk)
{
    blk->next = q->free;
    q->free = blk;
}

static inline int evq_append(evq_t *q, int b, evq_item_t e, uint64_t key)
{
    evq_block_t *t = q->tail[b];
    if (!t || q->tail_n[b] == EVQ_BLOCK) {
        evq_block_t *nb = evq_block_get(q);
        if (!nb)
            return -1;
        if (t)
            t->next = nb;
        else
            q->head[b] = nb;
        q->tail[b] = t = nb;
        q->tail_n[b] = 0;
    }
    if (!evq_used(q, b) || key < q->min[b])
        q->min[b] = key;
    t->it[q->tail_n[b]++] = e;
    evq_mark(q, b, true);
    return 0;
}

/* Bucket 0 holds no event that is not popped yet. */
static inline bool evq_empty0(const evq_t *q)
{
    return q->head[0] == q->tail[0] && q->head0 == q->tail_n[0];
}

/* Queues e: 0; -1 when out of memory; -2 when e.t is before the time
 * popped last, or not a non-negative number (the queue is unchanged). */
static inline int evq_push(evq_t *q, evq_item_t e)
{
    if (!(e.t >= 0))
        return -2;
    uint64_t key = evq_key(e.t);
    if (key < q->last)
        return -2;
    if (evq_append(q, evq_bucket(key, q->last), e, key))
        return -1;
    q->size++;
    return 0;
}

/* Makes bucket 0 hold the earliest events (q must not be empty); -1 when
 * out of memory. */
static inline int evq_settle(evq_t *q)
{
    if (!evq_empty0(q))
        return 0;
    q->head0 = q->tail_n[0] = 0; /* its one block, if any, is reused */
    evq_mark(q, 0, false);
    int b = q->used[0] ? __builtin_ctzll(q->used[0]) : 64 + __builtin_ctzll(q->used[1]);
    q->last = q->min[b];
    evq_block_t *blk = q->head[b], *tail = q->tail[b];
    uint32_t tail_n = q->tail_n[b];
    q->head[b] = q->tail[b] = NULL, q->tail_n[b] = 0;
    evq_mark(q, b, false);
    /* every event of bucket b goes to a lower bucket, in order; each block
     * read is free for the appends that follow */
    while (blk) {
        uint32_t n = blk == tail ? tail_n : EVQ_BLOCK;
        for (uint32_t i = 0; i < n; i++) {
            evq_item_t e = blk->it[i];
            uint64_t key = evq_key(e.t);
            if (evq_append(q, evq_bucket(key, q->last), e, key))
                return -1;
        }
        evq_block_t *next = blk->next;
        evq_block_put(q, blk);
        blk = next;
    }
    return 0;
}

/* The earliest event's time (q must not be empty), leaving last as it is:
 * events may still be pushed at any time from the one popped last. */
static inline double evq_peek_time(const evq_t *q)
{
    if (!evq_empty0(q))
        return evq_key_time(q->last);
    uint64_t low = q->used[0] & ~1ull;
    int b = low ? __builtin_ctzll(low) : 64 + __builtin_ctzll(q->used[1]);
    return evq_key_time(q->min[b]);
}

/* Takes the earliest event, the oldest of equal time, into *e (q must not
 * be empty): 0, or -1 when out of memory. */
static inline int evq_pop(evq_t *q, evq_item_t *e)
{
    if (evq_settle(q))
        return -1;
    q->size--;
    *e = q->head[0]->it[q->head0++];
    if (q->head0 == EVQ_BLOCK) { /* the head block is read */
        if (q->head[0] != q->tail[0]) {
            evq_block_t *done = q->head[0];
            q->head[0] = done->next, q->head0 = 0;
            evq_block_put(q, done);
        } else { /* bucket 0 is empty: its block is reused */
            q->head0 = q->tail_n[0] = 0;
        }
    }
    return 0;
}

/* The event k places after the next one to pop, if it is of the same
 * time (already in bucket 0); else NULL.  For look-ahead only. */
static inline const evq_item_t *evq_ahead(const evq_t *q, size_t k)
{
    size_t i = q->head0 + k;
    const evq_block_t *h = q->head[0];
    if (h == q->tail[0]) /* the usual case: one block */
        return i < q->tail_n[0] ? &h->it[i] : NULL;
    if (i < EVQ_BLOCK)
        return &h->it[i];
    for (const evq_block_t *blk = h; blk; blk = blk->next) {
        size_t n = blk == q->tail[0] ? q->tail_n[0] : EVQ_BLOCK;
        if (i < n)
            return &blk->it[i];
        if (blk == q->tail[0])
            return NULL;
        i -= n;
    }
    return NULL;
}

static inline void evq_free(evq_t *q)
{
    while (q->slabs) {
        evq_slab_t *sl = q->slabs;
        q->slabs = sl->next;
        free(sl);
    }
    memset(q, 0, sizeof *q);
}

#endif
