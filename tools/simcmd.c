/* simcmd.c — `weft sim COLL --algo A --np P --size BYTES [model]`: predicts
 * weft's own schedules with the LogGOPS simulator (src/sim/sim.h) over lists
 * and ranges of process counts and sizes, beside each collective's lower
 * bound; a table, --csv, --json, --plot (gnuplot). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "algo/algo.h"
#include "core/core.h"
#include "sim/goal.h"
#include "predict.h"
#include "sim/sim.h"
#include "tool.h"
#include "tune/table.h"
#include "xport/cpus.h"
#include "xport/segment.h"

#define MAX_POINTS 4096
#define MAX_RANKS (1 << 24)

typedef struct {
    weft_coll_t coll;
    char algos[1024];
    char params[256];
    uint64_t np[MAX_POINTS], size[MAX_POINTS];
    int nnp, nsize;
    sim_model_t model;
    char preset[256];
    weft_dtype_t dtype;
    int op; /* a builtin op, or OP_AFFINE for --op noncommutative */
    int root, ppn;
    double skew;
    unsigned seed;
    int order; /* enum sim_order */
    double noise_prob, noise_ns; /* --noise PROB:NS */
    sim_trace_t trace;           /* --noise-trace FILE (trace.n 0: none) */
    const char *trace_file;
    bool cosched;                /* --noise-cosched */
    const char *start_file, *csv, *json, *plot;
    const char *goal, *export_goal; /* --goal FILE, --export-goal FILE */
    bool best_chunks;               /* --best-chunks */
    bool sched_stats;               /* --sched-stats */
    size_t max_bytes;               /* --max-memory; 0: no limit */
    const char *timeline, *finish;  /* --timeline FILE, --finish FILE */
    int timeline_rank;              /* --timeline-rank; -1: the slowest */
    FILE *tl_f;                     /* while one point runs: the timeline's file */
    int tl_rank;                    /* and its rank */
    double *finish_buf;             /* each rank's finish time */
} sim_opts_cli_t;

static int sim_usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: weft sim COLL --algo A[,B...] --np LIST --size LIST [options]\n"
            "       weft sim COLL --algo A --np P --size B --export-goal FILE [options]\n"
            "       weft sim --goal FILE [model and arrival options]\n"
            "Predicts weft's schedules of COLL under the LogGOPS model (LogGOPSim's\n"
            "semantics): completion time (max and mean over ranks), the collective's lower\n"
            "bound and the ratio, events simulated and per second, peak memory.\n"
            "LIST: N, N,M,..., or a range LO:HI (doubling), LO:HI:xK or LO:HI:+K;\n"
            "      sizes are bytes per rank's vector (block collectives: per block), K M G\n"
            "      allowed; --np up to 16777216.\n"
            "model: --preset NAME|FILE (built in: loggopsim, hockney; default loggopsim),\n"
            "       then --L --o --g NS, --G --O --gamma --copy NS/BYTE, --S BYTES (largest\n"
            "       eager message), --ports K (K-port NICs); --cores C --switch NS: the\n"
            "       ranks share C cores (rank r on core r mod C), one rank's CPU time at a\n"
            "       time, a switch between ranks costing NS (0: a core per rank);\n"
            "       --offload 1: the NIC takes messages in, the receiver's CPU pays o +\n"
            "       (s-1)O only (LogGOPSim's receive, 0, holds it until the bytes are in).\n"
            "arrival: --skew NS [--seed N] (start times uniform in [0, NS]) or\n"
            "       --start FILE (one start time in ns per line, rank order).\n"
            "noise: --noise PROB:NS: each use of a CPU held NS longer with probability\n"
            "       PROB (drawn with --seed); --noise-trace FILE: the detours of a CPU\n"
            "       ('START DURATION' lines, ns; repeated), each rank from an offset drawn\n"
            "       with --seed, or all from one with --noise-cosched\n"
            "GOAL: --export-goal FILE writes the schedules of one algorithm, P and size in\n"
            "       LogGOPSim's GOAL text (- for stdout); --goal FILE simulates a GOAL file.\n"
            "chunks: --best-chunks, for the pipelined algorithms: the chunk count weft uses,\n"
            "       the closed form's under the model, and the best the simulator finds\n"
            "       (a doubling scan, then a ternary search around its best), with times\n"
            "inside one run (one algorithm, --np and --size, or --goal): --timeline FILE\n"
            "       writes each step of one rank's operations (ready, posted, started, a\n"
            "       message taken in, done) with its time, --timeline-rank R (default: the\n"
            "       slowest rank, found by a first run); --finish FILE every rank's finish\n"
            "       time (ns, a line each)\n"
            "size: --sched-stats: per algorithm, operations, bytes and build time per rank\n"
            "       (up to 32 ranks sampled), and what all P ranks' schedules would hold\n"
            "other: --params k=v,...  --dtype T (default float32)\n"
            "       --root R (default 0; at a P of R or fewer ranks, P - 1)\n"
            "       --op OP|noncommutative (default sum): the op class the algorithms see\n"
            "       --ppn N (ranks per node, for hierarchical algorithms)\n"
            "       --order loggopsim|fifo: an event that finds its rank busy retries as in\n"
            "       LogGOPSim (default: the same times), or waits first come first served\n"
            "       (fewer events; simultaneous competitors may be served differently)\n"
            "       --csv FILE|-  --json FILE|-  --plot FILE.png (time against size or P);\n"
            "       with - the table is left out of standard output\n"
            "       --max-memory BYTES (K M G allowed; 0: no limit): a run that would hold\n"
            "       more stops with an error (default: 90%% of the memory available at start)\n");
    return rc;
}

/* A list of numbers (number_list); 0, or -1 after saying what was wrong. */
static int parse_list(const char *s, uint64_t *out, int *n, uint64_t lo_ok, uint64_t hi_ok,
                      const char *what)
{
    char why[160];
    if (!number_list(s, out, MAX_POINTS, n, lo_ok, hi_ok, why, sizeof why))
        return 0;
    fprintf(stderr, "weft sim: %s '%s': %s\n", what, s, why);
    return -1;
}

/* One "--key value" option; 0, or 2 after saying what was wrong. */
static int parse_option(sim_opts_cli_t *o, const char *k, const char *v, bool *have_np,
                        bool *have_size)
{
    char why[512];
    if (!strcmp(k, "--algo")) {
        snprintf(o->algos, sizeof o->algos, "%s", v);
    } else if (!strcmp(k, "--params")) {
        snprintf(o->params, sizeof o->params, "%s", v);
    } else if (!strcmp(k, "--np")) {
        if (parse_list(v, o->np, &o->nnp, 1, MAX_RANKS, "--np"))
            return 2;
        *have_np = true;
    } else if (!strcmp(k, "--size")) {
        if (parse_list(v, o->size, &o->nsize, 0, (uint64_t)1 << 40, "--size"))
            return 2;
        *have_size = true;
    } else if (!strcmp(k, "--preset")) {
        /* read above */
    } else if (!strcmp(k, "--L") || !strcmp(k, "--o") || !strcmp(k, "--g") ||
               !strcmp(k, "--G") || !strcmp(k, "--O") || !strcmp(k, "--S") ||
               !strcmp(k, "--gamma") || !strcmp(k, "--copy") || !strcmp(k, "--ports") ||
               !strcmp(k, "--cores") || !strcmp(k, "--switch") || !strcmp(k, "--offload")) {
        if (sim_model_set(&o->model, k + 2, v, why, sizeof why)) {
            fprintf(stderr, "weft sim: --%s\n", why);
            return 2;
        }
    } else if (!strcmp(k, "--op")) {
        o->op = !strcmp(v, "noncommutative") ? OP_AFFINE : op_from_name(v);
        if (o->op == -1) {
            fprintf(stderr, "weft sim: --op %s: want sum, prod, min, max, band, bor, bxor, land, "
                            "lor or noncommutative\n", v);
            return 2;
        }
    } else if (!strcmp(k, "--dtype")) {
        int d = dtype_from_name(v);
        if (d < 0) {
            fprintf(stderr, "weft sim: --dtype %s: unknown datatype\n", v);
            return 2;
        }
        o->dtype = (weft_dtype_t)d;
    } else if (!strcmp(k, "--root") || !strcmp(k, "--ppn") || !strcmp(k, "--seed")) {
        char *e;
        errno = 0;
        long x = strtol(v, &e, 10);
        int lo = strcmp(k, "--ppn") ? 0 : 1;
        if (e == v || *e || errno || x < lo || x > MAX_RANKS) {
            fprintf(stderr, "weft sim: %s %s: want a whole number %d to 2^24\n", k, v, lo);
            return 2;
        }
        if (!strcmp(k, "--root"))
            o->root = (int)x;
        else if (!strcmp(k, "--ppn"))
            o->ppn = (int)x;
        else
            o->seed = (unsigned)x;
    } else if (!strcmp(k, "--skew")) {
        sim_model_t tmp = o->model;
        if (sim_model_set(&tmp, "L", v, why, sizeof why)) {
            fprintf(stderr, "weft sim: --skew%s\n", why + 1); /* why: "L: ..." */
            return 2;
        }
        o->skew = tmp.L;
    } else if (!strcmp(k, "--noise")) {
        char *e;
        errno = 0;
        o->noise_prob = strtod(v, &e);
        if (e == v || *e != ':' || errno || !(o->noise_prob >= 0 && o->noise_prob <= 1)) {
            fprintf(stderr, "weft sim: --noise %s: want PROB:NS, PROB from 0 to 1\n", v);
            return 2;
        }
        sim_model_t tmp = o->model;
        if (sim_model_set(&tmp, "L", e + 1, why, sizeof why)) {
            fprintf(stderr, "weft sim: --noise %s: NS%s\n", v, why + 1);
            return 2;
        }
        o->noise_ns = tmp.L;
    } else if (!strcmp(k, "--noise-trace")) {
        o->trace_file = v;
    } else if (!strcmp(k, "--order")) {
        if (!strcmp(v, "loggopsim"))
            o->order = SIM_ORDER_LOGGOPSIM;
        else if (!strcmp(v, "fifo"))
            o->order = SIM_ORDER_FIFO;
        else {
            fprintf(stderr, "weft sim: --order %s: want loggopsim or fifo\n", v);
            return 2;
        }
    } else if (!strcmp(k, "--max-memory")) {
        uint64_t x;
        const char *e = size_prefix(v, &x);
        if (!e || *e || x > ((uint64_t)1 << 50)) {
            fprintf(stderr, "weft sim: --max-memory %s: want bytes (K M G allowed), 0 to 2^50\n",
                    v);
            return 2;
        }
        o->max_bytes = (size_t)x;
    } else if (!strcmp(k, "--goal")) {
        o->goal = v;
    } else if (!strcmp(k, "--timeline")) {
        o->timeline = v;
    } else if (!strcmp(k, "--finish")) {
        o->finish = v;
    } else if (!strcmp(k, "--timeline-rank")) {
        char *end;
        errno = 0;
        long r = strtol(v, &end, 10);
        if (end == v || *end || errno || r < 0 || r >= MAX_RANKS) {
            fprintf(stderr, "weft sim: --timeline-rank %s: want a rank, 0 to 2^24 - 1\n", v);
            return 2;
        }
        o->timeline_rank = (int)r;
    } else if (!strcmp(k, "--export-goal")) {
        o->export_goal = v;
    } else if (!strcmp(k, "--start")) {
        o->start_file = v;
    } else if (!strcmp(k, "--csv")) {
        o->csv = v;
    } else if (!strcmp(k, "--json")) {
        o->json = v;
    } else if (!strcmp(k, "--plot")) {
        o->plot = v;
    } else {
        fprintf(stderr, "weft sim: unknown option '%s' (--help)\n", k);
        return 2;
    }
    return 0;
}

/* Options that exclude or need each other. */
static int check_options(const sim_opts_cli_t *o, bool have_np, bool have_size)
{
    if (o->timeline_rank >= 0 && !o->timeline) {
        fprintf(stderr, "weft sim: --timeline-rank without --timeline FILE\n");
        return 2;
    }
    if (o->goal) {
        if (o->coll != WEFT_COLL_COUNT || o->algos[0] || have_np || have_size || o->export_goal) {
            fprintf(stderr, "weft sim: --goal FILE takes no collective, --algo, --np, --size "
                            "or --export-goal: the file has the schedules\n");
            return 2;
        }
        return 0;
    }
    if (o->coll == WEFT_COLL_COUNT) {
        fprintf(stderr, "weft sim: a collective first, or --goal FILE (--help)\n");
        return 2;
    }
    if (!o->algos[0] || !have_np || !have_size) {
        fprintf(stderr, "weft sim: --algo, --np and --size are required (--help)\n");
        return 2;
    }
    if (o->best_chunks && (o->export_goal || strstr(o->params, "chunks"))) {
        fprintf(stderr, "weft sim: --best-chunks chooses the chunk count itself: no "
                        "--export-goal, no chunks= in --params\n");
        return 2;
    }
    if ((o->timeline || o->finish) && (o->best_chunks || o->sched_stats || o->export_goal)) {
        fprintf(stderr, "weft sim: --timeline and --finish look inside one run: not with "
                        "--best-chunks, --sched-stats or --export-goal\n");
        return 2;
    }
    if ((o->timeline || o->finish) && (o->nnp != 1 || o->nsize != 1 ||
                                       strchr(o->algos, ',') || !strcmp(o->algos, "all"))) {
        fprintf(stderr, "weft sim: --timeline and --finish look inside one run: one "
                        "algorithm at one --np and --size\n");
        return 2;
    }
    if (o->export_goal && (o->nnp != 1 || o->nsize != 1 || strchr(o->algos, ',') ||
                           !strcmp(o->algos, "all"))) {
        fprintf(stderr, "weft sim: --export-goal writes one algorithm at one --np and --size\n");
        return 2;
    }
    if (o->plot && o->nnp > 1 && o->nsize > 1) {
        fprintf(stderr, "weft sim: --plot draws a sweep over --np or over --size, not both\n");
        return 2;
    }
    if (o->plot && !tool_can_write(o->plot)) {
        fprintf(stderr, "weft sim: --plot: cannot write %s: %s\n", o->plot, strerror(errno));
        return 2;
    }
    bool bitwise = o->op == WEFT_BAND || o->op == WEFT_BOR || o->op == WEFT_BXOR;
    if (bitwise && elem_is_float(o->dtype)) {
        fprintf(stderr, "weft sim: --op %s needs an integer --dtype\n", weft_op_name(o->op));
        return 2;
    }
    if (o->skew > 0 && o->start_file) {
        fprintf(stderr, "weft sim: --skew and --start exclude each other\n");
        return 2;
    }
    return 0;
}


/* 90 % of the memory the kernel says is available now (MemAvailable),
 * else of all of it: a simulation that would need more stops with an
 * error naming the limit instead of being killed by the kernel. */
static size_t default_max_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    double avail = (double)kb * 1024;
    if (!kb) {
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && psize > 0 ? (double)pages * (double)psize : 0;
    }
    return (size_t)(avail * 0.9);
}

static int parse_args(int argc, char **argv, sim_opts_cli_t *o)
{
    memset(o, 0, sizeof *o);
    int first = 2;
    if (!strncmp(argv[1], "--", 2)) {
        first = 1; /* --goal FILE: no collective */
        o->coll = WEFT_COLL_COUNT;
    } else if ((o->coll = coll_from_name(argv[1])) == WEFT_COLL_COUNT) {
        fprintf(stderr, "weft sim: unknown collective '%s'\n", argv[1]);
        return 2;
    }
    sim_model_default(&o->model);
    snprintf(o->preset, sizeof o->preset, "loggopsim");
    o->timeline_rank = -1;
    o->dtype = WEFT_FLOAT32;
    o->op = WEFT_SUM;
    o->seed = 1;
    o->max_bytes = default_max_bytes();
    char why[512];
    /* the preset first, so that flags given before it still win */
    for (int i = first; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--preset")) {
            if (sim_preset_load(argv[i + 1], &o->model, why, sizeof why)) {
                fprintf(stderr, "weft sim: --preset: %s\n", why);
                return 2;
            }
            snprintf(o->preset, sizeof o->preset, "%s", argv[i + 1]);
        }
    bool have_np = false, have_size = false;
    for (int i = first; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--best-chunks")) { /* the two options without a value */
            o->best_chunks = true;
            continue;
        }
        if (!strcmp(k, "--sched-stats")) {
            o->sched_stats = true;
            continue;
        }
        if (!strcmp(k, "--noise-cosched")) {
            o->cosched = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "weft sim: %s needs a value\n", k);
            return 2;
        }
        int rc = parse_option(o, k, argv[++i], &have_np, &have_size);
        if (rc)
            return rc;
    }
    int rc = check_options(o, have_np, have_size);
    if (rc)
        return rc;
    if (o->cosched && !o->trace_file) {
        fprintf(stderr, "weft sim: --noise-cosched is for --noise-trace FILE\n");
        return 2;
    }
    if (o->trace_file && sim_trace_load(o->trace_file, &o->trace, why, sizeof why)) {
        fprintf(stderr, "weft sim: --noise-trace: %s\n", why);
        return 2;
    }
    return 0;
}

/* The run's options: start times, order, noise, memory limit. */
static sim_opts_t run_opts(const sim_opts_cli_t *o, const double *start)
{
    sim_opts_t so = {.start = start, .order = o->order, .noise_prob = o->noise_prob,
                     .noise_ns = o->noise_ns, .noise_seed = o->seed, .max_bytes = o->max_bytes,
                     .timeline = o->tl_f, .timeline_rank = o->tl_rank, .finish = o->finish_buf};
    if (o->trace.n) {
        so.trace = &o->trace;
        so.trace_cosched = o->cosched;
        so.trace_offset = -1; /* drawn from --seed */
    }
    return so;
}

/* ---- start times ---- */

static double *read_starts(const char *path, int P, char *why, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return NULL;
    }
    double *t = malloc((size_t)P * sizeof *t);
    char line[256];
    int n = 0, ln = 0;
    while (t && fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        char *e;
        errno = 0;
        double v = strtod(p, &e);
        while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
            e++;
        if (e == p || *e || errno || !(v >= 0 && v < 3.6e15)) {
            snprintf(why, len, "%s:%d: want a start time in ns, 0 to an hour", path, ln);
            free(t);
            t = NULL;
        } else if (n == P) {
            snprintf(why, len, "%s:%d: more start times than the %d ranks", path, ln, P);
            free(t);
            t = NULL;
        } else {
            t[n++] = v;
        }
    }
    fclose(f);
    if (t && n < P) {
        snprintf(why, len, "%s: %d start times for %d ranks", path, n, P);
        free(t);
        t = NULL;
    }
    if (!t && !why[0])
        snprintf(why, len, "out of memory");
    return t;
}

/* ---- one point and the output ---- */

typedef struct {
    const char *algo;
    int P;
    uint64_t bytes;
    sim_result_t r;
    double bound;
    int rc;
    bool refused; /* the algorithm cannot serve this point (why says so) */
    char why[300];
} point_t;

static void print_row(const point_t *p)
{
    if (p->rc) {
        printf("%-20s %9d %11" PRIu64 "  %s\n", p->algo, p->P, p->bytes, p->why);
        return;
    }
    double evs = p->r.seconds > 0 ? p->r.events / p->r.seconds : 0;
    char ratio[16] = "-";
    if (p->bound > 0)
        snprintf(ratio, sizeof ratio, "%.3f", p->r.t_max / p->bound);
    printf("%-20s %9d %11" PRIu64 " %13.3f %13.3f %13.3f %7s %12" PRIu64 " %8.2f %9.1f\n",
           p->algo, p->P, p->bytes, p->r.t_max / 1e3, p->r.t_mean / 1e3, p->bound / 1e3, ratio,
           p->r.events, evs / 1e6, (double)p->r.peak_bytes / (1 << 20));
}

static FILE *open_out(const char *path)
{
    if (!strcmp(path, "-"))
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "weft sim: %s: %s\n", path, strerror(errno));
    return f;
}

static void write_csv(FILE *f, const point_t *pts, int n)
{
    fprintf(f, "algo,ranks,bytes,t_max_ns,t_mean_ns,bound_ns,ratio,events,messages,events_per_s,"
               "peak_bytes,error\n");
    for (int i = 0; i < n; i++) {
        const point_t *p = &pts[i];
        if (p->rc) {
            fprintf(f, "%s,%d,%" PRIu64 ",,,,,,,,,\"%s\"\n", p->algo, p->P, p->bytes, p->why);
            continue;
        }
        fprintf(f, "%s,%d,%" PRIu64 ",%.3f,%.3f,%.3f,%.6f,%" PRIu64 ",%" PRIu64 ",%.0f,%zu,\n",
                p->algo, p->P, p->bytes, p->r.t_max, p->r.t_mean, p->bound,
                p->bound > 0 ? p->r.t_max / p->bound : 0, p->r.events, p->r.messages,
                p->r.seconds > 0 ? p->r.events / p->r.seconds : 0, p->r.peak_bytes);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void write_json(FILE *f, const sim_opts_cli_t *o, const point_t *pts, int n)
{
    const sim_model_t *m = &o->model;
    fprintf(f, "{\"collective\": \"%s\", \"model\": {\"preset\": ", weft_coll_name(o->coll));
    json_str(f, o->preset);
    fprintf(f,
            ", \"L\": %.17g, \"o\": %.17g, \"g\": %.17g, \"G\": %.17g, \"O\": %.17g, "
            "\"S\": %" PRIu64 ", \"gamma\": %.17g, \"copy\": %.17g, \"ports\": %d, "
            "\"cores\": %u, \"switch\": %.17g, \"offload\": %d},\n"
            " \"points\": [",
            m->L, m->o, m->g, m->G, m->O, m->S, m->gamma, m->copy, m->ports, m->cores, m->sw,
            m->offload);
    for (int i = 0; i < n; i++) {
        const point_t *p = &pts[i];
        fprintf(f, "%s\n  {\"algo\": \"%s\", \"ranks\": %d, \"bytes\": %" PRIu64, i ? "," : "",
                p->algo, p->P, p->bytes);
        if (p->rc) {
            fprintf(f, ", \"error\": ");
            json_str(f, p->why);
            fprintf(f, "}");
            continue;
        }
        fprintf(f,
                ", \"t_max_ns\": %.3f, \"t_mean_ns\": %.3f, \"bound_ns\": %.3f, "
                "\"events\": %" PRIu64 ", \"messages\": %" PRIu64
                ", \"seconds\": %.6f, \"peak_bytes\": %zu}",
                p->r.t_max, p->r.t_mean, p->bound, p->r.events, p->r.messages, p->r.seconds,
                p->r.peak_bytes);
    }
    fprintf(f, "\n]}\n");
}

/* gnuplot: time against size (one P) or against P (one size), a line per
 * algorithm and one for the lower bound. */
static int write_plot(const sim_opts_cli_t *o, const point_t *pts, int n, int nalgo)
{
    char data[] = "/tmp/weft-sim-XXXXXX";
    int fd = mkstemp(data);
    if (fd < 0)
        return fprintf(stderr, "weft sim: --plot: %s\n", strerror(errno)), 1;
    FILE *f = fdopen(fd, "w");
    bool by_size = o->nsize > 1;
    for (int a = 0; a < nalgo; a++) {
        for (int i = 0; i < n; i++)
            if (pts[i].algo == pts[a * (n / nalgo)].algo && !pts[i].rc)
                fprintf(f, "%.17g %.17g %.17g\n",
                        by_size ? (double)pts[i].bytes : (double)pts[i].P, pts[i].r.t_max / 1e3,
                        pts[i].bound / 1e3);
        fprintf(f, "\n\n");
    }
    fclose(f);
    /* its stdout to /dev/null: where it cannot open the output it writes
     * the PNG there, onto the user's terminal */
    FILE *g = popen("gnuplot >/dev/null", "w");
    if (!g) {
        unlink(data);
        return fprintf(stderr, "weft sim: --plot needs gnuplot (apt-get install gnuplot-nox)\n"), 1;
    }
    fprintf(g, "set terminal png size 900,600 noenhanced\nset output '%s'\n", o->plot);
    fprintf(g, "set logscale xy\nset key left top\nset grid\n");
    fprintf(g, "set xlabel '%s'\nset ylabel 'predicted time (us)'\n",
            by_size ? "bytes" : "ranks");
    fprintf(g, "set title 'weft sim %s, preset %s'\nplot ", weft_coll_name(o->coll), o->preset);
    for (int a = 0; a < nalgo; a++)
        fprintf(g, "'%s' index %d using 1:2 with linespoints title '%s', ", data, a,
                pts[a * (n / nalgo)].algo);
    fprintf(g, "'%s' index 0 using 1:3 with lines dashtype 2 title 'lower bound'\n", data);
    int rc = pclose(g);
    unlink(data);
    if (rc) {
        if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
            fprintf(stderr, "weft sim: --plot needs gnuplot (apt-get install gnuplot-nox)\n");
        else
            fprintf(stderr, "weft sim: --plot: gnuplot failed (status %d) drawing %s\n", rc,
                    o->plot);
        return 1;
    }
    return 0;
}

/* ---- the sweep ---- */

/* Starts a point's row: refused (with why) when bytes are not whole
 * elements of the datatype. */
static int point_begin(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes,
                       point_t *pt)
{
    memset(pt, 0, sizeof *pt);
    pt->algo = al->name, pt->P = P, pt->bytes = bytes;
    pt->refused = true;
    if (bytes % weft_dtype_size(o->dtype)) {
        snprintf(pt->why, sizeof pt->why, "%" PRIu64 " bytes is not a whole number of %s",
                 bytes, weft_dtype_name(o->dtype));
        return pt->rc = WEFT_EINVAL;
    }
    return 0;
}

/* The build context of one algorithm at (P, bytes): 0, or nonzero with
 * why it cannot serve (pt->refused) or failed.  *node_of is the node map
 * it may own (free it after). */
static int prepare(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes,
                   const char *params, sim_algo_t *b, int **node_of, point_t *pt)
{
    memset(b, 0, sizeof *b);
    *node_of = NULL;
    size_t es = weft_dtype_size(o->dtype);
    if (point_begin(o, al, P, bytes, pt))
        return pt->rc;
    if (al->board) {
        snprintf(pt->why, sizeof pt->why,
                 "%s is not a schedule (an arrival-driven shared-memory algorithm)", al->name);
        return pt->rc = WEFT_ENOTSUP;
    }
    b->al = al;
    b->a.coll = o->coll;
    b->a.nrank = P;
    b->a.root = o->root < P ? o->root : P - 1;
    b->a.count = bytes / es;
    b->a.esize = es;
    /* linear_arena's schedules are simulated as the schedules they are: where
     * its input is staged is shared memory's affair, which the model does
     * not see (docs/SIM.md) */
    b->a.arena_reads = true;
    /* the op's class, as the library would see it (core/reduce.c's table) */
    int op = o->op;
    b->a.commutative = op != OP_AFFINE;
    b->a.idempotent = op == WEFT_MIN || op == WEFT_MAX || op == WEFT_BAND || op == WEFT_BOR ||
                      op == WEFT_LAND || op == WEFT_LOR;
    b->a.invertible = op == WEFT_BXOR || (op == WEFT_SUM && !elem_is_float(o->dtype));
    if (algo_parse_params(al, params, &b->a.params)) {
        snprintf(pt->why, sizeof pt->why, "%s", weft_last_error());
        return pt->rc = WEFT_EINVAL;
    }
    if (o->ppn && o->ppn < P) {
        *node_of = malloc((size_t)P * sizeof **node_of);
        if (!*node_of) {
            snprintf(pt->why, sizeof pt->why, "out of memory");
            pt->refused = false;
            return pt->rc = WEFT_ENOMEM;
        }
        for (int r = 0; r < P; r++)
            (*node_of)[r] = r / o->ppn;
        b->a.node_of = *node_of;
        b->a.nnodes = (P + o->ppn - 1) / o->ppn;
    }
    if (algo_usable_why(al, &b->a, pt->why, sizeof pt->why))
        return pt->rc = WEFT_EINVAL;
    /* one builder for every rank's schedule */
    if (!(b->builder = malloc(sizeof *b->builder))) {
        snprintf(pt->why, sizeof pt->why, "out of memory");
        pt->refused = false;
        return pt->rc = WEFT_ENOMEM;
    }
    sched_init(b->builder, P, 0);
    /* a hierarchical algorithm's node groups, once for every rank */
    if ((al->flags & ALGO_TOPOLOGY) || b->a.node_of) {
        node_groups_t *g = malloc(sizeof *g);
        if (!g || node_groups_build(b->a.node_of, b->a.node_of ? b->a.nnodes : 1, P, g)) {
            free(g);
            snprintf(pt->why, sizeof pt->why, "out of memory");
            pt->refused = false;
            return pt->rc = WEFT_ENOMEM;
        }
        b->a.groups = g;
    }
    pt->refused = false;
    return 0;
}

/* Frees what prepare() made. */
static void unprepare(sim_algo_t *b, int *node_of)
{
    if (b->builder)
        sched_free(b->builder);
    free(b->builder);
    b->builder = NULL;
    if (b->a.groups) {
        node_groups_t *g = (node_groups_t *)b->a.groups;
        node_groups_free(g);
        free(g);
        b->a.groups = NULL;
    }
    free(node_of);
}

/* The arrival programs of al (src/sim/pap.c) into c: hier_pap with the
 * call's arguments (es-byte elements, ppn ranks per node, 0: one node;
 * params), the others from their name; 0, or an error with why.  limits:
 * refuse what the library would (the arrival record's 64 ranks); without,
 * only an op the algorithm cannot combine (weft sim studies any scale). */
static int pap_programs(const algo_t *al, int P, uint64_t bytes, size_t es, int op, int root,
                        int ppn, const char *params, const double *start, bool limits,
                        sim_pap_t *c, int **node_of, char *why, size_t len)
{
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = al->coll, a.nrank = P, a.root = root, a.count = bytes / es, a.esize = es;
    a.commutative = op != OP_AFFINE, a.shared_board = a.board_slots = a.node_board = true;
    a.board_payload = board_payload_for(P);
    *node_of = NULL;
    if (ppn && ppn < P) {
        if (!(*node_of = malloc((size_t)P * sizeof **node_of)))
            return snprintf(why, len, "out of memory"), WEFT_ENOMEM;
        for (int r = 0; r < P; r++)
            (*node_of)[r] = r / ppn;
        a.node_of = *node_of, a.nnodes = (P + ppn - 1) / ppn;
    }
    if (algo_parse_params(al, params, &a.params))
        return snprintf(why, len, "%s", weft_last_error()), WEFT_EINVAL;
    if (limits ? algo_usable_why(al, &a, why, len) != 0
               : (al->flags & ALGO_NEEDS_COMMUTATIVE) && op == OP_AFFINE) {
        if (!limits)
            snprintf(why, len, "%s needs a commutative op", al->name);
        return WEFT_EINVAL;
    }
    int rc = !strcmp(al->name, "hier_pap")
                 ? sim_pap_init_hier(c, &a, start)
                 : sim_pap_init(c, al->name, al->coll, P, bytes, root, start);
    if (rc)
        snprintf(why, len, "out of memory");
    return rc;
}

/* An arrival-driven algorithm (sim.h, pap.c): its programs follow the
 * arrival order of the start times. */
static int run_pap(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes,
                   const char *params, const double *start, point_t *pt)
{
    if (point_begin(o, al, P, bytes, pt))
        return pt->rc;
    sim_pap_t c;
    int *node_of;
    pt->rc = pap_programs(al, P, bytes, weft_dtype_size(o->dtype), o->op,
                          o->root < P ? o->root : P - 1, o->ppn, params, start, false, &c,
                          &node_of, pt->why, sizeof pt->why);
    pt->refused = pt->rc == WEFT_EINVAL;
    if (!pt->rc) {
        sim_opts_t so = run_opts(o, start);
        pt->rc = sim_run(&o->model, P, sim_build_pap, &c, &so, &pt->r, pt->why, sizeof pt->why);
        sim_pap_free(&c);
    }
    free(node_of);
    pt->bound = sim_lower_bound(o->coll, P, bytes, &o->model);
    return pt->rc;
}

static int run_point(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes,
                     const char *params, const double *start, point_t *pt)
{
    if (al->board && sim_pap_kind(al->name, o->coll))
        return run_pap(o, al, P, bytes, params, start, pt);
    sim_algo_t b;
    int *node_of;
    if (prepare(o, al, P, bytes, params, &b, &node_of, pt)) {
        unprepare(&b, node_of);
        return pt->rc;
    }
    sim_opts_t so = run_opts(o, start);
    pt->rc = sim_run(&o->model, P, sim_build_algo, &b, &so, &pt->r, pt->why, sizeof pt->why);
    unprepare(&b, node_of);
    pt->bound = sim_lower_bound(o->coll, P, bytes, &o->model);
    return pt->rc;
}

/* sim_predict of an arrival-driven algorithm (src/sim/pap.c), the arrival
 * order from so->start, on one node: first whether it could serve the call
 * on shared memory at all (its op class, its size limits). */
static int predict_pap(const sim_model_t *m, const algo_t *al, const char *params, int P,
                       uint64_t bytes, weft_dtype_t dt, int op, int root, const sim_opts_t *so,
                       sim_result_t *r, char *why, size_t len)
{
    sim_pap_t c;
    int *node_of;
    int rc = pap_programs(al, P, bytes, weft_dtype_size(dt), op, root < P ? root : P - 1, 0,
                          params, so->start, true, &c, &node_of, why, len);
    if (!rc) {
        rc = sim_run(m, P, sim_build_pap, &c, so, r, why, len);
        sim_pap_free(&c);
    }
    free(node_of);
    return rc;
}

int sim_predict(const sim_model_t *m, const algo_t *al, const char *params, int P,
                uint64_t bytes, weft_dtype_t dt, int op, int root, bool shm,
                const sim_opts_t *limits, sim_result_t *r, char *why, size_t len)
{
    sim_opts_t so = {.order = SIM_ORDER_LOGGOPSIM};
    if (limits) {
        so.max_events = limits->max_events;
        so.max_bytes = limits->max_bytes;
        so.max_seconds = limits->max_seconds;
        so.start = limits->start;
    }
    if (al->board && sim_pap_kind(al->name, al->coll))
        return predict_pap(m, al, params, P, bytes, dt, op, root, &so, r, why, len);
    static sim_opts_cli_t o; /* large (the sweep's lists); one caller at a time */
    memset(&o, 0, sizeof o);
    o.coll = al->coll;
    o.model = *m;
    o.dtype = dt;
    o.op = op;
    o.root = root;
    o.order = SIM_ORDER_LOGGOPSIM;
    sim_algo_t b;
    int *node_of;
    point_t pt;
    if (prepare(&o, al, P, bytes, params ? params : "", &b, &node_of, &pt)) {
        unprepare(&b, node_of);
        snprintf(why, len, "%s", pt.why);
        return pt.rc;
    }
    /* prepare() refused the board algorithms themselves */
    b.a.shared_board = b.a.board_slots = shm;
    int rc = sim_run(m, P, sim_build_algo, &b, &so, r, why, len);
    unprepare(&b, node_of);
    return rc;
}

int sim_model_for_tools(const char *preset, sim_model_t *m, char *name, size_t nlen, char *msg,
                        size_t len)
{
    if (!preset)
        preset = access("this-machine.preset", R_OK) ? "loggopsim" : "this-machine";
    snprintf(name, nlen, "%s", preset);
    if (sim_preset_load(preset, m, msg, len))
        return -1;
    /* this machine's ranks share its cores: predictions for it (weft
     * explain, weft tune --by sim) count them, with the switch weft fit
     * measured, where the preset does not say otherwise */
    if (!strcmp(preset, "this-machine") && !m->cores) {
        m->cores = cpu_cores_self();
        snprintf(name, nlen, "this-machine, %u core%s", m->cores, m->cores == 1 ? "" : "s");
    }
    return 0;
}

static int export_goal(const sim_opts_cli_t *o, const algo_t *al)
{
    sim_algo_t b;
    int *node_of;
    point_t pt;
    int P = (int)o->np[0];
    if (prepare(o, al, P, o->size[0], o->params, &b, &node_of, &pt)) {
        unprepare(&b, node_of);
        fprintf(stderr, "weft sim: %s: %s\n", al->name, pt.why);
        return 1;
    }
    b.joins = true; /* GOAL has no rounds */
    FILE *f = open_out(o->export_goal);
    int rc = 1;
    if (f) {
        rc = sim_goal_write(f, &o->model, P, sim_build_algo, &b, pt.why, sizeof pt.why);
        if (f != stdout && fclose(f) && !rc) {
            snprintf(pt.why, sizeof pt.why, "%s: %s", o->export_goal, strerror(errno));
            rc = 1;
        }
        if (rc)
            fprintf(stderr, "weft sim: --export-goal: %s\n", pt.why);
    }
    unprepare(&b, node_of);
    return rc ? 1 : 0;
}

static double *starts_for(const sim_opts_cli_t *o, int P, int *rc)
{
    *rc = 0;
    if (!o->start_file && !(o->skew > 0))
        return NULL;
    char why[300] = "";
    double *t;
    if (o->start_file) {
        t = read_starts(o->start_file, P, why, sizeof why);
    } else {
        t = malloc((size_t)P * sizeof *t);
        uint64_t x = 0x9E3779B97F4A7C15ull ^ o->seed;
        for (int r = 0; t && r < P; r++)
            t[r] = floor(sim_uniform(&x) * o->skew);
        if (!t)
            snprintf(why, sizeof why, "out of memory");
    }
    if (!t) {
        fprintf(stderr, "weft sim: %s\n", why);
        *rc = 2;
    }
    return t;
}

/* ---- --sched-stats ---- */


static void sched_stats_row(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes)
{
    sim_algo_t b;
    int *node_of;
    point_t pt;
    if (prepare(o, al, P, bytes, o->params, &b, &node_of, &pt)) {
        unprepare(&b, node_of);
        printf("%-20s %9d %11" PRIu64 "  %s\n", al->name, P, bytes, pt.why);
        return;
    }
    int n = P < 32 ? P : 32;
    double steps = 0, sb = 0, pb = 0, us = 0, maxus = 0;
    size_t maxsb = 0;
    for (int i = 0; i < n; i++) {
        b.a.rank = n > 1 ? (int)((int64_t)i * (P - 1) / (n - 1)) : 0;
        struct timespec t0, t1;
        sched_img_t *sc;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = algo_build_with(b.al, &b.a, b.builder, &sc);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (rc) {
            printf("%-20s %9d %11" PRIu64 "  rank %d: %s\n", al->name, P, bytes, b.a.rank,
                   weft_last_error());
            unprepare(&b, node_of);
            return;
        }
        double u = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
        sim_prog_t prog;
        if (!sim_prog_from_sched(sc, b.a.esize, false, &prog)) {
            pb += (double)sim_prog_bytes(&prog);
            sim_prog_free(&prog);
        }
        steps += sc->nsteps;
        sb += (double)sc->bytes;
        maxsb = sc->bytes > maxsb ? sc->bytes : maxsb;
        us += u;
        maxus = u > maxus ? u : maxus;
        sched_img_free(sc);
    }
    unprepare(&b, node_of);
    printf("%-20s %9d %11" PRIu64 " %9.1f %10.0f %10zu %10.0f %9.2f %9.2f %10.2f\n", al->name, P,
           bytes, steps / n, sb / n, maxsb, pb / n, us / n, maxus, sb / n * P / 1e9);
    fflush(stdout);
}

/* ---- --best-chunks ---- */

typedef struct {
    int k[64];
    double t[64];
    int n;
} kcache_t;

/* The predicted time with k chunks (memoised), or -1 on error. */
static double time_at(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes, int k,
                      const double *start, kcache_t *c, point_t *pt)
{
    for (int i = 0; i < c->n; i++)
        if (c->k[i] == k)
            return c->t[i];
    char params[320];
    if (k > 0)
        snprintf(params, sizeof params, "%.255s%schunks=%d", o->params, o->params[0] ? "," : "", k);
    else
        snprintf(params, sizeof params, "%.255s", o->params);
    double t = run_point(o, al, P, bytes, params, start, pt) ? -1 : pt->r.t_max;
    if (c->n < 64)
        c->k[c->n] = k, c->t[c->n++] = t;
    return t;
}

double sim_search_chunks(double (*eval)(void *ctx, int k), void *ctx, int kmax, int *best)
{
    *best = 1;
    double t_best = eval(ctx, 1);
    /* doubling until the time has risen twice in a row past the best:
     * large k are the costly runs, and the curve is (near) unimodal */
    for (int k = 2, rises = 0; k <= kmax && t_best >= 0 && rises < 2; k *= 2) {
        double t = eval(ctx, k);
        if (t >= 0 && t < t_best)
            *best = k, t_best = t, rises = 0;
        else
            rises++;
    }
    /* then a ternary search between the neighbours of the best power of
     * two, and a scan of what is left */
    int lo = *best / 2 > 1 ? *best / 2 : 1, hi = *best * 2 < kmax ? *best * 2 : kmax;
    for (int evals = 0; hi - lo > 2 && evals < 40; evals += 2) {
        int m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        double t1 = eval(ctx, m1), t2 = eval(ctx, m2);
        if (t1 <= t2)
            hi = m2;
        else
            lo = m1;
    }
    for (int k = lo; k <= hi; k++) {
        double t = eval(ctx, k);
        if (t >= 0 && (t_best < 0 || t < t_best))
            *best = k, t_best = t;
    }
    return t_best;
}

typedef struct {
    const sim_opts_cli_t *o;
    const algo_t *al;
    int P;
    uint64_t bytes;
    const double *start;
    kcache_t *c;
    point_t *pt;
} chunk_eval_t;

static double eval_chunks(void *ctx, int k)
{
    chunk_eval_t *e = ctx;
    return time_at(e->o, e->al, e->P, e->bytes, k, e->start, e->c, e->pt);
}

static void best_chunks_row(const sim_opts_cli_t *o, const algo_t *al, int P, uint64_t bytes,
                            const double *start)
{
    point_t pt;
    kcache_t c = {{0}, {0}, 0};
    uint64_t count = bytes / weft_dtype_size(o->dtype);
    int kmax = count < 4096 ? (int)(count ? count : 1) : 4096;
    double t_def = time_at(o, al, P, bytes, 0, start, &c, &pt);
    if (t_def < 0) {
        printf("%-20s %9d %11" PRIu64 "  %s\n", al->name, P, bytes, pt.why);
        return;
    }
    /* the chunk count weft's default gives (the same closed form under
     * shared-memory constants), read back from a build */
    int k_def = pipelined_model_chunks(pipelined_kind_set(al->name), P, bytes, 1000, 0.1);
    k_def = k_def > kmax ? kmax : k_def;
    int k_form = pipelined_model_chunks(pipelined_kind_set(al->name), P, bytes,
                                        sim_alpha(&o->model) + sim_beta(&o->model),
                                        sim_beta(&o->model));
    k_form = k_form > kmax ? kmax : k_form;
    double t_form = time_at(o, al, P, bytes, k_form, start, &c, &pt);
    chunk_eval_t ev = {o, al, P, bytes, start, &c, &pt};
    int best;
    double t_best = sim_search_chunks(eval_chunks, &ev, kmax, &best);
    if (t_form >= 0 && t_form < t_best)
        best = k_form, t_best = t_form;
    printf("%-20s %9d %11" PRIu64 " %6d %12.3f %6d %12.3f %6d %12.3f %8.3f\n", al->name, P,
           bytes, k_def, t_def / 1e3, k_form, t_form / 1e3, best, t_best / 1e3,
           t_best > 0 ? t_form / t_best : 0);
    fflush(stdout);
}

/* --csv - or --json -: standard output is for that, the table stays out. */
static bool table_wanted(const sim_opts_cli_t *o)
{
    return !(o->csv && !strcmp(o->csv, "-")) && !(o->json && !strcmp(o->json, "-"));
}

static void print_header(const sim_opts_cli_t *o, const char *what)
{
    const sim_model_t *m = &o->model;
    char noise[192] = "";
    if (o->noise_prob > 0)
        snprintf(noise, sizeof noise, ", noise %g ns at p=%g", o->noise_ns, o->noise_prob);
    if (m->cores) {
        size_t k = strlen(noise);
        snprintf(noise + k, sizeof noise - k, ", ranks on %u core%s (switch %g ns)", m->cores,
                 m->cores == 1 ? "" : "s", m->sw);
    }
    if (m->offload) {
        size_t k = strlen(noise);
        snprintf(noise + k, sizeof noise - k, ", receives offloaded to the NIC");
    }
    if (o->trace.n) {
        size_t k = strlen(noise);
        snprintf(noise + k, sizeof noise - k, ", noise trace of %zu detours (%s)", o->trace.n,
                 o->cosched ? "co-scheduled" : "independent");
    }
    printf("# weft sim %s: preset %s: L=%g o=%g g=%g ns, G=%g O=%g ns/B, S=%" PRIu64
           " B, gamma=%g copy=%g ns/B, %d port%s, %s order%s%s\n",
           what, o->preset, m->L, m->o, m->g, m->G, m->O, m->S, m->gamma, m->copy, m->ports,
           m->ports > 1 ? "s" : "", o->order == SIM_ORDER_FIFO ? "fifo" : "LogGOPSim",
           o->start_file ? ", start times from file" : o->skew > 0 ? ", skewed starts" : "", noise);
}

/* ---- inside one run: --timeline, --finish ---- */

/* Before the run: the finish times' buffer; the timeline's file, of
 * o->timeline_rank or else `slowest` (a first run's; -1: it failed). */
static int inspect_begin(sim_opts_cli_t *o, int P, int slowest)
{
    if (o->finish && !(o->finish_buf = calloc((size_t)P, sizeof *o->finish_buf)))
        return fprintf(stderr, "weft sim: out of memory for %d finish times\n", P), 1;
    if (!o->timeline)
        return 0;
    int r = o->timeline_rank >= 0 ? o->timeline_rank : slowest < 0 ? 0 : slowest, rc = 0;
    if (r >= P)
        rc = 2, fprintf(stderr, "weft sim: --timeline-rank %d: not a rank of 0..%d\n", r, P - 1);
    else if (!(o->tl_f = open_out(o->timeline)))
        rc = 1;
    if (rc) {
        free(o->finish_buf);
        o->finish_buf = NULL;
        return rc;
    }
    o->tl_rank = r;
    fprintf(o->tl_f, "# weft sim: timeline of rank %d%s; ns, step, op, kind, peer, tag, size\n",
            r, o->timeline_rank >= 0 ? "" : " (the slowest)");
    return 0;
}

/* After it: the finish times written (when it ran), the files closed. */
static int inspect_end(sim_opts_cli_t *o, int P, bool ran)
{
    int rc = 0;
    if (o->tl_f && o->tl_f != stdout && fclose(o->tl_f))
        rc = (fprintf(stderr, "weft sim: %s: %s\n", o->timeline, strerror(errno)), 1);
    o->tl_f = NULL;
    if (o->finish_buf && ran) {
        FILE *f = open_out(o->finish);
        if (!f)
            rc = 1;
        for (int r = 0; f && r < P; r++)
            fprintf(f, "%d %.3f\n", r, o->finish_buf[r]);
        if (f && f != stdout && fclose(f))
            rc = (fprintf(stderr, "weft sim: %s: %s\n", o->finish, strerror(errno)), 1);
    }
    free(o->finish_buf);
    o->finish_buf = NULL;
    return rc;
}

/* --goal FILE: the file's schedules under the model, one row. */
static int run_goal(sim_opts_cli_t *o)
{
    char why[512];
    sim_goal_t *g;
    if (sim_goal_load(o->goal, &g, why, sizeof why)) {
        fprintf(stderr, "weft sim: --goal: %s\n", why);
        return 2;
    }
    sim_goal_adapt(g, &o->model);
    int P = sim_goal_nrank(g), src;
    double *start = starts_for(o, P, &src);
    if (src) {
        sim_goal_free(g);
        return src;
    }
    bool table = table_wanted(o);
    if (table)
        print_header(o, o->goal);
    sim_result_t r;
    int rc = 0, slowest = -1;
    if (o->timeline && o->timeline_rank < 0) { /* a first run finds the slowest rank */
        sim_opts_t so = run_opts(o, start);
        if (!sim_run(&o->model, P, sim_goal_build, g, &so, &r, why, sizeof why))
            slowest = r.slowest;
    }
    if ((rc = inspect_begin(o, P, slowest)) == 0) {
        sim_opts_t so = run_opts(o, start);
        rc = sim_run(&o->model, P, sim_goal_build, g, &so, &r, why, sizeof why);
        if (rc)
            fprintf(stderr, "weft sim: %s: %s\n", o->goal, why);
        rc = inspect_end(o, P, !rc) || rc ? 1 : 0;
    }
    free(start);
    sim_goal_free(g);
    if (rc)
        return rc;
    if (table) {
        printf("%9s %13s %13s %12s %8s %9s\n", "ranks", "max", "mean", "events", "Mev/s",
               "peak_MiB");
        printf("%9d %13.3f %13.3f %12" PRIu64 " %8.2f %9.1f\n", P, r.t_max / 1e3,
               r.t_mean / 1e3, r.events, r.seconds > 0 ? r.events / r.seconds / 1e6 : 0,
               (double)r.peak_bytes / (1 << 20));
    }
    if (o->json) {
        FILE *f = open_out(o->json);
        if (f) {
            fprintf(f, "{\"goal\": ");
            json_str(f, o->goal);
            fprintf(f, ", \"ranks\": %d, \"t_max_ns\": %.3f, \"t_mean_ns\": %.3f, "
                       "\"events\": %" PRIu64 ", \"messages\": %" PRIu64
                       ", \"peak_bytes\": %zu}\n",
                    P, r.t_max, r.t_mean, r.events, r.messages, r.peak_bytes);
            if (f != stdout)
                fclose(f);
        }
    }
    return 0;
}

/* The algorithms --algo names (all: every schedule of the collective);
 * -1 after saying which name is unknown. */
static int select_algos(const sim_opts_cli_t *o, const algo_t **algs, int max)
{
    int n = 0;
    size_t nt;
    const algo_t *tab = algo_table(&nt);
    bool all = !strcmp(o->algos, "all");
    for (size_t i = 0; i < nt && n < max; i++)
        if (tab[i].coll == o->coll &&
            (all ? !tab[i].board || sim_pap_kind(tab[i].name, o->coll)
                 : name_in_list(o->algos, tab[i].name)))
            algs[n++] = &tab[i];
    for (const char *p = o->algos; !all && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(l < 63 ? l : 63), p);
        if (!algo_find(o->coll, name)) {
            fprintf(stderr, "weft sim: no %s algorithm '%s' (weft algorithms)\n",
                    weft_coll_name(o->coll), name);
            return -1;
        }
        p = e ? e + 1 : p + l;
    }
    return n;
}

/* A parameter an algorithm named in --algo does not take, or a bad value,
 * is the command's error (as weft bench has it), not a refused row on
 * every point.  Under --algo all it is an error only when no algorithm
 * takes it; the others show it as their rows' reason. */
static int check_params(const sim_opts_cli_t *o, const algo_t **algs, int nalgo)
{
    if (!o->params[0])
        return 0;
    bool all = !strcmp(o->algos, "all");
    char first[256] = "";
    int taken = 0;
    for (int a = 0; a < nalgo; a++) {
        algo_params_t ap;
        if (!algo_parse_params(algs[a], o->params, &ap)) {
            taken++;
            continue;
        }
        if (!first[0])
            snprintf(first, sizeof first, "%s", weft_last_error());
        if (!all)
            break;
    }
    if (all ? taken > 0 : !first[0])
        return 0;
    fprintf(stderr, "weft sim: --params %s: %s\n", o->params, first);
    return 2;
}

static int run_sched_stats(const sim_opts_cli_t *o, const algo_t **algs, int nalgo)
{
    printf("# schedule sizes per rank (mean over up to 32 sampled ranks, and the largest):\n"
           "# steps, bytes of weft's committed schedule (the image), bytes of the\n"
           "# simulator's program, build time (us: build and commit, with a builder reused\n"
           "# from rank to rank); all_GB: the mean schedule times P\n");
    printf("%-20s %9s %11s %9s %10s %10s %10s %9s %9s %10s\n", "algorithm", "ranks", "bytes",
           "steps", "sched_B", "max_B", "prog_B", "build_us", "max_us", "all_GB");
    for (int a = 0; a < nalgo; a++)
        for (int i = 0; i < o->nnp; i++)
            for (int j = 0; j < o->nsize; j++)
                sched_stats_row(o, algs[a], (int)o->np[i], o->size[j]);
    return 0;
}

static int run_best_chunks(const sim_opts_cli_t *o, const algo_t **algs, int nalgo)
{
    print_header(o, weft_coll_name(o->coll));
    printf("# chunk counts: weft's default (shared-memory constants), the closed form's "
           "under this model (a = L + 2o, G), the simulator's best; times in us\n");
    printf("%-20s %9s %11s %6s %12s %6s %12s %6s %12s %8s\n", "algorithm", "ranks", "bytes",
           "k_def", "t_def", "k_form", "t_form", "k_sim", "t_sim", "form/sim");
    for (int a = 0; a < nalgo; a++) {
        if (pipelined_kind_set(algs[a]->name) < 0 || !strstr(algs[a]->params, "chunks")) {
            printf("%-20s  not pipelined (no chunks parameter)\n", algs[a]->name);
            continue;
        }
        for (int i = 0; i < o->nnp; i++) {
            int P = (int)o->np[i], rc = 0;
            double *start = starts_for(o, P, &rc);
            if (rc)
                return rc;
            for (int j = 0; j < o->nsize; j++)
                best_chunks_row(o, algs[a], P, o->size[j], start);
            free(start);
        }
    }
    return 0;
}

static void write_outputs(const sim_opts_cli_t *o, const point_t *pts, int npts)
{
    FILE *f;
    if (o->csv && (f = open_out(o->csv))) {
        write_csv(f, pts, npts);
        if (f != stdout)
            fclose(f);
    }
    if (o->json && (f = open_out(o->json))) {
        write_json(f, o, pts, npts);
        if (f != stdout)
            fclose(f);
    }
}

/* --algo all runs the schedules and the arrival-driven algorithms the
 * simulator models (pap.c); the others of the collective (the board,
 * adaptive) are named once, so that a reader does not take their
 * absence for an oversight. */
static void print_not_schedules(weft_coll_t coll)
{
    size_t nt;
    const algo_t *tab = algo_table(&nt);
    char names[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < nt && used + 40 < sizeof names; i++)
        if (tab[i].coll == coll && tab[i].board && !sim_pap_kind(tab[i].name, coll))
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                     used ? ", " : "", tab[i].name);
    if (used)
        printf("# not simulated: %s (not schedules, nor modelled from the arrival order)\n",
               names);
}

/* The sweep: every algorithm at every P and size, a row each. */
static int run_sweep(sim_opts_cli_t *o, const algo_t **algs, int nalgo)
{
    int npts = nalgo * o->nnp * o->nsize;
    point_t *pts = calloc((size_t)npts, sizeof *pts);
    if (!pts)
        return fprintf(stderr, "weft sim: out of memory\n"), 1;
    bool inspect = o->timeline || o->finish; /* one point (check_options) */
    bool table = table_wanted(o);
    if (table) {
        print_header(o, weft_coll_name(o->coll));
        printf("# times in us (max and mean over ranks); bound: the lower bound of "
               "docs/ALGORITHMS.md; ratio = max / bound\n");
        printf("%-20s %9s %11s %13s %13s %13s %7s %12s %8s %9s\n", "algorithm", "ranks",
               "bytes", "max", "mean", "bound", "ratio", "events", "Mev/s", "peak_MiB");
    }
    int k = 0, failed = 0;
    for (int a = 0; a < nalgo; a++)
        for (int i = 0; i < o->nnp; i++) {
            int P = (int)o->np[i], src = 0;
            double *start = starts_for(o, P, &src);
            if (src) {
                free(pts);
                return src;
            }
            for (int j = 0; j < o->nsize; j++, k++) {
                if (inspect) {
                    int slowest = -1, irc;
                    if (o->timeline && o->timeline_rank < 0) { /* find the slowest rank */
                        run_point(o, algs[a], P, o->size[j], o->params, start, &pts[k]);
                        slowest = pts[k].rc ? -1 : pts[k].r.slowest;
                    }
                    if ((irc = inspect_begin(o, P, slowest)) != 0) {
                        free(start), free(pts);
                        return irc;
                    }
                }
                run_point(o, algs[a], P, o->size[j], o->params, start, &pts[k]);
                if (inspect)
                    failed |= inspect_end(o, P, pts[k].rc == 0);
                if (table) {
                    print_row(&pts[k]);
                    fflush(stdout);
                }
                failed |= pts[k].rc != 0 && !pts[k].refused;
            }
            free(start);
        }
    struct rusage ru;
    if (table && !getrusage(RUSAGE_SELF, &ru))
        printf("# process peak resident memory: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    if (table && !strcmp(o->algos, "all"))
        print_not_schedules(o->coll);
    write_outputs(o, pts, npts);
    if (o->plot && write_plot(o, pts, npts, nalgo))
        failed = 1;
    free(pts);
    return failed;
}

int cmd_sim(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help"))
        return sim_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
    static sim_opts_cli_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.goal)
        return run_goal(&o);
    const algo_t *algs[64];
    int nalgo = select_algos(&o, algs, 64);
    if (nalgo < 0 || check_params(&o, algs, nalgo))
        return 2;
    if (o.export_goal)
        return export_goal(&o, algs[0]);
    if (o.sched_stats)
        return run_sched_stats(&o, algs, nalgo);
    if (o.best_chunks)
        return run_best_chunks(&o, algs, nalgo);
    return run_sweep(&o, algs, nalgo);
}
