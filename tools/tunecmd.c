/* tunecmd.c — `weft explain` (what AUTO picks for a call, the row that
 * decided, and every algorithm with why it can or cannot serve the call)
 * and `weft tune` (measure every algorithm with `weft bench` and write a
 * tuning table of the winners, docs/TUNING.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "tool.h"
#include "tune/table.h"

static bool parse_u64(const char *s, uint64_t *out)
{
    const char *e = size_prefix(s, out);
    return e && !*e;
}

/* ---- weft explain ---- */

static void show_trace(void *ctx, const tune_table_t *t, const tune_row_t *row,
                       const tune_choice_t *c, const char *why_not)
{
    if (why_not)
        printf("  passed over %s (%s, line %d): %s\n", c->text, t->source, row->line, why_not);
}

static int explain_usage(FILE *f, int rc)
{
    fprintf(f, "usage: weft explain COLL --np P --size BYTES [--op OP|noncommutative]\n"
               "                    [--dtype T] [--table FILE]\n"
               "What AUTO picks for a call of BYTES per rank (count x element size; K, M, G\n"
               "allowed), the tuning-table row that decided, and every algorithm of COLL\n"
               "with why it can or cannot serve the call.  --table FILE reads FILE as\n"
               "WEFT_TUNING_FILE would.\n");
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help"))
        return explain_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
    weft_coll_t coll = coll_from_name(argv[1]);
    if (coll == WEFT_COLL_COUNT) {
        fprintf(stderr, "weft explain: unknown collective '%s'\n", argv[1]);
        return 2;
    }
    uint64_t np = 0, size = 0;
    int dt = WEFT_FLOAT32, op = WEFT_SUM;
    bool noncomm = false, have_size = false;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return fprintf(stderr, "weft explain: %s needs a value\n", k), 2;
        i++;
        if (!strcmp(k, "--np")) {
            if (!parse_u64(v, &np) || np < 1 || np > (1u << 24))
                return fprintf(stderr, "weft explain: --np %s: want 1 to 2^24 ranks\n", v), 2;
        } else if (!strcmp(k, "--size")) {
            if (!parse_u64(v, &size) || size > (1ull << 40))
                return fprintf(stderr, "weft explain: --size %s: want bytes, 0 to 2^40\n", v), 2;
            have_size = true;
        } else if (!strcmp(k, "--dtype")) {
            if ((dt = dtype_from_name(v)) < 0)
                return fprintf(stderr, "weft explain: --dtype %s: unknown datatype\n", v), 2;
        } else if (!strcmp(k, "--op")) {
            noncomm = !strcmp(v, "noncommutative");
            if (!noncomm && (op = op_from_name(v)) < 0)
                return fprintf(stderr, "weft explain: --op %s: want a builtin op or "
                                       "noncommutative (a user op)\n", v), 2;
        } else if (!strcmp(k, "--table")) {
            setenv("WEFT_TUNING_FILE", v, 1);
        } else {
            fprintf(stderr, "weft explain: unknown option %s\n", k);
            return explain_usage(stderr, 2);
        }
    }
    if (!np || !have_size)
        return fprintf(stderr, "weft explain: give --np P and --size BYTES\n"), 2;
    const tune_table_t *file, *builtin;
    const char *file_err;
    tune_active(&file, &builtin, &file_err);
    if (file_err) {
        fprintf(stderr, "weft explain: %s\n", file_err);
        return 2;
    }
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = coll;
    a.nrank = (int)np;
    a.esize = weft_dtype_size((weft_dtype_t)dt);
    a.count = size / a.esize;
    a.shared_board = true; /* as under weft run, whose shared memory has the board */
    bool reduces = coll_is_reduction(coll);
    a.commutative = !reduces || !noncomm;
    a.idempotent = reduces && !noncomm && op != WEFT_SUM && op != WEFT_PROD && op != WEFT_BXOR;
    a.invertible = reduces && !noncomm && (op == WEFT_SUM || op == WEFT_BXOR) &&
                   dt != WEFT_FLOAT32 && dt != WEFT_FLOAT64 && dt != WEFT_FLOAT16 &&
                   dt != WEFT_BFLOAT16;
    printf("weft explain %s: P=%d, %llu bytes per rank (%llu x %s)%s%s%s; looked up as %llu "
           "bytes\n", weft_coll_name(coll), a.nrank, (unsigned long long)(a.count * a.esize),
           (unsigned long long)a.count, weft_dtype_name((weft_dtype_t)dt),
           reduces ? ", op " : "", reduces ? (noncomm ? "a non-commutative user op"
                                                      : weft_op_name(op)) : "",
           reduces && !noncomm ? " (commutative)" : "", (unsigned long long)tune_bytes(&a));
    printf("tables: %s%s%s, then the built-in table (%d rows)\n",
           file ? file->source : "no WEFT_TUNING_FILE", file ? " " : "",
           file ? "(file)" : "", builtin->nrows);
    tune_pick_t p;
    if (tune_select(&a, show_trace, NULL, &p)) {
        printf("AUTO: nothing serves this call: %s\n", weft_last_error());
        return 1;
    }
    if (p.row)
        printf("AUTO picks %s: %s, line %d\n", p.al->name, p.table->source, p.row->line);
    else
        printf("AUTO picks %s: no row serves the call; the registry's first usable algorithm\n",
               p.al->name);
    printf("\n%-20s %-9s %s\n", "algorithm", "serves", "cost (a latency, b per byte, g per byte "
           "reduced; figures come from `weft bench`)");
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].coll != coll)
            continue;
        char why[256];
        bool ok = !algo_usable_why(&t[i], &a, why, sizeof why);
        printf("%-20s %-9s %s%s%s\n", t[i].name, ok ? "yes" : "no", ok ? t[i].cost : "",
               ok ? "" : "excluded: ", ok ? "" : why);
    }
    return 0;
}

/* ---- weft tune ---- */

typedef struct winner {
    uint64_t bytes;
    char algo[64];
    double med;
} winner_t;

/* The fastest algorithm per size from `weft bench --csv`'s file. */
static int read_winners(const char *csv, winner_t *w, int max)
{
    FILE *f = fopen(csv, "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *field[12];
        int nf = 0;
        for (char *save = NULL, *c = strtok_r(line, ",\n", &save); c && nf < 12;
             c = strtok_r(NULL, ",\n", &save))
            field[nf++] = c;
        if (nf < 7 || !strcmp(field[4], "auto") || !strcmp(field[4], "native"))
            continue;
        uint64_t bytes = strtoull(field[3], NULL, 10);
        double med = strtod(field[6], NULL);
        int k = 0;
        while (k < n && w[k].bytes != bytes)
            k++;
        if (k == n) {
            if (n == max)
                continue;
            w[n].bytes = bytes;
            w[n].med = med + 1;
            n++;
        }
        if (med < w[k].med) {
            w[k].med = med;
            snprintf(w[k].algo, sizeof w[k].algo, "%s", field[4]);
        }
    }
    fclose(f);
    return n;
}

static int tune_usage(FILE *f, int rc)
{
    fprintf(f, "usage: weft tune allreduce|bcast|reduce --np P [--sizes LO:HI|S1,S2,..]\n"
               "                 [--op commutative|noncommutative] [--out FILE]\n"
               "Runs `weft bench COLL --np P --algo all` and writes a tuning table\n"
               "(docs/TUNING.md) whose rows give, for P ranks, the fastest algorithm per\n"
               "size range; sizes between two measured ones go to the nearer.  The rows are\n"
               "for commutative ops, measured with float32 sum (the default), or with\n"
               "--op noncommutative for non-commutative ones, measured with a user op\n"
               "(weft bench --op noncommutative).  Load the table with WEFT_TUNING_FILE=FILE\n"
               "(tables for both op classes can be concatenated under one header line);\n"
               "calls it has no row for use the built-in table.\n");
    return rc;
}

int cmd_tune(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help"))
        return tune_usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
    const char *out = NULL, *sizes = "4:67108864", *opclass = "commutative";
    uint64_t np = 0;
    weft_coll_t coll = coll_from_name(argv[1]);
    if (coll != WEFT_COLL_ALLREDUCE && coll != WEFT_COLL_BCAST && coll != WEFT_COLL_REDUCE) {
        fprintf(stderr, "weft tune: '%s': weft bench measures allreduce, bcast and reduce\n",
                argv[1]);
        return 2;
    }
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 >= argc)
            return fprintf(stderr, "weft tune: %s needs a value\n", argv[i]), 2;
        if (!strcmp(argv[i], "--np")) {
            if (!parse_u64(argv[i + 1], &np) || np < 1 || np > 4096)
                return fprintf(stderr, "weft tune: --np %s: want 1 to 4096\n", argv[i + 1]), 2;
        } else if (!strcmp(argv[i], "--sizes")) {
            sizes = argv[i + 1];
        } else if (!strcmp(argv[i], "--out")) {
            out = argv[i + 1];
        } else if (!strcmp(argv[i], "--op")) {
            opclass = argv[i + 1];
            if (strcmp(opclass, "commutative") && strcmp(opclass, "noncommutative"))
                return fprintf(stderr, "weft tune: --op %s: want commutative or "
                                       "noncommutative\n", opclass), 2;
        } else {
            fprintf(stderr, "weft tune: unknown option %s\n", argv[i]);
            return tune_usage(stderr, 2);
        }
    }
    if (!np)
        return fprintf(stderr, "weft tune: give --np P\n"), 2;
    char csv[] = "/tmp/weft-tune-XXXXXX";
    int fd = mkstemp(csv);
    if (fd < 0)
        return fprintf(stderr, "weft tune: cannot make a temporary file: %s\n", strerror(errno)), 1;
    close(fd);
    char npbuf[24];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)np);
    bool noncomm = !strcmp(opclass, "noncommutative") && coll != WEFT_COLL_BCAST;
    char *bargv[] = {"bench", argv[1], "--np", npbuf, "--algo", "all", "--sizes", (char *)sizes,
                     "--csv", csv, noncomm ? "--op" : NULL, "noncommutative", NULL};
    int rc = cmd_bench(noncomm ? 12 : 10, bargv);
    winner_t w[64];
    int n = rc ? -1 : read_winners(csv, w, 64);
    unlink(csv);
    if (n <= 0) {
        fprintf(stdout, "weft tune: the measurement failed (weft bench exited %d)\n", rc);
        return 1;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stdout, "weft tune: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    fprintf(f, "weft-tuning 1\n# weft tune %s --np %s --sizes %s: fastest median of weft bench "
               "(%s) per size\n", argv[1], npbuf, sizes,
            noncomm ? "uint64, a non-commutative user op" : "float32 sum");
    fprintf(f, "# %-14s %-14s %-6s %-22s %s\n", "collective", "ops", "ranks", "bytes",
            "algorithm   # measured median");
    const char *ops = coll == WEFT_COLL_BCAST ? "any" : noncomm ? "noncommutative" : "commutative";
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && !strcmp(w[j + 1].algo, w[i].algo))
            j++;
        /* from just above the midpoint with the previous size to the
         * midpoint with the next */
        uint64_t lo = i == 0 ? 0 : (w[i - 1].bytes + w[i].bytes) / 2 + 1;
        char hi[24], range[64];
        if (j == n - 1)
            snprintf(hi, sizeof hi, "*");
        else
            snprintf(hi, sizeof hi, "%llu", (unsigned long long)((w[j].bytes + w[j + 1].bytes) / 2));
        snprintf(range, sizeof range, "%llu-%s", (unsigned long long)lo, hi);
        fprintf(f, "%-16s %-14s %-6s %-22s %-12s # %.2f us at %llu B", weft_coll_name(coll), ops,
                npbuf, range, w[i].algo, w[i].med, (unsigned long long)w[i].bytes);
        if (j > i)
            fprintf(f, " .. %.2f us at %llu B", w[j].med, (unsigned long long)w[j].bytes);
        fprintf(f, "\n");
        i = j + 1;
    }
    if (out) {
        fclose(f);
        printf("weft tune: wrote %s (load it with WEFT_TUNING_FILE=%s)\n", out, out);
    }
    return 0;
}
