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
typedef struct evq {
    evq_item_t *v[EVQ_BUCKETS];
    size_t n[EVQ_BUCKETS], cap[EVQ_BUCKETS];
    uint64_t min[EVQ_BUCKETS]; /* the smallest key in each bucket */
    uint64_t used[2];          /* bit b: bucket b is not empty */
    size_t head0;              /* bucket 0's next event */
    uint64_t last;
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

static inline int evq_append(evq_t *q, int b, evq_item_t e, uint64_t key)
{
    if (q->n[b] == q->cap[b]) {
        size_t nc = q->cap[b] ? q->cap[b] * 2 : 256;
        evq_item_t *v = (evq_item_t *)realloc(q->v[b], nc * sizeof *v);
        if (!v)
            return -1;
        q->bytes += (nc - q->cap[b]) * sizeof *v;
        q->v[b] = v, q->cap[b] = nc;
    }
    if (!q->n[b] || key < q->min[b])
        q->min[b] = key;
    q->v[b][q->n[b]++] = e;
    evq_mark(q, b, true);
    return 0;
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
    if (q->head0 < q->n[0])
        return 0;
    q->n[0] = q->head0 = 0;
    evq_mark(q, 0, false);
    int b = q->used[0] ? __builtin_ctzll(q->used[0]) : 64 + __builtin_ctzll(q->used[1]);
    q->last = q->min[b];
    size_t n = q->n[b];
    q->n[b] = 0;
    evq_mark(q, b, false);
    /* every event of bucket b goes to a lower bucket, so its array is read
     * while the others grow */
    for (size_t i = 0; i < n; i++) {
        evq_item_t e = q->v[b][i];
        uint64_t key = evq_key(e.t);
        if (evq_append(q, evq_bucket(key, q->last), e, key))
            return -1;
    }
    /* An emptied bucket gives its array back: each bucket fills at its own
     * time, and arrays kept at their peaks held 16 times the most events
     * ever queued at once.  Regrowing costs as much as filling did. */
    if (q->cap[b] > 4096) {
        free(q->v[b]);
        q->bytes -= q->cap[b] * sizeof *q->v[b];
        q->v[b] = NULL, q->cap[b] = 0;
    }
    return 0;
}

/* The earliest event's time (q must not be empty), leaving last as it is:
 * events may still be pushed at any time from the one popped last. */
static inline double evq_peek_time(const evq_t *q)
{
    if (q->head0 < q->n[0])
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
    *e = q->v[0][q->head0++];
    return 0;
}

/* The event k places after the next one to pop, if it is of the same
 * time (already in bucket 0); else NULL.  For look-ahead only. */
static inline const evq_item_t *evq_ahead(const evq_t *q, size_t k)
{
    return q->head0 + k < q->n[0] ? &q->v[0][q->head0 + k] : NULL;
}

static inline void evq_free(evq_t *q)
{
    for (int b = 0; b < EVQ_BUCKETS; b++)
        free(q->v[b]);
    memset(q, 0, sizeof *q);
}

#endif
