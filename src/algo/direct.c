/* direct.c — the direct allreduce: every rank sends its whole input to
 * every other rank and combines the P contributions itself, in rank order.
 *
 * One round and one wait per rank, whatever P: the fewest hops a call can
 * take, for tiny payloads (on shared memory each message is one cell
 * whose first cache line holds flag, header and up to 32 bytes) and for
 * more ranks than cores, where every extra hop is a rank that has to be
 * scheduled again.  The price is (P - 1) n bytes sent and received per
 * rank, so it is for small n only.  As NCCL's and Gloo's small-message
 * paths do, each rank reduces x0 op x1 op ... op x(P-1) in that order, so
 * non-commutative ops are served and every rank gets bitwise the same
 * result.  Not from the seeds: the baseline they all beat for large n. */
#include "algo.h"

int algo_direct_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    region_t in = reg(BUF_IN, 0, n), acc = reg(BUF_TMP, sched_tmp(s, n), n);
    /* the output is written last, once every send has left and the own
     * input is reduced: under WEFT_IN_PLACE the input lives there */
    uint32_t first = s->nsteps; /* the sends are the next P - 1 steps */
    for (int i = 1; i < P; i++) /* nearest first, as a ring would */
        sched_send(s, mod(r + i, P), 0, in);
    uint32_t sent = sched_nop(s); /* joins them (a step depends on earlier ones) */
    for (int i = 1; i < P; i++)
        sched_depend(s, sent, first + (uint32_t)(i - 1));
    uint32_t prev = r == 0 ? sched_copy(s, in, acc) : sched_recv(s, 0, 0, acc);
    for (int q = 1; q < P; q++) {
        uint32_t st = q == r ? sched_reduce(s, in, acc, false)
                             : sched_recv_reduce(s, q, 0, acc, false);
        sched_depend(s, st, prev);
        prev = st;
    }
    uint32_t out = sched_copy(s, acc, reg(BUF_OUT, 0, n));
    sched_depend(s, out, prev);
    sched_depend(s, out, sent);
    return 0;
}
