/* adaptive.c — an allreduce that chooses, call by call, between a
 * balanced-best schedule and an arrival-aware algorithm from the arrival
 * spread it has seen (beyond the process-arrival-pattern seed, whose future
 * work asks for selection driven by the measured imbalance).
 *
 * Every rank takes a ticket in the communicator's arrival record, as the
 * arrival-driven algorithms do (arrival.h).  The first arrival of a call
 * decides for everyone, from the spread (last arrival minus first) that
 * the record's previous call measured, and publishes the choice with its
 * ticket, so every rank runs the same algorithm without a message:
 *
 *   spread <= threshold  balanced: recursive doubling up to 64 KiB,
 *                        Rabenseifner above (the schedules, handed over to
 *                        the engine once the ticket is taken);
 *   spread >  threshold  arrival-aware: pap_leader up to 64 KiB, pap_chain
 *                        above (continued from the ticket just taken).
 *
 * The threshold T is what the balanced schedule costs when all arrive
 * together, ceil(lg P) (alpha + n beta) with alpha = 1.5 us and beta =
 * 0.2 ns/B (this machine's ping-pong, weft bench --mif); with
 * hysteresis: arrival-aware once the spread exceeds 4 T, balanced again
 * once it is back within T.  threshold=US sets the first point instead
 * (the second is then a quarter of it).
 * Below it a late rank costs the balanced schedule little more than it
 * costs any algorithm; above it the arrival-aware ones let the early ranks
 * work or leave.  The spread of the call before last is the evidence (the
 * record alternates between two calls), so a change of pattern is
 * followed within two calls.  What it costs: a ticket per call (a
 * compare-and-swap on a shared line and a wake-up of sleeping peers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrival.h"

#define SMALL 65536u /* bytes: pap_leader and recursive doubling up to here */

enum { BALANCED = 0, AWARE = 1 };
enum { ARRIVE, FINISHED };

static double threshold_us(const exec_t *e)
{
    int P = e->s->nrank, lg = 0;
    while ((1 << lg) < P)
        lg++;
    return lg * (1.5 + (double)arrival_bytes(e) * 0.2e-3);
}

/* The spread past which it turns arrival-aware: threshold=US, or 4T.
 * Hysteresis: it turns back only below a quarter of that, so that the
 * noise of ranks sharing cores does not flip the choice call after call. */
static double switch_us(const exec_t *e)
{
    int set = e->params ? e->params->threshold : 0;
    return set ? (double)(set - 1) : 4 * threshold_us(e);
}

static int decide(exec_t *e, uint64_t spread_us, int last)
{
    double thr = switch_us(e) / (last == AWARE ? 4 : 1);
    return (double)spread_us > thr ? AWARE : BALANCED;
}

static const char *choice_name(const exec_t *e, int mode)
{
    bool small = arrival_bytes(e) <= SMALL;
    if (mode == AWARE)
        return small ? "pap_leader" : "pap_chain";
    return small ? "recursive_doubling" : "rabenseifner";
}

/* WEFT_VERBOSE: rank 0 says each change of choice (the first arrival made
 * it; every rank runs it). */
static void log_choice(exec_t *e)
{
    if (e->s->rank != 0 || !weft_verbose() || e->aux_logged == e->ar.mode + 1)
        return;
    e->aux_logged = e->ar.mode + 1;
    fprintf(stderr, "weft: adaptive: allreduce, P=%d, %zu bytes, call #%u: %s (the arrival "
            "spread of the call before last %s %.1f us)\n", e->s->nrank, arrival_bytes(e),
            (unsigned)(e->desc->key & 0xffffffu), choice_name(e, e->ar.mode),
            e->ar.mode == AWARE ? "exceeds" : "is within",
            switch_us(e) / (e->ar.mode == AWARE ? 1 : 4));
}

static void adaptive_start(exec_t *e)
{
    arrival_reset(e);
    e->ar.decide = decide;
    e->ar.phase = arrival_trivial(e) ? FINISHED : ARRIVE;
    if (e->ar.phase == ARRIVE)
        arrival_enlist(e);
}

/* The balanced schedule for this call, built once per request (a request
 * serves one call shape) and kept with it. */
static const sched_img_t *balanced(exec_t *e)
{
    const algo_t *al = algo_find(WEFT_COLL_ALLREDUCE, choice_name(e, BALANCED));
    if (e->aux && e->aux_key == al)
        return e->aux;
    sched_img_free(e->aux);
    e->aux = NULL;
    e->aux_key = NULL;
    coll_args_t a;
    arrival_coll_args(e, &a);
    int rc = algo_build(al, &a, &e->aux);
    if (rc) {
        e->err = rc;
        return NULL;
    }
    e->aux_key = al;
    return e->aux;
}

static int adaptive_progress(exec_t *e)
{
    if (e->err)
        return -e->err;
    if (e->ar.phase == FINISHED) {
        e->moved = 1;
        return 1;
    }
    if (!arrival_take(e))
        return arrival_idle(e, 0);
    log_choice(e);
    if (e->ar.mode == AWARE) {
        bool small = arrival_bytes(e) <= SMALL;
        e->board = small ? &pap_leader_ops : &pap_chain_ops;
        if (small)
            pap_leader_arrived(e);
        else
            pap_chain_arrived(e);
        return e->board->progress(e);
    }
    arrival_leave(e);
    const sched_img_t *s = balanced(e);
    int rc = s ? exec_switch_to_schedule(e, s) : e->err;
    if (rc)
        return -rc;
    return exec_progress(e);
}

const board_ops_t adaptive_ops = {adaptive_start, adaptive_progress, arrival_ready,
                                  arrival_waiting_for, NULL, arrival_abandon};
