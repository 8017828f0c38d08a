/* hier_pap.c — hierarchical allreduce whose node level is arrival-driven
 * (process-arrival-pattern seed, chapter 6: a hierarchical allreduce
 * beats the flat one under imbalance; its node level here is Algorithm
 * 5.1's chain).  Inside each node the ranks form a chain in the order they
 * arrive (the communicator's arrival record, arrival.h: a rank's place in
 * its node's chain is its place among the node's ranks in the global
 * order); each adds its input to its predecessor's partial sum and hands it
 * on, and the node's last arrival hands the node's sum to the node leader
 * (its lowest rank).  From there the call is hier's own schedule without
 * its first phase (algo_hier_tail_allreduce: the leaders allreduce the
 * node sums, inter=NAME, then each leader broadcasts inside its node),
 * handed over to the engine.  So the early ranks of a node add their part
 * and wait only for the broadcast, while the node-level reduce of hier
 * (binomial) waits for its subtrees in a fixed order.
 *
 * The node map is the communicator's: the MPI library's nodes, or
 * WEFT_NODE_SIZE's virtual ones.  Each node takes its tickets in a record
 * of its own, claimed by and kept on its leader (arrival_use_group), so a
 * node needs only its own shared memory: hier_pap runs over MPI across
 * real nodes, and a node may have up to ARRIVAL_MAX ranks whatever the
 * communicator's size.  A node of one rank takes no ticket.  One node makes
 * it pap_chain's reduce to rank 0 and a binomial broadcast.
 *
 * node=leader and node=twostep put the seed's other node-level algorithms
 * there instead (pap_leader.c's, reducing to one rank): every rank of the
 * node sends its input to one reducer, the node's first arrival (leader,
 * Algorithm 4.1) or its leader (twostep, the static baseline: no ticket),
 * which adds each as it comes and, if it is not the leader, sends the
 * node's sum on to it.
 * The op must be commutative (the node level adds in arrival order), and
 * the leaders' algorithm must be a schedule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/copy.h"
#include "arrival.h"

enum { ARRIVE, SCAN_PRED, RECV, SCAN_SUCC, PASSED, SCAN_LAST, AT_LEADER, TAIL, FINISHED,
       G_ARRIVE, G_MEMBER, G_LEAD, G_GATHER, G_SENT };

/* Messages: 0 the partial sum from the predecessor, 1 it on to the
 * successor (or, from the node's last, to the leader), 2 the node's sum at
 * the leader.  node=leader|twostep: 0 this rank's input to the reducer, 1
 * the node's sum from the reducer to the leader (received as 2), and
 * GATHER_BASE + j the reducer's receive from the node's j-th rank.  The
 * tail schedule's tags start above the arrival tags. */
#define TAIL_TAG_BASE 4u
#define GATHER_BASE 3u

static int level_of(const exec_t *e) { return e->params ? e->params->node : NODE_LEVEL_CHAIN; }

static int node_of(const exec_t *e, int r)
{
    return e->node_of ? e->node_of[r] : 0;
}

static bool same_node(const exec_t *e, int r)
{
    return node_of(e, r) == node_of(e, e->s->rank);
}

/* The node's leader (its lowest rank) and size, once per call. */
static void find_node(exec_t *e)
{
    e->ar.node_leader = -1;
    e->ar.node_size = 0;
    for (int r = 0; r < e->s->nrank; r++)
        if (same_node(e, r)) {
            if (e->ar.node_leader < 0)
                e->ar.node_leader = r;
            e->ar.node_size++;
        }
}

static void hp_start(exec_t *e)
{
    if (!arrival_begin(e, 3, 0))
        return;
    find_node(e);
    arrival_use_group(e, e->ar.node_leader, e->ar.node_size);
    int level = level_of(e);
    if (level != NODE_LEVEL_CHAIN &&
        !arrival_reserve(e, GATHER_BASE + (uint32_t)e->ar.node_size,
                         (size_t)e->ar.node_size * arrival_bytes(e)))
        return;
    if (arrival_trivial(e)) {
        e->ar.phase = FINISHED;
    } else if (level == NODE_LEVEL_TWOSTEP) { /* no ticket: the leader reduces */
        e->ar.left = true;
        e->ar.leader = e->ar.node_leader;
        e->ar.phase = e->s->rank == e->ar.node_leader ? G_LEAD : G_MEMBER;
    } else {
        e->ar.phase = level == NODE_LEVEL_LEADER ? G_ARRIVE : ARRIVE;
        if (e->ar.node_size > 1) /* (its node's only rank takes no ticket) */
            arrival_enlist(e);
    }
}

/* Ranks in a's largest node: the communicator's (a call's), else counted
 * (the tools'); -1 when out of memory. */
static int largest_node(const coll_args_t *a)
{
    if (a->node_max)
        return a->node_max;
    if (!a->node_of)
        return a->nrank;
    int *size = calloc((size_t)a->nnodes, sizeof *size), most = 0;
    if (!size)
        return -1;
    for (int r = 0; r < a->nrank; r++)
        if (++size[a->node_of[r]] > most)
            most = size[a->node_of[r]];
    free(size);
    return most;
}

int hier_pap_usable(const coll_args_t *a, char *why, size_t len)
{
    int most = largest_node(a);
    if (most < 0) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    if (most > 1 && !a->node_board) { /* (nodes of one rank take no ticket) */
        snprintf(why, len, "allreduce hier_pap needs shared memory among each node's ranks "
                           "(weft run, or weft over MPI)");
        return -1;
    }
    if (most > (int)ARRIVAL_MAX) {
        snprintf(why, len, "allreduce hier_pap serves at most %u ranks in a node (the arrival "
                           "record's), not %d", ARRIVAL_MAX, most);
        return -1;
    }
    return 0;
}

/* The node's partial sum at this rank: the node's first arrival passes its
 * input on as it is; the others add into their output. */
static char *partial(const exec_t *e)
{
    return e->ar.pred < 0 ? e->buf[BUF_IN] : e->buf[BUF_OUT];
}

/* Reads the arrival order on from place e->ar.next for this node's ranks,
 * counting them (node_seen) and keeping the latest (last), until place
 * `end` or until the node's ranks seen reach `want`; false while an entry
 * on the way is not written yet. */
static bool scan(exec_t *e, int end, int want)
{
    while (e->ar.next < end && e->ar.node_seen < want) {
        int who = arrival_who(e, e->ar.next);
        if (who < 0)
            return false;
        if (same_node(e, who))
            e->ar.last = who, e->ar.node_seen++;
        e->ar.next++;
    }
    return true;
}

/* hier's schedule after the node level, built once per request (which
 * serves one call shape on one communicator) and kept with it. */
static const sched_img_t *tail(exec_t *e)
{
    if (e->aux && e->aux_key == &hier_pap_ops)
        return e->aux;
    sched_img_free(e->aux);
    e->aux = NULL;
    e->aux_key = NULL;
    coll_args_t a;
    arrival_coll_args(e, &a);
    if (e->params) /* inter= */
        a.params = *e->params;
    sched_t b;
    sched_init(&b, a.nrank, a.rank);
    b.tag_add = TAIL_TAG_BASE; /* above the chain's messages */
    int rc = algo_hier_tail_allreduce(&b, &a);
    if (!rc)
        rc = sched_commit(&b, &e->aux);
    sched_free(&b);
    if (rc) {
        e->err = weft_error(rc,
                            "building hier_pap's schedule after the node level failed "
                            "(error %d)",
                            rc);
        return NULL;
    }
    e->aux_key = &hier_pap_ops;
    return e->aux;
}

/* The node's sum is where the tail expects it (the leader's output): go on
 * as a schedule. */
static int to_tail(exec_t *e)
{
    arrival_leave(e);
    const sched_img_t *s = tail(e);
    int rc = s ? exec_switch_to_schedule(e, s) : e->err;
    if (rc)
        return rc < 0 ? rc : -rc;
    return exec_progress(e);
}

/* This rank has added its part: hand the partial sum on, to the next of
 * its node or, from the node's last, to the leader.  node_seen counts the
 * node's ranks up to and including this one. */
static int pass_on(exec_t *e, int *moved)
{
    size_t bytes = arrival_bytes(e);
    int me = e->s->rank;
    if (e->ar.node_seen == e->ar.node_size) { /* the node's last arrival */
        *moved = 1;
        if (me == e->ar.node_leader) {
            if (partial(e) != e->buf[BUF_OUT])
                copy_bytes(e->buf[BUF_OUT], partial(e), bytes);
            e->ar.phase = TAIL;
            return 0;
        }
        e->ar.phase = PASSED;
        return arrival_send(e, 1, e->ar.node_leader, ARRIVAL_TAG_FINAL, partial(e), bytes);
    }
    if (!scan(e, e->s->nrank, e->ar.node_seen + 1))
        return 0;
    *moved = 1;
    e->ar.succ = e->ar.last;
    e->ar.phase = PASSED;
    return arrival_send(e, 1, e->ar.succ, ARRIVAL_TAG_DATA, partial(e), bytes);
}

/* node=leader|twostep, the reducer: post a receive from each other rank
 * of the node (scratch block j for its j-th rank). */
static int gather_post(exec_t *e)
{
    size_t bytes = arrival_bytes(e);
    if (e->buf[BUF_OUT] != e->buf[BUF_IN])
        copy_bytes(e->buf[BUF_OUT], e->buf[BUF_IN], bytes);
    e->ar.next = 0; /* inputs added so far */
    for (int q = 0, j = 0; q < e->s->nrank; q++) {
        if (!same_node(e, q))
            continue;
        int rc = q == e->s->rank ? 0
                                 : arrival_recv(e, GATHER_BASE + (uint32_t)j, q, ARRIVAL_TAG_DATA,
                                                e->tmp + (size_t)j * bytes, bytes, false);
        if (rc)
            return rc;
        j++;
    }
    return 0;
}

/* Adds each input that has come in; true when all the node's are in. */
static bool gather_add(exec_t *e, int *moved)
{
    size_t bytes = arrival_bytes(e);
    for (int j = 0; j < e->ar.node_size; j++) {
        uint32_t i = GATHER_BASE + (uint32_t)j;
        if (e->pending[i] == 0 || e->ready[i] || !arrival_done(e, i))
            continue; /* (this rank's own place posts nothing) */
        reducer_apply(&e->red, e->buf[BUF_OUT], e->tmp + (size_t)j * bytes, e->desc->count,
                      false);
        e->ready[i] = 1;
        e->ar.next++;
        *moved = 1;
    }
    return e->ar.next == e->ar.node_size - 1;
}

/* node=leader|twostep: the node's inputs to one reducer, its sum to the
 * leader, then the tail. */
static int gather_progress(exec_t *e)
{
    int moved = 0, rc = 0, me = e->s->rank;
    size_t bytes = arrival_bytes(e);
    for (;;) {
        int phase = e->ar.phase;
        switch (phase) {
        case G_ARRIVE:
            if (e->ar.node_size == 1) { /* its node's only arrival: no ticket */
                e->ar.left = true, e->ar.leader = me;
                e->ar.phase = G_LEAD;
                break;
            }
            if (!arrival_first(e, &moved))
                return arrival_idle(e, moved);
            e->ar.phase = e->ar.leader == me ? G_LEAD : G_MEMBER;
            break;
        case G_MEMBER:
            moved = 1;
            e->ar.phase = G_SENT;
            rc = arrival_send(e, 0, e->ar.leader, ARRIVAL_TAG_DATA, e->buf[BUF_IN], bytes);
            if (!rc && me == e->ar.node_leader)
                rc = arrival_recv(e, 2, e->ar.leader, ARRIVAL_TAG_FINAL, e->buf[BUF_OUT], bytes,
                                  false);
            break;
        case G_LEAD:
            moved = 1;
            e->ar.phase = G_GATHER;
            rc = gather_post(e);
            break;
        case G_GATHER:
            if ((rc = arrival_poll(e, &moved)))
                return rc;
            if (!gather_add(e, &moved))
                return arrival_idle(e, moved);
            if (me == e->ar.node_leader) {
                e->ar.phase = TAIL;
                break;
            }
            e->ar.phase = G_SENT;
            rc = arrival_send(e, 1, e->ar.node_leader, ARRIVAL_TAG_FINAL, e->buf[BUF_OUT], bytes);
            break;
        case G_SENT:
            if (!arrival_await(e, ARRIVAL_ALL, &moved, &rc))
                return rc;
            e->ar.phase = TAIL;
            break;
        case TAIL:
            return to_tail(e);
        default:
            e->moved = 1;
            return 1;
        }
        if (rc)
            return rc < 0 ? rc : -rc;
    }
}

static int hp_progress(exec_t *e)
{
    int moved = 0, rc = 0;
    size_t bytes = arrival_bytes(e);
    if (e->err)
        return -e->err;
    if (e->ar.phase >= G_ARRIVE) /* node=leader|twostep */
        return gather_progress(e);
    for (;;) {
        int phase = e->ar.phase;
        switch (phase) {
        case ARRIVE:
            if (e->ar.node_size == 1) { /* its node's only arrival: no ticket */
                e->ar.left = true, e->ar.pred = -1, e->ar.node_seen = 1;
                e->ar.phase = SCAN_SUCC;
                break;
            }
            if (!arrival_take(e))
                return arrival_idle(e, moved);
            moved = 1;
            e->ar.next = 0, e->ar.node_seen = 0, e->ar.last = -1;
            e->ar.phase = SCAN_PRED;
            break;
        case SCAN_PRED:
            if (!scan(e, e->ar.order, e->ar.node_size))
                return arrival_idle(e, moved);
            moved = 1;
            e->ar.pred = e->ar.last;
            e->ar.next = e->ar.order + 1; /* on after this rank */
            e->ar.node_seen++;            /* this rank */
            if (e->ar.pred < 0) {
                e->ar.phase = SCAN_SUCC;
                break;
            }
            e->ar.phase = RECV;
            rc = arrival_chain_recv(e, partial(e));
            break;
        case RECV:
            if (!arrival_await(e, 0, &moved, &rc))
                return rc;
            e->ar.phase = SCAN_SUCC;
            break;
        case SCAN_SUCC:
            rc = pass_on(e, &moved);
            break;
        case PASSED:
            if (!arrival_await(e, ARRIVAL_ALL, &moved, &rc))
                return rc;
            if (e->s->rank != e->ar.node_leader) {
                e->ar.phase = TAIL;
                break;
            }
            /* the leader passed its part on: the node's sum comes from
             * the node's last arrival, found further on in the order */
            e->ar.phase = SCAN_LAST;
            break;
        case SCAN_LAST:
            if (!scan(e, e->s->nrank, e->ar.node_size))
                return arrival_idle(e, moved);
            moved = 1;
            e->ar.phase = AT_LEADER;
            rc = arrival_recv(e, 2, e->ar.last, ARRIVAL_TAG_FINAL, e->buf[BUF_OUT], bytes, false);
            break;
        case AT_LEADER:
            if (!arrival_await(e, 2, &moved, &rc))
                return rc;
            e->ar.phase = TAIL;
            break;
        case TAIL:
            return to_tail(e);
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

const board_ops_t hier_pap_ops = {hp_start, hp_progress, arrival_ready, arrival_waiting_for,
                                  NULL, arrival_abandon};
