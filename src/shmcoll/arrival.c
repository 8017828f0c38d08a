/* arrival.c — the arrival record and the messages of the arrival-driven
 * collectives (arrival.h): pap_leader and shm_twostep (pap_leader.c),
 * pap_chain (pap_chain.c), after the process-arrival-pattern seed's
 * Algorithms 4.1 and 5.1.  The seed serialises arrivals with a mutex; here
 * one compare-and-swap on a word that holds the call's generation, the
 * ranks expected and the ranks arrived does it, so a rank that is
 * descheduled mid-way holds no lock that others spin on. */
#include <stdio.h>
#include <string.h>

#include "../core/copy.h"
#include "arrival.h"

#define FIELD 0xfffull     /* ticket: ranks expected, ranks arrived */
#define DONE 0xffffffull   /* left: ranks done; order: rank + 1 */

/* The transport rank that holds the call's records. */
static int host_of(const exec_t *e) { return e->world[e->ar.host_rank]; }

static arrival_rec_t *rec_of(const exec_t *e)
{
    return e->x->ops->arrival_rec(e->x, host_of(e), (unsigned)e->ar.rec);
}

static uint64_t ctx_of(const exec_t *e) { return e->desc->key >> 32; }

static void wake_all(exec_t *e) { e->x->ops->wake_ranks(e->x, e->world, e->s->nrank); }

bool arrival_begin(exec_t *e, uint32_t nreq, size_t tmp_bytes)
{
    arrival_reset(e);
    return arrival_reserve(e, nreq, tmp_bytes);
}

bool arrival_reserve(exec_t *e, uint32_t nreq, size_t tmp_bytes)
{
    int rc = exec_reserve(e, nreq);
    if (!rc)
        rc = exec_reserve_tmp(e, tmp_bytes);
    if (rc) {
        e->err = rc;
        return false;
    }
    memset(e->pending, 0, nreq * sizeof *e->pending);
    memset(e->ready, 0, nreq * sizeof *e->ready);
    return true;
}

void arrival_reset(exec_t *e)
{
    arrival_run_t *ar = &e->ar;
    memset(ar, 0, sizeof *ar);
    ar->order = ar->leader = ar->pred = ar->succ = ar->last = ar->await_order = -1;
    /* ctx (16 bits) and the 24-bit sequence number: 40 bits, + 1 so that a
     * never-used record (all zero) matches no call */
    uint64_t key = e->desc->key, ctx = key >> 32, seq = key & 0xffffffu;
    ar->gen = (ctx << 24 | seq) + 1;
    ar->host_rank = 0;
    ar->nexpect = e->s->nrank;
    ar->rec = -1;
}

void arrival_use_group(exec_t *e, int host_rank, int n)
{
    e->ar.host_rank = host_rank;
    e->ar.nexpect = n;
}

/* The pair owned by ctx on the host, or -1. */
static int owned_pair(xport_t *x, int host, uint64_t ctx)
{
    for (unsigned j = 0; j < ARRIVAL_PAIRS; j++) {
        arrival_rec_t *r = x->ops->arrival_rec(x, host, 2 * j);
        if (!r) /* no records there (a node of one rank under MPI) */
            return -1;
        if (atomic_load_explicit(&r->owner, memory_order_acquire) >> 1 == ctx + 1)
            return (int)j;
    }
    return -1;
}

static bool rec_free(arrival_rec_t *r, uint64_t t);

/* The host rank claims a pair nobody owns, or one of a freed communicator
 * whose last calls are complete; false with e->err set when none is. */
static bool claim_pair(exec_t *e)
{
    xport_t *x = e->x;
    uint64_t ctx = ctx_of(e);
    for (unsigned j = 0; j < ARRIVAL_PAIRS; j++) {
        arrival_rec_t *a = x->ops->arrival_rec(x, host_of(e), 2 * j),
                      *b = x->ops->arrival_rec(x, host_of(e), 2 * j + 1);
        uint64_t o = atomic_load_explicit(&a->owner, memory_order_acquire);
        if (o && !((o & 1) && rec_free(a, atomic_load_explicit(&a->ticket, memory_order_acquire)) &&
                   rec_free(b, atomic_load_explicit(&b->ticket, memory_order_acquire))))
            continue;
        /* only this rank claims on its own transport rank, under no lock:
         * the CAS guards against a concurrent thread's claim */
        if (atomic_compare_exchange_strong_explicit(&a->owner, &o, (ctx + 1) << 1,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            wake_all(e);
            return true;
        }
    }
    /* tell the communicator's other ranks, which wait for the claim */
    arrival_rec_t *refused = x->ops->arrival_rec(x, host_of(e), 2 * ARRIVAL_PAIRS);
    uint64_t slot = atomic_fetch_add_explicit(&refused->ticket, 1, memory_order_relaxed);
    atomic_store_explicit(&refused->order[slot % ARRIVAL_REFUSED], ctx + 1, memory_order_release);
    wake_all(e);
    e->err = weft_error(WEFT_ENOTSUP, "%s: all %u arrival-record pairs of rank %d are taken "
                        "(each communicator that runs an arrival-driven algorithm holds one "
                        "on its rank 0, and for hier_pap on each node leader, until it is "
                        "freed): free communicators you no longer use, or choose another "
                        "algorithm",
                        weft_coll_name((weft_coll_t)e->desc->coll), ARRIVAL_PAIRS, host_of(e));
    return false;
}

static bool was_refused(const exec_t *e)
{
    arrival_rec_t *refused = e->x->ops->arrival_rec(e->x, host_of(e), 2 * ARRIVAL_PAIRS);
    for (unsigned k = 0; k < ARRIVAL_REFUSED; k++)
        if (atomic_load_explicit(&refused->order[k], memory_order_acquire) == ctx_of(e) + 1)
            return true;
    return false;
}

/* Finds the call's record: false while the host rank has not claimed the
 * pair (or, with e->err set, when it cannot). */
static bool locate(exec_t *e)
{
    if (e->ar.rec >= 0)
        return true;
    uint64_t seq = e->desc->key & 0xffffffu;
    int j = owned_pair(e->x, host_of(e), ctx_of(e));
    if (j < 0 && e->s->rank == e->ar.host_rank && claim_pair(e))
        j = owned_pair(e->x, host_of(e), ctx_of(e));
    if (j < 0 && !e->err && was_refused(e)) {
        e->err = weft_error(WEFT_ENOTSUP, "%s: rank %d of this communicator could not claim "
                            "arrival records (all %u pairs of rank %d are taken): free "
                            "communicators you no longer use, or choose another algorithm",
                            weft_coll_name((weft_coll_t)e->desc->coll), e->ar.host_rank,
                            ARRIVAL_PAIRS, host_of(e));
    }
    if (j < 0) {
        e->ar.await_claim = !e->err;
        return false;
    }
    e->ar.await_claim = false;
    e->ar.rec = 2 * j + (int)(seq & 1);
    return true;
}

bool arrival_comm_freed(xport_t *x, int host, uint32_t ctx)
{
    int j = owned_pair(x, host, ctx);
    if (j >= 0)
        atomic_fetch_or_explicit(&x->ops->arrival_rec(x, host, 2 * (unsigned)j)->owner, 1,
                                 memory_order_acq_rel);
    return j >= 0;
}

/* The record is free for a new call when every rank of the call holding
 * it has arrived and counted itself out. */
static bool rec_free(arrival_rec_t *r, uint64_t t)
{
    if (!t)
        return true;
    uint64_t total = t >> 12 & FIELD;
    return (t & FIELD) == total &&
           atomic_load_explicit(&r->left, memory_order_acquire) == ((t >> 24) << 24 | total);
}

/* The arrival spread (last arrival minus first, in us) for adaptive: the
 * first arrival stamps its time, the last writes the spread; a last
 * arrival that does not see this call's stamp yet leaves the old spread. */
static void note_spread(exec_t *e, arrival_rec_t *r, int order)
{
    uint64_t now = weft_now_ns() / 1000u & ((1ull << 40) - 1), tag = e->ar.gen & 0xffffffu;
    e->ar.mode = (int)atomic_load_explicit(&r->mode, memory_order_relaxed);
    if (order == 0)
        atomic_store_explicit(&r->first_us, tag << 40 | now, memory_order_release);
    if (order == e->ar.nexpect - 1 && order > 0) {
        uint64_t f = atomic_load_explicit(&r->first_us, memory_order_acquire);
        if (f >> 40 == tag)
            atomic_store_explicit(&r->spread_us, (now - (f & ((1ull << 40) - 1))) &
                                  ((1ull << 40) - 1), memory_order_relaxed);
    }
}

void arrival_enlist(exec_t *e)
{
    board_comm_t *bc = e->bc;
    if (!bc)
        return;
    unsigned p = (unsigned)(e->desc->key & 1);
    e->arrival_pred = bc->arrival_last[p];
    bc->arrival_last[p] = e->desc->key + 1;
    e->arrival_state = ARRIVAL_ENLISTED;
}

/* A rank's calls of one record (calls two apart on a communicator) take
 * their tickets in call order.  A wait moves every call in flight
 * (engine.c), and a rank whose call k+2 took the record while its peers
 * were still in call k would wait for them there, while they wait for the
 * record.  Only calls that take tickets are in the order (arrival_enlist,
 * at their start), so each passes in turn. */
static bool pred_passed(const exec_t *e)
{
    return e->arrival_state != ARRIVAL_ENLISTED || !e->arrival_pred ||
           atomic_load_explicit(&e->bc->arrival_passed[e->desc->key & 1],
                                memory_order_acquire) == e->arrival_pred;
}

/* Who closed an abandoned call's ticket: the rank whose call log says it
 * abandoned the call, else the ranks that had arrived (one of them did). */
static void abandoner(const exec_t *e, const arrival_rec_t *r, uint64_t gen, char *who, size_t n)
{
    xport_t *x = e->x;
    for (int q = 0; q < e->s->nrank && x->ops->peer_view; q++) {
        peer_view_t v;
        if (q != e->s->rank && !x->ops->peer_view(x, e->world[q], e->desc->key, true, &v) &&
            v.found && v.state == CALL_ABANDONED) {
            snprintf(who, n, "rank %d", q);
            return;
        }
    }
    size_t len = (size_t)snprintf(who, n, "one of the ranks that had arrived (");
    for (int k = 0; k < e->ar.nexpect && len < n; k++) {
        uint64_t v = atomic_load_explicit(&r->order[k], memory_order_acquire);
        if (v >> 24 == gen && (v & DONE))
            len += (size_t)snprintf(who + len, n - len, "%srank %d", who[len - 1] == '(' ? "" : ", ",
                                    (int)(v & DONE) - 1);
    }
    if (len < n)
        snprintf(who + len, n - len, ")");
}

bool arrival_take(exec_t *e)
{
    if (!pred_passed(e))
        return false;
    if (!locate(e)) {
        if (e->err)
            exec_arrival_pass(e); /* it will never take one */
        return false;
    }
    arrival_rec_t *r = rec_of(e);
    uint64_t gen = e->ar.gen, P = (uint64_t)e->ar.nexpect;
    uint64_t t = atomic_load_explicit(&r->ticket, memory_order_acquire);
    for (;;) {
        uint64_t nt;
        int order;
        if (t >> 24 == gen) {
            order = (int)(t & FIELD);
            if ((uint64_t)order >= P) { /* arrival_abandon closed it */
                char who[160];
                abandoner(e, r, gen, who, sizeof who);
                e->err = weft_error(WEFT_EPEER, "%s: %s abandoned this call (call #%llu on "
                                    "its communicator) before this rank arrived",
                                    weft_coll_name((weft_coll_t)e->desc->coll), who,
                                    (unsigned long long)(e->desc->key & 0xffffffu));
                exec_arrival_pass(e);
                return false;
            }
            nt = t + 1;
        } else if (rec_free(r, t)) {
            order = 0;
            nt = gen << 24 | P << 12 | 1;
            /* before the ticket: its release publishes the choice (a rank
             * of this call that loses the race writes the same value, from
             * the same complete last call) */
            if (e->ar.decide) {
                uint64_t spread = atomic_load_explicit(&r->spread_us, memory_order_relaxed);
                int last = (int)atomic_load_explicit(&r->mode, memory_order_relaxed);
                atomic_store_explicit(&r->mode, (uint64_t)e->ar.decide(e, spread, last),
                                      memory_order_relaxed);
            }
        } else {
            e->ar.await_ticket = true;
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(&r->ticket, &t, nt, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            e->ar.await_ticket = false;
            e->ar.order = order;
            exec_arrival_pass(e);
            atomic_store_explicit(&r->order[order], gen << 24 | (uint64_t)(e->s->rank + 1),
                                  memory_order_release);
            if (e->ar.decide)
                note_spread(e, r, order);
            wake_all(e);
            return true;
        }
    }
}

int arrival_who(exec_t *e, int i)
{
    uint64_t v = atomic_load_explicit(&rec_of(e)->order[i], memory_order_acquire);
    if (v >> 24 != e->ar.gen) {
        e->ar.await_order = i;
        return -1;
    }
    e->ar.await_order = -1;
    return (int)(v & DONE) - 1;
}

bool arrival_first(exec_t *e, int *moved)
{
    if (e->ar.order < 0) {
        if (!arrival_take(e))
            return false;
        *moved = 1;
    }
    if (e->ar.leader < 0) {
        e->ar.leader = e->ar.order == 0 ? e->s->rank : arrival_who(e, 0);
        if (e->ar.leader < 0)
            return false;
        *moved = 1;
    }
    arrival_leave(e);
    return true;
}

void arrival_leave(exec_t *e)
{
    if (e->ar.left)
        return;
    e->ar.left = true;
    arrival_rec_t *r = rec_of(e);
    uint64_t gen = e->ar.gen, v = atomic_load_explicit(&r->left, memory_order_acquire), nv;
    /* a count of another generation is the previous call's, complete (the
     * ticket was taken only then) */
    do {
        if (v >> 24 == gen && (v & DONE) >= (uint64_t)e->ar.nexpect)
            return; /* closed by arrival_abandon */
        nv = v >> 24 == gen ? v + 1 : (gen << 24 | 1);
    } while (!atomic_compare_exchange_weak_explicit(&r->left, &v, nv, memory_order_acq_rel,
                                                    memory_order_acquire));
    if ((nv & DONE) == (uint64_t)e->ar.nexpect)
        wake_all(e); /* the record is free: the communicator's next call may wait for it */
}

void arrival_abandon(exec_t *e)
{
    if (e->ar.order < 0)
        return; /* it holds no ticket */
    /* (having left is not enough: the ranks that have not arrived keep the
     * record.)  Mark the call complete: every rank arrived (late arrivals learn that
     * it was abandoned) and done; ranks still inside wait for entries of
     * this generation that may now be overwritten, which they never take
     * for theirs, until the watch finds this rank's call abandoned */
    arrival_rec_t *r = rec_of(e);
    uint64_t gen = e->ar.gen, P = (uint64_t)e->ar.nexpect;
    uint64_t t = atomic_load_explicit(&r->ticket, memory_order_acquire);
    while (t >> 24 == gen && (t & FIELD) < P)
        if (atomic_compare_exchange_weak_explicit(&r->ticket, &t, gen << 24 | P << 12 | P,
                                                  memory_order_acq_rel, memory_order_acquire))
            break;
    uint64_t v = atomic_load_explicit(&r->left, memory_order_acquire);
    if (t >> 24 == gen)
        while (!atomic_compare_exchange_weak_explicit(&r->left, &v, gen << 24 | P,
                                                      memory_order_acq_rel, memory_order_acquire))
            ;
    e->ar.left = true;
    wake_all(e);
}

static void on_done(xreq_t *r, int err)
{
    exec_t *e = r->owner;
    e->pending[r - e->reqs] = 2;
    e->ar.ndone++;
    exec_fail(e, err);
}

static xreq_t *fill(exec_t *e, uint32_t i, int peer, uint32_t tag, size_t bytes)
{
    xreq_t *r = &e->reqs[i];
    memset(r, 0, sizeof *r);
    r->cb = on_done;
    r->owner = e;
    r->peer = e->world[peer];
    r->tag = e->tagbase | tag;
    r->sig = e->sig;
    r->bytes = bytes;
    e->pending[i] = 1;
    e->ar.nposted++;
    if (i >= e->ar.nreq)
        e->ar.nreq = i + 1;
    return r;
}

int arrival_send(exec_t *e, uint32_t i, int peer, uint32_t tag, const void *buf, size_t bytes)
{
    xreq_t *r = fill(e, i, peer, tag, bytes);
    r->sbuf = buf;
    return e->x->ops->isend(e->x, r);
}

int arrival_recv(exec_t *e, uint32_t i, int peer, uint32_t tag, void *dst, size_t bytes,
                 bool reduce)
{
    xreq_t *r = fill(e, i, peer, tag, bytes);
    r->sink = (xsink_t){.dst = dst, .red = reduce ? &e->red : NULL, .src_left = true};
    return e->x->ops->irecv(e->x, r);
}

int arrival_poll(exec_t *e, int *moved)
{
    int m = e->x->ops->progress(e->x);
    if (m < 0)
        return m;
    if (m > 0)
        *moved = 1;
    return e->err ? -e->err : 0;
}

int arrival_chain_recv(exec_t *e, char *acc)
{
    size_t bytes = arrival_bytes(e);
    if (acc != e->buf[BUF_IN] && bytes)
        copy_bytes(acc, e->buf[BUF_IN], bytes);
    return arrival_recv(e, 0, e->ar.pred, ARRIVAL_TAG_DATA, acc, bytes, true);
}

bool arrival_await(exec_t *e, int i, int *moved, int *ret)
{
    if ((*ret = arrival_poll(e, moved)))
        return false;
    if (i == ARRIVAL_ALL ? e->ar.ndone >= e->ar.nposted : arrival_done(e, (uint32_t)i))
        return true;
    *ret = arrival_idle(e, *moved);
    return false;
}

int arrival_idle(exec_t *e, int moved)
{
    e->moved = moved;
    if (e->err)
        return -e->err;
    if (!moved) {
        int h = e->x->ops->health(e->x);
        if (h)
            return -h;
    }
    return 0;
}

bool arrival_trivial(exec_t *e)
{
    size_t bytes = arrival_bytes(e);
    /* one rank alone.  An empty call of more ranks on one machine takes
     * the board's empty path (api.c, arm_exec), which compares it with the
     * neighbours' call logs; where the ranks span machines (hier_pap) a
     * neighbour's log may be out of reach, so there an empty call runs its
     * steps like any other, and the peers it meets compare it. */
    if (e->s->nrank > 1)
        return false;
    if (bytes && e->buf[BUF_OUT] != e->buf[BUF_IN])
        copy_bytes(e->buf[BUF_OUT], e->buf[BUF_IN], bytes);
    return true;
}

bool arrival_ready(void *arg)
{
    exec_t *e = arg;
    if (e->ar.await_claim)
        return owned_pair(e->x, host_of(e), ctx_of(e)) >= 0 || was_refused(e);
    if (e->ar.rec < 0)
        return false;
    arrival_rec_t *r = rec_of(e);
    if (e->ar.await_ticket) {
        uint64_t t = atomic_load_explicit(&r->ticket, memory_order_acquire);
        return t >> 24 == e->ar.gen || rec_free(r, t);
    }
    if (e->ar.await_order >= 0)
        return atomic_load_explicit(&r->order[e->ar.await_order], memory_order_acquire) >> 24 ==
               e->ar.gen;
    return false; /* messages wake the rank themselves */
}

/* Who a rank waits for depends on who has arrived: every peer is named,
 * and the watch fails only on what a peer's call log proves. */
int arrival_waiting_for(const exec_t *e, int *ranks, int max)
{
    int n = 0;
    for (int q = 0; q < e->s->nrank && n < max; q++)
        if (q != e->s->rank)
            ranks[n++] = q;
    return n;
}

int arrival_usable(const coll_args_t *a, char *why, size_t len)
{
    const char *cn = weft_coll_name(a->coll);
    if (!a->shared_board) {
        snprintf(why, len, "%s's arrival-driven algorithms need every rank on one machine's "
                           "shared memory (weft run, or MPI ranks of one node)", cn);
        return -1;
    }
    if (a->nrank > (int)ARRIVAL_MAX) {
        snprintf(why, len, "%s's arrival-driven algorithms serve at most %u ranks (the arrival "
                           "record's), not %d", cn, ARRIVAL_MAX, a->nrank);
        return -1;
    }
    return 0;
}

void arrival_coll_args(const exec_t *e, coll_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->coll = (weft_coll_t)e->desc->coll;
    a->nrank = e->s->nrank;
    a->rank = e->s->rank;
    a->count = e->desc->count;
    a->esize = e->esize;
    a->commutative = true;
    a->shared_board = e->x->ops->board_slot != NULL;
    a->board_payload = e->x->board_payload;
    a->node_board = e->x->ops->arrival_rec != NULL;
    a->node_of = e->node_of;
    a->nnodes = e->nnodes;
}
