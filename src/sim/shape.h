/* shape.h — programs shared by ranks of the same shape.
 *
 * Most ranks of a regular algorithm run the same program but for their
 * peers: every inner rank of a binomial tree with two children, every rank
 * of a ring but the ends, every rank of recursive doubling.  The simulator
 * keeps one immutable copy of such a program, its shape, in which a peer is
 * a slot (the peers numbered in order of first appearance), and per rank
 * only what changes as it runs: the peers of its slots, two bits per
 * operation and the FIFOs of its posted receives.  A rank's state then
 * costs a quarter byte an operation, not 30 or more, and the operations
 * and edges every event reads are a few shapes that stay in the cache, not
 * one cold copy per rank (the misses that held million-rank runs to 3 M
 * events/s).
 *
 * A program with more than SHAPE_MAX_PEERS distinct peers (a direct or
 * linear algorithm at scale) keeps its own peers and is not shared. */
#ifndef WEFT_SIM_SHAPE_H
#define WEFT_SIM_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

#define SHAPE_MAX_PEERS 64
/* Shapes nobody runs are kept for the ranks still to start, up to this
 * many bytes; beyond, they go as unshared ones do. */
#define SHAPE_IDLE_MAX ((size_t)64 << 20)
#define SHAPE_NIL UINT32_MAX

typedef struct sim_shape {
    sim_prog_t p;            /* ops (peer: a slot, or a rank if !slotted),
                              * successors and the sorted receive keys
                              * (slot << 32 | tag) */
    uint32_t *kinfo;         /* per key: its one receive, or SHAPE_MULTI
                              * and its number among the keys of several */
    uint32_t nmulti;
    uint64_t hash;
    uint32_t refs;           /* ranks running it */
    bool shared;             /* it has had two ranks: kept when idle */
    bool tabled;             /* in the table (else freed when idle) */
    bool slotted;            /* peers are slots */
    size_t bytes;
    struct sim_shape *next;  /* the table's chain */
} sim_shape_t;

/* Op i of a program with rounds ends its step (it is not the receive of a
 * receive-and-reduce). */
static inline bool sim_ends_step(const sim_prog_t *p, uint32_t i)
{
    return !(p->ops[i].flags & SIM_PAIRED) || p->ops[i].kind != SIM_RECV;
}
/* The steps of round k: its operations that end one. */
static inline uint32_t sim_round_steps(const sim_prog_t *p, uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t i = p->round_first[k]; i < p->round_first[k + 1]; i++)
        n += sim_ends_step(p, i);
    return n;
}

/* A running rank: its shape and one block of what is its own: two bits
 * per operation (its state, below), the FIFO head and tail of each key
 * of several receives (a key of one needs none: its receive is posted or
 * not), the peers of the slots and, above 8 peers, (rank, slot) pairs
 * sorted by rank.  Two bits, not a 4-byte counter, because a pipelined
 * algorithm at weft's default chunk count has thousands of operations a
 * rank: at 2^24 ranks a counter each would need some 130 GiB. */
typedef struct sim_rank_prog {
    sim_shape_t *sh;
    uint32_t *mem;
    uint32_t npeers;
    /* the simulator's, beside the handle it reads at every event anyway:
     * operations not yet done, and in a program with rounds (sim.h) the
     * rank's round and its steps not yet done (an op is released, so done,
     * only in its own round, and the round ends only once they all are:
     * the op that ends the round is in it) */
    uint32_t left, round, round_left;
} sim_rank_prog_t;

/* An operation's state.  SHAPE_ONE: one edge left when it has at most
 * two; with more, its count lives outside the block (loggops.c: only
 * joins, which are few).  SHAPE_ZERO: released (and for a receive, taken
 * or not yet posted).  SHAPE_POSTED: a receive waiting for its message. */
enum { SHAPE_INIT = 0, SHAPE_ONE = 1, SHAPE_ZERO = 2, SHAPE_POSTED = 3 };
#define SHAPE_MULTI 0x80000000u

/* The table of shapes, and where the ranks' own blocks come from: up to
 * SHAPE_SLAB_MAX bytes, from slabs carved in 16-byte classes and reused
 * through a free list per class (no malloc or free per rank: at millions
 * of ranks, freeing them in finishing order cost a fifth of the run in the
 * allocator's coalescing); larger, from malloc. */
#define SHAPE_SLAB_MAX 1024
/* The largest slab: one huge page (bigmem.h), the ranks' blocks read at
 * random */
#define SHAPE_SLAB ((size_t)2 << 20)
typedef struct sim_shapes {
    sim_shape_t **bucket;
    size_t nbucket, count;
    size_t idle_bytes; /* shapes kept with no rank running them */
    void *free_block[SHAPE_SLAB_MAX / 16];
    char *slab_next;
    size_t slab_left;
    void **slabs;
    size_t nslabs, slabcap;
} sim_shapes_t;

/* Takes rank's freshly built program (its peers are ranks) and makes it
 * the rank's: finds its shape in the table or makes a new one (the program
 * then lives on as the shape, else it is freed).  *bytes grows by what the
 * rank and a new shape hold.  0 or WEFT_ENOMEM. */
int sim_shape_adopt(sim_shapes_t *t, sim_prog_t *built, sim_rank_prog_t *rp, ssize_t *bytes);
/* The same, but the program stays the rank's own (a shape of one). */
int sim_shape_adopt_private(sim_shapes_t *t, sim_prog_t *built, sim_rank_prog_t *rp,
                            ssize_t *bytes);
/* The rank has finished: frees its state and, when nobody runs it and it
 * was never shared, its shape. */
void sim_shape_release(sim_shapes_t *t, sim_rank_prog_t *rp, ssize_t *bytes);
void sim_shapes_free(sim_shapes_t *t);

static inline const sim_op_t *rp_ops(const sim_rank_prog_t *rp) { return rp->sh->p.ops; }
static inline uint32_t rp_code_words(uint32_t nops) { return (nops + 15) / 16; }
static inline unsigned rp_state(const sim_rank_prog_t *rp, uint32_t i)
{
    return rp->mem[i >> 4] >> (i & 15) * 2 & 3;
}
static inline void rp_set_state(const sim_rank_prog_t *rp, uint32_t i, unsigned st)
{
    uint32_t *w = &rp->mem[i >> 4], shift = (i & 15) * 2;
    *w = (*w & ~(3u << shift)) | st << shift;
}
static inline uint32_t *rp_mhead(const sim_rank_prog_t *rp)
{
    return rp->mem + rp_code_words(rp->sh->p.nops);
}
static inline uint32_t *rp_mtail(const sim_rank_prog_t *rp)
{
    return rp_mhead(rp) + rp->sh->nmulti;
}
static inline const uint32_t *rp_peers(const sim_rank_prog_t *rp)
{
    return rp_mtail(rp) + rp->sh->nmulti;
}
/* The rank behind op's peer field. */
static inline int32_t rp_peer(const sim_rank_prog_t *rp, const sim_op_t *op)
{
    return rp->sh->slotted ? (int32_t)rp_peers(rp)[op->peer] : op->peer;
}
/* The index of the rank's receive key (src, tag), or SHAPE_NIL. */
uint32_t rp_key_find(const sim_rank_prog_t *rp, uint32_t src, uint32_t tag);

#endif
