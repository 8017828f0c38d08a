/* sched.h — the schedule: one rank's part of a collective as data.
 *
 * A schedule is a list of steps (send, receive, receive-and-reduce, local
 * reduce, copy, no-op), each naming a peer, a tag and buffer regions, plus
 * dependencies between steps.  Regions are (buffer id, offset, length) in
 * elements, never pointers, so one schedule serves any datatype of that size
 * class and can be executed, simulated, checked and counted alike.
 *
 * Buffers: BUF_IN is the caller's input (read only), BUF_OUT the caller's
 * output, BUF_TMP scratch of sched->tmp_len elements owned by the engine.
 * Under WEFT_IN_PLACE, BUF_IN aliases part of BUF_OUT (see exec.h).
 *
 * Execution model (what the checker proves and the engine relies on): a step
 * starts when all its dependencies have completed.  A send completes when
 * its data has been handed over (possibly only when the receiver has taken
 * it), a receive when its data is in place.  While a send is in flight its
 * source region must not be written; while a receive is in flight its
 * destination must be neither read nor written by other steps. */
#ifndef WEFT_SCHED_H
#define WEFT_SCHED_H

#include "../core/tool_api.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum step_kind {
    STEP_NOP,         /* joins dependencies */
    STEP_SEND,        /* src region -> peer */
    STEP_RECV,        /* peer -> dst region */
    STEP_RECV_REDUCE, /* dst = dst (op) incoming, or incoming (op) dst */
    STEP_REDUCE,      /* dst = dst (op) src, or src (op) dst, or dst (op^-1) src */
    STEP_COPY,        /* dst = src */
};

enum buf_id { BUF_IN = 0, BUF_OUT = 1, BUF_TMP = 2, BUF_COUNT = 3 };

/* flags */
#define STEP_SRC_LEFT 1u /* reduce with the incoming/src operand on the left */
#define STEP_INVERSE 2u  /* local reduce: take src's contributions out of dst
                          * with the op's exact inverse (coll_args.invertible) */

typedef struct step {
    uint8_t kind;
    uint8_t src_buf, dst_buf;
    uint8_t flags;
    int32_t peer;
    uint32_t tag;
    uint32_t ndeps;     /* dependencies (CSR in sched.dep) */
    uint32_t dep_first;
    uint64_t src_off, dst_off, len; /* elements */
} step_t;

typedef struct region {
    uint8_t buf;
    uint64_t off, len;
} region_t;

static inline region_t reg(int buf, uint64_t off, uint64_t len)
{
    region_t r = {(uint8_t)buf, off, len};
    return r;
}

typedef struct sched {
    step_t *steps;
    uint32_t nsteps, cap;
    /* dependencies: CSR after sched_commit (dep[dep_first..+ndeps]) and the
     * reverse edges (succ[succ_first[i]..succ_first[i+1]]) */
    uint32_t *dep;
    uint32_t *succ_first, *succ;
    /* build-time edge list (step, depends-on) */
    uint32_t (*edges)[2];
    uint32_t nedges, ecap;
    uint32_t round_join;  /* steps added now depend on this; UINT32_MAX none */
    uint32_t round_start; /* first step of the current round */
    uint64_t tmp_len;     /* scratch elements */
    uint32_t tag_mul, tag_add; /* a builder's tag t becomes t * tag_mul + tag_add */
    uint32_t max_tag;     /* largest tag used + 1 */
    int nrank, rank;      /* who this schedule is for */
    /* Build-time translation for composing algorithms on sub-groups: peers
     * a builder names are indices into peer_map, and its regions of buffer
     * b land in remap_buf[b] at remap_off[b] + offset. */
    const int *peer_map;
    uint8_t remap_buf[BUF_COUNT];
    uint64_t remap_off[BUF_COUNT];
    int err;              /* first build error (WEFT_ENOMEM...) */
    bool committed;
} sched_t;

#define SCHED_NONE UINT32_MAX

WEFT_TOOL_API void sched_init(sched_t *s, int nrank, int rank);
WEFT_TOOL_API void sched_free(sched_t *s);

/* Builders append steps; each returns the new step's index.  Every step
 * depends on the current round's join (see sched_round). */
uint32_t sched_send(sched_t *s, int peer, uint32_t tag, region_t src);
uint32_t sched_recv(sched_t *s, int peer, uint32_t tag, region_t dst);
uint32_t sched_recv_reduce(sched_t *s, int peer, uint32_t tag, region_t dst,
                           bool incoming_left);
uint32_t sched_reduce(sched_t *s, region_t src, region_t dst, bool src_left);
/* dst = dst (op^-1) src; src's contributors must all be in dst. */
uint32_t sched_reduce_inverse(sched_t *s, region_t src, region_t dst);
uint32_t sched_copy(sched_t *s, region_t src, region_t dst);
uint32_t sched_nop(sched_t *s);
/* step waits for `on` as well (on < step). */
void sched_depend(sched_t *s, uint32_t step, uint32_t on);
/* Close the current round: later steps depend on every step added so far. */
void sched_round(sched_t *s);
/* Reserve n scratch elements; returns their offset in BUF_TMP. */
uint64_t sched_tmp(sched_t *s, uint64_t n);
/* Tag spaces for the parts of a composed schedule.  Part k of n gets the
 * tags t * n + k of the space it sits in (outer: the space the composing
 * builder started in, sched_space(s)), so the spaces interleave: the same
 * on every rank whatever each rank builds in them (a space starting at a
 * per-rank value, such as the first part's largest tag, would let ranks
 * disagree), nesting without collisions, and growing the largest tag only
 * n-fold. */
typedef struct tagspace {
    uint32_t mul, add;
} tagspace_t;
static inline tagspace_t sched_space(const sched_t *s)
{
    tagspace_t t = {s->tag_mul, s->tag_add};
    return t;
}
void sched_part(sched_t *s, tagspace_t outer, unsigned k, unsigned n);
void sched_space_restore(sched_t *s, tagspace_t t);
/* Region remapping for composed parts (see remap_buf). */
void sched_remap(sched_t *s, int from, int to, uint64_t off);
void sched_remap_reset(sched_t *s);

/* Build the dependency tables; after this the schedule is read-only. */
int sched_commit(sched_t *s);

WEFT_TOOL_API const char *step_kind_name(int kind);
WEFT_TOOL_API const char *buf_name(int buf);

#endif
