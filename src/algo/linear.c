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
 * or a kernel that refused it) runs it as linear. */
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

int algo_linear_arena_usable(const coll_args_t *a, char *why, size_t len)
{
    if (!a->arena_reads) {
        snprintf(why, len, "bcast linear_arena needs every rank on one machine's shared memory "
                           "(weft run, or MPI ranks of one node)");
        return -1;
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
