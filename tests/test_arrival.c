/* test_arrival.c — the arrival-driven collectives (src/shmcoll: shm_twostep,
 * pap_leader, pap_chain) where test_coll's synchronised calls never take
 * them: ranks arriving in random order with random delays, on the world
 * and on communicators from dup and split (whose records may share a
 * host), call after call so that records are reused (10 000 pap_leader
 * calls), algorithms alternating on one record, split-phase calls in
 * flight (a call two ahead waits for the record), and the chain letting
 * early ranks go.  Modes "mismatch", "mixed" and "schedule": ranks that
 * disagree must fail, not hang.  `--mpi ALGO [MODE]` (under mpirun): the
 * same data tests for one algorithm on a communicator from MPI, whose
 * nodes (WEFT_NODE_SIZE) share no memory with each other: hier_pap's
 * records are its nodes' own. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#ifdef WEFT_HAVE_MPI
#include "weft_mpi.h"
#endif

/* built with a sanitizer (gcc says so by macro, clang by __has_feature) */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define WEFT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define WEFT_TEST_SANITIZED 1
#endif
#endif
#ifndef WEFT_TEST_SANITIZED
#define WEFT_TEST_SANITIZED 0
#endif

static int me, P;
#define CHECK_WHO() fprintf(stderr, "rank %d/%d: ", me, P)
#include "testing.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* xorshift: the same draws on every run, different per rank */
static uint64_t rng;
static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Arrive late: sleep past a millisecond, spin below (a spin of a few
 * microseconds still reorders arrivals). */
static void arrive_after(double seconds)
{
    if (seconds >= 1e-3) {
        struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
        nanosleep(&ts, NULL);
        return;
    }
    double end = now() + seconds;
    while (now() < end)
        ;
}

typedef struct algo_case {
    weft_coll_t coll;
    const char *name, *params;
} algo_case_t;

static const algo_case_t cases[] = {
    {WEFT_COLL_ALLREDUCE, "shm_twostep", NULL},
    {WEFT_COLL_ALLREDUCE, "pap_leader", NULL},
    {WEFT_COLL_ALLREDUCE, "pap_chain", NULL},
    {WEFT_COLL_REDUCE, "pap_chain", NULL},
    {WEFT_COLL_ALLREDUCE, "adaptive", NULL},
    {WEFT_COLL_ALLREDUCE, "hier_pap", NULL},
    /* hier_pap's other node levels: where there are nodes (WEFT_NODE_SIZE) */
    {WEFT_COLL_ALLREDUCE, "hier_pap", "node=leader"},
    {WEFT_COLL_ALLREDUCE, "hier_pap", "node=twostep"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

/* --mpi ALGO: only that algorithm's cases */
static const char *only_algo;
static bool wanted(const algo_case_t *c)
{
    if (c->params && !getenv("WEFT_NODE_SIZE"))
        return false;
    return !only_algo || !strcmp(c->name, only_algo);
}

static int32_t val(int rank, int call, size_t i) { return rank * 1000 + call * 7 + (int32_t)i; }

/* One call of case c on comm (rank r of n ranks, members[k] their world
 * ranks): int32 sum, exact; root rotates; in place every third call. */
static int run_call(const algo_case_t *c, weft_comm_t comm, int r, int n, const int *members,
                    int call, size_t cnt, int32_t *in, int32_t *out, weft_request_t *req)
{
    int root = call % n;
    bool inplace = call % 3 == 2 && (c->coll == WEFT_COLL_ALLREDUCE || r == root);
    for (size_t i = 0; i < cnt; i++)
        in[i] = val(me, call, i);
    memcpy(out, in, cnt * sizeof *in);
    const void *src = inplace ? WEFT_IN_PLACE : in;
    (void)members;
    if (c->coll == WEFT_COLL_ALLREDUCE)
        return req ? weft_iallreduce(src, out, cnt, WEFT_INT32, WEFT_SUM, comm, req)
                   : weft_allreduce(src, out, cnt, WEFT_INT32, WEFT_SUM, comm);
    return req ? weft_ireduce(src, out, cnt, WEFT_INT32, WEFT_SUM, root, comm, req)
               : weft_reduce(src, out, cnt, WEFT_INT32, WEFT_SUM, root, comm);
}

static size_t check_call(const algo_case_t *c, int r, int n, const int *members, int call,
                         size_t cnt, const int32_t *out)
{
    if (c->coll == WEFT_COLL_REDUCE && r != call % n)
        return 0;
    size_t bad = 0;
    for (size_t i = 0; i < cnt; i++) {
        int32_t want = 0;
        for (int k = 0; k < n; k++)
            want += val(members[k], call, i);
        bad += out[i] != want;
    }
    return bad;
}

static int members_of(weft_comm_t comm, int *members)
{
    int n = weft_comm_size(comm), w = me;
    for (int k = 0; k < n; k++)
        members[k] = -1;
    /* every member's world rank, gathered */
    int *all = calloc((size_t)n, sizeof *all);
    weft_allgather(&w, all, 1, WEFT_INT32, comm);
    memcpy(members, all, (size_t)n * sizeof *all);
    free(all);
    return n;
}

/* Random arrivals: each call, each rank waits 0..max_us first. */
static void random_arrivals(weft_comm_t comm, const char *label, int calls, double max_us,
                            size_t cnt)
{
    int members[128], n = members_of(comm, members), r = weft_comm_rank(comm);
    int32_t *in = malloc((cnt + 1) * sizeof *in), *out = malloc((cnt + 1) * sizeof *out);
    for (int k = 0; k < NCASES; k++) {
        const algo_case_t *c = &cases[k];
        if (!wanted(c))
            continue;
        CHECK(weft_set_algorithm(comm, c->coll, c->name, c->params) == WEFT_OK, "%s %s: %s", label,
              c->name, weft_last_error());
        size_t bad = 0;
        int errs = 0;
        for (int call = 0; call < calls; call++) {
            arrive_after(uniform() * max_us * 1e-6);
            int rc = run_call(c, comm, r, n, members, call, cnt, in, out, NULL);
            if (rc != WEFT_OK && errs++ < 3)
                CHECK(0, "%s %s %s call %d: error %d: %s", label, weft_coll_name(c->coll),
                      c->name, call, rc, weft_last_error());
            bad += check_call(c, r, n, members, call, cnt, out);
            const char *used = weft_last_algorithm(comm, c->coll);
            if (call == 0)
                CHECK(used && !strcmp(used, c->name), "%s: ran %s, not %s", label,
                      used ? used : "NULL", c->name);
        }
        CHECK(!bad, "%s %s %s, %zu elements, %d calls, arrivals 0-%.0f us: %zu wrong", label,
              weft_coll_name(c->coll), c->name, cnt, calls, max_us, bad);
        weft_set_algorithm(comm, c->coll, "auto", NULL);
    }
    free(in);
    free(out);
}

/* Every call a different algorithm on the same records: a record taken by
 * one kind is freed for the next. */
static void alternating(weft_comm_t comm, int calls)
{
    int members[128], n = members_of(comm, members), r = weft_comm_rank(comm);
    int32_t in[64], out[64];
    size_t bad = 0;
    int pick[NCASES], npick = 0;
    for (int k = 0; k < NCASES; k++)
        if (wanted(&cases[k]))
            pick[npick++] = k;
    for (int call = 0; call < calls; call++) {
        const algo_case_t *c = &cases[pick[call % npick]];
        weft_set_algorithm(comm, c->coll, c->name, c->params);
        arrive_after(uniform() * 30e-6);
        int rc = run_call(c, comm, r, n, members, call, 17, in, out, NULL);
        CHECK(rc == WEFT_OK, "alternating call %d (%s): %s", call, c->name, weft_last_error());
        bad += check_call(c, r, n, members, call, 17, out);
    }
    CHECK(!bad, "alternating algorithms, %d calls: %zu wrong", calls, bad);
    weft_set_algorithm(comm, WEFT_COLL_ALLREDUCE, "auto", NULL);
    weft_set_algorithm(comm, WEFT_COLL_REDUCE, "auto", NULL);
}

/* Split-phase: `depth` calls in flight before the first wait (the call two
 * ahead shares the first's record and must wait for it), finished in
 * reverse order, polled with weft_test. */
static void split_phase(weft_comm_t comm, int rounds, int depth)
{
    int members[128], n = members_of(comm, members), r = weft_comm_rank(comm);
    size_t cnt = 33;
    int32_t *in = malloc((size_t)depth * cnt * sizeof *in),
            *out = malloc((size_t)depth * cnt * sizeof *out);
    weft_request_t *req = calloc((size_t)depth, sizeof *req);
    for (int k = 0; k < NCASES; k++) {
        const algo_case_t *c = &cases[k];
        if (!wanted(c))
            continue;
        weft_set_algorithm(comm, c->coll, c->name, c->params);
        size_t bad = 0;
        for (int round = 0; round < rounds; round++) {
            arrive_after(uniform() * 200e-6);
            for (int d = 0; d < depth; d++) {
                int call = round * depth + d;
                int rc = run_call(c, comm, r, n, members, call, cnt, in + d * cnt, out + d * cnt,
                                  &req[d]);
                CHECK(rc == WEFT_OK, "split-phase %s start: %s", c->name, weft_last_error());
            }
            for (int d = depth - 1; d >= 0; d--) {
                int done = 0;
                while (!done && weft_test(&req[d], &done) == WEFT_OK)
                    ;
                CHECK(done, "split-phase %s: test failed: %s", c->name, weft_last_error());
            }
            for (int d = 0; d < depth; d++)
                bad += check_call(c, r, n, members, round * depth + d, cnt, out + d * cnt);
        }
        CHECK(!bad, "split-phase %s %s, %d in flight: %zu wrong", weft_coll_name(c->coll),
              c->name, depth, bad);
        weft_set_algorithm(comm, c->coll, "auto", NULL);
    }
    free(in);
    free(out);
    free(req);
}

/* Floats against a float64 reference: the order of the additions follows
 * arrival, so only a tolerance holds; every rank must still get the same
 * bits (the result comes from one rank). */
static void floats(weft_comm_t comm, int calls)
{
    int n = weft_comm_size(comm);
    size_t cnt = 1000;
    float *in = malloc(cnt * sizeof *in), *out = malloc(cnt * sizeof *out),
          *first = malloc(cnt * sizeof *first);
    for (int k = 0; k < NCASES; k++) {
        if (cases[k].coll != WEFT_COLL_ALLREDUCE || !wanted(&cases[k]))
            continue;
        const char *name = cases[k].name;
        weft_set_algorithm(comm, WEFT_COLL_ALLREDUCE, name, cases[k].params);
        size_t bad = 0, differ = 0;
        for (int call = 0; call < calls; call++) {
            for (size_t i = 0; i < cnt; i++)
                in[i] = 1.0f / (float)(1 + me + (int)i % 13) + (float)call * 1e-3f;
            arrive_after(uniform() * 100e-6);
            CHECK(weft_allreduce(in, out, cnt, WEFT_FLOAT32, WEFT_SUM, comm) == WEFT_OK,
                  "float %s: %s", name, weft_last_error());
            int members[128];
            members_of(comm, members);
            for (size_t i = 0; i < cnt; i++) {
                double ref = 0;
                for (int q = 0; q < n; q++)
                    ref += 1.0 / (double)(1 + members[q] + (int)i % 13) + call * 1e-3;
                if (fabs(out[i] - ref) > 1e-5 * n * fabs(ref) + 1e-6)
                    bad++;
            }
            /* rank 0's bits to everyone, compared */
            memcpy(first, out, cnt * sizeof *out);
            weft_bcast(first, cnt, WEFT_FLOAT32, 0, comm);
            differ += memcmp(first, out, cnt * sizeof *out) != 0;
        }
        CHECK(!bad, "float32 sum %s: %zu elements off the float64 reference", name, bad);
        CHECK(!differ, "float32 sum %s: %zu calls gave ranks different bits", name, differ);
    }
    weft_set_algorithm(comm, WEFT_COLL_ALLREDUCE, "auto", NULL);
    free(in);
    free(out);
    free(first);
}

/* Rank r arrives r * step late, the root last: in the chain each rank
 * waits only for the next to arrive; in a binomial tree rooted at the last
 * rank, early ranks wait for their late parents.  The mean time inside
 * over the ranks that are not the root: the chain's must be below. */
static double mean_inside(const char *algo, size_t cnt, double step, int reps)
{
    int root = P - 1;
    weft_set_algorithm(weft_comm_world(), WEFT_COLL_REDUCE, algo, NULL);
    float *in = calloc(cnt, sizeof *in), *out = calloc(cnt, sizeof *out);
    double sum = 0;
    for (int rep = 0; rep < reps; rep++) {
        weft_barrier(weft_comm_world());
        arrive_after(me * step);
        double t0 = now();
        CHECK(weft_reduce(in, out, cnt, WEFT_FLOAT32, WEFT_SUM, root, weft_comm_world()) ==
                  WEFT_OK,
              "reduce %s: %s", algo, weft_last_error());
        double inside = me == root ? 0 : now() - t0;
        weft_allreduce(WEFT_IN_PLACE, &inside, 1, WEFT_FLOAT64, WEFT_SUM, weft_comm_world());
        sum += inside / (P - 1);
    }
    weft_set_algorithm(weft_comm_world(), WEFT_COLL_REDUCE, "auto", NULL);
    free(in);
    free(out);
    return sum / reps;
}

static void chain_lets_go(void)
{
    if (P < 3 || P > 9)
        return; /* (P - 1) steps per call: long enough from 9 up */
    size_t cnt = 1 << 20; /* 4 MiB: no eager send lets a binomial leaf go */
    /* far above the noise of a loaded machine, and above the time a 4 MiB
     * step takes, which under a sanitizer's instrumentation is tens of ms.
     * The chain's mean is about one step plus its transfers, binomial's
     * about four steps (P = 9): the margin is three steps, and at 30 ms a
     * loaded 2-core machine (two test jobs and an 8-rank program beside
     * them) once made the chain's transfers 90 ms slower than binomial's */
#if WEFT_TEST_SANITIZED
    double step = 0.3;
#else
    double step = 0.08;
#endif
    double chain = mean_inside("pap_chain", cnt, step, 3),
           binomial = mean_inside("binomial", cnt, step, 3);
    if (me == 0)
        printf("rank r arrives r x %.0f ms late, root last: mean time inside reduce over the "
               "non-roots: pap_chain %.1f ms, binomial %.1f ms\n", step * 1e3, chain * 1e3,
               binomial * 1e3);
    CHECK(chain < binomial, "pap_chain's early ranks wait %.1f ms, binomial's %.1f ms",
          chain * 1e3, binomial * 1e3);
}

/* A call abandoned on one rank (its timeout expires: the others never
 * make it) must not keep its arrival record: calls on new communicators,
 * some of which share that record, still run. */
static void abandoned(void)
{
    weft_comm_t w = weft_comm_world(), a;
    CHECK(weft_comm_dup(w, &a) == WEFT_OK, "dup: %s", weft_last_error());
    int32_t in[4] = {1, 2, 3, 4}, out[4];
    if (me == 0 && P > 1) {
        weft_set_algorithm(a, WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
        weft_comm_set_timeout(a, 100);
        int rc = weft_allreduce(in, out, 4, WEFT_INT32, WEFT_SUM, a);
        CHECK(rc == WEFT_ETIMEDOUT, "a call nobody else makes: %d (%s)", rc, weft_last_error());
    }
    weft_barrier(w);
    if (me == 1) { /* comes late to it: told who abandoned it */
        weft_set_algorithm(a, WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
        weft_comm_set_timeout(a, 5000);
        int rc = weft_allreduce(in, out, 4, WEFT_INT32, WEFT_SUM, a);
        CHECK(rc == WEFT_EPEER && strstr(weft_last_error(), "rank 0"),
              "the call rank 0 abandoned, made late: %d (%s)", rc, weft_last_error());
        fprintf(stderr, "rank 1: late to an abandoned call -> %s\n", weft_last_error());
    }
    for (int k = 0; k < 8; k++) {
        weft_comm_t b = NULL;
        CHECK(weft_comm_dup(w, &b) == WEFT_OK, "dup: %s", weft_last_error());
        if (!b)
            break;
        weft_comm_set_timeout(b, 20000);
        weft_set_algorithm(b, WEFT_COLL_ALLREDUCE, cases[k % 3].name, NULL);
        for (int call = 0; call < 4; call++) {
            int rc = weft_allreduce(in, out, 4, WEFT_INT32, WEFT_SUM, b);
            CHECK(rc == WEFT_OK && out[3] == 4 * P, "after an abandoned call: %s on a new "
                  "communicator: %d (%s)", cases[k % 3].name, rc, weft_last_error());
        }
        weft_comm_free(&b);
    }
    weft_comm_free(&a);
}

/* Two communicators hosted by the same rank, called in different orders by
 * different ranks, as MPI allows: rank 0 calls X then Y, rank 1 only X,
 * rank 2 only Y and before the others.  A record shared between X and Y
 * would leave rank 0 waiting in X for Y's call to end. */
static void two_communicators(void)
{
    if (P < 3)
        return;
    weft_comm_t w = weft_comm_world(), x, y;
    weft_comm_split(w, me <= 1 ? 0 : WEFT_UNDEFINED, me, &x);
    weft_comm_split(w, me == 0 || me == 2 ? 0 : WEFT_UNDEFINED, me, &y);
    int32_t in[2] = {me, 1}, out[2];
    for (int round = 0; round < 20; round++) {
        if (me == 0)
            arrive_after(2e-3); /* rank 2 reaches Y first */
        if (x) {
            weft_set_algorithm(x, WEFT_COLL_ALLREDUCE, cases[round % 3].name, NULL);
            int rc = weft_allreduce(in, out, 2, WEFT_INT32, WEFT_SUM, x);
            CHECK(rc == WEFT_OK && out[0] == 1 && out[1] == 2, "X round %d: %d %s", round, rc,
                  weft_last_error());
        }
        if (y) {
            weft_set_algorithm(y, WEFT_COLL_ALLREDUCE, cases[round % 3].name, NULL);
            int rc = weft_allreduce(in, out, 2, WEFT_INT32, WEFT_SUM, y);
            CHECK(rc == WEFT_OK && out[0] == 2 && out[1] == 2, "Y round %d: %d %s", round, rc,
                  weft_last_error());
        }
    }
    if (x)
        weft_comm_free(&x);
    if (y)
        weft_comm_free(&y);
    weft_barrier(w);
}

/* More communicators than a rank has record pairs: the one too many is
 * refused on its rank 0 with the reason, its peers get an error, nobody
 * hangs; freeing one makes room. */
static void too_many_communicators(void)
{
    if (P < 2)
        return;
    weft_comm_t w = weft_comm_world(), c[10] = {NULL};
    int32_t in = 1, out = 0;
    int n = 0, rc = WEFT_OK;
    for (; n < 10; n++) {
        CHECK(weft_comm_dup(w, &c[n]) == WEFT_OK, "dup %d: %s", n, weft_last_error());
        if (!c[n])
            return;
        weft_comm_set_timeout(c[n], 20000);
        weft_set_algorithm(c[n], WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
        rc = weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, c[n]);
        if (rc)
            break;
    }
    /* the world (and the other tests' communicators) may hold pairs too */
    CHECK(rc != WEFT_OK && n >= 6 && n <= 8, "communicator %d of pap_leader: %d %s", n, rc,
          weft_last_error());
    /* every rank is refused, at once, with the reason (not its timeout) */
    CHECK(rc == WEFT_ENOTSUP && (strstr(weft_last_error(), "arrival-record pairs") ||
                                 strstr(weft_last_error(), "could not claim arrival records")),
          "rank %d: %d %s", me, rc, weft_last_error());
    for (int k = 0; k <= n && k < 10; k++)
        weft_comm_free(&c[k]);
    weft_comm_t d = NULL;
    CHECK(weft_comm_dup(w, &d) == WEFT_OK, "dup: %s", weft_last_error());
    if (!d)
        return;
    weft_set_algorithm(d, WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
    rc = weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, d);
    CHECK(rc == WEFT_OK && out == P, "after freeing: %d %s", rc, weft_last_error());
    weft_comm_free(&d);
}

/* Communicators made and freed as a program goes, every other one running
 * an arrival-driven call: their ids retire for good (arrival records are
 * kept by id), their board pairs do not, and the board keeps serving the
 * communicators made after them.  (Retired with the ids, the pairs ran out
 * after seven; and once retired ids filled a pair's places in the lowest
 * word of ids, every new communicator went without the board.) */
static void board_after_churn(int rounds)
{
    weft_comm_t w = weft_comm_world();
    int32_t in = 1, out = 0;
    for (int i = 0; i < rounds; i++) {
        weft_comm_t c = NULL;
        CHECK(weft_comm_dup(w, &c) == WEFT_OK, "dup %d: %s", i, weft_last_error());
        if (!c)
            return;
        const char *algo = i % 2 ? "pap_leader" : "board";
        weft_set_algorithm(c, WEFT_COLL_ALLREDUCE, algo, NULL);
        int rc = weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, c);
        CHECK(rc == WEFT_OK && out == P, "communicator %d (%s): %d %s", i, algo, rc,
              weft_last_error());
        weft_comm_free(&c);
    }
}

/* Mode "retired_ids": communicators made and freed after an arrival-driven
 * call until their retired ids run out: every rank then gets WEFT_ENOMEM
 * saying why, alike, and the communicators alive still work. */
static int retired_ids(void)
{
    weft_comm_t w = weft_comm_world();
    int32_t in = 1, out = 0;
    int rc = WEFT_OK, n = 0;
    for (; n < 70000 && rc == WEFT_OK; n++) {
        weft_comm_t c = NULL;
        if ((rc = weft_comm_dup(w, &c)))
            break;
        weft_set_algorithm(c, WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
        rc = weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, c);
        CHECK(rc == WEFT_OK && out == P, "communicator %d: %d %s", n, rc, weft_last_error());
        weft_comm_free(&c);
    }
    CHECK(rc == WEFT_ENOMEM && strstr(weft_last_error(), "retired") && n > 60000,
          "after %d communicators: %d %s", n, rc, weft_last_error());
    int32_t counts[2] = {n, -n};
    CHECK(weft_allreduce(WEFT_IN_PLACE, counts, 2, WEFT_INT32, WEFT_MAX, w) == WEFT_OK &&
              counts[0] == -counts[1],
          "the ranks ran out at different communicators: %d..%d", -counts[1], counts[0]);
    return 0;
}

/* Mode "adaptive": balanced calls, then rank r arriving r * 2 ms late,
 * then balanced again; adaptive.sh reads its WEFT_VERBOSE log (recursive
 * doubling, pap_leader, recursive doubling) and this checks the data. */
static void adaptive_switches(const char *params)
{
    weft_comm_t w = weft_comm_world();
    CHECK(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "adaptive", params) == WEFT_OK,
          "adaptive %s: %s", params ? params : "", weft_last_error());
    int32_t in[16], out[16];
    size_t bad = 0;
    for (int call = 0; call < 60; call++) {
        weft_barrier(w);
        if (call >= 20 && call < 40)
            arrive_after(me * 2e-3);
        for (int i = 0; i < 16; i++)
            in[i] = me + call + i;
        CHECK(weft_allreduce(in, out, 16, WEFT_INT32, WEFT_SUM, w) == WEFT_OK, "adaptive: %s",
              weft_last_error());
        for (int i = 0; i < 16; i++)
            bad += out[i] != P * (P - 1) / 2 + P * (call + i);
    }
    CHECK(!bad, "adaptive: %zu wrong", bad);
}

/* Ranks that disagree, running `base` (pap_leader unless named): counts
 * (mismatch) or algorithms (mixed: two arrival-driven ones; schedule: rank
 * 0 runs a schedule, which never takes its ticket, so the others' record
 * is never complete). */
static int disagree(const char *mode, const char *base)
{
    weft_comm_t w = weft_comm_world();
    bool mixed = strcmp(mode, "mismatch") != 0;
    const char *other = !strcmp(mode, "mixed") ? (strcmp(base, "pap_chain") ? "pap_chain"
                                                                              : "pap_leader")
                                               : "recursive_doubling";
    const char *algo = mixed && me == 0 ? other : base;
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, algo, NULL);
    int32_t in[8] = {0}, out[8];
    size_t cnt = !mixed && me == P - 1 ? 5 : 6;
    int rc = weft_allreduce(in, out, cnt, WEFT_INT32, WEFT_SUM, w);
    fprintf(stderr, "rank %d: %s allreduce of %zu -> %s: %s\n", me, algo, cnt,
            rc == WEFT_OK ? "success" : "error", rc ? weft_last_error() : "");
    return rc == WEFT_OK ? 1 : 0;
}

/* Calls back to back with random arrivals of 0-20 us: records reused
 * call after call. */
static void back_to_back(weft_comm_t comm, const algo_case_t *c, int calls)
{
    int members[128], n = members_of(comm, members), r = weft_comm_rank(comm);
    weft_set_algorithm(comm, c->coll, c->name, c->params);
    int32_t in[3], out[3];
    size_t bad = 0;
    for (int call = 0; call < calls; call++) {
        arrive_after(uniform() * 20e-6);
        int rc = run_call(c, comm, r, n, members, call, 3, in, out, NULL);
        if (rc)
            CHECK(0, "%s call %d: %s", c->name, call, weft_last_error());
        bad += check_call(c, r, n, members, call, 3, out);
    }
    CHECK(!bad, "%d %s calls: %zu wrong", calls, c->name, bad);
    weft_set_algorithm(comm, c->coll, "auto", NULL);
}

/* --mpi ALGO [MODE]: the data tests for one algorithm over MPI; an
 * algorithm that needs all ranks on one machine is refused there with a
 * reason when the nodes are several. */
static int over_mpi(int argc, char **argv)
{
#ifdef WEFT_HAVE_MPI
    MPI_Init(&argc, &argv);
    weft_comm_t w = NULL, dup, half;
    if (argc < 3 || weft_comm_from_mpi(MPI_COMM_WORLD, &w) != WEFT_OK) {
        fprintf(stderr, "test_arrival --mpi ALGO [full|quick|sample]: %s\n",
                argc < 3 ? "name the algorithm" : weft_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
        return 2;
    }
    only_algo = argv[2];
    me = weft_comm_rank(w);
    P = weft_comm_size(w);
    rng = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    const char *mode = argc > 3 ? argv[3] : "full";
    int div = !strcmp(mode, "sample") ? 20 : !strcmp(mode, "quick") ? 5 : 1;
    random_arrivals(w, "mpi world", 100 / div + 4, 500, 37);
    random_arrivals(w, "mpi world", 6, 20000, 5);
    random_arrivals(w, "mpi world large", 4, 2000, 300000);
    random_arrivals(w, "mpi world empty", 5, 100, 0);
    CHECK(weft_comm_dup(w, &dup) == WEFT_OK, "dup: %s", weft_last_error());
    CHECK(weft_comm_split(w, me % 2, P - me, &half) == WEFT_OK, "split: %s", weft_last_error());
    random_arrivals(dup, "mpi dup", 60 / div + 4, 300, 9);
    random_arrivals(half, "mpi split", 60 / div + 4, 300, 9);
    alternating(w, 200 / div);
    split_phase(w, 40 / div + 2, 5);
    split_phase(half, 40 / div + 2, 3);
    floats(dup, 40 / div + 2);
    for (int k = 0; k < NCASES; k++)
        if (wanted(&cases[k]))
            back_to_back(w, &cases[k], 2000 / div);
    const char *ns = getenv("WEFT_NODE_SIZE");
    if (ns && atoi(ns) >= 1 && atoi(ns) < P) { /* several nodes */
        int32_t x = 1, y = 0;
        weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "pap_leader", NULL);
        int rc = weft_allreduce(&x, &y, 1, WEFT_INT32, WEFT_SUM, w);
        CHECK(rc != WEFT_OK && strstr(weft_last_error(), "one machine"),
              "pap_leader across nodes: %d %s", rc, rc ? weft_last_error() : "ran");
        weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
    }
    weft_comm_free(&dup);
    weft_comm_free(&half);
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_arrival --mpi %s P=%d: %d checks on rank 0, %d failures on all ranks\n",
               only_algo, P, checks, total);
    weft_comm_free(&w);
    MPI_Finalize();
    return total ? 1 : 0;
#else
    (void)argc, (void)argv;
    fprintf(stderr, "test_arrival: built without MPI\n");
    return 1;
#endif
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--mpi"))
        return over_mpi(argc, argv);
    if (weft_init(&argc, &argv))
        return 1;
    weft_comm_t w = weft_comm_world();
    me = weft_comm_rank(w);
    P = weft_comm_size(w);
    rng = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    if (argc > 1 && (!strcmp(argv[1], "mismatch") || !strcmp(argv[1], "mixed") ||
                     !strcmp(argv[1], "schedule"))) {
        int rc = disagree(argv[1], argc > 2 ? argv[2] : "pap_leader");
        weft_finalize();
        return rc;
    }
    if (argc > 1 && !strcmp(argv[1], "retired_ids")) {
        retired_ids();
        int total = failures;
        weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
        if (me == 0)
            printf("test_arrival retired_ids P=%d: %d checks on rank 0, %d failures on all "
                   "ranks\n", P, checks, total);
        weft_finalize();
        return total ? 1 : 0;
    }
    if (argc > 1 && !strcmp(argv[1], "adaptive")) {
        adaptive_switches(argc > 2 ? argv[2] : NULL);
        int total = failures;
        weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
        if (me == 0)
            printf("test_arrival adaptive P=%d: %d checks on rank 0, %d failures on all ranks\n",
                   P, checks, total);
        weft_finalize();
        return total ? 1 : 0;
    }
    /* full: as the issue asks (10 000 pap_leader calls); quick: a fifth;
     * sample: a twentieth, for the process counts where ranks far
     * outnumber cores and a call costs milliseconds */
    const char *mode = argc > 1 ? argv[1] : "full";
    int div = !strcmp(mode, "sample") ? 20 : !strcmp(mode, "quick") ? 5 : 1;
    random_arrivals(w, "world", 100 / div + 4, 500, 37);
    random_arrivals(w, "world", 6, 20000, 5); /* 0-20 ms */
    random_arrivals(w, "world large", 4, 2000, div >= 20 ? 40000 : 300000);
    random_arrivals(w, "world empty", 5, 100, 0);
    weft_comm_t dup, half;
    CHECK(weft_comm_dup(w, &dup) == WEFT_OK, "dup: %s", weft_last_error());
    CHECK(weft_comm_split(w, me % 2, P - me, &half) == WEFT_OK, "split: %s", weft_last_error());
    random_arrivals(dup, "dup", 60 / div + 4, 300, 9);
    random_arrivals(half, "split", 60 / div + 4, 300, 9);
    alternating(w, 2000 / div);
    alternating(half, 1000 / div);
    split_phase(w, 40 / div + 2, 5);
    split_phase(half, 40 / div + 2, 3);
    floats(dup, 40 / div + 2);
    back_to_back(w, &cases[1], 10000 / div); /* 10 000 pap_leader calls (full) */
    chain_lets_go();
    abandoned();
    two_communicators();
    weft_comm_free(&dup);
    weft_comm_free(&half);
    too_many_communicators();
    board_after_churn(300);
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_arrival P=%d: %d checks on rank 0, %d failures on all ranks\n", P, checks,
               total);
    weft_finalize();
    return total ? 1 : 0;
}
