/* loggops.c — the discrete-event LogGOPS simulation (sim.h has the model).
 *
 * It follows LogGOPSim's rules so that both give the same times for the
 * same schedule: an operation whose edges are satisfied is queued at the
 * time its rank's CPU (and, for a send, a NIC) is free; a message is an
 * event at its receiver when its first byte arrives, taken in when the
 * CPU and a receive NIC are free; an event that finds its resources busy
 * goes back into the queue at the time they free.  Ties are broken by
 * queueing order, so a run is deterministic.  The FIFO order (sim.h)
 * parks such an event in a per-rank queue instead and wakes the rank once,
 * when the first parked item can run.
 *
 * Posted receives are not kept in the match table: each rank's receives
 * are indexed by (source, tag) when its program is built, and an arriving
 * message looks there for the oldest posted one; only unexpected messages
 * go into the table.
 *
 * Memory: a rank's program is built when the simulation reaches its start
 * time and then kept once per shape (shape.h: ranks that differ only in
 * their peers share it), the rank holding two bits per operation until
 * its last operation is done; the rest is per rank a few clocks, plus the
 * event queue (evq.h), the match table and the values set aside (only
 * what is in flight). */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/bigmem.h"
#include "evq.h"
#include "shape.h"
#include "sim.h"

/* Event types: an operation ready to run (by kind, so that an event whose
 * rank is still busy is put back without reading its operation: on a big
 * run that read is a cache miss), a message arriving, a rank woken, a
 * message's last byte in (the model's offload: it then matches). */
enum { EV_SEND = 0, EV_CALC = 1, EV_RECV = 2, EV_MSG = 3, EV_WAKE = 4, EV_IN = 5 };

/* An event (evq.h): a = rank << 3 | type, b = op index, or message record
 * (EV_MSG). */
typedef evq_item_t ev_t;

/* A message in flight or unexpected, or a posted receive. */
typedef struct mrec {
    uint64_t size;
    uint32_t src, op; /* sender and its send op; for a receive: its op */
    uint32_t tag, next;
    uint8_t cpu, nic; /* the sender's, for a rendezvous completion */
} mrec_t;

#define NIL UINT32_MAX

/* The unexpected messages: (dst, src, tag) -> FIFO of message records
 * nobody has posted a receive for yet.  Open addressing, linear probing,
 * backward-shift deletion. */
typedef struct mslot {
    uint32_t dst, src, tag;
    uint32_t head, tail;
} mslot_t;

/* A rank's program handle and, when they fit, its clocks: one line of 64
 * bytes, which an event on a rank not touched in a long while (a million
 * ranks' level of a tree) fetches with one miss, where the handle and
 * three arrays of clocks took four. */
#define RANK_CLOCKS 4
struct rank_rec {
    sim_rank_prog_t prog;
    double clk[RANK_CLOCKS];
};
_Static_assert(sizeof(struct rank_rec) == 64, "a rank's record is one cache line");

/* Work waiting for a busy rank (one CPU; the FIFO order): a FIFO per
 * class -- calcs, sends (also waiting for a NIC), messages to take in (also
 * waiting for a receive NIC) -- and at most one wake-up event per rank, so
 * a queue of n waiting items costs O(n) events, not O(n^2) retries.  Per
 * class, the first and last waiting item, and the first's place in the
 * order (a copy of its node's seq: choosing among a rank's three queues
 * then reads one record, not three cold nodes).  With the rank's pending
 * wake-up (-1: none) they fill one line, which a wake-up fetches with one
 * miss. */
struct wqueue {
    uint32_t head, tail;
    uint64_t seq;
};
struct fifo_rec {
    struct wqueue wq[3];
    double wake;
    uint64_t pad;
};
_Static_assert(sizeof(struct fifo_rec) == 64, "a rank's wait queues are one cache line");

typedef struct sim {
    const sim_model_t *m;
    int P;
    sim_build_fn build;
    void *ctx;
    const sim_opts_t *opts;
    char *msg;
    size_t msglen;
    int err;

    /* Each rank's record: its program (while it runs; its operations not
     * yet done) and its clocks (below) */
    struct rank_rec *rk;
    sim_shapes_t shapes;
    /* When each CPU and NIC is next free: a rank's clocks side by side
     * (its CPUs, its sending NICs, its receiving NICs), `stride` doubles a
     * rank: in its record when they fit (the usual model of one CPU and
     * one NIC), else in clk */
    double *clk;
    uint32_t stride;
    uint64_t *finished;          /* a bit a rank: it has finished (its
                                  * time goes into t_sum and t_max only) */
    double t_sum, t_max;
    int slowest, nfinished;

    evq_t q;
    uint64_t seq; /* the FIFO order's queueing order */

    mrec_t *rec;
    uint32_t nrec, reccap, freerec;

    mslot_t *tab;
    size_t tabcap, tabused;

    /* (rank, op) -> what two bits cannot hold: the edges left of an op
     * with more than two once it has lost one, and a posted receive's
     * link to the next posted one of its key (a key of several). */
    struct aside {
        uint32_t rank, op, val;
    } *aside;
    size_t asidecap, asideused;

    /* Work waiting for a busy rank (one CPU; the FIFO order): each rank's
     * wait queues and wake-up (struct fifo_rec) */
    struct fifo_rec *fq;
    struct wnode {
        uint32_t idx, next;
        uint64_t next_seq; /* the place of the node after this one (on_wake
                            * then need not touch that node to pop this) */
    } *wn;
    uint32_t nwn, wncap, freewn;
    bool fifo;         /* SIM_ORDER_FIFO (one CPU per rank only) */
    bool cold;         /* the ranks' records outgrow the caches, or the
                        * FIFO order (COLD_*): events prefetch */
    bool simple;       /* one CPU and one NIC per rank, no shared cores:
                        * readiness from the rank's clocks alone */
    /* Ranks sharing cores (m->cores): when each core is next free, and the
     * rank it serves (the one that used it last; a switch to another costs
     * m->sw).  A rank's own clock (cpu) still says when its work is done:
     * its finish time, and a rendezvous send holding it. */
    uint32_t ncores;
    double *core;
    uint32_t *core_rank;
    double noise_prob, noise_ns;
    uint64_t rng;      /* the noise's generator (xorshift64*) */
    const sim_trace_t *trace; /* noise from a detour trace, or NULL */
    uint64_t trace_seed;
    double trace_offset; /* every rank's offset; < 0: each its own */
    FILE *timeline;       /* sim_opts_t's: the steps of rank tl_rank */
    uint32_t tl_rank;     /* UINT32_MAX: none */
    double *finish_out;

    /* Instant operations waiting to run (no recursion), first released
     * first: receives released together are posted in the order they were
     * released (a rank's start releases in program order), so the first
     * of several on one (source, tag) takes the first message, as MPI's
     * non-overtaking rule has it. */
    uint32_t *work;
    size_t nwork, workhead, workcap;
    uint32_t *work_rank;

    uint64_t events, messages;
    size_t bytes, peak, max_bytes;
} sim_t;

__attribute__((format(printf, 3, 4))) static int fail(sim_t *s, int code, const char *fmt, ...);

static uint32_t free_count(uint32_t head, const void *base, size_t size, size_t link)
{
    uint32_t n = 0;
    for (uint32_t i = base ? head : NIL; i != NIL; n++)
        memcpy(&i, (const char *)base + (size_t)i * size + link, sizeof i);
    return n;
}

/* Past the limit: say where the simulation was and what it held, so a
 * user can tell a run too large for the machine (a pipelined schedule's
 * messages piling up ahead of busy ranks, docs/SIM.md) from one that is
 * merely long.  Counted once, by walking the free lists. */
static void fail_memory(sim_t *s)
{
    uint32_t recs = s->nrec - free_count(s->freerec, s->rec, sizeof *s->rec,
                                         offsetof(mrec_t, next));
    uint32_t waits = s->nwn - free_count(s->freewn, s->wn, sizeof *s->wn,
                                         offsetof(struct wnode, next));
    fail(s, WEFT_ENOTSUP,
         "stopped at %zu MiB held, past the limit of %zu MiB, at %.3f us simulated (%d/%d "
         "ranks done, %u messages or posted receives, %u ops waiting for busy ranks, %zu "
         "events queued); fewer ranks, bytes or chunks (--params chunks=K) hold less",
         s->bytes >> 20, s->max_bytes >> 20, evq_key_time(s->q.last) / 1e3, s->nfinished,
         s->P, recs, waits, s->q.size);
}

static void account(sim_t *s, ssize_t delta)
{
    s->bytes += (size_t)delta;
    if (s->bytes > s->peak)
        s->peak = s->bytes;
    if (s->max_bytes && s->bytes > s->max_bytes && !s->err)
        fail_memory(s);
}

static int fail(sim_t *s, int code, const char *fmt, ...)
{
    if (!s->err) {
        s->err = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, s->msglen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- the event queue (evq.h) ---- */

static void push(sim_t *s, double t, int type, uint32_t rank, uint32_t arg)
{
    size_t had = s->q.bytes;
    int rc = evq_push(&s->q, (ev_t){t, rank << 3 | (uint32_t)type, arg});
    if (rc == -1)
        fail(s, WEFT_ENOMEM, "out of memory for %zu+ events", s->q.size);
    else if (rc) /* cannot happen: every event is at or after now */
        fail(s, WEFT_EINTERNAL, "an event at %.3f ns was queued after a later one", t);
    if (s->q.bytes != had)
        account(s, (ssize_t)(s->q.bytes - had));
}

static bool pop(sim_t *s, ev_t *e)
{
    size_t had = s->q.bytes;
    if (evq_pop(&s->q, e)) {
        fail(s, WEFT_ENOMEM, "out of memory for %zu+ events", s->q.size);
        return false;
    }
    if (s->q.bytes != had)
        account(s, (ssize_t)(s->q.bytes - had));
    return true;
}

/* ---- records and the match table ---- */

static uint32_t rec_new(sim_t *s)
{
    if (s->freerec != NIL) {
        uint32_t r = s->freerec;
        s->freerec = s->rec[r].next;
        return r;
    }
    if (s->nrec == s->reccap) {
        uint32_t nc = s->reccap ? s->reccap * 2 : 1024;
        mrec_t *r = realloc(s->rec, (size_t)nc * sizeof *r);
        if (!r) {
            fail(s, WEFT_ENOMEM, "out of memory for %d+ messages in flight",
                 (int)s->nrec);
            return NIL;
        }
        size_t grown = (size_t)(nc - s->reccap) * sizeof *r;
        s->rec = r, s->reccap = nc; /* before account, which may read them */
        account(s, (ssize_t)grown);
    }
    return s->nrec++;
}

static void rec_free(sim_t *s, uint32_t r)
{
    s->rec[r].next = s->freerec;
    s->freerec = r;
}

static inline size_t slot_hash(const sim_t *s, uint32_t dst, uint32_t src, uint32_t tag)
{
    uint64_t x = (uint64_t)dst * 0x9E3779B97F4A7C15ull ^ (uint64_t)src * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)tag * 0x165667B19E3779F9ull;
    x ^= x >> 31;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return (size_t)x & (s->tabcap - 1);
}

/* The slot of (dst, src, tag), or where it would go (dst == NIL). */
static size_t slot_find(const sim_t *s, uint32_t dst, uint32_t src, uint32_t tag)
{
    size_t i = slot_hash(s, dst, src, tag);
    for (;;) {
        const mslot_t *q = &s->tab[i];
        if (q->dst == NIL || (q->dst == dst && q->src == src && q->tag == tag))
            return i;
        i = (i + 1) & (s->tabcap - 1);
    }
}

static int tab_grow(sim_t *s)
{
    size_t oc = s->tabcap, nc = oc ? oc * 2 : 4096;
    mslot_t *old = s->tab, *t = malloc(nc * sizeof *t);
    if (!t)
        return fail(s, WEFT_ENOMEM, "out of memory for the match table (%d+ queues)",
                    (int)s->tabused);
    for (size_t i = 0; i < nc; i++)
        t[i].dst = NIL;
    s->tab = t, s->tabcap = nc;
    for (size_t i = 0; i < oc; i++)
        if (old[i].dst != NIL)
            s->tab[slot_find(s, old[i].dst, old[i].src, old[i].tag)] = old[i];
    free(old);
    account(s, (ssize_t)((nc - oc) * sizeof *t));
    return 0;
}

/* Backward-shift deletion in a table with linear probing: the entry at j,
 * whose home is h, may move into the hole at i unless h lies in (i, j]
 * (cyclically). */
static inline bool may_fill(size_t h, size_t i, size_t j)
{
    return (j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j));
}

static void slot_remove(sim_t *s, size_t i)
{
    size_t mask = s->tabcap - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (s->tab[j].dst == NIL)
            break;
        size_t h = slot_hash(s, s->tab[j].dst, s->tab[j].src, s->tab[j].tag);
        if (may_fill(h, i, j)) {
            s->tab[i] = s->tab[j];
            i = j;
        }
    }
    s->tab[i].dst = NIL;
    s->tabused--;
}

/* Takes the oldest unexpected message queued under (dst, src, tag), or
 * NIL. */
static uint32_t match_take(sim_t *s, uint32_t dst, uint32_t src, uint32_t tag)
{
    if (!s->tabused)
        return NIL;
    size_t i = slot_find(s, dst, src, tag);
    mslot_t *q = &s->tab[i];
    if (q->dst == NIL)
        return NIL;
    uint32_t r = q->head;
    q->head = s->rec[r].next;
    if (q->head == NIL)
        slot_remove(s, i);
    return r;
}

static void match_put(sim_t *s, uint32_t dst, uint32_t src, uint32_t tag, uint32_t r)
{
    if ((s->tabused + 1) * 2 > s->tabcap && tab_grow(s))
        return;
    size_t i = slot_find(s, dst, src, tag);
    mslot_t *q = &s->tab[i];
    s->rec[r].next = NIL;
    if (q->dst == NIL) {
        q->dst = dst, q->src = src, q->tag = tag;
        q->head = q->tail = r;
        s->tabused++;
    } else {
        s->rec[q->tail].next = r;
        q->tail = r;
    }
}

/* ---- the values set aside (sim_t.aside) ---- */

static inline size_t aside_hash(const sim_t *s, uint32_t r, uint32_t op)
{
    uint64_t x = ((uint64_t)r << 32 | op) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (size_t)x & (s->asidecap - 1);
}

static size_t aside_find(const sim_t *s, uint32_t r, uint32_t op)
{
    size_t i = aside_hash(s, r, op);
    while (s->aside[i].rank != NIL && (s->aside[i].rank != r || s->aside[i].op != op))
        i = (i + 1) & (s->asidecap - 1);
    return i;
}

static void aside_put(sim_t *s, uint32_t r, uint32_t op, uint32_t val)
{
    if ((s->asideused + 1) * 2 > s->asidecap) {
        size_t oc = s->asidecap, nc = oc ? oc * 2 : 1024;
        struct aside *old = s->aside, *t = malloc(nc * sizeof *t);
        if (!t) {
            fail(s, WEFT_ENOMEM, "out of memory for %zu operations' counts", s->asideused);
            return;
        }
        for (size_t i = 0; i < nc; i++)
            t[i].rank = NIL;
        s->aside = t, s->asidecap = nc;
        for (size_t i = 0; i < oc; i++)
            if (old[i].rank != NIL)
                s->aside[aside_find(s, old[i].rank, old[i].op)] = old[i];
        free(old);
        account(s, (ssize_t)((nc - oc) * sizeof *t));
    }
    size_t i = aside_find(s, r, op);
    if (s->aside[i].rank == NIL)
        s->asideused++;
    s->aside[i] = (struct aside){r, op, val};
}

/* The value set aside for (r, op), removed; 0 when there is none. */
static uint32_t aside_take(sim_t *s, uint32_t r, uint32_t op)
{
    if (!s->asideused)
        return 0;
    size_t i = aside_find(s, r, op), mask = s->asidecap - 1, j = i;
    if (s->aside[i].rank == NIL)
        return 0;
    uint32_t val = s->aside[i].val;
    for (;;) {
        j = (j + 1) & mask;
        if (s->aside[j].rank == NIL)
            break;
        if (may_fill(aside_hash(s, s->aside[j].rank, s->aside[j].op), i, j)) {
            s->aside[i] = s->aside[j];
            i = j;
        }
    }
    s->aside[i].rank = NIL;
    s->asideused--;
    return val;
}

/* Op j of rank r has one edge fewer left: true when none is. */
static bool edge_done(sim_t *s, const sim_rank_prog_t *rp, uint32_t r, uint32_t j)
{
    uint32_t init = rp_ops(rp)[j].pending;
    unsigned st = rp_state(rp, j);
    if (init <= 2) {
        if (st == SHAPE_INIT && init == 2) {
            rp_set_state(rp, j, SHAPE_ONE);
            return false;
        }
        rp_set_state(rp, j, SHAPE_ZERO);
        return true;
    }
    uint32_t left = st == SHAPE_INIT ? init - 1 : aside_take(s, r, j) - 1;
    if (left) {
        rp_set_state(rp, j, SHAPE_ONE);
        aside_put(s, r, j, left);
        return false;
    }
    rp_set_state(rp, j, SHAPE_ZERO);
    return true;
}

/* ---- ranks and operations ---- */

static inline double *clocks(const sim_t *s, uint32_t r)
{
    return s->clk ? &s->clk[(size_t)r * s->stride] : s->rk[r].clk;
}

static inline double *cpu_of(sim_t *s, uint32_t r, int c)
{
    if (s->m->cpus == 1) /* the usual model: no 64-bit division an event */
        return clocks(s, r);
    return clocks(s, r) + (size_t)c % s->m->cpus;
}

/* Rank r's sending and receiving NICs, ports of each. */
static inline double *nic_s_of(const sim_t *s, uint32_t r) { return clocks(s, r) + s->m->cpus; }
static inline double *nic_r_of(const sim_t *s, uint32_t r)
{
    return clocks(s, r) + s->m->cpus + s->m->ports;
}

static inline double maxd(double a, double b) { return a > b ? a : b; }

/* One step of op i of the timeline's rank at t (callers test the rank). */
static void timeline_step(const sim_t *s, uint32_t i, double t, const char *what)
{
    const sim_rank_prog_t *rp = &s->rk[s->tl_rank].prog;
    const sim_op_t *op = &rp_ops(rp)[i];
    static const char *const kinds[] = {"send", "recv", "calc"};
    bool plain_calc = op->kind == SIM_CALC && !(op->flags & (SIM_REDUCE | SIM_COPY));
    fprintf(s->timeline, "%.3f\t%s\top %u\t%s", t, what, i,
            op->kind <= SIM_CALC ? kinds[op->kind] : "?");
    if (op->kind != SIM_CALC)
        fprintf(s->timeline, " peer %d tag %u", rp_peer(rp, op), op->tag);
    fprintf(s->timeline, " %s %" PRIu64 "\n", plain_calc ? "ns" : "bytes", op->size);
}

/* When rank r's CPU c is free: its own clock, and, where ranks share
 * cores, its core's. */
static inline double cpu_free(sim_t *s, uint32_t r, int c)
{
    double t = *cpu_of(s, r, c);
    return s->ncores ? maxd(t, s->core[r % s->ncores]) : t;
}

/* Rank r's CPU c is busy from t for cost ns (its core too). */
static inline void hold_cpu(sim_t *s, uint32_t r, int c, double t, double cost)
{
    *cpu_of(s, r, c) = t + cost;
    if (s->ncores)
        s->core[r % s->ncores] = t + cost;
}

/* Rank r, about to use its CPU at t (free then), takes its core from
 * another rank: the core is the switch's until t + sw, and true (the
 * caller tries again then).  False where the core is r's already, cores
 * are not shared, or a switch costs nothing. */
static bool switch_in(sim_t *s, uint32_t r, double t)
{
    if (!s->ncores)
        return false;
    uint32_t k = r % s->ncores;
    if (s->core_rank[k] == r)
        return false;
    s->core_rank[k] = r;
    if (s->m->sw <= 0)
        return false;
    hold_cpu(s, r, 0, t, s->m->sw);
    return true;
}

/* The NIC a send of op uses: its own, or the one free first. */
static int send_nic(sim_t *s, uint32_t r, const sim_op_t *op)
{
    const double *n = nic_s_of(s, r);
    if (op->nic != SIM_NIC_ANY)
        return op->nic % s->m->ports;
    int best = 0;
    for (int k = 1; k < s->m->ports; k++)
        if (n[k] < n[best])
            best = k;
    return best;
}

static int recv_nic(sim_t *s, uint32_t r)
{
    const double *n = nic_r_of(s, r);
    int best = 0;
    for (int k = 1; k < s->m->ports; k++)
        if (n[k] < n[best])
            best = k;
    return best;
}

static inline double calc_cost(const sim_model_t *m, const sim_op_t *op)
{
    return op->flags & SIM_INSTANT  ? 0
           : op->flags & SIM_REDUCE ? m->gamma * (double)op->size
           : op->flags & SIM_COPY   ? m->copy * (double)op->size
                                    : (double)op->size;
}

/* Op i of rank r (or a join, ROUND_JOIN | k) runs at once, after what is
 * queued. */
static void queue_instant(sim_t *s, uint32_t r, uint32_t i)
{
    if (s->nwork == s->workcap) {
        size_t nc = s->workcap ? s->workcap * 2 : 256;
        uint32_t *w = realloc(s->work, nc * sizeof *w);
        uint32_t *wr = w ? realloc(s->work_rank, nc * sizeof *wr) : NULL;
        if (w)
            s->work = w;
        if (!wr) {
            fail(s, WEFT_ENOMEM, "out of memory");
            return;
        }
        s->work_rank = wr, s->workcap = nc;
    }
    s->work[s->nwork] = i;
    s->work_rank[s->nwork++] = r;
}

/* Op i of rank r has all its edges satisfied at time now.  A calc that
 * costs nothing (a join, a copy when copies are free, GOAL's calc 0) is
 * done at once, without waiting for the CPU. */
static void release(sim_t *s, uint32_t r, uint32_t i, double now)
{
    const sim_op_t *op = &rp_ops(&s->rk[r].prog)[i];
    if (r == s->tl_rank)
        timeline_step(s, i, now, "ready");
    /* A receive is posted when the rank's CPU is free (LogGOPSim's rule;
     * it matters: a rendezvous sender completes when its receive is
     * posted).  When the CPU is free already it is posted here and now,
     * without an event: at P = 2^20 that is millions fewer at time 0. */
    if ((op->kind == SIM_RECV && cpu_free(s, r, op->cpu) <= now) ||
        (op->kind == SIM_CALC && calc_cost(s->m, op) == 0)) {
        queue_instant(s, r, i);
        return;
    }
    double t = cpu_free(s, r, op->cpu);
    if (op->kind == SIM_SEND)
        t = maxd(t, nic_s_of(s, r)[send_nic(s, r, op)]);
    push(s, maxd(t, now), op->kind == SIM_SEND ? EV_SEND : op->kind == SIM_RECV ? EV_RECV : EV_CALC,
         r, i);
}

static bool has_finished(const sim_t *s, uint32_t r)
{
    return s->finished[r >> 6] >> (r & 63) & 1;
}

static void finish_rank(sim_t *s, uint32_t r, double now)
{
    double t = now; /* later than its CPUs when a receive ends it (offload) */
    for (int c = 0; c < s->m->cpus; c++)
        t = maxd(t, *cpu_of(s, r, c));
    s->finished[r >> 6] |= 1ull << (r & 63);
    s->t_sum += t;
    if (s->finish_out)
        s->finish_out[r] = t;
    if (r == s->tl_rank)
        fprintf(s->timeline, "%.3f\tfinish\n", t);
    if (t > s->t_max || s->nfinished == 0)
        s->t_max = t, s->slowest = (int)r;
    s->nfinished++;
    ssize_t delta = 0;
    sim_shape_release(&s->shapes, &s->rk[r].prog, &delta);
    account(s, delta);
}

/* Satisfies op i's successors of one kind: its requires edges when it is
 * done, its irequires edges when it starts. */
static void satisfy(sim_t *s, uint32_t r, uint32_t i, double now, bool done)
{
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    const sim_prog_t *p = &rp->sh->p;
    for (uint32_t k = p->succ_first[i]; k < p->succ_first[i + 1]; k++) {
        uint32_t e = p->succ[k];
        if (((e & SIM_IREQ) != 0) == done)
            continue;
        uint32_t j = e & ~SIM_IREQ;
        if (edge_done(s, rp, r, j))
            release(s, r, j, now);
    }
}

/* In the work list, ROUND_JOIN | k: the join before rank r's round k (a
 * program with rounds, sim.h), in the place the join operation would have
 * had.  Op indices stay below it (start_rank). */
#define ROUND_JOIN 0x80000000u

static void done(sim_t *s, uint32_t r, uint32_t i, double now)
{
    if (r == s->tl_rank)
        timeline_step(s, i, now, "done");
    satisfy(s, r, i, now, true);
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    const sim_prog_t *p = &rp->sh->p;
    if (p->nrounds && sim_ends_step(p, i) && --s->rk[r].prog.round_left == 0) {
        uint32_t k = rp->round + 1;
        if (k < p->nrounds)
            queue_instant(s, r, ROUND_JOIN | k);
    }
    if (--s->rk[r].prog.left == 0)
        finish_rank(s, r, now);
}

/* Rank r's round k - 1 is done: round k starts, its steps released in
 * program order, as the join's edges would release them. */
static void next_round(sim_t *s, uint32_t r, uint32_t k, double now)
{
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    const sim_prog_t *p = &rp->sh->p;
    s->rk[r].prog.round = k;
    s->rk[r].prog.round_left = sim_round_steps(p, k);
    for (uint32_t j = p->round_first[k]; j < p->round_first[k + 1]; j++)
        if ((j == p->round_first[k] || sim_ends_step(p, j - 1)) && edge_done(s, rp, r, j))
            release(s, r, j, now);
}

static void on_recv(sim_t *s, uint32_t r, uint32_t i, double t);

/* Runs the receives and free calcs released while handling an event. */
static void run_instant(sim_t *s, double now)
{
    while (s->workhead < s->nwork && !s->err) {
        uint32_t r = s->work_rank[s->workhead], i = s->work[s->workhead++];
        if (i & ROUND_JOIN) {
            next_round(s, r, i & ~ROUND_JOIN, now);
            continue;
        }
        if (rp_ops(&s->rk[r].prog)[i].kind == SIM_RECV) {
            on_recv(s, r, i, now);
            continue;
        }
        satisfy(s, r, i, now, false);
        done(s, r, i, now);
    }
    s->nwork = s->workhead = 0;
}

/* ---- posted receives, found by (source, tag) ----
 *
 * The shape holds the rank's receive keys, the distinct (peer, tag) pairs
 * of its receives, sorted.  A key of one receive needs nothing more: the
 * receive is posted or not (its state).  A key of several has a FIFO of
 * posted receives per rank (head and tail op; the link to the next set
 * aside under the earlier one as op + 1).  A message finds its receive by
 * a binary search over the keys alone -- one for a ring's thousands of
 * receives from one neighbour. */

/* Posts receive op i of rank r (no message for it yet). */
static void recv_post(sim_t *s, uint32_t r, uint32_t i)
{
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    rp_set_state(rp, i, SHAPE_POSTED);
    if (!rp->sh->nmulti)
        return; /* every key has one receive: its state says it all */
    const sim_op_t *op = &rp_ops(rp)[i];
    uint32_t k = rp_key_find(rp, (uint32_t)rp_peer(rp, op), op->tag);
    uint32_t info = rp->sh->kinfo[k];
    if (!(info & SHAPE_MULTI))
        return;
    uint32_t m = info & ~SHAPE_MULTI, *head = rp_mhead(rp), *tail = rp_mtail(rp);
    if (head[m] == NIL)
        head[m] = i;
    else
        aside_put(s, r, tail[m], i + 1);
    tail[m] = i;
}

/* The oldest posted receive of (src, tag) at rank r, taken; or NIL. */
static uint32_t posted_take(sim_t *s, uint32_t r, uint32_t src, uint32_t tag)
{
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    uint32_t k = rp->sh ? rp_key_find(rp, src, tag) : NIL; /* not started, or finished */
    if (k == NIL)
        return NIL;
    uint32_t info = rp->sh->kinfo[k], i;
    if (!(info & SHAPE_MULTI)) {
        i = info;
        if (rp_state(rp, i) != SHAPE_POSTED)
            return NIL;
    } else {
        uint32_t m = info & ~SHAPE_MULTI;
        i = rp_mhead(rp)[m];
        if (i == NIL)
            return NIL;
        uint32_t next = aside_take(s, r, i);
        rp_mhead(rp)[m] = next ? next - 1 : NIL;
    }
    rp_set_state(rp, i, SHAPE_ZERO);
    return i;
}

static void start_rank(sim_t *s, uint32_t r, double t0)
{
    sim_prog_t built, *p = &built;
    char why[200] = "";
    int rc = s->build(s->ctx, (int)r, p, why, sizeof why);
    if (rc) {
        if (!s->err) {
            s->err = rc;
            snprintf(s->msg, s->msglen, "rank %d: %s", (int)r, why[0] ? why : weft_strerror(rc));
        }
        return;
    }
    for (uint32_t i = 0; i < p->nops; i++) {
        const sim_op_t *op = &p->ops[i];
        if (op->kind != SIM_CALC && (op->peer < 0 || op->peer >= s->P)) {
            fail(s, WEFT_EINVAL, "rank %d op %d: peer %d is not a rank of 0..%d", (int)r, (int)i,
                 op->peer, s->P - 1);
            sim_prog_free(p);
            return;
        }
        if (op->nic != SIM_NIC_ANY && op->nic >= s->m->ports) {
            fail(s, WEFT_EINVAL, "rank %d op %d: NIC %d, but the model has %d", (int)r, (int)i,
                 op->nic, s->m->ports);
            sim_prog_free(p);
            return;
        }
    }
    if (p->nops >= ROUND_JOIN) {
        fail(s, WEFT_ENOTSUP, "rank %d: %u operations; at most 2^31 - 1", (int)r, p->nops);
        sim_prog_free(p);
        return;
    }
    ssize_t delta = 0;
    rc = s->opts && s->opts->private_programs
             ? sim_shape_adopt_private(&s->shapes, p, &s->rk[r].prog, &delta)
             : sim_shape_adopt(&s->shapes, p, &s->rk[r].prog, &delta);
    account(s, delta);
    if (rc) {
        sim_prog_free(p);
        fail(s, WEFT_ENOMEM, "rank %u: out of memory for its program", r);
        return;
    }
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    uint32_t nops = rp->sh->p.nops;
    s->rk[r].prog.left = nops;
    if (!nops) {
        finish_rank(s, r, t0);
        return;
    }
    for (uint32_t i = 0; i < nops; i++)
        if (rp_ops(rp)[i].pending == 0)
            release(s, r, i, t0);
    run_instant(s, t0);
}

/* ---- waiting for a busy rank ---- */

enum { WQ_CALC = 0, WQ_SEND = 1, WQ_MSG = 2 };

static double min_nic(const double *n, int ports)
{
    double m = n[0];
    for (int k = 1; k < ports; k++)
        m = n[k] < m ? n[k] : m;
    return m;
}

/* When the head of rank r's queue cls could run. */
static double wq_ready(sim_t *s, uint32_t r, int cls)
{
    double t = cpu_free(s, r, 0);
    if (cls == WQ_SEND)
        t = maxd(t, min_nic(nic_s_of(s, r), s->m->ports));
    else if (cls == WQ_MSG)
        t = maxd(t, min_nic(nic_r_of(s, r), s->m->ports));
    return t;
}

static void schedule_wake(sim_t *s, uint32_t r)
{
    double w = -1;
    for (int c = 0; c < 3; c++)
        if (s->fq[r].wq[c].head != NIL) {
            double t = wq_ready(s, r, c);
            if (w < 0 || t < w)
                w = t;
        }
    if (w >= 0 && (s->fq[r].wake < 0 || w < s->fq[r].wake)) {
        s->fq[r].wake = w;
        push(s, w, EV_WAKE, r, 0);
    }
}

/* Item idx (an op, or a message record for WQ_MSG) of rank r cannot run
 * before `ready`: it goes back into the event queue (LogGOPSim's order, and
 * always with several CPUs per rank), or waits in the rank's queue. */
static void park(sim_t *s, uint32_t r, int cls, uint32_t idx, double ready)
{
    if (!s->fifo) {
        push(s, ready, cls == WQ_MSG ? EV_MSG : cls == WQ_SEND ? EV_SEND : EV_CALC, r, idx);
        return;
    }
    if (s->freewn == NIL && s->nwn == s->wncap) {
        uint32_t nc = s->wncap ? s->wncap * 2 : 1024;
        struct wnode *w = realloc(s->wn, (size_t)nc * sizeof *w);
        if (!w) {
            fail(s, WEFT_ENOMEM, "out of memory for %u waiting operations", s->nwn);
            return;
        }
        size_t grown = (size_t)(nc - s->wncap) * sizeof *w;
        s->wn = w, s->wncap = nc; /* before account, which may read them */
        account(s, (ssize_t)grown);
    }
    uint32_t n;
    if (s->freewn != NIL)
        n = s->freewn, s->freewn = s->wn[n].next;
    else
        n = s->nwn++;
    uint64_t seq = s->seq++;
    s->wn[n].idx = idx, s->wn[n].next = NIL;
    struct wqueue *q = &s->fq[r].wq[cls];
    if (q->head == NIL)
        q->head = n, q->seq = seq;
    else
        s->wn[q->tail].next = n, s->wn[q->tail].next_seq = seq;
    q->tail = n;
    schedule_wake(s, r);
}

/* Is something of class cls already waiting at rank r (newcomers queue
 * behind it)? */
static inline bool queued(const sim_t *s, uint32_t r, int cls)
{
    return s->fifo && s->fq[r].wq[cls].head != NIL;
}

/* ---- running operations and messages ---- */

/* Extra CPU time for one use of a CPU: noise_ns with probability
 * noise_prob. */
static double noise(sim_t *s)
{
    if (s->noise_prob <= 0)
        return 0;
    return sim_uniform(&s->rng) < s->noise_prob ? s->noise_ns : 0;
}

/* Rank r's offset into the noise trace: drawn from the seed and r
 * (splitmix64), so that no per-rank state is kept at millions of ranks. */
static double trace_offset(const sim_t *s, uint32_t r)
{
    if (s->trace_offset >= 0)
        return s->trace_offset;
    uint64_t z = s->trace_seed + ((uint64_t)r + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * s->trace->period;
}

/* The noise a use of rank r's CPU from t for cost ns meets: the drawn
 * kind (noise_prob), and the trace's detours. */
static double cpu_noise(sim_t *s, uint32_t r, double t, double cost)
{
    double n = noise(s);
    if (s->trace)
        n += sim_trace_detour(s->trace, t + trace_offset(s, r), cost);
    return n;
}

static void rendezvous_done(sim_t *s, const mrec_t *mr, double t)
{
    uint32_t src = mr->src;
    double *sc = cpu_of(s, src, mr->cpu), *sn = &nic_s_of(s, src)[mr->nic];
    *sc = maxd(*sc, t);
    *sn = maxd(*sn, t);
    done(s, src, mr->op, t);
}

/* Message mi is in at rank r at time t: it completes the oldest posted
 * receive of its (source, tag), or waits for one as unexpected. */
static void match_message(sim_t *s, uint32_t r, uint32_t mi, double t)
{
    const sim_model_t *m = s->m;
    mrec_t *mr = &s->rec[mi];
    uint32_t recv_op = posted_take(s, r, mr->src, mr->tag);
    if (recv_op == NIL) {
        match_put(s, r, mr->src, mr->tag, mi);
        return;
    }
    if (mr->size > m->S)
        rendezvous_done(s, mr, t);
    rec_free(s, mi);
    done(s, r, recv_op, t);
}

/* Takes message mi in at rank r at time t (its CPU and a NIC are free).
 * LogGOPSim's receive holds the CPU as long as the bytes come in, and the
 * message matches at once (its successors then wait for the CPU); with
 * offload the CPU pays o + (s-1)O and the message matches when it is in. */
static void take_message(sim_t *s, uint32_t r, uint32_t mi, double t)
{
    const sim_model_t *m = s->m;
    const mrec_t *mr = &s->rec[mi];
    double *nic = &nic_r_of(s, r)[recv_nic(s, r)];
    double s1 = (double)(mr->size ? mr->size - 1 : 0);
    double in = m->o + maxd(s1 * m->O, s1 * m->G);
    double cost = m->offload ? m->o + s1 * m->O : in;
    hold_cpu(s, r, mr->cpu, t, cost + cpu_noise(s, r, t, cost));
    *nic = t + m->g + s1 * m->G;
    if (r == s->tl_rank)
        fprintf(s->timeline, "%.3f\ttaken in\tmessage from %u tag %u bytes %" PRIu64 "\n", t,
                mr->src, mr->tag, mr->size);
    if (m->offload)
        push(s, t + in, EV_IN, r, mi);
    else
        match_message(s, r, mi, t);
}

static void issue_send(sim_t *s, uint32_t r, uint32_t i, double t)
{
    const sim_model_t *m = s->m;
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    const sim_op_t *op = &rp_ops(rp)[i];
    int k = send_nic(s, r, op);
    double *nic = &nic_s_of(s, r)[k];
    satisfy(s, r, i, t, false);
    if (r == s->tl_rank)
        timeline_step(s, i, t, "started");
    double s1 = (double)(op->size ? op->size - 1 : 0);
    double cost = m->o + s1 * m->O;
    hold_cpu(s, r, op->cpu, t, cost + cpu_noise(s, r, t, cost));
    *nic = t + m->g + s1 * m->G;
    uint32_t mi = rec_new(s);
    if (mi == NIL)
        return;
    mrec_t *mr = &s->rec[mi];
    mr->size = op->size, mr->src = r, mr->op = i, mr->tag = op->tag, mr->next = NIL;
    mr->cpu = op->cpu, mr->nic = (uint8_t)k;
    s->messages++;
    push(s, t + m->o + m->L, EV_MSG, (uint32_t)rp_peer(rp, op), mi);
    if (op->size <= m->S)
        done(s, r, i, t);
}

static void run_calc(sim_t *s, uint32_t r, uint32_t i, double t)
{
    const sim_op_t *op = &rp_ops(&s->rk[r].prog)[i];
    double cost = calc_cost(s->m, op);
    if (r == s->tl_rank)
        timeline_step(s, i, t, "started");
    hold_cpu(s, r, op->cpu, t, cost + cpu_noise(s, r, t, cost));
    satisfy(s, r, i, t, false);
    done(s, r, i, t);
}

/* A message is in at rank r (its first byte at time t). */
static void on_message(sim_t *s, uint32_t r, uint32_t mi, double t)
{
    const double *c = clocks(s, r);
    double ready = s->simple ? maxd(c[0], c[2])
                             : maxd(cpu_free(s, r, s->rec[mi].cpu), nic_r_of(s, r)[recv_nic(s, r)]);
    if (ready > t || queued(s, r, WQ_MSG))
        park(s, r, WQ_MSG, mi, ready);
    else if (switch_in(s, r, t))
        park(s, r, WQ_MSG, mi, t + s->m->sw);
    else
        take_message(s, r, mi, t);
}

static void on_send(sim_t *s, uint32_t r, uint32_t i, double t)
{
    double ready;
    if (s->simple) {
        ready = maxd(clocks(s, r)[0], clocks(s, r)[1]);
    } else {
        const sim_op_t *op = &rp_ops(&s->rk[r].prog)[i];
        ready = maxd(cpu_free(s, r, op->cpu), nic_s_of(s, r)[send_nic(s, r, op)]);
    }
    if (ready > t || queued(s, r, WQ_SEND))
        park(s, r, WQ_SEND, i, ready);
    else if (switch_in(s, r, t))
        park(s, r, WQ_SEND, i, t + s->m->sw);
    else
        issue_send(s, r, i, t);
}

static void on_calc(sim_t *s, uint32_t r, uint32_t i, double t)
{
    double ready = s->simple ? clocks(s, r)[0] : cpu_free(s, r, rp_ops(&s->rk[r].prog)[i].cpu);
    if (ready > t || queued(s, r, WQ_CALC))
        park(s, r, WQ_CALC, i, ready);
    else if (switch_in(s, r, t))
        park(s, r, WQ_CALC, i, t + s->m->sw);
    else
        run_calc(s, r, i, t);
}

/* A receive is posted: it takes the oldest unexpected message of its
 * (source, tag), else waits for one. */
static void on_recv(sim_t *s, uint32_t r, uint32_t i, double t)
{
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    const sim_op_t *op = &rp_ops(rp)[i];
    satisfy(s, r, i, t, false);
    if (r == s->tl_rank)
        timeline_step(s, i, t, "posted");
    uint32_t mi = match_take(s, r, (uint32_t)rp_peer(rp, op), op->tag);
    if (mi == NIL) {
        recv_post(s, r, i);
        return;
    }
    mrec_t *mr = &s->rec[mi];
    if (mr->size > s->m->S)
        rendezvous_done(s, mr, t);
    rec_free(s, mi);
    done(s, r, i, t);
}

/* The rank's first waiting item may run: run, oldest first, whatever can
 * at t, then sleep until the next can. */
static void on_wake(sim_t *s, uint32_t r, double t)
{
    if (s->fq[r].wake != t)
        return; /* superseded by an earlier wake-up */
    s->fq[r].wake = -1;
    for (;;) {
        int best = -1;
        uint64_t best_seq = UINT64_MAX;
        struct wqueue *q = s->fq[r].wq;
        for (int c = 0; c < 3; c++)
            if (q[c].head != NIL && q[c].seq < best_seq && wq_ready(s, r, c) <= t)
                best = c, best_seq = q[c].seq;
        if (best < 0 || s->err || switch_in(s, r, t))
            break; /* a switch: the core is the rank's once it is done */
        q += best;
        uint32_t n = q->head, idx = s->wn[n].idx;
        q->head = s->wn[n].next;
        if (q->head != NIL)
            q->seq = s->wn[n].next_seq;
        s->wn[n].next = s->freewn;
        s->freewn = n;
        if (best == WQ_MSG)
            take_message(s, r, idx, t);
        else if (best == WQ_SEND)
            issue_send(s, r, idx, t);
        else
            run_calc(s, r, idx, t);
    }
    schedule_wake(s, r);
}

static void on_event(sim_t *s, const ev_t *e)
{
    uint32_t rank = e->a >> 3;
    switch (e->a & 7) {
    case EV_WAKE:
        on_wake(s, rank, e->t);
        break;
    case EV_MSG:
        on_message(s, rank, e->b, e->t);
        break;
    case EV_IN:
        match_message(s, rank, e->b, e->t);
        break;
    case EV_SEND:
        on_send(s, rank, e->b, e->t);
        break;
    case EV_RECV:
        on_recv(s, rank, e->b, e->t);
        break;
    default:
        on_calc(s, rank, e->b, e->t);
        break;
    }
    run_instant(s, e->t);
}

/* ---- the run ---- */

/* Events of one time pop in the order they came, which for a level of a
 * tree is no order of ranks: the first touch of each event's rank (its
 * record, its program's block, its wait queues) went to memory, two thirds
 * of a 4 Mi-rank binomial bcast's time.  The queue holds the events to
 * come, so those PREFETCH_AHEAD places on have their rank's state fetched
 * now, and the records that give the blocks' addresses twice as far on.
 * A hint: no result changes (PERFORMANCE-LOG.md, "Prefetching the events to
 * come").  Always inlined: as a function of its own, GCC 12 at -O1 and up
 * judged it free of effects and dropped its call. */
enum { PREFETCH_AHEAD = 6 };
/* While the ranks' records fit in the L2 and the simulation holds less
 * than COLD_HELD bytes, what an event touches stays in the caches, where
 * the prefetches only cost: 2-5 % of a 4096-rank two-tree allreduce
 * (22 MiB held).  A 65536-rank one (4 MiB of records) gains 15 % by them.
 * The FIFO order always prefetches: its waiting items go cold whatever
 * the records (a 16384-rank two-tree allreduce, 1 MiB of records and up
 * to 178 MiB held, ran 6 % slower without until it held 32 MiB). */
#define COLD_RECORDS ((size_t)2 << 20)
#define COLD_HELD ((size_t)32 << 20)

__attribute__((always_inline)) static inline void prefetch_ahead(const sim_t *s)
{
    const evq_item_t *far = evq_ahead(&s->q, 2 * PREFETCH_AHEAD);
    if (far) {
        __builtin_prefetch(&s->rk[far->a >> 3].prog, 1);
        if (s->fifo && (far->a & 7) == EV_WAKE)
            __builtin_prefetch(&s->fq[far->a >> 3], 1);
    }
    const evq_item_t *near = evq_ahead(&s->q, PREFETCH_AHEAD);
    if (!near)
        return;
    size_t r = near->a >> 3;
    if ((near->a & 7) == EV_MSG || (near->a & 7) == EV_IN) /* its record */
        __builtin_prefetch(&s->rec[near->b], 0);
    if (s->clk) /* else they came with the record */
        __builtin_prefetch(clocks(s, (uint32_t)r), 1);
    const sim_rank_prog_t *rp = &s->rk[r].prog;
    if (rp->mem) {
        /* the block's first line holds the states; a block of many peers
         * goes on with their ranks and, above 8, the (rank, slot) pairs a
         * message's lookup searches, lines it reads too */
        const char *b = (const char *)rp->mem;
        uint32_t more = rp->npeers > 8 ? (rp->npeers * 12 + 63) / 64 : rp->npeers > 4;
        __builtin_prefetch(b, 1);
        for (uint32_t k = 1; k <= more && k <= 4; k++)
            __builtin_prefetch(b + 64 * k, 1);
    }
    if (s->fifo) {
        __builtin_prefetch(&s->fq[r], 1);
        /* a wake-up reads its queues' first nodes, which waited long
         * enough to go cold: their indices were fetched six events ago */
        if ((near->a & 7) == EV_WAKE)
            for (int c = 0; c < 3; c++) {
                uint32_t h = s->fq[r].wq[c].head;
                if (h != NIL)
                    __builtin_prefetch(&s->wn[h], 1);
            }
    }
}

static const double *start_of;
static int by_start(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    double tx = start_of[x], ty = start_of[y];
    return tx < ty ? -1 : tx > ty ? 1 : (x > y) - (x < y);
}

/* Why the run ended with work left: a rank waiting for a message nobody
 * sends, else a rank stuck otherwise (a rendezvous nobody matches, a cycle),
 * else a message nobody received. */
static void explain_stuck(sim_t *s)
{
    for (int r = 0; r < s->P; r++) {
        if (has_finished(s, (uint32_t)r) || !s->rk[r].prog.sh)
            continue;
        const sim_rank_prog_t *rp = &s->rk[r].prog;
        for (uint32_t i = 0; i < rp->sh->p.nops; i++) {
            const sim_op_t *op = &rp_ops(rp)[i];
            if (op->kind == SIM_RECV && rp_state(rp, i) == SHAPE_POSTED) {
                fail(s, WEFT_EINVAL,
                     "deadlock: rank %d waits for a message from %d (tag %u, op %u) that is "
                     "never sent",
                     r, rp_peer(rp, op), op->tag, i);
                return;
            }
        }
    }
    const mslot_t *unrecv = NULL;
    for (size_t k = 0; k < s->tabcap && !unrecv; k++)
        if (s->tab[k].dst != NIL)
            unrecv = &s->tab[k];
    for (int r = 0; r < s->P; r++)
        if (!has_finished(s, (uint32_t)r)) {
            if (unrecv)
                fail(s, WEFT_EINVAL,
                     "deadlock: rank %d never finishes (%u operations left); a message from "
                     "rank %u to rank %u (tag %u) waits unreceived",
                     r, s->rk[r].prog.left, unrecv->src, unrecv->dst, unrecv->tag);
            else
                fail(s, WEFT_EINVAL, "deadlock: rank %d never finishes (%u operations left)", r,
                     s->rk[r].prog.left);
            return;
        }
    if (unrecv)
        fail(s, WEFT_EINVAL, "a message from rank %u to rank %u (tag %u) is never received",
             unrecv->src, unrecv->dst, unrecv->tag);
}

static bool over_time(const struct timespec *t0, const sim_opts_t *opts)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9 >
           opts->max_seconds;
}

static int sim_alloc(sim_t *s)
{
    size_t P = (size_t)s->P;
    s->freerec = NIL; /* first: a limit passed below reads the free lists */
    s->freewn = NIL;
    s->rk = big_alloc(P * sizeof *s->rk); /* zeroed */
    s->stride = (uint32_t)(s->m->cpus + 2 * s->m->ports);
    if (s->stride > RANK_CLOCKS)
        s->clk = malloc(P * s->stride * sizeof *s->clk);
    s->finished = calloc((P + 63) / 64, sizeof *s->finished);
    if (s->ncores) {
        s->core = calloc(s->ncores, sizeof *s->core);
        s->core_rank = malloc(s->ncores * sizeof *s->core_rank);
        if (!s->core || !s->core_rank)
            return fail(s, WEFT_ENOMEM, "out of memory for %u cores", s->ncores);
        for (uint32_t k = 0; k < s->ncores; k++)
            s->core_rank[k] = k; /* each core starts with its first rank */
        account(s, (ssize_t)(s->ncores * (sizeof *s->core + sizeof *s->core_rank)));
    }
    if (s->fifo) /* the wait queues: only the FIFO order has them */
        s->fq = big_alloc(P * sizeof *s->fq);
    if (!s->rk || (s->stride > RANK_CLOCKS && !s->clk) || !s->finished ||
        (s->fifo && !s->fq))
        return fail(s, WEFT_ENOMEM, "out of memory for %d ranks", s->P);
    account(s, (ssize_t)(P * (sizeof *s->rk + (s->clk ? s->stride * 8 : 0) +
                              (s->fifo ? sizeof *s->fq : 0)) +
                         (P + 63) / 64 * 8));
    const double *st = s->opts ? s->opts->start : NULL;
    for (size_t r = 0; r < P; r++) {
        double t0 = st ? st[r] : 0;
        /* a rank takes nothing in before it starts */
        for (uint32_t c = 0; c < s->stride; c++)
            clocks(s, (uint32_t)r)[c] = t0;
        if (s->fifo)
            s->fq[r] = (struct fifo_rec){.wq = {{.head = NIL}, {.head = NIL}, {.head = NIL}},
                                         .wake = -1};
    }
    return tab_grow(s);
}

static void sim_release(sim_t *s)
{
    if (s->rk) {
        ssize_t delta = 0;
        for (int r = 0; r < s->P; r++)
            sim_shape_release(&s->shapes, &s->rk[r].prog, &delta);
    }
    sim_shapes_free(&s->shapes);
    big_free(s->rk, (size_t)s->P * sizeof *s->rk);
    free(s->clk), free(s->finished);
    free(s->rec), free(s->tab), free(s->aside), free(s->work);
    big_free(s->fq, (size_t)s->P * sizeof *s->fq);
    free(s->wn);
    free(s->work_rank);
    free(s->core), free(s->core_rank);
    evq_free(&s->q);
}

/* Refuses a model, rank count or start times the simulator cannot take. */
static int check_run(const sim_model_t *m, int nrank, const double *st, char *msg, size_t len)
{
    if (nrank < 1 || nrank > 1 << 24) { /* an event holds rank << 3 in 32 bits */
        snprintf(msg, len, "%d ranks: want 1 to 2^24", nrank);
        return WEFT_EINVAL;
    }
    if (m->ports < 1 || m->ports > 64 || m->cpus < 1 || m->cpus > 256) {
        snprintf(msg, len, "the model wants 1 to 64 ports and 1 to 256 CPUs");
        return WEFT_EINVAL;
    }
    if (m->cores && m->cpus > 1) {
        snprintf(msg, len, "ranks sharing cores (cores %u) with several CPUs per rank (GOAL's "
                           "cpu %d) are not modelled", m->cores, m->cpus - 1);
        return WEFT_ENOTSUP;
    }
    for (int r = 0; st && r < nrank; r++)
        if (!(st[r] >= 0 && st[r] < 3.6e15)) {
            snprintf(msg, len, "rank %d's start time %g is not 0 to an hour's ns", r, st[r]);
            return WEFT_EINVAL;
        }
    return WEFT_OK;
}

/* Takes the run's options into s: the order, the shared cores, how rank
 * records are laid out, CPU noise (drawn or from a trace). */
static int setup_run(sim_t *s, const sim_model_t *m, int nrank, const sim_opts_t *opts)
{
    s->fifo = opts && opts->order == SIM_ORDER_FIFO && m->cpus == 1;
    /* as many cores as ranks or more: each its own, LogGOPS exactly */
    s->ncores = m->cores && m->cores < (uint32_t)nrank ? m->cores : 0;
    s->simple = m->cpus == 1 && m->ports == 1 && !s->ncores;
    s->cold = (size_t)nrank * sizeof(struct rank_rec) > COLD_RECORDS || s->fifo;
    s->trace_offset = -1;
    s->tl_rank = UINT32_MAX;
    s->max_bytes = opts ? opts->max_bytes : 0;
    if (!opts)
        return WEFT_OK;
    if (opts->timeline) {
        if (opts->timeline_rank < 0 || opts->timeline_rank >= nrank) {
            snprintf(s->msg, s->msglen, "timeline of rank %d: not a rank of 0..%d",
                     opts->timeline_rank, nrank - 1);
            return WEFT_EINVAL;
        }
        s->timeline = opts->timeline, s->tl_rank = (uint32_t)opts->timeline_rank;
    }
    s->finish_out = opts->finish;
    if (opts->noise_prob > 0) {
        if (!(opts->noise_prob <= 1 && opts->noise_ns >= 0 && opts->noise_ns < 3.6e12)) {
            snprintf(s->msg, s->msglen, "noise: want a probability 0 to 1 and 0 ns to an hour");
            return WEFT_EINVAL;
        }
        s->noise_prob = opts->noise_prob, s->noise_ns = opts->noise_ns;
        s->rng = opts->noise_seed * 0x9E3779B97F4A7C15ull | 1;
    }
    if (opts->trace) {
        if (!(opts->trace->n && opts->trace->period > 0) || !(opts->trace_offset < 3.6e15)) {
            snprintf(s->msg, s->msglen, "noise trace: empty, or an offset past an hour's ns");
            return WEFT_EINVAL;
        }
        s->trace = opts->trace;
        s->trace_seed = opts->noise_seed * 0x9E3779B97F4A7C15ull;
        s->trace_offset = opts->trace_offset;
        if (s->trace_offset < 0 && opts->trace_cosched) /* one offset for all */
            s->trace_offset = trace_offset(s, UINT32_MAX);
    }
    return WEFT_OK;
}

/* The ranks in order of their start times (NULL, and s->err, without
 * memory). */
static uint32_t *start_order(sim_t *s, const double *st)
{
    uint32_t *order = malloc((size_t)s->P * sizeof *order);
    if (!order) {
        fail(s, WEFT_ENOMEM, "out of memory for %d ranks", s->P);
        return NULL;
    }
    for (int r = 0; r < s->P; r++)
        order[r] = (uint32_t)r;
    start_of = st;
    qsort(order, (size_t)s->P, sizeof *order, by_start);
    return order;
}

/* Runs the events until none is left, an error, or a limit asked for;
 * ranks start (their programs built) when the clock reaches their start. */
static void run_events(sim_t *s, const double *st, const uint32_t *order,
                       const struct timespec *began)
{
    const sim_opts_t *opts = s->opts;
    uint32_t next = 0;
    while (!s->err) {
        if (opts && opts->max_events && s->events >= opts->max_events &&
            (s->q.size || next < (uint32_t)s->P)) {
            fail(s, WEFT_ENOTSUP, "stopped after %" PRIu64 " events (the limit asked for)",
                 s->events);
            break;
        }
        if (opts && opts->max_seconds > 0 && !(s->events & 63) && over_time(began, opts)) {
            fail(s, WEFT_ENOTSUP, "stopped after %.1f s (the limit asked for)",
                 opts->max_seconds);
            break;
        }
        if (next < (uint32_t)s->P) {
            uint32_t r = order ? order[next] : next;
            double t0 = st ? st[r] : 0;
            if (!s->q.size || t0 <= evq_peek_time(&s->q)) {
                next++;
                s->events++;
                start_rank(s, r, t0);
                continue;
            }
        }
        if (!s->q.size)
            break;
        ev_t e;
        if (!pop(s, &e))
            break;
        if (s->cold || s->bytes > COLD_HELD)
            prefetch_ahead(s);
        s->events++;
        on_event(s, &e);
    }
}

int sim_run(const sim_model_t *m, int nrank, sim_build_fn build, void *ctx,
            const sim_opts_t *opts, sim_result_t *res, char *msg, size_t len)
{
    memset(res, 0, sizeof *res);
    const double *st = opts ? opts->start : NULL;
    int rc = check_run(m, nrank, st, msg, len);
    if (rc)
        return rc;
    sim_t s;
    memset(&s, 0, sizeof s);
    s.m = m, s.P = nrank, s.build = build, s.ctx = ctx, s.opts = opts;
    s.msg = msg, s.msglen = len;
    if ((rc = setup_run(&s, m, nrank, opts)))
        return rc;
    uint32_t *order = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (!sim_alloc(&s) && st)
        order = start_order(&s, st);
    if (!s.err)
        run_events(&s, st, order, &a);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (!s.err && (s.nfinished < nrank || s.tabused))
        explain_stuck(&s);
    res->events = s.events;
    res->messages = s.messages;
    res->seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    res->peak_bytes = s.peak;
    if (!s.err) {
        res->t_max = s.t_max;
        res->t_mean = s.t_sum / nrank;
        res->slowest = s.slowest;
    }
    free(order);
    sim_release(&s);
    return s.err;
}
