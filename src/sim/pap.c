/* pap.c — the arrival-driven algorithms (src/shmcoll, the process-arrival-
 * pattern seed, chapters 4-5) as simulator programs.  They are not
 * schedules: who leads and who hands on to whom is decided by the order in
 * which ranks arrive.  Given the arrival times (the simulation's start
 * times), that order is known, and each algorithm becomes an ordinary
 * program per rank, so the simulator runs it with its contention (a leader
 * taking in P - 1 messages one after the other, a rank that has not arrived
 * yet).  `weft sim` and `weft pap whatif` run them this way.
 *
 * Shared memory is modelled as messages: a copy into the segment and the
 * peer's read of it is one message of n bytes.
 *
 *   pap_chain (reduce, allreduce): the k-th arrival receives the partial
 *       result from the (k-1)-th, adds its own (a reduce of n bytes) and
 *       sends it to the (k+1)-th once that one has arrived: src/shmcoll
 *       learns its successor from the arrival board, so a rank waits for
 *       the next to come before it can hand on and leave.  Seeing the
 *       arrival is a message of 1 byte from the successor (the board's
 *       cache line crossing over).  The last arrival holds the result.  A
 *       reduce sends it to the root (unless the root came last); an
 *       allreduce broadcasts it from the last arrival down a binomial tree,
 *       children with the largest subtree first.
 *   pap_leader (allreduce): the first arrival leads; every other rank sends
 *       it its input and waits for the result; the leader reduces the
 *       inputs in arrival order, then sends the result to each in rank
 *       order.
 *   shm_twostep (allreduce): the same with rank 0 leading and reducing in
 *       rank order (the seed's static-leader baseline).
 *   hier_pap (allreduce): inside each node the node level -- the chain in
 *       the node's arrival order to the node's leader (its lowest rank),
 *       or with node=leader|twostep every rank's input to one reducer (the
 *       node's first arrival, or its leader) which hands the sum to the
 *       leader -- then, once a rank's node part is done, hier's own schedule
 *       after its node phase (algo_hier_tail_allreduce), converted as any
 *       schedule is and appended to the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum { PAP_CHAIN = 1, PAP_LEADER = 2, PAP_TWOSTEP = 3, PAP_HIER = 4 };
/* (hier_pap's node level adds TAG_NODE, above any schedule's tags) */
enum { TAG_PART = 0, TAG_RESULT = 1, TAG_ARRIVED = 2, TAG_DATA = 3, TAG_NODE = 0x7fff0000 };

int sim_pap_kind(const char *algo, weft_coll_t coll)
{
    if (!strcmp(algo, "hier_pap") && coll == WEFT_COLL_ALLREDUCE)
        return PAP_HIER;
    if (!strcmp(algo, "pap_chain") && (coll == WEFT_COLL_REDUCE || coll == WEFT_COLL_ALLREDUCE))
        return PAP_CHAIN;
    if (coll != WEFT_COLL_ALLREDUCE)
        return 0;
    if (!strcmp(algo, "pap_leader"))
        return PAP_LEADER;
    if (!strcmp(algo, "shm_twostep"))
        return PAP_TWOSTEP;
    return 0;
}

static const double *arrival_key;
static int by_arrival(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    double ta = arrival_key ? arrival_key[a] : 0, tb = arrival_key ? arrival_key[b] : 0;
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return a - b;
}

int sim_pap_init(sim_pap_t *c, const char *algo, weft_coll_t coll, int P, uint64_t bytes,
                 int root, const double *start)
{
    memset(c, 0, sizeof *c);
    if (!(c->kind = sim_pap_kind(algo, coll)) || c->kind == PAP_HIER)
        return WEFT_ENOTSUP; /* (hier_pap: sim_pap_init_hier) */
    c->coll = coll, c->P = P, c->bytes = bytes, c->root = root;
    c->order = malloc((size_t)P * sizeof *c->order);
    c->pos = malloc((size_t)P * sizeof *c->pos);
    if (!c->order || !c->pos) {
        sim_pap_free(c);
        return WEFT_ENOMEM;
    }
    for (int i = 0; i < P; i++)
        c->order[i] = i;
    if (c->kind != PAP_TWOSTEP) { /* the static leader ignores arrival */
        arrival_key = start;
        qsort(c->order, (size_t)P, sizeof *c->order, by_arrival);
        arrival_key = NULL;
    }
    for (int k = 0; k < P; k++)
        c->pos[c->order[k]] = k;
    return 0;
}

/* Ranks by node, then start time, then rank. */
static const int *node_key;
static int by_node_arrival(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    int na = node_key ? node_key[a] : 0, nb = node_key ? node_key[b] : 0;
    return na != nb ? (na < nb ? -1 : 1) : by_arrival(pa, pb);
}

int sim_pap_init_hier(sim_pap_t *c, const coll_args_t *a, const double *start)
{
    memset(c, 0, sizeof *c);
    int P = a->nrank, nn = a->node_of ? a->nnodes : 1;
    c->kind = PAP_HIER, c->coll = WEFT_COLL_ALLREDUCE, c->P = P;
    c->bytes = a->count * a->esize;
    c->tail = *a;
    c->order = malloc((size_t)P * sizeof *c->order);
    c->pos = malloc((size_t)P * sizeof *c->pos);
    c->node_first = calloc((size_t)nn + 1, sizeof *c->node_first);
    c->leader = malloc((size_t)nn * sizeof *c->leader);
    if (!c->order || !c->pos || !c->node_first || !c->leader) {
        sim_pap_free(c);
        return WEFT_ENOMEM;
    }
    for (int i = 0; i < P; i++)
        c->order[i] = i;
    arrival_key = start, node_key = a->node_of;
    qsort(c->order, (size_t)P, sizeof *c->order, by_node_arrival);
    arrival_key = NULL, node_key = NULL;
    for (int n = 0; n < nn; n++)
        c->leader[n] = P;
    for (int k = 0; k < P; k++) {
        int r = c->order[k], n = a->node_of ? a->node_of[r] : 0;
        c->pos[r] = k;
        c->node_first[n + 1]++;
        if (r < c->leader[n])
            c->leader[n] = r;
    }
    for (int n = 0; n < nn; n++)
        c->node_first[n + 1] += c->node_first[n];
    /* the tail's node groups, once (hier would build them per rank) */
    if (!(c->groups = malloc(sizeof *c->groups)) ||
        node_groups_build(a->node_of, nn, P, c->groups)) {
        free(c->groups);
        c->groups = NULL;
        sim_pap_free(c);
        return WEFT_ENOMEM;
    }
    c->tail.groups = c->groups;
    return 0;
}

void sim_pap_free(sim_pap_t *c)
{
    free(c->order), free(c->pos), free(c->node_first), free(c->leader);
    if (c->groups)
        node_groups_free(c->groups);
    free(c->groups);
    memset(c, 0, sizeof *c);
}

/* ---- a program written op by op, each requiring up to two earlier ---- */

typedef struct draft {
    sim_op_t *ops;
    int (*deps)[2];
    uint32_t n, cap;
    bool oom;
} draft_t;

/* The new op's index; -1 (and oom) when out of memory.  A SIM_CALC is a
 * reduction of `size` bytes. */
static int add(draft_t *d, int kind, int peer, uint32_t tag, uint64_t size, int dep0, int dep1)
{
    if (d->oom)
        return -1;
    if (d->n == d->cap) {
        uint32_t nc = d->cap ? d->cap * 2 : 16;
        sim_op_t *o = realloc(d->ops, nc * sizeof *o);
        if (o)
            d->ops = o;
        int(*dp)[2] = o ? realloc(d->deps, nc * sizeof *dp) : NULL;
        if (!dp) {
            d->oom = true;
            return -1;
        }
        d->deps = dp, d->cap = nc;
    }
    sim_op_t *op = &d->ops[d->n];
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->flags = kind == SIM_CALC ? SIM_REDUCE : 0; /* the only calc here */
    op->nic = SIM_NIC_ANY;
    op->peer = peer;
    op->tag = tag;
    op->size = size;
    d->deps[d->n][0] = dep0, d->deps[d->n][1] = dep1;
    return (int)d->n++;
}

static int finish(draft_t *d, sim_prog_t *out)
{
    uint32_t nedges = 0;
    for (uint32_t i = 0; i < d->n; i++)
        nedges += (d->deps[i][0] >= 0) + (d->deps[i][1] >= 0);
    if (sim_prog_alloc(out, d->n, nedges))
        return WEFT_ENOMEM;
    if (d->n) /* a rank with nothing to do has no ops array at all */
        memcpy(out->ops, d->ops, d->n * sizeof *d->ops);
    uint32_t *fill = calloc((size_t)d->n + 1, sizeof *fill);
    if (!fill) {
        sim_prog_free(out);
        return WEFT_ENOMEM;
    }
    for (uint32_t i = 0; i < d->n; i++)
        for (int k = 0; k < 2; k++)
            if (d->deps[i][k] >= 0)
                fill[d->deps[i][k] + 1]++;
    for (uint32_t i = 0; i < d->n; i++)
        fill[i + 1] += fill[i];
    memcpy(out->succ_first, fill, ((size_t)d->n + 1) * sizeof *fill);
    for (uint32_t i = 0; i < d->n; i++) {
        out->ops[i].pending = 0;
        for (int k = 0; k < 2; k++)
            if (d->deps[i][k] >= 0) {
                out->succ[fill[d->deps[i][k]]++] = i;
                out->ops[i].pending++;
            }
    }
    free(fill);
    return 0;
}

/* ---- the algorithms ---- */

/* The chain up to this rank's hand-over; the op that holds its partial (or
 * result), or -1 for the first arrival, whose input is its partial. */
static int chain_part(const sim_pap_t *c, int rank, draft_t *d, int *sent)
{
    int k = c->pos[rank], have = -1;
    *sent = -1;
    if (k > 0) {
        add(d, SIM_SEND, c->order[k - 1], TAG_ARRIVED, 1, -1, -1);
        int r = add(d, SIM_RECV, c->order[k - 1], TAG_PART, c->bytes, -1, -1);
        have = add(d, SIM_CALC, -1, 0, c->bytes, r, -1);
    }
    if (k + 1 < c->P) {
        int next = add(d, SIM_RECV, c->order[k + 1], TAG_ARRIVED, 1, -1, -1);
        *sent = add(d, SIM_SEND, c->order[k + 1], TAG_PART, c->bytes, have, next);
    }
    return have;
}

static int subtree_span(int v, int P)
{
    int span = v ? v & -v : 1;
    if (!v)
        while (span < P)
            span <<= 1;
    return span;
}

/* The binomial broadcast of the result from `from`: virtual rank v = rank
 * - from (mod P) receives from v minus its lowest bit and sends to v + m
 * for each power of two m below that bit, largest first. */
static void bcast_from(const sim_pap_t *c, int rank, int from, int have, draft_t *d)
{
    int P = c->P, v = (rank - from + P) % P;
    if (v)
        have = add(d, SIM_RECV, (v - (v & -v) + from) % P, TAG_RESULT, c->bytes, -1, -1);
    for (int m = subtree_span(v, P) / 2; m >= 1; m /= 2)
        if (v + m < P)
            add(d, SIM_SEND, (v + m + from) % P, TAG_RESULT, c->bytes, have, -1);
}

/* A leader taking in the inputs of from[0..n) (itself skipped), tagged
 * tag, and reducing each in turn; the op holding the sum (-1: none). */
static int reduce_in(draft_t *d, const int *from, int n, int self, uint32_t tag, uint64_t bytes)
{
    int acc = -1;
    for (int k = 0; k < n; k++)
        if (from[k] != self) {
            int r = add(d, SIM_RECV, from[k], tag, bytes, -1, -1);
            acc = add(d, SIM_CALC, -1, 0, bytes, r, acc);
        }
    return acc;
}

static void leader_prog(const sim_pap_t *c, int rank, draft_t *d)
{
    int leader = c->order[0];
    if (rank != leader) {
        add(d, SIM_SEND, leader, TAG_PART, c->bytes, -1, -1);
        add(d, SIM_RECV, leader, TAG_RESULT, c->bytes, -1, -1);
        return;
    }
    int acc = reduce_in(d, c->order, c->P, leader, TAG_PART, c->bytes);
    for (int q = 0; q < c->P; q++)
        if (q != leader)
            add(d, SIM_SEND, q, TAG_RESULT, c->bytes, acc, -1);
}

/* hier_pap's node level for rank; the op after which the rank goes on to
 * the tail, or -1 (a node of one rank: none). */
static int hier_node_part(const sim_pap_t *c, int rank, draft_t *d)
{
    int n = c->tail.node_of ? c->tail.node_of[rank] : 0, base = c->node_first[n];
    int m = c->node_first[n + 1] - base, k = c->pos[rank] - base, leader = c->leader[n];
    uint64_t b = c->bytes;
    if (m == 1)
        return -1;
    if (c->tail.params.node != NODE_LEVEL_CHAIN) { /* every input to one reducer */
        int reducer = c->tail.params.node == NODE_LEVEL_TWOSTEP ? leader : c->order[base];
        if (rank != reducer) {
            int sent = add(d, SIM_SEND, reducer, TAG_NODE + TAG_DATA, b, -1, -1);
            return rank == leader ? add(d, SIM_RECV, reducer, TAG_NODE + TAG_RESULT, b, sent, -1)
                                  : sent;
        }
        int acc = reduce_in(d, c->order + base, m, rank, TAG_NODE + TAG_DATA, b);
        return rank == leader ? acc : add(d, SIM_SEND, leader, TAG_NODE + TAG_RESULT, b, acc, -1);
    }
    /* the chain, handing on once the next has arrived (as pap_chain) */
    int have = -1;
    if (k > 0) {
        add(d, SIM_SEND, c->order[base + k - 1], TAG_NODE + TAG_ARRIVED, 1, -1, -1);
        int r = add(d, SIM_RECV, c->order[base + k - 1], TAG_NODE + TAG_PART, b, -1, -1);
        have = add(d, SIM_CALC, -1, 0, b, r, -1);
    }
    if (k == m - 1) /* the node's last arrival: the sum to the leader */
        return rank == leader ? have
                              : add(d, SIM_SEND, leader, TAG_NODE + TAG_RESULT, b, have, -1);
    int next = add(d, SIM_RECV, c->order[base + k + 1], TAG_NODE + TAG_ARRIVED, 1, -1, -1);
    int sent = add(d, SIM_SEND, c->order[base + k + 1], TAG_NODE + TAG_PART, b, have, next);
    return rank == leader
               ? add(d, SIM_RECV, c->order[base + m - 1], TAG_NODE + TAG_RESULT, b, sent, -1)
               : sent;
}

/* a's operations, then b's, every operation of b that requires nothing
 * made to require a's op gate (if any): one program. */
static int concat(const sim_prog_t *a, const sim_prog_t *b, int gate, sim_prog_t *out)
{
    uint32_t roots = 0, na = a->nops;
    for (uint32_t i = 0; gate >= 0 && i < b->nops; i++)
        roots += b->ops[i].pending == 0;
    if (sim_prog_alloc(out, na + b->nops, a->nedges + b->nedges + roots))
        return WEFT_ENOMEM;
    if (na)
        memcpy(out->ops, a->ops, na * sizeof *a->ops);
    uint32_t e = 0;
    for (uint32_t i = 0; i < na; i++) {
        out->succ_first[i] = e;
        for (uint32_t k = a->succ_first[i]; k < a->succ_first[i + 1]; k++)
            out->succ[e++] = a->succ[k];
        for (uint32_t j = 0; (int)i == gate && j < b->nops; j++)
            if (b->ops[j].pending == 0)
                out->succ[e++] = na + j;
    }
    for (uint32_t j = 0; j < b->nops; j++) {
        out->ops[na + j] = b->ops[j];
        out->ops[na + j].pending += gate >= 0 && b->ops[j].pending == 0;
        out->succ_first[na + j] = e;
        for (uint32_t k = b->succ_first[j]; k < b->succ_first[j + 1]; k++) {
            uint32_t v = b->succ[k];
            out->succ[e++] = ((v & ~SIM_IREQ) + na) | (v & SIM_IREQ);
        }
    }
    out->succ_first[na + b->nops] = e;
    return 0;
}

/* hier_pap for rank: the node level, then hier's schedule after it. */
static int build_hier(const sim_pap_t *c, int rank, sim_prog_t *out, char *msg, size_t len)
{
    draft_t d = {0};
    int gate = hier_node_part(c, rank, &d);
    sim_prog_t node, tail;
    memset(&node, 0, sizeof node);
    memset(&tail, 0, sizeof tail);
    int rc = d.oom ? WEFT_ENOMEM : finish(&d, &node);
    free(d.ops), free(d.deps);
    coll_args_t a = c->tail;
    a.rank = rank;
    sched_t b;
    sched_img_t *img = NULL;
    if (!rc) {
        sched_init(&b, a.nrank, rank);
        rc = algo_hier_tail_allreduce(&b, &a);
        if (!rc)
            rc = sched_commit(&b, &img);
        sched_free(&b);
    }
    if (!rc)
        rc = sim_prog_from_sched(img, a.esize, true, &tail);
    sched_img_free(img);
    if (!rc)
        rc = concat(&node, &tail, gate, out);
    sim_prog_free(&node);
    sim_prog_free(&tail);
    if (rc)
        snprintf(msg, len, "rank %d's hier_pap program: %s", rank, weft_strerror(rc));
    return rc;
}

int sim_build_pap(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len)
{
    const sim_pap_t *c = ctx;
    draft_t d = {0};
    if (c->kind == PAP_HIER)
        return build_hier(c, rank, out, msg, len);
    if (c->kind != PAP_CHAIN) {
        leader_prog(c, rank, &d);
    } else {
        int sent, have = chain_part(c, rank, &d, &sent);
        int last = c->order[c->P - 1];
        if (c->coll == WEFT_COLL_ALLREDUCE) {
            if (c->P > 1)
                bcast_from(c, rank, last, have, &d);
        } else if (rank == last && last != c->root) {
            add(&d, SIM_SEND, c->root, TAG_RESULT, c->bytes, have, -1);
        } else if (rank == c->root && last != c->root) {
            add(&d, SIM_RECV, last, TAG_RESULT, c->bytes, sent, -1);
        }
    }
    int rc = d.oom ? WEFT_ENOMEM : finish(&d, out);
    free(d.ops), free(d.deps);
    if (rc)
        snprintf(msg, len, "out of memory for rank %d's program", rank);
    return rc;
}
