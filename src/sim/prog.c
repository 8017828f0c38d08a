/* prog.c — the simulator's per-rank program, and how a weft schedule (of
 * a registry algorithm, built per rank) becomes one.  A program is one allocation: operations, then the
 * successor table (CSR), so a rank costs one malloc and one free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_prog_free(sim_prog_t *p)
{
    free(p->ops); /* succ_first and succ live in the same block */
    memset(p, 0, sizeof *p);
}

size_t sim_prog_bytes(const sim_prog_t *p)
{
    return p->ops ? (size_t)p->nops * sizeof *p->ops + ((size_t)p->nops + 1 + p->nedges) * 4 +
                        (size_t)p->nkeys * 16
                  : 0;
}

int sim_prog_alloc(sim_prog_t *p, uint32_t nops, uint32_t nedges)
{
    memset(p, 0, sizeof *p);
    size_t bytes = (size_t)nops * sizeof(sim_op_t) + ((size_t)nops + 1 + nedges) * 4;
    char *b = malloc(bytes ? bytes : 1);
    if (!b)
        return WEFT_ENOMEM;
    p->nops = nops, p->nedges = nedges;
    p->ops = (sim_op_t *)b;
    p->succ_first = (uint32_t *)(b + (size_t)nops * sizeof(sim_op_t));
    p->succ = p->succ_first + nops + 1;
    return 0;
}

/* A receive-and-reduce is two operations (the receive, then the reduce it
 * requires); every other step is one.  first[i] is step i's first
 * operation; its last is first[i + 1] - 1. */
int sim_prog_from_sched(const sched_t *s, size_t esize, sim_prog_t *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = s->nsteps;
    uint32_t *first = malloc(((size_t)n + 1) * sizeof *first);
    if (!first)
        return WEFT_ENOMEM;
    uint32_t nops = 0, extra = 0;
    for (uint32_t i = 0; i < n; i++) {
        first[i] = nops;
        nops += s->steps[i].kind == STEP_RECV_REDUCE ? 2 : 1;
        extra += s->steps[i].kind == STEP_RECV_REDUCE;
    }
    first[n] = nops;
    uint32_t nedges = (n ? s->succ_first[n] : 0) + extra;
    if (sim_prog_alloc(out, nops, nedges)) {
        free(first);
        return WEFT_ENOMEM;
    }
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++) {
        const step_t *st = &s->steps[i];
        sim_op_t *op = &out->ops[first[i]];
        memset(op, 0, sizeof *op);
        op->nic = SIM_NIC_ANY;
        op->peer = st->peer;
        op->tag = st->tag;
        op->pending = st->ndeps;
        op->size = st->len * esize;
        switch (st->kind) {
        case STEP_SEND:
            op->kind = SIM_SEND;
            break;
        case STEP_RECV:
            op->kind = SIM_RECV;
            break;
        case STEP_RECV_REDUCE:
            op->kind = SIM_RECV;
            op[1] = *op;
            op[1].kind = SIM_CALC;
            op[1].flags = SIM_REDUCE;
            op[1].pending = 1;
            op[1].peer = -1;
            out->succ_first[first[i]] = e;
            out->succ[e++] = first[i] + 1;
            break;
        case STEP_REDUCE:
            op->kind = SIM_CALC;
            op->flags = SIM_REDUCE;
            break;
        case STEP_COPY:
            op->kind = SIM_CALC;
            op->flags = SIM_COPY;
            break;
        default: /* STEP_NOP */
            op->kind = SIM_CALC;
            op->flags = SIM_INSTANT;
            op->size = 0;
            break;
        }
        uint32_t last = first[i + 1] - 1;
        out->succ_first[last] = e;
        for (uint32_t k = s->succ_first[i]; k < s->succ_first[i + 1]; k++)
            out->succ[e++] = first[s->succ[k]];
    }
    out->succ_first[nops] = e;
    free(first);
    return 0;
}

int sim_build_algo(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len)
{
    const sim_algo_t *b = ctx;
    coll_args_t a = b->a;
    a.rank = rank;
    sched_t s;
    int rc = algo_build(b->al, &a, &s);
    if (rc) {
        snprintf(msg, len, "%s", weft_last_error());
        return rc;
    }
    rc = sim_prog_from_sched(&s, a.esize, out);
    sched_free(&s);
    return rc;
}
