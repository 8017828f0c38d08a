/* watch.c — what a schedule that does not move is waiting for.
 *
 * Every call is published in the transport's call log (xport.h: its key,
 * collective, algorithm, count, datatype, op, root, parameters) before its
 * first message.  A wait that has not moved for a while reads the records
 * of the peers its unfinished sends and receives name, and fails only on
 * what is proven, never on a guess about a slow peer:
 *   - the peer's record of this very call differs      -> WEFT_EMISMATCH
 *   - its record is gone, but it ended the call well and
 *     all it sent is in, yet a receive from it waits    -> WEFT_EMISMATCH
 *   - a message of this call under another signature
 *     waits here, from any peer (xport sent_otherwise)  -> WEFT_EMISMATCH
 *   - the peer abandoned it (timeout, revoke, error;
 *     its record, or else its newest failed call's key) -> WEFT_EPEER
 *   - the peer refused it (api.c, call_refused; its
 *     record, or else its word for the communicator)    -> WEFT_EMISMATCH
 *     made otherwise there, WEFT_EPEER made alike
 *   - the peer is in weft_finalize, not in this call    -> WEFT_EMISMATCH
 *     (WEFT_EPEER when it gave up a call before, or the job was aborted
 *     by then: a fault, not a skip)
 * Over MPI there is no log to read: the stalled wait announces its call to
 * those peers (xport announce), and reads what they announced in turn, so
 * two stalled ranks that disagree both find out one watch round later.
 * A mismatch ends the job (xport fail_job), so the other ranks' waits fail
 * with WEFT_EPEER instead of hanging.  A schedule that receives nothing (a
 * broadcast's root) cannot stall; at its end it compares its call with the
 * records of the peers it sent to (one read each); where a peer has no
 * record yet, the rank's next calls look again as they start
 * (board_recheck), and where those are gone its receivers prove it later
 * (shm.c: a message of a call they ended).  A peer that has not arrived
 * is only named, when the communicator's timeout expires. */
#include <stdio.h>
#include <string.h>

#include "../algo/algo.h"
#include "engine.h"

void call_describe(const call_desc_t *d, char *buf, size_t n)
{
    size_t cnt;
    const algo_t *t = algo_table(&cnt);
    const char *an = d->algo < cnt ? t[d->algo].name : d->algo == CALL_ALGO_AUTO ? "auto" : "?";
    if (d->flags & CALL_FINALIZE) {
        snprintf(buf, n, "the barrier of weft_finalize (call #%u on communicator %u)",
                 (unsigned)d->key, (unsigned)(d->key >> 32));
        return;
    }
    char op[32] = "";
    if (d->op)
        snprintf(op, sizeof op, " %s",
                 d->op <= WEFT_OP_BUILTIN_COUNT ? weft_op_name((weft_op_t)(d->op - 1)) : "user-op");
    char root[24] = "";
    if (coll_is_rooted((weft_coll_t)d->coll))
        snprintf(root, sizeof root, ", root %d", d->root);
    snprintf(buf, n, "%s %s, %llu x %s%s%s (call #%u on communicator %u)",
             weft_coll_name((weft_coll_t)d->coll), an, (unsigned long long)d->count,
             weft_dtype_name((weft_dtype_t)d->dtype), op, root, (unsigned)d->key,
             (unsigned)(d->key >> 32));
}

static void call_diff(const call_desc_t *a, const call_desc_t *b, char *buf, size_t n)
{
    const char *what[7] = {"collective", "algorithm", "count", "datatype", "op", "root",
                           "algorithm parameters"};
    bool differs[7] = {a->coll != b->coll, a->algo != b->algo, a->count != b->count,
                       a->dtype != b->dtype, a->op != b->op, a->root != b->root,
                       a->params != b->params};
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 7 && used < n; i++)
        if (differs[i])
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", what[i]);
    if (!used)
        snprintf(buf, n, "user op");
}

/* Ends the job with the message, returning code; locked: the caller holds
 * e->x->lock (fail_job, like every transport call, needs it). */
static int fail(exec_t *e, int code, const char *msg, bool locked)
{
    if (code == WEFT_EMISMATCH && e->x->ops->fail_job) {
        if (!locked)
            pthread_mutex_lock(&e->x->lock);
        e->x->ops->fail_job(e->x, msg);
        if (!locked)
            pthread_mutex_unlock(&e->x->lock);
    }
    return weft_error(code, "%s", msg);
}

/* refused_by: the rank (me or peer) whose call was refused (api.c,
 * call_refused), said before the calls' descriptions so that the job's
 * abort message (256 bytes, segment.h) keeps it; -1 for none. */
void call_disagreement(const call_desc_t *mine, int me, const call_desc_t *theirs, int peer,
                       int refused_by, char *buf, size_t n)
{
    char mine_s[160], their_s[160], diff[96], refused[48] = "";
    call_describe(mine, mine_s, sizeof mine_s);
    call_describe(theirs, their_s, sizeof their_s);
    call_diff(mine, theirs, diff, sizeof diff);
    if (refused_by >= 0)
        snprintf(refused, sizeof refused, "; rank %d refused its call", refused_by);
    snprintf(buf, n, "ranks %d and %d disagree on a collective (%s differ)%s: rank %d calls %s; "
             "rank %d calls %s", me, peer, diff, refused, me, mine_s, peer, their_s);
}

/* A peer in weft_finalize after a call failed on it did not skip this
 * collective: it left after a fault (EPEER, the job goes on). */
static int left_after_fault(exec_t *e, int peer, const peer_view_t *v, bool locked)
{
    /* its call may have failed for a fault that ended the job (a
     * disagreement another rank proved, which it saw before it left):
     * that fault's message says why.  Read after the peer's state, as
     * check_peer does for a peer gone: rank 2 of 5 once named rank 4's
     * finalize where the others named the skip it had made
     * (test_mismatch skip_free_wait) */
    if (!locked)
        pthread_mutex_lock(&e->x->lock);
    int h = e->x->ops->health(e->x);
    if (!locked)
        pthread_mutex_unlock(&e->x->lock);
    if (h)
        return h;
    char mine_s[160], theirs[160] = "a collective", msg[512];
    call_describe(e->desc, mine_s, sizeof mine_s);
    if (v->abandoned_found)
        call_describe(&v->abandoned_call, theirs, sizeof theirs);
    snprintf(msg, sizeof msg, "rank %d has reached weft_finalize after %s failed there (an "
             "error, a timeout or a revoke) while rank %d waits for it in %s", peer, theirs,
             e->s->rank, mine_s);
    return fail(e, WEFT_EPEER, msg, locked);
}

/* The peer is in weft_finalize, or past it. */
static bool peer_leaving(const peer_view_t *v)
{
    return v->rank_state == PEER_FINALIZING || v->rank_state == PEER_FINALIZED ||
           v->rank_state == PEER_MPI_FINALIZING || v->rank_state == PEER_FREED;
}

static int differs(exec_t *e, int me, int peer, const call_desc_t *theirs, bool locked)
{
    char msg[512];
    call_disagreement(e->desc, me, theirs, peer, -1, msg, sizeof msg);
    return fail(e, WEFT_EMISMATCH, msg, locked);
}

/* The peer refused this call (api.c, call_refused): it will never take
 * part.  Made otherwise there, the ranks disagree; made alike, the call
 * failed on the peer alone (memory, a resource of its own).  theirs: its
 * record, or NULL where only its word for the communicator is left, with
 * the low 24 bits of its signature (sig24). */
static int refused_there(exec_t *e, int peer, const call_desc_t *theirs, uint32_t sig24,
                         bool locked)
{
    char msg[512], mine_s[160];
    int me = e->s->rank;
    call_describe(e->desc, mine_s, sizeof mine_s);
    if (theirs && theirs->sig != e->desc->sig) {
        call_disagreement(e->desc, me, theirs, peer, peer, msg, sizeof msg);
        return fail(e, WEFT_EMISMATCH, msg, locked);
    }
    if (!theirs && sig24 != (e->desc->sig & 0xffffffu)) {
        snprintf(msg, sizeof msg, "ranks %d and %d disagree on a collective: rank %d calls %s, "
                 "which rank %d made otherwise and refused (signature %06x against %06x; its "
                 "record of the call is gone)", me, peer, me, mine_s, peer, (unsigned)sig24,
                 (unsigned)(e->desc->sig & 0xffffffu));
        return fail(e, WEFT_EMISMATCH, msg, locked);
    }
    snprintf(msg, sizeof msg, "rank %d refused %s (an error there before the call began) while "
             "rank %d makes it", peer, mine_s, me);
    return fail(e, WEFT_EPEER, msg, locked);
}

static bool in_flight(const exec_t *e, uint32_t i)
{
    uint8_t k = sched_step(e->s, i).kind;
    return step_kind_is_comm(k) && e->pending[i] == 0;
}

/* The communicator ranks e waits for, at most max, into peers (a peer
 * named by several steps in a row once). */
static int waited_for(const exec_t *e, int *peers, int max)
{
    if (e->board)
        return e->board->waiting_for(e, peers, max);
    int n = 0, last = -1;
    for (uint32_t i = 0; i < e->s->nsteps && n < max; i++) {
        if (!in_flight(e, i) || sched_step(e->s, i).peer == last)
            continue;
        peers[n++] = last = sched_step(e->s, i).peer;
    }
    return n;
}

#define WATCH_PEERS 1024 /* peers looked at per watch round (a linear schedule
                          * waits for up to P - 1) */

/* The peer ended this call well, which it does only once all it sends in
 * it is out: once this rank has taken in all that came from it (its
 * record of the call is gone, newer calls took its place), a receive of
 * this call from it still posted proves it made the call otherwise.  A
 * schedule only (the board has its own proofs), and only where every
 * step ready has been posted.  true: failed (the job ends). */
static bool ended_without(exec_t *e, int peer)
{
    xport_t *x = e->x;
    if (e->board || !x->ops->drained_from || exec_progress(e) != 0 || e->rhead != e->rtail ||
        !x->ops->drained_from(x, e->world[peer]))
        return false;
    for (uint32_t i = 0; i < e->s->nsteps; i++) {
        step_t st = sched_step(e->s, i);
        if (!in_flight(e, i) || st.kind == STEP_SEND || st.peer != peer)
            continue;
        char mine_s[160], msg[512];
        call_describe(e->desc, mine_s, sizeof mine_s);
        snprintf(msg, sizeof msg, "ranks %d and %d disagree on a collective: rank %d calls %s "
                 "and waits for rank %d there, which ended that call without sending it "
                 "(made otherwise, or refused there; its record of the call is gone)",
                 e->s->rank, peer, e->s->rank, mine_s, peer);
        fail(e, WEFT_EMISMATCH, msg, true);
        return true;
    }
    return false;
}

/* Checks a peer (comm rank) this rank waits for; OK when nothing is
 * proven wrong. */
static int check_peer(exec_t *e, int peer)
{
    xport_t *x = e->x;
    const call_desc_t *d = e->desc;
    int me = e->s->rank;
    if (x->ops->announce) /* peers that cannot read our log are told */
        x->ops->announce(x, e->world[peer], d);
    peer_view_t v;
    if (x->ops->peer_view(x, e->world[peer], d->key, false, &v))
        return WEFT_OK;
    char mine_s[160], msg[512];
    call_describe(d, mine_s, sizeof mine_s);
    if (v.aborted)
        return WEFT_EPEER; /* the message is set */
    if (v.conflict) { /* an earlier call, which this rank has left already */
        call_disagreement(&v.mine, me, &v.call, peer, -1, msg, sizeof msg);
        return fail(e, WEFT_EMISMATCH, msg, true);
    }
    bool gone = peer_leaving(&v);
    /* waiting in weft_finalize's own barrier, a peer in weft_finalize is
     * making it too (its record may not be written yet), whatever failed
     * there before: one that failed and then left the job is past it
     * (1 run in 40 of a refused bcast at 5 ranks failed finalize so) */
    bool same_end = (d->flags & CALL_FINALIZE) && v.rank_state == PEER_FINALIZING;
    if (v.abandoned && !same_end &&
        ((v.found && (v.call.flags & CALL_FINALIZE)) || (!v.found && gone)))
        return left_after_fault(e, peer, &v, true);
    if (v.found && v.state == CALL_REFUSED)
        return refused_there(e, peer, &v.call, 0, true);
    if (v.found && v.call.sig != d->sig)
        return differs(e, me, peer, &v.call, true);
    if (v.found && v.state == CALL_ABANDONED) {
        /* it may have left for a failure that ended the job (a
         * disagreement it proved): that failure's message says why */
        int h = x->ops->health(x);
        if (h)
            return h;
        snprintf(msg, sizeof msg, "rank %d abandoned %s (an error there, its timeout, or a "
                 "revoke) while rank %d waits for it", peer, mine_s, me);
        return fail(e, WEFT_EPEER, msg, true);
    }
    if (!v.found && v.refused) /* its record is gone, not the word */
        return refused_there(e, peer, NULL, v.refused_sig24, true);
    if (!v.found && v.abandoned_this) {
        /* its record is gone (newer calls), but it said this call failed */
        int h = x->ops->health(x);
        if (h)
            return h;
        snprintf(msg, sizeof msg, "rank %d gave up %s (an error there, its timeout, or a "
                 "revoke) while rank %d waits for it", peer, mine_s, me);
        return fail(e, WEFT_EPEER, msg, true);
    }
    if (!v.found && v.ended_well && ended_without(e, peer))
        return WEFT_EMISMATCH; /* failed: the job ends */
    if (!v.found && gone && (d->flags & CALL_FINALIZE) && v.rank_state == PEER_FINALIZING)
        return WEFT_OK; /* it says it is finalizing before it makes this very barrier:
                           on its way in (a slow rank, under tsan, was named as skipping) */
    if (!v.found && gone) {
        /* a peer that left after the job was aborted (a rank died) left
         * for that fault; its state is read after the abort it saw */
        int h = x->ops->health(x);
        if (h)
            return h;
        const char *where = v.rank_state == PEER_FINALIZING
                                ? "is finalizing (weft_finalize or MPI_Finalize)"
                            : v.rank_state == PEER_MPI_FINALIZING
                                ? "is in MPI_Finalize, never having made it"
                            : v.rank_state == PEER_FREED
                                ? "freed the communicator, never having made it,"
                                : "has called weft_finalize";
        snprintf(msg, sizeof msg, "rank %d %s while rank %d waits for it in %s (did it skip "
                 "this collective?)", peer, where, me, mine_s);
        return fail(e, WEFT_EMISMATCH, msg, true);
    }
    return WEFT_OK;
}

int watch_stalled(exec_t *e)
{
    if (!e->desc || !e->x->ops->peer_view)
        return WEFT_OK;
    if (e->board && e->board->stalled) {
        int rc = e->board->stalled(e);
        if (rc)
            return rc;
    }
    int peers[WATCH_PEERS], n = waited_for(e, peers, WATCH_PEERS);
    for (int k = 0; k < n; k++) {
        int rc = check_peer(e, peers[k]);
        if (rc || (!e->board && e->ndone == e->s->nsteps))
            return rc;
    }
    /* a peer this call never receives from in that step may have sent
     * under another signature (the job ends; the message is set) */
    xport_t *x = e->x;
    return x->ops->sent_otherwise ? x->ops->sent_otherwise(x, e->desc->key, e->desc->sig, false)
                                  : WEFT_OK;
}

/* watch_peer_agrees; *unseen (where given) when the peer's log holds no
 * record of the call: not made yet there, or its record gone. */
static int peer_agrees(exec_t *e, int peer, bool locked, bool *unseen)
{
    xport_t *x = e->x;
    peer_view_t v;
    if (!e->desc || !x->ops->peer_view)
        return WEFT_OK;
    if (x->ops->peer_view(x, e->world[peer], e->desc->key, true, &v) || !v.found) {
        if (unseen)
            *unseen = true;
        return WEFT_OK;
    }
    if (v.state == CALL_REFUSED)
        return refused_there(e, peer, &v.call, 0, locked);
    if (v.call.sig == e->desc->sig)
        return WEFT_OK;
    if (v.abandoned && (v.call.flags & CALL_FINALIZE))
        return left_after_fault(e, peer, &v, locked);
    return differs(e, e->s->rank, peer, &v.call, locked);
}

int watch_peer_agrees(exec_t *e, int peer, bool locked)
{
    return peer_agrees(e, peer, locked, NULL);
}

int watch_peer_made_it_differently(exec_t *e, int peer, bool locked)
{
    int rc = watch_peer_agrees(e, peer, locked);
    if (rc)
        return rc;
    /* no record of the call to say how (lost to a newer call in its slot,
     * or its owner's rewrite outlasted the read): a peer that gave a call
     * up and is leaving made it as the barrier of its weft_finalize */
    peer_view_t v;
    xport_t *x = e->x;
    if (e->desc && x->ops->peer_view &&
        !x->ops->peer_view(x, e->world[peer], e->desc->key, false, &v) && v.abandoned &&
        peer_leaving(&v))
        return left_after_fault(e, peer, &v, locked);
    return WEFT_OK;
}

int watch_sent(exec_t *e)
{
    /* the first and the last peer: a root that is one in its own eyes only
     * differs from all of them */
    const int *peers = e->sent_to;
    int unseen_peer = -1;
    for (int k = 0; k < 2; k++) {
        if (peers[k] < 0 || (k && peers[1] == peers[0]))
            continue;
        bool unseen = false;
        int rc = peer_agrees(e, peers[k], false, &unseen);
        if (rc)
            return rc;
        if (unseen && unseen_peer < 0)
            unseen_peer = peers[k];
    }
    /* a peer that has not made the call yet may make it otherwise and
     * still find all it expects (a reduce whose ranks all take another
     * for the root: every one of them only sends), and the messages this
     * rank left it sit in a ring that its next calls may never read: its
     * record is looked at again as this rank's next calls start.  Not
     * where peers learn of calls by message (over MPI, announce): there a
     * peer's record is only what it announced, which a peer that does not
     * stall never does, so every call would look again for nothing
     * (docs/MPI.md says what that leaves). */
    if (unseen_peer >= 0 && e->bc && !e->x->ops->announce)
        board_note_unseen(e->bc, e->desc, unseen_peer);
    return WEFT_OK;
}

void watch_expired(exec_t *e, char *msg, size_t n)
{
    xport_t *x = e->x;
    char mine_s[160];
    const char *sep = "";
    call_describe(e->desc ? e->desc : &(call_desc_t){0}, mine_s, sizeof mine_s);
    size_t used = (size_t)snprintf(msg, n, "%s did not finish within %llu ms; waiting for",
                                   mine_s, (unsigned long long)(e->limit_ns / 1000000ull));
    int peers[WATCH_PEERS], np = waited_for(e, peers, WATCH_PEERS), named = 0;
    for (int k = 0; k < np && used < n; k++) {
        int peer = peers[k];
        if (named++ == 8) {
            used += (size_t)snprintf(msg + used, n - used, ", ...");
            break;
        }
        peer_view_t v;
        const char *where = "";
        char buf[64] = "";
        if (e->desc && x->ops->peer_view && !x->ops->peer_view(x, e->world[peer], e->desc->key,
                                                                 false, &v)) {
            if (v.found)
                where = " (in this call)";
            else if (v.any_on_ctx)
                snprintf(buf, sizeof buf, " (has not arrived: its last call here is #%u)",
                         v.latest_seq);
            else
                where = " (has not arrived)";
        }
        used += (size_t)snprintf(msg + used, n - used, "%s rank %d%s%s", sep, peer, where, buf);
        sep = ",";
    }
}
