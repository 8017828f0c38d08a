/* pap_leader.c — the two-step allreduce through one leader: every other
 * rank sends its input to the leader, which reduces and sends the result
 * back (process-arrival-pattern seed, chapter 4).
 *
 *   shm_twostep  the leader is rank 0 (MVAPICH's static leader, the seed's
 *                baseline); it reduces in rank order, so non-commutative
 *                ops are served, and it can start only when it arrives;
 *   pap_leader   Algorithm 4.1: the first rank to arrive leads this call
 *                (the arrival record decides, arrival.h) and reduces each
 *                contribution as it comes, in whatever order they come
 *                (commutative ops), so a late rank delays only its own
 *                part's reduction and the result.
 *
 * The data moves as messages of the transport (its cells, or a single
 * copy for large ones); the leader keeps one scratch block of n bytes per
 * rank, so the family suits small n, as in the seed (up to 64 KiB). */
#include <string.h>

#include "../core/copy.h"
#include "arrival.h"

enum { ARRIVE, ARRIVED, MEMBER, MEMBER_WAIT, LEAD, GATHER, SCATTER, FINISHED };

/* Messages: the leader's receive from q is number q, its send to q P + q;
 * a member sends as 0 and receives as 1. */

static void leader_start(exec_t *e, bool dynamic)
{
    int P = e->s->nrank;
    size_t bytes = arrival_bytes(e);
    if (!arrival_begin(e, 2 * (uint32_t)P, (size_t)P * bytes))
        return;
    if (arrival_trivial(e)) {
        e->ar.phase = FINISHED;
    } else if (dynamic) {
        e->ar.phase = ARRIVE;
        arrival_enlist(e);
    } else {
        e->ar.leader = 0;
        e->ar.phase = e->s->rank == 0 ? LEAD : MEMBER;
    }
}

void pap_leader_arrived(exec_t *e)
{
    int P = e->s->nrank;
    if (arrival_reserve(e, 2 * (uint32_t)P, (size_t)P * arrival_bytes(e)))
        e->ar.phase = ARRIVED;
}

static void twostep_start(exec_t *e) { leader_start(e, false); }
static void pap_start(exec_t *e) { leader_start(e, true); }

/* The leader takes in every contribution that has come: shm_twostep in
 * rank order only (e->ar.next is the next rank), pap_leader in any. */
static void gather(exec_t *e, int *moved)
{
    int P = e->s->nrank, me = e->s->rank;
    size_t bytes = arrival_bytes(e);
    bool in_order = e->ar.order < 0;
    for (int q = in_order ? e->ar.next : 0; q < P; q++) {
        if (q == me || e->ready[q])
            continue;
        if (!arrival_done(e, (uint32_t)q)) {
            if (in_order)
                break;
            continue;
        }
        reducer_apply(&e->red, e->buf[BUF_OUT], e->tmp + (size_t)q * bytes, e->desc->count,
                      false);
        e->ready[q] = 1;
        e->ar.next++;
        *moved = 1;
    }
}

static int leader_progress(exec_t *e)
{
    int P = e->s->nrank, me = e->s->rank, moved = 0, rc;
    size_t bytes = arrival_bytes(e);
    if (e->err)
        return -e->err;
    for (;;) {
        switch (e->ar.phase) {
        case ARRIVE:
        case ARRIVED: /* (adaptive hands over here, its ticket taken) */
            if (!arrival_first(e, &moved))
                return arrival_idle(e, moved);
            e->ar.phase = e->ar.leader == me ? LEAD : MEMBER;
            continue;
        case MEMBER:
            moved = 1;
            e->ar.phase = MEMBER_WAIT;
            if ((rc = arrival_send(e, 0, e->ar.leader, ARRIVAL_TAG_DATA, e->buf[BUF_IN], bytes)) ||
                (rc = arrival_recv(e, 1, e->ar.leader, ARRIVAL_TAG_RESULT, e->buf[BUF_OUT],
                                   bytes, false)))
                return -rc;
            continue;
        case MEMBER_WAIT:
            if ((rc = arrival_poll(e, &moved)))
                return rc;
            if (!arrival_done(e, 0) || !arrival_done(e, 1))
                return arrival_idle(e, moved);
            e->ar.phase = FINISHED;
            continue;
        case LEAD:
            moved = 1;
            if (e->buf[BUF_OUT] != e->buf[BUF_IN])
                copy_bytes(e->buf[BUF_OUT], e->buf[BUF_IN], bytes);
            e->ar.next = 0;
            e->ar.phase = GATHER;
            for (int q = 0; q < P; q++)
                if (q != me && (rc = arrival_recv(e, (uint32_t)q, q, ARRIVAL_TAG_DATA,
                                                  e->tmp + (size_t)q * bytes, bytes, false)))
                    return -rc;
            if (e->ar.order < 0)
                e->ar.next = 1; /* shm_twostep: rank 0's own part is in place */
            continue;
        case GATHER:
            if ((rc = arrival_poll(e, &moved)))
                return rc;
            gather(e, &moved);
            if (e->ar.next < P - (e->ar.order < 0 ? 0 : 1))
                return arrival_idle(e, moved);
            e->ar.phase = SCATTER;
            for (int q = 0; q < P; q++)
                if (q != me && (rc = arrival_send(e, (uint32_t)(P + q), q, ARRIVAL_TAG_RESULT,
                                                  e->buf[BUF_OUT], bytes)))
                    return -rc;
            continue;
        case SCATTER:
            if (!arrival_await(e, ARRIVAL_ALL, &moved, &rc))
                return rc;
            e->ar.phase = FINISHED;
            continue;
        default:
            e->moved = 1;
            return 1;
        }
    }
}

const board_ops_t shm_twostep_ops = {twostep_start, leader_progress, arrival_ready,
                                     arrival_waiting_for, NULL, arrival_abandon};
const board_ops_t pap_leader_ops = {pap_start, leader_progress, arrival_ready,
                                    arrival_waiting_for, NULL, arrival_abandon};
