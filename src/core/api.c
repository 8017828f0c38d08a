/* api.c — the collective entry points: argument checks, algorithm choice,
 * the schedule cache, in-place handling, and running a schedule blocking or
 * split-phase.
 *
 * Transport tags are (context 16 bits | call sequence 24 bits | step tag 24
 * bits): a call's messages never match another call's.  Every message also
 * carries a 32-bit signature of the call (collective, algorithm, count,
 * datatype, op, root); a receiver that sees a different one fails with
 * WEFT_EMISMATCH and aborts the job so that no peer hangs. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched/layout.h"
#include "../xport/arena.h"
#include "comm.h"
#include "copy.h"

static uint32_t fnv(uint32_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (uint32_t)(v >> (8 * i)) & 0xff;
        h *= 16777619u;
    }
    return h;
}

static bool params_equal(const algo_params_t *a, const algo_params_t *b)
{
    return !memcmp(a, b, sizeof *a);
}

/* The cached schedule for (al, a), else the entry to build it in: a free
 * one, else the least recently used with no call in flight (emptied).
 * NULL and *found false: every entry is in use. */
static sched_entry_t *cache_find(weft_comm_t c, const algo_t *al, const coll_args_t *a,
                                 bool *found)
{
    sched_entry_t *victim = NULL;
    *found = false;
    for (int i = 0; i < SCHED_CACHE_SIZE; i++) {
        sched_entry_t *e = &c->cache[i];
        if (e->used && e->al == al && e->coll == a->coll && e->count == a->count &&
            e->esize == a->esize && e->root == a->root && e->commutative == a->commutative &&
            e->idempotent == a->idempotent && e->invertible == a->invertible &&
            params_equal(&e->params, &a->params)) {
            *found = true;
            return e;
        }
        if (!e->used)
            victim = victim && !victim->used ? victim : e;
        else if (e->refs == 0 && (!victim || (victim->used && e->last_use < victim->last_use)))
            victim = e;
    }
    if (victim && victim->used) {
        memset(c->memo, 0, sizeof c->memo); /* one of them may name the victim */
        request_list_free(victim->spare);
        sched_img_free(victim->s);
        memset(victim, 0, sizeof *victim);
    }
    return victim;
}

/* A schedule whose tags the transport cannot carry: this rank cannot take
 * part.  Before any message, so where the transport can, the job ends, and
 * ranks whose own schedule fits do not wait for this one. */
static int refuse_tags(weft_comm_t c, const algo_t *al, const coll_args_t *a, uint32_t max_tag)
{
    char msg[300];
    snprintf(msg, sizeof msg, "%s %s needs step tags up to %u on rank %d for P=%d; the %s "
             "transport has %u (choose fewer chunks or another algorithm)",
             weft_coll_name(al->coll), al->name, max_tag - 1, a->rank, a->nrank,
             c->x->ops->name, c->x->tag_limit);
    if (c->x->ops->fail_job) {
        pthread_mutex_lock(&c->x->lock);
        c->x->ops->fail_job(c->x, msg);
        pthread_mutex_unlock(&c->x->lock);
    }
    return weft_error(WEFT_ENOTSUP, "%s", msg);
}

static uint32_t params_hash(const algo_params_t *p)
{
    uint32_t ph = 2166136261u;
    const unsigned char *pb = (const unsigned char *)p;
    for (size_t i = 0; i < sizeof *p; i++)
        ph = (ph ^ pb[i]) * 16777619u;
    return ph;
}

/* The schedule's part of a call's signature (algo: its index in the
 * registry's table). */
static uint32_t schedule_sig(weft_coll_t coll, uint32_t algo, uint64_t count, int root,
                             uint32_t ph)
{
    uint32_t sig = 2166136261u;
    sig = fnv(sig, (uint64_t)coll);
    sig = fnv(sig, (uint64_t)algo);
    sig = fnv(sig, count);
    sig = fnv(sig, (uint64_t)(uint32_t)root);
    return fnv(sig, ph);
}

/* The call's own part mixed in with two multiplies. */
static uint32_t call_sig(uint32_t schedule, uint64_t op_ident, weft_dtype_t dt)
{
    uint64_t mix = (op_ident ^ (uint64_t)dt << 56) * 0x9e3779b97f4a7c15ull;
    return (schedule ^ (uint32_t)(mix >> 32)) * 16777619u;
}

/* Once per schedule, not per call: what describe_call and watch_sent need
 * (the parameters' hash, the call's signature, and for a schedule that
 * only sends, its first and last destination). */
static void entry_describe(sched_entry_t *ent, const algo_t *al, const coll_args_t *a)
{
    ent->params_hash = params_hash(&a->params);
    ent->sig = schedule_sig(a->coll, (uint32_t)(al - algo_table(&(size_t){0})), a->count,
                            a->root, ent->params_hash);
    ent->sent_to[0] = ent->sent_to[1] = -1;
    bool recvs = false;
    for (uint32_t i = 0; i < ent->s->nsteps; i++) {
        step_t st = sched_step(ent->s, i);
        if (st.kind == STEP_SEND) {
            if (ent->sent_to[0] < 0)
                ent->sent_to[0] = st.peer;
            ent->sent_to[1] = st.peer;
        }
        recvs |= st.kind == STEP_RECV || st.kind == STEP_RECV_REDUCE;
    }
    if (recvs)
        ent->sent_to[0] = ent->sent_to[1] = -1;
}

/* Finds or builds the schedule for (al, a); NULL with the error set. */
static sched_entry_t *cache_get(weft_comm_t c, const algo_t *al, const coll_args_t *a, int *rc)
{
    c->clock++;
    bool found;
    sched_entry_t *ent = cache_find(c, al, a, &found);
    if (found) {
        ent->last_use = c->clock;
        return ent;
    }
    if (!ent) {
        *rc = weft_error(WEFT_EBUSY, "too many collectives in flight on one communicator "
                                     "(at most %d distinct ones)", SCHED_CACHE_SIZE);
        return NULL;
    }
    sched_img_t *s;
    *rc = algo_build(al, a, &s);
    if (*rc)
        return NULL;
    if (s->max_tag > c->x->tag_limit) {
        uint32_t max_tag = s->max_tag;
        sched_img_free(s);
        *rc = refuse_tags(c, al, a, max_tag);
        return NULL;
    }
    ent->used = true;
    ent->coll = a->coll;
    ent->al = al;
    ent->count = a->count;
    ent->esize = a->esize;
    ent->root = a->root;
    ent->commutative = a->commutative;
    ent->idempotent = a->idempotent;
    ent->invertible = a->invertible;
    ent->params = a->params;
    ent->s = s;
    entry_describe(ent, al, a);
    ent->last_use = c->clock;
    return ent;
}

static void describe_call(weft_comm_t comm, const sched_entry_t *ent, weft_dtype_t dt,
                          uint64_t op_ident, call_desc_t *d);
static int wait_and_finish(weft_request_t r, int timeout_ms);

/* The buffers a call's layout needs are there. */
static int buffers_given(const char *cn, const coll_layout_t *lay, const void *in,
                         const void *out, bool inplace)
{
    if (lay->in_len && !in && !inplace)
        return weft_error(WEFT_EINVAL, "%s: send buffer is NULL", cn);
    if (lay->out_len && !out && !(inplace && lay->alias == ALIAS_OUT_IN_IN))
        return weft_error(WEFT_EINVAL, "%s: receive buffer is NULL", cn);
    return WEFT_OK;
}

/* A send buffer given as the receive buffer itself, at the place where
 * WEFT_IN_PLACE takes this rank's input from (NCCL's convention: allreduce
 * and reduce sendbuf == recvbuf, allgather and gather sendbuf == recvbuf +
 * rank*count, reduce_scatter recvbuf == sendbuf, scatter recvbuf ==
 * sendbuf + rank*count), makes the call in place.  Any other overlap of
 * the two is refused: no algorithm orders its reads of the input before
 * its writes of the output, so the result would be silently wrong. */
static int settle_overlap(const char *cn, weft_coll_t coll, int P, int rank, int root,
                          size_t count, size_t es, const void **in, void **out, bool *inplace)
{
    if (*inplace || !*in || !*out || !count)
        return WEFT_OK;
    coll_layout_t l;
    coll_layout(coll, P, rank, root, count, true, &l);
    if (l.alias == ALIAS_IN_IN_OUT && *in == (const char *)*out + l.alias_off * es) {
        *in = NULL, *inplace = true;
        return WEFT_OK;
    }
    if (l.alias == ALIAS_OUT_IN_IN && *out == (const char *)*in + l.alias_off * es) {
        *out = NULL, *inplace = true;
        return WEFT_OK;
    }
    coll_layout(coll, P, rank, root, count, false, &l);
    uintptr_t a = (uintptr_t)*in, b = (uintptr_t)*out;
    uint64_t alen = l.in_len * es, blen = l.out_len * es;
    if (alen && blen && a < b + blen && b < a + alen)
        return weft_error(WEFT_EINVAL,
                          "%s: the send buffer (%" PRIu64 " bytes at %p) and the receive buffer "
                          "(%" PRIu64 " bytes at %p) overlap; for an in-place call pass "
                          "WEFT_IN_PLACE as the send buffer",
                          cn, alen, *in, blen, *out);
    return WEFT_OK;
}

/* A call as the program made it, for one refused before it ran: with
 * the algorithm and its parameters' hash once they are known (NULL: AUTO
 * had not chosen). */
typedef struct call_shape {
    weft_coll_t coll;
    size_t count;
    weft_dtype_t dt;
    weft_op_t op;
    int root;
    const algo_t *al;
    uint32_t params;
    /* refused for this rank's own buffers or memory, where the other
     * ranks may make the call (CALL_OWN_REASON) */
    bool own_reason;
} call_shape_t;

/* A call refused once its algorithm was chosen: the shape says which (on
 * the error path only, so that a call that runs pays nothing for it). */
static int refused_with(call_shape_t *shape, const algo_t *al, const algo_params_t *p, int rc)
{
    shape->al = al, shape->params = params_hash(p);
    return rc;
}

/* Resolves a call into *m: the op, the layout, the algorithm (the
 * communicator's choice, checked, or AUTO's; AUTO's alone for weft's own
 * calls) and its schedule.  The memo serves the calls that repeat it
 * (comm.h); a user op is never kept, since it may be freed and its handle
 * reused. */
static int resolve_call(weft_comm_t comm, weft_coll_t coll, const void *in, void *out,
                        size_t count, weft_dtype_t dt, weft_op_t op, int root, bool inplace,
                        bool own, call_memo_t *m, call_shape_t *shape)
{
    const char *cn = weft_coll_name(coll);
    int P = comm->size, rc;
    m->keep = false;
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = coll;
    a.nrank = P;
    a.rank = comm->rank;
    a.root = coll_is_rooted(coll) ? root : 0;
    a.count = count;
    a.esize = weft_dtype_size(dt);
    a.node_of = comm->node_of;
    a.nnodes = comm->node_of ? comm->nnodes : 1;
    a.node_max = comm->node_of ? comm->node_max : P;
    a.shared_board = comm->x->ops->board_slot != NULL;
    a.board_slots = a.shared_board && comm->board_slots;
    a.board_payload = comm->x->board_payload;
    a.node_board = comm->x->ops->arrival_rec != NULL;
    a.arena_reads = a.shared_board;
    reducer_t red;
    memset(&red, 0, sizeof red);
    uint64_t op_ident = 0;
    if (coll_is_reduction(coll)) {
        op_info_t info;
        if ((rc = op_lookup(op, dt, &info)))
            return weft_error(rc, "%s: %s", cn, weft_last_error());
        op_ident = info.ident;
        reducer_init(&red, op, dt);
        a.commutative = info.commutative;
        a.idempotent = info.idempotent;
        a.invertible = info.invertible;
    } else {
        a.commutative = a.idempotent = true;
    }
    const algo_t *al = own ? NULL : comm->choice[coll].al;
    const char *choice;
    if (al) {
        a.params = comm->choice[coll].params;
        if ((rc = algo_check_usable(al, &a)))
            return refused_with(shape, al, &a.params, rc);
        choice = al->name;
    } else if (!(al = select_algo(comm, &a, own))) {
        return weft_error(WEFT_EINTERNAL, "%s: no algorithm serves this call", cn);
    } else {
        choice = comm->auto_memo[coll].text;
    }
    /* after the choice, so that a call refused for its buffers is
     * recorded as its peers make it */
    coll_layout_t lay;
    coll_layout(coll, P, comm->rank, a.root, count, inplace, &lay);
    if ((rc = buffers_given(cn, &lay, in, out, inplace))) {
        shape->own_reason = true;
        return refused_with(shape, al, &a.params, rc);
    }
    if (!(al->flags & ALGO_USES_INVERSE))
        a.invertible = false; /* one cached schedule for int and float sums alike */
    sched_entry_t *ent = cache_get(comm, al, &a, &rc); /* may clear the memos */
    if (!ent) {
        shape->own_reason = true; /* memory, or a schedule this rank alone cannot tag */
        return refused_with(shape, al, &a.params, rc);
    }
    *m = (call_memo_t){.al = al, .ent = ent, .count = count, .dt = dt, .op = op,
                       .root = root, .inplace = inplace, .op_ident = op_ident, .red = red,
                       .lay = lay, .last_choice = choice,
                       .keep = !coll_is_reduction(coll) ||
                               (op >= 0 && op < WEFT_OP_BUILTIN_COUNT)};
    return WEFT_OK;
}

/* A root whose whole buffer every other rank reads (ALGO_ROOT_READ_BY_ALL:
 * the linear bcast) copies a large one into the shared arena first, where
 * the transport lets each peer copy it straight out, instead of copying
 * it into cells once per peer.  The copy is streamed past this core's
 * caches by default: lines it left modified there would cross to the
 * readers on the other core one by one, which on the AMD VM's slow phases
 * cost more than reading them from memory (PERFORMANCE-LOG.md, "A bcast's
 * root staged in the arena"); stage=plain keeps them in a shared cache
 * large enough to hold every stage, which the Intel VM's 260-480 MiB L3
 * reads faster ("The stage copied plainly, by the table").  Not where its
 * bytes are in the arena already, nor with a single reader, whose copy in
 * would be one copy more.  The communicator
 * keeps the stage between calls (a call holds it while it runs, and a
 * split-phase call started meanwhile gets one of its own); without arena
 * room the call goes from the user's buffer as before. */
enum { STAGE_MIN = 64 << 10 };

/* The communicator's stage for this call, of at least bytes; NULL if the
 * arena has no room, which is not the call's error (it goes unstaged: the
 * last failed call's message stays). */
static char *stage_take(weft_comm_t c, weft_request_t r, size_t bytes)
{
    if (c->stage && c->stage_bytes >= bytes) {
        r->shared_stage = c->stage, r->shared_stage_bytes = c->stage_bytes;
    } else {
        char said[512];
        snprintf(said, sizeof said, "%s", weft_last_error());
        if (arena_alloc_scratch(bytes, &r->shared_stage) != WEFT_OK) {
            weft_error(WEFT_OK, "%s", said);
            return NULL;
        }
        r->shared_stage_bytes = bytes;
        weft_free(c->stage); /* too small */
    }
    c->stage = NULL;
    return r->shared_stage;
}

/* The copy into a stage, streamed unless the call's parameters say plain
 * (algo.h, STAGE_*). */
static void stage_copy(char *st, const char *src, size_t bytes, int way)
{
    if (way == STAGE_PLAIN) {
        copy_bytes(st, src, bytes);
        return;
    }
    copy_streaming(st, src, bytes);
    copy_streaming_done();
}

/* The stage a root's buffer of bytes goes to, or NULL where it stays
 * where it is (above). */
static char *root_stage(weft_comm_t c, weft_request_t r, const char *buf, size_t bytes)
{
    uint64_t off;
    if (bytes < STAGE_MIN || c->size < 3 || !c->x->arena_reads_from ||
        bytes < c->x->arena_reads_from || arena_offset(buf, bytes, &off))
        return NULL;
    return stage_take(c, r, bytes);
}

static const char *stage_root(weft_comm_t c, weft_request_t r, const char *buf, size_t bytes,
                              int way)
{
    char *st = root_stage(c, r, buf, bytes);
    if (!st)
        return buf;
    stage_copy(st, buf, bytes, way);
    return st;
}

/* linear_arena's bcast in pieces (segment=BYTES) stages its root's buffer
 * itself, piece by piece, as copies of its schedule into its scratch,
 * which is the buffer's image at the same offsets (linear.c: the root's
 * whole scratch, from offset 0).  The scratch goes to the stage where the
 * whole buffer would be staged, else onto the buffer itself: its copies
 * then copy nothing, and its sends go from the buffer, as linear's. */
static void stage_root_pieces(weft_comm_t c, weft_request_t r, char *buf, size_t bytes)
{
    char *st = root_stage(c, r, buf, bytes);
    r->e.tmp_shared = st ? st : buf;
}

/* Every rank's input and scratch read in place by its peers
 * (ALGO_STAGED_INPUT: linear_arena's allreduce and reduce): the input is
 * copied (stage_copy, as above) into the stage unless it lies in the arena
 * already, and the scratch follows it there.  stage=sent copies nothing
 * here: the engine copies each block of the input into the stage as its
 * send is posted (exec_t.in_image), while the rank's own steps read the
 * input where it is.  Only where the blocks the peers read are large
 * enough to be read in place (arena_reads_from); otherwise, or without
 * room, the call runs from its own buffers, as correct and slower. */
static void stage_input(weft_comm_t c, weft_request_t r, const char **inp, size_t bytes,
                        size_t tmp_bytes, int way)
{
    uint64_t off;
    if (c->size < 2 || !c->x->arena_reads_from || bytes / (size_t)c->size < c->x->arena_reads_from)
        return;
    bool copy = !arena_offset(*inp, bytes, &off);
    size_t at = copy ? (bytes + 63) & ~(size_t)63 : 0;
    char *st = stage_take(c, r, at + tmp_bytes);
    if (!st)
        return;
    if (copy && way == STAGE_SENT) {
        r->e.in_image = st;
    } else if (copy) {
        stage_copy(st, *inp, bytes, way);
        *inp = st;
    }
    r->e.tmp_shared = st + at;
}

/* A call that completed gives its stage back to the communicator, which
 * keeps the larger of two.  One that failed keeps it: the transport may
 * still read it, and it is freed with the request. */
static void stage_give_back(weft_comm_t c, weft_request_t r)
{
    if (!r->shared_stage)
        return;
    if (c->stage && c->stage_bytes >= r->shared_stage_bytes) {
        weft_free(r->shared_stage);
    } else {
        weft_free(c->stage);
        c->stage = r->shared_stage, c->stage_bytes = r->shared_stage_bytes;
    }
    r->shared_stage = NULL;
}

/* Refuses a call on a communicator that cannot take one: invalid, revoked,
 * in a dead job, or busy with an unfinished *_timeout call. */
static int check_comm_takes_call(weft_comm_t comm, const char *cn)
{
    int rc = comm_check(comm, cn);
    if (rc)
        return rc;
    if (comm->revoked[0])
        return weft_error(WEFT_EREVOKED, "%s: the communicator was revoked: %s", cn,
                          comm->revoked);
    /* A dead job stays dead: never start a call whose messages could meet
     * the leftovers of a failed one. */
    if ((rc = comm->x->ops->health(comm->x)))
        return rc;
    if (comm->pending.req)
        return weft_error(WEFT_EBUSY, "%s: a %s_timeout call is unfinished on this communicator; "
                                      "call it again until it returns WEFT_OK",
                          cn, weft_coll_name(comm->pending.coll));
    return WEFT_OK;
}

/* Refuses what no algorithm could serve, before anything is resolved:
 * an unknown datatype, a count past the address space, a root out of
 * range. */
static int check_args(weft_comm_t comm, weft_coll_t coll, const char *cn, size_t count,
                      weft_dtype_t dt, int root)
{
    if (!dtype_valid(dt))
        return weft_error(WEFT_EINVAL, "%s: unknown datatype %d", cn, (int)dt);
    size_t es = weft_dtype_size(dt);
    int P = comm->size;
    /* a schedule's regions hold 62-bit lengths (sched.h), and no address
     * space is near 2^62 bytes */
    uint64_t lim = (uint64_t)(SIZE_MAX < (1ull << 62) - 1 ? SIZE_MAX : (1ull << 62) - 1);
    bool blocks = coll == WEFT_COLL_REDUCE_SCATTER || coll == WEFT_COLL_ALLGATHER ||
                  coll == WEFT_COLL_SCATTER || coll == WEFT_COLL_GATHER;
    if (count > lim / es / (blocks ? (uint64_t)P : 1))
        return weft_error(WEFT_EINVAL, "%s: count %zu of %s overflows the address space", cn,
                          count, weft_dtype_name(dt));
    if (coll_is_rooted(coll) && (root < 0 || root >= P))
        return weft_error(WEFT_EINVAL, "%s: root %d out of range (communicator of %d ranks)", cn,
                          root, P);
    return WEFT_OK;
}

/* A request for a call of ent: its spare, else a new one; ready to run. */
static int take_request(weft_comm_t comm, sched_entry_t *ent, size_t es, int64_t arrive_ns,
                        weft_request_t *out)
{
    weft_request_t r = ent->spare;
    if (r) {
        ent->spare = r->next;
    } else if (!(r = calloc(1, sizeof *r))) {
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    r->comm = comm;
    r->ent = ent;
    r->next = NULL;
    r->arrive_ns = arrive_ns;
    int rc = exec_prepare(&r->e, ent->s, es);
    if (rc) {
        exec_release(&r->e);
        free(r->stage);
        free(r);
        return rc;
    }
    *out = r;
    return WEFT_OK;
}

/* In place: points BUF_IN (or BUF_OUT) into the other buffer; algorithms
 * not proven safe for that get a private copy of the input (r->stage). */
static int place_in_place(weft_request_t r, const coll_layout_t *lay, const algo_t *al,
                          size_t es, const char **inp, char **outp)
{
    if (lay->alias == ALIAS_IN_IN_OUT)
        *inp = *outp + lay->alias_off * es;
    else if (lay->alias == ALIAS_OUT_IN_IN)
        *outp = (char *)*inp + lay->alias_off * es;
    if (lay->alias == ALIAS_NONE || (al->flags & ALGO_INPLACE_SAFE) || !lay->in_len)
        return WEFT_OK;
    size_t b = lay->in_len * es;
    if (b > r->stage_bytes) {
        free(r->stage);
        r->stage = malloc(b);
        r->stage_bytes = r->stage ? b : 0;
        if (!r->stage)
            return weft_error(WEFT_ENOMEM, "out of memory");
    }
    copy_bytes(r->stage, *inp, b);
    *inp = r->stage;
    return WEFT_OK;
}

/* The executor's view of the call: transport, board, tags, the call's
 * description its messages carry, its time limit. */
static void arm_exec(weft_comm_t comm, weft_request_t r, const call_memo_t *m, weft_dtype_t dt)
{
    sched_entry_t *ent = m->ent;
    r->e.x = comm->x;
    r->e.board = m->al->board;
    r->e.params = &ent->params;
    r->e.read_by_all = (m->al->flags & (ALGO_STAGED_INPUT | ALGO_ROOT_READ_BY_ALL)) != 0;
    r->e.world = comm->world;
    r->e.node_of = comm->node_of;
    r->e.nnodes = comm->node_of ? comm->nnodes : 1;
    r->e.red = m->red;
    r->e.tagbase = (uint64_t)comm->ctx << 48 | (uint64_t)(comm->seq & CALL_NUM_MASK) << 24;
    describe_call(comm, ent, dt, m->op_ident, &r->desc);
    comm->seq++;
    r->e.sig = r->desc.sig;
    r->e.desc = &r->desc;
    r->e.sent_to = ent->sent_to;
    r->e.limit_ns = comm->timeout_ns;
    r->e.bc = &comm->board;
    /* Any algorithm's call of no elements on one machine takes the board's
     * empty path (board.c, empty_progress): it compares itself with its
     * neighbours' call logs and leaves, running at most one such call
     * ahead of a neighbour, so that one made otherwise is still compared.
     * A schedule's would send and wait for messages of no bytes (a forced
     * ring at 4 ranks: PERFORMANCE-LOG.md, "Empty calls"), an arrival-driven
     * algorithm's would wait for every rank.  Its sends gone, so is the
     * look at the peers it sent to. */
    if (r->e.board != &board_ops && r->desc.count == 0 && r->e.nnodes == 1 &&
        r->desc.coll != WEFT_COLL_BARRIER && comm->x->ops->board_slot && comm->x->ops->peer_view) {
        r->e.board = &board_ops;
        r->e.sent_to = NULL;
    }
}

static void call_ended(weft_comm_t c, uint32_t n);

/* A call refused on this rank (an argument, an algorithm that cannot
 * serve it, no memory) still takes its number, and the call log says it
 * was refused.  Ranks that refuse alike all take the number, and nothing
 * else changes.  Where only some refuse (they disagree on an argument, or
 * one lacks memory), the others make the call and wait for them: a
 * stalled wait reads the refuser's record and fails (WEFT_EMISMATCH where
 * the calls differ, WEFT_EPEER where they agree) instead of waiting for
 * the refuser's next call on the communicator, which may never come: it
 * may wait in another communicator for that very peer, a hang without a
 * time limit.  The call counts as ended, so the calls after it end well as
 * before; a message of it that comes anyway proves the ranks did not make
 * it alike (shm.c, disagreement).  weft's own calls (own) are left out.
 * Returns rc, the refusal's message kept. */
static int call_refused(weft_comm_t comm, bool own, const call_shape_t *c, int rc)
{
    if (own)
        return rc;
    char why[512];
    snprintf(why, sizeof why, "%s", weft_last_error());
    call_desc_t d;
    memset(&d, 0, sizeof d);
    d.key = (uint64_t)comm->ctx << 32 | (comm->seq & CALL_NUM_MASK); /* as in the tags */
    d.coll = (uint16_t)c->coll;
    d.count = c->count;
    d.root = coll_is_rooted(c->coll) ? c->root : 0;
    d.dtype = (uint32_t)c->dt;
    op_info_t info;
    if (coll_is_reduction(c->coll) && !op_lookup(c->op, c->dt, &info))
        d.op = info.ident;
    const algo_t *al = c->al ? c->al : comm->choice[c->coll].al;
    d.algo = al ? (uint16_t)(al - algo_table(&(size_t){0})) : CALL_ALGO_AUTO;
    d.params = c->al ? c->params : al ? params_hash(&comm->choice[c->coll].params) : 0;
    d.flags = comm->call_flags | (c->own_reason ? CALL_OWN_REASON : 0);
    comm->call_flags = 0;
    d.sig = call_sig(schedule_sig(c->coll, d.algo, d.count, d.root, d.params), d.op, c->dt);
    uint32_t n = comm->seq & CALL_NUM_MASK;
    comm->seq++;
    if (comm->x->ops->call_note)
        comm->x->ops->call_note(comm->x, &d, CALL_REFUSED);
    call_ended(comm, n);
    return weft_error(rc, "%s", why);
}

/* Starts a call, and with reqp NULL runs it to the end.  own: one of
 * weft's own calls (making a communicator), which runs on AUTO's choice
 * whatever the program chose for the collective (a choice may not serve
 * it: the board where the communicator holds no slots), and leaves the
 * collective's memo and weft_last_algorithm as the program's calls set
 * them. */
static int coll_start(weft_comm_t comm, weft_coll_t coll, const void *in, void *out,
                      size_t count, weft_dtype_t dt, weft_op_t op, int root, bool inplace,
                      weft_request_t *reqp, bool own)
{
    int64_t arrive_ns = profile_on() ? profile_now() : 0;
    const char *cn = weft_coll_name(coll);
    int rc = check_comm_takes_call(comm, cn);
    if (rc)
        return rc;
    /* a board call that posted and left before its neighbours made it, or
     * a schedule that only sent, before a peer it sent to made it */
    if ((atomic_load_explicit(&comm->board.unchecked, memory_order_relaxed) ||
         atomic_load_explicit(&comm->board.sent_peer, memory_order_relaxed)) &&
        (rc = board_recheck(&comm->board, comm->x, comm->world, comm->rank, comm->size)))
        return rc;
    call_shape_t shape = {coll, count, dt, op, root, NULL, 0, false};
    if (comm->x->ops->call_may_start &&
        (rc = comm->x->ops->call_may_start(
             comm->x, (uint64_t)comm->ctx << 32 | (comm->seq & CALL_NUM_MASK))))
        return call_refused(comm, own, &shape, weft_error(rc, "%s: %s", cn, weft_last_error()));
    if ((rc = check_args(comm, coll, cn, count, dt, root)))
        return call_refused(comm, own, &shape, rc);
    size_t es = weft_dtype_size(dt);
    shape.own_reason = true; /* the buffers */
    if ((rc = settle_overlap(cn, coll, comm->size, comm->rank, root, count, es, &in, &out,
                             &inplace)))
        return call_refused(comm, own, &shape, rc);
    shape.own_reason = false;
    call_memo_t own_memo, *m = own ? &own_memo : &comm->memo[coll];
    if (!own && m->keep && m->count == count && m->dt == dt && m->op == op && m->root == root &&
        m->inplace == inplace) {
        if ((rc = buffers_given(cn, &m->lay, in, out, inplace)))
            shape.al = m->al, shape.params = m->ent->params_hash, shape.own_reason = true;
    } else {
        rc = resolve_call(comm, coll, in, out, count, dt, op, root, inplace, own, m, &shape);
    }
    if (rc)
        return call_refused(comm, own, &shape, rc);
    const algo_t *al = m->al;
    sched_entry_t *ent = m->ent;
    ent->last_use = ++comm->clock;
    if (!own) {
        comm->last[coll] = al->name;
        comm->last_choice[coll] = m->last_choice;
    }

    weft_request_t r = NULL;
    const char *inp = in;
    char *outp = out;
    if ((rc = take_request(comm, ent, es, arrive_ns, &r)) ||
        (inplace && (rc = place_in_place(r, &m->lay, al, es, &inp, &outp)))) {
        if (r) { /* no memory for the in-place copy */
            r->next = ent->spare;
            ent->spare = r;
        }
        shape.al = al, shape.params = ent->params_hash, shape.own_reason = true;
        return call_refused(comm, own, &shape, rc);
    }
    r->e.tmp_shared = NULL;
    r->e.in_image = NULL;
    if ((al->flags & ALGO_ROOT_READ_BY_ALL) && comm->rank == root) {
        if (ent->params.segment)
            stage_root_pieces(comm, r, outp, count * es);
        else
            outp = (char *)stage_root(comm, r, outp, count * es, ent->params.stage);
    }
    if (al->flags & ALGO_STAGED_INPUT)
        stage_input(comm, r, &inp, count * es, ent->s->tmp_len * es, ent->params.stage);
    arm_exec(comm, r, m, dt);
    ent->refs++;
    comm->active++;
    if (r->e.board == &board_ops)
        board_arm(&r->e, comm->active == 1 /* this call alone */);
    /* only split-phase calls can be unfinished when weft_finalize runs */
    r->counted = reqp != NULL;
    if (r->counted)
        __atomic_add_fetch(&weft_g.unfinished, 1, __ATOMIC_RELAXED);
    exec_start(&r->e, inp, outp, reqp != NULL);
    if (reqp) {
        *reqp = r;
        return WEFT_OK;
    }
    return wait_and_finish(r, -1);
}

int coll_run(weft_comm_t comm, weft_coll_t coll, const void *in, void *out, size_t count,
             weft_dtype_t dt, weft_op_t op, int root, bool inplace, weft_request_t *reqp)
{
    return coll_start(comm, coll, in, out, count, dt, op, root, inplace, reqp, false);
}

int coll_run_own(weft_comm_t comm, weft_coll_t coll, const void *in, void *out, size_t count,
                 weft_dtype_t dt, weft_op_t op, bool inplace)
{
    return coll_start(comm, coll, in, out, count, dt, op, 0, inplace, NULL, true);
}

/* The call as its peers will compare it: every argument that must agree,
 * and the signature every message carries. */
static void describe_call(weft_comm_t comm, const sched_entry_t *ent, weft_dtype_t dt,
                          uint64_t op_ident, call_desc_t *d)
{
    memset(d, 0, sizeof *d);
    d->key = (uint64_t)comm->ctx << 32 | (comm->seq & CALL_NUM_MASK); /* as in the tags */
    d->coll = (uint16_t)ent->coll;
    d->algo = (uint16_t)(ent->al - algo_table(&(size_t){0}));
    d->count = ent->count;
    d->op = op_ident;
    d->root = ent->root;
    d->dtype = (uint32_t)dt;
    d->params = ent->params_hash;
    d->flags = comm->call_flags;
    comm->call_flags = 0;
    d->sig = call_sig(ent->sig, op_ident, dt); /* the schedule's part hashed once (cache_get) */
}

/* Waits for r (timeout_ms as exec_wait) and finishes it, unless it is a
 * split-phase call that is merely not done yet.  A wait past the
 * communicator's timeout revokes the communicator. */
static int wait_and_finish(weft_request_t r, int timeout_ms)
{
    weft_comm_t c = r->comm;
    int rc = exec_wait(&r->e, timeout_ms);
    if (rc == WEFT_ETIMEDOUT && !r->e.expired)
        return weft_error(WEFT_ETIMEDOUT, "%s_timeout: not finished yet: call again",
                          weft_coll_name(r->ent->coll));
    if (c->pending.req == r)
        c->pending.req = NULL;
    if (rc != WEFT_ETIMEDOUT)
        return request_finish(r, rc);
    char why[400];
    snprintf(why, sizeof why, "%s", weft_last_error());
    request_finish(r, rc);
    comm_revoke(c, why);
    return weft_error(WEFT_ETIMEDOUT, "%s; the communicator is now revoked", why);
}

static void call_ended(weft_comm_t c, uint32_t n);

int request_finish(weft_request_t r, int rc)
{
    sched_entry_t *ent = r->ent;
    weft_comm_t c = r->comm;
    rc = exec_error_here(&r->e, exec_finish(&r->e, rc));
    if (r->e.board == &board_ops && !rc)
        board_finished(&r->e);
    if (r->counted) {
        r->counted = false;
        __atomic_sub_fetch(&weft_g.unfinished, 1, __ATOMIC_RELAXED);
    }
    c->active--;
    ent->refs--;
    if (!rc && profile_on())
        profile_note(r, r->arrive_ns);
    if (rc) {
        /* The transport may still hold this request's messages: never reuse
         * it; it is freed once its transport is closed (comm_destroy).  Nor
         * may they touch the caller's buffers from now on. */
        exec_disown_buffers(&r->e);
        r->next = c->dead;
        c->dead = r;
        comm_calls_ended(c);
        return rc;
    }
    stage_give_back(c, r);
    r->next = ent->spare;
    ent->spare = r;
    call_ended(c, (uint32_t)r->desc.key);
    return rc;
}

void comm_calls_ended(weft_comm_t c)
{
    xport_t *x = c->x;
    if (x->ops->calls_ended)
        x->ops->calls_ended(x, c->ctx, c->first_call, c->ended_below,
                            !c->revoked[0] && !c->dead);
}

/* Call number n (24 bits) of c has ended well.  Calls end out of order
 * (split-phase calls, each rank completing them in its own order): the
 * ended ones above the lowest still in flight wait in ended_after, and
 * where none is in flight every call started has ended. */
static void call_ended(weft_comm_t c, uint32_t n)
{
    const uint32_t mask = CALL_NUM_MASK;
    uint32_t below = c->ended_below, d = (n - below) & mask;
    if (!c->active) {
        c->ended_below = c->seq & mask, c->ended_after = 0;
    } else if (d < 64) {
        c->ended_after |= 1ull << d;
        for (; c->ended_after & 1; c->ended_after >>= 1)
            c->ended_below = (c->ended_below + 1) & mask;
    }
    if (c->ended_below != below)
        comm_calls_ended(c);
}

static void abandon_if_of(exec_t *e, void *comm)
{
    weft_request_t r = (weft_request_t)((char *)e - offsetof(struct weft_request, e));
    if (r->comm != comm)
        return;
    if (r->counted) {
        r->counted = false;
        __atomic_sub_fetch(&weft_g.unfinished, 1, __ATOMIC_RELAXED);
    }
    if (e->x->ops->call_note) /* lock-free: no transport lock needed */
        e->x->ops->call_note(e->x, &r->desc, CALL_ABANDONED);
}

void comm_revoke(weft_comm_t c, const char *why)
{
    if (!c->revoked[0])
        snprintf(c->revoked, sizeof c->revoked, "%s", why && *why ? why : "revoked");
    comm_calls_ended(c);
    if (c->pending.req) {
        weft_request_t r = c->pending.req;
        c->pending.req = NULL;
        request_finish(r, WEFT_EREVOKED);
    }
    /* split-phase requests stay the caller's (their wait says revoked at
     * once) but no longer hold up weft_finalize, and peers learn they are
     * abandoned */
    exec_for_each_active(abandon_if_of, c);
}

weft_err_t weft_comm_revoke(weft_comm_t comm)
{
    int rc = comm_check(comm, "weft_comm_revoke");
    if (rc)
        return rc;
    comm_revoke(comm, "weft_comm_revoke was called on this rank");
    return WEFT_OK;
}

weft_err_t weft_comm_set_timeout(weft_comm_t comm, int timeout_ms)
{
    int rc = comm_check(comm, "weft_comm_set_timeout");
    if (rc)
        return rc;
    if (timeout_ms < 0)
        return weft_error(WEFT_EINVAL, "weft_comm_set_timeout: timeout %d ms (want >= 0; 0: "
                                       "no timeout)", timeout_ms);
    comm->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
    return WEFT_OK;
}

/* ---- public collectives ---- */

weft_err_t weft_barrier(weft_comm_t comm)
{
    return coll_run(comm, WEFT_COLL_BARRIER, NULL, NULL, 0, WEFT_UINT8, WEFT_SUM, 0, false, NULL);
}

weft_err_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                          weft_op_t op, weft_comm_t comm)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    return coll_run(comm, WEFT_COLL_ALLREDUCE, ip ? NULL : sendbuf, recvbuf, count, dtype, op, 0,
                    ip, NULL);
}

weft_err_t weft_bcast(void *buf, size_t count, weft_dtype_t dtype, int root, weft_comm_t comm)
{
    return coll_run(comm, WEFT_COLL_BCAST, NULL, buf, count, dtype, WEFT_SUM, root, false, NULL);
}

/* WEFT_IN_PLACE at a rank that is not the root (a root out of range is
 * left to coll_run, which names it). */
static bool off_root(weft_comm_t comm, int root)
{
    return comm && root >= 0 && root < comm->size && comm->rank != root;
}

weft_err_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                       weft_op_t op, int root, weft_comm_t comm)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    if (ip && off_root(comm, root))
        return weft_error(WEFT_EINVAL, "reduce: WEFT_IN_PLACE is allowed at the root only");
    return coll_run(comm, WEFT_COLL_REDUCE, ip ? NULL : sendbuf, recvbuf, count, dtype, op, root,
                    ip, NULL);
}

weft_err_t weft_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                               weft_dtype_t dtype, weft_op_t op, weft_comm_t comm)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    /* in place, the input (P*count) is recvbuf and the result its first block */
    return coll_run(comm, WEFT_COLL_REDUCE_SCATTER, ip ? recvbuf : sendbuf, ip ? NULL : recvbuf,
                    count, dtype, op, 0, ip, NULL);
}

weft_err_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                          weft_comm_t comm)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    return coll_run(comm, WEFT_COLL_ALLGATHER, ip ? NULL : sendbuf, recvbuf, count, dtype,
                    WEFT_SUM, 0, ip, NULL);
}

weft_err_t weft_scatter(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                        int root, weft_comm_t comm)
{
    bool ip = recvbuf == WEFT_IN_PLACE;
    if (ip && off_root(comm, root))
        return weft_error(WEFT_EINVAL, "scatter: WEFT_IN_PLACE is allowed at the root only");
    return coll_run(comm, WEFT_COLL_SCATTER, sendbuf, ip ? NULL : recvbuf, count, dtype,
                    WEFT_SUM, root, ip, NULL);
}

weft_err_t weft_gather(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                       int root, weft_comm_t comm)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    if (ip && off_root(comm, root))
        return weft_error(WEFT_EINVAL, "gather: WEFT_IN_PLACE is allowed at the root only");
    return coll_run(comm, WEFT_COLL_GATHER, ip ? NULL : sendbuf, recvbuf, count, dtype,
                    WEFT_SUM, root, ip, NULL);
}

/* ---- split-phase ---- */

weft_err_t weft_iallreduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                           weft_op_t op, weft_comm_t comm, weft_request_t *req)
{
    if (!req)
        return weft_error(WEFT_EINVAL, "iallreduce: req is NULL");
    bool ip = sendbuf == WEFT_IN_PLACE;
    return coll_run(comm, WEFT_COLL_ALLREDUCE, ip ? NULL : sendbuf, recvbuf, count, dtype, op, 0,
                    ip, req);
}

weft_err_t weft_ibcast(void *buf, size_t count, weft_dtype_t dtype, int root, weft_comm_t comm,
                       weft_request_t *req)
{
    if (!req)
        return weft_error(WEFT_EINVAL, "ibcast: req is NULL");
    return coll_run(comm, WEFT_COLL_BCAST, NULL, buf, count, dtype, WEFT_SUM, root, false, req);
}

weft_err_t weft_ireduce(const void *sendbuf, void *recvbuf, size_t count, weft_dtype_t dtype,
                        weft_op_t op, int root, weft_comm_t comm, weft_request_t *req)
{
    if (!req)
        return weft_error(WEFT_EINVAL, "ireduce: req is NULL");
    bool ip = sendbuf == WEFT_IN_PLACE;
    if (ip && off_root(comm, root))
        return weft_error(WEFT_EINVAL, "ireduce: WEFT_IN_PLACE is allowed at the root only");
    return coll_run(comm, WEFT_COLL_REDUCE, ip ? NULL : sendbuf, recvbuf, count, dtype, op, root,
                    ip, req);
}

weft_err_t weft_test(weft_request_t *req, int *done)
{
    if (!req || !*req || !done)
        return weft_error(WEFT_EINVAL, "weft_test: NULL request or done pointer");
    if (fork_refused("weft_test"))
        return WEFT_EINVAL;
    weft_request_t r = *req;
    xport_t *x = r->e.x;
    int rc;
    if (r->comm->revoked[0]) {
        rc = weft_error(WEFT_EREVOKED, "weft_test: the communicator was revoked: %s",
                        r->comm->revoked);
    } else {
        pthread_mutex_lock(&x->lock);
        rc = exec_test(&r->e);
        pthread_mutex_unlock(&x->lock);
        if (rc == 0) {
            *done = 0;
            return WEFT_OK;
        }
        rc = rc == 1 ? WEFT_OK : -rc;
    }
    *done = 1;
    rc = request_finish(r, rc);
    *req = NULL;
    return rc;
}

weft_err_t weft_wait(weft_request_t *req)
{
    if (!req || !*req)
        return weft_error(WEFT_EINVAL, "weft_wait: NULL request");
    if (fork_refused("weft_wait"))
        return WEFT_EINVAL;
    weft_request_t r = *req;
    *req = NULL;
    if (r->comm->revoked[0])
        return request_finish(r, weft_error(WEFT_EREVOKED, "weft_wait: the communicator was "
                                            "revoked: %s", r->comm->revoked));
    return wait_and_finish(r, -1);
}

/* ---- GASPI-style: progress for at most timeout_ms, call again to continue ---- */

static int timeout_call(weft_comm_t comm, weft_coll_t coll, const void *in, void *out,
                        size_t count, weft_dtype_t dt, weft_op_t op, int root, bool inplace,
                        int timeout_ms)
{
    const char *cn = weft_coll_name(coll);
    int rc = comm_check(comm, cn);
    if (rc)
        return rc;
    if (comm->revoked[0])
        return weft_error(WEFT_EREVOKED, "%s_timeout: the communicator was revoked: %s", cn,
                          comm->revoked);
    if (timeout_ms < WEFT_BLOCK)
        return weft_error(WEFT_EINVAL, "%s_timeout: timeout %d ms (want >= 0, or WEFT_BLOCK)", cn,
                          timeout_ms);
    if (comm->pending.req) {
        if (comm->pending.coll != coll)
            return weft_error(WEFT_EBUSY, "%s_timeout: a %s_timeout call is unfinished on this "
                                          "communicator", cn, weft_coll_name(comm->pending.coll));
        if (comm->pending.in != in || comm->pending.out != out || comm->pending.count != count ||
            comm->pending.dtype != dt || comm->pending.op != op || comm->pending.root != root)
            return weft_error(WEFT_EINVAL, "%s_timeout: continuing call with different arguments "
                                           "(the unfinished one has count %zu)",
                              cn, comm->pending.count);
    } else {
        weft_request_t req;
        if ((rc = coll_run(comm, coll, inplace ? NULL : in, out, count, dt, op, root, inplace, &req)))
            return rc;
        comm->pending.req = req;
        comm->pending.coll = coll;
        comm->pending.in = in, comm->pending.out = out;
        comm->pending.count = count, comm->pending.dtype = dt;
        comm->pending.op = op, comm->pending.root = root;
    }
    return wait_and_finish(comm->pending.req, timeout_ms);
}

weft_err_t weft_allreduce_timeout(const void *sendbuf, void *recvbuf, size_t count,
                                  weft_dtype_t dtype, weft_op_t op, weft_comm_t comm, int timeout_ms)
{
    return timeout_call(comm, WEFT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0,
                        sendbuf == WEFT_IN_PLACE, timeout_ms);
}

weft_err_t weft_bcast_timeout(void *buf, size_t count, weft_dtype_t dtype, int root,
                              weft_comm_t comm, int timeout_ms)
{
    return timeout_call(comm, WEFT_COLL_BCAST, NULL, buf, count, dtype, WEFT_SUM, root, false,
                        timeout_ms);
}

weft_err_t weft_reduce_timeout(const void *sendbuf, void *recvbuf, size_t count,
                               weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t comm,
                               int timeout_ms)
{
    bool ip = sendbuf == WEFT_IN_PLACE;
    if (ip && off_root(comm, root))
        return weft_error(WEFT_EINVAL, "reduce_timeout: WEFT_IN_PLACE is allowed at the root only");
    return timeout_call(comm, WEFT_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, ip,
                        timeout_ms);
}
