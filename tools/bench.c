/* bench.c — `weft bench COLL`: algorithms side by side on shared memory.
 *
 * Method (as OSU and nccl-tests): per size and algorithm, warm-up calls,
 * then timed iterations each preceded by a barrier; an iteration's time is
 * the slowest rank's (one max-allreduce over all iterations at the end, so
 * nothing is added inside the timed loop).  Reported: average and median
 * latency in microseconds, and bus bandwidth as nccl-tests defines it
 * (allreduce 2(P-1)/P * bytes / time; bcast and reduce bytes / time).
 * The fastest algorithm of each row (by median) is marked with '*'.
 * Without WEFT_RANK in the environment the command launches itself as P
 * ranks (`weft run`) and rank 0 prints. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "tune/table.h"
#include "core/comm.h"
#include "core/copy.h"
#include "core/core.h"
#ifdef WEFT_HAVE_MPI
#include <mpi.h>

#include "weft_mpi.h"
#endif
#include "launch/launch.h"
#include "tool.h"
#include "weft.h"


static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: weft bench allreduce|bcast|reduce|allgather|reduce_scatter|barrier\n"
            "                  [--np P]\n"
            "                  [--algo all|auto,A,B/k=v;k=v,..]\n"
            "       weft bench kernels [--quick]   (reduction kernels and copies against memcpy)\n"
            "                  [--sizes LO:HI[:xK|:+K] | S1,S2,..] [--iters N] [--warmup N] [--check]\n"
            "                  [--dtype float32] [--op sum|...|noncommutative] [--root R] [--csv F]\n"
            "                  [--json F] [--osu] [--back-to-back] [--poll] [--inflight N] [--fresh]\n"
            "                  [--mem malloc|weft]  (user buffers from malloc, the default, or\n"
            "                  from weft_alloc: the shared arena, which peers read in place)\n"
            "                  [--transport mpi|shm]  (under mpirun; algorithm 'native' is the\n"
            "                  MPI library's own collective, and ratios against it are shown)\n"
            "                  [--sync mpi|weft]  (under mpirun, whose barrier goes before each\n"
            "                  timed call: the MPI library's, the default, or weft's)\n"
            "                  [--mif X[,Y..] [--redraw]]  (imbalanced: a table per factor X)\n"
            "                  [--arrivals FILE]  (imbalanced by a recorded pattern)\n"
            "Sizes are in bytes, K, M or G allowed (LO:HI doubles from LO, :xK multiplies\n"
            "by K, :+K adds K), as weft sim takes them, each rounded up to whole\n"
            "elements of --dtype; default 4:64M,\n"
            "--np 4, iterations scaled to the size (at least 10) unless --iters is given,\n"
            "after a tenth as many warm-up calls, at least 10, unless --warmup is given.\n"
            "allgather and reduce_scatter: a size is a rank's block, as weft explain\n"
            "takes it (the reduce-scatter's input is P blocks); busbw is as nccl-tests\n"
            "have it, (P-1)/P of the P blocks per second; no --poll or --inflight (they\n"
            "have no split-phase calls), and the allgather takes no --op.\n"
            "Without --algo: per size, AUTO's figure and choice, the fastest algorithm\n"
            "and (under mpirun) the MPI library's; --algo all: every algorithm's figures.\n"
            "Figures: median over iterations of the slowest rank's time, each iteration\n"
            "after a barrier; --osu: the OSU micro-benchmarks' convention instead (each\n"
            "rank's mean time, averaged over ranks); --back-to-back: the calls in a row\n"
            "with no barrier between (a solver's dot products), each rank's mean per\n"
            "call averaged over ranks.  --fresh: every rank rewrites its input (a bcast's\n"
            "root its buffer) before each timed call, outside the clock, as an application\n"
            "computes new data every step; without it the inputs stay as the first call\n"
            "found them, and a peer that reads them in place may find them in its own\n"
            "cache already.  --poll: weft's calls as their\n"
            "*_timeout variants polled at WEFT_TEST until done (allreduce, bcast, reduce).\n"
            "--inflight N (1-16): each iteration starts N split-phase calls (weft_i*, or\n"
            "the MPI library's MPI_I*), each on buffers of its own of the row's size, and\n"
            "then waits for them in order, as a data-parallel trainer keeps its gradient\n"
            "buckets in flight; a figure is the time of the round of N, busbw counts N\n"
            "times the bytes.\n"
            "--op noncommutative: a user op,\n"
            "affine maps x -> ax + b (mod 2^32) composed in rank order, on uint64.\n"
            "--mif X: before each timed call (after the barrier) each rank waits\n"
            "r alpha(size), r uniform in [0, X] drawn once per rank (--redraw: per call),\n"
            "alpha(size) the one-way time of a message of that size between ranks 0 and\n"
            "1 (measured first); the figures are then the time each rank spends inside\n"
            "the collective: avg over ranks and calls, median over calls of the ranks'\n"
            "mean, and (CSV, JSON) the worst rank's mean.  --arrivals FILE: the delays\n"
            "from FILE instead, in microseconds, one line per call with one number per\n"
            "rank ('#' starts a comment), the lines taken in turn and again from the\n"
            "first when the calls outnumber them.\n"
            "barrier: one row (no data: no --sizes, --dtype, --op, --root, --mem, --mif\n"
            "or --arrivals); the barrier before each iteration is AUTO's on a duplicate\n"
            "communicator, so it is not the algorithm being timed; --check delays one\n"
            "rank in turn and verifies by the machine's monotonic clock that no rank\n"
            "left before the last one entered (ranks on one machine).\n");
}

#define SIZE_MAX_BYTES (1ull << 40)
#define INFLIGHT_MAX 16

/* The collectives of P blocks benchmarked, allgather and reduce_scatter: a
 * size is a rank's block, and the count a call passes around is P of them. */
static bool blocked(const bench_opts_t *o)
{
    return coll_is_blocked(o->coll);
}

/* --sizes: a list as weft sim takes it (number_list), at most 64 sizes of
 * at most 2^40 bytes; 0, or -1 with why filled. */
static int parse_sizes(const char *s, bench_opts_t *o, char *why, size_t len)
{
    uint64_t v[64];
    int n;
    if (number_list(s, v, 64, &n, 0, SIZE_MAX_BYTES, why, len))
        return -1;
    for (int i = 0; i < n; i++)
        o->sizes[i] = (size_t)v[i];
    o->nsizes = n;
    return 0;
}

/* --mif X[,Y..]: at most 16 factors, each 0 to 1000. */
static int parse_mif(const char *s, bench_opts_t *o)
{
    o->nmif = 0;
    for (const char *p = s;;) {
        char *e;
        double x = strtod(p, &e);
        if (e == p || !(x >= 0 && x <= 1000) || (*e && *e != ',') || o->nmif == 16) {
            fprintf(stderr, "weft bench: --mif %s: want up to 16 factors, each 0 to 1000, "
                            "comma-separated\n", s);
            return 2;
        }
        o->mif[o->nmif++] = x;
        if (!*e)
            return 0;
        p = e + 1;
    }
}

int dtype_from_name(const char *n)
{
    for (int d = 0; d < WEFT_DTYPE_COUNT; d++)
        if (!strcmp(n, weft_dtype_name((weft_dtype_t)d)))
            return d;
    return -1;
}

int op_from_name(const char *n)
{
    for (int o = 0; o < WEFT_OP_BUILTIN_COUNT; o++)
        if (!strcmp(n, weft_op_name(o)))
            return o;
    return -1;
}

/* One option that takes a value; 0, or 2 after saying what was wrong. */
static int parse_valued(bench_opts_t *o, const char *opt, const char *v)
{
    char why[160], *e = NULL;
    if (!strcmp(opt, "--np")) {
        long n = strtol(v, &e, 10);
        if (*e || n < 1 || n > 4096) {
            fprintf(stderr, "weft bench: --np %s: want 1..4096\n", v);
            return 2;
        }
        o->np = (int)n;
    } else if (!strcmp(opt, "--algo")) {
        if (strlen(v) >= sizeof o->algos) {
            fprintf(stderr, "weft bench: --algo: the list is longer than %zu bytes\n",
                    sizeof o->algos - 1);
            return 2;
        }
        snprintf(o->algos, sizeof o->algos, "%s", v);
    } else if (!strcmp(opt, "--sizes")) {
        if (parse_sizes(v, o, why, sizeof why)) {
            fprintf(stderr, "weft bench: --sizes %s: %s (bytes, at most 64 sizes of at "
                            "most 2^40)\n", v, why);
            return 2;
        }
    } else if (!strcmp(opt, "--iters") || !strcmp(opt, "--warmup")) {
        bool iters = opt[2] == 'i';
        long n = strtol(v, &e, 10);
        if (*e || e == v || n < (iters ? 1 : 0) || n > 100000000) {
            fprintf(stderr, "weft bench: %s %s: want a count %d..100000000\n", opt, v,
                    iters ? 1 : 0);
            return 2;
        }
        *(iters ? &o->iters : &o->warmup) = (int)n;
    } else if (!strcmp(opt, "--dtype")) {
        int d = dtype_from_name(v);
        if (d < 0) {
            fprintf(stderr, "weft bench: unknown datatype '%s'\n", v);
            return 2;
        }
        o->dtype = (weft_dtype_t)d;
    } else if (!strcmp(opt, "--op")) {
        int op = !strcmp(v, "noncommutative") ? OP_AFFINE : op_from_name(v);
        if (op == OP_AFFINE)
            o->dtype = WEFT_UINT64;
        if (op == -1) {
            fprintf(stderr, "weft bench: unknown op '%s'\n", v);
            return 2;
        }
        o->op = op;
        o->op_given = 1;
    } else if (!strcmp(opt, "--root")) {
        long r = strtol(v, &e, 10);
        if (*e || e == v || r < 0 || r > 65535) {
            fprintf(stderr, "weft bench: --root %s: want a rank number\n", v);
            return 2;
        }
        o->root = (int)r;
    } else if (!strcmp(opt, "--mem")) {
        if (strcmp(v, "malloc") && strcmp(v, "weft")) {
            fprintf(stderr, "weft bench: --mem %s: want malloc or weft (weft_alloc)\n", v);
            return 2;
        }
        o->arena = v[0] == 'w';
    } else if (!strcmp(opt, "--inflight")) {
        long n = strtol(v, &e, 10);
        if (*e || e == v || n < 1 || n > INFLIGHT_MAX) {
            fprintf(stderr, "weft bench: --inflight %s: want 1..%d calls in flight\n", v,
                    INFLIGHT_MAX);
            return 2;
        }
        o->inflight = (int)n;
    } else if (!strcmp(opt, "--transport")) {
        if (strcmp(v, "mpi") && strcmp(v, "shm")) {
            fprintf(stderr, "weft bench: --transport %s: want mpi or shm\n", v);
            return 2;
        }
        o->transport = v;
    } else if (!strcmp(opt, "--sync")) {
        if (strcmp(v, "mpi") && strcmp(v, "weft")) {
            fprintf(stderr, "weft bench: --sync %s: want mpi or weft\n", v);
            return 2;
        }
        o->sync = v;
    } else if (!strcmp(opt, "--arrivals")) {
        o->arrivals = v;
    } else if (!strcmp(opt, "--mif")) {
        if (parse_mif(v, o))
            return 2;
    } else if (!strcmp(opt, "--csv")) {
        o->csv = v;
    } else if (!strcmp(opt, "--json")) {
        o->json = v;
    } else {
        fprintf(stderr, "weft bench: unknown option '%s'\n", opt);
        return 2;
    }
    return 0;
}

/* Options that cannot go together, or with this datatype and op; 0, or
 * 2 after saying which. */
static int check_combination(const bench_opts_t *o)
{
    /* a rank of a job (weft run) has the job's size, whatever --np says */
    const char *job = getenv("WEFT_RANK") ? getenv("WEFT_SIZE") : NULL;
    int np = job && atoi(job) > 0 ? atoi(job) : o->np;
    if (o->root < 0 || (!o->transport && o->root >= np)) {
        fprintf(stderr, "weft bench: --root %d out of range for %s %d\n", o->root,
                job ? "a job of" : "--np", np);
        return 2;
    }
    if (o->redraw && !o->nmif) {
        fprintf(stderr, "weft bench: --redraw draws the delays of --mif: give --mif too\n");
        return 2;
    }
    if (o->arrivals && (o->nmif || o->osu)) {
        fprintf(stderr, "weft bench: --arrivals replays its own delays: leave out --mif and "
                        "--osu\n");
        return 2;
    }
    if (o->back_to_back && (o->osu || o->nmif || o->arrivals)) {
        fprintf(stderr, "weft bench: --back-to-back times the calls in a row, no barrier or "
                        "delay between them: leave out --osu, --mif and --arrivals\n");
        return 2;
    }
    if (o->sync && !o->transport) {
        fprintf(stderr, "weft bench: --sync chooses between the MPI library's barrier and "
                        "weft's under mpirun (--transport); without it the barrier is weft's\n");
        return 2;
    }
    if (o->fresh && o->back_to_back) {
        fprintf(stderr, "weft bench: --fresh rewrites the inputs between timed calls, which "
                        "--back-to-back times in a row: leave out one of them\n");
        return 2;
    }
    if (o->inflight > 1 && (o->poll || o->nmif || o->arrivals)) {
        fprintf(stderr, "weft bench: --inflight times rounds of split-phase calls started "
                        "together: leave out --poll, --mif and --arrivals\n");
        return 2;
    }
    if (o->nmif && o->osu) {
        fprintf(stderr, "weft bench: --mif has a convention of its own (the time inside the "
                        "collective); leave out --osu\n");
        return 2;
    }
    if (o->coll == WEFT_COLL_ALLGATHER && o->op_given) {
        fprintf(stderr, "weft bench allgather: it combines nothing: leave out --op\n");
        return 2;
    }
    if (o->op == OP_AFFINE && o->dtype != WEFT_UINT64) {
        fprintf(stderr, "weft bench: --op noncommutative composes affine maps stored as uint64, "
                        "not %s\n", weft_dtype_name(o->dtype));
        return 2;
    }
    if (blocked(o) && (o->poll || o->inflight > 1)) {
        fprintf(stderr, "weft bench %s: %s: it has no split-phase or *_timeout calls\n",
                weft_coll_name(o->coll), o->poll ? "--poll" : "--inflight");
        return 2;
    }
    if (coll_is_reduction(o->coll) && o->op >= WEFT_BAND &&
        (o->dtype == WEFT_FLOAT16 || o->dtype == WEFT_BFLOAT16 || o->dtype == WEFT_FLOAT32 ||
         o->dtype == WEFT_FLOAT64)) {
        fprintf(stderr, "weft bench: --op %s is defined for integer datatypes only, not %s\n",
                weft_op_name(o->op), weft_dtype_name(o->dtype));
        return 2;
    }
    return 0;
}

/* Whole elements: each size rounded up to the datatype's (5 bytes of
 * float64 is one element of 8, where it was none, a row of 0 bytes), and
 * sizes that then meet kept once. */
static void whole_elements(bench_opts_t *o)
{
    size_t es = weft_dtype_size(o->dtype);
    int kept = 0;
    for (int i = 0; i < o->nsizes; i++) {
        size_t b = (o->sizes[i] + es - 1) / es * es;
        bool seen = false;
        for (int j = 0; j < kept; j++)
            seen |= o->sizes[j] == b;
        if (!seen)
            o->sizes[kept++] = b;
    }
    o->nsizes = kept;
}

int bench_parse(int argc, char **argv, bench_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->np = 4;
    o->algos[0] = '\0'; /* the summary */
    char why[160];
    parse_sizes("4:67108864", o, why, sizeof why);
    o->iters = -1;
    o->warmup = -1;
    o->dtype = WEFT_FLOAT32;
    o->op = WEFT_SUM;
    o->inflight = 1;
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 1;
    }
    o->coll = coll_from_name(argv[1]);
    if (o->coll != WEFT_COLL_ALLREDUCE && o->coll != WEFT_COLL_BCAST &&
        o->coll != WEFT_COLL_REDUCE && o->coll != WEFT_COLL_BARRIER &&
        o->coll != WEFT_COLL_ALLGATHER && o->coll != WEFT_COLL_REDUCE_SCATTER) {
        fprintf(stderr, "weft bench: collective '%s' is not benchmarked (allreduce, bcast, "
                        "reduce, allgather, reduce_scatter, barrier)\n", argv[1]);
        return 2;
    }
    const char *dataful = NULL; /* an option that means nothing to a barrier */
    static const char *const data_opts[] = {"--sizes", "--dtype", "--op",  "--root",
                                             "--mem",   "--mif",   "--arrivals", "--inflight"};
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--poll")) {
            o->poll = 1;
        } else if (!strcmp(argv[i], "--back-to-back")) {
            o->back_to_back = 1;
        } else if (!strcmp(argv[i], "--fresh")) {
            o->fresh = 1;
        } else if (!strcmp(argv[i], "--check") || !strcmp(argv[i], "--osu") ||
                   !strcmp(argv[i], "--redraw")) {
            *(argv[i][2] == 'c' ? &o->check : argv[i][2] == 'o' ? &o->osu : &o->redraw) = 1;
        } else if (!v) {
            fprintf(stderr, "weft bench: option '%s' needs a value (or is unknown)\n", argv[i]);
            return 2;
        } else {
            for (size_t k = 0; k < sizeof data_opts / sizeof *data_opts; k++)
                if (!strcmp(argv[i], data_opts[k]))
                    dataful = data_opts[k];
            if (parse_valued(o, argv[i], v))
                return 2;
            i++;
        }
    }
    if (o->coll == WEFT_COLL_BARRIER) {
        if (o->poll) {
            fprintf(stderr, "weft bench barrier: --poll calls allreduce, bcast and reduce as "
                            "their *_timeout variants; the barrier has none\n");
            return 2;
        }
        if (dataful || o->redraw || o->fresh) {
            fprintf(stderr, "weft bench barrier: a barrier moves no data: leave out %s\n",
                    dataful ? dataful : o->redraw ? "--redraw" : "--fresh");
            return 2;
        }
        o->nsizes = 1, o->sizes[0] = 0; /* one row, of no bytes */
        return 0;
    }
    if (check_combination(o))
        return 2;
    whole_elements(o);
    return 0;
}

typedef struct {
    const algo_t *al;
    const char *params; /* "k=v,..." or NULL */
    double avg, med, min;
    double mif, alpha, worst; /* --mif: the factor (-1: none), alpha(size) in
                               * seconds, the worst rank's mean time inside (us) */
    bool late; /* --mif or --arrivals: the figures are the time inside */
    int iters;
    int bad; /* --check failures */
    const char *skipped; /* "n/a": it could not run (the lineup says why) */
    char chose[64];      /* auto: the algorithm that served the calls, with the
                          * parameters AUTO's row gave it ("" none) */
} result_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --check's data: small integers, so that every datatype represents them
 * and every combining order gives the same result (sums of 1..17, or of
 * 1..2 in the half-precision types, stay exact up to 128 ranks for
 * bfloat16 and 1024 for float16; products of +-1 are exact everywhere,
 * wrapping as the op does on unsigned types). */
static int64_t gen(size_t i, int rank, unsigned salt, weft_op_t op, weft_dtype_t dt)
{
    size_t h = i * 7 + (size_t)rank * 13 + salt;
    if (op == WEFT_PROD)
        return h % 3 == 0 ? -1 : 1;
    if ((op == WEFT_LAND || op == WEFT_LOR) && h % 3 == 0)
        return 0;
    if (dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16)
        return (int64_t)(h % 2) + 1;
    return (int64_t)(h % 17) + 1;
}

/* --op noncommutative: x -> a x + b (mod 2^32) as a << 32 | b, a odd;
 * f o g applies g first.  In rank order the result is x0 o x1 o ... */
static uint64_t affine_compose(uint64_t f, uint64_t g)
{
    uint32_t fa = (uint32_t)(f >> 32), fb = (uint32_t)f, ga = (uint32_t)(g >> 32), gb = (uint32_t)g;
    return (uint64_t)(fa * ga) << 32 | (uint32_t)(fa * gb + fb);
}

static void affine_fn(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = affine_compose(a[i], b[i]);
}

static uint64_t affine_gen(size_t i, int rank, unsigned salt)
{
    uint64_t h = (i * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)rank * 0xc2b2ae3d27d4eb4full) ^ salt;
    return (h | 1ull << 32) & 0xffffffff0000ffffull; /* a odd, b small */
}

/* The op a call passes: the builtin one, or the user op behind OP_AFFINE. */
static weft_op_t affine_op = -1;
static weft_op_t op_handle(const bench_opts_t *o)
{
    if (o->op != OP_AFFINE)
        return o->op;
    if (affine_op < 0 && weft_op_create(affine_fn, NULL, 0, 0, &affine_op) != WEFT_OK)
        return -1;
    return affine_op;
}

const char *bench_op_name(weft_op_t op)
{
    return op == OP_AFFINE ? "noncommutative" : weft_op_name(op);
}

static void fill(void *buf, size_t count, weft_dtype_t dt, weft_op_t op, int rank,
                 unsigned salt)
{
    for (size_t i = 0; i < count; i++) {
        if (op == OP_AFFINE)
            ((uint64_t *)buf)[i] = affine_gen(i, rank, salt);
        else
            elem_put_int(buf, i, dt, gen(i, rank, salt, op, dt));
    }
}

/* The reference for element i, combined in the op's own arithmetic: integer
 * sums and products wrap (done in uint64, then cut to the width), bitwise
 * ops act on the stored bits, comparisons on the stored values. */
static bool check_elem_of(const void *out, size_t at, size_t i, int first, int last, int P,
                          const bench_opts_t *o, unsigned salt);
static bool check_elem(const void *out, size_t i, int P, const bench_opts_t *o, unsigned salt)
{
    int first = o->coll == WEFT_COLL_BCAST ? o->root : 0;
    int last = o->coll == WEFT_COLL_BCAST ? o->root : P - 1;
    return check_elem_of(out, i, i, first, last, P, o, salt);
}

/* The same for out[at], which holds element i of ranks first..last
 * combined (one rank: its value as generated). */
static bool check_elem_of(const void *out, size_t at, size_t i, int first, int last, int P,
                          const bench_opts_t *o, unsigned salt)
{
    weft_dtype_t dt = o->dtype;
    weft_op_t op = o->op;
    if (op == OP_AFFINE) {
        uint64_t acc = affine_gen(i, first, salt);
        for (int r = first + 1; r <= last; r++)
            acc = affine_compose(acc, affine_gen(i, r, salt));
        return ((const uint64_t *)out)[at] == acc;
    }
    if (elem_is_float(dt)) {
        double acc = 0;
        for (int r = first; r <= last; r++) {
            double v = (double)gen(i, r, salt, op, dt);
            acc = r == first ? v : op == WEFT_SUM ? acc + v : op == WEFT_PROD ? acc * v
                                 : op == WEFT_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
        }
        double got = elem_get_float(out, at, dt);
        /* beyond the exact range of the half types' sums (see gen) */
        bool inexact = (dt == WEFT_BFLOAT16 && P > 128) || (dt == WEFT_FLOAT16 && P > 1024);
        return inexact ? fabs(got - acc) <= fabs(acc) / 64 : got == acc;
    }
    uint64_t acc = 0;
    for (int r = first; r <= last; r++) {
        uint64_t v = (uint64_t)elem_wrap(gen(i, r, salt, op, dt), dt);
        /* one rank's value as it is, even under land/lor (as MPI) */
        acc = r == first ? v : elem_combine_int(op, dt, acc, v);
    }
    return elem_get_int(out, at, dt) == elem_wrap((int64_t)acc, dt);
}

/* The MPI library's own collective, and weft's AUTO choice, as
 * pseudo-algorithms. */
static const algo_t native_algo = {"native", WEFT_COLL_COUNT, 0, NULL, "", "", "", NULL, NULL};
static const algo_t auto_algo = {"auto", WEFT_COLL_COUNT, 0, NULL, "", "", "", NULL, NULL};

#ifdef WEFT_HAVE_MPI
/* The MPI library's datatype and op for the run's; 0 or the reason not. */
static int native_types(const bench_opts_t *o, MPI_Datatype *dt, MPI_Op *op)
{
    static const MPI_Datatype mdt[WEFT_DTYPE_COUNT] = {
        [WEFT_INT8] = MPI_INT8_T,     [WEFT_INT16] = MPI_INT16_T,   [WEFT_INT32] = MPI_INT32_T,
        [WEFT_INT64] = MPI_INT64_T,   [WEFT_UINT8] = MPI_UINT8_T,   [WEFT_UINT16] = MPI_UINT16_T,
        [WEFT_UINT32] = MPI_UINT32_T, [WEFT_UINT64] = MPI_UINT64_T, [WEFT_FLOAT32] = MPI_FLOAT,
        [WEFT_FLOAT64] = MPI_DOUBLE};
    static const MPI_Op mop[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
                                 MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR};
    if (o->dtype == WEFT_FLOAT16 || o->dtype == WEFT_BFLOAT16)
        return weft_error(WEFT_ENOTSUP, "MPI has no %s", weft_dtype_name(o->dtype));
    if (o->op == OP_AFFINE && coll_is_reduction(o->coll))
        return weft_error(WEFT_ENOTSUP, "the MPI library is not given weft's user op");
    *dt = mdt[o->dtype];
    *op = o->op >= 0 ? mop[o->op] : MPI_OP_NULL;
    return WEFT_OK;
}

static int native_error(int rc)
{
    return rc == MPI_SUCCESS ? WEFT_OK : weft_error(WEFT_EINTERNAL, "MPI error %d", rc);
}
#endif

static int run_one(weft_comm_t comm, const bench_opts_t *o, const algo_t *al, size_t count,
                   void *in, void *out)
{
#ifdef WEFT_HAVE_MPI
    if (al == &native_algo && o->coll == WEFT_COLL_BARRIER)
        return native_error(PMPI_Barrier(MPI_COMM_WORLD));
    if (al == &native_algo) {
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        MPI_Op op = MPI_OP_NULL;
        int n = (int)count, rc = native_types(o, &dt, &op);
        if (rc)
            return rc;
        int block = n / weft_comm_size(comm); /* comm is the world, as MPI_COMM_WORLD */
        if (o->coll == WEFT_COLL_ALLREDUCE)
            rc = PMPI_Allreduce(in, out, n, dt, op, MPI_COMM_WORLD);
        else if (o->coll == WEFT_COLL_BCAST)
            rc = PMPI_Bcast(out, n, dt, o->root, MPI_COMM_WORLD);
        else if (o->coll == WEFT_COLL_ALLGATHER)
            rc = PMPI_Allgather(in, block, dt, out, block, dt, MPI_COMM_WORLD);
        else if (o->coll == WEFT_COLL_REDUCE_SCATTER)
            rc = PMPI_Reduce_scatter_block(in, out, block, dt, op, MPI_COMM_WORLD);
        else
            rc = PMPI_Reduce(in, out, n, dt, op, o->root, MPI_COMM_WORLD);
        return native_error(rc);
    }
#endif
    (void)al;
    if (o->poll) { /* a split-phase call polled until done, as GASPI codes do */
        int rc;
        do
            rc = o->coll == WEFT_COLL_ALLREDUCE
                     ? weft_allreduce_timeout(in, out, count, o->dtype, op_handle(o), comm,
                                              WEFT_TEST)
                 : o->coll == WEFT_COLL_BCAST
                     ? weft_bcast_timeout(out, count, o->dtype, o->root, comm, WEFT_TEST)
                     : weft_reduce_timeout(in, out, count, o->dtype, op_handle(o), o->root, comm,
                                           WEFT_TEST);
        while (rc == WEFT_ETIMEDOUT);
        return rc;
    }
    switch (o->coll) {
    case WEFT_COLL_ALLREDUCE: return weft_allreduce(in, out, count, o->dtype, op_handle(o), comm);
    case WEFT_COLL_BCAST: return weft_bcast(out, count, o->dtype, o->root, comm);
    case WEFT_COLL_BARRIER: return weft_barrier(comm);
    case WEFT_COLL_ALLGATHER:
        return weft_allgather(in, out, count / (size_t)weft_comm_size(comm), o->dtype, comm);
    case WEFT_COLL_REDUCE_SCATTER:
        return weft_reduce_scatter(in, out, count / (size_t)weft_comm_size(comm), o->dtype,
                                   op_handle(o), comm);
    default: return weft_reduce(in, out, count, o->dtype, op_handle(o), o->root, comm);
    }
}

/* Elements between the buffers of two calls in flight (--inflight): room
 * for the largest size. */
static size_t slot_count(const bench_opts_t *o)
{
    size_t es = weft_dtype_size(o->dtype), most = 0;
    for (int s = 0; s < o->nsizes; s++)
        most = o->sizes[s] > most ? o->sizes[s] : most;
    return most / es ? most / es : 1;
}

/* The same in bytes: where the k-th call's buffers start. */
static size_t slot_bytes(const bench_opts_t *o)
{
    return slot_count(o) * weft_dtype_size(o->dtype);
}

#ifdef WEFT_HAVE_MPI
/* --inflight under the MPI library: its nonblocking collectives, waited
 * for in order. */
static int native_round(const bench_opts_t *o, size_t count, char *in, char *out, size_t slot)
{
    MPI_Request req[INFLIGHT_MAX];
    MPI_Datatype dt = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int n = (int)count, rc = native_types(o, &dt, &op), started = 0;
    if (rc)
        return rc;
    for (; !rc && started < o->inflight; started++) {
        size_t at = (size_t)started * slot;
        MPI_Request *r = &req[started];
        if (o->coll == WEFT_COLL_ALLREDUCE)
            rc = PMPI_Iallreduce(in + at, out + at, n, dt, op, MPI_COMM_WORLD, r);
        else if (o->coll == WEFT_COLL_BCAST)
            rc = PMPI_Ibcast(out + at, n, dt, o->root, MPI_COMM_WORLD, r);
        else
            rc = PMPI_Ireduce(in + at, out + at, n, dt, op, o->root, MPI_COMM_WORLD, r);
        rc = native_error(rc);
    }
    if (rc)
        started--; /* the one that failed to start */
    int wrc = native_error(PMPI_Waitall(started, req, MPI_STATUSES_IGNORE));
    return rc ? rc : wrc;
}
#endif

/* One iteration: a call, or with --inflight N a round of N split-phase
 * calls, each on buffers one slot (slot_bytes) past the previous call's,
 * all started and then waited for in order.  A start that fails (the same
 * on every rank: the algorithm cannot serve the call) ends the round once
 * the calls before it are done. */
static int run_round(weft_comm_t comm, const bench_opts_t *o, const algo_t *al, size_t count,
                     void *in, void *out)
{
    if (o->inflight <= 1)
        return run_one(comm, o, al, count, in, out);
    size_t slot = slot_bytes(o);
#ifdef WEFT_HAVE_MPI
    if (al == &native_algo)
        return native_round(o, count, in, out, slot);
#endif
    weft_request_t req[INFLIGHT_MAX];
    int rc = WEFT_OK, started = 0;
    for (; !rc && started < o->inflight; started++) {
        char *i = (char *)in + (size_t)started * slot, *u = (char *)out + (size_t)started * slot;
        weft_request_t *r = &req[started];
        rc = o->coll == WEFT_COLL_ALLREDUCE
                 ? weft_iallreduce(i, u, count, o->dtype, op_handle(o), comm, r)
             : o->coll == WEFT_COLL_BCAST
                 ? weft_ibcast(u, count, o->dtype, o->root, comm, r)
                 : weft_ireduce(i, u, count, o->dtype, op_handle(o), o->root, comm, r);
    }
    if (rc)
        started--;
    char why[256] = "";
    if (rc) /* the waits below must not overwrite the reason */
        snprintf(why, sizeof why, "%s", weft_last_error());
    for (int k = 0; k < started; k++) {
        int wrc = weft_wait(&req[k]);
        rc = rc ? rc : wrc;
    }
    if (why[0])
        weft_error(rc, "%s", why);
    return rc;
}

/* The barrier before each timed call, on sync (see lineup_t). */
/* --sync weft: weft's barrier before each timed call under mpirun too */
static bool sync_weft(const bench_opts_t *o) { return o->sync && !strcmp(o->sync, "weft"); }

static void bench_barrier(weft_comm_t sync, const bench_opts_t *o)
{
#ifdef WEFT_HAVE_MPI
    if (o->transport && !sync_weft(o)) { /* one barrier for weft and native alike */
        PMPI_Barrier(MPI_COMM_WORLD);
        return;
    }
#endif
    (void)o;
    weft_barrier(sync);
}

/* The algorithms to time, from --algo: "" (the summary: every algorithm
 * and auto), "all" (every algorithm) or a list NAME[/k=v;..]; native first
 * under mpirun when asked or by default.  2 after saying what was wrong. */
typedef struct lineup {
    const algo_t *al[66];
    char *params[66];
    char labels[66][48];
    char reason[66][200]; /* why it could not serve the call, when it could not */
    size_t n;
    bool with_native, summary;
    /* the summary's columns: the sizes' digits, and the longest name the
     * fastest column may show, so that no name is cut (summary_widths) */
    int bytes_w, best_w;
    /* the communicator of the barrier before each timed call: the timed
     * one, or for `weft bench barrier` a duplicate left on AUTO, so that
     * the algorithm being timed does not also decide how calls start */
    weft_comm_t sync;
    bool own_sync;
    /* where the ranks' figures and checks are combined: a duplicate left on
     * AUTO.  On the timed communicator they would run on the algorithm
     * being timed, which may not serve them (the board refuses 160 KB of
     * times, and each rank kept its own: the figure was rank 0's, not the
     * slowest rank's) or may be the very algorithm a check doubts. */
    weft_comm_t tally;
} lineup_t;

static int pick_algorithms(const bench_opts_t *o, int rank, lineup_t *L)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    memset(L, 0, sizeof *L);
    L->summary = !o->algos[0];
    if (L->summary)
        L->al[L->n++] = &auto_algo;
    if (L->summary || !strcmp(o->algos, "all")) {
        for (size_t i = 0; i < n && L->n < 64; i++)
            /* compositions duplicate their default parts: only by name */
            if (t[i].coll == o->coll && t[i].build != algo_reduce_bcast_allreduce) {
                L->al[L->n++] = &t[i];
                /* the stage's other ways, variants the built-in table
                 * takes by machine, so that weft tune measures them too:
                 * plain stores; the allreduce's and reduce's blocks staged
                 * as they are sent, the bcast's buffer in pieces */
                if (strstr(t[i].params, "stage") && L->n < 64)
                    L->al[L->n] = &t[i], L->params[L->n++] = strdup("stage=plain");
                if (strstr(t[i].params, "stage") && L->n < 64)
                    L->al[L->n] = &t[i],
                    L->params[L->n++] = strdup(t[i].coll == WEFT_COLL_BCAST
                                                   ? "stage=plain,segment=1M"
                                                   : "stage=sent");
            }
    } else {
        char list[sizeof o->algos];
        snprintf(list, sizeof list, "%s", o->algos);
        for (char *save = NULL, *e = strtok_r(list, ",", &save); e && L->n < 64;
             e = strtok_r(NULL, ",", &save)) {
            char *slash = strchr(e, '/');
            if (slash)
                *slash = '\0';
            if (!strcmp(e, "native"))
                continue;
            const algo_t *al = !strcmp(e, "auto") ? &auto_algo : algo_find(o->coll, e);
            if (!al) {
                if (!rank)
                    fprintf(stderr, "weft bench: no %s algorithm '%s' (see `weft algorithms`)\n",
                            weft_coll_name(o->coll), e);
                return 2;
            }
            if (slash) {
                L->params[L->n] = strdup(slash + 1);
                for (char *c = L->params[L->n]; c && *c; c++)
                    if (*c == ';')
                        *c = ','; /* NAME/chunks=8;sync=colouring */
            }
            L->al[L->n++] = al;
        }
    }
    L->with_native = o->transport && (L->summary || !strcmp(o->algos, "all") ||
                                      name_in_list(o->algos, "native"));
    if (L->with_native) { /* first, so the ratios read against it */
        memmove(L->al + 1, L->al, L->n * sizeof *L->al);
        memmove(L->params + 1, L->params, L->n * sizeof *L->params);
        L->al[0] = &native_algo;
        L->params[0] = NULL;
        L->n++;
    }
    if (!L->n) {
        if (!rank)
            fprintf(stderr, "weft bench: no %s algorithm matches '%s' (see `weft algorithms`)\n",
                    weft_coll_name(o->coll), o->algos);
        return 2;
    }
    return WEFT_OK;
}

/* Checks every named algorithm and its parameters once, before timing. */
static int validate_lineup(const bench_opts_t *o, weft_comm_t comm, int rank, lineup_t *L)
{
    for (size_t a = 0; a < L->n; a++) {
        snprintf(L->labels[a], sizeof L->labels[a], "%s%s%s", L->al[a]->name,
                 L->params[a] ? "/" : "", L->params[a] ? L->params[a] : "");
        /* as --algo spells it (NAME/k=v;k=v): a comma would split the
         * label across two columns of the CSV, and the label could not be
         * given back to --algo */
        for (char *c = L->labels[a]; *c; c++)
            if (*c == ',')
                *c = ';';
        if (L->al[a] != &native_algo &&
            weft_set_algorithm(comm, o->coll, L->al[a]->name, L->params[a]) != WEFT_OK) {
            if (!rank)
                fprintf(stderr, "weft bench: %s: %s\n", L->labels[a], weft_last_error());
            return 2;
        }
    }
    return WEFT_OK;
}

static void lineup_free(lineup_t *L)
{
    if (L->own_sync)
        weft_comm_free(&L->sync);
    if (L->tally)
        weft_comm_free(&L->tally);
    for (size_t a = 0; a < L->n; a++)
        free(L->params[a]);
}

static const char *convention(const bench_opts_t *o)
{
    if (o->nmif || o->arrivals)
        return "imbalanced: each rank's time inside the collective, avg over ranks "
               "and calls, median over calls of the ranks' mean";
    if (o->back_to_back)
        return "back to back: the calls in a row with no barrier between, each rank's mean "
               "per call, averaged over ranks";
    return o->osu ? "OSU convention: each rank's mean time, averaged over ranks"
                  : "median of the slowest rank's time per iteration, after a barrier";
}

/* The summary fits a 120-column terminal with the native columns: the
 * bytes column as wide as the largest size (at least "bytes"), the fastest
 * algorithm's as its longest label up to 26 (a fixed 20 cut
 * "linear_arena/stage=sent" and "=plain" alike to "linear_arena/stage=s").
 * A name is never cut: a longer one (two parameters,
 * "linear_arena/stage=plain;segment=1M") widens its own row.  AUTO's
 * choices are not known before the rows are printed: theirs is 26. */
static void summary_widths(const bench_opts_t *o, lineup_t *L)
{
    size_t largest = 0;
    for (int i = 0; i < o->nsizes; i++)
        largest = o->sizes[i] > largest ? o->sizes[i] : largest;
    L->bytes_w = snprintf(NULL, 0, "%zu", largest);
    L->bytes_w = L->bytes_w < 5 ? 5 : L->bytes_w;
    L->best_w = (int)strlen("auto's choice");
    for (size_t a = 0; a < L->n; a++) {
        int w = (int)strlen(L->labels[a]);
        if (L->al[a] != &auto_algo && L->al[a] != &native_algo && w > L->best_w)
            L->best_w = w < 26 ? w : 26;
    }
}

static void print_header(const bench_opts_t *o, weft_comm_t comm, lineup_t *L)
{
    int P = weft_comm_size(comm), local, cores;
    comm_node_cores(comm, &local, &cores);
    char crowd[96] = ""; /* where a wait yields its core at once: say so */
    if (cores && local > cores)
        snprintf(crowd, sizeof crowd, " (%d ranks on %d core%s: waits yield)", local, cores,
                 cores == 1 ? "" : "s");
#ifdef WEFT_HAVE_MPI
    if (L->with_native) { /* which library `native` is */
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(v, &len);
        v[strcspn(v, "\n,")] = '\0';
        printf("# native: %s\n", v);
    }
#endif
    char data[80] = "";
    if (o->coll != WEFT_COLL_BARRIER)
        snprintf(data, sizeof data, " %s%s%s, buffers from %s,", weft_dtype_name(o->dtype),
                 coll_is_reduction(o->coll) ? " " : "",
                 coll_is_reduction(o->coll) ? bench_op_name(o->op) : "",
                 o->arena ? "weft_alloc" : "malloc");
    printf("# weft bench %s: P=%d,%s %s%s\n# latency in us (%s)%s\n", weft_coll_name(o->coll),
           P, data,
           !o->transport ? "shared memory (weft run)"
           : !strcmp(o->transport, "mpi") ? "weft over MPI point-to-point, under mpirun"
                                          : "weft shared memory, under mpirun",
           crowd, convention(o),
           L->summary ? "" : "; busbw in GB/s; * = fastest");
    if (o->transport)
        printf("# before each timed call: %s\n",
               sync_weft(o) ? "weft's barrier (--sync weft)" : "the MPI library's MPI_Barrier");
    if (o->fresh)
        printf("# --fresh: every rank rewrites its input before each timed call, outside the "
               "clock\n");
    if (o->inflight > 1)
        printf("# each iteration a round of %d split-phase calls in flight, each on buffers of "
               "its own of the row's size; a figure is the whole round's\n", o->inflight);
    if (L->summary) {
        summary_widths(o, L);
        printf("%*s | %9s %-26s | %9s %-*s | %9s", L->bytes_w, "bytes", "auto", "(its choice)",
               "fastest", L->best_w, "(algorithm)", "auto/best");
        if (L->with_native)
            printf(" | %9s %11s", "native", "native/auto");
        printf("\n");
    } else {
        printf("%12s", "bytes");
        for (size_t a = 0; a < L->n; a++)
            printf(" | %-26.26s", L->labels[a]);
        printf("\n%12s", "");
        for (size_t a = 0; a < L->n; a++)
            printf(" | %9s %9s  %5s", "avg", "median", "busbw");
        if (L->with_native)
            printf("   (xN = native / this, > 1: faster than native)");
        printf("\n");
    }
    fflush(stdout);
}

static double busbw_of(const bench_opts_t *o, int P, size_t bytes, double med)
{
    double algbw = med > 0 ? (double)bytes * o->inflight / (med * 1e-6) / 1e9 : 0;
    return o->coll == WEFT_COLL_ALLREDUCE ? algbw * 2.0 * (P - 1) / P
           : blocked(o)                  ? algbw * (P - 1) /* P blocks' (P-1)/P */
                                         : algbw;
}

static void print_row_wide(const bench_opts_t *o, int P, size_t bytes, const lineup_t *L,
                           const result_t *res)
{
    double best = INFINITY;
    for (size_t a = 0; a < L->n; a++)
        if (!res[a].skipped && res[a].med < best)
            best = res[a].med;
    printf("%12zu", bytes);
    for (size_t a = 0; a < L->n; a++) {
        const result_t *r = &res[a];
        if (r->skipped) {
            printf(" | %26s", r->skipped);
            continue;
        }
        printf(" | %9.2f %9.2f%s %5.2f", r->avg, r->med, r->med == best ? "*" : " ",
               busbw_of(o, P, bytes, r->med));
        if (L->with_native && a > 0 && !res[0].skipped)
            printf(" x%.2f", res[0].med / r->med);
        if (r->chose[0])
            printf(" =%s", r->chose);
        if (r->bad)
            printf(" CHECK FAILED");
    }
    printf("\n");
}

static void print_row_summary(size_t bytes, const lineup_t *L, const result_t *res)
{
    const result_t *au = NULL, *best = NULL, *native = L->with_native ? &res[0] : NULL;
    size_t best_a = 0;
    for (size_t a = 0; a < L->n; a++) {
        if (L->al[a] == &auto_algo)
            au = &res[a];
        else if (L->al[a] != &native_algo && !res[a].skipped && (!best || res[a].med < best->med))
            best = &res[a], best_a = a;
    }
    printf("%*zu", L->bytes_w, bytes);
    if (au && !au->skipped)
        printf(" | %9.2f %-26s", au->med, au->chose[0] ? au->chose : "?");
    else
        printf(" | %9s %-26s", "n/a", "");
    /* AUTO's choice may be a configuration no other column runs (a
     * segment size, say): where it is the fastest, it is named so */
    const char *best_label = best ? L->labels[best_a] : NULL;
    if (au && !au->skipped && (!best || au->med < best->med))
        best = au, best_label = "auto's choice";
    if (best)
        printf(" | %9.2f %-*s", best->med, L->best_w, best_label);
    else
        printf(" | %9s %-*s", "n/a", L->best_w, "");
    if (au && !au->skipped && best)
        printf(" | %8.2fx", au->med / best->med);
    else
        printf(" | %9s", "");
    if (native)
        native->skipped || !au || au->skipped ? printf(" | %9s %11s", "n/a", "")
                                              : printf(" | %9.2f %10.2fx", native->med,
                                                       native->med / au->med);
    for (size_t a = 0; a < L->n; a++)
        if (res[a].bad)
            printf(" CHECK FAILED (%s)", L->labels[a]);
    printf("\n");
}

/* Algorithms that could not serve the call, once each, below the table. */
static void print_not_run(const lineup_t *L, const result_t *res, int nsizes)
{
    for (size_t a = 0; a < L->n; a++) {
        int skipped = 0;
        for (int s = 0; s < nsizes; s++)
            skipped += res[(size_t)s * L->n + a].skipped != NULL;
        if (skipped)
            printf("# not run (%d of %d sizes): %s: %s\n", skipped, nsizes, L->labels[a],
                   L->reason[a]);
    }
}

/* The convention of a balanced run's figures, as CSV and JSON name it. */
static const char *convention_label(const bench_opts_t *o)
{
    static char label[48];
    snprintf(label, sizeof label, "%s%s",
             o->back_to_back ? "back-to-back" : o->osu ? "osu" : "max-median",
             o->fresh ? "/fresh" : "");
    if (o->inflight > 1) /* a figure is a round's */
        snprintf(label + strlen(label), sizeof label - strlen(label), "/inflight=%d",
                 o->inflight);
    return label;
}

static void write_csv_row(FILE *csv, const bench_opts_t *o, int P, size_t bytes,
                          const char *label, const result_t *r)
{
    fprintf(csv, "%s,%d,%s,%zu,%s,%.3f,%.3f,%.3f,%.4f,%d,%s,", weft_coll_name(o->coll), P,
            weft_dtype_name(o->dtype), bytes, label, r->avg, r->med, r->min,
            busbw_of(o, P, bytes, r->med), r->iters, r->chose);
    if (r->mif >= 0)
        fprintf(csv, "inside-mif=%g%s,%.3f,%.3f,%g\n", r->mif, o->redraw ? "-redraw" : "",
                r->worst, r->alpha * 1e6, r->mif);
    else if (r->late)
        fprintf(csv, "inside-arrivals,%.3f,,\n", r->worst);
    else
        fprintf(csv, "%s,,,\n", convention_label(o));
}

static void write_json(const bench_opts_t *o, int P, const lineup_t *L, const result_t *res,
                       int npass)
{
    FILE *j = fopen(o->json, "w");
    if (!j) {
        fprintf(stderr, "weft bench: cannot write %s: %s\n", o->json, strerror(errno));
        return;
    }
    size_t es = weft_dtype_size(o->dtype);
    fprintf(j, "{\"collective\": \"%s\", \"np\": %d, \"dtype\": \"%s\", \"op\": \"%s\", "
               "\"transport\": \"%s\", \"convention\": \"%s\", \"inflight\": %d, "
               "\"results\": [",
            weft_coll_name(o->coll), P, weft_dtype_name(o->dtype), bench_op_name(o->op),
            o->transport ? o->transport : "shm",
            o->nmif || o->arrivals ? "inside" : convention_label(o), o->inflight);
    int first = 1;
    for (int s = 0; s < o->nsizes * npass; s++)
        for (size_t a = 0; a < L->n; a++) {
            const result_t *r = &res[(size_t)s * L->n + a];
            size_t bytes = o->sizes[s % o->nsizes] / es * es;
            if (r->skipped)
                continue;
            fprintf(j, "%s\n  {\"bytes\": %zu, \"algorithm\": \"%s\", \"avg_us\": %.3f, "
                       "\"median_us\": %.3f, \"min_us\": %.3f, \"busbw_gbs\": %.4f, "
                       "\"iters\": %d",
                    first ? "" : ",", bytes, L->labels[a], r->avg, r->med, r->min,
                    busbw_of(o, P, bytes, r->med), r->iters);
            if (r->chose[0])
                fprintf(j, ", \"chose\": \"%s\"", r->chose);
            if (r->mif >= 0)
                fprintf(j, ", \"mif\": %g, \"alpha_us\": %.3f", r->mif, r->alpha * 1e6);
            if (r->late)
                fprintf(j, ", \"worst_rank_us\": %.3f", r->worst);
            if (o->check)
                fprintf(j, ", \"check\": \"%s\"", r->bad ? "failed" : "ok");
            fprintf(j, "}");
            first = 0;
        }
    fprintf(j, "\n]}\n");
    fclose(j);
}

/* How ranks arrive at the timed calls: late by r alpha, r uniform in
 * [0, mif] (--mif), or by a recorded pattern (--arrivals: us[call * P +
 * rank] microseconds, ncalls lines taken in turn). */
typedef struct arrival {
    double mif, alpha; /* mif -1: the pattern */
    const double *us;
    int ncalls, P;
} arrival_t;

/* This rank's delay before call i, spent computing, as the seed's
 * benchmark does: a busy wait, not a sleep.  --mif draws r from the rank
 * (and, redrawn, the call). */
static void arrive_late(const arrival_t *ar, int rank, int i, bool redraw)
{
    double delay;
    if (ar->us) {
        delay = ar->us[(size_t)(i % ar->ncalls) * (size_t)ar->P + (size_t)rank] * 1e-6;
    } else {
        uint64_t x = (uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull;
        if (redraw)
            x ^= (uint64_t)(i + 1) * 0xD1B54A32D192ED03ull;
        for (int k = 0; k < 4; k++) /* mix the seed */
            x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull;
        delay = (double)(x >> 11) / 9007199254740992.0 * ar->mif * ar->alpha;
    }
    double until = weft_now() + delay;
    while (weft_now() < until)
        ;
}

/* One line of --arrivals: exactly P delays (us, 0 to 10 s) into out; ""
 * or what is wrong in why. */
static void parse_arrival_line(const char *p, int P, double *out, char *why, size_t len)
{
    int k = 0;
    for (;;) {
        char *e;
        double v = strtod(p, &e);
        if (e == p)
            break;
        if (k == P) {
            snprintf(why, len, "more delays than the %d ranks", P);
            return;
        }
        if (!(v >= 0 && v <= 1e7)) {
            snprintf(why, len, "delay %d is negative, not a number or above 10 s", k + 1);
            return;
        }
        out[k++] = v;
        p = e;
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p)
        snprintf(why, len, "'%.20s' is not a number", p);
    else if (k != P)
        snprintf(why, len, "%d delays for %d ranks", k, P);
}

/* --arrivals FILE, read by rank 0 and sent to all: lines of P delays in
 * microseconds ('#' comments, blank lines skipped).  NULL after saying
 * FILE:LINE: what on rank 0 (every rank returns NULL alike). */
static double *read_arrivals(const char *path, weft_comm_t comm, int *ncalls)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm);
    double *us = NULL;
    int64_t n = 0; /* lines read; -1: refused */
    if (!rank) {
        FILE *f = fopen(path, "r");
        char line[65536], why[160] = "";
        int lineno = 0;
        size_t cap = 0;
        if (!f)
            snprintf(why, sizeof why, "cannot open it: %s", strerror(errno));
        while (f && !why[0] && fgets(line, sizeof line, f)) {
            lineno++;
            char *hash = strchr(line, '#'), *p = line;
            if (!strchr(line, '\n') && !feof(f)) {
                snprintf(why, sizeof why, "line %d is longer than %zu bytes", lineno,
                         sizeof line - 1);
                break;
            }
            if (hash)
                *hash = '\0';
            line[strcspn(line, "\r\n")] = '\0';
            while (*p == ' ' || *p == '\t')
                p++;
            if (!*p)
                continue;
            if ((size_t)(n + 1) * (size_t)P > cap) {
                size_t nc = cap ? cap * 2 : (size_t)P * 64;
                double *g = realloc(us, nc * sizeof *us);
                if (!g) {
                    snprintf(why, sizeof why, "out of memory");
                    break;
                }
                us = g, cap = nc;
            }
            char what[100] = "";
            parse_arrival_line(p, P, us + (size_t)n * (size_t)P, what, sizeof what);
            if (what[0])
                snprintf(why, sizeof why, "line %d: %s", lineno, what);
            else
                n++;
        }
        if (f)
            fclose(f);
        if (!why[0] && !n)
            snprintf(why, sizeof why, "no delays in it (want a line of %d per call)", P);
        if (why[0]) {
            fprintf(stderr, "weft bench: --arrivals %s: %s\n", path, why);
            n = -1;
        }
    }
    weft_bcast(&n, 1, WEFT_INT64, 0, comm);
    if (n <= 0) {
        free(us);
        return NULL;
    }
    double *got = rank ? malloc((size_t)n * (size_t)P * sizeof *got) : us;
    int ok = got != NULL;
    weft_allreduce(WEFT_IN_PLACE, &ok, 1, WEFT_INT32, WEFT_MIN, comm);
    if (!ok) {
        if (!rank)
            fprintf(stderr, "weft bench: --arrivals %s: out of memory\n", path);
        free(got);
        return NULL;
    }
    weft_bcast(got, (size_t)n * (size_t)P, WEFT_FLOAT64, 0, comm);
    *ncalls = (int)n;
    return got;
}


/* alpha(size): the one-way time of a message of count elements between
 * ranks 0 and 1 (a broadcast on a communicator of those two, there and
 * back), known to every rank; 0 with one rank. */
static double measure_alpha(weft_comm_t comm, const bench_opts_t *o, size_t count, void *buf)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm);
    double alpha = 0;
    if (P < 2)
        return 0;
    weft_comm_t pair = NULL;
    if (weft_comm_split(comm, rank < 2 ? 0 : WEFT_UNDEFINED, rank, &pair) != WEFT_OK)
        return 0;
    if (pair) {
        size_t bytes = count * weft_dtype_size(o->dtype);
        int reps = (int)fmax(5, fmin(100, (double)(1u << 26) / fmax((double)bytes, 1)));
        double t0 = 0;
        for (int i = 0; i < 5 + reps; i++) {
            if (i == 5)
                t0 = weft_now();
            weft_bcast(buf, count, o->dtype, 0, pair);
            weft_bcast(buf, count, o->dtype, 1, pair);
        }
        alpha = (weft_now() - t0) / (2.0 * reps);
        weft_comm_free(&pair);
    }
    weft_bcast(&alpha, 1, WEFT_FLOAT64, 0, comm);
    return alpha;
}

/* Times one algorithm at one size into *r (every rank alike); nonzero if
 * it cannot serve the call (r->skipped, and the reason in why). */
/* The median of sorted times. */
static double median_sorted(const double *t, int n)
{
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The figures of one algorithm's iterations (times, seconds, this rank's)
 * by the run's convention: with late arrivals the time inside, over ranks
 * and calls, and the worst rank's; --osu and --back-to-back each rank's
 * mean averaged over ranks; else the slowest rank per iteration.  comm:
 * the tally communicator (lineup_t).  0, or the first call's error (a
 * peer that died, say): then the figures are not the ranks' together. */
static int summarize(const bench_opts_t *o, weft_comm_t comm, double *times, int iters,
                     bool late, result_t *r)
{
    int P = weft_comm_size(comm), rc = WEFT_OK;
    double sum = 0;
    for (int i = 0; i < iters; i++)
        sum += times[i];
    if (late) {
        double mean = sum / iters, worst = mean;
        rc = weft_allreduce(WEFT_IN_PLACE, &mean, 1, WEFT_FLOAT64, WEFT_SUM, comm);
        if (!rc)
            rc = weft_allreduce(WEFT_IN_PLACE, &worst, 1, WEFT_FLOAT64, WEFT_MAX, comm);
        if (!rc)
            rc = weft_allreduce(WEFT_IN_PLACE, times, (size_t)iters, WEFT_FLOAT64, WEFT_SUM, comm);
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        r->avg = mean / P * 1e6;
        r->worst = worst * 1e6;
        r->med = median_sorted(times, iters) / P * 1e6;
        r->min = times[0] / P * 1e6;
    } else if (o->osu || o->back_to_back) {
        double mean = sum / iters;
        rc = weft_allreduce(WEFT_IN_PLACE, &mean, 1, WEFT_FLOAT64, WEFT_SUM, comm);
        r->avg = r->med = mean / P * 1e6;
        if (!rc)
            rc = weft_allreduce(WEFT_IN_PLACE, times, (size_t)iters, WEFT_FLOAT64, WEFT_MIN, comm);
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        r->min = times[0] * 1e6;
    } else {
        rc = weft_allreduce(WEFT_IN_PLACE, times, (size_t)iters, WEFT_FLOAT64, WEFT_MAX, comm);
        sum = 0;
        for (int i = 0; i < iters; i++)
            sum += times[i];
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        r->avg = sum / iters * 1e6;
        r->med = median_sorted(times, iters) * 1e6;
        r->min = times[0] * 1e6;
    }
    r->iters = iters;
    return rc;
}

/* --fresh: what a rank contributes as first filled (its input, and a
 * bcast's buffer), copied back over it before each timed call.  A copy
 * writes the lines as an application's new data would, at memory speed:
 * generating the values anew each time took milliseconds a call at 1 MiB,
 * CPU time that ranks sharing cores then paid back to the scheduler
 * inside the timed call. */
typedef struct {
    char *copy; /* [input | bcast buffer], span bytes each; NULL: not --fresh */
    size_t span;
} fresh_t;

static void fresh_keep(const bench_opts_t *o, const fresh_t *fr, const void *in, const void *out)
{
    memcpy(fr->copy, in, fr->span);
    if (o->coll == WEFT_COLL_BCAST)
        memcpy(fr->copy + fr->span, out, fr->span);
}

static void fresh_restore(const bench_opts_t *o, const fresh_t *fr, void *in, void *out)
{
    memcpy(in, fr->copy, fr->span);
    if (o->coll == WEFT_COLL_BCAST)
        memcpy(out, fr->copy + fr->span, fr->span);
}

/* The data of every call in flight (--inflight): the k-th's of salt + k. */
static void fill_slots(const bench_opts_t *o, void *in, void *out, size_t count, int rank,
                       unsigned salt)
{
    size_t slot = slot_bytes(o);
    for (int k = 0; k < o->inflight; k++) {
        fill((char *)in + (size_t)k * slot, count, o->dtype, o->op, rank, salt + (unsigned)k);
        if (o->coll == WEFT_COLL_BCAST)
            fill((char *)out + (size_t)k * slot, count, o->dtype, o->op, rank,
                 salt + (unsigned)k);
    }
}

/* Times iters calls (after warm untimed ones) into times: back to back,
 * one clock around them all; else each after a barrier (and with ar, a
 * late arrival).  0, or the first call's error. */
static int time_calls(const bench_opts_t *o, weft_comm_t comm, const lineup_t *L,
                      const algo_t *al, size_t count, void *in, void *out, double *times,
                      int iters, int warm, const arrival_t *ar, const fresh_t *fr)
{
    int rank = weft_comm_rank(comm), rc = WEFT_OK;
    for (int i = 0; i < warm && !rc; i++)
        rc = run_round(comm, o, al, count, in, out);
    if (o->back_to_back) {
        bench_barrier(L->sync, o);
        double t0 = weft_now();
        for (int i = 0; i < iters && !rc; i++)
            rc = run_round(comm, o, al, count, in, out);
        double each = (weft_now() - t0) / iters;
        for (int i = 0; i < iters; i++)
            times[i] = each;
        return rc;
    }
    for (int i = 0; i < iters && !rc; i++) {
        if (fr->copy)
            fresh_restore(o, fr, in, out);
        bench_barrier(L->sync, o);
        if (ar)
            arrive_late(ar, rank, i, o->redraw);
        double t0 = weft_now();
        rc = run_round(comm, o, al, count, in, out);
        times[i] = weft_now() - t0;
    }
    return rc;
}

static int time_one(const bench_opts_t *o, weft_comm_t comm, const lineup_t *L, size_t a,
                    size_t count, void *in, void *out, double *times, int iters, int warm,
                    const arrival_t *ar, const fresh_t *fr, result_t *r, char *why,
                    size_t whylen)
{
    int rank = weft_comm_rank(comm);
    const algo_t *al = L->al[a];
    r->mif = ar ? ar->mif : -1, r->alpha = ar ? ar->alpha : 0, r->late = ar != NULL;
    r->al = al;
    r->params = L->params[a];
    r->chose[0] = '\0';
    if (al != &native_algo)
        weft_set_algorithm(comm, o->coll, al->name, L->params[a]);
    fill_slots(o, in, out, count, rank, 0);
    if (fr->copy)
        fresh_keep(o, fr, in, out);
    int rc = time_calls(o, comm, L, al, count, in, out, times, iters, warm, ar, fr);
    if (al == &auto_algo && comm_last_choice(comm, o->coll)) /* copied: later calls reuse it */
        snprintf(r->chose, sizeof r->chose, "%s", comm_last_choice(comm, o->coll));
    if (rc) {
        /* an algorithm that cannot serve this call (e.g. needs a
         * commutative op) fails on every rank alike */
        r->skipped = "n/a";
        snprintf(why, whylen, "%s", weft_last_error());
        return rc;
    }
    if ((rc = summarize(o, L->tally, times, iters, ar != NULL, r))) {
        r->skipped = "n/a";
        snprintf(why, whylen, "combining the ranks' figures: %s", weft_last_error());
    }
    return rc;
}

/* --check: one more call (or round) on fresh data, every element verified. */
static int check_one(const bench_opts_t *o, weft_comm_t comm, weft_comm_t tally,
                     const algo_t *al, size_t count, void *in, void *out, unsigned salt)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm);
    fill_slots(o, in, out, count, rank, salt);
    int rc = run_round(comm, o, al, count, in, out);
    int bad = rc != 0;
    bool holds = o->coll != WEFT_COLL_REDUCE || rank == o->root;
    size_t slot = slot_bytes(o), block = count / (size_t)P;
    if (o->coll == WEFT_COLL_ALLGATHER) /* block r is rank r's input */
        for (size_t at = 0; !bad && at < count; at++)
            bad = !check_elem_of(out, at, at % block, (int)(at / block), (int)(at / block), P, o,
                                 salt);
    else if (o->coll == WEFT_COLL_REDUCE_SCATTER) /* this rank's block of every input */
        for (size_t i = 0; !bad && i < block; i++)
            bad = !check_elem_of(out, i, (size_t)rank * block + i, 0, P - 1, P, o, salt);
    else /* every call of the round (--inflight) */
        for (int k = 0; holds && !bad && k < o->inflight; k++) {
            const char *at = (const char *)out + (size_t)k * slot;
            for (size_t i = 0; !bad && i < count; i++)
                bad = !check_elem(at, i, P, o, salt + (unsigned)k);
        }
    weft_allreduce(WEFT_IN_PLACE, &bad, 1, WEFT_INT32, WEFT_MAX, tally);
    return bad;
}

/* --check of a barrier: 20 calls, before each of which one rank in turn
 * waits 1 ms (the others 0-50 us); every rank notes the monotonic clock
 * (one for the whole machine) as it enters and leaves.  Wrong if any rank
 * left before the last one entered. */
static int check_barrier(const bench_opts_t *o, weft_comm_t comm, const lineup_t *L,
                         const algo_t *al)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm), bad = 0;
    for (int i = 0; i < 20; i++) {
        bench_barrier(L->sync, o);
        double delay = rank == i % P ? 1e-3 : (double)((rank * 7 + i * 13) % 51) * 1e-6;
        double until = weft_now() + delay;
        while (weft_now() < until)
            ;
        double enter = weft_now();
        int rc = run_one(comm, o, al, 0, NULL, NULL);
        double left = weft_now();
        weft_allreduce(WEFT_IN_PLACE, &enter, 1, WEFT_FLOAT64, WEFT_MAX, L->tally);
        weft_allreduce(WEFT_IN_PLACE, &left, 1, WEFT_FLOAT64, WEFT_MIN, L->tally);
        bad += rc != WEFT_OK || left < enter;
    }
    weft_allreduce(WEFT_IN_PLACE, &bad, 1, WEFT_INT32, WEFT_MAX, L->tally);
    return bad;
}

/* What a rank's run of the benchmark holds: buffers for the largest
 * size, one iteration's times, the results of every pass, size and
 * algorithm, and alpha(size) for --mif. */
typedef struct {
    void *in, *out;
    fresh_t fresh;
    size_t maxbytes;
    double *times;
    result_t *res;
    double *alpha;
} bench_mem_t;

static void bench_mem_free(const bench_opts_t *o, bench_mem_t *m)
{
    if (o->arena) {
        weft_free(m->in);
        weft_free(m->out);
    } else {
        free(m->in);
        free(m->out);
    }
    free(m->fresh.copy);
    free(m->times);
    free(m->res);
    free(m->alpha);
}

static int bench_mem_get(const bench_opts_t *o, size_t na, int P, bench_mem_t *m)
{
    size_t es = weft_dtype_size(o->dtype);
    memset(m, 0, sizeof *m);
    for (int s = 0; s < o->nsizes; s++)
        m->maxbytes = o->sizes[s] > m->maxbytes ? o->sizes[s] : m->maxbytes;
    size_t maxcount = slot_count(o) * (size_t)(blocked(o) ? P : o->inflight);
    if (!o->arena) {
        m->in = calloc(maxcount, es);
        m->out = calloc(maxcount, es);
    } else if (weft_alloc(maxcount * es, &m->in) || weft_alloc(maxcount * es, &m->out)) {
        fprintf(stderr, "weft bench: %s\n", weft_last_error());
        bench_mem_free(o, m);
        return 1;
    }
    int maxiters = o->iters > 0 ? o->iters : 1000;
    int npass = o->nmif ? o->nmif : 1;
    m->times = malloc((size_t)maxiters * sizeof *m->times);
    m->res = calloc((size_t)o->nsizes * na * (size_t)npass, sizeof *m->res);
    m->alpha = calloc((size_t)o->nsizes, sizeof *m->alpha);
    if (o->fresh)
        m->fresh.copy = malloc((o->coll == WEFT_COLL_BCAST ? 2 : 1) * maxcount * es);
    if (!m->in || !m->out || !m->times || !m->res || !m->alpha || (o->fresh && !m->fresh.copy)) {
        fprintf(stderr, "weft bench: out of memory for %zu-byte buffers\n", m->maxbytes);
        bench_mem_free(o, m);
        return 1;
    }
    return 0;
}

/* One row: every algorithm of the line-up timed (and with --check,
 * verified) at size s of pass (imbalance factor) pass, written to the CSV
 * and, on rank 0, printed.  The number of wrong results. */
static int bench_row(const bench_opts_t *o, weft_comm_t comm, lineup_t *L, bench_mem_t *m,
                     int pass, int s, const double *pattern, int ncalls, FILE *csv)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm), failures = 0;
    size_t es = weft_dtype_size(o->dtype), na = L->n;
    size_t count = o->sizes[s] / es, bytes = count * es;
    if (blocked(o)) /* bytes a block; the calls pass P of them */
        count *= (size_t)P;
    int iters = o->iters > 0 ? o->iters
                             : (int)fmax(10, fmin(1000, (double)(1u << 27) / fmax(bytes, 4096) / P));
    /* at least 10 warm-up calls, as OSU's benchmarks skip their first 10
     * large-message iterations: a 2-rank bcast of 16 MiB by single copy
     * took 4.1, 1.7, 1.7, 1.0, 1.0 ms in its first calls and 0.8 from the
     * sixth on, as its buffers settled in the caches (cells: 3.8, then
     * 1.4-1.6 from the second), and with two warm-up calls and five timed
     * the median was the staircase's; with five, a fresh job's first
     * column still timed the pair's copy-way trials (three calls each way)
     * and the settling after them: 1.2-1.6 ms where the next column of
     * the same algorithm took 0.78-0.87 (PERFORMANCE-LOG.md, "Warm-up calls") */
    int warm = o->warmup >= 0 ? o->warmup : (iters / 10 > 10 ? iters / 10 : 10);
    result_t *row = &m->res[((size_t)pass * (size_t)o->nsizes + (size_t)s) * na];
    double mif = o->nmif ? o->mif[pass] : -1;
    arrival_t ar = {mif, m->alpha[s], pattern, ncalls, P};
    if (!rank && o->nmif && s == 0)
        printf("# imbalance factor %g: each rank arrives r alpha(size) late, r uniform in "
               "[0, %g] %s; figures: time inside the collective\n", mif, mif,
               o->redraw ? "per call" : "per rank");
    /* what fill_slots writes: inflight slots of count elements */
    m->fresh.span = (size_t)(o->inflight - 1) * slot_bytes(o) + count * es;
    for (size_t a = 0; a < na; a++) {
        char why[200];
        if (time_one(o, comm, L, a, count, m->in, m->out, m->times, iters, warm,
                     o->nmif || pattern ? &ar : NULL, &m->fresh, &row[a], why, sizeof why)) {
            if (!L->reason[a][0]) {
                /* the table lists the algorithms that serve the call */
                char *list = strstr(why, "; algorithms that serve this call");
                if (list)
                    *list = '\0';
                snprintf(L->reason[a], sizeof L->reason[a], "%s", why);
            }
            continue;
        }
        if (o->check && (row[a].bad = o->coll == WEFT_COLL_BARRIER
                                          ? check_barrier(o, comm, L, L->al[a])
                                          : check_one(o, comm, L->tally, L->al[a], count, m->in,
                                                      m->out, (unsigned)(s * 31 + (int)a))))
            failures++;
        if (csv)
            write_csv_row(csv, o, P, bytes, L->labels[a], &row[a]);
    }
    if (!rank) {
        if (L->summary)
            print_row_summary(bytes, L, row);
        else
            print_row_wide(o, P, bytes, L, row);
        fflush(stdout);
    }
    return failures;
}

/* The line-up for this rank, checked against the other ranks' (and for a
 * barrier, the communicator its iterations synchronise on).  0, or the
 * exit status. */
static int bench_lineup(const bench_opts_t *o, weft_comm_t comm, lineup_t *L)
{
    int rank = weft_comm_rank(comm);
    int rc = pick_algorithms(o, rank, L);
    L->sync = comm;
    /* both before any algorithm is set on comm */
    if (!rc && o->coll == WEFT_COLL_BARRIER) {
        rc = weft_comm_dup(comm, &L->sync);
        L->own_sync = rc == WEFT_OK;
        if (rc)
            fprintf(stderr, "weft bench: %s\n", weft_last_error());
    }
    if (!rc && (rc = weft_comm_dup(comm, &L->tally))) {
        L->tally = NULL;
        fprintf(stderr, "weft bench: %s\n", weft_last_error());
    }
    if (!rc)
        rc = validate_lineup(o, comm, rank, L);
    return rc;
}

static int bench_rank(const bench_opts_t *o, weft_comm_t comm)
{
    int rank = weft_comm_rank(comm), P = weft_comm_size(comm);
    lineup_t *L = calloc(1, sizeof *L);
    if (!L)
        return 1;
    bench_mem_t m;
    int rc = bench_lineup(o, comm, L);
    if (!rc)
        rc = bench_mem_get(o, L->n, P, &m);
    if (rc) {
        lineup_free(L);
        free(L);
        return rc;
    }
    size_t es = weft_dtype_size(o->dtype);
    int npass = o->nmif ? o->nmif : 1; /* one table per imbalance factor */
    FILE *csv = NULL;
    if (!rank && o->csv && !(csv = fopen(o->csv, "w")))
        fprintf(stderr, "weft bench: cannot write %s: %s\n", o->csv, strerror(errno));
    if (csv)
        fprintf(csv, "collective,np,dtype,bytes,algorithm,avg_us,median_us,min_us,busbw_gbs,"
                     "iters,chose,convention,worst_rank_us,alpha_us,mif\n");
    if (!rank)
        print_header(o, comm, L);
    int failures = 0, ncalls = 0;
    double *pattern = NULL;
    if (o->arrivals) {
        if (!(pattern = read_arrivals(o->arrivals, L->tally, &ncalls)))
            failures = -1; /* said on rank 0; every rank stops alike */
        else if (!rank)
            printf("# arrivals: %d calls' delays from %s, taken in turn; figures: time inside "
                   "the collective\n", ncalls, o->arrivals);
    }
    for (int s = 0; s < o->nsizes && o->nmif; s++) {
        m.alpha[s] = measure_alpha(L->tally, o, o->sizes[s] / es, m.out);
        if (!rank)
            printf("%s %zu B %.3f us%s", s ? "," : "# alpha(size), ranks 0 and 1:",
                   o->sizes[s] / es * es, m.alpha[s] * 1e6, s + 1 == o->nsizes ? "\n" : "");
    }
    for (int pass = 0; pass < npass && failures >= 0; pass++)
        for (int s = 0; s < o->nsizes; s++)
            failures += bench_row(o, comm, L, &m, pass, s, pattern, ncalls, csv);
    if (!rank && failures >= 0) {
        print_not_run(L, m.res, o->nsizes * npass);
        if (o->json)
            write_json(o, P, L, m.res, npass);
    }
    if (csv)
        fclose(csv);
    if (!rank && o->check && failures >= 0)
        printf(failures ? "# check: %d results WRONG\n" : "# check: every result verified\n",
               failures);
    bench_mem_free(o, &m);
    free(pattern);
    if (affine_op >= 0)
        weft_op_free(&affine_op), affine_op = -1;
    lineup_free(L);
    free(L);
    return failures < 0 ? 2 : failures ? 1 : 0;
}

int cmd_bench_kernels(int argc, char **argv);

int cmd_bench(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "kernels"))
        return cmd_bench_kernels(argc - 1, argv + 1);
    bench_opts_t o;
    int rc = bench_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (o.transport) {
#ifdef WEFT_HAVE_MPI
        /* under mpirun: weft over pure MPI (every rank its own node), or
         * what the drop-in gets on one machine: shared memory alone, no
         * MPI communicator (docs/MPI.md) */
        if (!strcmp(o.transport, "mpi"))
            setenv("WEFT_NODE_SIZE", "1", 1);
        else
            unsetenv("WEFT_NODE_SIZE");
        MPI_Init(&argc, &argv);
        weft_comm_t comm;
        if (weft_comm_from_mpi(MPI_COMM_WORLD, &comm) != WEFT_OK) {
            fprintf(stderr, "weft bench: %s\n", weft_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        rc = bench_rank(&o, comm);
        weft_comm_free(&comm);
        MPI_Finalize();
        return rc;
#else
        fprintf(stderr, "weft bench: --transport needs weft built with MPI "
                        "(apt-get install libopenmpi-dev, then rebuild)\n");
        return 2;
#endif
    }
    if (getenv("WEFT_RANK")) {
        if (weft_init(NULL, NULL)) {
            fprintf(stderr, "weft bench: weft_init: %s\n", weft_last_error());
            return 1;
        }
        rc = bench_rank(&o, weft_comm_world());
        int frc = weft_finalize();
        return rc ? rc : frc ? 1 : 0;
    }
    /* not a rank yet: start P copies of this very command */
    return launch_self(o.np, "bench", argc, argv);
}

/* One timed operation of `weft bench kernels`: what it does, to which bytes. */
typedef struct kernel_op {
    int kind; /* 0 memcpy, 1 copy_bytes, 2 a reduction, 3 seeded (dst = seed op src),
               * 4 the same as a copy then a reduction, 8 KiB at a time */
    reducer_t red;
    char *dst;
    const char *src, *seed;
    size_t bytes;
} kernel_op_t;

static void kernel_run(const kernel_op_t *op)
{
    size_t es = op->red.esize;
    switch (op->kind) {
    case 0:
        memcpy(op->dst, op->src, op->bytes);
        break;
    case 1:
        copy_bytes(op->dst, op->src, op->bytes);
        break;
    case 2:
        reducer_apply(&op->red, op->dst, op->src, op->bytes / es, false);
        break;
    case 3:
        reducer_apply_seeded(&op->red, op->dst, op->seed, op->src, op->bytes / es, false);
        break;
    default:
        for (size_t at = 0; at < op->bytes; at += 8192) {
            size_t b = op->bytes - at < 8192 ? op->bytes - at : 8192;
            copy_bytes(op->dst + at, op->seed + at, b);
            reducer_apply(&op->red, op->dst + at, op->src + at, b / es, false);
        }
    }
}

/* --quick: three timings of a sixteenth of the work each, for a look at
 * the tables (the test suite's) rather than figures to quote. */
static bool kernels_quick;

/* Seconds per run of op: the median of nine timings of reps runs (three
 * of reps / 16, at least 1, with --quick). */
static double kernel_time(const kernel_op_t *op, int reps)
{
    double t[9];
    int n = kernels_quick ? 3 : 9;
    if (kernels_quick)
        reps = reps / 16 > 0 ? reps / 16 : 1;
    for (int k = 0; k < n; k++) {
        double t0 = weft_now();
        for (int i = 0; i < reps; i++)
            kernel_run(op);
        t[k] = (weft_now() - t0) / reps;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* The copies glibc makes slow (core/copy.h): a destination 1-15 bytes past
 * its source modulo 4 KiB, memcpy against copy_bytes, in cache.  a and b
 * hold at least 2 MiB + 4 KiB. */
static void copy_distances(char *a, char *b)
{
    static const size_t sizes[] = {16 << 10, 256 << 10, 1 << 20};
    static const int dists[] = {0, 4, 16};
    printf("\n# copies: GB/s (median of repeats) by the destination's distance past the "
           "source modulo 4 KiB\n%-10s %9s %12s %12s %12s\n", "copy", "distance", "16 KiB",
           "256 KiB", "1 MiB");
    char *src = (char *)(((uintptr_t)b + 4095) & ~(uintptr_t)4095);
    char *base = (char *)(((uintptr_t)a + 4095) & ~(uintptr_t)4095);
    for (int f = 0; f < 2; f++) {
        for (int k = 0; k < 3; k++) {
            printf("%-10s %9d", f ? "copy_bytes" : "memcpy", dists[k]);
            for (int s = 0; s < 3; s++) {
                kernel_op_t op = {.kind = f, .dst = base + dists[k], .src = src,
                                  .bytes = sizes[s]};
                int reps = (int)fmax(3, fmin(2000, (double)(256u << 20) / sizes[s]));
                printf(" %12.2f", (double)sizes[s] / kernel_time(&op, reps) / 1e9);
            }
            printf("\n");
        }
    }
}

/* A receive fused with the copy before it (sink.c): dst = seed (op)
 * message by the seeded kernel in one pass, against the copy then the
 * kernel in 8 KiB blocks (the way before seeded kernels, which a user op
 * keeps).  a, b and c hold at least 64 MiB. */
static void seeded_kernels(char *a, char *b, char *c)
{
    static const size_t sizes[] = {16 << 10, 256 << 10, 64 << 20};
    const weft_dtype_t types[] = {WEFT_INT32, WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32,
                                  WEFT_FLOAT64};
    printf("\n# seeded: dst = seed (op) message, GB/s of destination written (median of "
           "repeats)\n%-10s %-6s %-18s %12s %12s %12s\n", "dtype", "op", "way", "16 KiB",
           "256 KiB", "64 MiB");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int kind = 3; kind <= 4; kind++) {
            printf("%-10s %-6s %-18s", weft_dtype_name(types[t]), "sum",
                   kind == 3 ? "one pass" : "copy, then op");
            kernel_op_t op = {.kind = kind, .dst = a, .src = b, .seed = c};
            reducer_init(&op.red, WEFT_SUM, types[t]);
            for (int s = 0; s < 3; s++) {
                op.bytes = sizes[s];
                int reps = (int)fmax(3, fmin(2000, (double)(1u << 30) / sizes[s]));
                printf(" %12.2f", (double)sizes[s] / kernel_time(&op, reps) / 1e9);
            }
            printf("\n");
        }
}

/* `weft bench kernels`: reduction kernel throughput against memcpy, in and
 * out of cache, one core.  The claim to check: float32 sum runs near memory
 * bandwidth (a reduce reads two streams and writes one, memcpy reads one
 * and writes one, so "near" means within the 3:2 traffic ratio). */
int cmd_bench_kernels(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: weft bench kernels [--quick]\nThe reduction kernels against memcpy, "
                   "the seeded ones against a copy then the kernel, and copies by distance, "
                   "one core (--quick: three timings of a sixteenth of the work each)\n");
            return 0;
        }
        if (strcmp(argv[i], "--quick")) {
            fprintf(stderr, "weft bench kernels: unknown argument '%s' (it takes --quick "
                    "only)\n", argv[i]);
            return 2;
        }
        kernels_quick = true;
    }
    size_t sizes[2] = {256 << 10, 64 << 20};
    const weft_dtype_t types[] = {WEFT_INT8, WEFT_INT32, WEFT_INT64, WEFT_FLOAT16,
                                  WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64};
    printf("# weft bench kernels: GB/s of destination written (median of repeats), one core\n");
    printf("%-10s %-6s %12s %12s\n", "dtype", "op", "256 KiB", "64 MiB");
    char *a = malloc(sizes[1]), *b = malloc(sizes[1]), *c = malloc(sizes[1]);
    if (!a || !b || !c) {
        fprintf(stderr, "weft bench kernels: out of memory\n");
        free(a), free(b), free(c);
        return 1;
    }
    memset(a, 0, sizes[1]);
    memset(b, 0, sizes[1]);
    memset(c, 0, sizes[1]);
    for (int t = -1; t < (int)(sizeof types / sizeof types[0]); t++) {
        for (int op = WEFT_SUM; op <= WEFT_MAX; op += (WEFT_MAX - WEFT_SUM)) {
            if (t < 0 && op != WEFT_SUM)
                continue;
            double gbs[2];
            for (int s = 0; s < 2; s++) {
                kernel_op_t kop = {.kind = t < 0 ? 0 : 2, .dst = a, .src = b, .bytes = sizes[s]};
                if (t >= 0)
                    reducer_init(&kop.red, op, types[t]);
                int reps = (int)fmax(3, fmin(2000, (double)(1u << 30) / sizes[s]));
                gbs[s] = (double)sizes[s] / kernel_time(&kop, reps) / 1e9;
            }
            printf("%-10s %-6s %12.2f %12.2f\n", t < 0 ? "memcpy" : weft_dtype_name(types[t]),
                   t < 0 ? "" : weft_op_name(op), gbs[0], gbs[1]);
        }
    }
    seeded_kernels(a, b, c);
    copy_distances(a, b);
    free(a);
    free(b);
    free(c);
    return 0;
}
