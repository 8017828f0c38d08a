/* select.c — AUTO: which algorithm serves a call when the user named none.
 *
 * The rules read the registry's properties, so they never pick an algorithm
 * that cannot serve the call (a non-commutative op never gets ring or
 * rabenseifner).  The thresholds are first estimates from the cost formulas
 * and `weft bench` on shared memory (see docs/ALGORITHMS.md); tuning tables
 * will replace them. */
#include <stdatomic.h>

#include "../core/comm.h"

/* The registry entry by name, looked up once per call site (AUTO runs on
 * every call: no string compares there). */
#define pick(coll, name)                                                                  \
    ({                                                                                    \
        static const algo_t *_Atomic memo;                                               \
        const algo_t *al_ = atomic_load_explicit(&memo, memory_order_relaxed);          \
        if (!al_) {                                                                       \
            al_ = algo_find(coll, name);                                                  \
            atomic_store_explicit(&memo, al_, memory_order_relaxed);                      \
        }                                                                                 \
        al_;                                                                              \
    })

static const algo_t *rule(const coll_args_t *a);

/* The rule's choice, or where the rule picks an algorithm that cannot
 * serve the call, the first in the registry that can (never an error for
 * a call some algorithm serves). */
const algo_t *select_algo(const coll_args_t *a)
{
    const algo_t *al = rule(a);
    if (al && !algo_usable_quiet(al, a))
        return al;
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].coll == a->coll && !algo_usable_quiet(&t[i], a))
            return &t[i];
    return NULL;
}

static const algo_t *rule(const coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    int P = a->nrank;
    switch (a->coll) {
    case WEFT_COLL_ALLREDUCE:
        if (!a->commutative)
            return pick(a->coll, "recursive_doubling");
        /* measured on shared memory, P = 2 and 4: recursive doubling wins
         * up to ~2 KiB, rabenseifner from there to ~1 MiB */
        if (bytes <= 2048 || (uint64_t)a->count < (uint64_t)P)
            return pick(a->coll, "recursive_doubling");
        if (bytes <= (1u << 20) || (P & (P - 1)) == 0)
            return pick(a->coll, "rabenseifner");
        return pick(a->coll, "ring");
    case WEFT_COLL_BCAST:
        if (bytes <= 65536 || P <= 3)
            return pick(a->coll, "binomial");
        return pick(a->coll, "scatter_allgather");
    case WEFT_COLL_REDUCE:
        if (!a->commutative || bytes <= 65536 || (uint64_t)a->count < (uint64_t)P)
            return pick(a->coll, "binomial");
        return pick(a->coll, "rsg");
    case WEFT_COLL_REDUCE_SCATTER:
        if (!a->commutative)
            return pick(a->coll, "linear");
        if (bytes * (size_t)P <= 65536)
            return pick(a->coll, "recursive_halving");
        return pick(a->coll, "ring");
    case WEFT_COLL_ALLGATHER:
        if (bytes * (size_t)P <= 65536)
            return (P & (P - 1)) == 0 ? pick(a->coll, "recursive_doubling") : pick(a->coll, "bruck");
        return pick(a->coll, "ring");
    case WEFT_COLL_SCATTER:
        return pick(a->coll, "binomial");
    case WEFT_COLL_GATHER:
        return pick(a->coll, "binomial");
    case WEFT_COLL_BARRIER:
        return pick(a->coll, "dissemination");
    default:
        return NULL;
    }
}
