/* algo.h — the algorithm registry: every algorithm is a named builder that
 * appends one rank's steps to a schedule, plus the properties that say where
 * it is correct.  Selection (src/tune) and error messages read the
 * properties from here; no algorithm is ever run where they forbid it. */
#ifndef WEFT_ALGO_H
#define WEFT_ALGO_H

#include "../core/tool_api.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../sched/sched.h"
#include "weft.h"

/* Parameters an algorithm may take ("key=value,..." in the API). */
typedef struct algo_params {
    int chunks; /* pipeline chunk count; 0 = algorithm default */
    uint64_t segment; /* bytes per segment reduced in turn; 0 = the whole vector at once */
    int fanout; /* n-way fan-out; 0 = default */
    char reduce[24], bcast[24]; /* parts of a composed allreduce */
    char inter[24];             /* the algorithm between node leaders */
    int sync;                   /* twotree_s: 0 data-driven, 1 edge-colouring rounds */
    int pace;                   /* two-tree reduce: 0 off, -1 auto, N (pipelined_trees.c) */
    int threshold;              /* adaptive: its switching spread in us + 1; 0: the model's */
    int node;                   /* hier_pap's node level: a NODE_LEVEL_* */
    int stage;                  /* linear_arena's copy into the stage: a STAGE_* */
} algo_params_t;
enum { NODE_LEVEL_CHAIN = 0, NODE_LEVEL_LEADER = 1, NODE_LEVEL_TWOSTEP = 2 };
/* Streamed, the default, leaves no line of the stage modified in the
 * copier's cache for the readers on other cores to pull across one by one;
 * plain stores leave the stage in the shared cache where it fits there,
 * which some machines read faster (docs/TUNING.md, the built-in rows).
 * Sent (the allreduce and reduce only): no copy before the schedule; each
 * block of the input is copied into the stage, plainly, as its send is
 * posted (engine.c), so the peers start on the first blocks while the rank
 * copies the next, and the rank's own block, which no peer reads, is
 * never copied. */
enum { STAGE_STREAM = 0, STAGE_PLAIN = 1, STAGE_SENT = 2 };

/* A node map in group form, built once for every rank of a call (the
 * simulator, the checker), so that a hierarchical builder needs no O(P)
 * scan per rank: node n's ranks, ascending, are members[first[n] ..
 * first[n + 1]); leaders[n] is the first of them, idx_of[r] rank r's place
 * among its node's ranks. */
typedef struct node_groups {
    int nnodes;
    int *first, *members, *leaders, *idx_of;
} node_groups_t;

typedef struct coll_args {
    weft_coll_t coll;
    int nrank, rank, root;
    uint64_t count;   /* the API's count (per-rank block for block collectives) */
    size_t esize;
    bool commutative; /* of the op */
    bool idempotent;
    bool invertible;  /* the op has an exact inverse (ALGO_USES_INVERSE) */
    algo_params_t params;
    /* node of each rank (0..nnodes-1, numbered by first appearance), or
     * NULL: one node.  Only hierarchical algorithms read it. */
    const int *node_of;
    int nnodes;
    const node_groups_t *groups; /* node_of in group form, or NULL */
    int node_max;                /* ranks in the largest node; 0: not given */
    bool shared_board; /* the transport offers the board (src/shmcoll) */
    bool board_slots;  /* and this communicator has slots of its own there */
    uint32_t board_payload; /* the bytes a slot carries there */
    bool node_board;   /* each node's ranks share arrival records (hier_pap) */
    /* every rank is on one machine's shared memory, where a send from the
     * sender's arena may be read in place; the same on every rank (whether
     * this rank has an arena is its own affair: usability must not differ
     * between ranks) */
    bool arena_reads;
} coll_args_t;

/* property flags (the first three are also public: WEFT_ALGO_*) */
#define ALGO_NEEDS_COMMUTATIVE 0x1u /* op must be commutative */
#define ALGO_NEEDS_IDEMPOTENT 0x2u  /* op must be idempotent */
#define ALGO_IDENTICAL 0x4u         /* all ranks get bitwise-identical results */
#define ALGO_INPLACE_SAFE 0x8u      /* correct with BUF_IN aliased as in layout.h */
#define ALGO_TOPOLOGY 0x10u         /* reads the node map (hierarchical) */
#define ALGO_USES_INVERSE 0x20u     /* takes contributions out with the op's
                                     * inverse where it has one (schedule differs) */
#define ALGO_ROOT_READ_BY_ALL 0x40u /* every other rank reads the root's whole
                                     * buffer, which the root never writes: large
                                     * ones are staged in the shared arena (api.c) */
#define ALGO_STAGED_INPUT 0x80u     /* peers read every rank's input and scratch
                                     * in place: large inputs are staged with the
                                     * scratch in the shared arena (api.c) */

typedef int (*algo_build_fn)(sched_t *s, const coll_args_t *a);

typedef struct algo {
    const char *name;
    weft_coll_t coll;
    unsigned flags;
    algo_build_fn build;
    const char *params;  /* accepted parameter keys, "" if none */
    const char *summary; /* one line */
    const char *cost;    /* alpha-beta-gamma cost, n bytes, P ranks */
    /* optional: 0 if it can serve this call, else -1 and why (for
     * conditions the flags cannot say, such as "P a power of n+1") */
    int (*usable)(const coll_args_t *a, char *why, size_t len);
    /* NULL for a schedule; else the algorithm runs these (engine.h) and
     * build only makes the empty schedule the engine carries along */
    const struct board_ops *board;
} algo_t;

WEFT_TOOL_API const algo_t *algo_table(size_t *n);
WEFT_TOOL_API const algo_t *algo_find(weft_coll_t coll, const char *name);
WEFT_TOOL_API weft_coll_t coll_from_name(const char *name); /* WEFT_COLL_COUNT if unknown */
/* WEFT_EINVAL with a message saying why and what to use instead when the
 * algorithm cannot serve the call. */
WEFT_TOOL_API int algo_check_usable(const algo_t *al, const coll_args_t *a);
/* 0 if al can serve the call; nonzero, setting no error, if not, with the
 * reason in why (AUTO, weft explain). */
WEFT_TOOL_API int algo_usable_why(const algo_t *al, const coll_args_t *a, char *why, size_t n);
/* The properties of al for this call: a composition's follow from its parts
 * (reduce_bcast's reduce, hier's algorithm among leaders). */
WEFT_TOOL_API unsigned algo_effective_flags(const algo_t *al, const coll_args_t *a);
/* Builds a->rank's schedule into the builder b (reset first; it keeps its
 * memory for the next build) and commits it into *out (sched_img_free). */
WEFT_TOOL_API int algo_build_with(const algo_t *al, const coll_args_t *a, sched_t *b,
                                  sched_img_t **out);
/* The same with a builder of its own. */
WEFT_TOOL_API int algo_build(const algo_t *al, const coll_args_t *a, sched_img_t **out);
/* Builds it into b and reads it in place (sched_view): *view is valid
 * until b changes. */
WEFT_TOOL_API int algo_build_view(const algo_t *al, const coll_args_t *a, sched_t *b,
                                  sched_img_t *view);
/* The group form of node_of (nnodes nodes of P ranks); WEFT_ENOMEM. */
WEFT_TOOL_API int node_groups_build(const int *node_of, int nnodes, int P, node_groups_t *g);
WEFT_TOOL_API void node_groups_free(node_groups_t *g);
/* Parses "key=value,..." into p (keys must be in al->params). */
WEFT_TOOL_API int algo_parse_params(const algo_t *al, const char *text, algo_params_t *p);

/* Collectives with a root, and those that reduce. */
static inline bool coll_is_rooted(weft_coll_t c)
{
    return c == WEFT_COLL_BCAST || c == WEFT_COLL_REDUCE || c == WEFT_COLL_SCATTER ||
           c == WEFT_COLL_GATHER;
}
static inline bool coll_is_reduction(weft_coll_t c)
{
    return c == WEFT_COLL_ALLREDUCE || c == WEFT_COLL_REDUCE || c == WEFT_COLL_REDUCE_SCATTER;
}
/* Collectives whose count is a rank's block, the call moving P of them. */
static inline bool coll_is_blocked(weft_coll_t c)
{
    return c == WEFT_COLL_REDUCE_SCATTER || c == WEFT_COLL_ALLGATHER || c == WEFT_COLL_SCATTER ||
           c == WEFT_COLL_GATHER;
}

/* ---- helpers shared by the families (pattern arithmetic) ---- */

/* Block i of n elements cut into p nearly equal blocks. */
static inline uint64_t blk_off(uint64_t n, uint64_t p, uint64_t i)
{
    return i * (n / p) + (i < n % p ? i : n % p);
}
static inline uint64_t blk_len(uint64_t n, uint64_t p, uint64_t i)
{
    return n / p + (i < n % p ? 1 : 0);
}

/* The pieces of at most `bytes` (whole elements, at least one) that
 * `count` elements of `esize` bytes are cut into; 1 for count 0 (a segment=
 * parameter's segments, rabenseifner's and linear_arena's bcast's).  At
 * most PIECES_MAX of them in a schedule, so that its tags and size stay
 * small: rabenseifner refuses more, linear_arena's bcast makes its pieces
 * larger. */
enum { PIECES_MAX = 4096 };
static inline uint64_t pieces_of(uint64_t count, size_t esize, uint64_t bytes)
{
    uint64_t piece = bytes / esize;
    if (!piece)
        piece = 1; /* a piece smaller than an element is an element */
    return count > piece ? (count + piece - 1) / piece : 1;
}

static inline int pow2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p)
        q *= 2;
    return q;
}
static inline int mod(int a, int p) { return ((a % p) + p) % p; }

/* Binomial trees on vranks: v's parent is v - span(v), its children v + 2^j
 * for 2^j < span(v), where span(v) is v's lowest set bit, and for the root
 * the power of two >= P. */
static inline int binomial_span(int v, int P)
{
    if (v)
        return v & -v;
    int m = 1;
    while (m < P)
        m <<= 1;
    return m;
}

/* Fold of P = P' + rem ranks onto P' = pow2_floor(P) (MPICH's scheme): rank
 * r < 2*rem pairs with r^1; the odd one stays as newrank r/2, the even one
 * sits out.  Ranks >= 2*rem are newrank r - rem. */
static inline int fold_newrank(int r, int rem)
{
    return r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
}
static inline int fold_oldrank(int nr, int rem) { return nr < rem ? 2 * nr + 1 : nr + rem; }

/* Builders by family (each in its own file). */
int algo_ring_allreduce(sched_t *s, const coll_args_t *a);
int algo_ring_reduce_scatter(sched_t *s, const coll_args_t *a);
int algo_ring_allgather(sched_t *s, const coll_args_t *a);
int algo_rd_allreduce(sched_t *s, const coll_args_t *a);
int algo_rd_allgather(sched_t *s, const coll_args_t *a);
int algo_rabenseifner_allreduce(sched_t *s, const coll_args_t *a);
int algo_rhalving_reduce_scatter(sched_t *s, const coll_args_t *a);
int algo_rsg_reduce(sched_t *s, const coll_args_t *a);
int algo_pairwise_reduce_scatter(sched_t *s, const coll_args_t *a);
int algo_binomial_bcast(sched_t *s, const coll_args_t *a);
int algo_binomial_reduce(sched_t *s, const coll_args_t *a);
int algo_binomial_scatter(sched_t *s, const coll_args_t *a);
int algo_binomial_gather(sched_t *s, const coll_args_t *a);
int algo_linear_bcast(sched_t *s, const coll_args_t *a);
int algo_linear_arena_usable(const coll_args_t *a, char *why, size_t len);
int algo_linear_arena_bcast(sched_t *s, const coll_args_t *a);
int algo_linear_reduce(sched_t *s, const coll_args_t *a);
int algo_linear_arena_allreduce(sched_t *s, const coll_args_t *a);
int algo_linear_arena_reduce(sched_t *s, const coll_args_t *a);
int algo_linear_scatter(sched_t *s, const coll_args_t *a);
int algo_linear_gather(sched_t *s, const coll_args_t *a);
int algo_linear_reduce_scatter(sched_t *s, const coll_args_t *a);
int algo_scatter_allgather_bcast(sched_t *s, const coll_args_t *a);
int algo_bruck_allgather(sched_t *s, const coll_args_t *a);
WEFT_TOOL_API int algo_reduce_bcast_allreduce(sched_t *s, const coll_args_t *a);
int algo_binomial_allreduce(sched_t *s, const coll_args_t *a);
int algo_direct_allreduce(sched_t *s, const coll_args_t *a);
/* The board algorithms (src/shmcoll/board.c). */
extern const struct board_ops board_ops;
struct exec;
/* Before a board call starts, what its communicator's earlier calls on
 * this rank established (e->bc; ordered: they are all finished); once it
 * has finished, what it adds. */
void board_arm(struct exec *e, bool ordered);
void board_finished(const struct exec *e);
/* The communicator's call that posted and left unchecked (board_comm_t),
 * compared with its neighbours' logs again: WEFT_EMISMATCH (the job ends)
 * where one made it otherwise; world: the communicator's ranks in x. */
struct board_comm;
struct xport;
int board_recheck(struct board_comm *bc, struct xport *x, const int *world, int rank, int P);
/* watch_sent's: call d ended before peer (a communicator rank) it sent to
 * had noted it, for board_recheck to compare with that peer's record as
 * the next calls start. */
struct call_desc;
void board_note_unseen(struct board_comm *bc, const struct call_desc *d, int peer);
int algo_board_build(sched_t *s, const coll_args_t *a);
int algo_board_usable(const coll_args_t *a, char *why, size_t len);
/* The arrival-driven algorithms (src/shmcoll: arrival.c, pap_leader.c,
 * pap_chain.c); their builder is algo_board_build. */
extern const struct board_ops shm_twostep_ops, pap_leader_ops, pap_chain_ops, adaptive_ops,
    hier_pap_ops;
int arrival_usable(const coll_args_t *a, char *why, size_t len);
int hier_pap_usable(const coll_args_t *a, char *why, size_t len);
struct xport;
bool arrival_comm_freed(struct xport *x, int host, uint32_t ctx);
int algo_dissemination_barrier(sched_t *s, const coll_args_t *a);
int algo_hier_allreduce(sched_t *s, const coll_args_t *a);
/* hier allreduce after its node level (the node's sum in the leader's
 * output): hier_pap's hand-over */
WEFT_TOOL_API int algo_hier_tail_allreduce(sched_t *s, const coll_args_t *a);
int algo_pipeline_bcast(sched_t *s, const coll_args_t *a);
int algo_bintree_bcast(sched_t *s, const coll_args_t *a);
int algo_twotree_bcast(sched_t *s, const coll_args_t *a);
int algo_twotree_reordered_bcast(sched_t *s, const coll_args_t *a);
int algo_pipeline_reduce(sched_t *s, const coll_args_t *a);
int algo_bintree_reduce(sched_t *s, const coll_args_t *a);
int algo_twotree_reduce(sched_t *s, const coll_args_t *a);
int algo_twotree_reordered_reduce(sched_t *s, const coll_args_t *a);
int algo_pipeline_allreduce(sched_t *s, const coll_args_t *a);
int algo_bintree_allreduce(sched_t *s, const coll_args_t *a);
int algo_twotree_allreduce(sched_t *s, const coll_args_t *a);
int algo_twotree_reordered_allreduce(sched_t *s, const coll_args_t *a);
int algo_twotree_overlap_allreduce(sched_t *s, const coll_args_t *a);
/* LogGP default chunk count: set 0 chain, 1 binary tree, 2 two-tree */
int pipelined_default_chunks(int kind_set, int P, uint64_t bytes);
/* The closed form of docs/ALGORITHMS.md for a per-message cost a (ns) and
 * G (ns per byte): k* = sqrt((d - c) G n / (c a)), clamped to 1..4096. */
WEFT_TOOL_API int pipelined_model_chunks(int kind_set, int P, uint64_t bytes, double a, double G);
/* The kind set of a pipelined algorithm by name, -1 if it is not one. */
WEFT_TOOL_API int pipelined_kind_set(const char *algo);
/* the chunk count a call uses (params or default, clamped to the count) */
int pipelined_chunks_for(const coll_args_t *a, int kind_set);
/* data-driven pipelined bcast/reduce over two trees of tree_patterns.h */
int pipelined_tree_bcast(sched_t *s, const coll_args_t *a, int kind1, int kind2);
int pipelined_tree_reduce(sched_t *s, const coll_args_t *a, int kind1, int kind2);
int algo_twotree_s_bcast(sched_t *s, const coll_args_t *a);
int algo_butterfly_allreduce(sched_t *s, const coll_args_t *a);
int algo_pairwise_allreduce(sched_t *s, const coll_args_t *a);
int algo_dissem_allreduce(sched_t *s, const coll_args_t *a);
int algo_dissem_usable(const coll_args_t *a, char *why, size_t len);
int algo_rabenseifner_usable(const coll_args_t *a, char *why, size_t len);
int algo_bruck_allreduce(sched_t *s, const coll_args_t *a);

/* The adaptation of n-way dissemination for P ranks (dissem_adapted.c). */
typedef struct dissem_tuple {
    int P, n, k;  /* ranks, fan-out, rounds = ceil(log_{n+1} P) */
    long m;       /* (n+1)^(k-1): the window each rank holds before round k */
    /* the seed's 5-tuple; l_rcv = -1 is the base border g_B */
    int s, l_snd, l_rcv, j_snd, j_rcv;
    int kase;     /* Theorem 1's case 1..5; 0: P = (n+1)^k, nothing to adapt;
                   * 6: base border (the note after the theorem's proof) */
    /* the same as a schedule: in round k rank p sends to p + i m for
     * i = 1..nsend, its whole window except to the last, which gets its
     * first len_snd ranks; it takes its own first len_rcv ranks out (0: none) */
    int nsend;
    long len_snd, len_rcv;
} dissem_tuple_t;
/* 0 and *t if (P, n) is adaptable, else -1. */
WEFT_TOOL_API int dissem_tuple(int P, int n, dissem_tuple_t *t);
/* The smallest n with a tuple (n = P - 1 always has one). */
WEFT_TOOL_API int dissem_auto_fanout(int P);
int algo_dissem_adapted_allreduce(sched_t *s, const coll_args_t *a);
int algo_dissem_adapted_usable(const coll_args_t *a, char *why, size_t len);
int algo_twotree_s_reduce(sched_t *s, const coll_args_t *a);
int algo_twotree_sc_allreduce(sched_t *s, const coll_args_t *a);
/* 2-colouring of TwoTreeS's edges, col[2*child + tree]; WEFT_ENOTSUP if
 * none exists */
WEFT_TOOL_API int twotree_s_colours(int P, signed char *col);
int algo_hier_bcast(sched_t *s, const coll_args_t *a);
/* The parts of the compositions: hier's algorithm among node leaders
 * (inter=, default rabenseifner for allreduce, binomial otherwise), and
 * reduce_bcast's reduce or bcast (default binomial). */
const char *hier_inter_name(const coll_args_t *a);
const char *reduce_bcast_part_name(const coll_args_t *a, weft_coll_t part);
int algo_hier_reduce(sched_t *s, const coll_args_t *a);

#endif
