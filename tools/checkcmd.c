/* checkcmd.c — `weft check COLL --algo A --np-range LO:HI`: proves schedules
 * correct with the symbolic checker (src/sched/check.h), and `weft
 * algorithms`: the registry as a table.
 *
 * For each P it checks several counts (0, 1, P-1, 2P+1 for vector
 * collectives; 0, 1, 2 elements per block for the others), roots (0, the
 * middle, P-1), op classes (commutative; and rank-ordered, when the
 * algorithm claims non-commutative ops; idempotent only where required, or
 * as a second class for algorithms with a per-call condition; one with an
 * exact inverse for algorithms that use it) and, when the algorithm claims
 * it, in-place operation. */
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/core.h"
#include "sched/check.h"
#include "tool.h"

typedef struct {
    const algo_t *al;
    coll_args_t a;
} build_ctx_t;

static int build_rank(void *ctx, int rank, sched_t *builder, sched_img_t **out)
{
    build_ctx_t *b = ctx;
    coll_args_t a = b->a;
    a.rank = rank;
    return algo_build_with(b->al, &a, builder, out);
}

static bool vector_coll(weft_coll_t c)
{
    return c == WEFT_COLL_ALLREDUCE || c == WEFT_COLL_REDUCE || c == WEFT_COLL_BCAST;
}

typedef struct {
    int *ps, nps;   /* every P to check, ascending */
    const char *range; /* as given, for the report */
    long count; /* -1: the default set */
    int root;   /* -1: the default set */
    const char *params;
    int verbose;
} check_opts_t;

static int check_cases(const algo_t *al, build_ctx_t *bp, const uint64_t *counts, int nc,
                       const int *roots, int nr, bool full, int P, check_stats_t *total,
                       uint64_t *nruns, char *report, size_t rlen);

/* The counts to check at P: up to P = 64 (full) every case (0, 1, P-1 and
 * 2P+1 elements per block for vector collectives, 0-2 for the others),
 * above one sampled case per P, rotating; --count fixes it. */
static int counts_for(const algo_t *al, const check_opts_t *o, int P, bool full,
                      uint64_t counts[4])
{
    int nc = 0;
    if (o->count >= 0) {
        counts[nc++] = (uint64_t)o->count;
    } else if (vector_coll(al->coll)) {
        uint64_t all[4] = {0, 1, P > 2 ? (uint64_t)P - 1 : 2, 2 * (uint64_t)P + 1};
        if (full) {
            for (int k = 0; k < 4; k++)
                if (k < 2 || P > 2 || k == 3)
                    counts[nc++] = all[k];
        } else {
            counts[nc++] = all[1 + P % 3];
        }
    } else if (al->coll != WEFT_COLL_BARRIER) {
        if (full)
            counts[nc++] = 0, counts[nc++] = 1, counts[nc++] = 2;
        else
            counts[nc++] = (uint64_t)(1 + P % 2);
    } else {
        counts[nc++] = 0;
    }
    return nc;
}

/* The roots to check at P: 0, P/2 and P-1 (one of them, rotating, above
 * P = 64); --root fixes it, past P the last rank. */
static int roots_for(const algo_t *al, const check_opts_t *o, int P, bool full, int roots[3])
{
    int nr = 0;
    if (!coll_is_rooted(al->coll))
        roots[nr++] = 0;
    else if (o->root >= 0)
        roots[nr++] = o->root < P ? o->root : P - 1;
    else if (full) {
        roots[nr++] = 0;
        if (P > 2)
            roots[nr++] = P / 2;
        if (P > 1)
            roots[nr++] = P - 1;
    } else {
        int pick[3] = {0, P / 2, P - 1};
        roots[nr++] = pick[P % 3];
    }
    return nr;
}

/* Checks one P (every count/root/variant chosen for it); 0 if all pass,
 * else 1 with the report in fail. */
static int check_one_p(const algo_t *al, const check_opts_t *o, const algo_params_t *params, int P,
                       check_stats_t *total, uint64_t *nruns, char *report, size_t rlen)
{
    build_ctx_t b;
    memset(&b, 0, sizeof b);
    b.al = al;
    b.a.params = *params;
    b.a.coll = al->coll;
    b.a.esize = 4;
    b.a.arena_reads = true; /* linear_arena's schedule is proved as any other */
    /* Up to P = 64 every combination; above, one sampled count and root per P
     * (rotating, so the whole range still sees every case), in place every
     * fourth P. */
    bool full = P <= 64;
    uint64_t counts[4];
    int roots[3];
    int nc = counts_for(al, o, P, full, counts), nr = roots_for(al, o, P, full, roots);
    /* node maps for hierarchical algorithms: one node, nodes of k
     * consecutive ranks, and nodes dealt round-robin (not contiguous) */
    int ntopo = 1;
    int *node_of = NULL;
    /* a composition with a hierarchical part reads the node map too */
    if ((al->flags & ALGO_TOPOLOGY) || !strcmp(params->reduce, "hier") ||
        !strcmp(params->bcast, "hier")) {
        ntopo = 6;
        node_of = malloc((size_t)P * sizeof *node_of);
        if (!node_of) {
            snprintf(report, rlen, "FAIL: out of memory\n");
            return 1;
        }
    }
    int rc_all = 0;
    for (int topo = 0; topo < ntopo && !rc_all; topo++) {
        if (!full && ntopo > 1 && topo != P % ntopo)
            continue;
        int nn = 1;
        if (node_of) {
            int k = topo == 0 ? P : topo; /* 0: one node; 1..4: k per node; 5: round-robin */
            for (int r = 0; r < P; r++)
                node_of[r] = topo == 5 ? r % 3 : r / k;
            nn = topo == 5 ? (P < 3 ? P : 3) : (P + k - 1) / k;
        }
        b.a.node_of = node_of;
        b.a.nnodes = nn;
        rc_all = check_cases(al, &b, counts, nc, roots, nr, full, P, total, nruns, report, rlen);
    }
    free(node_of);
    return rc_all;
}

static int check_cases(const algo_t *al, build_ctx_t *bp, const uint64_t *counts, int nc,
                       const int *roots, int nr, bool full, int P, check_stats_t *total,
                       uint64_t *nruns, char *report, size_t rlen)
{
    build_ctx_t b = *bp;
    /* a composed algorithm needs what its parts need (hier inter=butterfly:
     * an idempotent op) */
    unsigned flags = algo_effective_flags(al, &b.a);
    for (int ci = 0; ci < nc; ci++)
        for (int ri = 0; ri < nr; ri++)
            for (int variant = 0; variant < 3; variant++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    /* variant 0: commutative op; 1: rank order demanded (or,
                     * for algorithms with a per-call condition, an idempotent
                     * op); 2: an op with an exact inverse, for algorithms
                     * whose schedule then differs */
                    bool ordered = variant == 1 && !al->usable;
                    if (variant == 1 && !al->usable &&
                        (!coll_is_reduction(al->coll) || (flags & ALGO_NEEDS_COMMUTATIVE)))
                        continue;
                    if (variant == 2 && !(al->flags & ALGO_USES_INVERSE))
                        continue;
                    if (inplace && (!(al->flags & ALGO_INPLACE_SAFE) || al->coll == WEFT_COLL_BCAST ||
                                    (!full && P % 4)))
                        continue;
                    b.a.nrank = P;
                    b.a.count = counts[ci];
                    b.a.root = roots[ri];
                    b.a.commutative = !ordered;
                    /* algorithms with a per-call condition (dissem) are also
                     * checked with an idempotent op, where they hold for all P */
                    b.a.idempotent = (flags & ALGO_NEEDS_IDEMPOTENT) != 0 ||
                                     (al->usable && variant == 1);
                    if (algo_check_usable(al, &b.a))
                        continue;
                    b.a.invertible = variant == 2;
                    check_spec_t sp = {al->coll, P, counts[ci], roots[ri],
                                       b.a.idempotent, ordered, inplace != 0, variant == 2,
                                       NULL, NULL};
                    char msg[1024];
                    check_stats_t st;
                    int rc = sched_check(&sp, build_rank, &b, msg, sizeof msg, &st);
                    (*nruns)++;
                    if (rc) {
                        char topo[64] = "";
                        if (b.a.node_of)
                            snprintf(topo, sizeof topo, " nodes=%d (node of rank 1: %d)",
                                     b.a.nnodes, P > 1 ? b.a.node_of[1] : 0);
                        snprintf(report, rlen, "FAIL %s %s: count=%" PRIu64 " root=%d%s%s%s%s%s\n  %s\n",
                                 weft_coll_name(al->coll), al->name, counts[ci], roots[ri],
                                 ordered ? " non-commutative" : "", b.a.idempotent && al->usable ? " idempotent" : "",
                                 variant == 2 ? " invertible" : "", inplace ? " in-place" : "",
                                 topo, msg);
                        return 1;
                    }
                    total->steps += st.steps;
                    total->messages += st.messages;
                }
    return 0;
}

typedef struct {
    const algo_t *al;
    const check_opts_t *o;
    algo_params_t params;
    _Atomic int next;
    _Atomic int failed_p; /* smallest failing P so far, INT_MAX if none */
    pthread_mutex_t lock;
    check_stats_t total;
    uint64_t runs;
    char report[1400];
} check_job_t;

static void *check_worker(void *arg)
{
    check_job_t *j = arg;
    check_stats_t mine = {0};
    uint64_t runs = 0;
    for (;;) {
        int at = atomic_fetch_add(&j->next, 1);
        if (at >= j->o->nps)
            break;
        int P = j->o->ps[at];
        if (P > atomic_load(&j->failed_p))
            break;
        char report[1400];
        if (check_one_p(j->al, j->o, &j->params, P, &mine, &runs, report, sizeof report)) {
            pthread_mutex_lock(&j->lock);
            if (P < atomic_load(&j->failed_p)) {
                atomic_store(&j->failed_p, P);
                memcpy(j->report, report, sizeof report);
            }
            pthread_mutex_unlock(&j->lock);
            break;
        }
        if (j->o->verbose && P % 64 == 0)
            fprintf(stderr, "  %s %s: P=%d ok\n", weft_coll_name(j->al->coll), j->al->name, P);
    }
    pthread_mutex_lock(&j->lock);
    j->total.steps += mine.steps;
    j->total.messages += mine.messages;
    j->runs += runs;
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

/* Checks one algorithm over the P range on every core; 0 if all pass. */
static int check_algo(const algo_t *al, const check_opts_t *o, uint64_t *nruns)
{
    double t0 = weft_now();
    check_job_t j;
    memset(&j, 0, sizeof j);
    j.al = al;
    j.o = o;
    if (algo_parse_params(al, o->params, &j.params)) {
        fprintf(stderr, "weft check: %s\n", weft_last_error());
        return 2;
    }
    atomic_store(&j.next, 0);
    atomic_store(&j.failed_p, INT_MAX);
    pthread_mutex_init(&j.lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu > 1 ? (int)(ncpu > 16 ? 16 : ncpu) : 1;
    pthread_t th[16];
    int started = 0;
    for (int i = 1; i < nt; i++)
        if (!pthread_create(&th[started], NULL, check_worker, &j))
            started++;
    check_worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.lock);
    *nruns += j.runs;
    if (atomic_load(&j.failed_p) != INT_MAX) {
        fputs(j.report, stdout);
        return 1;
    }
    if (!j.runs) { /* nothing was proved: not an "ok" */
        coll_args_t a;
        memset(&a, 0, sizeof a);
        a.coll = al->coll, a.nrank = o->ps[0], a.count = 1, a.esize = 4, a.commutative = true;
        a.arena_reads = true;
        a.params = j.params;
        bool said = algo_check_usable(al, &a) != WEFT_OK;
        fprintf(stderr, "weft check: %s %s: every case for P=%s was refused%s%s\n",
                weft_coll_name(al->coll), al->name, o->range, said ? ": " : "",
                said ? weft_last_error() : "");
        return 2;
    }
    printf("ok   %-14s %-20s P=%s  %" PRIu64 " steps, %" PRIu64 " messages, %.2f s\n",
           weft_coll_name(al->coll), al->name, o->range, j.total.steps, j.total.messages,
           weft_now() - t0);
    fflush(stdout);
    return 0;
}

#define CHECK_MAX_P 65536

/* LO[:HI[:STEP]] segments, comma-separated ("1:128,129:1024:7,1023:1025"):
 * every P they name, ascending and once each, into o. */
static int parse_ranges(const char *s, check_opts_t *o)
{
    static bool want[CHECK_MAX_P + 1];
    memset(want, 0, sizeof want);
    const char *p = s;
    for (;;) {
        char *e;
        long a = strtol(p, &e, 10), b = a, step = 1;
        if (e == p)
            return -1;
        if (*e == ':')
            b = strtol(e + 1, &e, 10);
        if (*e == ':')
            step = strtol(e + 1, &e, 10);
        if ((*e && *e != ',') || a < 1 || b < a || b > CHECK_MAX_P || step < 1)
            return -1;
        for (long P = a; P <= b; P += step)
            want[P] = true;
        if (!*e)
            break;
        p = e + 1;
    }
    static int ps[CHECK_MAX_P];
    int n = 0;
    for (int P = 1; P <= CHECK_MAX_P; P++)
        if (want[P])
            ps[n++] = P;
    o->ps = ps, o->nps = n, o->range = s;
    return 0;
}

static void check_usage(void)
{
    printf("usage: weft check COLL|all [--algo A[,B..]|all] [--skip A[,B..]]\n"
           "                  [--np-range LO:HI[:STEP][,...]] [--count N] [--root R]\n"
           "                  [--params k=v,..] [--verbose]\n"
           "Proves every rank ends with every contribution exactly once, with no\n"
           "deadlock, race or unmatched message, for each P in the range (default\n"
           "1:64; segments with a step sample a range, e.g. 1:128,129:1024:7).  --root R\n"
           "fixes the root (for P <= R, the root is P-1); without it, roots 0, P/2 and\n"
           "P-1 are checked.\n");
}

/* The options after COLL; 0, or 2 after saying what was wrong. */
static int check_parse(int argc, char **argv, check_opts_t *o, const char **algos,
                       const char **skip)
{
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *e;
        if (!strcmp(argv[i], "--verbose")) {
            o->verbose = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "weft check: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
        i++;
        if (!strcmp(argv[i - 1], "--algo")) {
            *algos = v;
        } else if (!strcmp(argv[i - 1], "--skip")) {
            *skip = v;
        } else if (!strcmp(argv[i - 1], "--params")) {
            o->params = v;
        } else if (!strcmp(argv[i - 1], "--np-range")) {
            if (parse_ranges(v, o)) {
                fprintf(stderr, "weft check: bad --np-range '%s' (want LO:HI[:STEP] segments, "
                        "comma-separated, 1 <= LO <= HI <= %d, STEP >= 1)\n", v, CHECK_MAX_P);
                return 2;
            }
        } else if (!strcmp(argv[i - 1], "--count")) {
            long long c = strtoll(v, &e, 10);
            if (*e || e == v || c < 0 || c > (1ll << 40)) {
                fprintf(stderr, "weft check: --count %s: want a count 0..2^40\n", v);
                return 2;
            }
            o->count = (long)c;
        } else if (!strcmp(argv[i - 1], "--root")) {
            long r = strtol(v, &e, 10);
            if (*e || e == v || r < 0 || r > 65535) {
                fprintf(stderr, "weft check: --root %s: want a rank 0..65535 (roots past P-1 "
                                "are refused per P)\n", v);
                return 2;
            }
            o->root = (int)r;
        } else {
            fprintf(stderr, "weft check: unknown or incomplete option '%s'\n", argv[i - 1]);
            return 2;
        }
    }
    return 0;
}

int cmd_check(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        check_usage();
        return argc < 2 ? 2 : 0;
    }
    const char *collname = argv[1], *algos = "all", *skip = "";
    check_opts_t o = {.count = -1, .root = -1};
    if (parse_ranges("1:64", &o) || check_parse(argc, argv, &o, &algos, &skip))
        return 2;
    weft_coll_t coll = coll_from_name(collname);
    if (strcmp(collname, "all") && coll == WEFT_COLL_COUNT) {
        fprintf(stderr, "weft check: unknown collective '%s'\n", collname);
        return 2;
    }
    /* The checker allocates and frees large per-rank arrays for every run:
     * keep freed memory in the process instead of returning it to the
     * kernel each time (page faults dominated otherwise). */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    size_t n;
    const algo_t *t = algo_table(&n);
    int failures = 0, matched = 0;
    uint64_t runs = 0;
    double t0 = weft_now();
    for (size_t i = 0; i < n; i++) {
        if (coll != WEFT_COLL_COUNT && t[i].coll != coll)
            continue;
        if ((strcmp(algos, "all") && !name_in_list(algos, t[i].name)) || name_in_list(skip, t[i].name))
            continue;
        if (t[i].board) {
            printf("skip %-9s %-20s not a schedule (driven by the shared-memory board or by "
                   "arrival): test_coll, test_board, test_arrival and weft stress run it\n",
                   weft_coll_name(t[i].coll), t[i].name);
            continue;
        }
        matched++;
        int rc = check_algo(&t[i], &o, &runs);
        if (rc == 2)
            return 2;
        failures += rc;
    }
    if (!matched) {
        fprintf(stderr, "weft check: no %s algorithm matches '%s'\n", collname, algos);
        return 2;
    }
    printf("%d passed, %d failed (%" PRIu64 " checks, %.1f s)\n", matched - failures, failures,
           runs, weft_now() - t0);
    return failures ? 1 : 0;
}

int cmd_algorithms(int argc, char **argv)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    printf("%-14s %-20s %-12s %s\n", "collective", "algorithm", "properties", "summary");
    for (size_t i = 0; i < n; i++) {
        char props[16];
        snprintf(props, sizeof props, "%s%s%s%s",
                 t[i].flags & ALGO_NEEDS_COMMUTATIVE ? "C" : "-",
                 t[i].flags & ALGO_NEEDS_IDEMPOTENT ? "I" : "-",
                 t[i].flags & ALGO_IDENTICAL ? "=" : "-",
                 t[i].flags & ALGO_INPLACE_SAFE ? "P" : "-");
        printf("%-14s %-20s %-12s %s\n", weft_coll_name(t[i].coll), t[i].name, props,
               t[i].summary);
    }
    printf("\nproperties: C needs a commutative op, I needs an idempotent op,\n"
           "= all ranks get bitwise-identical results, P proven safe in place\n");
    return 0;
}
