/* bounds.c — lower bounds on each collective's time under the LogGOPS model
 * exactly as the simulator runs it (loggops.c, LogGOPSim's semantics), for
 * any parameters: no schedule of the collective, whatever its algorithm,
 * chunk count or message sizes, finishes sooner.  docs/ALGORITHMS.md
 * ("Lower bounds") derives each; test_sim holds every schedule-built
 * algorithm to them over presets and odd models.
 *
 * Two ingredients.  Latency: how soon information from one rank can reach
 * P - 1 others (or, reversed in time, flow into one rank), the optimal
 * single-item broadcast of LogP (Karp, Sahay, Santos and Schauser 1993):
 * every informed rank sends to a new one as often as its CPU and NICs let
 * it, and the (P - 1)-th such send is the earliest any schedule can make.
 * Bandwidth: a rank that must take in B bytes holds its CPU or its NIC for
 * at least (B - 1) bytes' worth after its first message arrives.  The
 * alpha-beta forms of the seeds (d alpha per level, alpha + s beta per
 * message) are not bounds here: a LogGOPS rank sends every max(o, g), not
 * every L + 2o, so a linear broadcast beats d alpha. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evq.h"
#include "sim.h"

/* A message of s bytes takes L + 2o + (s - 1) max(G, O) end to end, which
 * is alpha + s beta with these two. */
double sim_beta(const sim_model_t *m) { return m->G > m->O ? m->G : m->O; }
double sim_alpha(const sim_model_t *m)
{
    double a = m->L + 2 * m->o - sim_beta(m);
    return a > 0 ? a : 0;
}

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

/* ---- latency: the greedy LogP broadcast ---- */

/* The send slots of one rank: its i-th send can start e(i) after it may
 * first send, no sooner (one per o on each of its CPUs, one per g on each
 * NIC; with nic false the NICs are not counted). */
typedef struct {
    double o, g;
    uint64_t cpus, ports;
    bool nic;
} slots_t;

static double slot_at(const slots_t *sl, uint64_t i)
{
    double t = (double)(i / sl->cpus) * sl->o;
    return sl->nic ? max2(t, (double)(i / sl->ports) * sl->g) : t;
}

/* A group of ranks that may first send at base; slot i is next, at t. */
typedef struct {
    double t, base;
    uint64_t i, ranks;
} gen_t;

/* Advances g past its slots at g->t: how many ranks' slots those were.
 * (Offsets compared, not base + offset, which rounds.) */
static uint64_t take_slots(const slots_t *sl, gen_t *g)
{
    uint64_t k = 0;
    double off = slot_at(sl, g->i);
    while (slot_at(sl, g->i) == off)
        g->i++, k++;
    g->t = g->base + slot_at(sl, g->i);
    return k * g->ranks;
}

/* Past this many steps (or groups) the bound settles for one hop (still a bound):
 * only models whose o and g are tiny against L get near it. */
enum { SPREAD_STEPS_MAX = 4 * 1000 * 1000 };

/* The earliest time at which P - 1 sends from informed ranks can have
 * started, one rank informed at 0 and a rank informed by a send at s able
 * to send from s + hop: the time of the (P - 1)-th earliest slot of the
 * greedy broadcast.  Ranks that may first send at one instant are one
 * group, so the work grows with the distinct instants, not with P. */
static double spread_time(int P, const slots_t *sl, double hop)
{
    if (P <= 2)
        return 0;
    if (slot_at(sl, 1) == 0 && slot_at(sl, 64) == 0)
        return 0; /* no gap at all: one rank reaches every other at once */
    /* the groups' next slots in the simulator's event queue (evq.h): time
     * never goes back here either, and ties do not matter */
    uint64_t need = (uint64_t)P - 1, ranks = 1, steps = 0;
    gen_t *g = NULL;
    uint32_t n = 0, cap = 0;
    evq_t q;
    memset(&q, 0, sizeof q);
    double base = 0, found = 0;
    for (;;) {
        if (n == cap) { /* room for the group of the ranks reached last */
            gen_t *ng = cap < SPREAD_STEPS_MAX ? realloc(g, 2 * (cap + 32) * sizeof *g) : NULL;
            if (!ng)
                break;
            g = ng, cap = 2 * (cap + 32);
        }
        g[n] = (gen_t){base + slot_at(sl, 0), base, 0, ranks};
        if (evq_push(&q, (evq_item_t){g[n].t, n, 0}))
            break;
        n++;
        double t = evq_peek_time(&q);
        uint64_t sends = 0;
        evq_item_t it;
        while (q.size && evq_peek_time(&q) == t) {
            if (++steps > SPREAD_STEPS_MAX || evq_pop(&q, &it))
                goto out;
            sends += take_slots(sl, &g[it.a]);
            if (evq_push(&q, (evq_item_t){g[it.a].t, it.a, 0}))
                goto out;
        }
        if (sends >= need) {
            found = t;
            break;
        }
        need -= sends;
        base = t + hop, ranks = sends;
    }
out:
    evq_free(&q);
    free(g);
    return found;
}

/* ---- the collectives ---- */

typedef struct {
    double one;    /* a single message's least time: 2o + L */
    double spread; /* from one rank to P - 1 others: spread_time */
    double gather; /* from P - 1 others into one rank (the spread reversed) */
    double r_in;   /* a byte taken in after the first: CPU or receiving NIC */
    double r_rev;  /* the same in the reversed model (reduce, below) */
    double r_out;  /* a byte sent by a rank whose bytes all start with it */
} terms_t;

static terms_t terms_of(int P, const sim_model_t *m)
{
    /* a sweep asks for one P and model once per algorithm and size */
    static _Thread_local struct {
        int P;
        sim_model_t m;
        terms_t t;
    } last = {0};
    if (last.P == P && !memcmp(&last.m, m, sizeof *m))
        return last.t;
    terms_t t;
    uint64_t cpus = m->cpus > 0 ? (uint64_t)m->cpus : 1, ports = m->ports > 0 ? m->ports : 1;
    double X = max2(m->O, m->G); /* a received byte's CPU time */
    bool one_cpu = cpus == 1, one_nic = ports == 1;
    /* a rank forwards once its receive has held its only CPU o */
    double hop = m->o + m->L + (one_cpu ? m->o : 0);
    slots_t sl = {m->o, m->g, cpus, ports, true};
    t.one = 2 * m->o + m->L;
    t.spread = spread_time(P, &sl, hop);
    /* Reversed in time, a rank's receives become its sends; their gaps
     * stay at least g where a received byte's CPU time is G's (O <= G) */
    sl.nic = m->O <= m->G;
    t.gather = spread_time(P, &sl, hop);
    double cpu_in = one_cpu ? min2(m->o, X) : 0, nic = one_nic ? min2(m->g, m->G) : 0;
    t.r_in = max2(cpu_in, nic);
    t.r_rev = one_cpu ? min2(m->o, m->O) : 0;
    t.r_out = max2(one_cpu ? min2(m->o, m->O) : 0, nic);
    last.P = P, last.m = *m, last.t = t;
    return t;
}

/* Taking in B bytes (B >= 1) after a first message no sooner than o + L. */
static double take_in(const terms_t *t, double B, double rate)
{
    return t->one + (B > 1 ? B - 1 : 0) * rate;
}

double sim_lower_bound(weft_coll_t coll, int P, uint64_t n, const sim_model_t *m)
{
    if (P <= 1)
        return 0;
    if (n == 0 && coll != WEFT_COLL_BARRIER)
        return 0; /* a schedule may move nothing */
    terms_t t = terms_of(P, m);
    double N = (double)n, f = (double)(P - 1) / P;
    switch (coll) {
    case WEFT_COLL_BCAST:
        /* the rank informed last still takes in all n bytes */
        return t.spread + take_in(&t, N, t.r_in);
    case WEFT_COLL_REDUCE:
        /* the bcast reversed; the root takes in n bytes; the (P-1) n
         * bytes of combining shared by P CPUs at best */
        return max2(max2(t.gather + take_in(&t, N, t.r_rev), take_in(&t, N, t.r_in)),
                    f * N * m->gamma);
    case WEFT_COLL_ALLREDUCE:
        /* every rank hears from all; one-way gossip needs 2(P-1)
         * transfers of each byte, so some rank takes in 2(P-1)/P n */
        return max2(max2(t.gather + t.one, take_in(&t, ceil(2 * f * N), t.r_in)),
                    f * N * m->gamma);
    case WEFT_COLL_REDUCE_SCATTER:
        /* n is one rank's block: (P-1) transfers and combines of each of
         * the P n bytes, so some rank takes in and combines (P-1) n */
        return max2(max2(t.gather + t.one, take_in(&t, (P - 1) * N, t.r_in)),
                    (P - 1) * N * m->gamma);
    case WEFT_COLL_ALLGATHER:
    case WEFT_COLL_GATHER:
        /* (P-1) blocks arrive at every rank (at the root) */
        return max2(t.gather + t.one, take_in(&t, (P - 1) * N, t.r_in));
    case WEFT_COLL_SCATTER:
        /* (P-1) blocks leave the root, the last one to the rank that ends
         * last */
        return max2(t.spread + t.one, take_in(&t, (P - 1) * N, t.r_out));
    case WEFT_COLL_BARRIER:
        return t.gather + t.one;
    default:
        return -1;
    }
}
