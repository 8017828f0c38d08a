/* tool.h — shared pieces of the weft command-line tool. */
#ifndef WEFT_TOOL_H
#define WEFT_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

int cmd_check(int argc, char **argv);
int cmd_algorithms(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_dissem_tuple(int argc, char **argv);
int cmd_stress(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_pap(int argc, char **argv);
/* `weft bench`'s options (bench.c). */
typedef struct bench_opts {
    weft_coll_t coll;
    int np;
    char algos[4096]; /* "" for the summary table, "all", or a list */
    size_t sizes[64];
    int nsizes;
    int iters, warmup;
    int check;
    int osu; /* OSU's convention: each rank's mean, averaged over ranks */
    int back_to_back; /* the calls in a row, no barrier between: each rank's
                       * mean per call, averaged over ranks */
    int poll; /* each call as its *_timeout variant, polled at WEFT_TEST */
    /* --fresh: every rank rewrites what it contributes before each timed
     * call (outside the clock), as an application computes new data every
     * step: a peer that reads those bytes then finds them dirty in the
     * owner's cache, not still shared from the last iteration */
    int fresh;
    int arena; /* --mem weft: the buffers come from weft_alloc, not malloc */
    /* --inflight N: each iteration N split-phase calls started, each on
     * buffers of its own, and then waited for (as a data-parallel trainer
     * keeps its gradient buckets in flight); the figures are per round of
     * N.  1: one blocking call. */
    int inflight;
    const char *csv, *json;
    weft_dtype_t dtype;
    weft_op_t op;
    int op_given; /* --op was given (the allgather refuses it) */
    int root;
    const char *transport; /* NULL: a weft job of its own; "mpi"/"shm": under mpirun */
    /* --sync mpi|weft (NULL: mpi): under mpirun, whose barrier goes
     * before each timed call, the MPI library's or weft's (as under weft
     * run).  Where ranks share cores the order in which a barrier lets
     * them go decides much of a small call's figure, whichever library
     * makes the call. */
    const char *sync;
    /* --mif X,..: the imbalanced benchmark (process-arrival-pattern-aware-
     * collectives.txt, Listing 4.2): before each timed call a rank waits
     * r alpha(size), r uniform in [0, X], drawn once per rank or, with
     * --redraw, per call */
    double mif[16];
    int nmif;
    int redraw;
    /* --arrivals FILE: a recorded pattern instead (delays in us, a line of
     * one per rank per call, lines reused in turn) */
    const char *arrivals;
} bench_opts_t;
/* bench_opts.op for --op noncommutative: a user op (affine maps on uint64) */
#define OP_AFFINE (-2)
const char *bench_op_name(weft_op_t op);
/* 0 and *o, or 2 after saying on stderr what was wrong (1: --help). */
int bench_parse(int argc, char **argv, bench_opts_t *o);
/* A datatype or builtin op by name, -1 if none (bench.c). */
int dtype_from_name(const char *n);
int op_from_name(const char *n);
/* Is name one of the comma-separated items of list? */
bool name_in_list(const char *list, const char *name);
/* A list of numbers into out[0..*n), at most max: items separated by
 * commas, each N or a range LO:HI (doubling from LO), LO:HI:xK (times K)
 * or LO:HI:+K (plus K), numbers with an optional K, M or G; every value
 * in [lo_ok, hi_ok].  0, or -1 with why filled. */
int number_list(const char *s, uint64_t *out, int max, int *n, uint64_t lo_ok, uint64_t hi_ok,
                char *why, size_t len);
/* Whether a file the command will write at its end (a table, a preset, a
 * plot) can be written, asked before the minutes of work that fill it:
 * opened for appending, which truncates nothing, and removed again if
 * this made it.  errno says why not. */
bool tool_can_write(const char *path);
/* Starts np ranks of this very executable running `weft CMD ARGS...`
 * (argv[0] is CMD's name as typed); returns the job's exit status. */
int launch_self(int np, const char *cmd, int argc, char **argv);

/* elem.c: element i of a buffer of dt, as a number.  Integers are kept
 * as elem_wrap gives them: cut to the type's width, sign- or zero-extended. */
bool elem_is_float(weft_dtype_t dt);
int64_t elem_wrap(int64_t v, weft_dtype_t dt);
void elem_put_int(void *buf, size_t i, weft_dtype_t dt, int64_t v);
void elem_put_float(void *buf, size_t i, weft_dtype_t dt, double v);
int64_t elem_get_int(const void *buf, size_t i, weft_dtype_t dt);
double elem_get_float(const void *buf, size_t i, weft_dtype_t dt);
/* acc (op) v for a builtin op on integers held as elem_wrap gives them:
 * sums and products wrap, min/max compare as dt does. */
uint64_t elem_combine_int(weft_op_t op, weft_dtype_t dt, uint64_t acc, uint64_t v);

#endif
