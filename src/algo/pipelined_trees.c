/* pipelined_trees.c — pipelined trees for broadcast, reduce and allreduce:
 * `pipeline` (a chain), `bintree` (a complete binary tree) and the two-tree
 * family of two-tree-collectives.txt: `twotree` (TwoTreeC) and
 * `twotree_reordered` (its Reordered TwoTreeC).  The message is cut into k
 * chunks (parameter chunks=k); chunk c flows down (or up) tree c mod T of the
 * algorithm's T trees.  There are no rounds: each chunk's steps depend only
 * on that chunk's own data (a receive, or the reductions of its children),
 * so chunks of one tree pipeline and the two trees of a two-tree run side by
 * side, every send and receive non-blocking, as the seed prescribes.
 *
 * Allreduce composes a reduce to vrank 0 with a broadcast from it:
 * `twotree` (TwoTreeC + TwoTreeC), `twotree_reordered` (TwoTreeC reduce +
 * Reordered broadcast), each with a barrier between the phases, and
 * `twotree_overlap` (TwoTreeC + Reordered, the broadcast of chunk i starting
 * as soon as chunk i is reduced at the root).  Reductions need a commutative
 * op: a tree's subtrees are not contiguous rank ranges.
 *
 * pace=N (two-tree reduces; default 0, off): a rank's chunk of the tree it
 * is a leaf of, ready at the start, is sent only after its forward of the
 * other tree's chunk N chunks of that tree earlier; auto: N = depth + 1.
 * Without it a rank's send port carries all its leaf chunks before any
 * forward, and every level of the other tree waits that long: under a
 * LogGOPS model whose NIC takes messages in (weft sim --offload 1) the
 * reduce of 1 MiB over 255-65535 ranks takes 1.6-1.7 times its bound
 * without, 1.14-1.27 with (docs/ALGORITHMS.md).  Waits only on smaller chunk
 * indices, so it cannot deadlock.
 *
 * Chunk count default (docs/ALGORITHMS.md): with a = L + 2o per message and
 * b = G n per message of the whole vector, a pipeline of depth d whose nodes
 * send c messages per chunk takes T(k) = (d - c + c k)(a + b / k); dT/dk = 0
 * gives k* = sqrt((d - c) b / (c a)).  Until `weft fit` measures L, o, G we
 * use shared-memory values a = 1 us, G = 0.1 ns/byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "tree_patterns.h"

typedef struct tree_set {
    int kind[2];
    int ntrees;
} tree_set_t;

static const tree_set_t set_chain = {{TREE_CHAIN, TREE_CHAIN}, 1};
static const tree_set_t set_binary = {{TREE_BINARY, TREE_BINARY}, 1};
static const tree_set_t set_twotree = {{TREE_TWO_C1, TREE_TWO_C2}, 2};
static const tree_set_t set_reordered = {{TREE_TWO_R1, TREE_TWO_R2}, 2};

static int depth_of(const tree_set_t *ts, int P)
{
    if (ts->kind[0] == TREE_CHAIN)
        return P - 1;
    int d = 0;
    while ((2 << d) <= P)
        d++;
    return ts->ntrees == 2 ? d + 1 : d; /* two-trees hang one level lower */
}

int pipelined_model_chunks(int kind_set, int P, uint64_t bytes, double a, double G)
{
    const tree_set_t *ts = kind_set == 0 ? &set_chain : kind_set == 1 ? &set_binary : &set_twotree;
    double d = depth_of(ts, P), c = ts->kind[0] == TREE_CHAIN ? 1 : 2;
    if (ts->ntrees == 2)
        c = 1; /* each tree carries every other chunk, one send per chunk per tree */
    double k = d > c && a > 0 ? sqrt((d - c) * G * (double)bytes / (c * a)) : 1;
    return k < 1 ? 1 : k > 4096 ? 4096 : (int)k;
}

int pipelined_default_chunks(int kind_set, int P, uint64_t bytes)
{
    return pipelined_model_chunks(kind_set, P, bytes, 1000, 0.1); /* ns, ns per byte */
}

int pipelined_kind_set(const char *algo)
{
    if (!strcmp(algo, "pipeline"))
        return 0;
    if (!strcmp(algo, "bintree"))
        return 1;
    return strncmp(algo, "twotree", 7) ? -1 : 2;
}

/* On shared memory a bcast's chunk of 64 KiB or more goes by single copy,
 * which holds the sender until the receiver has read it; below that it
 * goes eagerly through the cells.  bench/chunk_sweep.sh (4 and 8 ranks on
 * 2 cores, 1-16 MiB, two runs) measured the best chunk counts at or above
 * the count that keeps chunks under 64 KiB, and the closed form's count
 * (chunks of 75-300 KiB) 1.3-4x slower; at 2 ranks it made no steady
 * difference.  So a bcast on shared memory keeps its chunks at 48 KiB or
 * less.  (A reduce's chunks go through cells whatever their size and keep
 * the closed form.)  The schedule is the same on every rank: it depends
 * on the communicator's transport only, not on any rank's settings. */
#define SHM_BCAST_CHUNK_MAX (48u << 10)

static int chunk_count(const coll_args_t *a, const tree_set_t *ts)
{
    int k = a->params.chunks;
    if (k <= 0) {
        int set = ts->kind[0] == TREE_CHAIN ? 0 : ts->ntrees == 1 ? 1 : 2;
        uint64_t bytes = a->count * a->esize;
        k = pipelined_default_chunks(set, a->nrank, bytes);
        uint64_t eager = (bytes + SHM_BCAST_CHUNK_MAX - 1) / SHM_BCAST_CHUNK_MAX;
        if (a->coll == WEFT_COLL_BCAST && a->shared_board && a->nrank > 2 && eager > (uint64_t)k)
            k = eager > 4096 ? 4096 : (int)eager;
    }
    if ((uint64_t)k > a->count)
        k = a->count ? (int)a->count : 1; /* chunks smaller than an element make no sense */
    return k;
}

static region_t chunk(int buf, uint64_t base, uint64_t n, int k, int c)
{
    return reg(buf, base + blk_off(n, (uint64_t)k, (uint64_t)c), blk_len(n, (uint64_t)k, (uint64_t)c));
}

static int real_rank(int v, int root, int P) { return (v + root) % P; }

/* Per-chunk bookkeeping shared by the reduce and broadcast halves. */
typedef struct chunk_steps {
    uint32_t *in_read; /* last step reading the input's chunk c (SCHED_NONE) */
    uint32_t *ready;   /* step after which chunk c of the result is complete
                          at the root (SCHED_NONE: no dependency) */
    uint32_t *fwd;     /* the reduce's send of chunk c to its parent, for
                          pace (SCHED_NONE: a leaf's, or none; NULL when
                          the call is not paced) */
} chunk_steps_t;

static int steps_alloc(chunk_steps_t *cs, int k, bool paced)
{
    cs->in_read = malloc((size_t)k * sizeof *cs->in_read);
    cs->ready = malloc((size_t)k * sizeof *cs->ready);
    cs->fwd = paced ? malloc((size_t)k * sizeof *cs->fwd) : NULL;
    if (!cs->in_read || !cs->ready || (paced && !cs->fwd)) {
        free(cs->in_read), free(cs->ready), free(cs->fwd);
        return WEFT_ENOMEM;
    }
    for (int c = 0; c < k; c++) {
        cs->in_read[c] = cs->ready[c] = SCHED_NONE;
        if (paced)
            cs->fwd[c] = SCHED_NONE;
    }
    return 0;
}

static void steps_free(chunk_steps_t *cs) { free(cs->in_read), free(cs->ready), free(cs->fwd); }

/* pace's distance in chunk indices: the other tree's chunk N of its own
 * earlier is 2N - 1 indices back (the trees alternate); 0: off. */
static int pace_lag(const coll_args_t *a, const tree_set_t *ts, int P)
{
    int n = a->params.pace < 0 ? depth_of(ts, P) + 1 : a->params.pace;
    return ts->ntrees == 2 && n > 0 ? 2 * n - 1 : 0;
}

static void tree_reduce(sched_t *s, const coll_args_t *a, const tree_set_t *ts, int k,
                        uint32_t tag0, chunk_steps_t *cs)
{
    int P = a->nrank, v = mod(a->rank - a->root, P), lag = pace_lag(a, ts, P);
    uint64_t n = a->count;
    bool root = v == 0;
    uint64_t t = root ? 0 : sched_tmp(s, n);
    for (int c = 0; c < k; c++) {
        tree_node_t nd = tree_node(ts->kind[c % ts->ntrees], P, v);
        region_t in = chunk(BUF_IN, 0, n, k, c);
        if (nd.nchild == 0 && nd.parent >= 0) { /* a leaf sends its input as is */
            cs->in_read[c] = sched_send(s, real_rank(nd.parent, a->root, P), tag0 + (uint32_t)c, in);
            if (lag && cs->fwd && c >= lag && cs->fwd[c - lag] != SCHED_NONE)
                sched_depend(s, cs->in_read[c], cs->fwd[c - lag]);
            continue;
        }
        region_t acc = root ? chunk(BUF_OUT, 0, n, k, c) : chunk(BUF_TMP, t, n, k, c);
        uint32_t prev = sched_copy(s, in, acc);
        cs->in_read[c] = prev;
        for (int i = 0; i < nd.nchild; i++) {
            uint32_t rr = sched_recv_reduce(s, real_rank(nd.child[i], a->root, P),
                                            tag0 + (uint32_t)c, acc, false);
            sched_depend(s, rr, prev);
            prev = rr;
        }
        if (nd.parent >= 0) {
            uint32_t sd = sched_send(s, real_rank(nd.parent, a->root, P), tag0 + (uint32_t)c, acc);
            sched_depend(s, sd, prev);
            if (cs->fwd)
                cs->fwd[c] = sd;
        } else {
            cs->ready[c] = prev;
        }
    }
}

static void tree_bcast(sched_t *s, const coll_args_t *a, const tree_set_t *ts, int k,
                       uint32_t tag0, const chunk_steps_t *cs)
{
    int P = a->nrank, v = mod(a->rank - a->root, P);
    uint64_t n = a->count;
    for (int c = 0; c < k; c++) {
        tree_node_t nd = tree_node(ts->kind[c % ts->ntrees], P, v);
        region_t buf = chunk(BUF_OUT, 0, n, k, c);
        uint32_t got = SCHED_NONE;
        if (nd.parent >= 0) {
            got = sched_recv(s, real_rank(nd.parent, a->root, P), tag0 + (uint32_t)c, buf);
            /* in place, the output is the input: do not overwrite it before
             * the reduce has read it */
            if (cs && cs->in_read[c] != SCHED_NONE)
                sched_depend(s, got, cs->in_read[c]);
        } else if (cs) {
            got = cs->ready[c];
        }
        for (int i = 0; i < nd.nchild; i++) {
            uint32_t sd = sched_send(s, real_rank(nd.child[i], a->root, P), tag0 + (uint32_t)c, buf);
            if (got != SCHED_NONE)
                sched_depend(s, sd, got);
        }
    }
}

static int build_bcast(sched_t *s, const coll_args_t *a, const tree_set_t *ts)
{
    tree_bcast(s, a, ts, chunk_count(a, ts), 0, NULL);
    return 0;
}

static int build_reduce(sched_t *s, const coll_args_t *a, const tree_set_t *ts)
{
    int k = chunk_count(a, ts);
    chunk_steps_t cs;
    if (steps_alloc(&cs, k, a->params.pace != 0))
        return WEFT_ENOMEM;
    tree_reduce(s, a, ts, k, 0, &cs);
    steps_free(&cs);
    return 0;
}

/* Reduce on `rt` to vrank 0, then broadcast on `bt`; with overlap the
 * broadcast of chunk c waits only for chunk c, else for the whole reduce. */
static int build_allreduce(sched_t *s, const coll_args_t *a, const tree_set_t *rt,
                           const tree_set_t *bt, bool overlap)
{
    coll_args_t b = *a;
    b.root = 0;
    int k = chunk_count(&b, rt);
    chunk_steps_t cs;
    if (steps_alloc(&cs, k, b.params.pace != 0))
        return WEFT_ENOMEM;
    tree_reduce(s, &b, rt, k, 0, &cs);
    if (!overlap) {
        sched_round(s);
        for (int c = 0; c < k; c++)
            cs.in_read[c] = cs.ready[c] = SCHED_NONE; /* the round orders everything */
    }
    tree_bcast(s, &b, bt, k, (uint32_t)k, &cs);
    steps_free(&cs);
    return 0;
}

int pipelined_chunks_for(const coll_args_t *a, int kind_set)
{
    const tree_set_t *ts = kind_set == 0 ? &set_chain : kind_set == 1 ? &set_binary : &set_twotree;
    return chunk_count(a, ts);
}

int pipelined_tree_bcast(sched_t *s, const coll_args_t *a, int kind1, int kind2)
{
    tree_set_t ts = {{kind1, kind2}, 2};
    return build_bcast(s, a, &ts);
}

int pipelined_tree_reduce(sched_t *s, const coll_args_t *a, int kind1, int kind2)
{
    tree_set_t ts = {{kind1, kind2}, 2};
    return build_reduce(s, a, &ts);
}

int algo_pipeline_bcast(sched_t *s, const coll_args_t *a) { return build_bcast(s, a, &set_chain); }
int algo_bintree_bcast(sched_t *s, const coll_args_t *a) { return build_bcast(s, a, &set_binary); }
int algo_twotree_bcast(sched_t *s, const coll_args_t *a) { return build_bcast(s, a, &set_twotree); }
int algo_twotree_reordered_bcast(sched_t *s, const coll_args_t *a)
{
    return build_bcast(s, a, &set_reordered);
}

int algo_pipeline_reduce(sched_t *s, const coll_args_t *a) { return build_reduce(s, a, &set_chain); }
int algo_bintree_reduce(sched_t *s, const coll_args_t *a) { return build_reduce(s, a, &set_binary); }
int algo_twotree_reduce(sched_t *s, const coll_args_t *a) { return build_reduce(s, a, &set_twotree); }
int algo_twotree_reordered_reduce(sched_t *s, const coll_args_t *a)
{
    return build_reduce(s, a, &set_reordered);
}

int algo_pipeline_allreduce(sched_t *s, const coll_args_t *a)
{
    return build_allreduce(s, a, &set_chain, &set_chain, false);
}
int algo_bintree_allreduce(sched_t *s, const coll_args_t *a)
{
    return build_allreduce(s, a, &set_binary, &set_binary, false);
}
int algo_twotree_allreduce(sched_t *s, const coll_args_t *a)
{
    return build_allreduce(s, a, &set_twotree, &set_twotree, false);
}
int algo_twotree_reordered_allreduce(sched_t *s, const coll_args_t *a)
{
    return build_allreduce(s, a, &set_twotree, &set_reordered, false);
}
int algo_twotree_overlap_allreduce(sched_t *s, const coll_args_t *a)
{
    return build_allreduce(s, a, &set_twotree, &set_reordered, true);
}
