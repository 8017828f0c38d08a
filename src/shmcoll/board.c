/* board.c — the board allreduce: tiny payloads without a schedule.
 *
 * Each rank writes its contribution into a slot of its own on the board
 * (segment.h: a slot is four cache lines, the first holding the call's
 * stamp, signature and 40 bytes), then waits until every peer's slot
 * carries the same call, and combines x0 op x1 op ... op x(P-1) from the
 * slots itself.  One store and one wait per rank per call, no message, no
 * lock, no step queue: the latency of the cache lines that cross.  Every
 * rank evaluates the same expression on the same bytes, so results are
 * identical everywhere and non-commutative ops are served.
 *
 * A slot is chosen by the call's communicator and sequence number, and is
 * rewritten only once every reader of its last contents has counted itself
 * out (the slot's reads), so calls of any communicator, blocking or
 * split-phase, may share it: a writer that finds it busy waits like any
 * other wait, and the readers it waits for progress their calls in theirs.
 * The second kind of algorithm of DESIGN.md: not a schedule, so the
 * checker does not prove it; test_coll and weft stress run it. */
#include <stdio.h>
#include <string.h>

#include "../algo/algo.h"
#include "../exec/engine.h"
#include "../xport/segment.h"

enum { BOARD_FREE_WAIT = 0, BOARD_POSTED = 1 };

static board_slot_t *slot_of(const exec_t *e, int rank)
{
    return e->x->ops->board_slot(e->x, e->world[rank], e->br.slot);
}

static uint64_t stamp_of(const exec_t *e) { return e->desc->key + 1; }

/* The call's bytes per rank (its count is in the published call). */
static size_t bytes_of(const exec_t *e) { return e->desc->count * e->esize; }

/* Writes this rank's contribution when its slot is free; false if not yet.
 * Only this process writes its slots, and always under the transport's
 * lock (exec_progress's callers hold it), so two threads on communicators
 * that share a slot cannot both find it free. */
static bool post(exec_t *e)
{
    board_slot_t *me = slot_of(e, e->s->rank);
    if (atomic_load_explicit(&me->stamp, memory_order_relaxed) &&
        atomic_load_explicit(&me->reads, memory_order_acquire) < me->readers)
        return false;
    size_t bytes = bytes_of(e);
    me->readers = (uint32_t)(e->s->nrank - 1);
    atomic_store_explicit(&me->reads, 0, memory_order_relaxed);
    me->sig = e->sig;
    me->len = (uint32_t)bytes;
    if (bytes)
        memcpy(me->data, e->buf[BUF_IN], bytes);
    atomic_store_explicit(&me->stamp, stamp_of(e), memory_order_release);
    e->x->ops->wake_ranks(e->x, e->world, e->s->nrank);
    e->br.phase = BOARD_POSTED;
    return true;
}

static void board_start(exec_t *e)
{
    e->br.phase = BOARD_FREE_WAIT;
    uint64_t key = e->desc->key;
    e->br.slot = (unsigned)(((key >> 32) * 2 + (key & 1)) % BOARD_SLOTS);
    e->br.next = 0;
}

/* A peer's slot holds this call made differently: say how, end the job. */
static int differs(exec_t *e, int q, const board_slot_t *ps)
{
    char msg[512];
    peer_view_t v;
    if (e->x->ops->peer_view &&
        !e->x->ops->peer_view(e->x, e->world[q], e->desc->key, true, &v) && v.found &&
        v.call.sig != e->desc->sig)
        call_disagreement(e->desc, e->s->rank, &v.call, q, msg, sizeof msg);
    else
        snprintf(msg, sizeof msg, "rank %d and rank %d disagree on a collective (signature "
                 "%08x vs %08x, %u vs %llu bytes): do all ranks pass the same count, "
                 "datatype, op and algorithm?", e->s->rank, q, (unsigned)e->sig,
                 (unsigned)ps->sig, (unsigned)ps->len,
                 (unsigned long long)bytes_of(e));
    if (e->x->ops->fail_job)
        e->x->ops->fail_job(e->x, msg);
    return -weft_error(WEFT_EMISMATCH, "%s", msg);
}

/* Every slot holds the call: combine in rank order, release the slots. */
static void combine(exec_t *e)
{
    int P = e->s->nrank, me = e->s->rank;
    size_t bytes = bytes_of(e);
    char acc[BOARD_PAYLOAD];
    memcpy(acc, slot_of(e, 0)->data, bytes);
    for (int q = 1; q < P; q++)
        reducer_apply(&e->red, acc, slot_of(e, q)->data, e->desc->count, false);
    if (bytes)
        memcpy(e->buf[BUF_OUT], acc, bytes);
    for (int q = 0; q < P; q++)
        if (q != me)
            atomic_fetch_add_explicit(&slot_of(e, q)->reads, 1, memory_order_release);
}

static int board_progress(exec_t *e)
{
    int moved = 0;
    if (e->br.phase == BOARD_FREE_WAIT) {
        if (!post(e))
            goto idle;
        moved = 1;
    }
    while (e->br.next < e->s->nrank) {
        int q = e->br.next;
        if (q != e->s->rank) {
            const board_slot_t *ps = slot_of(e, q);
            if (atomic_load_explicit(&ps->stamp, memory_order_acquire) != stamp_of(e))
                goto idle;
            if (ps->sig != e->sig || ps->len != bytes_of(e))
                return differs(e, q, ps);
        }
        e->br.next++;
        moved = 1;
    }
    combine(e);
    e->moved = 1;
    return 1;
idle:
    e->moved = moved;
    if (!moved) {
        int h = e->x->ops->health(e->x);
        if (h)
            return -h;
    }
    return 0;
}

static bool board_ready(void *arg)
{
    const exec_t *e = arg;
    if (e->br.phase == BOARD_FREE_WAIT) {
        const board_slot_t *me = slot_of(e, e->s->rank);
        return atomic_load_explicit(&me->reads, memory_order_acquire) >= me->readers;
    }
    return e->br.next < e->s->nrank &&
           atomic_load_explicit(&slot_of(e, e->br.next)->stamp, memory_order_acquire) ==
               stamp_of(e);
}

/* Posted: the ranks whose slots do not hold the call yet.  Waiting for a
 * free slot: the readers of its last contents are not known, so every peer
 * is named (the watch fails only on what it proves). */
static int board_waiting_for(const exec_t *e, int *ranks, int max)
{
    int n = 0;
    for (int q = e->br.phase == BOARD_POSTED ? e->br.next : 0; q < e->s->nrank && n < max; q++)
        if (q != e->s->rank &&
            (e->br.phase == BOARD_FREE_WAIT ||
             atomic_load_explicit(&slot_of(e, q)->stamp, memory_order_acquire) != stamp_of(e)))
            ranks[n++] = q;
    return n;
}

const board_ops_t board_allreduce_ops = {board_start, board_progress, board_ready,
                                         board_waiting_for};

/* The registry's builder: a board algorithm has no steps. */
int algo_board_build(sched_t *s, const coll_args_t *a)
{
    (void)s, (void)a;
    return 0;
}

int algo_board_usable(const coll_args_t *a, char *why, size_t len)
{
    if (!a->shared_board) {
        snprintf(why, len, "allreduce board needs every rank on one machine's shared memory "
                           "(weft run, or MPI ranks of one node)");
        return -1;
    }
    if (a->count * a->esize > BOARD_PAYLOAD) {
        snprintf(why, len, "allreduce board carries at most %u bytes per rank, not %llu",
                 BOARD_PAYLOAD, (unsigned long long)(a->count * a->esize));
        return -1;
    }
    return 0;
}
