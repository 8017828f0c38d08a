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

/* A step as builders make it and readers see it (sched_step decodes a
 * committed image's steps into this).  A step of round r > 0 starts only
 * when every step of round r - 1 has completed (and with it every earlier
 * round), and when its ndeps explicit dependencies have. */
typedef struct step {
    uint8_t kind;
    uint8_t src_buf, dst_buf;
    uint8_t flags;
    int32_t peer;
    uint32_t tag;
    uint32_t ndeps; /* explicit dependencies (sched_depend) */
    uint32_t round;
    uint64_t src_off, dst_off, len; /* elements */
} step_t;

/* 16 bytes, so that it is passed in two registers: as 24 (a byte and two
 * words) every builder call took it through the stack, written field by
 * field and read back in 16-byte pieces, which stalled on store forwarding
 * (a tenth of a million-rank simulation's time). */
typedef struct region {
    uint64_t off;
    uint64_t len : 62; /* elements */
    uint64_t buf : 2;  /* enum buf_id */
} region_t;

static inline region_t reg(int buf, uint64_t off, uint64_t len)
{
    region_t r = {off, len, (unsigned)buf & 3};
    return r;
}

/* The builder: what algorithms append to.  Caller-owned and reusable:
 * sched_reset keeps its memory for the next rank's schedule, so building
 * millions of ranks' schedules costs no allocation per rank. */
typedef struct sched {
    step_t *steps;
    uint32_t nsteps, cap;
    uint32_t (*edges)[2]; /* explicit dependencies (step, depends-on) */
    uint32_t nedges, ecap;
    uint32_t round;       /* the round steps added now belong to */
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
    uint32_t *view;       /* sched_view's tables, kept for the next */
    size_t view_cap;
} sched_t;

/* The committed schedule: one allocation of exact size, read-only, read
 * through sched_step and the tables below by the engine, the checker and
 * the simulator alike.
 *
 * Steps are 24 bytes (sched_cstep_t) when every offset and length fits 32
 * bits, every peer 31 and every explicit dependency count 23 (the image is
 * then "narrow"), else full step_t.  Rounds replace the join steps a
 * round-structured builder used to need: round r's steps are
 * [round_first[r], round_first[r + 1]).  Explicit dependencies are kept
 * as successor lists (CSR), absent when there are none. */
typedef struct sched_cstep {
    uint32_t head;  /* kind:3 | flags:2 | buf:2 | buf2:2 | ndeps:23 */
    uint32_t round;
    uint32_t len;
    uint32_t off;   /* send: src_off; receive: dst_off; reduce, copy: src_off */
    uint32_t a, b;  /* communication: peer, tag; reduce, copy: dst_off, 0 */
} sched_cstep_t;

typedef struct sched_img {
    uint32_t nsteps, nrounds, nedges;
    uint32_t max_tag; /* largest tag used + 1 */
    uint32_t nrecvs;  /* receive steps (plain or reducing) */
    uint64_t tmp_len; /* scratch elements */
    int32_t nrank, rank;
    bool narrow;
    size_t bytes;     /* the whole allocation */
    const void *steps;           /* nsteps sched_cstep_t (narrow) or step_t */
    const uint32_t *round_first; /* nrounds + 1 */
    const uint32_t *succ_first;  /* nsteps + 1; NULL when nedges is 0 */
    const uint32_t *succ;        /* nedges */
} sched_img_t;

#define CSTEP_NDEPS_MAX ((1u << 23) - 1)

/* A step that moves a message (a peer and a tag), not a local one. */
static inline bool step_kind_is_comm(int kind)
{
    return kind == STEP_SEND || kind == STEP_RECV || kind == STEP_RECV_REDUCE;
}

static inline int cstep_kind(const sched_cstep_t *c) { return (int)(c->head & 7); }

/* Step i's kind alone, without decoding the rest of a compact step. */
static inline int sched_step_kind(const sched_img_t *im, uint32_t i)
{
    return im->narrow ? cstep_kind((const sched_cstep_t *)im->steps + i)
                      : ((const step_t *)im->steps)[i].kind;
}

static inline step_t sched_step(const sched_img_t *im, uint32_t i)
{
    if (!im->narrow)
        return ((const step_t *)im->steps)[i];
    const sched_cstep_t *c = (const sched_cstep_t *)im->steps + i;
    step_t st;
    st.kind = (uint8_t)cstep_kind(c);
    st.flags = (uint8_t)(c->head >> 3 & 3);
    st.ndeps = c->head >> 9;
    st.round = c->round;
    st.len = c->len;
    uint8_t b1 = (uint8_t)(c->head >> 5 & 3), b2 = (uint8_t)(c->head >> 7 & 3);
    if (step_kind_is_comm(st.kind)) {
        bool send = st.kind == STEP_SEND;
        st.peer = (int32_t)c->a;
        st.tag = c->b;
        st.src_buf = send ? b1 : 0, st.src_off = send ? c->off : 0;
        st.dst_buf = send ? 0 : b1, st.dst_off = send ? 0 : c->off;
    } else {
        st.peer = -1, st.tag = 0;
        st.src_buf = b1, st.src_off = c->off;
        st.dst_buf = b2, st.dst_off = c->a;
    }
    return st;
}

static inline uint32_t sched_step_round(const sched_img_t *im, uint32_t i)
{
    return im->narrow ? ((const sched_cstep_t *)im->steps)[i].round
                      : ((const step_t *)im->steps)[i].round;
}

/* What step i waits for before it may start: its explicit dependencies,
 * and (past round 0) its round's predecessor as one. */
static inline uint32_t sched_step_waits(const sched_img_t *im, uint32_t i)
{
    step_t st = sched_step(im, i);
    return st.ndeps + (st.round > 0);
}

static inline uint32_t sched_round_size(const sched_img_t *im, uint32_t r)
{
    return im->round_first[r + 1] - im->round_first[r];
}

/* Readers keep round_left[r] (steps of round r not yet complete, from
 * sched_round_size).  Completing step i counts it out of its round; when
 * that was the round's last step, the steps [*first, *first + returned) of
 * the next round each lose one wait.  Returns how many. */
static inline uint32_t sched_round_done(const sched_img_t *im, uint32_t *round_left, uint32_t i,
                                        uint32_t *first)
{
    uint32_t r = sched_step_round(im, i);
    if (--round_left[r] || r + 1 >= im->nrounds)
        return 0;
    *first = im->round_first[r + 1];
    return sched_round_size(im, r + 1);
}

/* Step i's explicit successors: succ[*from .. *to). */
static inline void sched_succ(const sched_img_t *im, uint32_t i, uint32_t *from, uint32_t *to)
{
    *from = im->succ_first ? im->succ_first[i] : 0;
    *to = im->succ_first ? im->succ_first[i + 1] : 0;
}

#define SCHED_NONE UINT32_MAX

/* sched_init starts an empty builder; sched_reset empties one for another
 * schedule and keeps its memory; sched_free gives the memory back. */
WEFT_TOOL_API void sched_init(sched_t *s, int nrank, int rank);
WEFT_TOOL_API void sched_reset(sched_t *s, int nrank, int rank);
WEFT_TOOL_API void sched_free(sched_t *s);

/* Builders append steps; each returns the new step's index.  Every step
 * belongs to the current round (see sched_round). */
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
/* Close the current round: later steps depend on every step added so far
 * (an empty round is no round). */
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

/* The image of what s holds (s is left as it is: reset it for the next
 * one).  The image is one allocation: free it with sched_img_free. */
WEFT_TOOL_API int sched_commit(sched_t *s, sched_img_t **out);
WEFT_TOOL_API void sched_img_free(sched_img_t *im);
/* The same schedule read in place, for a reader that converts it at once
 * (the simulator, a million ranks' schedules one after the other): *view
 * is an image of wide steps that are the builder's own, its round and
 * successor tables kept in s for the next view.  No allocation once the
 * tables have grown, no packing.  Valid until s changes. */
WEFT_TOOL_API int sched_view(sched_t *s, sched_img_t *view);

WEFT_TOOL_API const char *step_kind_name(int kind);
WEFT_TOOL_API const char *buf_name(int buf);

#endif
