/* layout.h — the buffers each collective gives a rank, in elements, and how
 * WEFT_IN_PLACE aliases them.  Shared by the engine and the checker so the
 * two can never disagree on what a region means. */
#ifndef WEFT_LAYOUT_H
#define WEFT_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "weft.h"

enum { ALIAS_NONE = 0, ALIAS_IN_IN_OUT = 1, ALIAS_OUT_IN_IN = 2 };

typedef struct coll_layout {
    uint64_t in_len, out_len;
    int alias;          /* ALIAS_IN_IN_OUT: BUF_IN is OUT[alias_off..];
                           ALIAS_OUT_IN_IN: BUF_OUT is IN[alias_off..] */
    uint64_t alias_off;
} coll_layout_t;

/* count is the API's count: the vector length for allreduce/bcast/reduce,
 * the per-rank block for the others.  inplace: the rank passed
 * WEFT_IN_PLACE where the collective allows it for this rank. */
static inline void coll_layout(weft_coll_t coll, int nrank, int rank, int root,
                               uint64_t count, bool inplace, coll_layout_t *l)
{
    uint64_t all = (uint64_t)nrank * count;
    bool isroot = rank == root;
    l->alias = ALIAS_NONE;
    l->alias_off = 0;
    switch (coll) {
    case WEFT_COLL_ALLREDUCE:
        l->in_len = count, l->out_len = count;
        if (inplace)
            l->alias = ALIAS_IN_IN_OUT;
        break;
    case WEFT_COLL_BCAST:
        l->in_len = 0, l->out_len = count;
        break;
    case WEFT_COLL_REDUCE:
        l->in_len = count, l->out_len = isroot ? count : 0;
        if (inplace && isroot)
            l->alias = ALIAS_IN_IN_OUT;
        break;
    case WEFT_COLL_REDUCE_SCATTER:
        l->in_len = all, l->out_len = count;
        if (inplace)
            l->alias = ALIAS_OUT_IN_IN;
        break;
    case WEFT_COLL_ALLGATHER:
        l->in_len = count, l->out_len = all;
        if (inplace)
            l->alias = ALIAS_IN_IN_OUT, l->alias_off = (uint64_t)rank * count;
        break;
    case WEFT_COLL_SCATTER:
        l->in_len = isroot ? all : 0, l->out_len = count;
        if (inplace && isroot)
            l->alias = ALIAS_OUT_IN_IN, l->alias_off = (uint64_t)rank * count;
        break;
    case WEFT_COLL_GATHER:
        l->in_len = count, l->out_len = isroot ? all : 0;
        if (inplace && isroot)
            l->alias = ALIAS_IN_IN_OUT, l->alias_off = (uint64_t)rank * count;
        break;
    default:
        l->in_len = l->out_len = 0;
        break;
    }
}

#endif
