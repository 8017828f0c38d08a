/* table.h — AUTO's tuning tables: rows from (collective, op class, ranks,
 * bytes) to algorithms in order of preference, in a versioned text format
 * (docs/TUNING.md).  The first row that matches a call and names an
 * algorithm that can serve it decides; a row whose algorithms cannot all
 * serve the call falls through to the next usable one in the row, then to
 * the built-in table, then to the first usable algorithm of the registry. */
#ifndef WEFT_TUNE_TABLE_H
#define WEFT_TUNE_TABLE_H

#include <stdint.h>

#include "../algo/algo.h"

enum { TUNE_OPS_ANY = 0, TUNE_OPS_COMMUTATIVE = 1, TUNE_OPS_NONCOMMUTATIVE = 2 };
enum { TUNE_P_ALL = 0, TUNE_P_POW2 = 1, TUNE_P_NOTPOW2 = 2 };
#define TUNE_CHOICES 4

typedef struct tune_choice {
    const algo_t *al;
    algo_params_t params;
    char text[64]; /* NAME[/k=v;..] as written */
} tune_choice_t;

typedef struct tune_row {
    weft_coll_t coll;
    int ops, pclass;
    uint64_t p_lo, p_hi, b_lo, b_hi; /* inclusive */
    int nchoice;
    tune_choice_t choice[TUNE_CHOICES];
    int line;
} tune_row_t;

typedef struct tune_table {
    char source[200]; /* a file name, or "the built-in table" */
    int nrows;
    tune_row_t *rows;
} tune_table_t;

/* Parses a table; WEFT_EINVAL naming source, line and field on bad input
 * (unknown version, collective, op class or algorithm, bad numbers,
 * unordered or overlapping ranges, parameters the algorithm refuses). */
WEFT_TOOL_API int tune_parse(const char *text, const char *source, tune_table_t *t);
WEFT_TOOL_API int tune_load_file(const char *path, tune_table_t *t);
WEFT_TOOL_API void tune_free(tune_table_t *t);

/* The bytes a call is looked up by: count x element size, times P for the
 * block collectives (reduce_scatter, allgather, scatter, gather). */
WEFT_TOOL_API uint64_t tune_bytes(const coll_args_t *a);

/* What the lookup saw, for `weft explain` and WEFT_VERBOSE. */
typedef void (*tune_trace_fn)(void *ctx, const tune_table_t *t, const tune_row_t *row,
                              const tune_choice_t *c, const char *why_not);

/* The decision for a call: the algorithm, its parameters, and the table
 * and row that decided (row NULL: the registry's first usable algorithm). */
typedef struct tune_pick {
    const algo_t *al;
    const algo_params_t *params;
    const tune_table_t *table;
    const tune_row_t *row;
    const char *text; /* the choice as the row writes it (NAME[/k=v;..]), or the name */
} tune_pick_t;

/* Looks the call up in the active tables (WEFT_TUNING_FILE's, then the
 * built-in rows for this CPU where every rank is on one machine, then the
 * built-in table).  trace, if not NULL, is told of every row that matched and
 * every choice passed over. */
WEFT_TOOL_API int tune_select(const coll_args_t *a, tune_trace_fn trace, void *ctx,
                              tune_pick_t *out);
/* The tables in use (file first; the file's is NULL without one or when it
 * did not load, and *file_error then says why; the CPU's rows are NULL on
 * a CPU without rows of its own). */
WEFT_TOOL_API void tune_active(const tune_table_t **file, const tune_table_t **cpu,
                               const tune_table_t **builtin, const char **file_error);

/* Whose built-in rows go before the built-in table: "amd" on AMD's CPUs,
 * else "generic" (none), unless WEFT_TUNING_CPU says amd, generic or auto.
 * tune_set_cpu changes it for the process (weft explain --cpu, tests;
 * before any call: ranks must agree); WEFT_EINVAL for another name. */
enum { TUNE_CPU_GENERIC = 0, TUNE_CPU_AMD = 1 };
WEFT_TOOL_API const char *tune_cpu(void);
WEFT_TOOL_API int tune_set_cpu(const char *name);

#endif
