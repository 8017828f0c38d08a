/* twotree_s.c — Sanders' TwoTreeS (Sanders, Speck & Traeff 2009) for
 * broadcast and reduce, and allreduce `twotree_sc` (TwoTreeS reduce +
 * TwoTreeC broadcast), as two-tree-collectives.txt compares them.  The trees
 * are tree_patterns.h's TREE_TWO_S1/S2.  Two modes (parameter sync=):
 *
 *   none       data-driven only, like the other pipelined trees;
 *   colouring  the paper's schedule: the tree edges are 2-coloured so that
 *              the two edges into a rank, and the two edges to its children
 *              in one tree, differ; rank by rank, round t uses only the
 *              edges of colour t mod 2 — one receive and the sends of that
 *              colour — and round t+1 starts when round t is done.  A rank
 *              thus alternates receiving in one tree and sending in the
 *              other, as the paper schedules it, and pays the lock-step the
 *              seed measured.
 *
 * The colouring is a 2-colouring of the conflict graph whose vertices are
 * tree edges (identified by tree and child) and whose edges join edges that
 * must differ; every vertex has at most two conflicts, so it is paths and
 * cycles, coloured by walking them.  An odd cycle would make it impossible:
 * the builder then fails and `weft check` reports it (none occurs for P up
 * to 2000; tests/test_trees.c checks).  The one rank that can be inner in
 * both trees (see tree_patterns.h) may send in both in one round. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "tree_patterns.h"

/* edge e = (tree t, child v): index 2*v + t, v >= 1 */
int twotree_s_colours(int P, signed char *col)
{
    int ne = 2 * P;
    int *adj = malloc((size_t)ne * 2 * sizeof *adj), *deg = calloc((size_t)ne, sizeof *deg);
    if (!adj || !deg) {
        free(adj), free(deg);
        return WEFT_ENOMEM;
    }
#define LINK(a, b) (adj[2 * (a) + deg[a]++] = (b), adj[2 * (b) + deg[b]++] = (a))
    for (int v = 1; v < P; v++)
        LINK(2 * v + 0, 2 * v + 1); /* the two edges into v */
    for (int u = 0; u < P; u++) {
        if (u == 0) { /* the root's two out-edges */
            int c1 = tree_node(TREE_TWO_S1, P, 0).child[0], c2 = tree_node(TREE_TWO_S2, P, 0).child[0];
            if (P > 2 && c1 != c2)
                LINK(2 * c1 + 0, 2 * c2 + 1);
            continue;
        }
        for (int t = 0; t < 2; t++) {
            tree_node_t n = tree_node(t ? TREE_TWO_S2 : TREE_TWO_S1, P, u);
            if (n.nchild == 2)
                LINK(2 * n.child[0] + t, 2 * n.child[1] + t);
        }
    }
#undef LINK
    int rc = WEFT_OK;
    memset(col, -1, (size_t)ne);
    int *stack = malloc((size_t)ne * sizeof *stack);
    if (!stack)
        rc = WEFT_ENOMEM;
    for (int s = 2; s < ne && !rc; s++) {
        if (col[s] >= 0)
            continue;
        int top = 0;
        col[s] = 0;
        stack[top++] = s;
        while (top && !rc) {
            int e = stack[--top];
            for (int i = 0; i < deg[e]; i++) {
                int f = adj[2 * e + i];
                if (col[f] < 0) {
                    col[f] = (signed char)(1 - col[e]);
                    stack[top++] = f;
                } else if (col[f] == col[e]) {
                    rc = WEFT_ENOTSUP; /* odd cycle */
                }
            }
        }
    }
    free(stack), free(adj), free(deg);
    return rc;
}

/* ---- sync=colouring: the synchronous timetable ----
 *
 * Rounds are global: in round t every edge of colour t mod 2 may carry the
 * next chunk of its tree, if its sender already had that chunk before round
 * t (broadcast: received it; reduce: heard from all its children).  The
 * colouring makes every rank receive at most once per round and send at most
 * once per tree per round.  Simulating this once per (P, k, direction) gives
 * each transfer a round; a rank then runs its transfers round by round.  A
 * send and its receive share a round, and a rank's round t waits only for
 * its own round t-1, so the waits form no cycle (the checker proves it). */

typedef struct tt_op {
    int round, peer, chunk, send; /* from this rank's point of view */
} tt_op_t;

typedef struct timetable {
    int P, k, reduce;
    int *first; /* ops of rank v: ops[first[v] .. first[v+1]) by round */
    tt_op_t *ops;
} timetable_t;

static int cmp_op(const void *x, const void *y)
{
    const tt_op_t *a = x, *b = y;
    return a->round != b->round ? (a->round > b->round) - (a->round < b->round)
                                : (a->send > b->send) - (a->send < b->send);
}

static void tt_free(timetable_t *t)
{
    free(t->first), free(t->ops);
    memset(t, 0, sizeof *t);
}

typedef struct tt_move {
    int round, from, to, chunk;
} tt_move_t;

/* Plays the synchronous rounds: each edge of the round's colour carries
 * the next chunk of its tree if its sender has it.  Fills moves (room for
 * every transfer) and *nops. */
static int tt_play(int P, int k, int reduce, const signed char *col, tt_move_t *moves, int *nops)
{
    int *next = calloc((size_t)(2 * P), sizeof *next);     /* per edge: chunks moved */
    int *have = malloc((size_t)P * (size_t)k * sizeof *have); /* round a rank had chunk c */
    int *left = malloc((size_t)P * (size_t)k * sizeof *left); /* reduce: children to hear */
    int rc = WEFT_OK, n = 0;
    if (!next || !have || !left) {
        rc = WEFT_ENOMEM;
        goto out;
    }
    for (int v = 0; v < P; v++)
        for (int c = 0; c < k; c++) {
            tree_node_t nd = tree_node(c % 2 ? TREE_TWO_S2 : TREE_TWO_S1, P, v);
            left[(size_t)v * k + c] = nd.nchild;
            /* broadcast: only the root has the data; reduce: leaves are ready */
            have[(size_t)v * k + c] = reduce ? (nd.nchild ? INT32_MAX : -1) : (v ? INT32_MAX : -1);
        }
    int remaining = 0;
    for (int v = 1; v < P; v++)
        for (int tr = 0; tr < 2; tr++)
            remaining += (k - tr + 1) / 2; /* chunks of tree tr */
    for (int round = 0; remaining > 0; round++) {
        if (round > 4 * (k + 2 * P) + 16) {
            rc = WEFT_EINTERNAL; /* a valid colouring always progresses */
            goto out;
        }
        for (int v = 1; v < P; v++)
            for (int tr = 0; tr < 2; tr++) {
                int e = 2 * v + tr;
                if (col[e] != round % 2)
                    continue;
                int c = tr + 2 * next[e];
                if (c >= k)
                    continue;
                int u = tree_node(tr ? TREE_TWO_S2 : TREE_TWO_S1, P, v).parent;
                int from = reduce ? v : u, to = reduce ? u : v;
                if (have[(size_t)from * k + c] >= round)
                    continue; /* the sender does not have it yet */
                moves[n++] = (tt_move_t){round, from, to, c};
                next[e]++;
                remaining--;
                if (!reduce)
                    have[(size_t)to * k + c] = round;
                else if (--left[(size_t)to * k + c] == 0)
                    have[(size_t)to * k + c] = round;
            }
    }
    *nops = n;
out:
    free(next), free(have), free(left);
    return rc;
}

/* Each rank's transfers, from its point of view, sorted by round. */
static int tt_index(timetable_t *t, const tt_move_t *moves, int nops)
{
    int P = t->P;
    t->first = calloc((size_t)P + 1, sizeof *t->first);
    t->ops = malloc((size_t)(2 * nops + 1) * sizeof *t->ops);
    int *fill = calloc((size_t)P, sizeof *fill);
    if (!t->first || !t->ops || !fill) {
        free(fill);
        tt_free(t);
        return WEFT_ENOMEM;
    }
    for (int i = 0; i < nops; i++)
        t->first[moves[i].from + 1]++, t->first[moves[i].to + 1]++;
    for (int v = 0; v < P; v++)
        t->first[v + 1] += t->first[v];
    for (int i = 0; i < nops; i++) {
        int f = moves[i].from, d = moves[i].to;
        t->ops[t->first[f] + fill[f]++] = (tt_op_t){moves[i].round, d, moves[i].chunk, 1};
        t->ops[t->first[d] + fill[d]++] = (tt_op_t){moves[i].round, f, moves[i].chunk, 0};
    }
    free(fill);
    for (int v = 0; v < P; v++)
        qsort(t->ops + t->first[v], (size_t)(t->first[v + 1] - t->first[v]), sizeof *t->ops, cmp_op);
    return WEFT_OK;
}

static int tt_build(timetable_t *t, int P, int k, int reduce)
{
    signed char *col = malloc((size_t)(2 * P));
    int nops = 0, cap = 2 * P * (k / 2 + 1) + 16, rc;
    tt_move_t *moves = malloc((size_t)cap * sizeof *moves);
    if (!col || !moves)
        rc = WEFT_ENOMEM;
    else if (!(rc = twotree_s_colours(P, col)) &&
             !(rc = tt_play(P, k, reduce, col, moves, &nops))) {
        t->P = P, t->k = k, t->reduce = reduce;
        rc = tt_index(t, moves, nops);
    }
    free(col), free(moves);
    return rc;
}

/* The last timetable, kept while P, k and the direction stay (all ranks of
 * a check, repeated calls).  Callers hold tt_lock while they use it. */
static timetable_t tt_cache;
static pthread_mutex_t tt_lock = PTHREAD_MUTEX_INITIALIZER;

static int tt_get(int P, int k, int reduce, const timetable_t **out)
{
    if (!tt_cache.ops || tt_cache.P != P || tt_cache.k != k || tt_cache.reduce != reduce) {
        tt_free(&tt_cache);
        int rc = tt_build(&tt_cache, P, k, reduce);
        if (rc)
            return rc;
    }
    *out = &tt_cache;
    return WEFT_OK;
}

static region_t chunk_of(int buf, uint64_t base, uint64_t n, int k, int c)
{
    return reg(buf, base + blk_off(n, (uint64_t)k, (uint64_t)c), blk_len(n, (uint64_t)k, (uint64_t)c));
}

static int colouring_build(sched_t *s, const coll_args_t *a, int reduce)
{
    int P = a->nrank, v = mod(a->rank - a->root, P), k = pipelined_chunks_for(a, 2);
    uint64_t n = a->count;
    const timetable_t *t;
    pthread_mutex_lock(&tt_lock);
    int rc = tt_get(P, k, reduce, &t);
    if (rc) {
        pthread_mutex_unlock(&tt_lock);
        return rc;
    }
    bool root = v == 0;
    uint64_t tmp = 0;
    if (reduce) { /* every chunk starts as this rank's own contribution */
        if (!root)
            tmp = sched_tmp(s, n);
        sched_copy(s, reg(BUF_IN, 0, n), root ? reg(BUF_OUT, 0, n) : reg(BUF_TMP, tmp, n));
        sched_round(s);
    }
    int cur = -1;
    for (int i = t->first[v]; i < t->first[v + 1]; i++) {
        const tt_op_t *op = &t->ops[i];
        if (op->round != cur && cur >= 0)
            sched_round(s);
        cur = op->round;
        int peer = (op->peer + a->root) % P;
        region_t r = reduce ? (root ? chunk_of(BUF_OUT, 0, n, k, op->chunk)
                                    : chunk_of(BUF_TMP, tmp, n, k, op->chunk))
                            : chunk_of(BUF_OUT, 0, n, k, op->chunk);
        if (op->send)
            sched_send(s, peer, (uint32_t)op->chunk, r);
        else if (reduce)
            sched_recv_reduce(s, peer, (uint32_t)op->chunk, r, false);
        else
            sched_recv(s, peer, (uint32_t)op->chunk, r);
    }
    pthread_mutex_unlock(&tt_lock);
    return 0;
}

int algo_twotree_s_bcast(sched_t *s, const coll_args_t *a)
{
    if (a->params.sync == 1 && a->nrank > 2)
        return colouring_build(s, a, 0);
    return pipelined_tree_bcast(s, a, TREE_TWO_S1, TREE_TWO_S2);
}

int algo_twotree_s_reduce(sched_t *s, const coll_args_t *a)
{
    if (a->params.sync == 1 && a->nrank > 2)
        return colouring_build(s, a, 1);
    return pipelined_tree_reduce(s, a, TREE_TWO_S1, TREE_TWO_S2);
}

/* TwoTreeS reduce to vrank 0, then TwoTreeC broadcast (two-tree-collectives.txt §4.3.3) */
int algo_twotree_sc_allreduce(sched_t *s, const coll_args_t *a)
{
    coll_args_t b = *a;
    b.root = 0;
    b.coll = WEFT_COLL_REDUCE;
    tagspace_t outer = sched_space(s);
    sched_part(s, outer, 0, 2);
    int rc = algo_twotree_s_reduce(s, &b);
    if (rc)
        return rc;
    sched_round(s);
    sched_part(s, outer, 1, 2);
    b.coll = WEFT_COLL_BCAST;
    rc = pipelined_tree_bcast(s, &b, TREE_TWO_C1, TREE_TWO_C2);
    sched_space_restore(s, outer);
    return rc;
}
