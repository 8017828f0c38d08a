/* compose.c — allreduce as a reduce to rank 0 followed by a broadcast from
 * it, any reduce algorithm with any broadcast algorithm, chosen by name
 * (params "reduce=rsg,bcast=scatter_allgather").  The two parts get separate
 * interleaved tag spaces (sched_part: the same on every rank, whatever the
 * reduce builds there) and scratch; the broadcast starts once the reduce has finished
 * on this rank.  Properties are those of the reduce part; every rank gets
 * the root's bytes, so results are bitwise identical. */
#include <string.h>

#include "algo.h"

const char *reduce_bcast_part_name(const coll_args_t *a, weft_coll_t part)
{
    const char *n = part == WEFT_COLL_REDUCE ? a->params.reduce : a->params.bcast;
    return n[0] ? n : "binomial";
}

int algo_reduce_bcast_allreduce(sched_t *s, const coll_args_t *a)
{
    const algo_t *ra = algo_find(WEFT_COLL_REDUCE, reduce_bcast_part_name(a, WEFT_COLL_REDUCE));
    const algo_t *ba = algo_find(WEFT_COLL_BCAST, reduce_bcast_part_name(a, WEFT_COLL_BCAST));
    if (!ra || !ba)
        return WEFT_EINVAL;
    coll_args_t sub = *a;
    sub.root = 0;
    sub.coll = WEFT_COLL_REDUCE;
    tagspace_t outer = sched_space(s);
    sched_part(s, outer, 0, 2);
    int rc = ra->build(s, &sub);
    if (rc)
        return rc;
    sched_round(s);
    sched_part(s, outer, 1, 2);
    sub.coll = WEFT_COLL_BCAST;
    rc = ba->build(s, &sub);
    sched_space_restore(s, outer);
    return rc;
}
