/* dissemcmd.c — `weft dissem-tuple`: the 5-tuple (s, l_snd, l_rcv, j_snd,
 * j_rcv) that adapts n-way dissemination to P ranks (equation (8) of
 * butterfly-split-phase-allreduce.txt), what it makes the last round do,
 * or "not adaptable"; and the list of P for which no fan-out in a range
 * has a tuple. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "tool.h"

static const char *case_text(int kase)
{
    switch (kase) {
    case 0: return "P = (n+1)^k: plain dissemination, nothing to adapt";
    case 1: return "Theorem 1 case 1 (l_rcv, l_snd > 0)";
    case 2: return "Theorem 1 case 2 (l_rcv > 0, l_snd = 0)";
    case 3: return "Theorem 1 case 3 (l_rcv = l_snd = 0)";
    case 4: return "Theorem 1 case 4 (l_rcv = 0, l_snd = 1)";
    case 5: return "Theorem 1 case 5 (l_rcv = 0, l_snd > 1)";
    default: return "base border g_B (the note after Theorem 1's proof)";
    }
}

static void print_tuple(const dissem_tuple_t *t)
{
    printf("P=%d n=%d: %d round%s, window before the last round m=%ld\n", t->P, t->n, t->k,
           t->k == 1 ? "" : "s", t->m);
    if (t->k == 0) {
        printf("one rank: nothing to exchange\n");
        return;
    }
    if (t->kase == 0)
        printf("tuple: none needed; %s\n", case_text(0));
    else if (t->kase == 6)
        printf("tuple (s, l_snd, l_rcv, j_snd, j_rcv) = (%d, %d, B, %d, -): %s\n", t->s, t->l_snd,
               t->j_snd, case_text(6));
    else
        printf("tuple (s, l_snd, l_rcv, j_snd, j_rcv) = (%d, %d, %d, %d, %d): %s\n", t->s,
               t->l_snd, t->l_rcv, t->j_snd, t->j_rcv, case_text(t->kase));
    int nfull = t->len_snd == t->m ? t->nsend : t->nsend - 1;
    printf("last round: rank p sends");
    if (nfull) {
        printf(" its window of %ld rank%s to", t->m, t->m == 1 ? "" : "s");
        for (int i = 1; i <= nfull; i++)
            printf("%s p+%ld", i > 1 ? "," : "", (long)i * t->m);
    }
    if (t->len_snd < t->m)
        printf("%s its first %ld rank%s (stored when made) to p+%ld", nfull ? " and" : "",
               t->len_snd, t->len_snd == 1 ? "" : "s", (long)t->nsend * t->m);
    printf("\n");
    if (t->len_rcv)
        printf("then takes its own first %ld rank%s back out (inverse op, or recomputed "
               "without them)\n", t->len_rcv, t->len_rcv == 1 ? "" : "s");
    else
        printf("and takes nothing out\n");
}

static int parse_range(const char *s, int *lo, int *hi)
{
    char *e;
    long a = strtol(s, &e, 10), b = a;
    if (*e == ':')
        b = strtol(e + 1, &e, 10);
    if (*e || a < 1 || b < a || b > 1 << 20)
        return -1;
    *lo = (int)a, *hi = (int)b;
    return 0;
}

static int bad_number(const char *opt, const char *v)
{
    fprintf(stderr, "weft dissem-tuple: %s wants a number (or LO:HI), 1..1048576, not '%s'\n",
            opt, v);
    return 2;
}

int cmd_dissem_tuple(int argc, char **argv)
{
    int P = 0, nlo = 0, nhi = 0, none_upto = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help")) {
            printf("usage: weft dissem-tuple --np P [--fanout n]\n"
                   "       weft dissem-tuple --none-upto N [--fanout LO:HI]\n"
                   "The first prints the 5-tuple (s, l_snd, l_rcv, j_snd, j_rcv) adapting n-way\n"
                   "dissemination to P ranks and what the last round does, or 'not adaptable'\n"
                   "(exit status 1); without --fanout, for the smallest n that has one.  The\n"
                   "second lists the P <= N with no tuple for any n in LO..HI (default 1:6).\n");
            return 0;
        } else if (!strcmp(argv[i], "--np") && v) {
            if (parse_range(v, &P, &P))
                return bad_number(argv[i], v);
            i++;
        } else if (!strcmp(argv[i], "--fanout") && v) {
            if (parse_range(v, &nlo, &nhi))
                return bad_number(argv[i], v);
            i++;
        } else if (!strcmp(argv[i], "--none-upto") && v) {
            if (parse_range(v, &none_upto, &none_upto))
                return bad_number(argv[i], v);
            i++;
        } else {
            fprintf(stderr, "weft dissem-tuple: unknown argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (none_upto) {
        if (!nlo)
            nlo = 1, nhi = 6;
        int count = 0;
        printf("P <= %d with no tuple for any n in %d..%d:", none_upto, nlo, nhi);
        for (int p = 1; p <= none_upto; p++) {
            bool any = false;
            dissem_tuple_t t;
            for (int n = nlo; n <= nhi && !any; n++)
                any = dissem_tuple(p, n, &t) == 0;
            if (!any)
                printf(" %d", p), count++;
        }
        printf("\n%d values\n", count);
        return 0;
    }
    if (!P) {
        fprintf(stderr, "weft dissem-tuple: give --np P (see --help)\n");
        return 2;
    }
    if (nlo != nhi) {
        fprintf(stderr, "weft dissem-tuple: --fanout takes one n with --np\n");
        return 2;
    }
    int n = nlo ? nlo : dissem_auto_fanout(P);
    dissem_tuple_t t;
    if (dissem_tuple(P, n, &t)) {
        printf("P=%d n=%d: not adaptable (no 5-tuple solves equation (8)); smallest n that is: %d\n",
               P, n, dissem_auto_fanout(P));
        return 1;
    }
    print_tuple(&t);
    return 0;
}
