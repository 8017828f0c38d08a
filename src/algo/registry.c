/* registry.c — every algorithm weft has, with its properties, parameters,
 * summary and cost (alpha: latency per message, beta: time per byte, gamma:
 * reduction time per byte; n bytes, P ranks; lg = log2).  Selection and the
 * error messages read the properties from this table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core.h"
#include "algo.h"

/* most rows leave the optional `usable` callback out */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define C ALGO_NEEDS_COMMUTATIVE
#define I ALGO_IDENTICAL
#define S ALGO_INPLACE_SAFE
#define T ALGO_TOPOLOGY

static const algo_t table[] = {
    /* allreduce */
    {"ring", WEFT_COLL_ALLREDUCE, C | I | S, algo_ring_allreduce, "",
     "reduce-scatter then allgather around a ring of P blocks",
     "2(P-1) alpha + 2(P-1)/P n beta + (P-1)/P n gamma"},
    {"recursive_doubling", WEFT_COLL_ALLREDUCE, I | S, algo_rd_allreduce, "",
     "lg P exchanges of the whole vector (fold for P not a power of two)",
     "lg P (alpha + n beta + n gamma); +2 alpha + 2 n beta + n gamma when P is not 2^k"},
    {"rabenseifner", WEFT_COLL_ALLREDUCE, C | I | S, algo_rabenseifner_allreduce, "segment",
     "BDE: reduce-scatter by recursive halving + allgather by recursive doubling (segment=BYTES: "
     "on segments of the vector in turn)",
     "2 lg P alpha + 2(P-1)/P n beta + (P-1)/P n gamma; +2 alpha + 2 n beta + n gamma when P is "
     "not 2^k; segments: 2 lg P alpha per segment",
     algo_rabenseifner_usable},
    {"binomial", WEFT_COLL_ALLREDUCE, I | S, algo_binomial_allreduce, "",
     "binomial reduce to rank 0 + binomial broadcast",
     "2 ceil(lg P) (alpha + n beta) + ceil(lg P) n gamma"},
    {"reduce_bcast", WEFT_COLL_ALLREDUCE, I | S, algo_reduce_bcast_allreduce, "reduce,bcast",
     "any reduce to rank 0 (reduce=NAME) + any broadcast (bcast=NAME)",
     "cost(reduce) + cost(bcast)"},
    {"direct", WEFT_COLL_ALLREDUCE, I | S, algo_direct_allreduce, "",
     "every rank sends its input to all others and combines all P in rank order (small n)",
     "(P-1)(alpha + n beta) + (P-1) n gamma"},
    {"linear_arena", WEFT_COLL_ALLREDUCE, I | S | ALGO_STAGED_INPUT, algo_linear_arena_allreduce,
     "stage,segment",
     "every rank's input staged in its shared arena; rank j reduces block j from every stage in "
     "rank order, then every rank copies every reduced block (shared memory; stage=sent: each "
     "block staged as it is sent; segment=BYTES: block j combined a piece at a time)",
     "n beta to stage, then 2(P-1)(alpha + n/P beta) + (P-1)/P n gamma per rank, no cell copies",
     algo_linear_arena_usable},
    {"board", WEFT_COLL_ALLREDUCE, I | S, algo_board_build, "",
     "each rank writes its slot of the shared-memory board, combines all P slots (tiny n)",
     "about alpha_line + (P-1) n gamma: one cache-line transfer per peer, no message",
     algo_board_usable, &board_ops},
    {"shm_twostep", WEFT_COLL_ALLREDUCE, I | S, algo_board_build, "",
     "rank 0 leads: the others send it their input, it reduces in rank order and sends the "
     "result back (MVAPICH's static leader)",
     "2 alpha + (P-1) n (beta_in + gamma) + (P-1) n beta_out at rank 0, after rank 0 and the last arrival",
     arrival_usable, &shm_twostep_ops},
    {"pap_leader", WEFT_COLL_ALLREDUCE, C | I | S, algo_board_build, "",
     "the first rank to arrive leads: it reduces each input as it comes and sends the result back "
     "(arrival-aware, small n)",
     "as shm_twostep, from the first arrival: alpha + n (beta + gamma) + (P-1) n beta after the last arrival",
     arrival_usable, &pap_leader_ops},
    {"pap_chain", WEFT_COLL_ALLREDUCE, C | I | S, algo_board_build, "",
     "a chain in arrival order (each adds its input and hands on), then a binomial bcast from the "
     "last arrival",
     "(P-1)(alpha + n beta + n gamma) + ceil(lg P)(alpha + n beta); after the last arrival: "
     "alpha + n (beta + gamma) + ceil(lg P)(alpha + n beta)",
     arrival_usable, &pap_chain_ops},
    {"adaptive", WEFT_COLL_ALLREDUCE, C | I | S, algo_board_build, "threshold",
     "chooses per call from the arrival spread of recent calls: recursive doubling/rabenseifner "
     "when ranks arrive together, pap_leader/pap_chain when they do not",
     "the chosen one's, + one arrival ticket per call; switches when the spread exceeds "
     "ceil(lg P)(alpha + n beta)",
     arrival_usable, &adaptive_ops},
    {"pipeline", WEFT_COLL_ALLREDUCE, C | I | S, algo_pipeline_allreduce, "chunks",
     "pipelined chain reduce to rank 0, then pipelined chain bcast (k chunks)",
     "2 (P - 2 + k)(alpha + n/k beta) + (P - 2 + k) n/k gamma"},
    {"bintree", WEFT_COLL_ALLREDUCE, C | I | S, algo_bintree_allreduce, "chunks",
     "pipelined binary-tree reduce, then pipelined binary-tree bcast (k chunks)",
     "2 (lg P + 2k)(alpha + n/k beta) + (lg P + 2k) n/k gamma"},
    {"twotree", WEFT_COLL_ALLREDUCE, C | I | S, algo_twotree_allreduce, "chunks,pace",
     "TwoTreeC reduce, then TwoTreeC bcast (k chunks, alternate trees)",
     "2 (lg P + k)(alpha + n/k beta) + (lg P + k) n/k gamma"},
    {"twotree_reordered", WEFT_COLL_ALLREDUCE, C | I | S, algo_twotree_reordered_allreduce,
     "chunks,pace",
     "TwoTreeC reduce, then Reordered TwoTreeC bcast",
     "as twotree; early finishers of the reduce sit near the root in the bcast"},
    {"twotree_sc", WEFT_COLL_ALLREDUCE, C | I | S, algo_twotree_sc_allreduce, "chunks,sync",
     "TwoTreeS reduce (sync=none|colouring), then TwoTreeC bcast",
     "2 (lg P + k)(alpha + n/k beta) + ...; +1 level for P = 2^n + 1"},
    {"twotree_overlap", WEFT_COLL_ALLREDUCE, C | I | S, algo_twotree_overlap_allreduce,
     "chunks,pace",
     "TwoTreeC reduce + Reordered bcast, chunk i's bcast starting once chunk i is reduced",
     "about (2 lg P + k)(alpha + n/k beta) + ..."},
    {"butterfly", WEFT_COLL_ALLREDUCE, ALGO_NEEDS_IDEMPOTENT | C | S, algo_butterfly_allreduce, "",
     "Brooks' butterfly with virtual processes (idempotent ops)",
     "ceil(lg P)(alpha + n beta + n gamma), more on ranks that play two virtual processes"},
    {"pairwise", WEFT_COLL_ALLREDUCE, C | I | S, algo_pairwise_allreduce, "",
     "pairwise exchange: leftovers fold into the first q, butterfly on 2^k, results back",
     "(lg P + 2)(alpha + n beta) + (lg P + 1) n gamma"},
    {"dissem", WEFT_COLL_ALLREDUCE, C | S, algo_dissem_allreduce, "fanout",
     "n-way dissemination (fanout=n): exact for idempotent ops or P = (n+1)^k",
     "ceil(log_{n+1} P)(alpha + n n_bytes beta + n n_bytes gamma)", algo_dissem_usable},
    {"dissem_adapted", WEFT_COLL_ALLREDUCE, C | S | ALGO_USES_INVERSE,
     algo_dissem_adapted_allreduce, "fanout",
     "n-way dissemination adapted to non-idempotent ops (equation (8), Theorem 1); fanout unset: smallest n that works",
     "(k-1)(alpha + n n_bytes beta + n n_bytes gamma) + alpha + s n_bytes beta + (s+1) n_bytes gamma, "
     "k = ceil(log_{n+1} P), s <= n from the 5-tuple",
     algo_dissem_adapted_usable},
    {"bruck", WEFT_COLL_ALLREDUCE, C | S, algo_bruck_allreduce, "fanout",
     "Bruck & Ho's n-port global combine (fanout=n): two partial results per round, any (n, P)",
     "ceil(log_{n+1} P)(alpha + n n_bytes beta + 2 n n_bytes gamma)"},
    {"bst", WEFT_COLL_ALLREDUCE, I | S, algo_binomial_allreduce, "",
     "binomial spanning tree reduce + broadcast (the seed's tree baseline)",
     "2 ceil(lg P) (alpha + n beta) + ceil(lg P) n gamma"},
    {"hier", WEFT_COLL_ALLREDUCE, C | I | S | T, algo_hier_allreduce, "inter",
     "reduce in each node, allreduce among node leaders (inter=NAME), bcast in each node",
     "2 ceil(lg k)(a_node + n b_node) + cost_leaders(allreduce, N nodes)"},
    {"hier_pap", WEFT_COLL_ALLREDUCE, C | I | S | T, algo_board_build, "inter,node",
     "hier with an arrival-driven node level: a chain in arrival order inside each node to its "
     "leader (node=chain; node=leader: the node's first arrival reduces; node=twostep: its "
     "leader does), allreduce among leaders (inter=NAME), bcast in each node",
     "in each node of k: (k-1)(alpha + n beta + n gamma), of which alpha + n (beta + gamma) "
     "after its last arrival; + alpha + n beta to the leader + cost_leaders(allreduce, N nodes) "
     "+ ceil(lg k)(alpha + n beta)",
     hier_pap_usable, &hier_pap_ops},
    /* bcast */
    {"linear", WEFT_COLL_BCAST, I | S, algo_linear_bcast, "",
     "the root sends the whole buffer to every rank", "(P-1) (alpha + n beta) at the root"},
    {"linear_arena", WEFT_COLL_BCAST, I | S | ALGO_ROOT_READ_BY_ALL, algo_linear_arena_bcast,
     "stage,segment",
     "linear, the root's buffer copied once into its shared arena, where every rank reads it "
     "(from 3 ranks and 64 KiB; shared memory; segment=BYTES: copied and sent in pieces)",
     "n beta at the root, then (P-1)(alpha + n beta) over the readers' cores",
     algo_linear_arena_usable},
    {"binomial", WEFT_COLL_BCAST, I | S, algo_binomial_bcast, "",
     "binomial tree from the root", "ceil(lg P) (alpha + n beta)"},
    {"scatter_allgather", WEFT_COLL_BCAST, I | S, algo_scatter_allgather_bcast, "",
     "van de Geijn: binomial scatter of P blocks + ring allgather",
     "(lg P + P - 1) alpha + 2 (P-1)/P n beta"},
    {"pipeline", WEFT_COLL_BCAST, I | S, algo_pipeline_bcast, "chunks",
     "pipelined chain from the root (k chunks)", "(P - 2 + k)(alpha + n/k beta)"},
    {"bintree", WEFT_COLL_BCAST, I | S, algo_bintree_bcast, "chunks",
     "pipelined complete binary tree (k chunks)", "(lg P + 2k)(alpha + n/k beta)"},
    {"twotree", WEFT_COLL_BCAST, I | S, algo_twotree_bcast, "chunks",
     "TwoTreeC: even chunks down T1, odd chunks down T2",
     "(lg P + k)(alpha + n/k beta)"},
    {"twotree_reordered", WEFT_COLL_BCAST, I | S, algo_twotree_reordered_bcast, "chunks",
     "Reordered TwoTreeC", "(lg P + k)(alpha + n/k beta)"},
    {"twotree_s", WEFT_COLL_BCAST, I | S, algo_twotree_s_bcast, "chunks,sync",
     "Sanders' TwoTreeS: sync=none data-driven, sync=colouring lock-step rounds by edge colour",
     "(lg P + k)(alpha + n/k beta); +1 level for P = 2^n + 1"},
    {"hier", WEFT_COLL_BCAST, I | T, algo_hier_bcast, "inter",
     "to the root's node leader, among leaders (inter=NAME), then in each node",
     "cost_leaders(bcast, N nodes) + ceil(lg k)(a_node + n b_node)"},
    {"board", WEFT_COLL_BCAST, I | S, algo_board_build, "",
     "the root writes its slot of the shared-memory board and leaves; the others copy it (tiny n)",
     "about alpha_line per rank: one cache-line transfer, no message",
     algo_board_usable, &board_ops},
    /* reduce */
    {"linear", WEFT_COLL_REDUCE, S, algo_linear_reduce, "",
     "every rank sends to the root, which combines in rank order",
     "(P-1) (alpha + n beta + n gamma) at the root"},
    {"linear_arena", WEFT_COLL_REDUCE, S | ALGO_STAGED_INPUT, algo_linear_arena_reduce,
     "stage,segment",
     "every rank's input staged in its shared arena; rank j reduces block j from every stage in "
     "rank order and the root copies every reduced block (shared memory; stage=sent: each "
     "block staged as it is sent; segment=BYTES: block j combined a piece at a time)",
     "n beta to stage, then (P-1)(alpha + n/P beta) + (P-1)/P n gamma per rank, (P-1)(alpha + "
     "n/P beta) more at the root, no cell copies",
     algo_linear_arena_usable},
    {"binomial", WEFT_COLL_REDUCE, S, algo_binomial_reduce, "",
     "binomial tree towards the root (rank order kept for non-commutative ops)",
     "ceil(lg P) (alpha + n beta + n gamma)"},
    {"rsg", WEFT_COLL_REDUCE, C | S, algo_rsg_reduce, "",
     "Rabenseifner: reduce-scatter by recursive halving + binomial gather",
     "2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma"},
    {"pipeline", WEFT_COLL_REDUCE, C | S, algo_pipeline_reduce, "chunks",
     "pipelined chain to the root (k chunks)", "(P - 2 + k)(alpha + n/k (beta + gamma))"},
    {"bintree", WEFT_COLL_REDUCE, C | S, algo_bintree_reduce, "chunks",
     "pipelined complete binary tree (k chunks)", "(lg P + 2k)(alpha + n/k (beta + gamma))"},
    {"twotree", WEFT_COLL_REDUCE, C | S, algo_twotree_reduce, "chunks,pace",
     "TwoTreeC: even chunks up T1, odd chunks up T2", "(lg P + k)(alpha + n/k (beta + gamma))"},
    {"twotree_reordered", WEFT_COLL_REDUCE, C | S, algo_twotree_reordered_reduce, "chunks,pace",
     "Reordered TwoTreeC", "(lg P + k)(alpha + n/k (beta + gamma))"},
    {"twotree_s", WEFT_COLL_REDUCE, C | S, algo_twotree_s_reduce, "chunks,sync",
     "Sanders' TwoTreeS: sync=none or sync=colouring", "(lg P + k)(alpha + n/k (beta + gamma))"},
    {"hier", WEFT_COLL_REDUCE, C | S | T, algo_hier_reduce, "inter",
     "reduce in each node, among leaders to the root's leader (inter=NAME), then to the root",
     "ceil(lg k)(a_node + n b_node + n g) + cost_leaders(reduce, N nodes)"},
    {"board", WEFT_COLL_REDUCE, S, algo_board_build, "",
     "the others write their slots of the shared-memory board and leave; the root combines them (tiny n)",
     "about alpha_line + (P-1) n gamma at the root, no message",
     algo_board_usable, &board_ops},
    {"pap_chain", WEFT_COLL_REDUCE, C | S, algo_board_build, "",
     "a chain in arrival order: each adds its input, hands on to the next arrival and leaves; "
     "the last sends to the root (arrival-aware, large n)",
     "(P-1)(alpha + n beta + n gamma) + alpha + n beta; after the last arrival: 2 alpha + n (2 beta + gamma)",
     arrival_usable, &pap_chain_ops},
    /* reduce_scatter (n = P * count elements in bytes) */
    {"ring", WEFT_COLL_REDUCE_SCATTER, C, algo_ring_reduce_scatter, "",
     "P-1 steps around a ring", "(P-1) alpha + (P-1)/P n (beta + gamma)"},
    {"recursive_halving", WEFT_COLL_REDUCE_SCATTER, C | S, algo_rhalving_reduce_scatter, "",
     "recursive halving over groups of blocks (fold for P not a power of two)",
     "lg P alpha + (P-1)/P n (beta + gamma)"},
    {"pairwise", WEFT_COLL_REDUCE_SCATTER, C, algo_pairwise_reduce_scatter, "",
     "round k: send block r+k to r+k, reduce the one from r-k",
     "(P-1) alpha + (P-1)/P n (beta + gamma)"},
    {"linear", WEFT_COLL_REDUCE_SCATTER, 0, algo_linear_reduce_scatter, "",
     "each rank sends block j to rank j, which combines them in rank order",
     "(P-1) alpha + (P-1)/P n (beta + gamma)"},
    {"board", WEFT_COLL_REDUCE_SCATTER, S, algo_board_build, "",
     "each rank writes its whole input to its slot of the shared-memory board and combines its "
     "block of every slot in rank order (tiny n)",
     "about alpha_line + (P-1)/P n beta + (P-1)/P n gamma: one wait per peer, no message",
     algo_board_usable, &board_ops},
    /* allgather (n = P * count elements in bytes) */
    {"ring", WEFT_COLL_ALLGATHER, S, algo_ring_allgather, "", "P-1 steps around a ring",
     "(P-1) alpha + (P-1)/P n beta"},
    {"recursive_doubling", WEFT_COLL_ALLGATHER, S, algo_rd_allgather, "",
     "lg P exchanges of doubling size (fold for P not a power of two)",
     "lg P alpha + (P-1)/P n beta"},
    {"bruck", WEFT_COLL_ALLGATHER, S, algo_bruck_allgather, "",
     "Bruck: ceil(lg P) rounds for any P, then a local rotation",
     "ceil(lg P) alpha + (P-1)/P n beta"},
    {"board", WEFT_COLL_ALLGATHER, S, algo_board_build, "",
     "each rank writes its block to its slot of the shared-memory board and copies every "
     "other slot (tiny blocks)",
     "about alpha_line + (P-1)/P n beta: one wait per peer, no message", algo_board_usable,
     &board_ops},
    /* scatter / gather (n = P * count elements in bytes) */
    {"binomial", WEFT_COLL_SCATTER, S, algo_binomial_scatter, "", "binomial tree from the root",
     "ceil(lg P) alpha + (P-1)/P n beta"},
    {"linear", WEFT_COLL_SCATTER, S, algo_linear_scatter, "", "the root sends each block",
     "(P-1) alpha + (P-1)/P n beta"},
    {"binomial", WEFT_COLL_GATHER, S, algo_binomial_gather, "", "binomial tree to the root",
     "ceil(lg P) alpha + (P-1)/P n beta"},
    {"linear", WEFT_COLL_GATHER, S, algo_linear_gather, "", "each rank sends to the root",
     "(P-1) alpha + (P-1)/P n beta"},
    /* barrier */
    {"dissemination", WEFT_COLL_BARRIER, 0, algo_dissemination_barrier, "",
     "round k: signal r+2^k, wait for r-2^k", "ceil(lg P) alpha"},
    {"board", WEFT_COLL_BARRIER, 0, algo_board_build, "",
     "each rank writes its slot of the shared-memory board and waits until every other slot "
     "holds the call",
     "about alpha_line: one wait per rank, no message", algo_board_usable, &board_ops},
};

#undef C
#undef I
#undef S
#undef T

const algo_t *algo_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

static const char *const coll_names[WEFT_COLL_COUNT] = {
    "allreduce", "bcast", "reduce", "reduce_scatter", "allgather", "scatter", "gather", "barrier"};

const char *weft_coll_name(weft_coll_t coll)
{
    return (unsigned)coll < WEFT_COLL_COUNT ? coll_names[coll] : "invalid";
}

const char *weft_algorithm_name(weft_coll_t coll, int i)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t k = 0; k < n; k++)
        if (t[k].coll == coll && i-- == 0)
            return t[k].name;
    return NULL;
}

int weft_algorithm_properties(weft_coll_t coll, const char *name)
{
    const algo_t *al = algo_find(coll, name);
    if (!al)
        return -1;
    /* the public bits equal the registry's */
    return (int)(al->flags & (ALGO_NEEDS_COMMUTATIVE | ALGO_NEEDS_IDEMPOTENT | ALGO_IDENTICAL));
}

weft_coll_t coll_from_name(const char *name)
{
    for (int i = 0; i < WEFT_COLL_COUNT; i++)
        if (name && !strcmp(name, coll_names[i]))
            return (weft_coll_t)i;
    return WEFT_COLL_COUNT;
}

const algo_t *algo_find(weft_coll_t coll, const char *name)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].coll == coll && name && !strcmp(t[i].name, name))
            return &t[i];
    return NULL;
}

/* Where an algorithm is made of others (reduce_bcast's reduce and bcast,
 * hier's algorithm among node leaders), the part that decides a property. */
static const algo_t *part_of(const algo_t *al, const coll_args_t *a)
{
    if (al->build == algo_reduce_bcast_allreduce)
        return algo_find(WEFT_COLL_REDUCE, reduce_bcast_part_name(a, WEFT_COLL_REDUCE));
    if (al->flags & ALGO_TOPOLOGY) {
        coll_args_t own = *a;
        own.coll = al->coll;
        return algo_find(al->coll, hier_inter_name(&own));
    }
    return NULL;
}

unsigned algo_effective_flags(const algo_t *al, const coll_args_t *a)
{
    const algo_t *part = part_of(al, a);
    unsigned f = al->flags;
    if (!part)
        return f;
    f |= part->flags & (ALGO_NEEDS_COMMUTATIVE | ALGO_NEEDS_IDEMPOTENT);
    /* hier allreduce: every node broadcasts its leader's result, so ranks
     * agree bitwise exactly when the leaders do */
    if ((al->flags & ALGO_TOPOLOGY) && al->coll == WEFT_COLL_ALLREDUCE &&
        !(part->flags & ALGO_IDENTICAL))
        f &= ~ALGO_IDENTICAL;
    return f;
}

/* The call as the leaders of a hierarchical algorithm see it. */
static coll_args_t leaders_args(const coll_args_t *a)
{
    coll_args_t sub = *a;
    int nn = a->node_of ? a->nnodes : 1;
    sub.nrank = nn;
    sub.rank = a->node_of ? a->node_of[a->rank] : 0;
    sub.root = a->node_of ? a->node_of[a->root] : 0;
    sub.node_of = NULL;
    sub.nnodes = 1;
    sub.groups = NULL;
    memset(&sub.params, 0, sizeof sub.params);
    return sub;
}

/* 0 if al can serve the call, else -1 with the reason in why. */
static int usable_why(const algo_t *al, const coll_args_t *a, char *why, size_t n)
{
    if (al->usable && al->usable(a, why, n))
        return -1;
    const algo_t *inter = al->flags & ALGO_TOPOLOGY ? part_of(al, a) : NULL;
    if (inter) {
        coll_args_t sub = leaders_args(a);
        char sw[200];
        if (usable_why(inter, &sub, sw, sizeof sw)) {
            snprintf(why, n, "%s hier: among its %d node leaders, %s", weft_coll_name(al->coll),
                     sub.nrank, sw);
            return -1;
        }
    }
    unsigned f = algo_effective_flags(al, a);
    const char *via = al->build == algo_reduce_bcast_allreduce || (al->flags & ALGO_TOPOLOGY)
                          ? " (through its part)" : "";
    if ((f & ALGO_NEEDS_COMMUTATIVE) && !a->commutative) {
        snprintf(why, n, "%s %s needs a commutative op%s (it combines contributions out of "
                 "rank order)", weft_coll_name(al->coll), al->name, via);
        return -1;
    }
    if ((f & ALGO_NEEDS_IDEMPOTENT) && !a->idempotent) {
        snprintf(why, n, "%s %s needs an idempotent op%s (min, max, band, bor, land, lor or a "
                 "user op declared idempotent) for P=%d", weft_coll_name(al->coll), al->name,
                 via, a->nrank);
        return -1;
    }
    return 0;
}

/* Names of the algorithms of coll that can serve this very call, for advice. */
static void alternatives(const coll_args_t *a, char *out, size_t n)
{
    size_t cnt, used = 0;
    const algo_t *t = algo_table(&cnt);
    char why[256];
    out[0] = '\0';
    for (size_t i = 0; i < cnt && used + 32 < n; i++) {
        coll_args_t plain = *a;
        memset(&plain.params, 0, sizeof plain.params);
        if (t[i].coll == a->coll && !usable_why(&t[i], &plain, why, sizeof why))
            used += (size_t)snprintf(out + used, n - used, "%s%s", used ? ", " : "", t[i].name);
    }
}

/* A part of a composed algorithm that is not a schedule (the board, the
 * arrival-driven ones): its
 * steps cannot be spliced into the whole, so it is refused by name. */
static bool board_part(const algo_t *al, const coll_args_t *a, char *why, size_t n)
{
    const algo_t *parts[2] = {NULL, NULL};
    const char *key[2] = {"reduce", "bcast"};
    if (al->build == algo_reduce_bcast_allreduce) {
        parts[0] = algo_find(WEFT_COLL_REDUCE, reduce_bcast_part_name(a, WEFT_COLL_REDUCE));
        parts[1] = algo_find(WEFT_COLL_BCAST, reduce_bcast_part_name(a, WEFT_COLL_BCAST));
    } else if (al->flags & ALGO_TOPOLOGY) {
        parts[0] = part_of(al, a), key[0] = "inter";
    }
    for (int k = 0; k < 2; k++)
        if (parts[k] && parts[k]->board) {
            snprintf(why, n, "%s: %s=%s is not a schedule (it runs on the shared-memory board), so it "
                     "cannot be a part of one", al->name, key[k], parts[k]->name);
            return true;
        }
    return false;
}

int algo_usable_why(const algo_t *al, const coll_args_t *a, char *why, size_t n)
{
    if (al->build == algo_reduce_bcast_allreduce &&
        (!algo_find(WEFT_COLL_REDUCE, reduce_bcast_part_name(a, WEFT_COLL_REDUCE)) ||
         !algo_find(WEFT_COLL_BCAST, reduce_bcast_part_name(a, WEFT_COLL_BCAST)))) {
        snprintf(why, n, "reduce_bcast: unknown reduce= or bcast= algorithm");
        return -1;
    }
    if (board_part(al, a, why, n))
        return -1;
    return usable_why(al, a, why, n);
}

int algo_check_usable(const algo_t *al, const coll_args_t *a)
{
    if (al->build == algo_reduce_bcast_allreduce) {
        const char *rn = reduce_bcast_part_name(a, WEFT_COLL_REDUCE);
        const char *bn = reduce_bcast_part_name(a, WEFT_COLL_BCAST);
        if (!algo_find(WEFT_COLL_REDUCE, rn))
            return weft_error(WEFT_EINVAL, "reduce_bcast: unknown reduce algorithm '%s'", rn);
        if (!algo_find(WEFT_COLL_BCAST, bn))
            return weft_error(WEFT_EINVAL, "reduce_bcast: unknown bcast algorithm '%s'", bn);
    }
    char why[256], alt[256];
    if (board_part(al, a, why, sizeof why))
        return weft_error(WEFT_EINVAL, "%s", why);
    if (!usable_why(al, a, why, sizeof why))
        return WEFT_OK;
    alternatives(a, alt, sizeof alt);
    return weft_error(WEFT_EINVAL, "%s; algorithms that serve this call: %s", why,
                      alt[0] ? alt : "none (use another collective)");
}

/* The error of a failed build of al, said. */
static int build_failed(const algo_t *al, int rc)
{
    return weft_error(rc, "building the %s %s schedule failed (error %d)",
                      weft_coll_name(al->coll), al->name, rc);
}

int algo_build_with(const algo_t *al, const coll_args_t *a, sched_t *b, sched_img_t **out)
{
    sched_reset(b, a->nrank, a->rank);
    int rc = al->build(b, a);
    if (!rc)
        rc = sched_commit(b, out);
    return rc ? build_failed(al, rc) : WEFT_OK;
}

int algo_build_view(const algo_t *al, const coll_args_t *a, sched_t *b, sched_img_t *view)
{
    sched_reset(b, a->nrank, a->rank);
    int rc = al->build(b, a);
    if (!rc)
        rc = sched_view(b, view);
    return rc ? build_failed(al, rc) : WEFT_OK;
}

int algo_build(const algo_t *al, const coll_args_t *a, sched_img_t **out)
{
    sched_t b;
    sched_init(&b, a->nrank, a->rank);
    int rc = algo_build_with(al, a, &b, out);
    sched_free(&b);
    return rc;
}

static bool key_allowed(const char *list, const char *key, size_t klen)
{
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == klen && !strncmp(p, key, klen))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

/* A decimal number of digits only ("+5", " 5" and "5 " are not numbers
 * here); -1 if it is not one or is above hi. */
static long plain_number(const char *v, long hi)
{
    long x = 0;
    if (!*v)
        return -1;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || x > hi)
            return -1;
        x = x * 10 + (*v - '0');
    }
    return x > hi ? -1 : x;
}

/* The value of one parameter, key k of length kl (already allowed for
 * al), into p. */
static int parse_param(const algo_t *al, const char *k, size_t kl, const char *val,
                       algo_params_t *p)
{
    if (kl == 6 && !strncmp(k, "chunks", 6)) {
        long v = plain_number(val, 16384);
        if (v < 1)
            return weft_error(WEFT_EINVAL, "chunks=%s: expected an integer 1..16384", val);
        p->chunks = (int)v;
    } else if (kl == 7 && !strncmp(k, "segment", 7)) {
        uint64_t v = 0;
        const char *end = size_prefix(val, &v);
        if (!end || *end || v == 0 || v > (1ull << 40))
            return weft_error(WEFT_EINVAL, "segment=%s: expected a size in bytes, 1..1T "
                              "(K, M and G allowed)", val);
        p->segment = v;
    } else if (kl == 9 && !strncmp(k, "threshold", 9)) {
        long v = plain_number(val, 100000000);
        if (v < 0)
            return weft_error(WEFT_EINVAL, "threshold=%s: expected an arrival spread in "
                              "microseconds, 0..100000000", val);
        p->threshold = (int)v + 1;
    } else if (kl == 6 && !strncmp(k, "fanout", 6)) {
        /* auto: the algorithm's default (dissem_adapted: the smallest
         * n with a tuple; dissem, bruck: 1) */
        long v = strcmp(val, "auto") ? plain_number(val, 1024) : 0;
        if (v < 0 || (v == 0 && strcmp(val, "auto")))
            return weft_error(WEFT_EINVAL, "fanout=%s: expected an integer 1..1024 or auto",
                              val);
        p->fanout = (int)v;
    } else if (kl == 6 && !strncmp(k, "reduce", 6)) {
        if (!algo_find(WEFT_COLL_REDUCE, val))
            return weft_error(WEFT_EINVAL, "reduce=%s: no such reduce algorithm", val);
        strcpy(p->reduce, val);
    } else if (kl == 4 && !strncmp(k, "pace", 4)) {
        long v = strcmp(val, "auto") ? plain_number(val, 16384) : 0;
        if (v < 0)
            return weft_error(WEFT_EINVAL, "pace=%s: expected an integer 0..16384 or auto", val);
        p->pace = strcmp(val, "auto") ? (int)v : -1;
    } else if (kl == 4 && !strncmp(k, "sync", 4)) {
        if (!strcmp(val, "none"))
            p->sync = 0;
        else if (!strcmp(val, "colouring") || !strcmp(val, "coloring"))
            p->sync = 1;
        else
            return weft_error(WEFT_EINVAL, "sync=%s: expected none or colouring", val);
    } else if (kl == 4 && !strncmp(k, "node", 4)) {
        if (!strcmp(val, "chain"))
            p->node = NODE_LEVEL_CHAIN;
        else if (!strcmp(val, "leader"))
            p->node = NODE_LEVEL_LEADER;
        else if (!strcmp(val, "twostep"))
            p->node = NODE_LEVEL_TWOSTEP;
        else
            return weft_error(WEFT_EINVAL, "node=%s: expected chain, leader or twostep", val);
    } else if (kl == 5 && !strncmp(k, "stage", 5)) {
        if (!strcmp(val, "stream"))
            p->stage = STAGE_STREAM;
        else if (!strcmp(val, "plain"))
            p->stage = STAGE_PLAIN;
        else if (!strcmp(val, "sent") && al->coll != WEFT_COLL_BCAST)
            p->stage = STAGE_SENT;
        else if (!strcmp(val, "sent"))
            return weft_error(WEFT_EINVAL, "stage=sent: the bcast's root stages its buffer "
                              "as it sends it with segment=BYTES (pieces of that many bytes)");
        else
            return weft_error(WEFT_EINVAL, "stage=%s: expected stream, plain or sent (allreduce "
                              "and reduce)", val);
    } else if (kl == 5 && !strncmp(k, "inter", 5)) {
        weft_coll_t ic = al->coll;
        if (!algo_find(ic, val) || !strcmp(val, "hier"))
            return weft_error(WEFT_EINVAL, "inter=%s: no such %s algorithm for the leaders",
                              val, weft_coll_name(ic));
        strcpy(p->inter, val);
    } else if (kl == 5 && !strncmp(k, "bcast", 5)) {
        if (!algo_find(WEFT_COLL_BCAST, val))
            return weft_error(WEFT_EINVAL, "bcast=%s: no such bcast algorithm", val);
        strcpy(p->bcast, val);
    }
    return WEFT_OK;
}

int algo_parse_params(const algo_t *al, const char *text, algo_params_t *p)
{
    memset(p, 0, sizeof *p);
    if (!text || !*text)
        return WEFT_OK;
    const char *q = text;
    char seen[128] = ","; /* keys given so far, ",k1,k2," */
    while (*q) {
        const char *e = strchr(q, ',');
        size_t l = e ? (size_t)(e - q) : strlen(q);
        if (l == 0 || (e && !e[1]))
            return weft_error(WEFT_EINVAL, "parameters '%s' of %s: an empty item (no blanks or "
                              "stray commas: key=value,key=value)", text, al->name);
        const char *eq = memchr(q, '=', l);
        if (!eq)
            return weft_error(WEFT_EINVAL, "parameter '%.*s' of %s is not key=value", (int)l, q,
                              al->name);
        size_t kl = (size_t)(eq - q), vl = l - kl - 1;
        char val[32];
        if (vl == 0 || vl >= sizeof val)
            return weft_error(WEFT_EINVAL, "parameter '%.*s' of %s has a bad value", (int)l, q,
                              al->name);
        memcpy(val, eq + 1, vl);
        val[vl] = '\0';
        if (!key_allowed(al->params, q, kl))
            return weft_error(WEFT_EINVAL, "%s %s takes no parameter '%.*s'%s%s",
                              weft_coll_name(al->coll), al->name, (int)kl, q,
                              al->params[0] ? "; it takes: " : "", al->params);
        char keyc[24];
        snprintf(keyc, sizeof keyc, ",%.*s,", (int)kl, q);
        if (strstr(seen, keyc))
            return weft_error(WEFT_EINVAL, "parameter '%.*s' of %s given twice", (int)kl, q,
                              al->name);
        if (strlen(seen) + kl + 2 < sizeof seen)
            strcat(seen, keyc + 1);
        int rc = parse_param(al, q, kl, val, p);
        if (rc)
            return rc;
        if (!e)
            break;
        q = e + 1;
    }
    return WEFT_OK;
}
