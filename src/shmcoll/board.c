/* board.c — the board collectives: tiny payloads without a schedule.
 *
 * A rank that contributes writes its bytes into a slot of its own on the
 * board (segment.h: a slot is 34 or 130 cache lines, the first holding the
 * call's stamp, signature and 40 bytes); a rank that needs others' bytes
 * waits until their slots carry the same call and reads them there.  One
 * store or one wait per peer per call, no message, no lock, no step
 * queue: the latency of the cache lines that cross.
 *
 *   allreduce  every rank posts; every rank combines x0 op x1 op ... op
 *              x(P-1) from the slots itself (the same expression on the
 *              same bytes everywhere: identical results, and
 *              non-commutative ops served);
 *   bcast      the root posts and leaves; the others copy its slot;
 *   reduce     the non-roots post and leave; the root combines in rank
 *              order, its own input taken from its buffer;
 *   allgather  every rank posts its block; every rank copies each peer's
 *              slot to that peer's place in its output;
 *   reduce_scatter  every rank posts its whole input (P blocks); every
 *              rank combines its own block from the slots in rank order;
 *   barrier    every rank posts an empty slot and waits until every other
 *              slot holds the call: one wait per rank, where a
 *              dissemination barrier chains lg P waits, each on a rank
 *              that may have no core when ranks outnumber cores.
 *
 * A call of no elements, the barrier's aside, posts and reads nothing: it
 * compares itself with its neighbours' call logs and leaves (empty_call).
 *
 * A slot is chosen by the call's communicator (each live one holds a pair
 * of its own, comm.c) and sequence number, and is rewritten only once every
 * reader of its last contents has counted itself out (the slot's reads), so
 * a communicator's calls, blocking or split-phase, and the communicators
 * that hold the pair in turn may share it: a writer that finds it busy
 * waits like any other wait, and the readers it waits for progress their
 * calls in theirs.
 *
 * Proven read: the counter is one more line between cores per call,
 * read by the owner where a reader last wrote it: 8-11 % of a 2-rank
 * allreduce of 8-168 bytes back to back, and up to 15-18 % where the
 * cores pass lines slowly (PERFORMANCE-LOG.md, "The board's count read only
 * where nothing proves it").  A post says whether its rank had finished
 * every earlier call of its communicator (BOARD_POST_ORDERED); then that
 * rank has read every slot those calls had it read.  So where this rank
 * posted call k-2 of a communicator, and in call k-1, an allreduce or
 * barrier, found every peer's post ordered, each peer has read its post
 * of k-2, the contents of the slot call k posts in: it posts without
 * reading the counter, which readers still count (a later post may need
 * it), now on a line that stays with them.  api.c keeps the two facts per
 * communicator (board_comm_t, e->bc) and hands them to the call
 * (board_arm);
 * the slot's stamp must still be that of call k-2.
 *
 * Calls in flight: a wait moves every call in flight, as MPI's progress
 * rule wants (engine.c), so a rank's split-phase calls k and k+2 of one
 * communicator, which share a slot, may both be ready to post.  Posts
 * into a slot go in call order: posted in either order, two ranks could
 * each wait for the other to read the post it made first (a's k+2 waits
 * for b to read it, which b's k+2 does only after b posts k+2, which
 * waits for a to read b's k, which a does only after a posts k).  And a
 * rank combines its own part from its input, not its slot, which its
 * next call may rewrite once the peers have read it.
 *
 * Ranks that disagree: a reader checks the signature of every slot it
 * reads; a rank that waits is watched like any other (watch.c); a rank
 * that posts and leaves compares its call with its two neighbours' call
 * logs, as a schedule that only sends does; and a writer held up by a
 * slot nobody reads looks for the peer that made that call differently.
 * The second kind of algorithm of DESIGN.md: not a schedule, so the
 * checker does not prove it; test_board, test_coll and weft stress run it. */
#include <stdio.h>
#include <string.h>

#include "../algo/algo.h"
#include "../core/copy.h"
#include "../core/lines.h"
#include "../exec/engine.h"
#include "../xport/segment.h"

enum { BOARD_FREE_WAIT = 0, BOARD_POSTED = 1, BOARD_READING = 2, BOARD_READ = 3, BOARD_EMPTY = 4 };

static board_slot_t *slot_of(const exec_t *e, int rank)
{
    return e->x->ops->board_slot(e->x, e->world[rank], e->br.slot);
}

/* A slot's count of reads done (segment.h: its last line). */
static _Atomic uint32_t *read_count(const exec_t *e, const board_slot_t *s)
{
    return board_reads(s, e->x->board_payload);
}

static uint64_t stamp_of(const exec_t *e) { return e->desc->key + 1; }

/* The call's bytes per rank (its count is in the published call). */
static size_t bytes_of(const exec_t *e) { return e->desc->count * e->esize; }

static bool is_root(const exec_t *e) { return e->s->rank == e->desc->root; }

/* A call of no elements, but a barrier, has nothing to post or read: it
 * compares itself with its neighbours' call logs and leaves (empty_progress),
 * as an arrival-driven one does, instead of waiting for every peer to
 * post: an empty allreduce at 3 ranks on 2 cores took 2.8-4.2 us waiting
 * for the rank without a core (PERFORMANCE-LOG.md, "Empty calls").  MPI
 * asks no collective but the barrier to synchronise, and MPI libraries
 * return from an empty one at once. */
static bool empty_call(const exec_t *e)
{
    return e->desc->count == 0 && e->desc->coll != WEFT_COLL_BARRIER;
}

/* Every rank posts and reads every other slot. */
static bool all_to_all(const exec_t *e)
{
    if (empty_call(e))
        return false;
    return e->desc->coll == WEFT_COLL_ALLREDUCE || e->desc->coll == WEFT_COLL_BARRIER ||
           e->desc->coll == WEFT_COLL_ALLGATHER || e->desc->coll == WEFT_COLL_REDUCE_SCATTER;
}

/* The bytes a rank posts: a reduce_scatter's whole input, P blocks. */
static size_t posted_bytes(const exec_t *e)
{
    size_t b = bytes_of(e);
    return e->desc->coll == WEFT_COLL_REDUCE_SCATTER ? b * (size_t)e->s->nrank : b;
}

/* What this rank does in the call: post its bytes, read the others'. */
static bool posts(const exec_t *e)
{
    return !empty_call(e) && (all_to_all(e) || (e->desc->coll == WEFT_COLL_BCAST) == is_root(e));
}

static bool reads(const exec_t *e)
{
    return !empty_call(e) && (all_to_all(e) || (e->desc->coll == WEFT_COLL_REDUCE) == is_root(e));
}

/* A slot's bytes are read by every peer, except in a reduce (the root). */
static uint32_t readers_of(const exec_t *e)
{
    return e->desc->coll == WEFT_COLL_REDUCE ? 1u : (uint32_t)(e->s->nrank - 1);
}

/* The bytes this rank contributes: a bcast's are in the root's buffer. */
static const char *contribution(const exec_t *e)
{
    return e->buf[e->desc->coll == WEFT_COLL_BCAST ? BUF_OUT : BUF_IN];
}

/* Every reader of the slot's contents is done with them (wanted and reads
 * wrap together: their difference is what counts). */
static bool slot_free(const exec_t *e, const board_slot_t *me)
{
    uint32_t reads = atomic_load_explicit(read_count(e, me), memory_order_acquire);
    return (int32_t)(reads - me->wanted) >= 0;
}

/* Whether this rank may write its slot: every reader of its contents is
 * known to be done (Proven read, above), or has counted itself out. */
static bool slot_may_post(const exec_t *e, const board_slot_t *me)
{
    if (e->br.pred_stamp &&
        atomic_load_explicit(&me->stamp, memory_order_relaxed) != e->br.pred_stamp)
        return false; /* this rank's call before this one in the slot has not posted */
    if (e->br.proven_stamp &&
        atomic_load_explicit(&me->stamp, memory_order_relaxed) == e->br.proven_stamp)
        return true;
    return slot_free(e, me);
}

/* Writes this rank's contribution when its slot is free; false if not yet.
 * Only this process writes its slots, and always under the transport's
 * lock (exec_progress's callers hold it), so two threads on communicators
 * that share a slot cannot both find it free.  Where the CPU can, the
 * post's lines go to the shared cache at once (lines.h), so that readers
 * load them from there instead of snooping this core: 2 ranks, Xeon
 * (Emerald Rapids) VM, allreduce of 8 B 0.46 -> 0.34-0.40 us, of 64 B
 * 0.73 -> 0.43 (PERFORMANCE-LOG.md, "Posts handed to the shared cache"). */
static bool post(exec_t *e)
{
    board_slot_t *me = slot_of(e, e->s->rank);
    if (!slot_may_post(e, me))
        return false;
    size_t bytes = posted_bytes(e);
    me->wanted += readers_of(e);
    me->sig = e->sig;
    me->len = (uint32_t)bytes;
    me->flags = (e->br.ordered ? BOARD_POST_ORDERED : 0) |
                (e->desc->coll == WEFT_COLL_REDUCE ? (uint32_t)e->desc->root + 1 : 0)
                    << BOARD_POST_READER_SHIFT;
    if (bytes)
        copy_bytes(me->data, contribution(e), bytes);
    atomic_store_explicit(&me->stamp, stamp_of(e), memory_order_release);
    if (lines_demote_supported())
        lines_demote(me, offsetof(board_slot_t, data) + bytes);
    atomic_store_explicit(&e->bc->posted_len[e->desc->key & 1], (uint32_t)bytes,
                          memory_order_relaxed);
    return true;
}

/* Wakes the readers of this rank's post that sleep.  Its fence waits until
 * the post is out of the store buffer, which takes a transfer when a peer
 * polls the slot: a reader first looks for its peers' posts (loads pass
 * the pending stores) and wakes only before it idles or ends. */
static void wake_readers(exec_t *e)
{
    if (e->desc->coll == WEFT_COLL_REDUCE)
        e->x->ops->wake_ranks(e->x, &e->world[e->desc->root], 1);
    else
        e->x->ops->wake_ranks(e->x, e->world, e->s->nrank);
}

/* The communicator ranks whose slots this rank reads: all others, or a
 * bcast's root alone. */
static void read_range(const exec_t *e, int *first, int *end)
{
    if (e->desc->coll == WEFT_COLL_BCAST)
        *first = e->desc->root, *end = e->desc->root + 1;
    else
        *first = 0, *end = e->s->nrank;
}

/* A communicator's calls alternate between the two slots of its pair
 * (context id mod BOARD_SLOTS / 2), which no other live communicator of
 * any of its ranks holds (comm.c): calls of two communicators made at once
 * by two threads never wait for each other's readers. */
static unsigned slot_index(uint64_t key)
{
    return (unsigned)(((key >> 32) * 2 + (key & 1)) % BOARD_SLOTS);
}

/* At the end of a call every rank reads and posts in (allreduce, barrier,
 * allgather, reduce_scatter), the slot the communicator's next call will
 * post in holds the call before this one, which every peer has read (each
 * posted this call after ending that one): its lines are fetched now, for
 * writing as many as this rank last posted there, so that the next post
 * finds them here instead of paying for their transfers between cores (the
 * counter is only read: readers update it).  Every line, not the first
 * alone: a 2-rank allreduce of 48 bytes to 1 KiB after a barrier on its
 * communicator took 0.72-0.85 us with only the first line fetched, 0.47-0.67
 * with all, against 0.33-0.36 for 8-40 bytes, which fit the first line
 * (weft bench, alternating builds; PERFORMANCE-LOG.md).  Not the
 * counter where every peer's post was ordered: the next post will likely
 * not read it (Proven read), and the readers' next count finds it still
 * theirs.  A hint only: where another communicator's call shares the
 * slot, its readers pay one more trip for the line. */
static void prefetch_next_slot(const exec_t *e)
{
    const board_slot_t *next = e->x->ops->board_slot(e->x, e->world[e->s->rank],
                                                     slot_index(e->desc->key + 1));
#if defined(__x86_64__) || defined(__i386__)
    uint32_t len = atomic_load_explicit(&e->bc->posted_len[(e->desc->key + 1) & 1],
                                        memory_order_relaxed);
    size_t end = offsetof(board_slot_t, data) + len;
    size_t lines_end = board_slot_bytes(e->x->board_payload) - 64; /* not the reads line */
    for (size_t at = 0; at < end && at < lines_end; at += 64)
        __asm__ volatile("prefetchw %0" : : "m"(*((const char *)next + at)));
#endif
    if (!e->br.peers_ordered)
        __builtin_prefetch(read_count(e, next), 0, 3);
}

static void board_start(exec_t *e)
{
    e->br.slot = slot_index(e->desc->key);
    e->br.phase = empty_call(e) ? BOARD_EMPTY : posts(e) ? BOARD_FREE_WAIT : BOARD_READING;
    e->br.peers_ordered = true;
    read_range(e, &e->br.next, &e->br.end);
    if (e->br.phase == BOARD_EMPTY) /* reads no slot: board_waiting_for */
        e->br.next = e->br.end;
    e->br.empty_since_ns = 0;
}

/* A peer's slot holds this call made differently: say how, end the job. */
static int differs(exec_t *e, int q, const board_slot_t *ps)
{
    /* the peer's call log says how, or that the peer left after a fault
     * (the barrier of its weft_finalize: EPEER, as for a schedule) */
    int rc = watch_peer_made_it_differently(e, q, true);
    if (rc)
        return -rc;
    char msg[512];
    if (ps)
        snprintf(msg, sizeof msg, "rank %d and rank %d disagree on a collective (signature "
                 "%08x vs %08x, %u vs %llu bytes): do all ranks pass the same count, datatype, "
                 "op, root and algorithm?", e->s->rank, q, (unsigned)e->sig, (unsigned)ps->sig,
                 (unsigned)ps->len, (unsigned long long)posted_bytes(e));
    else /* no slot (an empty call), and the peer's record, seen to
          * differ, has left its log since: the signatures alone */
        snprintf(msg, sizeof msg, "rank %d and rank %d disagree on a collective (rank %d "
                 "made it with signature %08x, rank %d otherwise): do all ranks pass the same "
                 "count, datatype, op, root and algorithm?", e->s->rank, q, e->s->rank,
                 (unsigned)e->sig, q);
    if (e->x->ops->fail_job)
        e->x->ops->fail_job(e->x, msg);
    return -weft_error(WEFT_EMISMATCH, "%s", msg);
}

/* Where peer q's part of the result is: its slot, or for this rank its
 * own input (the same bytes its slot got).  Not its slot: once the peers
 * have read it, this rank's next call there may post over it, and a wait
 * moves every call in flight, so that call may run before this one
 * combines. */
static const char *part_of(const exec_t *e, int q)
{
    return q == e->s->rank ? e->buf[BUF_IN] : slot_of(e, q)->data;
}

/* This rank is done with peer q's post of the call; the last reader wakes
 * the owner: a rank that posted and left (a bcast's root) may be asleep
 * waiting to post its next call there. */
static void count_out(const exec_t *e, int q)
{
    board_slot_t *ps = slot_of(e, q);
    uint32_t wanted = ps->wanted; /* before the add: then the owner may post */
    if (atomic_fetch_add_explicit(read_count(e, ps), 1, memory_order_acq_rel) + 1 == wanted)
        e->x->ops->wake_ranks(e->x, &e->world[q], 1);
}

/* An allgather's blocks: each peer's slot to its place in the output, and
 * this rank's own input to its place (in place, it is there already). */
static void gather_slots(exec_t *e, size_t bytes)
{
    char *out = e->buf[BUF_OUT];
    for (int q = 0; q < e->s->nrank; q++) {
        const char *part = part_of(e, q);
        if (part != out + (size_t)q * bytes)
            copy_bytes(out + (size_t)q * bytes, part, bytes);
    }
}

/* Every slot read holds the call: combine in rank order (or copy the
 * root's bytes, or place every block), then release the slots. */
static void finish_reading(exec_t *e)
{
    int me = e->s->rank, first, end;
    read_range(e, &first, &end);
    size_t bytes = bytes_of(e);
    if (e->desc->coll == WEFT_COLL_BCAST) {
        if (bytes)
            copy_bytes(e->buf[BUF_OUT], slot_of(e, first)->data, bytes);
    } else if (e->desc->coll == WEFT_COLL_ALLGATHER) {
        if (bytes)
            gather_slots(e, bytes);
    } else if (e->desc->coll != WEFT_COLL_BARRIER) {
        /* a reduce_scatter combines this rank's block of every input */
        size_t at = e->desc->coll == WEFT_COLL_REDUCE_SCATTER ? (size_t)me * bytes : 0;
        char acc[BOARD_PAYLOAD_WIDE];
        if (bytes && e->s->nrank > 1) /* the first two in one pass */
            reducer_apply_seeded(&e->red, acc, part_of(e, 0) + at, part_of(e, 1) + at,
                                 e->desc->count, false);
        else if (bytes)
            copy_bytes(acc, part_of(e, 0) + at, bytes);
        for (int q = 2; q < e->s->nrank; q++)
            reducer_apply(&e->red, acc, part_of(e, q) + at, e->desc->count, false);
        if (bytes)
            copy_bytes(e->buf[BUF_OUT], acc, bytes);
    }
    for (int q = first; q < end; q++)
        if (q != me)
            count_out(e, q);
    if (all_to_all(e))
        prefetch_next_slot(e);
}

/* A rank's neighbours on the ring of the communicator: how many (one at
 * P = 2, none alone), in nb. */
static int neighbours(int rank, int P, int nb[2])
{
    nb[0] = (rank + 1) % P, nb[1] = (rank + P - 1) % P;
    return P < 2 ? 0 : P == 2 ? 1 : 2;
}

/* The first of rank's two neighbours (communicator ranks; world maps them
 * into x) whose call log holds call key with signature bits (under mask)
 * other than sig, its record in *v; -1 where none does.  *unseen where a
 * neighbour has no record of the call (not made yet, or its record gone):
 * nothing is proven there. */
static int neighbour_differing(xport_t *x, const int *world, int rank, int P, uint64_t key,
                               uint32_t sig, uint32_t mask, bool *unseen, peer_view_t *v)
{
    int nb[2], n = neighbours(rank, P, nb);
    *unseen = false;
    for (int k = 0; k < n; k++) {
        if (x->ops->peer_view(x, world[nb[k]], key, true, v))
            *unseen = true;
        else if (!v->found) /* not made yet, or ended and its record gone */
            *unseen |= !v->ended_well;
        else if ((v->call.sig & mask) != (sig & mask))
            return nb[k];
    }
    return -1;
}

/* bc->unchecked's word for this call: context id << 48 | call number <<
 * 24 | the low 24 bits of its signature. */
static uint64_t unchecked_word(const exec_t *e)
{
    uint64_t k = e->desc->key;
    return (k >> 32) << 48 | (k & CALL_NUM_MASK) << 24 | (e->desc->sig & 0xffffffu);
}

/* The call of such a word, its key and signature's low bits, compared
 * with the neighbours' records: a neighbour that made it otherwise, or -1
 * (*unseen: one has not made it yet). */
static int unchecked_differing(xport_t *x, const int *world, int rank, int P, uint64_t w,
                               bool *unseen, peer_view_t *v)
{
    uint64_t key = (w >> 48) << 32 | (w >> 24 & CALL_NUM_MASK);
    return neighbour_differing(x, world, rank, P, key, (uint32_t)(w & 0xffffffu), 0xffffffu,
                               unseen, v);
}

/* A rank that posted and leaves without reading has seen none of its
 * peers: like a schedule that only sends, it compares its call with the
 * logs of two neighbours (a root in its own eyes only differs from all).
 * So does a call of no elements, which neither posts nor reads
 * (empty_progress).  mine: this rank's slot, NULL for the latter. */
static int check_neighbours(exec_t *e, const board_slot_t *mine)
{
    int P = e->s->nrank, me = e->s->rank;
    if (P < 2 || !e->x->ops->peer_view)
        return 0;
    bool unseen;
    peer_view_t v;
    int q = neighbour_differing(e->x, e->world, me, P, e->desc->key, e->desc->sig, ~0u,
                                &unseen, &v);
    if (q >= 0)
        return differs(e, q, mine);
    /* a neighbour that has not made a call of no elements yet may make it
     * otherwise with no step at all, so that nobody would ever compare
     * (weft stress, seed 5003): the next calls look again.  Not for calls
     * that move data, where the other side's steps wait or send and so
     * compare, and a bcast's root posting ahead of its readers would pay
     * two more looks at the logs in every call */
    if (unseen && e->desc->count == 0)
        atomic_store_explicit(&e->bc->unchecked, unchecked_word(e), memory_order_relaxed);
    return 0;
}

/* Peer q's call of a key this rank made with the signature's low bits
 * sig24 is another: say how (own, this rank's call, where given; else its
 * record, where its log still has it) and end the job. */
static int made_otherwise(xport_t *x, int me, int q, const peer_view_t *theirs, uint64_t key,
                          uint32_t sig24, const call_desc_t *own)
{
    char msg[512];
    peer_view_t mine;
    if (own) {
        call_disagreement(own, me, &theirs->call, q, -1, msg, sizeof msg);
    } else if (!x->ops->peer_view(x, me, key, true, &mine) && mine.found) {
        call_disagreement(&mine.call, me, &theirs->call, q, mine.state == CALL_REFUSED ? me : -1,
                          msg, sizeof msg);
    } else {
        char t[160];
        call_describe(&theirs->call, t, sizeof t);
        snprintf(msg, sizeof msg, "ranks %d and %d disagree on call #%u on communicator %u: "
                 "rank %d made it with signature %06x..., rank %d as %s", me, q,
                 (unsigned)(key & CALL_NUM_MASK), (unsigned)(key >> 32), me, (unsigned)sig24,
                 q, t);
    }
    if (x->ops->fail_job)
        x->ops->fail_job(x, msg);
    return weft_error(WEFT_EMISMATCH, "%s", msg);
}

_Static_assert(sizeof(call_desc_t) == sizeof(((board_comm_t *)0)->sent_call),
               "board_comm_t holds a call_desc_t word by word");

void board_note_unseen(board_comm_t *bc, const call_desc_t *d, int peer)
{
    /* the first such call stays until its peer's record is seen: a later
     * one (a bcast's root calling again) would hide a disagreement in it */
    if (atomic_load_explicit(&bc->sent_peer, memory_order_relaxed))
        return;
    uint32_t s = atomic_load_explicit(&bc->sent_seq, memory_order_relaxed);
    if ((s & 1) || !atomic_compare_exchange_strong_explicit(&bc->sent_seq, &s, s + 1,
                                                            memory_order_acquire,
                                                            memory_order_relaxed))
        return;
    uint64_t w[6];
    memcpy(w, d, sizeof w);
    for (int i = 0; i < 6; i++)
        atomic_store_explicit(&bc->sent_call[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&bc->sent_tries, 0, memory_order_relaxed);
    atomic_store_explicit(&bc->sent_peer, peer + 1, memory_order_relaxed);
    atomic_store_explicit(&bc->sent_seq, s + 2, memory_order_release);
}

/* Forgets the sent record read under sequence s, unless a writer has
 * replaced it since. */
static void sent_settled(board_comm_t *bc, uint32_t s)
{
    if (atomic_compare_exchange_strong_explicit(&bc->sent_seq, &s, s + 1, memory_order_acquire,
                                                memory_order_relaxed)) {
        atomic_store_explicit(&bc->sent_peer, 0, memory_order_relaxed);
        atomic_store_explicit(&bc->sent_seq, s + 2, memory_order_release);
    }
}

/* SENT_RECHECKS calls on, a peer that still shows no record of the call
 * is left to the message in its ring (shared memory: at the latest in
 * weft_finalize); every call's start would otherwise read its log for
 * good. */
enum { SENT_RECHECKS = 16 };
static int recheck_sent(board_comm_t *bc, xport_t *x, const int *world, int rank)
{
    uint32_t s = atomic_load_explicit(&bc->sent_seq, memory_order_acquire);
    if (s & 1)
        return 0;
    int peer = atomic_load_explicit(&bc->sent_peer, memory_order_relaxed) - 1;
    uint64_t w[6];
    for (int i = 0; i < 6; i++)
        w[i] = atomic_load_explicit(&bc->sent_call[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (peer < 0 || atomic_load_explicit(&bc->sent_seq, memory_order_relaxed) != s)
        return 0; /* torn by a writer: the next call looks */
    call_desc_t d;
    memcpy(&d, w, sizeof d);
    peer_view_t v;
    if (x->ops->peer_view(x, world[peer], d.key, true, &v) || !v.found) {
        if (atomic_fetch_add_explicit(&bc->sent_tries, 1, memory_order_relaxed) + 1 >=
            SENT_RECHECKS)
            sent_settled(bc, s);
        return 0;
    }
    /* a refusal there is the refusing rank's to report (api.c) */
    if (v.state != CALL_REFUSED && v.call.sig != d.sig)
        return made_otherwise(x, world[rank], world[peer], &v, d.key, d.sig & 0xffffffu, &d);
    sent_settled(bc, s);
    return 0;
}

/* The empty call in bc->unchecked compared again with its neighbours'
 * records: forgotten once both have made it alike (or ended it). */
static int recheck_unchecked(board_comm_t *bc, xport_t *x, const int *world, int rank, int P)
{
    uint64_t w = atomic_load_explicit(&bc->unchecked, memory_order_relaxed);
    if (!w)
        return 0;
    bool unseen;
    peer_view_t v;
    int q = unchecked_differing(x, world, rank, P, w, &unseen, &v);
    if (q >= 0)
        return made_otherwise(x, world[rank], world[q], &v,
                              (w >> 48) << 32 | (w >> 24 & CALL_NUM_MASK),
                              (uint32_t)(w & 0xffffffu), NULL);
    if (!unseen) /* settled, unless a newer one came meanwhile */
        atomic_compare_exchange_strong(&bc->unchecked, &w, 0);
    return 0;
}

int board_recheck(board_comm_t *bc, xport_t *x, const int *world, int rank, int P)
{
    if (P < 2 || !x->ops->peer_view)
        return 0;
    if (atomic_load_explicit(&bc->sent_peer, memory_order_relaxed)) {
        int rc = recheck_sent(bc, x, world, rank);
        if (rc)
            return rc;
    }
    return recheck_unchecked(bc, x, world, rank, P);
}

/* While a peer's post of at most PREFETCH_POST_LINES lines is awaited, its
 * lines past the stamp's are fetched on every look: a line the poster
 * rewrites is fetched again by the next look, beside the stamp's, so the
 * rest is here once the stamp is seen, not one more transfer after it
 * (the loads after the stamp's wait for it).  2 ranks, 48-232 bytes:
 * allgather 0.52-0.59 -> 0.34-0.42 us, allreduce 0.49-0.59 -> 0.35-0.49,
 * bcast 0.69-0.80 -> 0.55-0.70; 8-40 bytes and 240 up unchanged.  Larger
 * posts are left alone: looks at 8 lines made 512 bytes bimodal (0.53 or
 * 1.03 us against 0.52-0.62), and at all 33 made 1 KiB twice as slow, the
 * reader taking lines from the poster while it writes them (PERFORMANCE-LOG.md,
 * "The board past its first line").  Not where posters demote their lines
 * (post): there the looks cost more than they save (Xeon VM, allreduce of
 * 64-128 B: 0.43-0.51 us without them, 0.73-0.75 with). */
enum { PREFETCH_POST_LINES = 4 };
static void prefetch_post(const board_slot_t *ps, size_t bytes)
{
    size_t end = offsetof(board_slot_t, data) + bytes;
    if (end > 64 * PREFETCH_POST_LINES || lines_demote_supported())
        return;
    for (size_t at = 64; at < end; at += 64)
        __builtin_prefetch((const char *)ps + at, 0, 3);
}

/* Reads on through the slots of the call (e->br.next on): 1 when every one
 * holds it, 0 at the first that does not yet, -1 at one that holds it made
 * differently (*bad: its rank).  *moved when a slot was passed. */
static int read_slots(exec_t *e, int *moved, int *bad)
{
    for (; e->br.next < e->br.end; e->br.next++, *moved = 1) {
        int q = e->br.next;
        if (q == e->s->rank)
            continue;
        const board_slot_t *ps = slot_of(e, q);
        if (atomic_load_explicit(&ps->stamp, memory_order_acquire) != stamp_of(e)) {
            prefetch_post(ps, posted_bytes(e));
            return 0;
        }
        if (ps->sig != e->sig || ps->len != posted_bytes(e)) {
            *bad = q;
            return -1;
        }
        if (!(ps->flags & BOARD_POST_ORDERED))
            e->br.peers_ordered = false;
        /* the count this rank adds when done (finish_reading) is on a line
         * the owner last held, to see the slot free: fetched for writing
         * now, while the other slots are awaited, the add no longer waits a
         * whole transfer (2 ranks, slow phase: finish_reading 360 -> 190 ns) */
#if defined(__x86_64__) || defined(__i386__)
        __asm__ volatile("prefetchw %0" : : "m"(*(const char *)read_count(e, ps)));
#endif
    }
    return 1;
}

/* An empty call leaves without waiting for its peers, but a rank runs at
 * most one such call ahead of a neighbour that has not made it yet (the
 * one bc->unchecked holds): the next waits until that one is settled.
 * Else a rank running on through many empty calls would find none made by
 * its neighbour, and the neighbour, when it made them, none of this
 * rank's records, which the log keeps for SEG_CALLLOG calls only: a call
 * made otherwise would pass unseen (test_mismatch.c, empty_run_ahead).
 * After EMPTY_SETTLE_NS of waiting the earlier call is left unsettled, so
 * that a neighbour whose record has gone for another reason (its calls on
 * other communicators took the log's place) cannot hang this one.  Each
 * empty call wakes its neighbours, one of which may wait so. */
#define EMPTY_SETTLE_NS 1000000000ull
static int empty_progress(exec_t *e)
{
    board_comm_t *bc = e->bc;
    int P = e->s->nrank, me = e->s->rank;
    uint64_t w = atomic_load_explicit(&bc->unchecked, memory_order_relaxed);
    if (w) { /* an earlier call's: this one's is set below */
        int rc = recheck_unchecked(bc, e->x, e->world, me, P);
        if (rc)
            return -rc;
        if (atomic_load_explicit(&bc->unchecked, memory_order_relaxed) == w) {
            uint64_t now = weft_now_ns();
            if (!e->br.empty_since_ns)
                e->br.empty_since_ns = now;
            if (now - e->br.empty_since_ns < EMPTY_SETTLE_NS) {
                e->moved = 0;
                int h = e->x->ops->health(e->x);
                return h ? -h : 0;
            }
            atomic_compare_exchange_strong(&bc->unchecked, &w, 0);
        }
    }
    e->br.phase = BOARD_READ;
    e->moved = 1;
    int rc = check_neighbours(e, NULL);
    int nb[2], n = neighbours(me, P, nb);
    for (int k = 0; k < n; k++)
        nb[k] = e->world[nb[k]];
    if (n)
        e->x->ops->wake_ranks(e->x, nb, n);
    return rc ?: 1;
}

static int board_progress(exec_t *e)
{
    int moved = 0, bad = -1;
    bool posted = false;
    if (e->br.phase == BOARD_EMPTY)
        return empty_progress(e);
    if (e->br.phase == BOARD_FREE_WAIT) {
        if (!post(e))
            goto idle;
        moved = 1;
        if (!reads(e)) {
            wake_readers(e);
            e->moved = 1;
            return check_neighbours(e, slot_of(e, e->s->rank)) ?: 1;
        }
        posted = true;
        e->br.phase = BOARD_POSTED;
    }
    int rc = read_slots(e, &moved, &bad);
    if (posted)
        wake_readers(e); /* after the reads: see wake_readers */
    if (rc < 0)
        return differs(e, bad, slot_of(e, bad));
    if (rc == 0)
        goto idle;
    finish_reading(e);
    e->br.phase = BOARD_READ; /* counted out: board_abandon must not again */
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
    if (e->br.phase == BOARD_EMPTY) { /* empty_progress: the earlier call settled */
        uint64_t w = atomic_load_explicit(&e->bc->unchecked, memory_order_relaxed);
        if (!w || !e->br.empty_since_ns)
            return true;
        bool unseen;
        peer_view_t v;
        int q = unchecked_differing(e->x, e->world, e->s->rank, e->s->nrank, w, &unseen, &v);
        return q >= 0 || !unseen;
    }
    if (e->br.phase == BOARD_FREE_WAIT)
        return slot_may_post(e, slot_of(e, e->s->rank));
    return e->br.next < e->br.end &&
           atomic_load_explicit(&slot_of(e, e->br.next)->stamp, memory_order_acquire) ==
               stamp_of(e);
}

/* Reading: the ranks whose slots do not hold the call yet.  Waiting for a
 * free slot: the readers of its last contents are not known, so every peer
 * is named (the watch fails only on what it proves). */
static int board_waiting_for(const exec_t *e, int *ranks, int max)
{
    int n = 0, P = e->s->nrank, me = e->s->rank;
    if (e->br.phase == BOARD_EMPTY) { /* empty_progress: its neighbours */
        int nb[2];
        for (int k = 0, nn = neighbours(me, P, nb); k < nn && n < max; k++)
            ranks[n++] = nb[k];
        return n;
    }
    bool freeing = e->br.phase == BOARD_FREE_WAIT;
    for (int q = freeing ? 0 : e->br.next; q < (freeing ? e->s->nrank : e->br.end) && n < max;
         q++)
        if (q != e->s->rank &&
            (freeing ||
             atomic_load_explicit(&slot_of(e, q)->stamp, memory_order_acquire) != stamp_of(e)))
            ranks[n++] = q;
    return n;
}

/* Rank q made the call of this rank's slot (its key stamp - 1) with
 * signature sig, not this rank's: say so and end the job.  rec: q's record
 * of that call where it was the proof, said too (its state and flags),
 * early in the message, which the job's abort notice cuts at 256 bytes,
 * so that a proof from a record can be checked against the calls made. */
static int slot_call_differs(exec_t *e, int q, uint64_t stamp, uint32_t sig,
                             const peer_view_t *rec)
{
    const board_slot_t *me = slot_of(e, e->s->rank);
    char msg[512], theirs[160] = "";
    if (rec) {
        char d[120];
        call_describe(&rec->call, d, sizeof d);
        snprintf(theirs, sizeof theirs, "; its record: %s, state %d, flags %#x", d, rec->state,
                 (unsigned)rec->call.flags);
    }
    snprintf(msg, sizeof msg, "rank %d made call #%llu of its communicator differently from "
             "rank %d (signature %08x vs %08x%s), so it never read rank %d's board slot: do "
             "all ranks pass the same count, datatype, op, root and algorithm?", q,
             (unsigned long long)(uint32_t)(stamp - 1), e->s->rank, (unsigned)sig,
             (unsigned)me->sig, theirs, e->s->rank);
    if (e->x->ops->fail_job)
        e->x->ops->fail_job(e->x, msg);
    return weft_error(WEFT_EMISMATCH, "%s", msg);
}

/* Rank q refused the call of this rank's slot (its key stamp - 1), made
 * alike: it will never read the post, and this call cannot post there.
 * The call failed on q alone, so this one fails as its peer's did. */
static int slot_never_read(exec_t *e, int q, uint64_t stamp)
{
    char mine[160], msg[512];
    call_describe(e->desc, mine, sizeof mine);
    snprintf(msg, sizeof msg, "rank %d refused call #%llu of its communicator (an error there "
             "before the call began), so it never reads rank %d's board post of that call, "
             "and %s cannot post in its place", q, (unsigned long long)(uint32_t)(stamp - 1),
             e->s->rank, mine);
    return weft_error(WEFT_EPEER, "%s", msg);
}

/* Whether peer q refused call key (api.c, call_refused: its record, or its
 * refused word): it never read a post of that call, nor counted itself
 * out of one, and never will. */
static bool refused_call(const peer_view_t *v)
{
    return v->refused || (v->found && v->state == CALL_REFUSED);
}

/* Whether peer q failed in call key and will never move it again (its
 * record says CALL_GAVE_UP: exec_finish, once board_abandon has counted it
 * out of the posts that stood then).  One that failed before a post came
 * never reads that post: a reduce's root failing for a leaf's refusal
 * while the other leaves were still to post. */
static bool gave_up(const peer_view_t *v)
{
    return v->found && v->state == CALL_ABANDONED && (v->call.flags & CALL_GAVE_UP);
}

/* Reading (posted or not): a peer whose post this rank waits for, that
 * has ended the call well without posting it (its published "ended
 * well", read before its slot: a rank that posts does so before it ends),
 * made the call otherwise -- a bcast's rank that was not the root this
 * rank took -- or refused it (api.c, call_refused).  Its post cannot have
 * been written over since: this rank, one of its readers, has not read
 * it.  Where the call log has lost its record (threads), nothing else
 * proves it (weft stress, seeds 1005 and 3019). */
static int ended_without_post(exec_t *e)
{
    xport_t *x = e->x;
    if (!x->ops->peer_view)
        return 0;
    for (int q = e->br.next; q < e->br.end; q++) {
        peer_view_t v;
        if (q == e->s->rank ||
            atomic_load_explicit(&slot_of(e, q)->stamp, memory_order_acquire) == stamp_of(e) ||
            x->ops->peer_view(x, e->world[q], e->desc->key, true, &v) || !v.ended_well ||
            atomic_load_explicit(&slot_of(e, q)->stamp, memory_order_acquire) == stamp_of(e))
            continue;
        if (refused_call(&v))
            continue; /* the watch says how (watch.c): made alike, it is no mismatch */
        char mine[160], msg[512];
        call_describe(e->desc, mine, sizeof mine);
        snprintf(msg, sizeof msg, "ranks %d and %d disagree on a collective: rank %d calls %s "
                 "and waits for rank %d's post on the board there, but rank %d ended that call "
                 "without posting it (another root, say, or it refused the call)", e->s->rank, q,
                 e->s->rank, mine, q, q);
        if (x->ops->fail_job)
            x->ops->fail_job(x, msg);
        return weft_error(WEFT_EMISMATCH, "%s", msg);
    }
    return 0;
}

/* Peer q has yet to make call key: attached, and its newest call on the
 * communicator in its log is an older one (or none).  Where it made the
 * call and its record is gone since (other threads' calls), nothing is
 * known. */
static bool reader_behind(exec_t *e, int q, uint64_t key)
{
    peer_view_t v;
    if (e->x->ops->peer_view(e->x, e->world[q], key, false, &v) || v.found ||
        v.rank_state != PEER_ATTACHED)
        return false;
    uint32_t n = (uint32_t)key & CALL_NUM_MASK;
    return !v.any_on_ctx || (((n - v.latest_seq) & CALL_NUM_MASK) - 1 < (CALL_NUM_MASK >> 1));
}

/* This rank's post of call key (of this communicator), whose missing reads
 * are exactly those of readers that refused the call, is read by all who
 * ever will: the slot is written off as read (wanted lowered to the reads
 * done), so that the communicator's calls go on after a call refused
 * alike on some ranks.  Without it every second call of the communicator
 * failed from then on, each unable to post where the unread post stood.
 * The readers that failed in the call instead (waiting for the refuser's
 * post, say) counted themselves out as they failed (board_abandon) of the
 * posts that stood then; one posted after is written off where every
 * reader refused the call or gave it up (gave_up: a reduce's root, its
 * sole reader, that failed for a leaf's refusal before this leaf posted;
 * the 2026-12-07 sweep of refusals found every second reduce of 5 int32
 * under AUTO failing so).  A reader that failed otherwise may still be
 * reading (a revoked call that other waits move on): it is never counted
 * as gone.  OFF_WRITTEN where the slot is free now (written off, or read
 * meanwhile); OFF_WAIT where its sole reader is still to read it; else
 * OFF_NO. */
enum { OFF_NO, OFF_WRITTEN, OFF_WAIT };
static int write_off(exec_t *e, board_slot_t *me, uint64_t key)
{
    if (key >> 32 != e->desc->key >> 32 || !e->x->ops->peer_view)
        return OFF_NO; /* another communicator's post: its readers are not known here */
    uint32_t missing = me->wanted - atomic_load_explicit(read_count(e, me), memory_order_acquire);
    if ((int32_t)missing <= 0)
        return OFF_WRITTEN; /* read since the caller looked */
    int sole = (int)(me->flags >> BOARD_POST_READER_SHIFT) - 1;
    uint32_t gone = 0;
    bool none_reads = true; /* every reader refused the call or gave it up */
    for (int q = sole >= 0 ? sole : 0; q < (sole >= 0 ? sole + 1 : e->s->nrank); q++) {
        peer_view_t v;
        if (q == e->s->rank)
            continue;
        bool seen = !e->x->ops->peer_view(e->x, e->world[q], key, true, &v);
        if (seen && refused_call(&v))
            gone++;
        else if (!seen || !gave_up(&v))
            none_reads = false;
        /* a sole reader that has not read it is still in the call, or
         * yet to make it: it reads it, or fails and gives it up
         * (finishing is not recorded, but it finishes only once it has
         * read) */
        if (sole >= 0 && seen && v.found && v.state == CALL_STARTED)
            return OFF_WAIT;
        if (sole >= 0 && seen && !v.found && reader_behind(e, q, key))
            return OFF_WAIT;
    }
    if (none_reads) { /* what they read is read, and no more ever will be */
        /* counted again: a reader's count-outs come before its record
         * says it gave up, and may have come after the count above */
        missing = me->wanted - atomic_load_explicit(read_count(e, me), memory_order_acquire);
        if ((int32_t)missing > 0)
            me->wanted -= missing;
        return OFF_WRITTEN;
    }
    if (!gone || gone != missing)
        return OFF_NO;
    me->wanted -= gone;
    return OFF_WRITTEN;
}

/* A peer whose slot of this call's index holds a post of call `stamp`
 * with a signature other than sig (given in *other), or -1.  Such a post
 * proves the peer made that call otherwise.  Its signature is read
 * between two reads of the stamp, and the post may not be written over
 * in between anyway where its signature is sig: then this rank is one of
 * its readers (a bcast's root, a reduce's root reading, or every rank of
 * an allreduce), and its owner waits for this rank to count out. */
static int post_differs(const exec_t *e, uint64_t stamp, uint32_t sig, uint32_t *other)
{
    for (int q = 0; q < e->s->nrank; q++) {
        if (q == e->s->rank)
            continue;
        const board_slot_t *ps = slot_of(e, q);
        if (atomic_load_explicit(&ps->stamp, memory_order_acquire) != stamp)
            continue;
        uint32_t s = ps->sig;
        if (atomic_load_explicit(&ps->stamp, memory_order_acquire) == stamp && s != sig) {
            *other = s;
            return q;
        }
    }
    return -1;
}

/* Reading, held up: a peer whose post it waits for has ended the call
 * without posting (ended_without_post), or a peer posted this very call
 * made otherwise -- a bcast's other root, whose readers all read it and
 * leave, this rank waiting for the root it took (weft stress, seed 1000's
 * job 5 with --threads 3 --overlapped: the readers had not yet been told
 * their call was done, so none had ended it well). */
static int reading_stalled(exec_t *e)
{
    int rc = ended_without_post(e);
    if (rc)
        return rc;
    uint32_t other;
    int q = post_differs(e, stamp_of(e), e->sig, &other);
    return q < 0 ? 0 : -differs(e, q, slot_of(e, q)); /* differs: progress's sign */
}

/* Held up by this rank's own slot: a peer that made the slot's call
 * differently (a second root of a bcast, say) will never read it.  The
 * slot keeps that call's key and signature.  Two proofs, either enough:
 * the peer's post of that very call in its own slot of the same index,
 * with another signature (where every rank posted and left, as in a
 * reduce whose ranks each took another for its root, every slot keeps
 * such a post until it is read, which it never is), and the peer's call
 * log, which keeps only its recent calls.  Readers that refused the call
 * alike will never read it either (those that failed in it counted
 * themselves out, board_abandon): the post is written off where they are
 * all its missing reads (write_off), and else this call fails
 * (WEFT_EPEER). */
static int board_stalled(exec_t *e)
{
    if (e->br.phase == BOARD_READING || e->br.phase == BOARD_POSTED)
        return reading_stalled(e);
    if (e->br.phase != BOARD_FREE_WAIT)
        return 0;
    board_slot_t *me = slot_of(e, e->s->rank);
    uint64_t stamp = atomic_load_explicit(&me->stamp, memory_order_acquire);
    if (!stamp || stamp == stamp_of(e))
        return 0;
    /* the slot's call may be of another communicator: its ranks are not
     * known here, so only this communicator's peers are asked, and only a
     * post or a record of that very call (same key) proves anything */
    uint32_t other;
    int q = post_differs(e, stamp, me->sig, &other);
    if (q >= 0)
        return slot_call_differs(e, q, stamp, other, NULL);
    int refuser = -1;
    for (q = 0; q < e->s->nrank; q++) {
        if (q == e->s->rank)
            continue;
        peer_view_t v;
        if (!e->x->ops->peer_view || e->x->ops->peer_view(e->x, e->world[q], stamp - 1, true, &v))
            continue;
        if (v.found && v.call.sig != me->sig)
            return slot_call_differs(e, q, stamp, v.call.sig, &v);
        /* refused there (api.c, call_refused; its record, or its word) */
        if (v.refused && v.refused_sig24 != (me->sig & 0xffffffu))
            return slot_call_differs(e, q, stamp, v.refused_sig24, NULL);
        if (refused_call(&v) && refuser < 0)
            refuser = q;
    }
    int off = write_off(e, me, stamp - 1);
    if (off != OFF_NO)
        return 0; /* the slot is free (the next poll posts), or its reader still reads */
    return refuser >= 0 ? slot_never_read(e, refuser, stamp) : 0;
}

/* The call failed here (board_ops.abandon; it will never move again): this
 * rank counts itself out of the posts of the call it was to read that
 * stand already, as it would have once done, so that their owners may
 * post again.  A post made after this is left to its owner's write-off
 * where this rank refused the call, and else holds its slot as before. */
static void board_abandon(exec_t *e)
{
    if (!reads(e) || e->br.phase == BOARD_READ)
        return;
    int first, end;
    read_range(e, &first, &end);
    for (int q = first; q < end; q++)
        if (q != e->s->rank &&
            atomic_load_explicit(&slot_of(e, q)->stamp, memory_order_acquire) == stamp_of(e))
            count_out(e, q);
}

void board_arm(exec_t *e, bool ordered)
{
    board_comm_t *bc = e->bc;
    uint64_t k = e->desc->key;
    unsigned p = (unsigned)(k & 1);
    e->br.ordered = ordered;
    /* keys of a communicator count up by one a call; a wrap of its call
     * number only fails to match */
    e->br.proven_stamp = atomic_load_explicit(&bc->read_by_all, memory_order_acquire) == k &&
                                 atomic_load_explicit(&bc->posted[p], memory_order_acquire) == k - 1
                             ? k - 1
                             : 0;
    e->br.pred_stamp = 0;
    if (posts(e)) {
        e->br.pred_stamp = bc->last_post[p];
        bc->last_post[p] = k + 1;
    }
}

void board_finished(const exec_t *e)
{
    board_comm_t *bc = e->bc;
    uint64_t k1 = e->desc->key + 1;
    if (posts(e)) /* a call that posts finishes only once it has */
        atomic_store_explicit(&bc->posted[e->desc->key & 1], k1, memory_order_release);
    if (all_to_all(e) && e->br.peers_ordered)
        atomic_store_explicit(&bc->read_by_all, k1, memory_order_release);
}

const board_ops_t board_ops = {board_start, board_progress, board_ready, board_waiting_for,
                               board_stalled, board_abandon};

/* The registry's builder: a board algorithm has no steps. */
int algo_board_build(sched_t *s, const coll_args_t *a)
{
    (void)s, (void)a;
    return 0;
}

int algo_board_usable(const coll_args_t *a, char *why, size_t len)
{
    const char *cn = weft_coll_name(a->coll);
    if (!a->shared_board) {
        snprintf(why, len, "%s board needs every rank on one machine's shared memory "
                           "(weft run, or MPI ranks of one node)", cn);
        return -1;
    }
    if (!a->board_slots) {
        snprintf(why, len, "%s board: every pair of board slots is held by another live "
                           "communicator of some rank (%u pairs a rank): free communicators "
                           "you no longer use", cn, BOARD_SLOTS / 2);
        return -1;
    }
    uint64_t posted = a->count * a->esize;
    if (a->coll == WEFT_COLL_REDUCE_SCATTER && posted <= a->board_payload)
        posted *= (uint64_t)a->nrank; /* the whole input (no overflow: nrank < 2^32) */
    if (posted > a->board_payload) {
        snprintf(why, len, "%s board carries at most %u bytes per rank here, not %llu%s", cn,
                 a->board_payload, (unsigned long long)posted,
                 a->coll == WEFT_COLL_REDUCE_SCATTER ? " (its P blocks)" : "");
        return -1;
    }
    return 0;
}
