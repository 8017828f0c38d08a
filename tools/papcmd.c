/* papcmd.c — `weft pap report DIR`: the arrival pattern of a program's
 * collectives from its traces (src/core/pap_trace.h: WEFT_PROFILE or
 * libweft-prof.so), as the process-arrival-pattern seed's chapter 3
 * characterises Horovod: calls and share of communication time per
 * collective; for allreduce, calls and time by message class (small
 * 0-1 KiB, medium 1 KiB-1 MiB, large above) and, per call, the worst-case
 * imbalance Omega = max a_i - min a_i and the average-case imbalance
 * Delta = mean |a_i - mean a| (its equations 2.1-2.3), with the factors
 * Omega/alpha and Delta/alpha (alpha: the one-way time of a message of the
 * call's size, L + 2o + (s-1)G under the model's preset), cluster-wide and
 * node-wide (Tables 3.1-3.4).  --plot DIR draws the factors per invocation
 * over time (Figures 3.9-3.13) with gnuplot.
 *
 * Bad traces are reported file by file and line by line, and what can be
 * read is reported: a missing rank, a truncated line, ranks that disagree
 * on a call, and clocks that disagree (a rank that left an allreduce or
 * barrier before another arrived). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/core/pap_trace.h"
#include "predict.h"
#include "tool.h"

typedef struct rec {
    pap_call_t c;
    int rank, node;
} rec_t;

typedef struct trace {
    rec_t *r;
    size_t n, cap;
    int size;       /* ranks the files say the job had (-1: none read) */
    int *node;      /* node of each rank, -1: no file */
    int files, problems;
} trace_t;

static void problem(trace_t *t, const char *fmt, const char *a, int line, const char *what)
{
    if (t->problems++ < 20)
        fprintf(stderr, fmt, a, line, what);
    else if (t->problems == 21)
        fprintf(stderr, "weft pap: (more problems not shown)\n");
}

static int add_rec(trace_t *t, const rec_t *r)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? 2 * t->cap : 4096;
        rec_t *p = realloc(t->r, ncap * sizeof *p);
        if (!p)
            return -1;
        t->r = p, t->cap = ncap;
    }
    t->r[t->n++] = *r;
    return 0;
}

/* The ops a trace names (pap_trace.h), and the op each is replayed as:
 * its class is what matters (which algorithms may serve it). */
static const struct {
    const char *name;
    int op;
} trace_ops[] = {{"sum", WEFT_SUM},   {"prod", WEFT_PROD},  {"min", WEFT_MIN},
                 {"max", WEFT_MAX},   {"band", WEFT_BAND},  {"bor", WEFT_BOR},
                 {"bxor", WEFT_BXOR}, {"land", WEFT_LAND},  {"lor", WEFT_LOR},
                 {"-", WEFT_SUM},     {"user_c", WEFT_PROD}, {"other", WEFT_PROD},
                 {"user_nc", OP_AFFINE}};
#define TRACE_OPS (int)(sizeof trace_ops / sizeof trace_ops[0])

static int trace_op(const char *name)
{
    for (int i = 0; i < TRACE_OPS; i++)
        if (!strcmp(name, trace_ops[i].name))
            return i;
    return -1;
}

/* A call line of a trace of this version (size ranks); 0 when it is one.
 * Version 1 has no op and root: sum and root 0, as weft pap assumed then. */
static int parse_call(const char *line, int version, int size, pap_call_t *c)
{
    unsigned long long count, bytes, seq;
    long long a, x;
    int root = 0;
    char extra, op[16] = "sum";
    int n = version == 1
                ? sscanf(line, "call %31s %31s %llu %llu %31s %llu %lld %lld %c", c->coll,
                         c->dtype, &count, &bytes, c->comm, &seq, &a, &x, &extra)
                : sscanf(line, "call %31s %31s %llu %llu %31s %llu %lld %lld %15s %d %c", c->coll,
                         c->dtype, &count, &bytes, c->comm, &seq, &a, &x, op, &root, &extra);
    if (n != (version == 1 ? 8 : 10) || x < a || trace_op(op) < 0 || root < -1 || root >= size)
        return -1;
    c->count = count, c->bytes = bytes, c->seq = seq;
    c->arrive_ns = a, c->exit_ns = x;
    snprintf(c->op, sizeof c->op, "%s", op);
    c->root = root;
    return 0;
}

/* A file's second line, 'rank R size P node N': the rank's node noted,
 * the trace's size taken from its first file.  0, or -1 (said) when the
 * rest of the file cannot be read. */
static int read_header(trace_t *t, const char *path, int ln, const char *line, int *rank,
                       int *size, int *node)
{
    char extra;
    if (sscanf(line, "rank %d size %d node %d %c", rank, size, node, &extra) != 3 || *rank < 0 ||
        *size < 1 || *size > (1 << 24) || *rank >= *size || *node < 0) {
        problem(t, "weft pap: %s: line %d: %s\n", path, ln,
                "want 'rank R size P node N' with 0 <= R < P");
        return -1;
    }
    if (t->size < 0) {
        t->size = *size;
        t->node = malloc((size_t)*size * sizeof *t->node);
        if (!t->node) {
            problem(t, "weft pap: %s: line %d: %s\n", path, ln, "out of memory");
            return -1;
        }
        for (int i = 0; i < *size; i++)
            t->node[i] = -1;
    } else if (*size != t->size) {
        problem(t, "weft pap: %s: line %d: %s\n", path, ln,
                "another job's trace (its size differs from the first file's)");
        return -1;
    }
    if (t->node[*rank] >= 0) {
        problem(t, "weft pap: %s: line %d: %s\n", path, ln, "a second file for this rank");
        return -1;
    }
    t->node[*rank] = *node;
    t->files++;
    return 0;
}

/* The next whole line of f into line (its newline cut); 0 at the end.  A
 * line too long, or the last one cut short, is a problem and skipped. */
static int next_line(trace_t *t, FILE *f, const char *path, char *line, size_t cap, int *ln)
{
    while (fgets(line, (int)cap, f)) {
        ++*ln;
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n' && !feof(f)) {
            problem(t, "weft pap: %s: line %d: %s\n", path, *ln, "longer than 511 bytes");
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                ;
            continue;
        }
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        else if (*ln > 2) { /* a last line without its newline: cut short */
            problem(t, "weft pap: %s: line %d: %s\n", path, *ln,
                    "truncated (no newline at the end)");
            continue;
        }
        return 1;
    }
    return 0;
}

/* One rank's file; its problems are counted and said, its good lines kept. */
static void read_file(trace_t *t, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        problem(t, "weft pap: %s: line %d: cannot open: %s\n", path, 0, strerror(errno));
        return;
    }
    char line[512];
    int ln = 0, rank = -1, size = -1, node = -1, version = 2;
    while (next_line(t, f, path, line, sizeof line, &ln)) {
        if (ln == 1) {
            version = !strcmp(line, PAP_TRACE_MAGIC) ? 2 : !strcmp(line, PAP_TRACE_MAGIC_V1) ? 1 : 0;
            if (!version) {
                problem(t, "weft pap: %s: line %d: %s\n", path, ln,
                        "not a weft pap trace (want '" PAP_TRACE_MAGIC "', or version 1)");
                break;
            }
            continue;
        }
        if (ln == 2) {
            if (read_header(t, path, ln, line, &rank, &size, &node))
                break;
            continue;
        }
        rec_t r;
        memset(&r, 0, sizeof r);
        if (parse_call(line, version, size, &r.c)) {
            problem(t, "weft pap: %s: line %d: %s\n", path, ln,
                    version == 1 ? "want 'call COLL DTYPE COUNT BYTES COMM SEQ ARRIVE_NS "
                                   "EXIT_NS' (exit >= arrive)"
                                 : "want 'call COLL DTYPE COUNT BYTES COMM SEQ ARRIVE_NS EXIT_NS "
                                   "OP ROOT' (exit >= arrive, a known op, -1 <= ROOT < P)");
            continue;
        }
        r.rank = rank, r.node = node;
        if (add_rec(t, &r))
            break;
    }
    if (ln < 2)
        problem(t, "weft pap: %s: line %d: %s\n", path, ln, "empty or without its header");
    fclose(f);
}

static int by_call(const void *pa, const void *pb)
{
    const rec_t *a = pa, *b = pb;
    int c = strcmp(a->c.comm, b->c.comm);
    if (c)
        return c;
    if (a->c.seq != b->c.seq)
        return a->c.seq < b->c.seq ? -1 : 1;
    return a->rank - b->rank;
}

/* One invocation: its ranks' records r[0..n). */
typedef struct inv {
    const rec_t *r;
    size_t n;
    double omega, delta;           /* ns, cluster-wide */
    double node_omega, node_delta; /* ns, averaged over nodes with 2+ ranks; <0 none */
    double t;                      /* first arrival */
} inv_t;

static void imbalance(const rec_t *r, size_t n, double *omega, double *delta)
{
    double lo = INFINITY, hi = -INFINITY, mean = 0;
    for (size_t i = 0; i < n; i++) {
        double a = (double)r[i].c.arrive_ns;
        lo = a < lo ? a : lo, hi = a > hi ? a : hi, mean += a;
    }
    mean /= (double)n;
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d += fabs((double)r[i].c.arrive_ns - mean);
    *omega = hi - lo, *delta = d / (double)n;
}

static void node_imbalance(inv_t *v)
{
    double so = 0, sd = 0;
    int nodes = 0;
    rec_t tmp[256];
    for (size_t i = 0; i < v->n; i++) {
        int node = v->r[i].node;
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            first = v->r[j].node != node;
        if (!first)
            continue;
        size_t m = 0;
        for (size_t j = i; j < v->n && m < 256; j++)
            if (v->r[j].node == node)
                tmp[m++] = v->r[j];
        if (m < 2)
            continue;
        double o, d;
        imbalance(tmp, m, &o, &d);
        so += o, sd += d, nodes++;
    }
    v->node_omega = nodes ? so / nodes : -1;
    v->node_delta = nodes ? sd / nodes : -1;
}

static double alpha_ns(const sim_model_t *m, uint64_t bytes)
{
    double s = bytes ? (double)bytes : 1;
    return m->L + 2 * m->o + (s - 1) * m->G;
}

static const char *const class_name[3] = {"small (0-1 KiB)", "medium (1 KiB-1 MiB)",
                                          "large (> 1 MiB)"};
static int class_of(uint64_t bytes) { return bytes <= 1024 ? 0 : bytes <= (1u << 20) ? 1 : 2; }

typedef struct agg {
    char coll[32];
    long calls;
    double time_ns; /* inside, summed over ranks */
} agg_t;

static int plot(const char *dir, const inv_t *v, size_t nv, const sim_model_t *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/imbalance.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "weft pap: --plot %s: cannot write %s: %s\n", dir, path, strerror(errno));
        return 2;
    }
    fprintf(f, "# allreduce invocations: time_s omega/alpha delta/alpha node_omega/alpha "
               "node_delta/alpha bytes\n");
    for (size_t i = 0; i < nv; i++) {
        if (strcmp(v[i].r->c.coll, "allreduce"))
            continue;
        double al = alpha_ns(m, v[i].r->c.bytes);
        fprintf(f, "%.9f %.4f %.4f %.4f %.4f %llu\n", v[i].t * 1e-9, v[i].omega / al,
                v[i].delta / al, v[i].node_omega < 0 ? NAN : v[i].node_omega / al,
                v[i].node_delta < 0 ? NAN : v[i].node_delta / al,
                (unsigned long long)v[i].r->c.bytes);
    }
    fclose(f);
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"set terminal png size 1000,500; set xlabel 'time (s)'; "
             "set ylabel 'imbalance factor'; set key outside; set datafile missing 'nan'; "
             "set output '%s/imbalance-cluster.png'; set title 'allreduce: cluster-wide'; "
             "plot '%s' using 1:2 with points pt 7 ps 0.4 title 'Omega/alpha', '' using 1:3 "
             "with points pt 7 ps 0.4 title 'Delta/alpha'; "
             "set output '%s/imbalance-node.png'; set title 'allreduce: node-wide'; "
             "plot '%s' using 1:4 with points pt 7 ps 0.4 title 'Omega/alpha', '' using 1:5 "
             "with points pt 7 ps 0.4 title 'Delta/alpha'\"",
             dir, path, dir, path);
    if (system(cmd)) {
        fprintf(stderr, "weft pap: --plot: gnuplot failed (is gnuplot installed? Debian: "
                        "gnuplot-nox); the data are in %s\n", path);
        return 2;
    }
    printf("plots: %s/imbalance-cluster.png, %s/imbalance-node.png\n", dir, dir);
    return 0;
}

/* Reads every rank-R.pap of dir into t, sorted by invocation; 0, or 2
 * (said) when none could be read. */
static int load(const char *dir, trace_t *t)
{
    memset(t, 0, sizeof *t);
    t->size = -1;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "weft pap: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        if (strncmp(ent->d_name, "rank-", 5) || l < 10 || strcmp(ent->d_name + l - 4, ".pap"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        read_file(t, path);
    }
    closedir(d);
    if (!t->files) {
        fprintf(stderr, "weft pap: %s: no readable rank-R.pap trace\n", dir);
        free(t->r), free(t->node);
        return 2;
    }
    for (int i = 0; i < t->size; i++)
        if (t->node[i] < 0)
            problem(t, "weft pap: %s: line %d: %s\n", dir, 0, "a rank's file is missing");
    qsort(t->r, t->n, sizeof *t->r, by_call);
    return 0;
}

/* The end of the records of the invocation that starts at i. */
static size_t invocation_end(const trace_t *t, size_t i)
{
    size_t j = i;
    while (j < t->n && !strcmp(t->r[j].c.comm, t->r[i].c.comm) && t->r[j].c.seq == t->r[i].c.seq)
        j++;
    return j;
}

static int model(const char *preset, sim_model_t *m, char *pname, size_t plen)
{
    char msg[512];
    if (sim_model_for_tools(preset, m, pname, plen, msg, sizeof msg)) {
        fprintf(stderr, "weft pap: %s\n", msg);
        return 2;
    }
    return 0;
}

/* The trace taken apart by invocation: each with its imbalance, and the
 * time inside the collectives, per collective. */
typedef struct {
    inv_t *v;
    size_t nv;
    agg_t agg[16];
    int nagg;
    long disagree; /* records that disagree with their invocation's first */
    long skewed;   /* invocations where a rank left before another came */
    double worst_skew, total;
} tally_t;

/* Whether the records [i, j) of one invocation show clocks that disagree:
 * in an allreduce (of at least one element: MPI libraries return from an
 * empty one at once) or a barrier no rank can leave before all came. */
static void check_clocks(const trace_t *t, size_t i, size_t j, double last, tally_t *y)
{
    if (!((!strcmp(t->r[i].c.coll, "allreduce") && t->r[i].c.count) ||
          !strcmp(t->r[i].c.coll, "barrier")))
        return;
    for (size_t k = i; k < j; k++) {
        double early = last - (double)t->r[k].c.exit_ns;
        if (early > 0) {
            y->skewed++;
            y->worst_skew = fmax(y->worst_skew, early);
            return;
        }
    }
}

/* The time inside the collective of the records [i, j), added to their
 * collective's (the first 16 collectives seen). */
static void add_time(const trace_t *t, size_t i, size_t j, tally_t *y)
{
    int a = 0;
    while (a < y->nagg && strcmp(y->agg[a].coll, t->r[i].c.coll))
        a++;
    if (a == y->nagg && y->nagg < 16) {
        memset(&y->agg[y->nagg], 0, sizeof y->agg[0]);
        snprintf(y->agg[y->nagg++].coll, sizeof y->agg[0].coll, "%s", t->r[i].c.coll);
    }
    if (a == y->nagg)
        return;
    y->agg[a].calls++;
    for (size_t k = i; k < j; k++) {
        double in = (double)(t->r[k].c.exit_ns - t->r[k].c.arrive_ns);
        y->agg[a].time_ns += in, y->total += in;
    }
}

static void tally(const trace_t *t, tally_t *y)
{
    for (size_t i = 0; i < t->n;) {
        size_t j = invocation_end(t, i);
        inv_t *x = &y->v[y->nv++];
        x->r = &t->r[i], x->n = j - i;
        imbalance(x->r, x->n, &x->omega, &x->delta);
        node_imbalance(x);
        double last = -INFINITY;
        x->t = INFINITY;
        for (size_t k = i; k < j; k++) {
            const pap_call_t *c = &t->r[k].c;
            if (strcmp(c->coll, t->r[i].c.coll) || c->bytes != t->r[i].c.bytes)
                y->disagree++;
            x->t = fmin(x->t, (double)c->arrive_ns);
            last = fmax(last, (double)c->arrive_ns);
        }
        check_clocks(t, i, j, last, y);
        add_time(t, i, j, y);
        i = j;
    }
}

/* The allreduce invocations by message class: their share of the time and
 * their imbalance, in microseconds and in units of alpha(size). */
static void print_allreduce_classes(const tally_t *y, const sim_model_t *m)
{
    long calls[3] = {0}, nodecalls[3] = {0};
    double time[3] = {0}, om[3] = {0}, de[3] = {0}, nom[3] = {0}, nde[3] = {0}, omu[3] = {0},
           deu[3] = {0}, allr = 0;
    for (size_t i = 0; i < y->nv; i++) {
        const inv_t *v = &y->v[i];
        if (strcmp(v->r->c.coll, "allreduce"))
            continue;
        int c = class_of(v->r->c.bytes);
        double al = alpha_ns(m, v->r->c.bytes);
        calls[c]++;
        for (size_t k = 0; k < v->n; k++)
            time[c] += (double)(v->r[k].c.exit_ns - v->r[k].c.arrive_ns);
        om[c] += v->omega / al, de[c] += v->delta / al;
        omu[c] += v->omega, deu[c] += v->delta;
        if (v->node_omega >= 0) {
            nodecalls[c]++;
            nom[c] += v->node_omega / al, nde[c] += v->node_delta / al;
        }
    }
    for (int c = 0; c < 3; c++)
        allr += time[c];
    if (!(calls[0] + calls[1] + calls[2]))
        return;
    printf("\nallreduce by message class (Omega: worst-case, Delta: average-case imbalance; "
           "factors divided by alpha(size); averages over invocations)\n");
    printf("%-22s %8s %7s %10s %10s %9s %9s %9s %9s\n", "class", "calls", "share", "Omega us",
           "Delta us", "Omega/a", "Delta/a", "node O/a", "node D/a");
    for (int c = 0; c < 3; c++) {
        if (!calls[c])
            continue;
        char no[16] = "-", nd[16] = "-";
        if (nodecalls[c]) {
            snprintf(no, sizeof no, "%.2f", nom[c] / nodecalls[c]);
            snprintf(nd, sizeof nd, "%.2f", nde[c] / nodecalls[c]);
        }
        printf("%-22s %8ld %6.1f%% %10.2f %10.2f %9.2f %9.2f %9s %9s\n", class_name[c],
               calls[c], allr > 0 ? 100 * time[c] / allr : 0, omu[c] / calls[c] * 1e-3,
               deu[c] / calls[c] * 1e-3, om[c] / calls[c], de[c] / calls[c], no, nd);
    }
}

static int report(const char *dir, const char *preset, const char *plot_dir)
{
    sim_model_t m;
    char pname[256];
    trace_t t;
    if (model(preset, &m, pname, sizeof pname) || load(dir, &t))
        return 2;
    tally_t y = {.v = calloc(t.n ? t.n : 1, sizeof *y.v)};
    if (!y.v) {
        fprintf(stderr, "weft pap: out of memory for %zu records\n", t.n);
        free(t.r), free(t.node);
        return 2;
    }
    tally(&t, &y);
    printf("# weft pap report %s: %d rank files of %d, %zu call records, %zu invocations; alpha "
           "from preset %s\n", dir, t.files, t.size, t.n, y.nv, pname);
    if (y.disagree)
        printf("# %ld records disagree with their invocation's first rank on the collective or "
               "the bytes\n", y.disagree);
    if (y.skewed)
        printf("# clocks disagree: in %ld allreduce/barrier invocations a rank left before "
               "another arrived (by up to %.1f us): their imbalance is not to be trusted\n",
               y.skewed, y.worst_skew * 1e-3);
    printf("\n%-16s %10s %14s %8s\n", "collective", "calls", "time (ms)", "share");
    for (int a = 0; a < y.nagg; a++)
        printf("%-16s %10ld %14.3f %7.1f%%\n", y.agg[a].coll, y.agg[a].calls,
               y.agg[a].time_ns * 1e-6, y.total > 0 ? 100 * y.agg[a].time_ns / y.total : 0);
    print_allreduce_classes(&y, &m);
    int rc = t.problems ? 1 : 0;
    if (plot_dir && plot(plot_dir, y.v, y.nv, &m))
        rc = 2;
    if (t.problems)
        printf("# %d problem%s in the traces (above, on stderr): the report covers what could "
               "be read\n", t.problems, t.problems == 1 ? "" : "s");
    free(y.v);
    free(t.r);
    free(t.node);
    return rc;
}

/* ---- what if ---- */

/* One collective's replay: its invocations (sampled), the time inside
 * they took (summed over ranks), and each candidate's predicted one. */
#define WHATIF_ALGOS 48
typedef struct whatif {
    weft_coll_t coll;
    long calls, replayed;
    double measured;
    const algo_t *al[WHATIF_ALGOS];
    double predicted[WHATIF_ALGOS];
    bool refused[WHATIF_ALGOS]; /* could not serve an invocation: out */
    char why[WHATIF_ALGOS][160];
    int nal;
} whatif_t;

/* Replays invocation r[0..n) through al with the recorded arrivals as
 * start times; the predicted time inside summed over ranks, or -1. */
static double replay(const sim_model_t *m, const algo_t *al, const rec_t *r, size_t n,
                     char *why, size_t len)
{
    double *start = malloc(n * sizeof *start), lo = INFINITY, sum = 0;
    if (!start)
        return -1;
    for (size_t i = 0; i < n; i++)
        lo = fmin(lo, (double)r[i].c.arrive_ns);
    for (size_t i = 0; i < n; i++)
        start[i] = (double)r[i].c.arrive_ns - lo, sum += start[i];
    uint64_t bytes = r[0].c.bytes;
    int root = r[0].c.root > 0 ? r[0].c.root : 0, op = trace_ops[trace_op(r[0].c.op)].op;
    weft_dtype_t dt = bytes % 4 ? WEFT_UINT8 : WEFT_FLOAT32;
    sim_opts_t lim = {.start = start, .max_events = 2000000, .max_seconds = 2};
    sim_result_t res;
    int rc = sim_predict(m, al, NULL, (int)n, bytes, dt, op, root, true, &lim, &res, why, len);
    free(start);
    return rc ? -1 : res.t_mean * (double)n - sum;
}

static void whatif_coll(const sim_model_t *m, const trace_t *t, whatif_t *w, long max_calls)
{
    size_t n = 0;
    const algo_t *tab = algo_table(&n);
    w->nal = 0;
    for (size_t k = 0; k < n && w->nal < WHATIF_ALGOS; k++)
        if (tab[k].coll == w->coll && strcmp(tab[k].name, "board") &&
            strcmp(tab[k].name, "adaptive"))
            w->al[w->nal++] = &tab[k];
    const char *name = weft_coll_name(w->coll);
    long total = 0;
    for (size_t i = 0; i < t->n; i = invocation_end(t, i))
        total += !strcmp(t->r[i].c.coll, name);
    long stride = total > max_calls ? (total + max_calls - 1) / max_calls : 1, seen = 0;
    for (size_t i = 0; i < t->n;) {
        size_t j = invocation_end(t, i);
        if (strcmp(t->r[i].c.coll, name) || seen++ % stride) {
            i = j;
            continue;
        }
        w->calls++;
        double measured = 0;
        for (size_t k = i; k < j; k++)
            measured += (double)(t->r[k].c.exit_ns - t->r[k].c.arrive_ns);
        /* an algorithm that cannot serve an invocation (its op class, its
         * process count) leaves the comparison, so that the sums of the
         * others and the measured one cover the same invocations */
        for (int a = 0; a < w->nal; a++) {
            if (w->refused[a])
                continue;
            char why[160] = "";
            double p = replay(m, w->al[a], &t->r[i], j - i, why, sizeof why);
            if (p < 0) {
                w->refused[a] = 1;
                snprintf(w->why[a], sizeof w->why[a], "%s", why);
            } else {
                w->predicted[a] += p;
            }
        }
        w->replayed++;
        w->measured += measured;
        i = j;
    }
    w->calls = total;
}

static int whatif(const char *dir, const char *preset, long max_calls)
{
    sim_model_t m;
    char pname[256];
    trace_t t;
    if (model(preset, &m, pname, sizeof pname) || load(dir, &t))
        return 2;
    printf("# weft pap whatif %s: each recorded invocation replayed through the LogGOPS "
           "simulator (preset %s) with its ranks starting at their recorded arrivals; time "
           "inside summed over ranks, each with its recorded op and root (a version 1 "
           "trace has neither: sum and root 0)\n",
           dir, pname);
    static const weft_coll_t colls[3] = {WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE};
    for (int c = 0; c < 3; c++) {
        whatif_t w;
        memset(&w, 0, sizeof w);
        w.coll = colls[c];
        whatif_coll(&m, &t, &w, max_calls);
        if (!w.calls)
            continue;
        printf("\n%s: %ld invocations, %ld replayed; measured time inside %.3f ms\n",
               weft_coll_name(w.coll), w.calls, w.replayed, w.measured * 1e-6);
        int best = -1;
        for (int a = 0; a < w.nal; a++)
            if (!w.refused[a] && (best < 0 || w.predicted[a] < w.predicted[best]))
                best = a;
        printf("  %-20s %14s %12s\n", "algorithm", "predicted ms", "vs best");
        for (int a = 0; a < w.nal; a++) {
            if (w.refused[a]) {
                printf("  %-20s %14s %12s  (cannot serve it: %s)\n", w.al[a]->name, "-", "-",
                       w.why[a]);
                continue;
            }
            double vs = w.predicted[best] > 0 ? w.predicted[a] / w.predicted[best]
                        : w.predicted[a] > 0 ? INFINITY : 1; /* the best spends none */
            printf("  %-20s %14.3f %11.2fx%s\n", w.al[a]->name, w.predicted[a] * 1e-6, vs,
                   a == best ? "  *" : "");
        }
        if (best >= 0)
            printf("  best: %s; it would have saved %.3f ms of the %.3f ms measured (%.0f%%), "
                   "as far as the model matches this machine\n", w.al[best]->name,
                   (w.measured - w.predicted[best]) * 1e-6, w.measured * 1e-6,
                   w.measured > 0 ? 100 * (w.measured - w.predicted[best]) / w.measured : 0);
    }
    printf("\n# shm_twostep, pap_leader, pap_chain and hier_pap are not schedules: each runs "
           "as the program the invocation's arrival order makes of it (src/sim/pap.c); "
           "adaptive is "
           "whichever of its two it would choose, the board serves tiny payloads only, "
           "and hier_pap runs as hier does here, on one node (a profile's node map is not "
           "replayed)\n");
    int rc = t.problems ? 1 : 0;
    free(t.r);
    free(t.node);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: weft pap report DIR [--preset NAME|FILE] [--plot OUTDIR]\n"
                    "       weft pap whatif DIR [--preset NAME|FILE] [--max-calls N]\n"
                    "  DIR holds rank-R.pap traces (WEFT_PROFILE=DIR, or LD_PRELOAD=libweft-prof.so\n"
                    "  with WEFT_PROFILE=DIR under mpirun)\n");
    return 2;
}

int cmd_pap(int argc, char **argv)
{
    bool is_report = argc >= 3 && !strcmp(argv[1], "report");
    if (argc < 3 || (!is_report && strcmp(argv[1], "whatif")))
        return usage();
    const char *dir = argv[2], *preset = NULL, *plot_dir = NULL;
    long max_calls = 2000;
    for (int i = 3; i < argc; i++) {
        char *e = NULL;
        if (!strcmp(argv[i], "--preset") && i + 1 < argc) {
            preset = argv[++i];
        } else if (is_report && !strcmp(argv[i], "--plot") && i + 1 < argc) {
            plot_dir = argv[++i];
        } else if (!is_report && !strcmp(argv[i], "--max-calls") && i + 1 < argc) {
            max_calls = strtol(argv[++i], &e, 10);
            if (*e || max_calls < 1 || max_calls > 10000000) {
                fprintf(stderr, "weft pap: --max-calls %s: want 1..10000000\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "weft pap: unknown option %s\n", argv[i]);
            return usage();
        }
    }
    return is_report ? report(dir, preset, plot_dir) : whatif(dir, preset, max_calls);
}
