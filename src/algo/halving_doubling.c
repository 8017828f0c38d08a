/* halving_doubling.c — the recursive halving / doubling family: recursive
 * doubling allreduce and allgather, recursive-halving reduce-scatter,
 * Rabenseifner's allreduce (the "BDE" algorithm: reduce-scatter by recursive
 * halving + allgather by recursive doubling) and Rabenseifner's reduce
 * (reduce-scatter + binomial gather).
 *
 * Sources: ring-and-halving-doubling-allreduce.txt §2.2 (BDE), Thakur,
 * Rabenseifner & Gropp 2005 "Optimization of collective communication
 * operations in MPICH".  For P not a power of two every algorithm here folds
 * first (fold_newrank in algo.h): of the first 2*rem ranks, each even one
 * hands its data to the odd one above it and sits out, the remaining P' =
 * 2^floor(lg P) ranks run the power-of-two algorithm, and the result is
 * handed back.  Blocks are assigned so that after the halving each newrank
 * owns one contiguous group of the output. */
#include <stdio.h>

#include "algo.h"

enum { TAG_FOLD = 0, TAG_UNFOLD = 1, TAG_STEP = 2 };

typedef struct fold {
    int P2, rem, nr; /* power-of-two size, extra ranks, my newrank or -1 */
} fold_t;

static fold_t fold_of(const coll_args_t *a)
{
    fold_t f;
    f.P2 = pow2_floor(a->nrank);
    f.rem = a->nrank - f.P2;
    f.nr = fold_newrank(a->rank, f.rem);
    return f;
}

/* The even rank of a folded pair hands its data to r + 1 and takes the
 * result back. */
static void sit_out(sched_t *s, int r, region_t give, region_t take)
{
    sched_send(s, r + 1, TAG_FOLD, give);
    sched_round(s);
    sched_recv(s, r + 1, TAG_UNFOLD, take);
}

/* Every other rank starts from its own input; the odd rank of a folded pair
 * adds its partner's (the lower rank's, so on the left). */
static void fold_in(sched_t *s, const fold_t *f, int r, region_t in, region_t work)
{
    sched_copy(s, in, work);
    sched_round(s);
    if (r < 2 * f->rem) {
        sched_recv_reduce(s, r - 1, TAG_FOLD, work, true);
        sched_round(s);
    }
}

static int lg2(int x)
{
    int l = 0;
    while ((1 << l) < x)
        l++;
    return l;
}

/* Recursive doubling on the whole vector.  The partner with the lower
 * newrank holds the lower ranks' contributions, so combining with it on the
 * left keeps rank order: non-commutative ops are fine and every rank
 * computes the same expression, hence identical results. */
int algo_rd_allreduce(sched_t *s, const coll_args_t *a)
{
    int r = a->rank;
    uint64_t n = a->count;
    fold_t f = fold_of(a);
    region_t out = reg(BUF_OUT, 0, n);
    if (f.nr < 0) {
        sit_out(s, r, reg(BUF_IN, 0, n), out);
        return 0;
    }
    fold_in(s, &f, r, reg(BUF_IN, 0, n), out);
    uint64_t tmp = sched_tmp(s, n);
    for (int mask = 1, k = 0; mask < f.P2; mask <<= 1, k++) {
        int pn = f.nr ^ mask, peer = fold_oldrank(pn, f.rem);
        sched_send(s, peer, TAG_STEP + (uint32_t)k, out);
        sched_recv(s, peer, TAG_STEP + (uint32_t)k, reg(BUF_TMP, tmp, n));
        sched_round(s);
        sched_reduce(s, reg(BUF_TMP, tmp, n), out, pn < f.nr);
        sched_round(s);
    }
    if (r < 2 * f.rem)
        sched_send(s, r - 1, TAG_UNFOLD, out);
    return 0;
}

/* Recursive halving over the P2 newranks of a vector of n elements whose
 * group g covers [goff(g), goff(g+1)).  Ends with newrank nr owning group nr
 * fully reduced in `work`.  Tags from `tag`.  from >= 0: buf holds nothing
 * yet and the vector starts in buffer `from` (at offset 0): the first step
 * sends from there and copies only what it keeps, which saves copying the
 * half it sends (a quarter of the memory traffic of a large allreduce at
 * P = 2). */
typedef uint64_t (*group_off_fn)(const void *ctx, int g);

static void halving(sched_t *s, const fold_t *f, int buf, uint64_t base, group_off_fn goff,
                    const void *ctx, uint32_t tag, int from)
{
    int lo = 0, hi = f->P2;
    for (int mask = f->P2 / 2; mask >= 1; mask >>= 1, tag++) {
        int pn = f->nr ^ mask, peer = fold_oldrank(pn, f->rem);
        int mid = lo + (hi - lo) / 2;
        int klo = (f->nr & mask) ? mid : lo, khi = (f->nr & mask) ? hi : mid;
        int slo = (f->nr & mask) ? lo : mid, shi = (f->nr & mask) ? mid : hi;
        uint64_t so = goff(ctx, slo), ko = goff(ctx, klo);
        region_t kept = reg(buf, base + ko, goff(ctx, khi) - ko);
        if (from >= 0 && mask == f->P2 / 2) {
            /* the first step reads the input where it is: only the kept
             * half is copied (and the reduce waits for that copy alone) */
            uint32_t c = sched_copy(s, reg(from, ko, kept.len), kept);
            sched_send(s, peer, tag, reg(from, so, goff(ctx, shi) - so));
            sched_depend(s, sched_recv_reduce(s, peer, tag, kept, pn < f->nr), c);
        } else {
            sched_send(s, peer, tag, reg(buf, base + so, goff(ctx, shi) - so));
            sched_recv_reduce(s, peer, tag, kept, pn < f->nr);
        }
        sched_round(s);
        lo = klo, hi = khi;
    }
}

/* Recursive doubling allgather of groups: newrank nr starts owning group nr
 * and ends with all of them.  from >= 0: group nr is not in buf yet but
 * at offset 0 of buffer `from` (an allgather's own block in its input):
 * the first step sends it from there and copies it into buf after the
 * posts, so that the send waits for no copy and a peer reading in place
 * (single copy) reads lines this core has not just written (2 ranks, 64
 * KiB blocks by single copy: 14.3 us sent from the output, 6.0 from the
 * input). */
static void doubling(sched_t *s, const fold_t *f, int buf, uint64_t base, group_off_fn goff,
                     const void *ctx, uint32_t tag, int from)
{
    for (int mask = 1; mask < f->P2; mask <<= 1, tag++) {
        int pn = f->nr ^ mask, peer = fold_oldrank(pn, f->rem);
        int mine = f->nr & ~(mask - 1), theirs = pn & ~(mask - 1);
        uint64_t mo = goff(ctx, mine), to = goff(ctx, theirs);
        region_t own = reg(buf, base + mo, goff(ctx, mine + mask) - mo);
        bool first_from = from >= 0 && mask == 1;
        sched_send(s, peer, tag, first_from ? reg(from, 0, own.len) : own);
        sched_recv(s, peer, tag, reg(buf, base + to, goff(ctx, theirs + mask) - to));
        if (first_from)
            sched_copy(s, reg(from, 0, own.len), own);
        sched_round(s);
    }
}

/* Groups as P2 near-equal blocks of n elements. */
typedef struct {
    uint64_t n;
    int P2;
} even_groups_t;

static uint64_t even_goff(const void *ctx, int g)
{
    const even_groups_t *e = ctx;
    return blk_off(e->n, (uint64_t)e->P2, (uint64_t)g);
}

/* Groups as the blocks of the real ranks behind each newrank (two blocks of
 * c elements for a folded pair, one otherwise). */
typedef struct {
    uint64_t c;
    int rem;
} rank_groups_t;

static uint64_t rank_goff(const void *ctx, int g)
{
    const rank_groups_t *rg = ctx;
    uint64_t first = g < rg->rem ? 2 * (uint64_t)g : (uint64_t)(g + rg->rem);
    return first * rg->c;
}

static void rabenseifner_whole(sched_t *s, const coll_args_t *a, uint64_t n)
{
    int r = a->rank;
    fold_t f = fold_of(a);
    region_t out = reg(BUF_OUT, 0, n);
    if (f.nr < 0) {
        sit_out(s, r, reg(BUF_IN, 0, n), out);
        return;
    }
    even_groups_t g = {n, f.P2};
    if (r < 2 * f.rem || f.P2 == 1) { /* folded in: the vector is in out */
        fold_in(s, &f, r, reg(BUF_IN, 0, n), out);
        halving(s, &f, BUF_OUT, 0, even_goff, &g, TAG_STEP, -1);
    } else {
        halving(s, &f, BUF_OUT, 0, even_goff, &g, TAG_STEP, BUF_IN);
    }
    doubling(s, &f, BUF_OUT, 0, even_goff, &g, TAG_STEP + (uint32_t)lg2(f.P2), -1);
    if (r < 2 * f.rem)
        sched_send(s, r - 1, TAG_UNFOLD, out);
}

/* Rabenseifner on segments (segment=BYTES): the vector is cut into
 * segments of at most that many bytes, each reduced by the whole algorithm
 * in turn, segment j + 1 once this rank is done with segment j.  What a
 * step writes is then read again by the next step while it is still in the
 * shared cache: unsegmented, the halving's result region outgrows the L3
 * from a few MiB per rank and every later pass over it comes from memory.
 * The price is 2 lg P messages per segment instead of per call. */

/* The segments a call is cut into: 1 when the param is unset. */
static uint64_t segments_of(const coll_args_t *a)
{
    return a->params.segment ? pieces_of(a->count, a->esize, a->params.segment) : 1;
}

int algo_rabenseifner_usable(const coll_args_t *a, char *why, size_t len)
{
    uint64_t k = segments_of(a);
    if (k > PIECES_MAX) {
        snprintf(why, len, "allreduce rabenseifner: segment=%llu bytes cuts %llu elements of "
                 "%zu bytes into %llu segments; at most %d",
                 (unsigned long long)a->params.segment, (unsigned long long)a->count, a->esize,
                 (unsigned long long)k, PIECES_MAX);
        return -1;
    }
    return 0;
}

int algo_rabenseifner_allreduce(sched_t *s, const coll_args_t *a)
{
    uint64_t k = segments_of(a);
    if (k > PIECES_MAX)
        return WEFT_EINVAL; /* usable() said why before any build */
    if (k == 1) {
        rabenseifner_whole(s, a, a->count);
        return 0;
    }
    tagspace_t outer = sched_space(s);
    /* a caller composing this one may have remapped the buffers already */
    uint8_t in_buf = s->remap_buf[BUF_IN], out_buf = s->remap_buf[BUF_OUT];
    uint64_t in_off = s->remap_off[BUF_IN], out_off = s->remap_off[BUF_OUT];
    for (uint64_t j = 0; j < k; j++) {
        uint64_t lo = a->count * j / k, hi = a->count * (j + 1) / k;
        sched_part(s, outer, (unsigned)j, (unsigned)k);
        sched_remap(s, BUF_IN, in_buf, in_off + lo);
        sched_remap(s, BUF_OUT, out_buf, out_off + lo);
        rabenseifner_whole(s, a, hi - lo);
        sched_round(s);
    }
    sched_remap(s, BUF_IN, in_buf, in_off);
    sched_remap(s, BUF_OUT, out_buf, out_off);
    sched_space_restore(s, outer);
    return 0;
}

int algo_rhalving_reduce_scatter(sched_t *s, const coll_args_t *a)
{
    int r = a->rank, P = a->nrank;
    uint64_t c = a->count, all = (uint64_t)P * c;
    fold_t f = fold_of(a);
    if (f.nr < 0) {
        sit_out(s, r, reg(BUF_IN, 0, all), reg(BUF_OUT, 0, c));
        return 0;
    }
    uint64_t w = sched_tmp(s, all);
    rank_groups_t g = {c, f.rem};
    if (r < 2 * f.rem || f.P2 == 1) { /* folded in: the vector is in scratch */
        fold_in(s, &f, r, reg(BUF_IN, 0, all), reg(BUF_TMP, w, all));
        halving(s, &f, BUF_TMP, w, rank_goff, &g, TAG_STEP, -1);
    } else { /* the first step sends from the input, as rabenseifner's */
        halving(s, &f, BUF_TMP, w, rank_goff, &g, TAG_STEP, BUF_IN);
    }
    if (r < 2 * f.rem)
        sched_send(s, r - 1, TAG_UNFOLD, reg(BUF_TMP, w + (uint64_t)(r - 1) * c, c));
    sched_copy(s, reg(BUF_TMP, w + (uint64_t)r * c, c), reg(BUF_OUT, 0, c));
    return 0;
}

int algo_rd_allgather(sched_t *s, const coll_args_t *a)
{
    int r = a->rank, P = a->nrank;
    uint64_t c = a->count, all = (uint64_t)P * c;
    fold_t f = fold_of(a);
    if (f.nr < 0) {
        sit_out(s, r, reg(BUF_IN, 0, c), reg(BUF_OUT, 0, all));
        return 0;
    }
    rank_groups_t g = {c, f.rem};
    /* a folded pair's kept rank starts from two blocks; any other from its
     * own block alone, which the doubling sends from the input */
    bool from_input = r >= 2 * f.rem && f.P2 > 1;
    if (!from_input) {
        sched_copy(s, reg(BUF_IN, 0, c), reg(BUF_OUT, (uint64_t)r * c, c));
        if (r < 2 * f.rem)
            sched_recv(s, r - 1, TAG_FOLD, reg(BUF_OUT, (uint64_t)(r - 1) * c, c));
        sched_round(s);
    }
    doubling(s, &f, BUF_OUT, 0, rank_goff, &g, TAG_STEP, from_input ? BUF_IN : -1);
    if (r < 2 * f.rem)
        sched_send(s, r - 1, TAG_UNFOLD, reg(BUF_OUT, 0, all));
    return 0;
}

/* Rabenseifner's reduce: reduce-scatter by recursive halving, then a
 * binomial gather of the P2 groups towards the root's newrank (or, when the
 * root sat out of the fold, towards its partner, which forwards the whole
 * result).  Blocks stay at their own offsets in the work vector, so the
 * gather needs no rotation; a subtree's range wraps at most once and is
 * then sent as two messages. */
int algo_rsg_reduce(sched_t *s, const coll_args_t *a)
{
    int r = a->rank, root = a->root;
    uint64_t n = a->count;
    fold_t f = fold_of(a);
    if (f.nr < 0) {
        sched_send(s, r + 1, TAG_FOLD, reg(BUF_IN, 0, n));
        if (r == root) {
            sched_round(s);
            sched_recv(s, r + 1, TAG_UNFOLD, reg(BUF_OUT, 0, n));
        }
        return 0;
    }
    int work = r == root ? BUF_OUT : BUF_TMP;
    uint64_t w = work == BUF_TMP ? sched_tmp(s, n) : 0;
    even_groups_t g = {n, f.P2};
    if (r < 2 * f.rem || f.P2 == 1) { /* folded in: the vector is in work */
        fold_in(s, &f, r, reg(BUF_IN, 0, n), reg(work, w, n));
        halving(s, &f, work, w, even_goff, &g, TAG_STEP, -1);
    } else {
        halving(s, &f, work, w, even_goff, &g, TAG_STEP, BUF_IN);
    }
    int root_nr = fold_newrank(root, f.rem);
    int t = root_nr >= 0 ? root_nr : fold_newrank(root + 1, f.rem);
    int vr = mod(f.nr - t, f.P2);
    uint32_t tag = TAG_STEP + 2 * (uint32_t)lg2(f.P2);
    for (int mask = 1; mask < f.P2; mask <<= 1, tag += 2) {
        int lo, cnt, peer_vr;
        bool sending = vr & mask;
        if (sending) {
            lo = vr, cnt = mask, peer_vr = vr - mask;
        } else if (vr + mask < f.P2) {
            lo = vr + mask, cnt = mask, peer_vr = vr + mask;
        } else {
            continue;
        }
        if (lo + cnt > f.P2)
            cnt = f.P2 - lo;
        int peer = fold_oldrank(mod(peer_vr + t, f.P2), f.rem);
        /* vranks [lo, lo+cnt) are groups (lo+t .. lo+cnt+t) mod P2 */
        int g0 = (lo + t) % f.P2, first = cnt < f.P2 - g0 ? cnt : f.P2 - g0;
        int parts[2][2] = {{g0, first}, {0, cnt - first}};
        for (int k = 0; k < 2; k++) {
            if (parts[k][1] == 0)
                continue;
            uint64_t o = even_goff(&g, parts[k][0]);
            region_t rg = reg(work, w + o, even_goff(&g, parts[k][0] + parts[k][1]) - o);
            if (sending)
                sched_send(s, peer, tag + (uint32_t)k, rg);
            else
                sched_recv(s, peer, tag + (uint32_t)k, rg);
        }
        sched_round(s);
        if (sending)
            break;
    }
    if (root_nr < 0 && f.nr == t)
        sched_send(s, root, TAG_UNFOLD, reg(work, w, n));
    return 0;
}
