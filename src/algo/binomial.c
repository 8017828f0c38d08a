/* binomial.c — binomial-tree broadcast, reduce, scatter and gather, and the
 * binomial allreduce (binomial reduce to rank 0 + binomial broadcast).
 *
 * Sources: the classic MPICH binomial trees (Thakur, Rabenseifner & Gropp
 * 2005) and the "binomial spanning tree" baseline of
 * butterfly-split-phase-allreduce.txt.  Ranks are renumbered relative to the
 * root (vrank v = rank - root mod P); v's parent is v minus its lowest set
 * bit, its children are v + 2^k for 2^k below that bit, and its subtree is
 * the contiguous vrank range [v, v + min(lowbit(v), P - v)).
 *
 * Reduce keeps rank order when the op is not commutative: the tree is then
 * rooted at rank 0 (vrank = rank, so every subtree is a contiguous rank
 * range combined left to right) and rank 0 forwards the result to the root. */
#include <string.h>

#include "algo.h"

static int subtree(int v, int P)
{
    int span = binomial_span(v, P);
    return span < P - v ? span : P - v;
}

static int real_rank(int v, int root, int P) { return (v + root) % P; }

int algo_binomial_bcast(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, root = a->root, v = mod(a->rank - root, P);
    region_t buf = reg(BUF_OUT, 0, a->count);
    int span = binomial_span(v, P);
    if (v) {
        sched_recv(s, real_rank(v - span, root, P), 0, buf);
        sched_round(s);
    }
    for (int mask = span >> 1; mask >= 1; mask >>= 1) /* biggest subtree first */
        if (v + mask < P)
            sched_send(s, real_rank(v + mask, root, P), 0, buf);
    return 0;
}

int algo_binomial_reduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank, root = a->root;
    uint64_t n = a->count;
    bool rotate = a->commutative || root == 0;
    int troot = rotate ? root : 0;
    int v = mod(r - troot, P), span = binomial_span(v, P);
    bool has_child = v + 1 < P && span > 1;
    if (!has_child && v != 0) {
        sched_send(s, real_rank(v - span, troot, P), 0, reg(BUF_IN, 0, n));
    } else {
        /* the accumulator is the output only where the result belongs */
        bool acc_out = r == root && v == 0;
        region_t acc = acc_out ? reg(BUF_OUT, 0, n) : reg(BUF_TMP, sched_tmp(s, n), n);
        uint32_t prev = sched_copy(s, reg(BUF_IN, 0, n), acc);
        for (int mask = 1; mask < span; mask <<= 1) {
            if (v + mask >= P)
                break;
            /* children cover successively higher rank ranges: combine on the
             * right */
            uint32_t rr = sched_recv_reduce(s, real_rank(v + mask, troot, P), 0, acc, false);
            sched_depend(s, rr, prev);
            prev = rr;
        }
        if (v != 0) {
            uint32_t sd = sched_send(s, real_rank(v - span, troot, P), 0, acc);
            sched_depend(s, sd, prev);
        } else if (!acc_out) {
            uint32_t sd = sched_send(s, root, 1, acc);
            sched_depend(s, sd, prev);
        }
    }
    if (!rotate && r == root && v != 0) {
        sched_round(s);
        sched_recv(s, 0, 1, reg(BUF_OUT, 0, n));
    }
    return 0;
}

/* Scatter/gather move vrank-ordered ranges; at a root other than 0 the
 * rank-ordered buffer is rotated through scratch so each subtree's blocks
 * are contiguous. */
static void rotate_copy(sched_t *s, region_t from, region_t to, uint64_t c, int root, int P,
                        bool to_vrank)
{
    uint64_t head = (uint64_t)(P - root) * c, tail = (uint64_t)root * c;
    if (to_vrank) { /* rank order -> vrank order */
        sched_copy(s, reg(from.buf, from.off + tail, head), reg(to.buf, to.off, head));
        sched_copy(s, reg(from.buf, from.off, tail), reg(to.buf, to.off + head, tail));
    } else {
        sched_copy(s, reg(from.buf, from.off, head), reg(to.buf, to.off + tail, head));
        sched_copy(s, reg(from.buf, from.off + head, tail), reg(to.buf, to.off, tail));
    }
}

int algo_binomial_scatter(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, root = a->root, v = mod(a->rank - root, P);
    uint64_t c = a->count;
    int span = binomial_span(v, P), sub = subtree(v, P);
    region_t src;
    if (v == 0) {
        if (root == 0) {
            src = reg(BUF_IN, 0, (uint64_t)P * c);
        } else {
            src = reg(BUF_TMP, sched_tmp(s, (uint64_t)P * c), (uint64_t)P * c);
            rotate_copy(s, reg(BUF_IN, 0, 0), src, c, root, P, true);
            sched_round(s);
        }
    } else if (sub == 1) {
        sched_recv(s, real_rank(v - span, root, P), 0, reg(BUF_OUT, 0, c));
        return 0;
    } else {
        src = reg(BUF_TMP, sched_tmp(s, (uint64_t)sub * c), (uint64_t)sub * c);
        sched_recv(s, real_rank(v - span, root, P), 0, src);
        sched_round(s);
    }
    for (int mask = span >> 1; mask >= 1; mask >>= 1) {
        if (v + mask >= P)
            continue;
        int cnt = subtree(v + mask, P);
        sched_send(s, real_rank(v + mask, root, P), 0,
                   reg(src.buf, src.off + (uint64_t)mask * c, (uint64_t)cnt * c));
    }
    sched_copy(s, reg(src.buf, src.off, c), reg(BUF_OUT, 0, c));
    return 0;
}

int algo_binomial_gather(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, root = a->root, v = mod(a->rank - root, P);
    uint64_t c = a->count;
    int span = binomial_span(v, P), sub = subtree(v, P);
    if (v != 0 && sub == 1) {
        sched_send(s, real_rank(v - span, root, P), 0, reg(BUF_IN, 0, c));
        return 0;
    }
    region_t dst;
    if (v == 0 && root == 0)
        dst = reg(BUF_OUT, 0, (uint64_t)P * c);
    else
        dst = reg(BUF_TMP, sched_tmp(s, (uint64_t)sub * c), (uint64_t)sub * c);
    sched_copy(s, reg(BUF_IN, 0, c), reg(dst.buf, dst.off, c));
    for (int mask = 1; mask < span && v + mask < P; mask <<= 1) {
        int cnt = subtree(v + mask, P);
        sched_recv(s, real_rank(v + mask, root, P), 0,
                   reg(dst.buf, dst.off + (uint64_t)mask * c, (uint64_t)cnt * c));
    }
    sched_round(s);
    if (v != 0)
        sched_send(s, real_rank(v - span, root, P), 0, dst);
    else if (root != 0)
        rotate_copy(s, dst, reg(BUF_OUT, 0, 0), c, root, P, false);
    return 0;
}

int algo_binomial_allreduce(sched_t *s, const coll_args_t *a)
{
    coll_args_t b = *a;
    strcpy(b.params.reduce, "binomial");
    strcpy(b.params.bcast, "binomial");
    return algo_reduce_bcast_allreduce(s, &b);
}
