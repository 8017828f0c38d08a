/* engine.c — executes a schedule (sched.h) over a transport (xport.h).
 *
 * Steps whose dependencies are complete enter a FIFO ready queue.  Local
 * steps (copy, reduce, nop) run at once; sends and receives are posted to
 * the transport, whose completion callbacks only enqueue successors, so the
 * transport is never re-entered from a callback.  The waiting policy lives
 * in exec_wait: poll, then yield, then sleep on the transport's doorbell, so
 * that more ranks than cores still make progress. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../algo/algo.h" /* coll_is_reduction */
#include "../core/copy.h"
#include "engine.h"

int exec_reserve(exec_t *e, uint32_t n)
{
    n = n ? n : 1;
    if (n > e->cap) {
        free(e->pending), free(e->ready), free(e->reqs);
        e->pending = malloc(n * sizeof *e->pending);
        e->ready = malloc(n * sizeof *e->ready);
        e->reqs = malloc(n * sizeof *e->reqs);
        if (!e->pending || !e->ready || !e->reqs) {
            e->cap = 0;
            return weft_error(WEFT_ENOMEM, "out of memory for a schedule of %u steps", n);
        }
        e->cap = n;
    }
    return WEFT_OK;
}

int exec_reserve_tmp(exec_t *e, size_t bytes)
{
    if (bytes > e->tmp_bytes) {
        free(e->tmp);
        e->tmp = malloc(bytes);
        if (!e->tmp) {
            e->tmp_bytes = 0;
            return weft_error(WEFT_ENOMEM, "out of memory for %zu bytes of scratch", bytes);
        }
        e->tmp_bytes = bytes;
    }
    return WEFT_OK;
}

/* round_left for s's rounds */
static int reserve_rounds(exec_t *e, const sched_img_t *s)
{
    if (s->nrounds > e->rcap) {
        free(e->round_left);
        if (!(e->round_left = malloc(s->nrounds * sizeof *e->round_left))) {
            e->rcap = 0;
            return weft_error(WEFT_ENOMEM, "out of memory for a schedule of %u rounds",
                              s->nrounds);
        }
        e->rcap = s->nrounds;
    }
    return WEFT_OK;
}

int exec_prepare(exec_t *e, const sched_img_t *s, size_t esize)
{
    int rc = exec_reserve(e, s->nsteps);
    if (!rc)
        rc = reserve_rounds(e, s);
    if (!rc)
        rc = exec_reserve_tmp(e, s->tmp_len * esize);
    if (rc)
        return rc;
    e->s = s;
    e->esize = esize;
    return WEFT_OK;
}

/* The unfinished split-phase schedules of the process, over every
 * transport (communicators from weft_comm_dup under MPI each have their
 * own).  Lock order: a transport's lock, then this one; other transports'
 * locks are only tried under it, never waited for. */
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static exec_t *active;

static void unlist(exec_t *e)
{
    pthread_mutex_lock(&active_lock);
    if (e->listed) {
        if (e->aprev)
            e->aprev->anext = e->anext;
        else /* atomic: exec_wait peeks at it without the lock */
            __atomic_store_n(&active, e->anext, __ATOMIC_RELAXED);
        if (e->anext)
            e->anext->aprev = e->aprev;
        e->anext = e->aprev = NULL;
        e->listed = false;
    }
    pthread_mutex_unlock(&active_lock);
}

void exec_for_each_active(void (*fn)(exec_t *e, void *arg), void *arg)
{
    pthread_mutex_lock(&active_lock);
    for (exec_t *e = active; e; e = e->anext)
        fn(e, arg);
    pthread_mutex_unlock(&active_lock);
}

/* Moves the other listed schedules that have work ready, and the other
 * listed board calls; the caller holds its own transport's lock.  1 if
 * any moved. */
static int progress_others(exec_t *self)
{
    int moved = 0;
    /* a board call polls no transport, and the schedules in flight below
     * move only on their messages (an adaptive call that became one, say) */
    if (self->board && self->x->ops->progress(self->x) > 0)
        moved = 1;
    pthread_mutex_lock(&active_lock);
    for (exec_t *o = active; o; o = o->anext) {
        if (o == self)
            continue;
        if (o->x == self->x && o->board) {
            /* nothing moves a board call but its own progress: a rank
             * waiting on its second of two split-phase board calls must
             * still post the first, which its peers may be waiting for */
            if (!o->board_rc && (exec_progress(o) != 0 || o->moved))
                moved = 1;
        } else if (o->x == self->x) {
            if (o->rhead < o->rtail && exec_progress(o) == 0 && o->moved)
                moved = 1;
        } else if (pthread_mutex_trylock(&o->x->lock) == 0) {
            /* another transport: its messages move only when polled */
            if (exec_progress(o) == 0 && o->moved)
                moved = 1;
            pthread_mutex_unlock(&o->x->lock);
        }
    }
    pthread_mutex_unlock(&active_lock);
    return moved;
}

int exec_test(exec_t *e)
{
    int rc = exec_progress(e);
    /* as a wait does: a call in flight that this one waits behind (an
     * arrival-driven call's ticket, a board post) moves only so */
    if (rc == 0 && __atomic_load_n(&active, __ATOMIC_RELAXED) && progress_others(e))
        rc = exec_progress(e);
    return rc;
}

void exec_release(exec_t *e)
{
    if (e->listed)
        unlist(e);
    sched_img_free(e->aux);
    free(e->pending), free(e->round_left), free(e->ready), free(e->reqs), free(e->tmp);
    free(e->orphan);
    free(e->errmsg);
    memset(e, 0, sizeof *e);
}

static inline void enqueue(exec_t *e, uint32_t i) { e->ready[e->rtail++] = i; }

#define STEP_DONE UINT32_MAX      /* pending[i] of a completed step */
#define STEP_UNRUN (UINT32_MAX - 1) /* of a ready one a failed call never ran */

static void complete(exec_t *e, uint32_t i)
{
    const sched_img_t *s = e->s;
    e->ndone++;
    e->pending[i] = STEP_DONE;
    uint32_t k, end, first;
    for (sched_succ(s, i, &k, &end); k < end; k++) {
        uint32_t j = s->succ[k];
        if (--e->pending[j] == 0)
            enqueue(e, j);
    }
    for (uint32_t n = sched_round_done(s, e->round_left, i, &first), j = first; j < first + n; j++)
        if (--e->pending[j] == 0)
            enqueue(e, j);
}

void exec_fail(exec_t *e, int code)
{
    if (!code || (e->err && (e->errmsg || e->err != code)))
        return;
    /* (an algorithm's own progress may have set err itself, in this
     * thread: its message is still the one here) */
    e->err = code;
    e->errmsg = strdup(weft_last_error());
}

int exec_error_here(const exec_t *e, int code)
{
    if (code && code == e->err && e->errmsg && strcmp(e->errmsg, weft_last_error()))
        return weft_error(code, "%s", e->errmsg);
    return code;
}

static void on_comm_done(xreq_t *r, int err)
{
    exec_t *e = r->owner;
    exec_fail(e, err);
    uint32_t i = (uint32_t)(r - e->reqs);
    if (sched_step_kind(e->s, i) != STEP_SEND)
        e->recvs_left--;
    complete(e, i);
}

/* The steps that depend on nothing start the schedule. */
static void enqueue_roots(exec_t *e, const sched_img_t *s)
{
    e->rhead = e->rtail = 0;
    e->ndone = 0;
    e->recvs_left = s->nrecvs;
    for (uint32_t r = 0; r < s->nrounds; r++)
        e->round_left[r] = sched_round_size(s, r);
    for (uint32_t i = 0; i < s->nsteps; i++) {
        e->pending[i] = sched_step_waits(s, i);
        e->reqs[i].sink.seed = NULL; /* fuse_copy sets it for this call only */
        if (!e->pending[i])
            enqueue(e, i);
    }
}

int exec_switch_to_schedule(exec_t *e, const sched_img_t *s)
{
    int rc = exec_prepare(e, s, e->esize);
    if (rc)
        return rc;
    e->abandon_switched = e->board ? e->board->abandon : NULL;
    e->board = NULL;
    e->buf[BUF_TMP] = e->tmp_shared ? e->tmp_shared : e->tmp;
    enqueue_roots(e, s);
    return WEFT_OK;
}

int exec_start(exec_t *e, const void *in, void *out, bool list)
{
    const sched_img_t *s = e->s;
    xport_t *x = e->x;
    if (e->desc && x->ops->call_note)
        x->ops->call_note(x, e->desc, CALL_STARTED);
    e->expired = false;
    e->pinned = false;
    e->t_start = 0;
    e->next_watch = 0;
    e->idle = 0;
    e->buf[BUF_IN] = (char *)in;
    e->buf[BUF_OUT] = out;
    e->err = 0; /* before start, which may set it */
    free(e->errmsg);
    e->errmsg = NULL;
    e->board_rc = 0;
    e->arrival_state = ARRIVAL_NONE; /* (the start may enlist it) */
    e->ar.nreq = 0; /* what a failed call gives back (an arrival-driven one posts) */
    e->abandon_switched = NULL;
    if (e->board)
        e->board->start(e);
    e->buf[BUF_TMP] = e->tmp_shared ? e->tmp_shared : e->tmp;
    enqueue_roots(e, s);
    if (list) { /* last: from here on other threads' waits may progress it */
        pthread_mutex_lock(&active_lock);
        e->aprev = NULL;
        e->anext = active;
        if (active)
            active->aprev = e;
        __atomic_store_n(&active, e, __ATOMIC_RELEASE);
        e->listed = true;
        pthread_mutex_unlock(&active_lock);
    }
    return WEFT_OK;
}

int exec_finish(exec_t *e, int rc)
{
    xport_t *x = e->x;
    if (e->listed)
        unlist(e);
    if (!rc && e->sent_to && e->sent_to[0] >= 0)
        rc = watch_sent(e);
    if (rc && e->board && e->board->abandon)
        e->board->abandon(e);
    else if (rc && !e->board && e->abandon_switched)
        e->abandon_switched(e); /* adaptive's balanced schedule: its ticket held the
                                 * record for ever, and the communicator's call two
                                 * on waited for it on every rank */
    if (rc && e->desc && x->ops->call_note) {
        /* unlisted, and what it held given back (above): it never moves
         * again, which its record says with the state (CALL_GAVE_UP) */
        call_desc_t d = *e->desc;
        d.flags |= CALL_GAVE_UP;
        x->ops->call_note(x, &d, CALL_ABANDONED);
    }
    if (e->pinned) {
        x->ops->call_note(x, e->desc, CALL_UNPIN);
        e->pinned = false;
    }
    exec_arrival_pass(e);
    return rc;
}

/* A message step of a call that has ended: the transport is done with r,
 * and nothing of the call is stepped on, since its schedule may be gone
 * (with its communicator, or out of the cache) while the transport still
 * holds the call's messages. */
static void on_comm_done_late(xreq_t *r, int err) { (void)r, (void)err; }

/* r, issued or not, reads and writes mine from here on (sends and
 * receives alike: a sender may write into a receive, a receiver read a
 * send); the transport's lock held. */
static void disown_req(exec_t *e, xreq_t *r, bool issued, bool send, char *mine)
{
    r->cb = on_comm_done_late;
    if (!mine)
        return;
    if (issued && e->x->ops->disown)
        e->x->ops->disown(e->x, r, mine);
    if (send)
        r->sbuf = mine;
    else
        r->sink = (xsink_t){.dst = mine};
}

/* mine stays with e while its messages may still read and write it: until
 * e is freed (a failed call's request is never reused). */
static void keep_orphan(exec_t *e, char *mine)
{
    if (mine) {
        free(e->orphan);
        e->orphan = mine;
    }
}

/* An arrival-driven call's messages (src/shmcoll/arrival.c): reqs[i] for
 * i < ar.nreq, posted while pending[i] is 1 (2: done). */
static void disown_arrival(exec_t *e)
{
    if (!e->ar.nreq) /* a board call, or one that failed before posting */
        return;
    size_t most = 0;
    for (uint32_t i = 0; i < e->ar.nreq; i++)
        if (e->pending[i] == 1 && e->reqs[i].bytes > most)
            most = e->reqs[i].bytes;
    char *mine = most ? calloc(1, most) : NULL;
    pthread_mutex_lock(&e->x->lock);
    for (uint32_t i = 0; i < e->ar.nreq; i++)
        if (e->pending[i] == 1) /* (a send of bytes > 0 has a buffer) */
            disown_req(e, &e->reqs[i], true, e->reqs[i].sbuf != NULL, mine);
    pthread_mutex_unlock(&e->x->lock);
    keep_orphan(e, mine);
}

void exec_disown_buffers(exec_t *e)
{
    const sched_img_t *s = e->s;
    /* A board call has no messages (ar.nreq stays 0); an arrival-driven
     * one posts its own (test_mismatch late_result_leader/chain). */
    if (e->board) {
        disown_arrival(e);
        return;
    }
    if (!s)
        return;
    size_t most = 0;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        step_t st = sched_step(s, i);
        if (step_kind_is_comm(st.kind) && st.len * e->esize > most)
            most = st.len * e->esize;
    }
    /* (no memory: the buffers stay pointed at, as before the call failed) */
    char *mine = most ? calloc(1, most) : NULL;
    pthread_mutex_lock(&e->x->lock); /* another thread's wait may be delivering */
    /* Steps that were ready but never ran (the call failed first) were not
     * issued: their reqs hold an earlier call's leftovers, or nothing. */
    for (uint32_t k = e->rhead; k < e->rtail; k++)
        e->pending[e->ready[k]] = STEP_UNRUN;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        int kind = sched_step(s, i).kind;
        if (step_kind_is_comm(kind))
            disown_req(e, &e->reqs[i], e->pending[i] == 0, kind == STEP_SEND, mine);
    }
    pthread_mutex_unlock(&e->x->lock);
    keep_orphan(e, mine);
}

/* base + off without the undefined NULL + 0 (empty buffers may be NULL) */
static inline char *at(char *base, uint64_t off, size_t es)
{
    return base ? base + off * es : NULL;
}

/* A copy whose one successor is a receive-and-reduce into the very same
 * region, waiting for nothing else (rabenseifner's first step keeps its
 * half of the input so): instead of copying now and reducing into the
 * copy as the message comes, a second pass over the destination that
 * comes from memory once the region outgrows the caches, the receive
 * reduces the copy's source and the message into the destination
 * (sink.c).  Nothing else may touch the region before the receive
 * completes: a step that did would race with the receive in the schedule
 * as built.  2-rank allreduce: PERFORMANCE-LOG.md, "The copy fused". */
static bool fuse_copy(exec_t *e, uint32_t i, const step_t *c, const char *src, char *d,
                      size_t bytes)
{
    uint32_t k, end;
    sched_succ(e->s, i, &k, &end);
    if (end - k != 1 || (src < d + bytes && d < src + bytes))
        return false;
    uint32_t j = e->s->succ[k];
    if (e->pending[j] != 1 || sched_step_kind(e->s, j) != STEP_RECV_REDUCE)
        return false;
    const step_t r = sched_step(e->s, j);
    if (r.dst_buf != c->dst_buf || r.dst_off != c->dst_off || r.len != c->len)
        return false;
    e->reqs[j].sink.seed = src;
    return true;
}

/* A received message this large is written with streaming stores (sink.c):
 * it will not stay in the caches, and its lines need not be read before
 * they are written, a third of the memory traffic of a copy.  2-rank
 * allreduce (8 MiB messages and up): 16 MiB 3.3-3.8 -> 2.5-2.6 ms, 64 MiB
 * 18.0-20.6 -> 11.4-12.0 ms (PERFORMANCE-LOG.md, "Streaming stores").  So is
 * every message of a call that only copies (bcast, the gathers) and moves
 * this much per rank: a pipelined bcast's chunks are small, but together
 * they fill a destination that outgrows the caches just the same (AUTO's
 * twotree, 4 ranks, 64 MiB: 17.6-21.3 against 19.4-21.8 ms).  Not a
 * reduction's: its next step reads what the last one wrote, from the
 * caches where segments keep it. */
#define STREAM_MIN_DEFAULT (8u << 20)
static _Atomic uint64_t stream_min = STREAM_MIN_DEFAULT;

void exec_set_stream_min(uint64_t bytes) { stream_min = bytes ? bytes : STREAM_MIN_DEFAULT; }

/* Whether the call only copies (bcast, the gathers: nothing it receives
 * is reduced) */
static inline bool call_only_copies(const exec_t *e)
{
    return e->desc && !coll_is_reduction((weft_coll_t)e->desc->coll);
}

/* Whether a copy of bytes in this call is written with streaming stores
 * (above): a large one, or any of a call that only copies this much per
 * rank */
static inline bool streamed(const exec_t *e, size_t bytes, size_t es, bool only_copies)
{
    uint64_t floor = atomic_load_explicit(&stream_min, memory_order_relaxed);
    return bytes >= floor || (only_copies && e->desc->count * es >= floor);
}

static int run_step(exec_t *e, uint32_t i)
{
    const step_t step = sched_step(e->s, i), *st = &step;
    size_t es = e->esize, bytes = st->len * es;
    switch (st->kind) {
    case STEP_NOP:
        break;
    case STEP_COPY: {
        char *d = at(e->buf[st->dst_buf], st->dst_off, es);
        const char *src = at(e->buf[st->src_buf], st->src_off, es);
        if (d != src && bytes && !fuse_copy(e, i, st, src, d, bytes)) {
            /* a call that only copies streams its local copies as its
             * messages: an allgather's own block in a destination past the
             * caches (2 ranks, 64 MiB blocks: 21.3 to 19.7-19.9 ms); not a
             * reduction's, whose next step reads what a copy wrote, nor a
             * stage its parameters say to copy plainly (stage=plain:
             * linear_arena's bcast in pieces) */
            if (call_only_copies(e) && !(e->params && e->params->stage == STAGE_PLAIN) &&
                streamed(e, bytes, es, true)) {
                copy_streaming(d, src, bytes);
                copy_streaming_done();
            } else {
                copy_bytes(d, src, bytes);
            }
        }
        break;
    }
    case STEP_REDUCE:
        if (st->flags & STEP_INVERSE)
            reducer_apply_inverse(&e->red, at(e->buf[st->dst_buf], st->dst_off, es),
                                  at(e->buf[st->src_buf], st->src_off, es), st->len);
        else
            reducer_apply(&e->red, at(e->buf[st->dst_buf], st->dst_off, es),
                          at(e->buf[st->src_buf], st->src_off, es), st->len,
                          st->flags & STEP_SRC_LEFT);
        break;
    default: {
        xreq_t *r = &e->reqs[i];
        r->cb = on_comm_done;
        r->owner = e;
        r->peer = e->world[st->peer];
        r->tag = e->tagbase | st->tag;
        r->sig = e->sig;
        r->copied = call_only_copies(e);
        r->sender_idles = !r->copied && e->recvs_left == 0;
        r->sender_busy = r->copied && e->recvs_left > 0;
        r->read_by_all = e->read_by_all;
        r->bytes = bytes;
        r->call_bytes = e->desc ? (size_t)e->desc->count * es : bytes;
        int rc;
        if (st->kind == STEP_SEND) {
            r->sbuf = at(e->buf[st->src_buf], st->src_off, es);
            if (e->in_image && st->src_buf == BUF_IN) { /* staged as it is sent */
                char *img = at(e->in_image, st->src_off, es);
                copy_bytes(img, r->sbuf, bytes);
                r->sbuf = img;
            }
            rc = e->x->ops->isend(e->x, r);
        } else {
            r->sink.dst = at(e->buf[st->dst_buf], st->dst_off, es);
            r->sink.red = st->kind == STEP_RECV_REDUCE ? &e->red : NULL;
            r->sink.src_left = st->flags & STEP_SRC_LEFT; /* sink.seed: fuse_copy */
            r->sink.stream = streamed(e, bytes, es, r->copied);
            rc = e->x->ops->irecv(e->x, r);
        }
        return rc; /* completion arrives through on_comm_done */
    }
    }
    complete(e, i);
    return WEFT_OK;
}

int exec_progress(exec_t *e)
{
    if (e->board) {
        if (e->board_rc) /* done: a post or a count made twice would be wrong */
            return e->board_rc;
        int rc = e->board->progress(e);
        if (rc && e->board) { /* (still a board algorithm: not switched to a schedule) */
            e->board_rc = rc;
            if (rc < 0)
                exec_fail(e, -rc);
            exec_arrival_pass(e); /* done: it takes no ticket now */
        }
        return rc;
    }
    e->moved = 0;
    for (int round = 0;; round++) {
        if (e->rhead < e->rtail)
            e->moved = 1;
        while (e->rhead < e->rtail && !e->err) {
            int rc = run_step(e, e->ready[e->rhead++]);
            if (rc)
                exec_fail(e, rc);
        }
        if (e->err)
            return -e->err;
        if (e->ndone == e->s->nsteps)
            return 1;
        int m = e->x->ops->progress(e->x);
        if (m < 0)
            return exec_fail(e, -m), m;
        if (m > 0)
            e->moved = 1;
        if (m == 0 && e->rhead == e->rtail)
            return 0;
        if (round > 64)
            return 0; /* let the caller breathe; it will call again */
    }
}

/* A call whose wait stalled keeps its record in the log's pinned ones
 * until it ends (xport.h, CALL_PIN): the peers' watches prove a
 * disagreement from it however many calls come meanwhile. */
static void pin_record(exec_t *e)
{
    if (e->pinned || !e->desc || !e->x->ops->call_note)
        return;
    e->x->ops->call_note(e->x, e->desc, CALL_PIN);
    e->pinned = true;
}

/* One other unfinished call o, watched from self's stalled wait (o's
 * transport's lock held).  The error that proves a disagreement (the job
 * then fails), or 0. */
static int watch_other(exec_t *self, exec_t *o)
{
    bool done = o->board ? o->board_rc != 0 : o->ndone == o->s->nsteps;
    /* complete, its caller not yet told: a message of it that waits
     * here was sent in a call made otherwise (a reduce's leaf whose
     * parent made an allreduce that sends to it, in a batch) */
    if (done)
        return !o->board && o->desc && o->x->ops->sent_otherwise
                   ? o->x->ops->sent_otherwise(o->x, o->desc->key, o->desc->sig, true)
                   : 0;
    /* Pinned only when of the awaited call's communicator, or when it
     * has not taken a step since it started: the calls merely in
     * flight (every thread's) would take the places of those that
     * stalled, but a call of the same communicator still in flight
     * behind a stalled one may be the one its peers cannot prove
     * wrong without (a board call of no elements that one rank made
     * where the others made a schedule, in a batch: STRESS.md), and
     * so may one of another that has not moved at all (a reduce that
     * one rank made where the others made a bcast, its root waiting
     * in another communicator: seed 3162) */
    if (o->desc && self->desc &&
        ((o->x == self->x && o->desc->key >> 32 == self->desc->key >> 32) ||
         (!o->board && o->ndone == 0)))
        pin_record(o);
    return watch_stalled(o);
}

/* The watch of the other unfinished split-phase calls (self's transport's
 * lock held): with calls in flight, the rank that can see a disagreement
 * in one of them (the one that waits for the rank that made it
 * differently) may be waiting on another, in an order of its own, behind
 * it; watched only through the awaited call, nobody saw it until the time
 * limits ran out (weft stress: a ring allreduce of which one rank made a
 * board call, in an overlapped batch).  Calls of other transports too,
 * where their lock is free (the lock order, above): over MPI a rank tells
 * its peers of a call only when it watches that call, so a rank stalled
 * behind a call of another communicator that it made differently left its
 * peers there waiting for ever (weft stress over MPI: an allreduce made
 * with another op on a split, in a batch, the rank that made it waiting on
 * the world first).  The error of the first that proves one, which has
 * then failed the job. */
static int watch_others(exec_t *self)
{
    int rc = 0;
    pthread_mutex_lock(&active_lock);
    for (exec_t *o = active; o && !rc; o = o->anext) {
        if (o == self)
            continue;
        bool other = o->x != self->x;
        if (other && pthread_mutex_trylock(&o->x->lock) != 0)
            continue;
        if (!o->err)
            rc = watch_other(self, o);
        if (other)
            pthread_mutex_unlock(&o->x->lock);
    }
    pthread_mutex_unlock(&active_lock);
    return rc;
}

/* A wait that has not moved for this long asks who it waits for, and then
 * again at this interval: cheap (a few records per peer), and only when
 * nothing moves. */
#define WATCH_FIRST_NS 20000000ull
#define WATCH_EVERY_NS 100000000ull

/* What a wait that does not move checks, at now: the watch (who it waits
 * for, once WATCH_FIRST_NS have passed without a move, then every
 * WATCH_EVERY_NS) and the communicator's timeout, both counted across the
 * calls of a polled wait.  0, or the error to return.  Lock held. */
static int idle_checks(exec_t *e, uint64_t now)
{
    if (!e->t_start)
        e->t_start = now; /* no clock read on calls that never idle */
    if (!e->next_watch) {
        e->next_watch = now + WATCH_FIRST_NS;
    } else if (now >= e->next_watch) {
        e->next_watch = now + WATCH_EVERY_NS;
        pin_record(e);
        int w = watch_stalled(e);
        if (!w && __atomic_load_n(&active, __ATOMIC_RELAXED))
            w = watch_others(e);
        if (w)
            return w;
    }
    if (e->limit_ns && now - e->t_start >= e->limit_ns) {
        char msg[400];
        watch_expired(e, msg, sizeof msg);
        e->expired = true;
        return weft_error(WEFT_ETIMEDOUT, "%s", msg);
    }
    return 0;
}

/* Idle polls between two calls of the external progress function while a
 * wait spins or yields (a wait that ends within a few microseconds never
 * makes one); once it naps or sleeps between polls, every poll calls it. */
#define EXEC_DRIVE_EVERY 256

static void (*_Atomic external_progress)(void);

void exec_set_external_progress(void (*fn)(void)) { external_progress = fn; }

/* A wait's turn that moved nothing (the transport's lock held): the
 * health and time checks, then, past the yields, a sleep of at most 20 ms
 * or what is left of the time limit.  0, or the error (WEFT_*) to return. */
static int idle_turn(exec_t *e, int idle, int yield_limit, int timeout_ms, uint64_t deadline)
{
    xport_t *x = e->x;
    uint64_t now = weft_now_ns();
    int rc = idle_checks(e, now);
    if (rc != 0)
        return rc;
    /* WEFT_TEST only progresses: it never sleeps */
    if (idle < yield_limit || (timeout_ms >= 0 && deadline <= now))
        return 0;
    int ms = 20;
    if (timeout_ms >= 0) {
        uint64_t left = (deadline - now) / 1000000ull + 1;
        if (left < (uint64_t)ms)
            ms = (int)left;
    }
    if (e->board) { /* a slot written is as good as a message */
        x->also_ready = e->board->ready;
        x->also_arg = e;
    }
    x->ops->block(x, ms); /* releases the lock while asleep */
    x->also_ready = NULL;
    return 0;
}

/* Idle polls of a spinning wait between two yields.  Spinning pays where
 * every rank has a core of its own; where other processes took the cores
 * (other jobs, the tests of `make test` side by side) the rank waited for
 * may be off its core, and a wait that spun its whole 20,000 polls held
 * this one from it (and from everything else) for a millisecond or more.
 * A yield that finds nothing else to run returns at once (a system call,
 * under a microsecond, once every few tens of microseconds of spinning);
 * a wait that ends within SPIN_YIELD_EVERY polls never makes one. */
#define SPIN_YIELD_EVERY 1024

/* Between two polls that moved nothing: pause while spinning, then yield
 * the core (past the yields the polls sleep in idle_turn). */
static inline void back_off(int idle, int spin_limit, int yield_limit)
{
    if (idle && idle < spin_limit) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (idle % SPIN_YIELD_EVERY == 0)
            sched_yield();
    } else if (idle >= spin_limit && idle < yield_limit) {
        sched_yield();
    }
}

int exec_wait(exec_t *e, int timeout_ms)
{
    xport_t *x = e->x;
    /* Spin only while every rank can have a core; oversubscribed, a spinning
     * rank steals the core of the rank it waits for, so it yields at its
     * first idle poll (16 pauses first cost 4 and 8 ranks on 2 cores 10-30%
     * of a 256 B-64 KiB allreduce, PERFORMANCE-LOG.md).  The cores are those the
     * node's ranks may run on (cpus.h), not the machine's: two ranks
     * confined to one core by taskset spun 2 ms an 8-byte allreduce. */
    int spin_limit = x->cores && x->local_size > x->cores ? 1 : 20000;
    int yield_limit = spin_limit + 64;
    uint64_t deadline = timeout_ms >= 0 ? weft_now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
    /* A polled wait (weft_test, *_timeout at 0-2 ms) climbs the same
     * ladder as a blocking one across its calls: oversubscribed, a rank
     * polling at WEFT_TEST and never yielding kept the ranks it waits for
     * off its core for a whole time slice per poll (5 ranks on 2 cores,
     * 37,145 bytes in 3,096 segments: 76 s a call against 0.2 s). */
    int idle = e->idle, own_idle = idle, rc;
    /* The lock is held only while progressing, so threads waiting on other
     * communicators get their turn between polls. */
    for (;;) {
        pthread_mutex_lock(&x->lock);
        uint32_t ndone = e->ndone;
        rc = exec_progress(e);
        /* a schedule's moved says the transport moved, any call's
         * messages; its own steps ending is what says this call moved */
        int moved = e->moved, own_moved = e->board ? moved : e->ndone != ndone;
        /* the watch looks once this call has not moved for a while: other
         * calls that move (other threads', say) do not put it off, or a
         * call stalled beside busy threads was never watched */
        if (own_moved)
            e->next_watch = 0;
        /* MPI's progress rule: waiting on one request moves every other
         * one too (two ranks may wait on two calls in opposite orders) */
        if (rc == 0 && __atomic_load_n(&active, __ATOMIC_RELAXED) && progress_others(e))
            moved = 1;
        /* a blocking wait looks at the clock once it has idled a while; a
         * polled one (a *_timeout call at 0-2 ms) may never idle that long
         * in one call, so it looks every time it did not move.  Only a
         * turn where nothing moved sleeps; but a turn where only other
         * calls moved still runs this call's watch and time limit, or a
         * call stalled beside calls that kept moving (other threads', on
         * communicators without the stopped rank) never timed out */
        int err = 0;
        if (rc == 0 && !moved && (idle >= yield_limit || timeout_ms >= 0))
            err = idle_turn(e, idle, yield_limit, timeout_ms, deadline);
        else if (rc == 0 && !own_moved &&
                 (own_idle >= yield_limit || timeout_ms >= 0 ||
                  own_idle % EXEC_DRIVE_EVERY == EXEC_DRIVE_EVERY - 1))
            /* every so many polls too, not only past the yields: where
             * polls are slow (MPI yields in each when the ranks outnumber
             * the cores, and other work took them), 20,000 of them took
             * over 30 s, and the watch and the time limit waited as long
             * (weft stress fault jobs over MPI beside other tests) */
            err = idle_checks(e, weft_now_ns());
        if (err) {
            pthread_mutex_unlock(&x->lock);
            return err;
        }
        pthread_mutex_unlock(&x->lock);
        if (rc != 0)
            break;
        idle = moved ? 0 : idle + 1;
        own_idle = own_moved ? 0 : own_idle + (own_idle < yield_limit);
        /* past the yields every poll naps or sleeps: drive at each */
        if (idle >= yield_limit || idle % EXEC_DRIVE_EVERY == EXEC_DRIVE_EVERY - 1) {
            void (*drive)(void) = external_progress;
            if (drive)
                drive();
        }
        if (timeout_ms >= 0 && weft_now_ns() >= deadline) {
            if (idle >= spin_limit) /* no time left to sleep in: yield */
                sched_yield();
            e->idle = idle;
            rc = WEFT_ETIMEDOUT;
            break;
        }
        back_off(idle, spin_limit, yield_limit);
    }
    if (rc == 1)
        return WEFT_OK;
    if (rc == WEFT_ETIMEDOUT)
        return rc;
    return -rc;
}
