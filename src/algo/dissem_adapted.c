/* dissem_adapted.c — the n-way dissemination allreduce adapted to
 * non-idempotent ops, after butterfly-split-phase-allreduce.txt, Section
 * III.B: equation (8) and Theorem 1.
 *
 * Plain n-way dissemination (butterfly.c) ends with every rank holding
 * (n+1)^k contributions, some twice, unless P = (n+1)^k.  After round k-1
 * rank p holds the window W = x_p o x_{p-1} o ... of m = (n+1)^(k-1) ranks,
 * built as its own data followed by the partial results it received, in
 * order; the window lengths between those pieces are its data boundaries:
 *
 *     1 (own data), and (j+1)(n+1)^(l-1) for l = 1..k-1, j = 1..n,
 *
 * the same on every rank.  The adaptation finds boundaries on a sender and
 * on the receiver that make the last round add up to exactly P:
 *
 *     P = s' m + len_snd - len_rcv                                  (8)
 *
 * with s' - 1 senders p - i m sending their whole window, the last one
 * p - s' m sending only its first len_snd ranks (a boundary: it stored that
 * partial result when it made it), and the receiver taking its own first
 * len_rcv ranks (a boundary, or 0 = the base border g_B) back out: with the
 * op's exact inverse where it has one, else by keeping, from that boundary
 * on, a second accumulator that leaves them out.  In the seed's
 * notation (s, l_snd, l_rcv, j_snd, j_rcv) a boundary length L is
 * (j+1)(n+1)^(l-1), or l = 0 for one's own data; dissem_tuple() reports
 * which of Theorem 1's five cases (or the base-border note after its proof)
 * a tuple is.  Among the solutions it takes the fewest last-round messages,
 * then the smallest part to take out (none if possible). */
#include <stdatomic.h>
#include <stdio.h>

#include "algo.h"

static long ipow(long b, int e)
{
    long x = 1;
    while (e-- > 0)
        x *= b;
    return x;
}

/* Is L a boundary length for fan-out n after k-1 rounds?  Sets (l, j). */
static bool boundary_of(long L, int n, int k, int *l, int *j)
{
    if (L == 1) {
        *l = 0, *j = 0;
        return true;
    }
    long d = 1;
    for (int e = 0; e <= k - 2; e++, d *= n + 1) {
        if (L % d == 0 && L / d >= 2 && L / d <= n + 1) {
            *l = e + 1, *j = (int)(L / d) - 1;
            return true;
        }
    }
    return false;
}

int dissem_tuple(int P, int n, dissem_tuple_t *t)
{
    dissem_tuple_t z = {0};
    z.P = P, z.n = n;
    if (P < 1 || n < 1) {
        *t = z;
        return -1;
    }
    long m = 1;
    while (m * (n + 1) < P) /* m = (n+1)^(k-1) < P <= (n+1)^k */
        m *= n + 1, z.k++;
    z.k = P == 1 ? 0 : z.k + 1;
    z.m = m;
    if (P == 1) {
        *t = z;
        return 0;
    }
    /* Only s' with (s'+1) m >= P (each sender adds at most m) and
     * s' m <= P - 1 + m (what is taken out is at most m) can work. */
    long slo = (P + m - 1) / m - 1, shi = (P - 1) / m + 1;
    if (slo < 1)
        slo = 1;
    if (shi > n)
        shi = n;
    for (long s = slo; s <= shi; s++) {
        /* len_rcv in increasing order: 0, then the boundaries */
        for (int lr = -1; lr <= z.k - 1; lr++) {
            for (int jr = lr <= 0 ? 0 : 1; jr <= (lr <= 0 ? 0 : n); jr++) {
                long Lr = lr < 0 ? 0 : lr == 0 ? 1 : (jr + 1) * ipow(n + 1, lr - 1);
                long Ls = P - s * m + Lr;
                int ls, js;
                if (Ls < 1 || Ls > m || Lr > m || !boundary_of(Ls, n, z.k, &ls, &js))
                    continue;
                z.nsend = (int)s;
                z.len_snd = Ls;
                z.len_rcv = Lr;
                /* name it as the seed does */
                if (Lr == 0 && Ls == m) {
                    z.kase = s == n ? 0 : 3; /* case 3: s'+1 in the seed's count */
                    z.s = (int)s + 1;
                } else if (Lr == 0 && Ls <= n) {
                    z.kase = 4, z.s = (int)s, z.l_snd = 1, z.j_snd = (int)Ls;
                } else if (Lr == 0) {
                    z.kase = 6, z.s = (int)s, z.l_snd = ls, z.j_snd = js, z.l_rcv = -1;
                } else {
                    z.s = (int)s, z.l_snd = ls, z.j_snd = js, z.l_rcv = lr, z.j_rcv = jr;
                    z.kase = lr == 0 ? 5 : ls == 0 ? 2 : 1;
                }
                if (z.kase == 0)
                    z.s = n;
                *t = z;
                return 0;
            }
        }
    }
    *t = z;
    return -1;
}

/* The search runs on every call's usable() check, and for P in the
 * hundreds of thousands it takes tens of microseconds: the last answer is
 * kept (P << 32 | n, one atomic word, so threads need no lock). */
int dissem_auto_fanout(int P)
{
    static _Atomic uint64_t memo;
    uint64_t m = atomic_load_explicit(&memo, memory_order_relaxed);
    if (P > 0 && (int)(m >> 32) == P)
        return (int)(uint32_t)m;
    int found = 1;
    dissem_tuple_t t;
    for (int n = 1; n < P; n++)
        if (dissem_tuple(P, n, &t) == 0) {
            found = n;
            break;
        }
    if (P > 0)
        atomic_store_explicit(&memo, (uint64_t)P << 32 | (uint32_t)found, memory_order_relaxed);
    return found;
}

static int fanout_for(const coll_args_t *a)
{
    return a->params.fanout > 0 ? a->params.fanout : dissem_auto_fanout(a->nrank);
}

int algo_dissem_adapted_usable(const coll_args_t *a, char *why, size_t len)
{
    dissem_tuple_t t;
    int nf = fanout_for(a);
    if (dissem_tuple(a->nrank, nf, &t) == 0)
        return 0;
    char ok[96] = "";
    size_t used = 0;
    for (int n = 1, found = 0; n < a->nrank && found < 6 && used + 12 < sizeof ok; n++)
        if (dissem_tuple(a->nrank, n, &t) == 0)
            used += (size_t)snprintf(ok + used, sizeof ok - used, "%s%d", found++ ? ", " : "", n);
    snprintf(why, len,
             "dissem_adapted: P=%d is not adaptable with fanout=%d (no 5-tuple solves equation "
             "(8)); fan-outs that are: %s, or leave fanout unset to pick the smallest; bruck "
             "serves every (n, P)", a->nrank, nf, ok);
    return -1;
}

/* Where one rank's schedule keeps its data.  acc: the window received so
 * far; sp and rp: the partial results to send in round k and to take out
 * at the end (acc itself when the boundary is the whole window); slots:
 * the nf pieces a round receives. */
typedef struct {
    region_t out, acc, sp, rp;
    uint64_t slots, n;
    bool inverse; /* the tail is taken out with the op's inverse */
    bool tail;    /* no inverse: T, the pieces after the boundary, kept in out */
} da_bufs_t;

static region_t da_slot(const da_bufs_t *b, int i)
{
    return reg(BUF_TMP, b->slots + (uint64_t)i * b->n, b->n);
}

/* Lays out the buffers and copies the input into those the window starts
 * in (a boundary of one rank is the input itself). */
static void da_layout(sched_t *s, const dissem_tuple_t *t, int nf, bool invertible, uint64_t n,
                      da_bufs_t *b)
{
    region_t in = reg(BUF_IN, 0, n);
    b->n = n;
    b->out = reg(BUF_OUT, 0, n);
    b->inverse = t->len_rcv > 0 && invertible;
    b->tail = t->len_rcv > 0 && !b->inverse;
    b->acc = b->tail ? reg(BUF_TMP, sched_tmp(s, n), n) : b->out;
    b->sp = b->rp = b->acc;
    if (t->len_snd < t->m)
        b->sp = reg(BUF_TMP, sched_tmp(s, n), n);
    if (b->inverse)
        b->rp = reg(BUF_TMP, sched_tmp(s, n), n);
    b->slots = sched_tmp(s, (uint64_t)nf * n);
    sched_copy(s, in, b->acc);
    if (t->len_snd == 1 && t->len_snd < t->m)
        sched_copy(s, in, b->sp);
    if (b->inverse && t->len_rcv == 1)
        sched_copy(s, in, b->rp);
    sched_round(s);
}

/* Rounds 1..k-1, plain dissemination; the pieces are reduced in boundary
 * order, one after the other, so that a snapshot (sp, rp) sees exactly the
 * pieces before it, and with a tail, the pieces past the receive boundary
 * also go into T.  Whether T was set. */
static bool da_plain_rounds(sched_t *s, const dissem_tuple_t *t, int P, int p, int nf,
                            const da_bufs_t *b)
{
    long d = 1, have = 1; /* the window acc holds, in ranks */
    bool t_set = false;
    for (int l = 1; l < t->k; l++, d *= nf + 1) {
        for (int i = 1; i <= nf; i++) {
            uint32_t tag = (uint32_t)((l - 1) * (nf + 1) + i);
            sched_send(s, mod((int)(p + i * d % P), P), tag, b->acc);
            sched_recv(s, mod((int)(p - i * d % P), P), tag, da_slot(b, i - 1));
        }
        sched_round(s);
        uint32_t prev = SCHED_NONE;
#define CHAIN(x)                                                             \
    do {                                                                     \
        uint32_t x_ = (x);                                                   \
        if (prev != SCHED_NONE)                                              \
            sched_depend(s, x_, prev);                                       \
        prev = x_;                                                           \
    } while (0)
        for (int j = 1; j <= nf; j++) {
            region_t slot = da_slot(b, j - 1);
            bool after_rcv = b->tail && have >= t->len_rcv; /* this piece is past the boundary */
            CHAIN(sched_reduce(s, slot, b->acc, false));
            if (after_rcv) {
                CHAIN(t_set ? sched_reduce(s, slot, b->out, false) : sched_copy(s, slot, b->out));
                t_set = true;
            }
            have += d;
            if (have == t->len_snd && t->len_snd < t->m)
                CHAIN(sched_copy(s, b->acc, b->sp));
            if (b->inverse && have == t->len_rcv)
                CHAIN(sched_copy(s, b->acc, b->rp));
        }
#undef CHAIN
        sched_round(s);
    }
    return t_set;
}

/* One rank's schedule.  Rounds 1..k-1 are plain dissemination; the pieces
 * of the window arrive in boundary order (own data, then round 1's partial
 * results j = 1..n, ...), so a boundary is a point in that sequence, where
 * the partial result to send in round k (SP) or to take out later (RP) is
 * stored as it is made.  Without an inverse the receiver keeps T, the
 * product of the pieces after its boundary, in the output buffer, and the
 * window it sends lives in scratch. */
int algo_dissem_adapted_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, p = a->rank, nf = fanout_for(a);
    dissem_tuple_t t;
    if (dissem_tuple(P, nf, &t))
        return WEFT_EINVAL; /* usable() said why before any build */
    if (t.k == 0) {
        sched_copy(s, reg(BUF_IN, 0, a->count), reg(BUF_OUT, 0, a->count));
        return 0;
    }
    da_bufs_t b;
    da_layout(s, &t, nf, a->invertible, a->count, &b);
    bool t_set = da_plain_rounds(s, &t, P, p, nf, &b);
    /* round k: the whole window to nsend - 1 ranks, the stored part of it
     * to the last one */
    for (int i = 1; i <= t.nsend; i++) {
        uint32_t tag = (uint32_t)((t.k - 1) * (nf + 1) + i);
        long off = (long)i * t.m % P;
        sched_send(s, mod((int)(p + off), P), tag, i == t.nsend ? b.sp : b.acc);
        sched_recv(s, mod((int)(p - off), P), tag, da_slot(&b, i - 1));
    }
    sched_round(s);
    if (b.tail && !t_set)
        return WEFT_EINTERNAL; /* a boundary before the whole window leaves pieces after it */
    uint32_t prev = SCHED_NONE;
    if (b.inverse)
        prev = sched_reduce_inverse(s, b.rp, b.out);
    for (int i = 1; i <= t.nsend; i++) {
        uint32_t x = sched_reduce(s, da_slot(&b, i - 1), b.out, false);
        if (prev != SCHED_NONE)
            sched_depend(s, x, prev);
        prev = x;
    }
    return 0;
}
