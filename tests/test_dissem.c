/* test_dissem.c — n-way dissemination against butterfly-split-phase-
 * allreduce.txt, single process, through the symbolic checker:
 *
 *  - Table I: 2-way dissemination on 9 and on 8 ranks, which partial results
 *    each rank receives in each round and what they contain (on 8 ranks
 *    x_p ends up in rank p's result twice);
 *  - Figure 3: the adapted algorithm on 8 ranks, where rank 2 sends rank 0
 *    only S' = x_2 o x_1 in the last round;
 *  - equation (8): for P <= 1024 and n = 1..6, dissem_tuple() finds a tuple
 *    exactly when a brute-force search of the equation as the seed writes
 *    it (plus the base border and P = (n+1)^k) does, every tuple it reports
 *    satisfies the equation of its case, and the P with no tuple for any
 *    n in 1..6 are the ones docs/ALGORITHMS.md lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "sched/check.h"

#include "testing.h"

/* ---- tracing the checker ---- */

#define MAXP 16
#define MAXT 8

typedef struct {
    int n; /* transfers into each rank, in receive-step order */
    uint32_t step[MAXT];
    int from[MAXT];
    uint64_t set[MAXT]; /* contributor bits (P <= 64) */
} inbox_t;

typedef struct {
    const algo_t *al;
    coll_args_t a;
    inbox_t box[MAXP];
} trace_t;

static int build(void *ctx, int rank, sched_t *builder, sched_img_t **out)
{
    trace_t *t = ctx;
    coll_args_t a = t->a;
    a.rank = rank;
    return algo_build_with(t->al, &a, builder, out);
}

static void on_transfer(void *ctx, int from, int to, uint32_t to_step, uint64_t len,
                        const uint64_t *bits)
{
    (void)len;
    inbox_t *b = &((trace_t *)ctx)->box[to];
    if (b->n == MAXT)
        return;
    int i = b->n++;
    while (i > 0 && b->step[i - 1] > to_step) { /* keep receive-step order */
        b->step[i] = b->step[i - 1], b->from[i] = b->from[i - 1], b->set[i] = b->set[i - 1];
        i--;
    }
    b->step[i] = to_step, b->from[i] = from, b->set[i] = bits[0];
}

/* Runs the checker over algorithm `name` with fan-out 2; returns its code. */
static int trace_run(trace_t *t, const char *name, int P, bool idempotent, char *msg, size_t len)
{
    memset(t, 0, sizeof *t);
    t->al = algo_find(WEFT_COLL_ALLREDUCE, name);
    t->a.coll = WEFT_COLL_ALLREDUCE;
    t->a.nrank = P;
    t->a.count = 1;
    t->a.esize = 8;
    t->a.commutative = true;
    t->a.idempotent = idempotent;
    t->a.params.fanout = 2;
    check_spec_t sp = {.coll = WEFT_COLL_ALLREDUCE, .nrank = P, .count = 1,
                       .idempotent = idempotent, .on_transfer = on_transfer, .trace_ctx = t};
    return sched_check(&sp, build, t, msg, len, NULL);
}

static uint64_t bits_of(const int *r, int n)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++)
        b |= 1ull << r[i];
    return b;
}

/* Table I as the seed prints it: row p is S_1^p = x_p o x_a o x_b and
 * S_2^p = S_1^p o S_1^c o S_1^d, written {a, b, c, d}. */
static const int table9[9][4] = {{8, 7, 6, 3}, {0, 8, 7, 4}, {1, 0, 8, 5}, {2, 1, 0, 6}, {3, 2, 1, 7},
                                 {4, 3, 2, 8}, {5, 4, 3, 0}, {6, 5, 4, 1}, {7, 6, 5, 2}};
static const int table8[8][4] = {{7, 6, 5, 2}, {0, 7, 6, 3}, {1, 0, 7, 4}, {2, 1, 0, 5},
                                 {3, 2, 1, 6}, {4, 3, 2, 7}, {5, 4, 3, 0}, {6, 5, 4, 1}};

static void check_table(int P, const int (*tab)[4])
{
    trace_t *t = calloc(1, sizeof *t);
    char msg[512] = "";
    /* on 8 ranks the plain algorithm double-counts: the checker accepts it
     * only for an idempotent op */
    int rc = trace_run(t, "dissem", P, P == 8, msg, sizeof msg);
    CHECK(rc == 0, "dissem n=2 P=%d: %s", P, msg);
    for (int p = 0; p < P; p++) {
        const inbox_t *b = &t->box[p];
        const int *row = tab[p];
        CHECK(b->n == 4, "P=%d rank %d received %d partial results, Table I says 4", P, p, b->n);
        if (b->n != 4)
            continue;
        /* round 1: x_a and x_b */
        for (int j = 0; j < 2; j++)
            CHECK(b->from[j] == row[j] && b->set[j] == 1ull << row[j],
                  "P=%d rank %d round 1 piece %d: from %d, Table I: x_%d", P, p, j + 1,
                  b->from[j], row[j]);
        /* round 2: S_1^c and S_1^d, each x_c o x_{a_c} o x_{b_c} */
        for (int j = 2; j < 4; j++) {
            int c = row[j], s1[3] = {c, tab[c][0], tab[c][1]};
            CHECK(b->from[j] == c && b->set[j] == bits_of(s1, 3),
                  "P=%d rank %d round 2 piece %d: from %d set %#llx, Table I: S_1^%d", P, p,
                  j - 1, b->from[j], (unsigned long long)b->set[j], c);
        }
        /* S_2^p: how often each x_q is in it */
        int times[MAXP] = {0};
        times[p]++;
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < P; q++)
                times[q] += (int)(b->set[j] >> q & 1);
        int twice = 0, missing = 0;
        for (int q = 0; q < P; q++)
            twice += times[q] == 2, missing += times[q] == 0;
        if (P == 9)
            CHECK(!twice && !missing, "P=9 rank %d: every x_q exactly once", p);
        else /* equation (3): x_p is the one counted twice */
            CHECK(!missing && twice == 1 && times[p] == 2,
                  "P=8 rank %d: S_2 holds x_%d twice and nothing else twice", p, p);
    }
    free(t);
}

/* Figure 3: adapted, P = 8, n = 2 — rank 0 keeps x_0 o x_7 o x_6, then
 * gets S_1^5 = x_5 o x_4 o x_3 from rank 5 and S' = x_2 o x_1 from rank 2. */
static void check_figure3(void)
{
    trace_t *t = calloc(1, sizeof *t);
    char msg[512] = "";
    int rc = trace_run(t, "dissem_adapted", 8, false, msg, sizeof msg);
    CHECK(rc == 0, "dissem_adapted n=2 P=8 with a non-idempotent op: %s", msg);
    const inbox_t *b = &t->box[0];
    int s5[3] = {5, 4, 3}, sp[2] = {2, 1};
    CHECK(b->n == 4 && b->from[0] == 7 && b->from[1] == 6, "rank 0 round 1 from 7 and 6");
    CHECK(b->n == 4 && b->from[2] == 5 && b->set[2] == bits_of(s5, 3),
          "rank 0 round 2 gets S_1^5 = x5 x4 x3 from rank 5");
    CHECK(b->n == 4 && b->from[3] == 2 && b->set[3] == bits_of(sp, 2),
          "rank 0 round 2 gets S' = x2 x1 from rank 2 (set %#llx)",
          b->n == 4 ? (unsigned long long)b->set[3] : 0ull);
    free(t);
}

/* ---- equation (8) ---- */

static long ipow(long b, int e)
{
    long x = 1;
    while (e-- > 0)
        x *= b;
    return x;
}

/* n * sum_{i=0}^{l-2} (n+1)^i + j (n+1)^(l-1), the boundary term of (5)
 * and (6); 0 for l = 0 */
static long gterm(int n, int l, int j)
{
    if (l == 0)
        return 0;
    long sum = 0;
    for (int i = 0; i <= l - 2; i++)
        sum += ipow(n + 1, i);
    return n * sum + j * ipow(n + 1, l - 1);
}

static long eq8(int n, int k, int s, int ls, int lr, int js, int jr)
{
    return s * ipow(n + 1, k - 1) + gterm(n, ls, js) - gterm(n, lr, jr);
}

/* Is (P, n) adaptable, searching the seed's terms exhaustively? */
static bool brute_adaptable(int P, int n)
{
    if (P == 1)
        return true;
    int k = 0;
    while (ipow(n + 1, k) < P)
        k++;
    if (ipow(n + 1, k) == P)
        return true; /* plain dissemination is exact */
    for (int s = 1; s <= n; s++)
        for (int ls = 0; ls <= k - 1; ls++)
            for (int js = ls ? 1 : 0; js <= (ls ? n : 0); js++) {
                /* base border: g^s = g_B, i.e. P - 1 = s(n+1)^(k-1) + term */
                if (P - 1 == s * ipow(n + 1, k - 1) + gterm(n, ls, js))
                    return true;
                for (int lr = 0; lr <= k - 1; lr++)
                    for (int jr = lr ? 1 : 0; jr <= (lr ? n : 0); jr++)
                        if (eq8(n, k, s, ls, lr, js, jr) == P)
                            return true;
            }
    return false;
}

/* The P <= 1024 listed in docs/ALGORITHMS.md after the marker line. */
static int doc_list(int *out, int max)
{
    FILE *f = fopen(WEFT_SOURCE_DIR "/docs/ALGORITHMS.md", "r");
    if (!f)
        return -1;
    char line[4096];
    int n = 0, on = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "<!-- dissem-not-adaptable -->")) {
            on = 1;
            continue;
        }
        if (!on)
            continue;
        if (line[0] == '\n' || line[0] == '<')
            break;
        for (char *p = line; *p;) {
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p) {
                p++;
                continue;
            }
            if (n < max)
                out[n++] = (int)v;
            p = e;
        }
    }
    fclose(f);
    return on ? n : -1;
}

static void check_tuples(void)
{
    int none[1024], nnone = 0, bad = 0;
    for (int P = 1; P <= 1024; P++) {
        bool any = false;
        for (int n = 1; n <= 6; n++) {
            dissem_tuple_t t;
            bool mine = dissem_tuple(P, n, &t) == 0, brute = brute_adaptable(P, n);
            any |= mine;
            if (mine != brute && bad++ < 5)
                CHECK(false, "P=%d n=%d: dissem_tuple says %s, the brute-force search %s", P, n,
                      mine ? "adaptable" : "not", brute ? "adaptable" : "not");
            if (!mine || P == 1)
                continue;
            long m = ipow(n + 1, t.k - 1);
            bool holds;
            switch (t.kase) {
            case 0: holds = ipow(n + 1, t.k) == P; break;
            case 3: holds = (long)t.s * m == P && t.s <= n; break;
            case 6: holds = P - 1 == t.s * m + gterm(n, t.l_snd, t.j_snd); break;
            default:
                holds = eq8(n, t.k, t.s, t.l_snd, t.l_rcv, t.j_snd, t.j_rcv) == P &&
                        (t.kase != 1 || (t.l_rcv > 0 && t.l_snd > 0)) &&
                        (t.kase != 2 || (t.l_rcv > 0 && t.l_snd == 0)) &&
                        (t.kase != 4 || (t.l_rcv == 0 && t.l_snd == 1)) &&
                        (t.kase != 5 || (t.l_rcv == 0 && t.l_snd > 1));
            }
            /* and the schedule's view: the own window, nsend - 1 whole windows
             * and a part of one, minus the part taken out */
            holds &= t.m == m && (long)t.nsend * m + t.len_snd - t.len_rcv == P;
            if (!holds && bad++ < 5)
                CHECK(false, "P=%d n=%d: tuple (%d,%d,%d,%d,%d) case %d does not satisfy its "
                      "equation", P, n, t.s, t.l_snd, t.l_rcv, t.j_snd, t.j_rcv, t.kase);
        }
        if (!any)
            none[nnone++] = P;
    }
    CHECK(bad == 0, "%d disagreements between dissem_tuple and equation (8)", bad);
    printf("P <= 1024 with no tuple for any n in 1..6 (%d):", nnone);
    for (int i = 0; i < nnone; i++)
        printf(" %d", none[i]);
    printf("\n");
    int doc[1024];
    int nd = doc_list(doc, 1024);
    CHECK(nd >= 0, "docs/ALGORITHMS.md has no '<!-- dissem-not-adaptable -->' list");
    CHECK(nd == nnone && !memcmp(doc, none, (size_t)nnone * sizeof *none),
          "docs/ALGORITHMS.md lists %d values, the computation %d (or they differ)", nd, nnone);
}

int main(void)
{
    check_table(9, table9);
    check_table(8, table8);
    check_figure3();
    check_tuples();
    printf("test_dissem: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
