/* linear.c — the flat (linear) algorithms: the root talks to every rank
 * directly.  Broadcast, reduce, scatter, gather.
 *
 * The baselines every collective paper starts from (and what MPI libraries
 * use for tiny P).  The linear reduce combines contributions strictly in rank
 * order (x0 op x1 op ... op x(P-1)), so it serves non-commutative ops.
 *
 * linear_arena is the linear bcast's schedule with its root's buffer first
 * copied into the root's shared arena (ALGO_ROOT_READ_BY_ALL, api.c), from
 * where every peer copies it out: P copies of n bytes in all, where
 * through cells each peer costs two.  A root without an arena (WEFT_CMA=0,
 * or a kernel that refused it) runs it as linear.  With segment=BYTES the
 * root stages its buffer in pieces, as steps of the schedule: each piece
 * is copied into scratch (which api.c places in the arena) and sent to
 * every peer as soon as it is there, so the readers copy piece j while
 * the root stages piece j + 1 (PERFORMANCE-LOG.md, "The bcast's stage in
 * pieces").
 *
 * The allreduce and reduce linear_arena are the linear reduce-scatter
 * followed by a linear allgather (or gather to the root), with every
 * rank's input and scratch staged in its arena (ALGO_STAGED_INPUT,
 * api.c): rank j reduces block j straight from every rank's stage, in rank
 * order, and every rank copies the reduced blocks straight from their
 * owners' stages.  Two waits per rank whatever P, and no byte copied
 * through a cell: on shared memory with more ranks than cores each extra
 * round is a rank that must be scheduled again, and each cell a second
 * copy (PERFORMANCE-LOG.md, "Allreduce staged in the arena"). */
#include <stdio.h>
#include <stdlib.h>

#include "algo.h"

int algo_linear_bcast(sched_t *s, const coll_args_t *a)
{
    region_t buf = reg(BUF_OUT, 0, a->count);
    if (a->rank != a->root) {
        sched_recv(s, a->root, 0, buf);
        return 0;
    }
    for (int i = 1; i < a->nrank; i++) /* nearest first, as a ring would */
        sched_send(s, mod(a->root + i, a->nrank), 0, buf);
    return 0;
}

/* The pieces a staged bcast's buffer is cut into, 0 when unsegmented: at
 * most PIECES_MAX, a buffer that segment=BYTES would cut into more being
 * cut into that many larger ones. */
static uint64_t stage_pieces(const coll_args_t *a)
{
    if (!a->params.segment)
        return 0;
    uint64_t k = pieces_of(a->count, a->esize, a->params.segment);
    return k < PIECES_MAX ? k : PIECES_MAX;
}

int algo_linear_arena_usable(const coll_args_t *a, char *why, size_t len)
{
    if (!a->arena_reads) {
        snprintf(why, len, "%s linear_arena needs every rank on one machine's shared memory "
                           "(weft run, or MPI ranks of one node)", weft_coll_name(a->coll));
        return -1;
    }
    return 0;
}

/* The root copies piece j of its buffer into scratch, after piece j - 1
 * (one copy at a time, each followed at once by its sends: the engine
 * queues a step's successors in the order they were made), and sends it
 * from there to every peer.  The scratch is the buffer's image at the same
 * offsets, so that api.c may point it at the buffer itself where nothing
 * is to be staged: the copies then copy nothing, and this is linear. */
int algo_linear_arena_bcast(sched_t *s, const coll_args_t *a)
{
    uint64_t k = stage_pieces(a), n = a->count;
    if (!k)
        return algo_linear_bcast(s, a);
    int P = a->nrank, root = a->root;
    uint64_t img = a->rank == root ? sched_tmp(s, n) : 0;
    uint32_t prev = 0;
    for (uint64_t j = 0; j < k; j++) {
        uint64_t lo = n * j / k, len = n * (j + 1) / k - lo;
        if (a->rank != root) {
            sched_recv(s, root, (uint32_t)j, reg(BUF_OUT, lo, len));
            continue;
        }
        uint32_t cp = sched_copy(s, reg(BUF_OUT, lo, len), reg(BUF_TMP, img + lo, len));
        if (j)
            sched_depend(s, cp, prev);
        for (int i = 1; i < P; i++)
            sched_depend(s, sched_send(s, mod(root + i, P), (uint32_t)j,
                                       reg(BUF_TMP, img + lo, len)),
                         cp);
        prev = cp;
    }
    return 0;
}

int algo_linear_reduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, root = a->root;
    uint64_t n = a->count;
    if (a->rank != root) {
        sched_send(s, root, 0, reg(BUF_IN, 0, n));
        return 0;
    }
    /* With root 0 we can accumulate in the output; otherwise x0 must come
     * first, and under WEFT_IN_PLACE the root's input lives in the output,
     * so accumulate in scratch and copy at the end. */
    region_t acc = root == 0 ? reg(BUF_OUT, 0, n) : reg(BUF_TMP, sched_tmp(s, n), n);
    uint32_t prev = root == 0 ? sched_copy(s, reg(BUF_IN, 0, n), acc) : sched_recv(s, 0, 0, acc);
    for (int i = 1; i < P; i++) {
        uint32_t st = i == root ? sched_reduce(s, reg(BUF_IN, 0, n), acc, false)
                                : sched_recv_reduce(s, i, 0, acc, false);
        sched_depend(s, st, prev);
        prev = st;
    }
    if (root != 0) {
        uint32_t cp = sched_copy(s, acc, reg(BUF_OUT, 0, n));
        sched_depend(s, cp, prev);
    }
    return 0;
}

int algo_linear_scatter(sched_t *s, const coll_args_t *a)
{
    uint64_t c = a->count;
    if (a->rank != a->root) {
        sched_recv(s, a->root, 0, reg(BUF_OUT, 0, c));
        return 0;
    }
    for (int i = 1; i < a->nrank; i++) {
        int peer = mod(a->root + i, a->nrank);
        sched_send(s, peer, 0, reg(BUF_IN, (uint64_t)peer * c, c));
    }
    sched_copy(s, reg(BUF_IN, (uint64_t)a->root * c, c), reg(BUF_OUT, 0, c));
    return 0;
}

int algo_linear_gather(sched_t *s, const coll_args_t *a)
{
    uint64_t c = a->count;
    if (a->rank != a->root) {
        sched_send(s, a->root, 0, reg(BUF_IN, 0, c));
        return 0;
    }
    for (int i = 1; i < a->nrank; i++) {
        int peer = mod(a->root + i, a->nrank);
        sched_recv(s, peer, 0, reg(BUF_OUT, (uint64_t)peer * c, c));
    }
    sched_copy(s, reg(BUF_IN, 0, c), reg(BUF_OUT, (uint64_t)a->root * c, c));
    return 0;
}

/* Linear reduce-scatter: every rank sends block j of its input to rank j,
 * and each rank combines the contributions to its block in rank order, so
 * non-commutative ops are served (the fallback AUTO uses for them). */
int algo_linear_reduce_scatter(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t c = a->count;
    for (int i = 1; i < P; i++) {
        int to = mod(r + i, P);
        sched_send(s, to, 0, reg(BUF_IN, (uint64_t)to * c, c));
    }
    region_t acc = r == 0 ? reg(BUF_OUT, 0, c) : reg(BUF_TMP, sched_tmp(s, c), c);
    uint32_t prev = r == 0 ? sched_copy(s, reg(BUF_IN, 0, c), acc) : sched_recv(s, 0, 0, acc);
    for (int i = 1; i < P; i++) {
        uint32_t st = i == r ? sched_reduce(s, reg(BUF_IN, (uint64_t)r * c, c), acc, false)
                             : sched_recv_reduce(s, i, 0, acc, false);
        sched_depend(s, st, prev);
        prev = st;
    }
    if (r != 0) {
        uint32_t cp = sched_copy(s, acc, reg(BUF_OUT, 0, c));
        sched_depend(s, cp, prev);
    }
    return 0;
}

/* The pieces block j of linear_arena's reduce-scatter is cut into (sender
 * and receiver compute them from the block's length alike): one without
 * segment=, else pieces of at most segment bytes, at most PIECES_MAX. */
static uint64_t block_pieces(const coll_args_t *a, uint64_t len)
{
    if (!a->params.segment)
        return 1;
    uint64_t k = pieces_of(len, a->esize, a->params.segment);
    return k < PIECES_MAX ? k : PIECES_MAX;
}

/* Piece c of an input block travels under its own tag (steps posted at
 * once match in no set order), tag 1 being the reduced blocks'; one piece
 * keeps tag 0, as unsegmented. */
static uint32_t piece_tag(uint64_t c) { return c ? (uint32_t)c + 1 : 0; }

/* The steps that order a rank's result receives (recv_result_block): per
 * peer j, the last piece of j's input received, and the first and last
 * of this rank's sends to j (consecutive steps). */
typedef struct {
    uint32_t *last_in, *send_lo, *send_hi;
} arena_marks_t;

/* The linear reduce-scatter of linear_arena: every rank sends block j of
 * its input to rank j, and rank r combines block r in rank order into
 * scratch (acc).  With segment=BYTES the block is combined a piece at a
 * time, every rank's contribution to a piece before the next piece, so
 * that the piece being combined stays in the cache (P - 1 passes over the
 * whole block, for a block past the L2, read it back from memory each
 * time).  Returns the last combining step. */
static uint32_t reduce_own_block(sched_t *s, const coll_args_t *a, region_t *acc,
                                 const arena_marks_t *mk)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count, mine = blk_len(n, (uint64_t)P, (uint64_t)r);
    for (int i = 1; i < P; i++) { /* nearest first, as a ring would */
        uint64_t j = (uint64_t)mod(r + i, P), off = blk_off(n, (uint64_t)P, j);
        uint64_t len = blk_len(n, (uint64_t)P, j), k = block_pieces(a, len);
        mk->send_lo[j] = s->nsteps;
        for (uint64_t c = 0; c < k; c++) {
            uint64_t lo = len * c / k;
            sched_send(s, (int)j, piece_tag(c), reg(BUF_IN, off + lo, len * (c + 1) / k - lo));
        }
        mk->send_hi[j] = s->nsteps - 1;
    }
    uint64_t base = sched_tmp(s, mine), own_off = blk_off(n, (uint64_t)P, (uint64_t)r);
    *acc = reg(BUF_TMP, base, mine);
    uint64_t k = block_pieces(a, mine);
    uint32_t prev = 0;
    for (uint64_t c = 0; c < k; c++) {
        uint64_t lo = mine * c / k, len = mine * (c + 1) / k - lo;
        region_t part = reg(BUF_TMP, base + lo, len), own = reg(BUF_IN, own_off + lo, len);
        for (int q = 0; q < P; q++) {
            uint32_t st = q == r ? (q == 0 ? sched_copy(s, own, part) : sched_reduce(s, own, part, false))
                                 : (q == 0 ? sched_recv(s, 0, piece_tag(c), part)
                                           : sched_recv_reduce(s, q, piece_tag(c), part, false));
            if (c || q)
                sched_depend(s, st, prev);
            mk->last_in[q] = st;
            prev = st;
        }
    }
    return prev;
}

/* The receive of block j of the result into the output.  After the sends
 * of block j of the input to its owner (under WEFT_IN_PLACE, unstaged,
 * they are the same bytes), and after the receive of j's input block: a
 * receive posted before it would find that message first and have the
 * transport buffer it as unexpected, a copy of every such block. */
static void recv_result_block(sched_t *s, const coll_args_t *a, const arena_marks_t *mk, int j)
{
    uint64_t n = a->count, P = (uint64_t)a->nrank;
    uint32_t rv = sched_recv(s, j, 1, reg(BUF_OUT, blk_off(n, P, (uint64_t)j), blk_len(n, P, (uint64_t)j)));
    for (uint32_t st = mk->send_lo[j]; st <= mk->send_hi[j]; st++)
        sched_depend(s, rv, st);
    sched_depend(s, rv, mk->last_in[j]);
}

/* The reduced blocks go to every rank (root < 0: allreduce) or to the
 * root (reduce), which copies them straight from their owners' stages. */
static int linear_arena(sched_t *s, const coll_args_t *a, int root)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    uint32_t *marks = malloc(3 * (size_t)P * sizeof *marks);
    if (!marks)
        return WEFT_ENOMEM;
    arena_marks_t mk = {marks, marks + P, marks + 2 * P};
    region_t acc;
    uint32_t reduced = reduce_own_block(s, a, &acc, &mk);
    for (int i = 1; i < P; i++) {
        int to = mod(r + i, P);
        if (root < 0 || to == root)
            sched_depend(s, sched_send(s, to, 1, acc), reduced);
    }
    if (root < 0 || r == root) {
        uint32_t cp = sched_copy(s, acc, reg(BUF_OUT, blk_off(n, (uint64_t)P, (uint64_t)r), acc.len));
        sched_depend(s, cp, reduced);
        for (int i = 1; i < P; i++)
            recv_result_block(s, a, &mk, mod(r - i, P));
    }
    free(marks);
    return 0;
}

int algo_linear_arena_allreduce(sched_t *s, const coll_args_t *a) { return linear_arena(s, a, -1); }

int algo_linear_arena_reduce(sched_t *s, const coll_args_t *a) { return linear_arena(s, a, a->root); }
