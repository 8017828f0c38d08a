/* sim.h — the LogGOPS simulator: every rank's schedule of one collective run
 * together under the LogGOPS model, with LogGOPSim's semantics (Hoefler,
 * Schneider, Lumsdaine, HPDC 2010), so that a weft figure can be checked
 * against LogGOPSim and the other way round.
 *
 * The model, in ns and ns per byte, for a message of s bytes (s >= 1):
 *   send issued at t (when the rank's CPU and a NIC are free): the CPU is
 *     busy until t + o + (s-1)O, the NIC until t + g + (s-1)G, and the
 *     first byte reaches the receiver at t + o + L;
 *   s <= S is eager (the send completes when issued), s > S rendezvous (it
 *     completes when the receiver matches it);
 *   a message that has arrived is taken in when the receiver's CPU and NIC
 *     are free, at cost o + max((s-1)O, (s-1)G) on the CPU and g + (s-1)G on
 *     the NIC, and then matched against the posted receives (else queued as
 *     unexpected);
 *   a local reduction of s bytes costs gamma * s on the CPU, a local copy
 *   copy * s (0 in LogGOPS).
 *
 * The simulator runs a program per rank (sim_prog_t: send, receive and
 * calc operations with "requires" and "irequires" edges, the shape of a
 * GOAL schedule).  weft's schedules become programs one rank at a time, when
 * the simulation reaches the rank's start; ranks whose programs differ only
 * in their peers share one copy (shape.h), and what is a rank's own is freed
 * when it has finished: there is never an all-ranks schedule in memory. */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "algo/algo.h"
#include "sched/sched.h"
#include "weft.h"

typedef struct sim_model {
    double L, o, g, G, O; /* ns, ns, ns, ns/byte, ns/byte */
    uint64_t S;           /* largest eager message, bytes */
    double gamma;         /* ns per byte reduced */
    double copy;          /* ns per byte copied locally */
    int ports;            /* NICs per rank (k-port model); >= 1 */
    int cpus;             /* CPUs per rank (GOAL's "cpu N"); >= 1 */
    /* Ranks that share cores (not LogGOPS: weft's term for ranks that
     * outnumber their cores, e.g. 8 on 2): rank r runs on core r mod
     * cores, a core serves one rank's CPU time (o, O, gamma, calcs) at a
     * time, and turning from one rank to another costs sw ns first (the
     * kernel's switch).  cores 0: a core per rank, as LogGOPS has it. */
    uint32_t cores;
    double sw;
    /* 1: the NIC takes a message in (RDMA's way, not LogGOPS's): the
     * receiver's CPU pays o + (s-1)O and is free while the NIC is busy;
     * the receive completes when LogGOPSim's rule would have it, at
     * o + max((s-1)O, (s-1)G) after the message is taken in.  0: the CPU
     * is held all that time, as in LogGOPSim. */
    int offload;
} sim_model_t;

/* ---- presets and model flags (model.c) ---- */

/* LogGOPSim's own defaults; every field set. */
void sim_model_default(sim_model_t *m);
/* Fills *m from a named preset; -1 and a message naming the choices if
 * the name is unknown.  A name with a '/' or ending in ".preset" is read
 * as a preset file (the format sim_preset_write writes). */
int sim_preset_load(const char *name, sim_model_t *m, char *msg, size_t len);
/* Parses a preset file's text (n bytes), called name in messages. */
int sim_preset_parse(const char *text, size_t n, const char *name, sim_model_t *m, char *msg,
                     size_t len);
/* Parses one "key value" setting (keys L o g G O S gamma copy ports cores
 * switch);
 * -1 and why when the key is unknown or the value is negative, not a
 * number, NaN or absurd. */
int sim_model_set(sim_model_t *m, const char *key, const char *value, char *msg, size_t len);
/* Writes a preset file; 0 or -1 (errno). */
int sim_preset_write(const char *path, const sim_model_t *m, const char *comment);
/* The names of the built-in presets, NULL-terminated. */
const char *const *sim_preset_names(void);

/* ---- programs (prog.c) ---- */

enum sim_op_kind { SIM_SEND = 0, SIM_RECV = 1, SIM_CALC = 2 };

#define SIM_NIC_ANY 0xffu   /* the NIC that is free first */
#define SIM_INSTANT 0x1u    /* calc with no CPU time: a join (weft's NOP) */
#define SIM_REDUCE 0x2u     /* calc that reduces `size` bytes (gamma) */
#define SIM_COPY 0x4u       /* calc that copies `size` bytes (copy) */
#define SIM_PAIRED 0x8u     /* the receive of a receive-and-reduce: its
                             * step goes on with the next op, the reduce */
#define SIM_IREQ 0x80000000u /* in prog.succ: an irequires edge */

typedef struct sim_op {
    uint8_t kind, cpu, nic, flags;
    uint32_t tag;
    int32_t peer;
    uint32_t pending; /* its edges (the simulator counts them down in the rank's own copy) */
    uint64_t size;    /* bytes (send/recv; reduce/copy calc), or ns for a
                       * plain calc */
} sim_op_t;

typedef struct sim_prog {
    uint32_t nops, nedges;
    sim_op_t *ops;
    uint32_t *succ_first; /* nops + 1 */
    uint32_t *succ;       /* successor op, | SIM_IREQ for irequires */
    /* the simulator's (shape.c): the distinct (source, tag) keys of the
     * receives, sorted, in the same allocation as ops (builders leave them
     * 0/NULL) */
    uint32_t nkeys;
    uint64_t *rkeys;
    /* A weft schedule's rounds, when the program keeps them (0: none, or
     * made into joins): round k is ops round_first[k] .. round_first[k +
     * 1] - 1, and each step of it that comes first (not the reduce of a
     * receive-and-reduce) has one edge more than its explicit ones, the
     * round before: the simulator releases it when every step of that
     * round is done, as the join between them would.  In the block after
     * the successors, nrounds + 1 entries. */
    uint32_t nrounds;
    uint32_t *round_first;
} sim_prog_t;

/* One allocation for nops operations and nedges edges (ops, then the
 * successor table); the receive keys stay NULL. */
int sim_prog_alloc(sim_prog_t *p, uint32_t nops, uint32_t nedges);
void sim_prog_free(sim_prog_t *p);
/* Bytes the program holds (its share of peak memory). */
size_t sim_prog_bytes(const sim_prog_t *p);
/* The same with nrounds + 1 round starts after the successors. */
int sim_prog_alloc_rounds(sim_prog_t *p, uint32_t nops, uint32_t nedges, uint32_t nrounds);
/* Converts a committed weft schedule of elements of esize bytes: send and
 * receive as themselves, receive-and-reduce as a receive then a reduce
 * calc, reduce and copy as calcs, no-ops as instant joins.  joins: a join
 * (an instant calc) between every two rounds, as GOAL must have it; else
 * the program keeps the rounds (nrounds), which the simulator follows
 * without the joins' operations and edges, to the same times. */
int sim_prog_from_sched(const sched_img_t *s, size_t esize, bool joins, sim_prog_t *out);

/* Builds rank's program; returns 0 or a weft error code, with the reason
 * in msg. */
typedef int (*sim_build_fn)(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len);

/* The sim_build_fn of a registry algorithm: ctx is a sim_algo_t, whose
 * args are the call's (a.rank is set per rank); the schedule is built and
 * converted, then freed.  With a builder, every rank's schedule is built
 * in it (no allocation per rank but the image's); NULL: one per build. */
typedef struct sim_algo {
    const algo_t *al;
    coll_args_t a;
    sched_t *builder;
    bool joins; /* programs with their joins (sim_prog_from_sched): for GOAL */
} sim_algo_t;
int sim_build_algo(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len);

/* The arrival-driven algorithms (pap.c): pap_chain (reduce, allreduce),
 * pap_leader and shm_twostep (allreduce) as programs, for an arrival
 * order given by the start times (NULL: all at 0, ties by rank).
 * sim_pap_kind: 0 when algo does not serve coll that way. */
typedef struct sim_pap {
    int kind;
    weft_coll_t coll;
    int P, root;
    uint64_t bytes;
    int *order, *pos; /* ranks by arrival (hier_pap: by node, then arrival),
                       * and each rank's place */
    /* hier_pap: where each node's ranks start in order, each node's leader
     * (its lowest rank), and the arguments of the schedule after the node
     * level (hier's, built per rank; tail.params.node is the node level) */
    int *node_first, *leader;
    coll_args_t tail;
    node_groups_t *groups; /* tail.groups, built once for every rank */
} sim_pap_t;
int sim_pap_kind(const char *algo, weft_coll_t coll);
/* 0, WEFT_ENOTSUP (not one of them), or WEFT_ENOMEM. */
int sim_pap_init(sim_pap_t *c, const char *algo, weft_coll_t coll, int P, uint64_t bytes,
                 int root, const double *start);
/* hier_pap, for the call a (its rank count, count, esize, node map and
 * parameters: inter=, node=); the same returns. */
int sim_pap_init_hier(sim_pap_t *c, const coll_args_t *a, const double *start);
void sim_pap_free(sim_pap_t *c);
/* The sim_build_fn: ctx is a sim_pap_t. */
int sim_build_pap(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len);

/* ---- CPU noise from a detour trace (noise.c) ---- */

/* Detours one CPU took, as Netgauge records them: each begins at start[i]
 * and lasts dur[i] (ns), in order, none overlapping; the trace repeats with
 * the period of its last detour's end. */
typedef struct sim_trace {
    double *start, *dur;
    size_t n;
    double period, total; /* ns; total: the detours' durations summed */
} sim_trace_t;

/* A trace file's text (n bytes), called name in messages: lines "START
 * DURATION" in ns, '#' starting a comment.  0, or -1 with the file, line
 * and what was wrong in msg (*t then empty). */
int sim_trace_parse(const char *text, size_t n, const char *name, sim_trace_t *t, char *msg,
                    size_t len);
int sim_trace_load(const char *path, sim_trace_t *t, char *msg, size_t len);
void sim_trace_free(sim_trace_t *t);
/* The noise a use of the CPU from x (the trace's time) for len ns meets:
 * the rest of a detour under way at x, and every detour that begins in
 * (x, x + len]. */
double sim_trace_detour(const sim_trace_t *t, double x, double len);

/* xorshift64*: a uniform draw in [0, 1) that is the same on every machine
 * for a seed (*x must not be 0). */
static inline double sim_uniform(uint64_t *x)
{
    *x ^= *x >> 12, *x ^= *x << 25, *x ^= *x >> 27;
    return (double)((*x * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* ---- the simulation (loggops.c) ---- */

/* What an event that finds its rank busy does.  SIM_ORDER_LOGGOPSIM: goes
 * back into the event queue at the time the resources free, as in
 * LogGOPSim (so times agree with it exactly; a rank that stays busy costs
 * a retry per waiting item each time it frees).  SIM_ORDER_FIFO: waits in
 * its rank's queue, first come first served, and the rank is woken once
 * (far fewer events; where several items compete for one CPU at the same
 * instant the order, and so the time, may differ from LogGOPSim's). */
enum sim_order { SIM_ORDER_LOGGOPSIM = 0, SIM_ORDER_FIFO = 1 };

typedef struct sim_opts {
    const double *start; /* per-rank start time (ns), NULL: all at 0 */
    int order;           /* enum sim_order */
    /* CPU noise: each time a CPU is taken (a send's or a receive's
     * overhead, a calc), with probability noise_prob it is held noise_ns
     * longer (drawn from a generator seeded with noise_seed, so a run is
     * repeatable) */
    double noise_prob, noise_ns;
    uint64_t noise_seed;
    /* and/or from a detour trace (noise.c): rank r reads it from an offset
     * drawn from noise_seed and r, uniform over its period; all ranks from
     * one (co-scheduled noise) with trace_cosched; trace_offset >= 0 gives
     * that offset (ns) to every rank instead, -1 draws them (a zeroed
     * sim_opts_t reads the trace from its start at every rank) */
    const sim_trace_t *trace;
    bool trace_cosched;
    double trace_offset;
    /* stop with WEFT_ENOTSUP after this many events (0: no limit), for
     * callers that want a prediction only when it is cheap */
    uint64_t max_events;
    /* and once it holds more than this many bytes (programs, queues), or
     * has run this many seconds (0: no limit; looked at every 64 events) */
    size_t max_bytes;
    double max_seconds;
    /* every rank keeps its own program instead of sharing one with the
     * ranks of its shape (shape.h): the same times, more memory; for
     * checking exactly that */
    bool private_programs;
    /* a line for each step of rank timeline_rank's operations (ready,
     * started, a message taken in, done) and its finish, in time order, to
     * timeline when it is not NULL: how its time went */
    FILE *timeline;
    int timeline_rank;
    /* each rank's finish time (ns) into finish[rank] when not NULL */
    double *finish;
} sim_opts_t;

typedef struct sim_result {
    double t_max, t_mean; /* completion time over ranks, ns */
    int slowest;          /* the rank that finished last */
    uint64_t events;      /* events processed */
    uint64_t messages;    /* messages sent */
    double seconds;       /* wall time of the simulation */
    size_t peak_bytes;    /* most memory the simulation held at once */
} sim_result_t;

/* Simulates nrank ranks.  0, or a weft error code with the reason in msg
 * (a rank's build error, an unmatched receive or message, a deadlock). */
int sim_run(const sim_model_t *m, int nrank, sim_build_fn build, void *ctx,
            const sim_opts_t *opts, sim_result_t *res, char *msg, size_t len);

/* ---- lower bounds (bounds.c) ---- */

/* alpha and beta of the model: beta = max(G, O) (a byte's time on the
 * busier of link and CPU), alpha = L + 2o - beta, so that one message of s
 * bytes takes alpha + s beta end to end. */
double sim_alpha(const sim_model_t *m);
double sim_beta(const sim_model_t *m);
/* A lower bound on the time of coll for n bytes per rank (block
 * collectives: per block) on P ranks under m, valid for every schedule and
 * every parameter set (docs/ALGORITHMS.md, "Lower bounds"); -1 for
 * collectives without one. */
double sim_lower_bound(weft_coll_t coll, int P, uint64_t n, const sim_model_t *m);

#endif
