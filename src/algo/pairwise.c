/* pairwise.c — pairwise-exchange reduce-scatter: in round k = 1..P-1 rank r
 * sends its contribution to block r+k straight to rank r+k and reduces the
 * contribution to its own block arriving from rank r-k.
 *
 * Source: MPICH's pairwise reduce-scatter (Thakur, Rabenseifner & Gropp
 * 2005), the choice for long messages and non-power-of-two P.  Contributions
 * arrive in round order, not rank order: commutative ops only.
 * Cost: (P-1) alpha + (P-1)/P n beta + (P-1)/P n gamma. */
#include "algo.h"

int algo_pairwise_reduce_scatter(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t c = a->count;
    region_t out = reg(BUF_OUT, 0, c);
    if (P == 1) {
        sched_copy(s, reg(BUF_IN, 0, c), out);
        return 0;
    }
    for (int k = 1; k < P; k++) {
        int to = mod(r + k, P), from = mod(r - k, P);
        sched_send(s, to, (uint32_t)k, reg(BUF_IN, (uint64_t)to * c, c));
        /* the first send is posted before the rank's own block is copied
         * out, which only its first reduction waits for */
        uint32_t own = k == 1 ? sched_copy(s, reg(BUF_IN, (uint64_t)r * c, c), out) : 0;
        uint32_t rr = sched_recv_reduce(s, from, (uint32_t)k, out, true);
        if (k == 1)
            sched_depend(s, rr, own);
        sched_round(s);
    }
    return 0;
}
