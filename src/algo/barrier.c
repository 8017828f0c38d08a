/* barrier.c — the dissemination barrier (Hensgen, Finkel & Manber 1988):
 * in round k rank r signals r + 2^k and waits for r - 2^k; after ceil(lg P)
 * rounds every rank has heard, transitively, from every other.  Zero-byte
 * messages on the same engine as the collectives. */
#include "algo.h"

int algo_dissemination_barrier(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint32_t tag = 0;
    for (int d = 1; d < P; d <<= 1, tag++) {
        sched_send(s, mod(r + d, P), tag, reg(BUF_OUT, 0, 0));
        sched_recv(s, mod(r - d, P), tag, reg(BUF_OUT, 0, 0));
        sched_round(s);
    }
    return 0;
}
