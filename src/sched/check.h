/* check.h — the symbolic schedule checker.
 *
 * Runs the schedules of all P ranks of one collective together, without
 * data: every element of every buffer holds (which element of the logical
 * vector it is, which ranks' contributions it combines).  Message passing
 * is modelled synchronously (a send completes only when its receive has
 * been posted and matched), the strictest model, so a schedule that passes
 * cannot deadlock on any transport.  It fails with the first wrong step:
 * a contribution combined twice (unless the op may be idempotent), one
 * taken out that is not there (or with an inverse the op lacks), ranks
 * combined out of order (when the algorithm claims non-commutative ops),
 * elements of different positions combined, uninitialised data sent or
 * used, a region out of bounds or a write to the input, a data race with an
 * in-flight message, a size mismatch, a message nobody receives, a deadlock,
 * or a rank that ends without the result the collective defines. */
#ifndef WEFT_CHECK_H
#define WEFT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"
#include "weft.h"

typedef struct check_spec {
    weft_coll_t coll;
    int nrank;
    uint64_t count;
    int root;
    bool idempotent; /* the op may be applied to a contribution twice */
    bool ordered;    /* contributions must combine in rank order */
    bool inplace;    /* every rank runs with WEFT_IN_PLACE */
    bool invertible; /* the op has an exact inverse (STEP_INVERSE allowed) */
    /* optional: called for every message delivered, with the contributor
     * set of its first element (bit r of bits[r / 64] for rank r) */
    void (*on_transfer)(void *ctx, int from, int to, uint32_t to_step, uint64_t len,
                        const uint64_t *bits);
    void *trace_ctx;
} check_spec_t;

/* Builds rank's schedule with builder b (reset for rank, reused from rank
 * to rank) and commits it into *out; returns a weft error code. */
typedef int (*check_build_fn)(void *ctx, int rank, sched_t *b, sched_img_t **out);

typedef struct check_stats {
    uint64_t steps, messages, elements_moved;
} check_stats_t;

/* 0 when correct; otherwise WEFT_EINVAL (or the builder's error) and a
 * one-line explanation in msg. */
int sched_check(const check_spec_t *spec, check_build_fn build, void *ctx,
                char *msg, size_t msglen, check_stats_t *stats);

#endif
