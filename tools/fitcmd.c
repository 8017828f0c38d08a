/* fitcmd.c — `weft fit`: measures this machine's LogGOPS parameters on
 * weft's shared-memory transport and writes them as a simulator preset.
 *
 * The method is Netgauge's (Hoefler, Mehlan, Lumsdaine, Rehm 2007): the
 * parametrised round trip PRTT(n, d, s) -- rank 0 sends n messages of s
 * bytes, waiting d between them, rank 1 answers the last with one message
 * -- gives
 *     g(s) = (PRTT(n, 0, s) - PRTT(1, 0, s)) / (n - 1)          (gap)
 *     o(s) = (PRTT(n, d, s) - PRTT(1, 0, s)) / (n - 1) - d      (d > g(s))
 *     L    = PRTT(1, 0, 1) / 2 - 2 o(1)
 * and G and O are the slopes of g(s) and o(s) over large s (least squares).
 * A message there is a broadcast between the two ranks (binomial: one send,
 * one receive), so g(1) and o(1) hold a whole call's work at the root (its
 * bookkeeping and its look at the peer's call log: 0.2-0.7 us), more than
 * half the one-way time, which left no room for L.  A schedule's messages
 * do not pay it each: g and o come instead from n messages of one byte
 * inside one call (a pipelined broadcast of n bytes in n chunks), whose
 * gap is the per-message time at the bottleneck; on shared memory the
 * sending CPU is the network, so o = g, and L is the one-way time less
 * 2 o (docs/PERFORMANCE-LOG.md, "The fit validated").  gamma is
 * the float32 sum kernel's time per byte, in cache (1 MiB).  As the
 * ring-and-halving seed does, it also fits alpha + beta s to the one-way
 * time and prints the fit's error.
 *
 * The switch: weft sim's term for ranks that share cores (sim.h).  A first
 * job runs both ranks on one core (the launcher's affinity narrowed to one
 * CPU, which the ranks inherit and weft counts, cpus.h) and measures the
 * one-byte round trip there; each way then holds one switch more than on
 * two cores: switch = (PRTT_one_core(1, 0, 1) - PRTT(1, 0, 1)) / 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "launch/launch.h"
#include "sim/sim.h"
#include "tool.h"

#define NSIZES 9
static const size_t fit_sizes[NSIZES] = {1, 64, 1024, 8192, 65536, 262144, 1048576, 2097152,
                                         4194304};

typedef struct {
    const char *out;
    int reps; /* repetitions per figure (median) */
    /* the one-core job writes its round trip (ns) to this file, which the
     * main job then reads (WEFT_FIT_ONE_CORE: the file; set by cmd_fit) */
    const char *one_core;
    bool one_core_job;
} fit_opts_t;

static int fit_usage(FILE *f, int rc)
{
    fprintf(f, "usage: weft fit [--out FILE] [--reps N]\n"
               "Measures L, o, g, G, O (Netgauge's PRTT method, messages as two-rank\n"
               "broadcasts on weft's shared memory; o = g from messages inside one call)\n"
               "and gamma (the float32 sum kernel), fits\n"
               "alpha + beta s to the one-way time, measures the cost of a switch between\n"
               "two ranks sharing one core (weft sim --cores), prints them with their fit\n"
               "error and writes a preset for weft sim (default this-machine.preset: then\n"
               "weft sim --preset this-machine).  Figures are medians of N runs (default 5).\n");
    return rc;
}

static void spin(double d)
{
    double t = weft_now() + d;
    while (weft_now() < t)
        ;
}

/* PRTT(n, d, s) in seconds, as rank 0 sees it (both ranks call it).  With
 * wp (a communicator whose bcast is pipelined in n chunks), the n messages
 * are one call of n one-byte chunks instead, and d is 0. */
static double prtt(weft_comm_t w, weft_comm_t wp, int me, char *buf, size_t s, int n, double d)
{
    weft_barrier(w);
    double t0 = weft_now();
    if (wp) {
        weft_bcast(buf, (size_t)n, WEFT_UINT8, 0, wp);
    } else {
        for (int i = 0; i < n; i++) {
            if (me == 0 && i && d > 0)
                spin(d);
            weft_bcast(buf, s, WEFT_UINT8, 0, w);
        }
    }
    weft_bcast(buf, s, WEFT_UINT8, 1, w);
    return weft_now() - t0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over reps of PRTT(n, d, s), each the mean of iters runs. */
static double prtt_median(weft_comm_t w, weft_comm_t wp, int me, char *buf, size_t s, int n,
                          double d, int reps)
{
    double v[32];
    int iters = s <= 65536 ? 200 : s <= 1048576 ? 50 : 20;
    prtt(w, wp, me, buf, s, n, d); /* warm: the pages, the cells, the caches */
    for (int r = 0; r < reps; r++) {
        double t = 0;
        for (int i = 0; i < iters; i++)
            t += prtt(w, wp, me, buf, s, n, d);
        v[r] = t / iters;
    }
    qsort(v, (size_t)reps, sizeof *v, cmp_d);
    return v[reps / 2];
}

/* Least squares y = a + b x on relative errors (weights 1 / y^2, so that
 * 1 B and 4 MiB count alike); returns the largest relative residual. */
static double fit_line(const double *x, const double *y, int n, double *a, double *b)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double wt = y[i] != 0 ? 1 / (y[i] * y[i]) : 1;
        sw += wt, sx += wt * x[i], sy += wt * y[i], sxx += wt * x[i] * x[i];
        sxy += wt * x[i] * y[i];
    }
    double den = sw * sxx - sx * sx;
    *b = den != 0 ? (sw * sxy - sx * sy) / den : 0;
    *a = (sy - *b * sx) / sw;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double fit = *a + *b * x[i], e = y[i] != 0 ? fabs(fit - y[i]) / y[i] : 0;
        worst = e > worst ? e : worst;
    }
    return worst;
}

static double gamma_per_byte(void)
{
    size_t n = (1 << 20) / 4;
    float *a = malloc(n * 4), *b = malloc(n * 4);
    reducer_t red;
    if (!a || !b || reducer_init(&red, WEFT_SUM, WEFT_FLOAT32)) {
        free(a), free(b);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = 1, b[i] = 2;
    double best = 1e9;
    for (int r = 0; r < 50; r++) {
        double t0 = weft_now();
        reducer_apply(&red, a, b, n, false);
        double t = weft_now() - t0;
        best = t < best ? t : best;
    }
    free(a), free(b);
    return best * 1e9 / (double)(n * 4);
}

/* The gap between one-byte messages inside one call, in ns (module
 * comment): IN_CALL_MESSAGES chunks of a pipelined bcast against one; -1 on
 * an error. */
#define IN_CALL_MESSAGES 64

static double in_call_gap(weft_comm_t w, int me, char *buf, int reps)
{
    weft_comm_t wp = NULL;
    char params[32];
    snprintf(params, sizeof params, "chunks=%d", IN_CALL_MESSAGES);
    if (weft_comm_dup(w, &wp) || weft_set_algorithm(wp, WEFT_COLL_BCAST, "pipeline", params)) {
        if (wp)
            weft_comm_free(&wp);
        return -1;
    }
    double p1 = prtt_median(w, wp, me, buf, 1, 1, 0, reps);
    double pn = prtt_median(w, wp, me, buf, 1, IN_CALL_MESSAGES, 0, reps);
    weft_comm_free(&wp);
    double gap = (pn - p1) / (IN_CALL_MESSAGES - 1) * 1e9;
    return gap > 0 ? gap : 0;
}

/* The one-core job: the one-byte round trip, written to o->one_core. */
static int fit_one_core(const fit_opts_t *o, weft_comm_t w, int me)
{
    char buf[1] = {1};
    double rtt = prtt_median(w, NULL, me, buf, 1, 1, 0, o->reps) * 1e9;
    if (me != 0)
        return 0;
    FILE *f = fopen(o->one_core, "w");
    if (!f || fprintf(f, "%.3f\n", rtt) < 0 || fclose(f)) {
        fprintf(stderr, "weft fit: %s: %s\n", o->one_core, strerror(errno));
        return 1;
    }
    return 0;
}

/* What the one-core job wrote: its round trip in ns; -1 if none. */
static double read_one_core(const char *path)
{
    double rtt = -1;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        if (fscanf(f, "%lf", &rtt) != 1 || !(rtt > 0))
            rtt = -1;
        fclose(f);
    }
    return rtt;
}

/* What the two ranks measured, per size: x = s - 1, the gap g and the
 * overhead o (ns) from PRTT, and the one-way time; and the gap between
 * messages inside one call. */
typedef struct {
    double x[NSIZES], g[NSIZES], ov[NSIZES], oneway[NSIZES];
    double in_call;
} fit_data_t;

/* Measures every size the Netgauge/PRTT way (rank 0 prints a row each):
 * PRTT(1, 0, s), PRTT(n, 0, s) and PRTT(n, d, s), d past the gap. */
static void measure_sizes(const fit_opts_t *o, weft_comm_t w, int me, char *buf, fit_data_t *f)
{
    const int n = 16;
    for (int i = 0; i < NSIZES; i++) {
        size_t s = fit_sizes[i];
        double p1 = prtt_median(w, NULL, me, buf, s, 1, 0, o->reps);
        double pn = prtt_median(w, NULL, me, buf, s, n, 0, o->reps);
        double gs = (pn - p1) / (n - 1);
        double d = 2 * (gs > 0 ? gs : 1e-6) + 2e-6;
        double pd = prtt_median(w, NULL, me, buf, s, n, d, o->reps);
        f->x[i] = (double)(s - 1);
        f->g[i] = gs * 1e9;
        f->ov[i] = ((pd - p1) / (n - 1) - d) * 1e9;
        f->oneway[i] = p1 / 2 * 1e9;
        if (me == 0)
            printf("%10zu %12.1f %12.1f %12.1f\n", s, f->oneway[i], f->g[i], f->ov[i]);
    }
}

/* Rank 0: the LogGOPS parameters and alpha-beta fitted to f, printed with
 * their errors, and written as a preset.  0, or 1 if it could not be. */
static int fit_and_write(const fit_opts_t *o, const fit_data_t *f)
{
    /* slopes over the sizes from 64 KiB up (past the cache-line regime) */
    double g0, G, o0, O, a, b;
    double eg = fit_line(f->x + 4, f->g + 4, NSIZES - 4, &g0, &G);
    double eo = fit_line(f->x + 4, f->ov + 4, NSIZES - 4, &o0, &O);
    double ea = fit_line(f->x, f->oneway, NSIZES, &a, &b);
    double one = f->oneway[0];
    sim_model_t m;
    sim_model_default(&m);
    m.g = m.o = f->in_call;
    m.G = G > 0 ? G : 0;
    m.O = O > 0 ? O : 0;
    m.L = one - 2 * m.o > 0 ? one - 2 * m.o : 0;
    m.S = UINT64_MAX; /* weft's shared memory has no rendezvous in this sense */
    m.gamma = gamma_per_byte();
    double rtt1 = read_one_core(o->one_core);
    if (rtt1 > 0) /* a one-way time on one core less one on two */
        m.sw = rtt1 / 2 > one ? rtt1 / 2 - one : 0;
    printf("\ninside one call: %d messages of 1 byte, %.1f ns apart (per call above: "
           "g(1) %.1f ns, o(1) %.1f ns)\n", IN_CALL_MESSAGES, f->in_call, f->g[0], f->ov[0]);
    printf("LogGOPS: L %.1f ns, o %.1f ns, g %.1f ns, G %.4f ns/B, O %.4f ns/B, "
           "gamma %.4f ns/B\n", m.L, m.o, m.g, m.G, m.O, m.gamma);
    if (rtt1 > 0 && rtt1 / 2 <= one)
        printf("two ranks on one core: one-way %.1f ns, not slower than on two cores (a "
               "loaded machine?): switch 0\n", rtt1 / 2);
    else if (rtt1 > 0)
        printf("two ranks on one core: one-way %.1f ns, so a switch between ranks costs "
               "%.1f ns (weft sim --cores C --switch NS)\n", rtt1 / 2, m.sw);
    else
        printf("two ranks on one core: not measured (see above); switch 0\n");
    printf("fit error (largest relative residual): G %.1f %%, O %.1f %% (sizes >= 64 KiB)\n",
           eg * 100, eo * 100);
    /* LogGOPS's one-way time is o + L + o: an o past half of it leaves no
     * room for L (it did when o was a call's overhead): say so rather than
     * print a bare zero */
    if (2 * m.o > one)
        printf("note: o (%.1f ns) exceeds half the one-way time of 1 byte (%.1f ns); L set "
               "to 0\n", m.o, one);
    printf("alpha-beta: alpha %.1f ns, beta %.4f ns/B (%.2f GB/s); largest relative "
           "residual %.1f %% over 1 B - 4 MiB\n", a, b, b > 0 ? 1 / b : 0, ea * 100);
    char comment[160];
    snprintf(comment, sizeof comment,
             "weft fit: weft's shared memory, two ranks; o = g from messages inside one call, "
             "L, G and O from two-rank broadcasts, switch from two ranks on one core");
    if (sim_preset_write(o->out, &m, comment)) {
        fprintf(stderr, "weft fit: %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    printf("wrote %s\n", o->out);
    return 0;
}

static int fit_rank(const fit_opts_t *o)
{
    weft_comm_t w = weft_comm_world();
    int me = weft_comm_rank(w);
    if (weft_comm_size(w) != 2 || weft_set_algorithm(w, WEFT_COLL_BCAST, "binomial", NULL)) {
        fprintf(stderr, "weft fit: %s\n", weft_last_error());
        return 1;
    }
    if (o->one_core_job)
        return fit_one_core(o, w, me);
    char *buf = malloc(fit_sizes[NSIZES - 1]);
    if (!buf)
        return 1;
    memset(buf, 1, fit_sizes[NSIZES - 1]); /* no page faults in the timings */
    fit_data_t f;
    measure_sizes(o, w, me, buf, &f);
    f.in_call = in_call_gap(w, me, buf, o->reps);
    free(buf);
    if (f.in_call < 0) {
        fprintf(stderr, "weft fit: %s\n", weft_last_error());
        return 1;
    }
    return me == 0 ? fit_and_write(o, &f) : 0;
}

/* Runs the one-core job: this process's affinity narrowed to the first
 * CPU it may use while the job starts (its ranks inherit it), then
 * restored.  0, or 1 if it could not. */
static int fit_on_one_core(const char *path, int argc, char **argv)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all))
        return 1;
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one))
        return 1;
    setenv("WEFT_FIT_ONE_CORE", path, 1);
    setenv("WEFT_FIT_ONE_CORE_JOB", "1", 1);
    int rc = launch_self(2, "fit", argc, argv);
    unsetenv("WEFT_FIT_ONE_CORE_JOB");
    sched_setaffinity(0, sizeof all, &all);
    return rc || read_one_core(path) < 0;
}

int cmd_fit(int argc, char **argv)
{
    fit_opts_t o = {"this-machine.preset", 5, NULL, false};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help"))
            return fit_usage(stdout, 0);
        if (i + 1 >= argc) {
            fprintf(stderr, "weft fit: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--out")) {
            o.out = argv[++i];
        } else if (!strcmp(argv[i], "--reps")) {
            char *e;
            long r = strtol(argv[++i], &e, 10);
            if (*e || r < 1 || r > 31) {
                fprintf(stderr, "weft fit: --reps %s: want 1 to 31\n", argv[i]);
                return 2;
            }
            o.reps = (int)r;
        } else {
            fprintf(stderr, "weft fit: unknown option '%s' (--help)\n", argv[i]);
            return 2;
        }
    }
    if (!getenv("WEFT_RANK") && !tool_can_write(o.out)) {
        fprintf(stderr, "weft fit: cannot write %s: %s\n", o.out, strerror(errno));
        return 2;
    }
    o.one_core = getenv("WEFT_FIT_ONE_CORE");
    if (getenv("WEFT_RANK")) {
        o.one_core_job = getenv("WEFT_FIT_ONE_CORE_JOB") != NULL;
        if (weft_init(NULL, NULL)) {
            fprintf(stderr, "weft fit: weft_init: %s\n", weft_last_error());
            return 1;
        }
        if (weft_comm_rank(weft_comm_world()) == 0 && !o.one_core_job)
            printf("# weft fit: two ranks on weft's shared memory; one-way time, gap g(s) and "
                   "send overhead o(s) in ns\n%10s %12s %12s %12s\n",
                   "bytes", "one-way", "g(s)", "o(s)");
        int rc = fit_rank(&o);
        int frc = weft_finalize();
        return rc ? rc : frc ? 1 : 0;
    }
    char one_core[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(one_core, sizeof one_core, "%s/weft-fit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(one_core);
    if (fd < 0)
        fprintf(stderr, "weft fit: %s: %s (TMPDIR); two ranks on one core not measured, the "
                        "preset's switch is 0\n", one_core, strerror(errno));
    if (fd >= 0) {
        close(fd);
        int one = fit_on_one_core(one_core, argc, argv);
        if (launch_interrupted()) { /* a Ctrl-C: no second job */
            unlink(one_core);
            launch_reraise();
        }
        if (one)
            fprintf(stderr, "weft fit: two ranks on one core could not be measured; the "
                            "preset's switch is 0\n");
        setenv("WEFT_FIT_ONE_CORE", one_core, 1);
    }
    int rc = launch_self(2, "fit", argc, argv);
    if (fd >= 0)
        unlink(one_core);
    return rc;
}
