/* prog.c — the simulator's per-rank program, and how a weft schedule (of
 * a registry algorithm, built per rank, read in place in the builder:
 * sched_view) becomes one.  A program is one allocation: operations, then
 * the successor table (CSR), so a rank costs one malloc and one free. */
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
                        (p->nrounds ? ((size_t)p->nrounds + 1) * 4 : 0) + (size_t)p->nkeys * 8
                  : 0;
}

int sim_prog_alloc_rounds(sim_prog_t *p, uint32_t nops, uint32_t nedges, uint32_t nrounds)
{
    memset(p, 0, sizeof *p);
    size_t succ = (size_t)nops * sizeof(sim_op_t) + ((size_t)nops + 1 + nedges) * 4;
    size_t bytes = succ + (nrounds ? ((size_t)nrounds + 1) * 4 : 0);
    char *b = malloc(bytes ? bytes : 1);
    if (!b)
        return WEFT_ENOMEM;
    p->nops = nops, p->nedges = nedges;
    p->ops = (sim_op_t *)b;
    p->succ_first = (uint32_t *)(b + (size_t)nops * sizeof(sim_op_t));
    p->succ = p->succ_first + nops + 1;
    if (nrounds) {
        p->nrounds = nrounds;
        p->round_first = (uint32_t *)(b + succ);
    }
    return 0;
}

int sim_prog_alloc(sim_prog_t *p, uint32_t nops, uint32_t nedges)
{
    return sim_prog_alloc_rounds(p, nops, nedges, 0);
}

/* A receive-and-reduce is two operations (the receive, then the reduce it
 * requires); every other step is one.  Between two rounds comes a join (an
 * instant calc) that requires every step of the first and that every step
 * of the second requires, or (without joins) the rounds stay in the
 * program and the simulator does the join's work itself (sim.h).  first[i]
 * is step i's first operation. */
static uint32_t step_ops(step_t st) { return st.kind == STEP_RECV_REDUCE ? 2 : 1; }

static void step_op(step_t st, size_t esize, sim_op_t *op)
{
    memset(op, 0, sizeof *op);
    op->nic = SIM_NIC_ANY;
    op->peer = st.peer;
    op->tag = st.tag;
    op->pending = st.ndeps + (st.round > 0);
    op->size = st.len * esize;
    switch (st.kind) {
    case STEP_SEND:
        op->kind = SIM_SEND;
        break;
    case STEP_RECV:
    case STEP_RECV_REDUCE:
        op->kind = SIM_RECV;
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
}

/* Counts the operations and edges; fills first[]. */
static void count_ops(const sched_img_t *s, bool joins, uint32_t *first, uint32_t *nops,
                      uint32_t *nedges)
{
    uint32_t n = s->nsteps, ops = 0, edges = s->nedges;
    for (uint32_t i = 0; i < n; i++) {
        step_t st = sched_step(s, i);
        first[i] = ops;
        ops += step_ops(st);
        edges += step_ops(st) - 1;
        if (joins && i + 1 == s->round_first[st.round + 1] && st.round + 1 < s->nrounds) {
            ops++; /* the join after the round */
            edges += sched_round_size(s, st.round) + sched_round_size(s, st.round + 1);
        }
    }
    first[n] = ops;
    *nops = ops, *nedges = edges;
}

/* Round r's join, which sits just before round r + 1's first operation:
 * step i (the round's last) its last edge in, the next round's steps its
 * edges out. */
static void add_join(const sched_img_t *s, size_t esize, const uint32_t *first, uint32_t i,
                     uint32_t round, sim_prog_t *out, uint32_t *e)
{
    uint32_t join = first[s->round_first[round + 1]] - 1;
    sim_op_t *jo = &out->ops[join];
    step_op((step_t){.kind = STEP_NOP, .peer = -1}, esize, jo);
    jo->pending = sched_round_size(s, round);
    out->succ_first[join] = *e;
    for (uint32_t j = i + 1; j < s->round_first[round + 2]; j++)
        out->succ[(*e)++] = first[j];
}

int sim_prog_from_sched(const sched_img_t *s, size_t esize, bool joins, sim_prog_t *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = s->nsteps;
    uint32_t small[256]; /* most programs: no malloc for the table */
    uint32_t *first = n < 256 ? small : malloc(((size_t)n + 1) * sizeof *first);
    if (!first)
        return WEFT_ENOMEM;
    uint32_t nops, nedges, nrounds = !joins && s->nrounds > 1 ? s->nrounds : 0;
    count_ops(s, joins, first, &nops, &nedges);
    if (sim_prog_alloc_rounds(out, nops, nedges, nrounds)) {
        if (first != small)
            free(first);
        return WEFT_ENOMEM;
    }
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++) {
        step_t st = sched_step(s, i);
        sim_op_t *op = &out->ops[first[i]];
        step_op(st, esize, op);
        uint32_t last = first[i];
        if (st.kind == STEP_RECV_REDUCE) {
            op[1] = *op;
            op[1].kind = SIM_CALC;
            op[1].flags = SIM_REDUCE;
            op[1].pending = 1;
            op[1].peer = -1;
            op->flags |= SIM_PAIRED;
            out->succ_first[first[i]] = e;
            out->succ[e++] = ++last;
        }
        out->succ_first[last] = e;
        uint32_t k, end;
        for (sched_succ(s, i, &k, &end); k < end; k++)
            out->succ[e++] = first[s->succ[k]];
        if (joins && st.round + 1 < s->nrounds) {
            out->succ[e++] = first[s->round_first[st.round + 1]] - 1;
            if (i + 1 == s->round_first[st.round + 1])
                add_join(s, esize, first, i, st.round, out, &e);
        }
    }
    out->succ_first[nops] = e;
    for (uint32_t r = 0; r < nrounds; r++)
        out->round_first[r] = first[s->round_first[r]];
    if (nrounds)
        out->round_first[nrounds] = nops;
    if (first != small)
        free(first);
    return 0;
}

int sim_build_algo(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len)
{
    const sim_algo_t *b = ctx;
    coll_args_t a = b->a;
    a.rank = rank;
    sched_img_t *s = NULL, view;
    /* with a builder of the caller's, the schedule is read in place: no
     * image allocated and packed per rank, only to be converted */
    int rc = b->builder ? algo_build_view(b->al, &a, b->builder, &view) : algo_build(b->al, &a, &s);
    if (rc) {
        snprintf(msg, len, "%s", weft_last_error());
        return rc;
    }
    rc = sim_prog_from_sched(s ? s : &view, a.esize, b->joins, out);
    sched_img_free(s);
    return rc;
}
