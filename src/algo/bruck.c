/* bruck.c — Bruck's allgather: ceil(lg P) rounds for any P.
 *
 * Source: Bruck, Ho, Kipnis, Upfal & Weathersby 1997, as in MPICH.  Rank r
 * keeps a scratch copy in which block i is rank (r + i)'s block; in round k
 * (distance d = 2^k) it sends its first min(d, P - d) blocks to r - d and
 * receives as many from r + d after them.  A final rotation puts the
 * blocks in rank order.  Cost: ceil(lg P) alpha + (P-1)/P n beta plus one
 * local pass over the output. */
#include "algo.h"

int algo_bruck_allgather(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t c = a->count, all = (uint64_t)P * c;
    if (P == 1) {
        sched_copy(s, reg(BUF_IN, 0, c), reg(BUF_OUT, 0, c));
        return 0;
    }
    uint64_t t = sched_tmp(s, all);
    /* The first round's block is the rank's own: it goes straight from the
     * input, and the copy into scratch follows the posts, so the send does
     * not wait for it (as in recursive doubling's allgather). */
    sched_send(s, mod(r - 1, P), 0, reg(BUF_IN, 0, c));
    sched_recv(s, mod(r + 1, P), 0, reg(BUF_TMP, t + c, c));
    sched_copy(s, reg(BUF_IN, 0, c), reg(BUF_TMP, t, c));
    sched_round(s);
    uint32_t tag = 1;
    for (int d = 2; d < P; d <<= 1, tag++) {
        uint64_t cnt = (uint64_t)(d < P - d ? d : P - d) * c;
        sched_send(s, mod(r - d, P), tag, reg(BUF_TMP, t, cnt));
        sched_recv(s, mod(r + d, P), tag, reg(BUF_TMP, t + (uint64_t)d * c, cnt));
        sched_round(s);
    }
    uint64_t head = (uint64_t)(P - r) * c;
    sched_copy(s, reg(BUF_TMP, t, head), reg(BUF_OUT, (uint64_t)r * c, head));
    sched_copy(s, reg(BUF_TMP, t + head, all - head), reg(BUF_OUT, 0, all - head));
    return 0;
}
