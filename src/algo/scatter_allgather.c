/* scatter_allgather.c — van de Geijn's broadcast for long messages: a
 * binomial scatter of P blocks from the root, then a ring allgather.
 *
 * Source: Barnett, Gupta, Payne, Shuler, van de Geijn & Watts 1994, as in
 * MPICH (Thakur, Rabenseifner & Gropp 2005); the scatter-allgather baseline
 * of two-tree-collectives.txt.  Block v of the buffer belongs to vrank v =
 * rank - root, so a subtree's blocks are one contiguous range and nothing is
 * rotated.  Cost: (lg P + P - 1) alpha + 2 (P-1)/P n beta. */
#include "algo.h"

static region_t blocks(uint64_t n, int P, int first, int cnt)
{
    uint64_t o = blk_off(n, (uint64_t)P, (uint64_t)first);
    return reg(BUF_OUT, o, blk_off(n, (uint64_t)P, (uint64_t)(first + cnt)) - o);
}

int algo_scatter_allgather_bcast(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, root = a->root, v = mod(a->rank - root, P);
    uint64_t n = a->count;
    if (P == 1)
        return 0;
    int span = binomial_span(v, P);
    if (v) {
        int sub = span < P - v ? span : P - v;
        sched_recv(s, (v - span + root) % P, 0, blocks(n, P, v, sub));
        sched_round(s);
    }
    for (int mask = span >> 1; mask >= 1; mask >>= 1) {
        int c = v + mask;
        if (c >= P)
            continue;
        int sub = mask < P - c ? mask : P - c;
        sched_send(s, (c + root) % P, 0, blocks(n, P, c, sub));
    }
    sched_round(s);
    int right = (v + 1 + root) % P, left = (v - 1 + P + root) % P;
    for (int k = 0; k < P - 1; k++) {
        sched_send(s, right, 1 + (uint32_t)k, blocks(n, P, mod(v - k, P), 1));
        sched_recv(s, left, 1 + (uint32_t)k, blocks(n, P, mod(v - k - 1, P), 1));
        sched_round(s);
    }
    return 0;
}
