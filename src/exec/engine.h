/* engine.h — the progress engine: runs one rank's schedule over a transport,
 * non-blocking.  exec_progress does whatever can be done now and returns;
 * blocking calls loop on it with exec_wait, split-phase calls call it from
 * weft_test. */
#ifndef WEFT_ENGINE_H
#define WEFT_ENGINE_H

#include "../core/core.h"
#include "../sched/sched.h"
#include "../xport/xport.h"

typedef struct exec {
    const sched_t *s;
    xport_t *x;
    const int *world; /* communicator rank -> transport rank */
    char *buf[BUF_COUNT];
    reducer_t red;
    size_t esize;
    uint64_t tagbase;
    uint32_t sig;
    /* per-step state, sized for s->nsteps */
    uint32_t *pending;
    uint32_t *ready;
    uint32_t rhead, rtail;
    xreq_t *reqs;
    uint32_t cap;
    uint32_t ndone;
    char *tmp; /* scratch, s->tmp_len elements */
    size_t tmp_bytes;
    int err;
    int moved; /* the last exec_progress did something */
} exec_t;

/* Sizes the per-step arrays and scratch for s (reusing earlier memory). */
int exec_prepare(exec_t *e, const sched_t *s, size_t esize);
void exec_release(exec_t *e);
/* Starts the schedule; in/out are the caller's buffers. */
int exec_start(exec_t *e, const void *in, void *out);
/* 1 when finished, 0 when not yet, a negative weft error on failure.
 * Caller holds e->x->lock. */
int exec_progress(exec_t *e);
/* Blocks until finished or failed (takes the lock itself).  timeout_ms < 0:
 * no limit; otherwise returns WEFT_ETIMEDOUT when it runs out. */
int exec_wait(exec_t *e, int timeout_ms);

#endif
