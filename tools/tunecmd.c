/* tunecmd.c — `weft explain` (what AUTO picks for a call, the row that
 * decided, and every algorithm with why it can or cannot serve the call)
 * and `weft tune` (measure every algorithm with `weft bench` and write a
 * tuning table of the winners, docs/TUNING.md). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "core/core.h"
#include "launch/launch.h"
#include "predict.h"
#include "tool.h"
#include "tune/table.h"
#include "xport/segment.h"

static bool parse_u64(const char *s, uint64_t *out)
{
    const char *e = size_prefix(s, out);
    return e && !*e;
}

/* ---- weft explain ---- */

/* what one prediction in weft explain may take (about a second) */
#define EXPLAIN_MAX_EVENTS 5000000u
static const sim_opts_t explain_limits = {.max_events = EXPLAIN_MAX_EVENTS,
                                          .max_bytes = 1ull << 30, .max_seconds = 2};

static void show_trace(void *ctx, const tune_table_t *t, const tune_row_t *row,
                       const tune_choice_t *c, const char *why_not)
{
    if (why_not)
        printf("  passed over %s (%s, line %d): %s\n", c->text, t->source, row->line, why_not);
}

static int explain_usage(FILE *f, int rc)
{
    fprintf(f, "usage: weft explain COLL --np P --size BYTES [--op OP|noncommutative]\n"
               "                    [--dtype T] [--table FILE] [--cpu amd|generic|auto]\n"
               "                    [--preset NAME|FILE] [--predict on|off] [--measure]\n"
               "What AUTO picks for a call of BYTES per rank (count x element size; K, M, G\n"
               "allowed), the tuning-table row that decided, and every algorithm of COLL\n"
               "with why it can or cannot serve the call.  --table FILE reads FILE as\n"
               "WEFT_TUNING_FILE would; --cpu the built-in rows of that CPU, as\n"
               "WEFT_TUNING_CPU would (auto: this machine's).\n"
               "Figures: 'predicted' is the LogGOPS simulation of the very schedule (weft\n"
               "sim) under --preset (default: ./this-machine.preset from weft fit if there\n"
               "is one, else loggopsim); --predict off leaves it out, and it is left out\n"
               "for an algorithm whose simulation would take over %d M events, 1 GiB or\n"
               "2 s.  "
               "--measure runs weft bench for this size on P ranks of this\n"
               "machine (shared memory, P <= 4096) and shows its median beside the\n"
               "prediction.\n",
            (int)(EXPLAIN_MAX_EVENTS / 1000000));
    return rc;
}

typedef struct {
    weft_coll_t coll;
    uint64_t np, size;
    int dt, op; /* op: a builtin op, or OP_AFFINE for a non-commutative one */
    const char *preset, *cpu;
    bool predict, measure;
} explain_opts_t;

static int explain_parse(int argc, char **argv, explain_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->dt = WEFT_FLOAT32, o->op = WEFT_SUM, o->predict = true;
    if ((o->coll = coll_from_name(argv[1])) == WEFT_COLL_COUNT)
        return fprintf(stderr, "weft explain: unknown collective '%s'\n", argv[1]), 2;
    bool have_size = false;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--measure")) {
            o->measure = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return fprintf(stderr, "weft explain: %s needs a value\n", k), 2;
        i++;
        if (!strcmp(k, "--np")) {
            if (!parse_u64(v, &o->np) || o->np < 1 || o->np > (1u << 24))
                return fprintf(stderr, "weft explain: --np %s: want 1 to 2^24 ranks\n", v), 2;
        } else if (!strcmp(k, "--size")) {
            if (!parse_u64(v, &o->size) || o->size > (1ull << 40))
                return fprintf(stderr, "weft explain: --size %s: want bytes, 0 to 2^40\n", v), 2;
            have_size = true;
        } else if (!strcmp(k, "--dtype")) {
            if ((o->dt = dtype_from_name(v)) < 0)
                return fprintf(stderr, "weft explain: --dtype %s: unknown datatype\n", v), 2;
        } else if (!strcmp(k, "--op")) {
            if ((o->op = !strcmp(v, "noncommutative") ? OP_AFFINE : op_from_name(v)) == -1)
                return fprintf(stderr, "weft explain: --op %s: want a builtin op or "
                                       "noncommutative (a user op)\n", v), 2;
        } else if (!strcmp(k, "--table")) {
            setenv("WEFT_TUNING_FILE", v, 1);
        } else if (!strcmp(k, "--cpu")) {
            o->cpu = v;
        } else if (!strcmp(k, "--preset")) {
            o->preset = v;
        } else if (!strcmp(k, "--predict")) {
            if (strcmp(v, "on") && strcmp(v, "off"))
                return fprintf(stderr, "weft explain: --predict %s: want on or off\n", v), 2;
            o->predict = !strcmp(v, "on");
        } else {
            fprintf(stderr, "weft explain: unknown option %s\n", k);
            return explain_usage(stderr, 2);
        }
    }
    if (!o->np || !have_size)
        return fprintf(stderr, "weft explain: give --np P and --size BYTES\n"), 2;
    /* after --table's file is named: the tables load here; and in the
     * environment for --measure's ranks */
    if (o->cpu && tune_set_cpu(o->cpu))
        return fprintf(stderr, "weft explain: --cpu: %s\n", weft_last_error()), 2;
    if (o->cpu)
        setenv("WEFT_TUNING_CPU", o->cpu, 1);
    if (o->measure && o->np > 4096)
        return fprintf(stderr, "weft explain: --measure runs P = %llu ranks on this machine: "
                               "at most 4096\n", (unsigned long long)o->np), 2;
    return 0;
}

/* The call's arguments as the library would see them. */
static void explain_args(const explain_opts_t *o, coll_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->coll = o->coll;
    a->nrank = (int)o->np;
    a->esize = weft_dtype_size((weft_dtype_t)o->dt);
    a->count = o->size / a->esize;
    /* as under weft run, whose shared memory has the board and the arena */
    a->shared_board = a->board_slots = a->node_board = a->arena_reads = true;
    a->board_payload = board_payload_for(a->nrank);
    bool reduces = coll_is_reduction(o->coll), noncomm = o->op == OP_AFFINE;
    int op = o->op, dt = o->dt;
    a->commutative = !reduces || !noncomm;
    a->idempotent = reduces && !noncomm && op != WEFT_SUM && op != WEFT_PROD && op != WEFT_BXOR;
    a->invertible = reduces && !noncomm && (op == WEFT_SUM || op == WEFT_BXOR) &&
                    !elem_is_float((weft_dtype_t)dt);
}

/* The fields of one CSV line, empty ones kept (strtok would skip them). */
static int csv_fields(char *line, char **field, int max)
{
    int nf = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; nf < max;) {
        field[nf++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    return nf;
}

/* Runs `weft bench` with args[0..nargs) and `--csv` a temporary file,
 * named into csv (the caller unlinks it); quiet: its table not printed.
 * weft bench's exit code, or -1 when no temporary file could be made. */
static int bench_into_csv(char **args, int nargs, bool quiet, char csv[static 24])
{
    strcpy(csv, "/tmp/weft-tune-XXXXXX");
    int fd = mkstemp(csv);
    if (fd < 0) {
        fprintf(stdout, "weft: cannot make a temporary file: %s\n", strerror(errno));
        return -1;
    }
    close(fd);
    char *argv[24];
    if (nargs + 3 > 24) {
        unlink(csv);
        return -1;
    }
    memcpy(argv, args, (size_t)nargs * sizeof *args);
    argv[nargs] = "--csv", argv[nargs + 1] = csv, argv[nargs + 2] = NULL;
    fflush(stdout);
    int saved = quiet ? dup(1) : -1, devnull = quiet ? open("/dev/null", O_WRONLY) : -1;
    if (saved >= 0 && devnull >= 0)
        dup2(devnull, 1); /* the benchmark's own table: the figures come back by CSV */
    int rc = cmd_bench(nargs + 2, argv);
    fflush(stdout);
    if (saved >= 0 && devnull >= 0)
        dup2(saved, 1);
    if (saved >= 0)
        close(saved);
    if (devnull >= 0)
        close(devnull);
    if (launch_interrupted()) { /* a Ctrl-C: no more measurements */
        unlink(csv);
        launch_reraise();
    }
    return rc;
}

/* Calls row(ctx, algorithm, bytes, median us) for each row of the CSV file
 * `weft bench --csv` wrote; -1 if it cannot be read or has no header. */
static int bench_csv_rows(const char *path,
                          void (*row)(void *ctx, const char *algo, uint64_t bytes, double med),
                          void *ctx)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    if (!f || !fgets(line, sizeof line, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *field[8];
        if (csv_fields(line, field, 8) >= 7)
            row(ctx, field[4], strtoull(field[3], NULL, 10), strtod(field[6], NULL));
    }
    fclose(f);
    return 0;
}

typedef struct {
    weft_coll_t coll;
    double *med;
} measured_t;

static void keep_median(void *ctx, const char *algo, uint64_t bytes, double med)
{
    measured_t *m = ctx;
    size_t n;
    const algo_t *t = algo_table(&n);
    (void)bytes;
    for (size_t i = 0; i < n; i++)
        if (t[i].coll == m->coll && !strcmp(t[i].name, algo))
            m->med[i] = med;
}

/* weft bench's median (us) per registry index for the usable algorithms,
 * -1 where it gave none; false if the benchmark could not run. */
static bool explain_measure(const explain_opts_t *o, const coll_args_t *a, double *med)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    char list[4096] = "", np[24], size[24], why[256];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        med[i] = -1;
        if (t[i].coll == o->coll && !algo_usable_why(&t[i], a, why, sizeof why) &&
            used + strlen(t[i].name) + 2 < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "",
                                     t[i].name);
    }
    if (!used)
        return false;
    snprintf(np, sizeof np, "%llu", (unsigned long long)o->np);
    snprintf(size, sizeof size, "%llu", (unsigned long long)(a->count * a->esize));
    char *bargv[16] = {"bench", (char *)weft_coll_name(o->coll), "--np", np, "--algo", list,
                       "--sizes", size};
    int bargc = 8;
    if (coll_is_reduction(o->coll)) {
        bargv[bargc++] = "--op";
        bargv[bargc++] = (char *)bench_op_name(o->op);
    }
    if (o->op != OP_AFFINE) {
        bargv[bargc++] = "--dtype";
        bargv[bargc++] = (char *)weft_dtype_name((weft_dtype_t)o->dt);
    }
    char csv[24];
    int rc = bench_into_csv(bargv, bargc, true, csv);
    if (rc < 0)
        return false;
    measured_t m = {o->coll, med};
    if (!rc && bench_csv_rows(csv, keep_median, &m))
        rc = 1;
    unlink(csv);
    return rc == 0;
}

/* The predicted time (us) per registry index, -1 where there is none
 * (note says why). */
static void explain_predict(const explain_opts_t *o, const coll_args_t *a, const sim_model_t *m,
                            double *pred, const char **note)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t i = 0; i < n; i++) {
        char why[256], msg[256];
        sim_result_t r;
        pred[i] = -1, note[i] = "";
        if (t[i].coll != o->coll || algo_usable_why(&t[i], a, why, sizeof why))
            continue;
        if (t[i].board && !sim_pap_kind(t[i].name, t[i].coll))
            note[i] = " [not simulated: no prediction]";
        else if (!sim_predict(m, &t[i], NULL, a->nrank, a->count * a->esize,
                              (weft_dtype_t)o->dt, o->op, a->root, true, &explain_limits, &r,
                              msg, sizeof msg))
            pred[i] = r.t_max / 1e3;
        else
            note[i] = !strncmp(msg, "stopped", 7) ? " [not predicted: too large for explain; "
                                                     "weft sim gives it]"
                                                   : " [not predicted]";
    }
}

/* The index of the smallest figure, or -1. */
static long fastest(const double *v, size_t n)
{
    long best = -1;
    for (size_t i = 0; v && i < n; i++)
        if (v[i] >= 0 && (best < 0 || v[i] < v[best]))
            best = (long)i;
    return best;
}

/* Every algorithm of the collective: can it serve the call, its figures
 * (* the fastest), its cost formula or why it is excluded. */
static void explain_candidates(const explain_opts_t *o, const coll_args_t *a, const double *pred,
                               const char **note, const double *measured)
{
    size_t n;
    const algo_t *t = algo_table(&n);
    long bp = fastest(pred, n), bm = fastest(measured, n);
    if (bp >= 0)
        printf("fastest predicted: %s, %.2f us\n", t[bp].name, pred[bp]);
    if (bm >= 0)
        printf("fastest measured: %s, %.2f us\n", t[bm].name, measured[bm]);
    printf("\n%-20s %-6s %13s %13s  %s\n", "algorithm", "serves", pred ? "predicted_us" : "",
           measured ? "measured_us" : "", "cost (a latency, b per byte, g per byte reduced)");
    for (size_t i = 0; i < n; i++) {
        if (t[i].coll != o->coll)
            continue;
        char why[256], ps[24] = "", ms[24] = "";
        bool ok = !algo_usable_why(&t[i], a, why, sizeof why);
        if (pred && ok)
            snprintf(ps, sizeof ps, pred[i] >= 0 ? "%.2f%s" : "-", pred[i],
                     (long)i == bp ? "*" : " ");
        if (measured && ok)
            snprintf(ms, sizeof ms, measured[i] >= 0 ? "%.2f%s" : "-", measured[i],
                     (long)i == bm ? "*" : " ");
        printf("%-20s %-6s %13s %13s  %s%s%s%s\n", t[i].name, ok ? "yes" : "no", ps, ms,
               ok ? t[i].cost : "", ok ? "" : "excluded: ", ok ? "" : why, note ? note[i] : "");
    }
}

int cmd_explain(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help"))
        return explain_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
    explain_opts_t o;
    int rc = explain_parse(argc, argv, &o);
    if (rc)
        return rc;
    const tune_table_t *file, *cpu, *builtin;
    const char *file_err;
    tune_active(&file, &cpu, &builtin, &file_err);
    if (file_err) {
        fprintf(stderr, "weft explain: %s\n", file_err);
        return 2;
    }
    sim_model_t model;
    char mname[256] = "", msg[512];
    if (o.predict && sim_model_for_tools(o.preset, &model, mname, sizeof mname, msg, sizeof msg)) {
        fprintf(stderr, "weft explain: --preset: %s\n", msg);
        return 2;
    }
    coll_args_t a;
    explain_args(&o, &a);
    bool reduces = coll_is_reduction(o.coll), noncomm = o.op == OP_AFFINE;
    printf("weft explain %s: P=%d, %llu bytes per rank (%llu x %s)%s%s%s; looked up as %llu "
           "bytes\n", weft_coll_name(o.coll), a.nrank, (unsigned long long)(a.count * a.esize),
           (unsigned long long)a.count, weft_dtype_name((weft_dtype_t)o.dt),
           reduces ? ", op " : "", reduces ? (noncomm ? "a non-commutative user op"
                                                      : weft_op_name(o.op)) : "",
           reduces && !noncomm ? " (commutative)" : "", (unsigned long long)tune_bytes(&a));
    char cpu_rows[260] = "";
    if (cpu)
        snprintf(cpu_rows, sizeof cpu_rows, ", then %s (%d rows)", cpu->source, cpu->nrows);
    printf("tables: %s%s%s%s, then the built-in table (%d rows)\n",
           file ? file->source : "no WEFT_TUNING_FILE", file ? " " : "", file ? "(file)" : "",
           cpu_rows, builtin->nrows);
    tune_pick_t p;
    if (tune_select(&a, show_trace, NULL, &p)) {
        printf("AUTO: nothing serves this call: %s\n", weft_last_error());
        return 1;
    }
    if (p.row)
        printf("AUTO picks %s: %s, line %d\n", p.text, p.table->source, p.row->line);
    else
        printf("AUTO picks %s: no row serves the call; the registry's first usable algorithm\n",
               p.al->name);
    if (o.predict)
        printf("predicted: LogGOPS simulation of each schedule (time of the last rank, all "
               "starting together), preset %s\n", mname);
    size_t n;
    algo_table(&n);
    double *pred = o.predict ? malloc(n * sizeof *pred) : NULL;
    const char **note = o.predict ? calloc(n, sizeof *note) : NULL;
    double *measured = o.measure ? malloc(n * sizeof *measured) : NULL;
    if ((o.predict && (!pred || !note)) || (o.measure && !measured)) {
        free(pred), free(note), free(measured);
        return fprintf(stderr, "weft explain: out of memory\n"), 1;
    }
    if (pred)
        explain_predict(&o, &a, &model, pred, note);
    if (measured) {
        printf("measured: weft bench on %d ranks of this machine (median of the slowest "
               "rank's time)\n", a.nrank);
        if (!explain_measure(&o, &a, measured))
            printf("measured: weft bench could not run (see above)\n");
    }
    explain_candidates(&o, &a, pred, note, measured);
    free(pred), free(note), free(measured);
    return 0;
}

/* ---- weft tune ---- */

typedef struct winner {
    uint64_t bytes;
    char algo[64];
    double med;
} winner_t;

typedef struct {
    winner_t *w;
    int n, max;
} winners_t;

static void keep_fastest(void *ctx, const char *algo, uint64_t bytes, double med)
{
    winners_t *ws = ctx;
    if (!strcmp(algo, "auto") || !strcmp(algo, "native"))
        return;
    int k = 0;
    while (k < ws->n && ws->w[k].bytes != bytes)
        k++;
    if (k == ws->n) {
        if (ws->n == ws->max)
            return;
        ws->w[k].bytes = bytes;
        ws->w[k].med = med + 1;
        ws->n++;
    }
    if (med < ws->w[k].med) {
        ws->w[k].med = med;
        snprintf(ws->w[k].algo, sizeof ws->w[k].algo, "%s", algo);
    }
}

/* The fastest algorithm per size from `weft bench --csv`'s file. */
static int read_winners(const char *csv, winner_t *w, int max)
{
    winners_t ws = {w, 0, max};
    return bench_csv_rows(csv, keep_fastest, &ws) ? -1 : ws.n;
}

static int tune_usage(FILE *f, int rc)
{
    fprintf(f, "usage: weft tune allreduce|bcast|reduce --np P [--sizes LO:HI|S1,S2,..]\n"
               "                 [--op commutative|noncommutative] [--out FILE]\n"
               "                 [--by measure|sim] [--preset NAME|FILE] [--fresh]\n"
               "       weft tune allreduce --np P --arrival X,Y,.. [--sizes ..] [--out FILE]\n"
               "Writes a tuning table (docs/TUNING.md) whose rows give, for P ranks, the\n"
               "fastest algorithm per size range; sizes between two measured ones go to the\n"
               "nearer.  --by measure (the default) runs `weft bench COLL --np P --algo all`\n"
               "on this machine (P <= 4096); with --fresh, every input rewritten before each\n"
               "timed call (weft bench --fresh), as an application's are, which takes from\n"
               "the algorithms that read a peer's buffer in place the lines they would\n"
               "otherwise find cached from the call before.  --by sim predicts instead,\n"
               "with the LogGOPS simulator under --preset (default: ./this-machine.preset\n"
               "if weft fit wrote one, else loggopsim), for any P up to 2^24; a pipelined\n"
               "algorithm gets the chunk count the simulator finds best, written into its\n"
               "row (chunks=K).\n"
               "The rows are for commutative ops, measured with float32 sum (the default),\n"
               "or with --op noncommutative for non-commutative ones (a user op, affine\n"
               "maps on uint64).  Load the table with WEFT_TUNING_FILE=FILE (tables for\n"
               "both op classes can be concatenated under one header line); calls it has\n"
               "no row for use the built-in table.\n"
               "--arrival X,Y,..: rows for adaptive instead, with the arrival spread at\n"
               "which it should turn arrival-aware: per size, weft bench --mif X,Y,..\n"
               "times its balanced choice (recursive_doubling up to 64 KiB, rabenseifner\n"
               "above) and its arrival-aware one (pap_leader, pap_chain); between the last\n"
               "factor where the balanced one wins and the first where the aware one does,\n"
               "the threshold is the midpoint's expected spread, factor x alpha(size) x\n"
               "(P-1)/(P+1).  A size where the aware one never wins keeps the balanced\n"
               "algorithm.\n");
    return rc;
}

typedef struct {
    weft_coll_t coll;
    const char *coll_name, *out, *sizes, *opclass, *preset;
    uint64_t np;
    bool by_sim, noncomm;
    bool fresh; /* --fresh: measured with the inputs rewritten before each call */
    const char *arrival; /* --arrival X,Y,..: imbalance factors (weft bench --mif) */
} tune_opts_t;

static int tune_cli_parse(int argc, char **argv, tune_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->sizes = "4:67108864", o->opclass = "commutative", o->coll_name = argv[1];
    o->coll = coll_from_name(argv[1]);
    if (o->coll != WEFT_COLL_ALLREDUCE && o->coll != WEFT_COLL_BCAST &&
        o->coll != WEFT_COLL_REDUCE) {
        fprintf(stderr, "weft tune: '%s': weft tune serves allreduce, bcast and reduce\n",
                argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--fresh")) { /* the one option without a value */
            o->fresh = true;
            i--;
            continue;
        }
        if (!v)
            return fprintf(stderr, "weft tune: %s needs a value\n", k), 2;
        if (!strcmp(k, "--np")) {
            if (!parse_u64(v, &o->np) || o->np < 1 || o->np > (1u << 24))
                return fprintf(stderr, "weft tune: --np %s: want 1 to 2^24\n", v), 2;
        } else if (!strcmp(k, "--sizes")) {
            o->sizes = v;
        } else if (!strcmp(k, "--out")) {
            o->out = v;
        } else if (!strcmp(k, "--preset")) {
            o->preset = v;
        } else if (!strcmp(k, "--arrival")) {
            o->arrival = v;
        } else if (!strcmp(k, "--by")) {
            if (strcmp(v, "measure") && strcmp(v, "sim"))
                return fprintf(stderr, "weft tune: --by %s: want measure or sim\n", v), 2;
            o->by_sim = !strcmp(v, "sim");
        } else if (!strcmp(k, "--op")) {
            o->opclass = v;
            if (strcmp(v, "commutative") && strcmp(v, "noncommutative"))
                return fprintf(stderr, "weft tune: --op %s: want commutative or "
                                       "noncommutative\n", v), 2;
        } else {
            fprintf(stderr, "weft tune: unknown option %s\n", k);
            return tune_usage(stderr, 2);
        }
    }
    if (!o->np)
        return fprintf(stderr, "weft tune: give --np P\n"), 2;
    if (!o->by_sim && o->np > 4096)
        return fprintf(stderr, "weft tune: --np %llu: measuring runs the ranks on this machine, "
                               "at most 4096 (--by sim predicts for more)\n",
                       (unsigned long long)o->np), 2;
    if (o->preset && !o->by_sim)
        return fprintf(stderr, "weft tune: --preset is for --by sim\n"), 2;
    if (o->fresh && (o->by_sim || o->arrival))
        return fprintf(stderr, "weft tune: --fresh is for --by measure without --arrival (the "
                               "model has no caches; --arrival times the call inside)\n"), 2;
    if (o->arrival && (o->coll != WEFT_COLL_ALLREDUCE || o->by_sim ||
                       strcmp(o->opclass, "commutative") || o->np < 2))
        return fprintf(stderr, "weft tune: --arrival measures adaptive's threshold: allreduce, "
                               "commutative, --by measure, at least 2 ranks\n"), 2;
    o->noncomm = !strcmp(o->opclass, "noncommutative") && o->coll != WEFT_COLL_BCAST;
    return 0;
}

/* --by measure: weft bench's fastest median per size; their number, or -1. */
static int tune_measure(const tune_opts_t *o, winner_t *w, int max)
{
    char npbuf[24], csv[24];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)o->np);
    char *bargv[11] = {"bench", (char *)o->coll_name, "--np", npbuf, "--algo", "all", "--sizes",
                       (char *)o->sizes};
    int nargs = 8;
    if (o->noncomm)
        bargv[nargs++] = "--op", bargv[nargs++] = "noncommutative";
    if (o->fresh)
        bargv[nargs++] = "--fresh";
    int rc = bench_into_csv(bargv, nargs, false, csv);
    if (rc < 0)
        return -1;
    int n = rc ? -1 : read_winners(csv, w, max);
    unlink(csv);
    if (n <= 0)
        fprintf(stdout, "weft tune: the measurement failed (weft bench exited %d)\n", rc);
    return n;
}

/* --arrival: weft bench --mif's median time inside per size and factor
 * for the two algorithms adaptive chooses between at that size. */
#define ARR_FACTORS 16
#define ARR_SIZES 64
typedef struct arrival_meas {
    double factor[ARR_FACTORS];
    int nf;
    uint64_t bytes[ARR_SIZES];
    int ns;
    double med[ARR_SIZES][ARR_FACTORS][2]; /* [0] balanced, [1] aware; -1 none */
    double alpha_us[ARR_SIZES];
} arrival_meas_t;

/* x's index in v[0..*n), appended if new; -1 when v is full. */
static int index_of(double *v, int *n, int max, double x)
{
    for (int i = 0; i < *n; i++)
        if (v[i] == x)
            return i;
    if (*n == max)
        return -1;
    v[*n] = x;
    return (*n)++;
}

/* Reads weft bench --mif's CSV into m; -1 if it cannot. */
static int read_arrival_csv(const char *path, arrival_meas_t *m)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    if (!f || !fgets(line, sizeof line, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    for (int i = 0; i < ARR_SIZES; i++)
        for (int j = 0; j < ARR_FACTORS; j++)
            m->med[i][j][0] = m->med[i][j][1] = -1;
    while (fgets(line, sizeof line, f)) {
        /* collective,np,dtype,bytes,algorithm,avg_us,median_us,min_us,busbw,
         * iters,chose,convention,worst_rank_us,alpha_us,mif */
        char *fd[16];
        if (csv_fields(line, fd, 16) < 15)
            continue;
        const char *algo = fd[4];
        int aware = !strcmp(algo, "pap_leader") || !strcmp(algo, "pap_chain");
        uint64_t bytes = strtoull(fd[3], NULL, 10);
        bool small = bytes <= 65536; /* adaptive's own split (adaptive.c) */
        if (strcmp(algo, small ? (aware ? "pap_leader" : "recursive_doubling")
                               : (aware ? "pap_chain" : "rabenseifner")))
            continue;
        int fi = index_of(m->factor, &m->nf, ARR_FACTORS, strtod(fd[14], NULL));
        int si = 0;
        while (si < m->ns && m->bytes[si] != bytes)
            si++;
        if (si == m->ns && m->ns < ARR_SIZES)
            m->bytes[m->ns++] = bytes;
        if (fi < 0 || si == m->ns)
            continue;
        m->med[si][fi][aware] = strtod(fd[6], NULL);
        m->alpha_us[si] = strtod(fd[13], NULL);
    }
    fclose(f);
    return 0;
}

/* --arrival: per size, adaptive with its measured threshold, or the
 * balanced algorithm where the aware one never wins; their number, -1 if
 * the measurement failed, -2 if weft bench refused its options. */
static int tune_arrival(const tune_opts_t *o, winner_t *w, int max)
{
    char npbuf[24], csv[24];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)o->np);
    char *bargv[] = {"bench", "allreduce", "--np", npbuf, "--algo",
                     "recursive_doubling,rabenseifner,pap_leader,pap_chain", "--sizes",
                     (char *)o->sizes, "--mif", (char *)o->arrival};
    int rc = bench_into_csv(bargv, 10, false, csv);
    if (rc < 0)
        return -1;
    static arrival_meas_t m;
    memset(&m, 0, sizeof m);
    if (rc || read_arrival_csv(csv, &m)) {
        unlink(csv);
        fprintf(stdout, "weft tune: the measurement failed (weft bench exited %d)\n", rc);
        return rc == 2 ? -2 : -1;
    }
    unlink(csv);
    int ord[ARR_FACTORS]; /* the factors ascending */
    for (int i = 0; i < m.nf; i++)
        ord[i] = i;
    for (int i = 1; i < m.nf; i++)
        for (int j = i; j > 0 && m.factor[ord[j]] < m.factor[ord[j - 1]]; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = t;
        }
    /* the expected spread of P draws uniform in [0, X alpha]: (P-1)/(P+1) */
    double P = (double)o->np, spread = (P - 1) / (P + 1);
    int n = 0;
    for (int si = 0; si < m.ns && n < max; si++) {
        int cross = -1;
        for (int k = 0; k < m.nf && cross < 0; k++) {
            const double *v = m.med[si][ord[k]];
            if (v[0] >= 0 && v[1] >= 0 && v[1] < v[0])
                cross = k;
        }
        winner_t *x = &w[n++];
        x->bytes = m.bytes[si];
        if (cross < 0) {
            snprintf(x->algo, sizeof x->algo, "%s",
                     m.bytes[si] <= 65536 ? "recursive_doubling" : "rabenseifner");
            x->med = m.med[si][ord[0]][0];
            continue;
        }
        double at = cross ? (m.factor[ord[cross - 1]] + m.factor[ord[cross]]) / 2 : 0;
        snprintf(x->algo, sizeof x->algo, "adaptive/threshold=%ld",
                 lround(at * m.alpha_us[si] * spread));
        x->med = m.med[si][ord[cross]][1];
    }
    return n;
}

/* what one simulation in weft tune --by sim may take: a chunk count
 * beyond it is not tried, an algorithm beyond it at its default is left
 * out */
static const sim_opts_t tune_limits = {.max_events = 20000000u, .max_bytes = 4ull << 30,
                                       .max_seconds = 30};

typedef struct {
    const sim_model_t *m;
    const algo_t *al;
    int P;
    uint64_t bytes;
    weft_dtype_t dt;
    int op;
} tune_point_t;

/* The predicted time (ns) with k chunks, or -1. */
static double predict_chunks(void *ctx, int k)
{
    const tune_point_t *p = ctx;
    char params[32], why[256];
    snprintf(params, sizeof params, "chunks=%d", k);
    sim_result_t r;
    return sim_predict(p->m, p->al, params, p->P, p->bytes, p->dt, p->op, 0, false, &tune_limits, &r,
                       why, sizeof why) ? -1 : r.t_max;
}

/* --by sim: the fastest prediction per size (chunk counts searched for the
 * pipelined algorithms); their number, or -1. */
static int tune_simulate(const tune_opts_t *o, winner_t *w, int max, char *mname, size_t mlen)
{
    sim_model_t m;
    char msg[512];
    if (sim_model_for_tools(o->preset, &m, mname, mlen, msg, sizeof msg)) {
        fprintf(stderr, "weft tune: --preset: %s\n", msg);
        return -2;
    }
    bench_opts_t sz; /* the size list, read as weft bench reads it */
    char *bargv[] = {"bench", (char *)o->coll_name, "--sizes", (char *)o->sizes, NULL};
    if (bench_parse(4, bargv, &sz))
        return -2;
    weft_dtype_t dt = o->noncomm ? WEFT_UINT64 : WEFT_FLOAT32;
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = o->coll, a.nrank = (int)o->np, a.esize = weft_dtype_size(dt);
    a.commutative = !o->noncomm, a.shared_board = false;
    size_t nt;
    const algo_t *t = algo_table(&nt);
    int n = 0;
    for (int s = 0; s < sz.nsizes && n < max; s++) {
        a.count = sz.sizes[s] / a.esize;
        winner_t *cur = &w[n];
        cur->bytes = a.count * a.esize, cur->med = -1, cur->algo[0] = '\0';
        for (size_t i = 0; i < nt; i++) {
            char why[256];
            if (t[i].coll != o->coll || t[i].board || algo_usable_why(&t[i], &a, why, sizeof why))
                continue;
            tune_point_t p = {&m, &t[i], a.nrank, cur->bytes, dt, o->noncomm ? OP_AFFINE : WEFT_SUM};
            int k = 0;
            double ns;
            if (strstr(t[i].params, "chunks")) {
                uint64_t kmax = a.count < 4096 ? (a.count ? a.count : 1) : 4096;
                ns = sim_search_chunks(predict_chunks, &p, (int)kmax, &k);
            } else {
                sim_result_t r;
                ns = sim_predict(&m, &t[i], NULL, a.nrank, cur->bytes, dt, p.op, 0, false,
                                 &tune_limits, &r, why, sizeof why) ? -1 : r.t_max;
            }
            if (ns >= 0 && (cur->med < 0 || ns / 1e3 < cur->med)) {
                cur->med = ns / 1e3;
                if (k)
                    snprintf(cur->algo, sizeof cur->algo, "%s/chunks=%d", t[i].name, k);
                else
                    snprintf(cur->algo, sizeof cur->algo, "%s", t[i].name);
            }
        }
        if (cur->med >= 0) {
            fprintf(stderr, "weft tune: %llu B: %s, %.2f us predicted\n",
                    (unsigned long long)cur->bytes, cur->algo, cur->med);
            n++;
        }
    }
    return n;
}

/* The table's rows: a run of sizes the same algorithm won is one row,
 * from just above the midpoint with the previous size to the midpoint
 * with the next. */
static void write_rows(FILE *f, const tune_opts_t *o, const winner_t *w, int n, const char *np)
{
    const char *ops = o->coll == WEFT_COLL_BCAST ? "any" : o->noncomm ? "noncommutative"
                                                                       : "commutative";
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && !strcmp(w[j + 1].algo, w[i].algo))
            j++;
        uint64_t lo = i == 0 ? 0 : (w[i - 1].bytes + w[i].bytes) / 2 + 1;
        char hi[24], range[64];
        if (j == n - 1)
            snprintf(hi, sizeof hi, "*");
        else
            snprintf(hi, sizeof hi, "%llu", (unsigned long long)((w[j].bytes + w[j + 1].bytes) / 2));
        snprintf(range, sizeof range, "%llu-%s", (unsigned long long)lo, hi);
        fprintf(f, "%-16s %-14s %-6s %-22s %-12s # %.2f us at %llu B", weft_coll_name(o->coll),
                ops, np, range, w[i].algo, w[i].med, (unsigned long long)w[i].bytes);
        if (j > i)
            fprintf(f, " .. %.2f us at %llu B", w[j].med, (unsigned long long)w[j].bytes);
        fprintf(f, "\n");
        i = j + 1;
    }
}

/* The table's version line and the comment that says how it was made. */
static void write_head(FILE *f, const tune_opts_t *o, const char *np, const char *mname)
{
    if (o->by_sim)
        fprintf(f, "weft-tuning 1\n# weft tune %s --np %s --sizes %s --by sim: fastest LogGOPS "
                   "prediction (preset %s, %s) per size\n", o->coll_name, np, o->sizes, mname,
                o->noncomm ? "uint64, a non-commutative op"
                           : o->coll == WEFT_COLL_BCAST ? "float32" : "float32 sum");
    else if (o->arrival)
        fprintf(f, "weft-tuning 1\n# weft tune allreduce --np %s --sizes %s --arrival %s: "
                   "adaptive where the arrival-aware algorithm won at some imbalance factor, "
                   "its threshold the spread (us) between the factors that bracket the win "
                   "(float32 sum; the figure: the aware one's median time inside there)\n",
                np, o->sizes, o->arrival);
    else
        fprintf(f, "weft-tuning 1\n# weft tune %s --np %s --sizes %s%s: fastest median of weft "
                   "bench (%s%s) per size\n", o->coll_name, np, o->sizes,
                o->fresh ? " --fresh" : "",
                o->noncomm                     ? "uint64, a non-commutative user op"
                : o->coll == WEFT_COLL_BCAST ? "float32"
                                               : "float32 sum",
                o->fresh ? ", inputs rewritten before each call" : "");
    fprintf(f, "# %-14s %-14s %-6s %-22s algorithm   # %s\n", "collective", "ops", "ranks",
            "bytes", o->by_sim ? "predicted" : "measured median");
}

int cmd_tune(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help"))
        return tune_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
    tune_opts_t o;
    int rc = tune_cli_parse(argc, argv, &o);
    if (rc)
        return rc;
    if (o.out && !tool_can_write(o.out)) {
        fprintf(stderr, "weft tune: cannot write %s: %s\n", o.out, strerror(errno));
        return 2;
    }
    winner_t w[64];
    char mname[256] = "";
    int n = o.by_sim    ? tune_simulate(&o, w, 64, mname, sizeof mname)
            : o.arrival ? tune_arrival(&o, w, 64)
                        : tune_measure(&o, w, 64);
    if (n == -2)
        return 2;
    if (n <= 0) {
        if (o.by_sim)
            fprintf(stdout, "weft tune: no algorithm could be simulated for these sizes\n");
        return 1;
    }
    FILE *f = o.out ? fopen(o.out, "w") : stdout;
    if (!f) {
        fprintf(stdout, "weft tune: cannot write %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    char npbuf[24];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)o.np);
    write_head(f, &o, npbuf, mname);
    write_rows(f, &o, w, n, npbuf);
    if (o.out) {
        fclose(f);
        printf("weft tune: wrote %s (load it with WEFT_TUNING_FILE=%s)\n", o.out, o.out);
    }
    return 0;
}
