/* select.c — AUTO: which algorithm serves a call when the user named none.
 *
 * The decision is a lookup in the tuning tables (table.h): the file named
 * by WEFT_TUNING_FILE, then the built-in rows for this CPU (where every
 * rank is on one machine), then the built-in table, then the registry's first
 * algorithm that can serve the call, so AUTO never picks an algorithm the
 * registry's properties forbid and never fails on a call some algorithm
 * serves.  WEFT_VERBOSE=1 prints each decision once per row (call shape),
 * on rank 0 of the communicator. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "table.h"

#define LOGGED_ROWS 512
static _Atomic unsigned char logged[3][LOGGED_ROWS];
static _Atomic unsigned char logged_fallback[WEFT_COLL_COUNT];

/* The choices passed over, "name: why; ..." */
typedef struct skipped {
    char text[600];
    size_t used;
} skipped_t;

static void note_skip(void *ctx, const tune_table_t *t, const tune_row_t *row,
                      const tune_choice_t *c, const char *why_not)
{
    skipped_t *s = ctx;
    if (why_not && s->used < sizeof s->text)
        s->used += (size_t)snprintf(s->text + s->used, sizeof s->text - s->used, "%s%s (%s, "
                                    "line %d): %s", s->used ? "; " : "", c->text, t->source,
                                    row->line, why_not);
}

static void log_once(const coll_args_t *a, const tune_pick_t *p)
{
    const tune_table_t *file, *cpu, *builtin;
    const char *err;
    tune_active(&file, &cpu, &builtin, &err);
    _Atomic unsigned char *flag;
    if (!p->row)
        flag = &logged_fallback[a->coll];
    else {
        int t = p->table == file ? 0 : p->table == cpu ? 1 : 2;
        int i = (int)(p->row - p->table->rows);
        flag = &logged[t][i % LOGGED_ROWS];
    }
    if (atomic_exchange(flag, 1))
        return;
    char where[260];
    if (p->row)
        snprintf(where, sizeof where, "%s, line %d", p->table->source, p->row->line);
    else
        snprintf(where, sizeof where, "no row serves it: the registry's first usable algorithm");
    skipped_t sk = {"", 0};
    tune_pick_t again;
    tune_select(a, note_skip, &sk, &again);
    fprintf(stderr, "weft: auto: %s, P=%d, %llu bytes, %s op: %s (%s)%s%s\n",
            weft_coll_name(a->coll), a->nrank, (unsigned long long)tune_bytes(a),
            a->commutative ? "commutative" : "non-commutative", p->text, where,
            sk.used ? "; passed over: " : "", sk.text);
}

const algo_t *select_algo(weft_comm_t comm, coll_args_t *a, bool own)
{
    unsigned opclass = a->commutative | a->idempotent << 1 | a->invertible << 2;
    auto_memo_t *m = &comm->auto_memo[a->coll];
    if (m->al && m->count == a->count && m->esize == a->esize && m->root == a->root &&
        m->opclass == opclass) {
        a->params = m->params;
        return m->al;
    }
    tune_pick_t p;
    if (tune_select(a, NULL, NULL, &p))
        return NULL;
    if (p.params)
        a->params = *p.params;
    /* weft's own calls (making a communicator) are not the program's: not
     * logged, which would spend the row's one line, nor kept, so that the
     * program's next call of that shape is logged */
    if (own)
        return p.al;
    if (a->rank == 0 && weft_verbose()) /* every rank decides alike */
        log_once(a, &p);
    m->count = a->count, m->esize = a->esize, m->root = a->root, m->opclass = opclass;
    m->al = p.al;
    m->params = a->params;
    snprintf(m->text, sizeof m->text, "%s", p.text);
    return p.al;
}
