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

/* The linear reduce-scatter of linear_arena: every rank sends block j of
 * its input to rank j, and rank r combines block r in rank order into
 * scratch (acc).  Returns the first of the sends (to r + 1, r + 2, ...,
 * one step each), which the P steps combining ranks 0, 1, ... follow. */
static uint32_t reduce_own_block(sched_t *s, const coll_args_t *a, region_t *acc)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count, mine = blk_len(n, (uint64_t)P, (uint64_t)r);
    uint32_t first = s->nsteps;
    for (int i = 1; i < P; i++) { /* nearest first, as a ring would */
        uint64_t j = (uint64_t)mod(r + i, P);
        sched_send(s, (int)j, 0, reg(BUF_IN, blk_off(n, (uint64_t)P, j), blk_len(n, (uint64_t)P, j)));
    }
    *acc = reg(BUF_TMP, sched_tmp(s, mine), mine);
    region_t own = reg(BUF_IN, blk_off(n, (uint64_t)P, (uint64_t)r), mine);
    uint32_t prev = r == 0 ? sched_copy(s, own, *acc) : sched_recv(s, 0, 0, *acc);
    for (int q = 1; q < P; q++) {
        uint32_t st = q == r ? sched_reduce(s, own, *acc, false)
                             : sched_recv_reduce(s, q, 0, *acc, false);
        sched_depend(s, st, prev);
        prev = st;
    }
    return first;
}

/* The receive of block j of the result into the output.  After the send
 * of block j of the input to its owner (under WEFT_IN_PLACE, unstaged,
 * they are the same bytes), and after the receive of j's input block: a
 * receive posted before it would find that message first and have the
 * transport buffer it as unexpected, a copy of every such block. */
static void recv_result_block(sched_t *s, const coll_args_t *a, uint32_t first, int j)
{
    uint64_t n = a->count, P = (uint64_t)a->nrank;
    uint32_t rv = sched_recv(s, j, 1, reg(BUF_OUT, blk_off(n, P, (uint64_t)j), blk_len(n, P, (uint64_t)j)));
    sched_depend(s, rv, first + (uint32_t)(mod(j - a->rank, a->nrank) - 1));
    sched_depend(s, rv, first + (uint32_t)(a->nrank - 1 + j));
}

/* The reduced blocks go to every rank (root < 0: allreduce) or to the
 * root (reduce), which copies them straight from their owners' stages. */
static int linear_arena(sched_t *s, const coll_args_t *a, int root)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    region_t acc;
    uint32_t first = reduce_own_block(s, a, &acc), reduced = first + (uint32_t)(2 * P - 2);
    for (int i = 1; i < P; i++) {
        int to = mod(r + i, P);
        if (root < 0 || to == root)
            sched_depend(s, sched_send(s, to, 1, acc), reduced);
    }
    if (root >= 0 && r != root)
        return 0;
    uint32_t cp = sched_copy(s, acc, reg(BUF_OUT, blk_off(n, (uint64_t)P, (uint64_t)r), acc.len));
    sched_depend(s, cp, reduced);
    for (int i = 1; i < P; i++)
        recv_result_block(s, a, first, mod(r - i, P));
    return 0;
}

int algo_linear_arena_allreduce(sched_t *s, const coll_args_t *a) { return linear_arena(s, a, -1); }

int algo_linear_arena_reduce(sched_t *s, const coll_args_t *a) { return linear_arena(s, a, a->root); }
