/* pap_chain.c — the arrival-ordered chain (process-arrival-pattern seed,
 * chapter 5, Algorithm 5.1): arrival order, from the arrival record
 * (arrival.h), decides the chain.  Each rank takes the partial result from
 * the rank that arrived just before it, adds its own input, hands it to the
 * rank that arrives next and leaves; the last to arrive holds the result.
 * Only one rank at a time waits for another to arrive, so under imbalance
 * early ranks leave early, at the price of P - 1 steps in a row when all
 * arrive together.  The order of the additions follows arrival, so the op
 * must be commutative.
 *
 *   reduce     the last arrival sends the result to the root (the root
 *              takes part in the chain where it arrived, then waits for it);
 *   allreduce  that reduce, then a binomial broadcast rooted at the last
 *              arrival (5.3.2: the seed broadcasts from the root, by shared
 *              memory up to 64 KiB and a binomial tree above; rooting it at
 *              the rank that holds the result saves the hop to the root). */
#include <string.h>

#include "arrival.h"

enum { ARRIVE, PRED, RECV, NEXT, PASSED, TO_ROOT, LAST, FINAL, BCAST, BCAST_RECV, BCAST_SENT,
       FINISHED };

/* Messages: 0 from the predecessor, 1 to the successor (or the root), 2
 * the result (to the root, or from the broadcast parent), 3... to the
 * broadcast children. */
#define CHILDREN_MAX 32u

static bool allreduce(const exec_t *e) { return e->desc->coll == WEFT_COLL_ALLREDUCE; }
static bool is_root(const exec_t *e) { return !allreduce(e) && e->s->rank == e->desc->root; }

static void chain_start(exec_t *e)
{
    size_t bytes = arrival_bytes(e);
    if (!arrival_begin(e, 3 + CHILDREN_MAX, allreduce(e) ? 0 : bytes))
        return;
    e->ar.phase = arrival_trivial(e) ? FINISHED : ARRIVE;
    if (e->ar.phase == ARRIVE)
        arrival_enlist(e);
}

void pap_chain_arrived(exec_t *e)
{
    if (arrival_reserve(e, 3 + CHILDREN_MAX, allreduce(e) ? 0 : arrival_bytes(e)))
        e->ar.phase = e->ar.order ? PRED : NEXT;
}

/* Where this rank's partial result builds up: the first arrival passes its
 * input on as it is; the others add into their output, or scratch where
 * they have none (a reduce's non-roots) or it must wait for the result (a
 * root that is not the last). */
static char *partial(const exec_t *e)
{
    if (e->ar.order == 0)
        return e->buf[BUF_IN];
    if (allreduce(e) || (is_root(e) && e->ar.order == e->s->nrank - 1))
        return e->buf[BUF_OUT];
    return e->tmp;
}

/* The broadcast from the last arrival: receive from the parent (unless
 * this rank is the last), then send to the children, largest subtree
 * first. */
static int post_children(exec_t *e)
{
    int P = e->s->nrank, v = (e->s->rank - e->ar.last + P) % P;
    size_t bytes = arrival_bytes(e);
    e->ar.next = 0;
    for (int m = binomial_span(v, P) / 2; m >= 1; m /= 2) {
        if (v + m >= P)
            continue;
        int rc = arrival_send(e, 3 + (uint32_t)e->ar.next++, (v + m + e->ar.last) % P,
                              ARRIVAL_TAG_RESULT, e->buf[BUF_OUT], bytes);
        if (rc)
            return rc;
    }
    return 0;
}

static int bcast_begin(exec_t *e)
{
    int P = e->s->nrank, v = (e->s->rank - e->ar.last + P) % P;
    if (!v) {
        e->ar.phase = BCAST_SENT;
        return post_children(e);
    }
    e->ar.phase = BCAST_RECV;
    int parent = (v - binomial_span(v, P) + e->ar.last) % P;
    return arrival_recv(e, 2, parent, ARRIVAL_TAG_RESULT, e->buf[BUF_OUT], arrival_bytes(e),
                        false);
}

/* This rank has added its part: hand the partial result on. */
static int pass_on(exec_t *e, int *moved)
{
    int P = e->s->nrank, me = e->s->rank;
    if (e->ar.order == P - 1) {
        e->ar.last = me;
        arrival_leave(e);
        *moved = 1;
        if (allreduce(e))
            return bcast_begin(e);
        if (is_root(e)) {
            e->ar.phase = FINISHED;
            return 0;
        }
        e->ar.phase = TO_ROOT;
        return arrival_send(e, 1, e->desc->root, ARRIVAL_TAG_FINAL, partial(e), arrival_bytes(e));
    }
    if ((e->ar.succ = arrival_who(e, e->ar.order + 1)) < 0)
        return 0;
    *moved = 1;
    e->ar.phase = PASSED;
    return arrival_send(e, 1, e->ar.succ, ARRIVAL_TAG_DATA, partial(e), arrival_bytes(e));
}

/* The partial result has gone on: a reduce's non-root is done; the root
 * and every rank of an allreduce wait for the result from the last. */
static int after_pass(exec_t *e, int *moved)
{
    if (!allreduce(e) && !is_root(e)) {
        arrival_leave(e);
        e->ar.phase = FINISHED;
        *moved = 1;
        /* the first arrival received nothing: compare with its successor,
         * as a schedule that only sends does */
        return e->ar.order == 0 ? watch_peer_agrees(e, e->ar.succ, true) : 0;
    }
    e->ar.phase = LAST;
    return 0;
}

static int chain_progress(exec_t *e)
{
    int moved = 0, rc = 0;
    size_t bytes = arrival_bytes(e);
    if (e->err)
        return -e->err;
    for (;;) {
        int phase = e->ar.phase;
        switch (phase) {
        case ARRIVE:
            if (!arrival_take(e))
                return arrival_idle(e, moved);
            moved = 1;
            e->ar.phase = e->ar.order ? PRED : NEXT;
            break;
        case PRED:
            if ((e->ar.pred = arrival_who(e, e->ar.order - 1)) < 0)
                return arrival_idle(e, moved);
            moved = 1;
            e->ar.phase = RECV;
            rc = arrival_chain_recv(e, partial(e));
            break;
        case RECV:
            if (!arrival_await(e, 0, &moved, &rc))
                return rc;
            e->ar.phase = NEXT;
            break;
        case NEXT:
            rc = pass_on(e, &moved);
            break;
        case PASSED:
        case TO_ROOT:
        case FINAL:
        case BCAST_RECV:
        case BCAST_SENT:
            if (!arrival_await(e, ARRIVAL_ALL, &moved, &rc))
                return rc;
            if (phase == PASSED)
                rc = after_pass(e, &moved);
            else if (phase == BCAST_RECV)
                e->ar.phase = BCAST_SENT, rc = post_children(e);
            else
                e->ar.phase = FINISHED;
            break;
        case LAST:
            if ((e->ar.last = arrival_who(e, e->s->nrank - 1)) < 0)
                return arrival_idle(e, moved);
            arrival_leave(e);
            moved = 1;
            if (allreduce(e)) {
                rc = bcast_begin(e);
            } else {
                e->ar.phase = FINAL;
                rc = arrival_recv(e, 2, e->ar.last, ARRIVAL_TAG_FINAL, e->buf[BUF_OUT], bytes,
                                  false);
            }
            break;
        default:
            e->moved = 1;
            return 1;
        }
        if (rc)
            return rc < 0 ? rc : -rc;
        if (e->ar.phase == phase) /* waiting for an arrival (pass_on) */
            return arrival_idle(e, moved);
    }
}

const board_ops_t pap_chain_ops = {chain_start, chain_progress, arrival_ready,
                                   arrival_waiting_for, NULL, arrival_abandon};
