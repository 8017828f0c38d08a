/* pap_trace.h — the arrival-pattern trace: one text file per rank,
 * DIR/rank-R.pap, written by weft's own collectives (WEFT_PROFILE=DIR) and
 * by the PMPI profiler libweft-prof.so, read by `weft pap`.
 *
 *   # weft pap trace 2
 *   rank R size P node N
 *   call COLL DTYPE COUNT BYTES COMM SEQ ARRIVE_NS EXIT_NS OP ROOT
 *   ...
 *
 * OP is the reduction (sum, prod, min, max, band, bor, bxor, land, lor;
 * user_c or user_nc for a user op, commutative or not; other for an MPI op
 * weft has no name for; - where the collective reduces nothing) and ROOT
 * the root's rank in the communicator (-1 where there is none).  Version 1
 * traces, without the two, are read as sum and root 0.
 * COLL and DTYPE are names; BYTES is the rank's contribution (count times
 * the element size); COMM names the communicator alike on every member
 * (an id agreed when it was first used, '.', the world rank of its rank 0)
 * and SEQ numbers its collectives from 0, so (COMM, SEQ) is one call on
 * every rank.  Times are ns from a common origin taken at initialisation:
 * rank 0's clock after a barrier where ranks share a clock (weft run),
 * else each rank's own clock at the end of that barrier (the seed's
 * alignment, exact up to the barrier's skew). */
#ifndef WEFT_PAP_TRACE_H
#define WEFT_PAP_TRACE_H

#include <stdint.h>
#include <stdio.h>

#define PAP_TRACE_MAGIC "# weft pap trace 2"
#define PAP_TRACE_MAGIC_V1 "# weft pap trace 1"

typedef struct pap_call {
    char coll[32], dtype[32];
    uint64_t count, bytes;
    char comm[32];
    uint64_t seq;
    int64_t arrive_ns, exit_ns;
    char op[16];
    int root;
} pap_call_t;

static inline void pap_trace_header(FILE *f, int rank, int size, int node)
{
    fprintf(f, "%s\nrank %d size %d node %d\n", PAP_TRACE_MAGIC, rank, size, node);
}

static inline void pap_trace_call(FILE *f, const pap_call_t *c)
{
    fprintf(f, "call %s %s %llu %llu %s %llu %lld %lld %s %d\n", c->coll, c->dtype,
            (unsigned long long)c->count, (unsigned long long)c->bytes, c->comm,
            (unsigned long long)c->seq, (long long)c->arrive_ns, (long long)c->exit_ns,
            c->op[0] ? c->op : "-", c->root);
}

#endif
