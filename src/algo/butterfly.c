/* butterfly.c — butterfly-like allreduces of butterfly-split-phase-allreduce.txt:
 *
 *   butterfly  Brooks' butterfly with virtual processes: P' = 2^ceil(lg P)
 *              virtual processes, virtual v >= P played by rank v - P (the
 *              seed's Figure 1); in round l virtual v exchanges its whole
 *              vector with v xor 2^l.  Virtual processes repeat contributions,
 *              so the op must be idempotent.
 *   pairwise   the pairwise exchange (PE): for P = 2^k + q the q leftover
 *              ranks (the last q) first hand their data to the first q, the
 *              2^k ranks run the butterfly, and the result goes back.  A
 *              leftover's data joins a low rank's: commutative ops.
 *   dissem     Hoefler's n-way dissemination (fanout=n, default 1):
 *              ceil(log_{n+1} P) rounds; in round l rank p sends its partial
 *              result to p + i(n+1)^l and receives from p - j(n+1)^l (mod P),
 *              i, j in 1..n.  Exact for idempotent ops, or when P = (n+1)^k
 *              (checked per call).
 * Each round posts its sends and receives, then reduces what arrived. */
#include <stdio.h>

#include "algo.h"

static int ceil_log(int P, int base)
{
    int l = 0;
    for (long x = 1; x < P; x *= base)
        l++;
    return l;
}

int algo_butterfly_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    int L = ceil_log(P, 2), V = 1 << L;
    int mine[2] = {r, r + P < V ? r + P : -1}; /* the virtual processes I play */
    region_t buf[2] = {reg(BUF_OUT, 0, n), reg(BUF_TMP, 0, 0)};
    region_t in[2];
    if (mine[1] >= 0)
        buf[1] = reg(BUF_TMP, sched_tmp(s, n), n);
    in[0] = reg(BUF_TMP, sched_tmp(s, n), n);
    in[1] = reg(BUF_TMP, sched_tmp(s, n), n);
    region_t swap = reg(BUF_TMP, sched_tmp(s, n), n);
    for (int m = 0; m < 2; m++)
        if (mine[m] >= 0)
            sched_copy(s, reg(BUF_IN, 0, n), buf[m]);
    sched_round(s);
    for (int l = 0; l < L; l++) {
        int local = -1; /* index of my virtual whose partner I also play */
        bool remote[2] = {false, false};
        for (int m = 0; m < 2; m++) {
            int v = mine[m];
            if (v < 0)
                continue;
            int w = v ^ (1 << l), owner = w < P ? w : w - P;
            if (owner == r) {
                if (v < w)
                    local = m;
                continue;
            }
            /* tags name the receiving virtual process */
            sched_send(s, owner, (uint32_t)(l * V + w), buf[m]);
            sched_recv(s, owner, (uint32_t)(l * V + v), in[m]);
            remote[m] = true;
        }
        if (local >= 0)
            sched_copy(s, buf[local], swap);
        sched_round(s);
        for (int m = 0; m < 2; m++)
            if (remote[m])
                sched_reduce(s, in[m], buf[m], false);
        if (local >= 0) { /* both virtual processes become the union */
            uint32_t x = sched_reduce(s, buf[1 - local], buf[local], false);
            uint32_t y = sched_reduce(s, swap, buf[1 - local], false);
            sched_depend(s, y, x);
        }
        sched_round(s);
    }
    return 0;
}

int algo_pairwise_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank;
    uint64_t n = a->count;
    int K = pow2_floor(P), q = P - K;
    region_t out = reg(BUF_OUT, 0, n);
    if (r >= K) { /* a leftover: hand over, take the result back */
        sched_send(s, r - K, 0, reg(BUF_IN, 0, n));
        sched_round(s);
        sched_recv(s, r - K, 1, out);
        return 0;
    }
    sched_copy(s, reg(BUF_IN, 0, n), out);
    sched_round(s);
    if (r < q) {
        sched_recv_reduce(s, r + K, 0, out, false);
        sched_round(s);
    }
    region_t tmp = reg(BUF_TMP, sched_tmp(s, n), n);
    for (int mask = 1, k = 0; mask < K; mask <<= 1, k++) {
        int peer = r ^ mask;
        sched_send(s, peer, 2 + (uint32_t)k, out);
        sched_recv(s, peer, 2 + (uint32_t)k, tmp);
        sched_round(s);
        sched_reduce(s, tmp, out, peer < r); /* lower ranks' data on the left */
        sched_round(s);
    }
    if (r < q)
        sched_send(s, r + K, 1, out);
    return 0;
}

static int fanout_of(const coll_args_t *a) { return a->params.fanout > 0 ? a->params.fanout : 1; }

int algo_dissem_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, r = a->rank, nf = fanout_of(a);
    uint64_t n = a->count;
    int L = ceil_log(P, nf + 1);
    region_t out = reg(BUF_OUT, 0, n);
    uint64_t t = sched_tmp(s, (uint64_t)nf * n);
    sched_copy(s, reg(BUF_IN, 0, n), out);
    sched_round(s);
    long d = 1;
    for (int l = 0; l < L; l++, d *= nf + 1) {
        for (int i = 1; i <= nf; i++) {
            int step = (int)((i * d) % P);
            if (step == 0)
                continue; /* that peer would be myself */
            uint32_t tag = (uint32_t)(l * (nf + 1) + i);
            sched_send(s, mod(r + step, P), tag, out);
            sched_recv(s, mod(r - step, P), tag, reg(BUF_TMP, t + (uint64_t)(i - 1) * n, n));
        }
        sched_round(s);
        uint32_t prev = SCHED_NONE;
        for (int i = 1; i <= nf; i++) {
            if ((i * d) % P == 0)
                continue; /* nothing came for i */
            uint32_t x = sched_reduce(s, reg(BUF_TMP, t + (uint64_t)(i - 1) * n, n), out, true);
            if (prev != SCHED_NONE)
                sched_depend(s, x, prev);
            prev = x;
        }
        sched_round(s);
    }
    return 0;
}

int algo_dissem_usable(const coll_args_t *a, char *why, size_t len)
{
    int nf = fanout_of(a);
    long x = 1;
    while (x < a->nrank)
        x *= nf + 1;
    if (a->idempotent || x == a->nrank)
        return 0;
    snprintf(why, len,
             "dissem needs an idempotent op for P=%d with n=%d (exact only when P is a power "
             "of n+1); use dissem_adapted, bruck or pairwise", a->nrank, nf);
    return -1;
}

/* Bruck & Ho's global combine for n ports (fanout=n), as the seed presents
 * it: with P - 1 = (a_{k-1} ... a_0) in base n+1, round l (digit a, most
 * significant first) keeps S[1], the combination of ranks p .. p+c (c+1 of
 * them), and S[0], that of p+1 .. p+c.  It sends S[1] to p - i(c+1) for
 * i = 1..a and S[0] to p - c - a(c+1) - (j-1)c for j = 1..n-a, receives the
 * same from p + i(c+1) and p + c + a(c+1) + (j-1)c, and adds everything
 * received to both; then c grows to c + a(c+1) + (n-a)c.  After
 * ceil(log_{n+1} P) rounds S[1] covers exactly P ranks: any (n, P), any
 * commutative op, each contribution once.  Empty S[0] (c = 0) is not sent. */
int algo_bruck_allreduce(sched_t *s, const coll_args_t *a)
{
    int P = a->nrank, p = a->rank, nf = fanout_of(a);
    uint64_t n = a->count;
    int digits[64], k = 0;
    for (int x = P - 1; x > 0; x /= nf + 1)
        digits[k++] = x % (nf + 1);
    region_t s1 = reg(BUF_OUT, 0, n), s0 = reg(BUF_TMP, sched_tmp(s, n), n);
    uint64_t t = sched_tmp(s, (uint64_t)nf * n);
    sched_copy(s, reg(BUF_IN, 0, n), s1);
    sched_round(s);
    long c = 0;
    bool s0_set = false;
    for (int l = 0; l < k; l++) {
        int dg = digits[k - 1 - l], nrecv = 0;
        for (int i = 1; i <= nf; i++) {
            bool full = i <= dg;
            if (!full && c == 0)
                continue; /* S[0] is still empty */
            long off = full ? (long)i * (c + 1) : c + (long)dg * (c + 1) + (long)(i - dg - 1) * c;
            uint32_t tag = (uint32_t)(l * (nf + 1) + i);
            sched_send(s, (int)(((long)p - off % P + P) % P), tag, full ? s1 : s0);
            sched_recv(s, (int)(((long)p + off) % P), tag, reg(BUF_TMP, t + (uint64_t)nrecv * n, n));
            nrecv++;
        }
        sched_round(s);
        /* add what arrived to both partial results (S[0] first, while S[1] is
         * still the old one: S[0] may start as a copy) */
        uint32_t prev0 = SCHED_NONE, prev1 = SCHED_NONE;
        for (int g = 0; g < nrecv; g++) {
            region_t in = reg(BUF_TMP, t + (uint64_t)g * n, n);
            uint32_t x = s0_set ? sched_reduce(s, in, s0, false) : sched_copy(s, in, s0);
            s0_set = true;
            if (prev0 != SCHED_NONE)
                sched_depend(s, x, prev0);
            prev0 = x;
            uint32_t y = sched_reduce(s, in, s1, false);
            if (prev1 != SCHED_NONE)
                sched_depend(s, y, prev1);
            prev1 = y;
        }
        sched_round(s);
        c = c + (long)dg * (c + 1) + (long)(nf - dg) * c;
    }
    return 0;
}
