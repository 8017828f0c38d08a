/* ring.c — ring allreduce, reduce-scatter and allgather.
 *
 * Source: ring-and-halving-doubling-allreduce.txt §2.1 (the ring used by
 * Gloo and Horovod; Patarasuk & Yuan 2009).  The vector is cut into P
 * blocks; in P-1 reduce-scatter steps each rank sends one block to its right
 * neighbour and reduces the block arriving from its left neighbour into
 * place, then P-1 allgather steps circulate the finished blocks.  Every block
 * is reduced by one chain of ranks and then copied, so all ranks end with
 * bitwise-identical results; the reduction order wraps around the ring, so
 * the op must be commutative. */
#include "algo.h"

static region_t block(int buf, uint64_t n, int p, int b)
{
    return reg(buf, blk_off(n, (uint64_t)p, (uint64_t)b), blk_len(n, (uint64_t)p, (uint64_t)b));
}

/* The reduce-scatter steps copy nothing ahead: step k sends block r-k
 * (step 0 straight from the input: block r is never reduced here, and the
 * allgather brings its result) and reduces the arriving block r-k-1 into a
 * copy of this rank's own block r-k-1 made just before it, which the engine
 * fuses with the receive (engine.c, fuse_copy): one pass over each block
 * where a copy of the whole vector up front and the reductions into it made
 * two (and never wrote block r at all). */
int algo_ring_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    if (P == 1) {
        sched_copy(s, reg(BUF_IN, 0, n), reg(BUF_OUT, 0, n));
        return 0;
    }
    int right = mod(r + 1, P), left = mod(r - 1, P);
    for (int k = 0; k < P - 1; k++) {
        int sb = mod(r - k, P), rb = mod(r - k - 1, P);
        sched_send(s, right, (uint32_t)k, block(k == 0 ? BUF_IN : BUF_OUT, n, P, sb));
        uint32_t cp = sched_copy(s, block(BUF_IN, n, P, rb), block(BUF_OUT, n, P, rb));
        uint32_t rr = sched_recv_reduce(s, left, (uint32_t)k, block(BUF_OUT, n, P, rb), true);
        sched_depend(s, rr, cp);
        sched_round(s);
    }
    for (int k = 0; k < P - 1; k++) {
        uint32_t tag = (uint32_t)(P + k);
        sched_send(s, right, tag, block(BUF_OUT, n, P, mod(r + 1 - k, P)));
        sched_recv(s, left, tag, block(BUF_OUT, n, P, mod(r - k, P)));
        sched_round(s);
    }
    return 0;
}

/* Block b of the P*count input/scratch. */
static region_t rblock(int buf, uint64_t c, int b) { return reg(buf, (uint64_t)b * c, c); }

int algo_ring_reduce_scatter(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t c = a->count;
    if (P == 1) {
        sched_copy(s, reg(BUF_IN, 0, c), reg(BUF_OUT, 0, c));
        return 0;
    }
    uint64_t tmp = sched_tmp(s, (uint64_t)P * c);
    int right = mod(r + 1, P), left = mod(r - 1, P);
    /* Step k sends block r-k-1 (partially reduced) and reduces block r-k-2
     * into a copy of our own contribution, made just before it is needed so
     * the copy overlaps the wait for the message.  The last block, r, lands
     * in the output. */
    for (int k = 0; k < P - 1; k++) {
        int sb = mod(r - k - 1, P), rb = mod(r - k - 2, P);
        region_t src = k == 0 ? rblock(BUF_IN, c, sb) : reg(BUF_TMP, tmp + (uint64_t)sb * c, c);
        region_t dst = rb == r ? reg(BUF_OUT, 0, c) : reg(BUF_TMP, tmp + (uint64_t)rb * c, c);
        sched_send(s, right, (uint32_t)k, src);
        uint32_t cp = sched_copy(s, rblock(BUF_IN, c, rb), dst);
        uint32_t rr = sched_recv_reduce(s, left, (uint32_t)k, dst, true);
        sched_depend(s, rr, cp);
        sched_round(s);
    }
    return 0;
}

int algo_ring_allgather(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t c = a->count;
    if (P == 1) {
        sched_copy(s, reg(BUF_IN, 0, c), rblock(BUF_OUT, c, r));
        return 0;
    }
    int right = mod(r + 1, P), left = mod(r - 1, P);
    for (int k = 0; k < P - 1; k++) {
        int sb = mod(r - k, P);
        /* The first block goes straight from the input and the local copy
         * follows the posts: the send waits for no copy, and a reader in
         * place reads the input's lines, not ones this core has just
         * written (ALGORITHMS.md, allgather). */
        sched_send(s, right, (uint32_t)k, k == 0 ? reg(BUF_IN, 0, c) : rblock(BUF_OUT, c, sb));
        sched_recv(s, left, (uint32_t)k, rblock(BUF_OUT, c, mod(r - k - 1, P)));
        if (k == 0)
            sched_copy(s, reg(BUF_IN, 0, c), rblock(BUF_OUT, c, r));
        sched_round(s);
    }
    return 0;
}
