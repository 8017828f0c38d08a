/* check.c — symbolic execution of all ranks' schedules (see check.h).
 *
 * Contributor sets are interned: each distinct set of ranks is stored once
 * and elements hold its id, so a buffer element costs 8 bytes whatever P is,
 * and combining two sets is a memoised table look-up (consecutive elements
 * of one block almost always combine the same pair, which a one-entry cache
 * catches before the hash table). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "layout.h"

typedef struct {
    int32_t idx;  /* position in the logical vector; -1 = uninitialised */
    uint32_t set; /* interned contributor set */
} elem_t;

enum { SET_OVERLAP = UINT32_MAX, SET_ORDER = UINT32_MAX - 1, SET_NOTSUB = UINT32_MAX - 3 };

typedef struct {
    int nrank, words;
    uint64_t *bits;
    int32_t *lo, *hi, *cnt;
    uint32_t n, cap;
    uint64_t last_key; /* one-entry memo: consecutive elements of a block */
    uint32_t last_val; /* almost always combine the same two sets */
    uint64_t last_dkey; /* the same for set differences */
    uint32_t last_dval;
    bool idempotent, ordered;
} setab_t;

/* Appends the set w (no deduplication: sets are compared by content where
 * it matters); returns its id, or UINT32_MAX-2 when out of memory. */
static uint32_t setab_add(setab_t *t, const uint64_t *w)
{
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 1024;
        uint64_t *nb = realloc(t->bits, (size_t)nc * t->words * 8);
        if (nb)
            t->bits = nb;
        int32_t *nlo = nb ? realloc(t->lo, nc * sizeof *nlo) : NULL;
        if (nlo)
            t->lo = nlo;
        int32_t *nhi = nlo ? realloc(t->hi, nc * sizeof *nhi) : NULL;
        if (nhi)
            t->hi = nhi;
        int32_t *ncnt = nhi ? realloc(t->cnt, nc * sizeof *ncnt) : NULL;
        if (ncnt)
            t->cnt = ncnt;
        if (!ncnt)
            return UINT32_MAX - 2;
        t->cap = nc;
    }
    uint32_t id = t->n++;
    memcpy(t->bits + (size_t)id * t->words, w, (size_t)t->words * 8);
    int lo = -1, hi = -1, cnt = 0;
    for (int k = 0; k < t->words; k++) {
        uint64_t x = w[k];
        if (!x)
            continue;
        if (lo < 0)
            lo = k * 64 + __builtin_ctzll(x);
        hi = k * 64 + 63 - __builtin_clzll(x);
        cnt += __builtin_popcountll(x);
    }
    t->lo[id] = lo, t->hi[id] = hi, t->cnt[id] = cnt;
    return id;
}

static bool set_equal(const setab_t *t, uint32_t a, uint32_t b)
{
    return a == b || (t->cnt[a] == t->cnt[b] &&
                      !memcmp(t->bits + (size_t)a * t->words, t->bits + (size_t)b * t->words,
                              (size_t)t->words * 8));
}

static int setab_init(setab_t *t, int nrank, bool idempotent, bool ordered)
{
    memset(t, 0, sizeof *t);
    t->nrank = nrank;
    t->words = (nrank + 63) / 64;
    t->idempotent = idempotent;
    t->ordered = ordered;
    t->last_key = t->last_dkey = UINT64_MAX;
    uint64_t *w = calloc((size_t)t->words, 8);
    if (!w)
        return -1;
    int bad = setab_add(t, w) != 0; /* id 0: the empty set */
    for (int r = 0; r < nrank && !bad; r++) { /* ids 1..P: singletons */
        memset(w, 0, (size_t)t->words * 8);
        w[r / 64] = 1ull << (r % 64);
        bad = setab_add(t, w) != (uint32_t)r + 1;
    }
    free(w);
    return bad ? -1 : 0;
}

static void setab_free(setab_t *t) { free(t->bits), free(t->lo), free(t->hi), free(t->cnt); }

static uint32_t setab_union_compute(setab_t *t, uint32_t a, uint32_t b)
{
    if (t->ordered && !(t->hi[a] - t->lo[a] + 1 == t->cnt[a] &&
                        t->hi[b] - t->lo[b] + 1 == t->cnt[b] && t->hi[a] + 1 == t->lo[b]))
        return SET_ORDER;
    uint64_t buf[64], *w = t->words <= 64 ? buf : malloc((size_t)t->words * 8);
    if (!w)
        return UINT32_MAX - 2;
    const uint64_t *x = t->bits + (size_t)a * t->words;
    const uint64_t *y = t->bits + (size_t)b * t->words;
    bool overlap = false;
    for (int k = 0; k < t->words; k++) {
        overlap |= (x[k] & y[k]) != 0;
        w[k] = x[k] | y[k];
    }
    uint32_t r = overlap && !t->idempotent ? SET_OVERLAP : setab_add(t, w);
    if (w != buf)
        free(w);
    return r;
}

/* left (op) right */
static uint32_t setab_union(setab_t *t, uint32_t left, uint32_t right)
{
    uint64_t key = (uint64_t)left << 32 | right;
    if (key != t->last_key) {
        t->last_val = setab_union_compute(t, left, right);
        t->last_key = key;
    }
    return t->last_val;
}

/* a without b (an inverse op taking b's contributions out of a); SET_NOTSUB
 * unless b is part of a. */
static uint32_t setab_diff(setab_t *t, uint32_t a, uint32_t b)
{
    uint64_t key = (uint64_t)a << 32 | b;
    if (key == t->last_dkey)
        return t->last_dval;
    uint64_t buf[64], *w = t->words <= 64 ? buf : malloc((size_t)t->words * 8);
    if (!w)
        return UINT32_MAX - 2;
    const uint64_t *x = t->bits + (size_t)a * t->words;
    const uint64_t *y = t->bits + (size_t)b * t->words;
    bool sub = true;
    for (int k = 0; k < t->words; k++) {
        sub &= (y[k] & ~x[k]) == 0;
        w[k] = x[k] & ~y[k];
    }
    uint32_t r = sub ? setab_add(t, w) : SET_NOTSUB;
    if (w != buf)
        free(w);
    t->last_dkey = key;
    t->last_dval = r;
    return r;
}

/* Prints a set as {a,b,c-d} into out. */
static void set_format(const setab_t *t, uint32_t id, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    used += (size_t)snprintf(out, n, "{");
    const uint64_t *w = t->bits + (size_t)id * t->words;
    int r = 0, first = 1;
    while (r < t->nrank && used + 16 < n) {
        if (!(w[r / 64] >> (r % 64) & 1)) {
            r++;
            continue;
        }
        int e = r;
        while (e + 1 < t->nrank && (w[(e + 1) / 64] >> ((e + 1) % 64) & 1))
            e++;
        used += (size_t)snprintf(out + used, n - used, e > r ? "%s%d-%d" : "%s%d",
                                 first ? "" : ",", r, e);
        first = 0;
        r = e + 1;
    }
    if (r < t->nrank && used + 5 < n)
        used += (size_t)snprintf(out + used, n - used, ",...");
    if (used + 2 < n)
        snprintf(out + used, n - used, "}");
}

/* ---- message matching ---- */

typedef struct {
    int32_t rank;
    uint32_t step, next;
    uint32_t know; /* barrier knowledge when posted */
} mnode_t;


#define NIL UINT32_MAX

typedef struct {
    sched_img_t *s;
    uint32_t *round_left;
    elem_t *store[BUF_COUNT];
    uint64_t slen[BUF_COUNT];
    int vstore[BUF_COUNT];
    uint64_t vbase[BUF_COUNT], vlen[BUF_COUNT];
    uint32_t *pending;
    uint8_t *state; /* 0 waiting, 1 in flight, 2 done */
    uint32_t ndone;
    uint32_t *inflight;
    uint32_t ninflight;
    uint32_t know;
    /* unmatched messages: sends addressed to this rank, receives it posted
     * (FIFO linked lists of mnode_t, so equal tags match in order) */
    uint32_t us_head, us_tail, ur_head, ur_tail;
} rstate_t;

typedef struct {
    const check_spec_t *spec;
    int P;
    rstate_t *r;
    setab_t sets;
    mnode_t *nodes;
    uint32_t nn, ncap;
    uint64_t *work; /* (rank << 32 | step) */
    size_t wn, wcap;
    char *msg;
    size_t msglen;
    int failed;
    check_stats_t stats;
} checker_t;

static void step_describe(const checker_t *c, int rank, uint32_t i, char *out, size_t n)
{
    const step_t sv = sched_step(c->r[rank].s, i), *st = &sv;
    switch (st->kind) {
    case STEP_SEND:
        snprintf(out, n, "send %s[%" PRIu64 "..%" PRIu64 ") to %d tag %u",
                 buf_name(st->src_buf), st->src_off, st->src_off + st->len, st->peer,
                 st->tag);
        break;
    case STEP_RECV:
    case STEP_RECV_REDUCE:
        snprintf(out, n, "%s %s[%" PRIu64 "..%" PRIu64 ") from %d tag %u",
                 step_kind_name(st->kind), buf_name(st->dst_buf), st->dst_off,
                 st->dst_off + st->len, st->peer, st->tag);
        break;
    case STEP_COPY:
    case STEP_REDUCE:
        snprintf(out, n, "%s %s[%" PRIu64 "..%" PRIu64 ") into %s[%" PRIu64 "..%" PRIu64 ")",
                 st->flags & STEP_INVERSE ? "reduce-inverse" : step_kind_name(st->kind),
                 buf_name(st->src_buf), st->src_off,
                 st->src_off + st->len, buf_name(st->dst_buf), st->dst_off,
                 st->dst_off + st->len);
        break;
    default:
        snprintf(out, n, "nop");
    }
}

static int fail(checker_t *c, int rank, uint32_t step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(checker_t *c, int rank, uint32_t step, const char *fmt, ...)
{
    if (c->failed)
        return -1;
    c->failed = 1;
    char what[160] = "";
    if (rank >= 0 && step != NIL)
        step_describe(c, rank, step, what, sizeof what);
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (rank >= 0 && step != NIL)
        snprintf(c->msg, c->msglen, "P=%d rank %d step %u (%s): %s", c->P, rank, step,
                 what, why);
    else if (rank >= 0)
        snprintf(c->msg, c->msglen, "P=%d rank %d: %s", c->P, rank, why);
    else
        snprintf(c->msg, c->msglen, "P=%d: %s", c->P, why);
    return -1;
}

/* Resolves (buf, off, len) of rank to storage coordinates; -1 if out of
 * bounds (after reporting). */
static int resolve(checker_t *c, int rank, uint32_t step, int buf, uint64_t off,
                   uint64_t len, int *store, uint64_t *soff)
{
    rstate_t *r = &c->r[rank];
    *store = 0, *soff = 0;
    if (buf < 0 || buf >= BUF_COUNT)
        return fail(c, rank, step, "unknown buffer %d", buf);
    if (off > r->vlen[buf] || len > r->vlen[buf] - off)
        return fail(c, rank, step, "region %s[%" PRIu64 "..%" PRIu64 ") out of bounds (size %" PRIu64 ")",
                    buf_name(buf), off, off + len, r->vlen[buf]);
    *store = r->vstore[buf];
    *soff = r->vbase[buf] + off;
    return 0;
}

static bool overlaps(int s1, uint64_t o1, uint64_t l1, int s2, uint64_t o2, uint64_t l2)
{
    return s1 == s2 && l1 && l2 && o1 < o2 + l2 && o2 < o1 + l1;
}

/* Does [store,off,len) conflict with an in-flight message of rank?  reads:
 * only in-flight receives conflict; writes: sends and receives. */
static int race_check(checker_t *c, int rank, uint32_t step, int store, uint64_t off,
                      uint64_t len, bool write)
{
    rstate_t *r = &c->r[rank];
    for (uint32_t k = 0; k < r->ninflight; k++) {
        uint32_t j = r->inflight[k];
        if (j == step)
            continue;
        const step_t ov = sched_step(r->s, j), *o = &ov;
        bool o_writes = o->kind != STEP_SEND;
        if (!write && !o_writes)
            continue;
        int os;
        uint64_t ooff;
        int ob = o_writes ? o->dst_buf : o->src_buf;
        uint64_t oo = o_writes ? o->dst_off : o->src_off;
        if (resolve(c, rank, j, ob, oo, o->len, &os, &ooff))
            return -1;
        if (overlaps(store, off, len, os, ooff, o->len)) {
            char other[160];
            step_describe(c, rank, j, other, sizeof other);
            return fail(c, rank, step, "%s a region that in-flight step %u (%s) %s",
                        write ? "writes" : "reads", j, other,
                        o_writes ? "is receiving into" : "is sending from");
        }
    }
    return 0;
}

static int push_work(checker_t *c, int rank, uint32_t step)
{
    if (c->wn == c->wcap) {
        size_t nc = c->wcap ? c->wcap * 2 : 1024;
        uint64_t *p = realloc(c->work, nc * sizeof *p);
        if (!p)
            return fail(c, -1, NIL, "out of memory");
        c->work = p, c->wcap = nc;
    }
    c->work[c->wn++] = (uint64_t)rank << 32 | step;
    return 0;
}

static int complete(checker_t *c, int rank, uint32_t step)
{
    rstate_t *r = &c->r[rank];
    if (r->state[step] == 1) {
        for (uint32_t k = 0; k < r->ninflight; k++)
            if (r->inflight[k] == step) {
                r->inflight[k] = r->inflight[--r->ninflight];
                break;
            }
    }
    r->state[step] = 2;
    r->ndone++;
    const sched_img_t *s = r->s;
    uint32_t k, end, first;
    for (sched_succ(s, step, &k, &end); k < end; k++) {
        uint32_t j = s->succ[k];
        if (--r->pending[j] == 0 && push_work(c, rank, j))
            return -1;
    }
    for (uint32_t n = sched_round_done(s, r->round_left, step, &first), j = first; j < first + n;
         j++)
        if (--r->pending[j] == 0 && push_work(c, rank, j))
            return -1;
    return 0;
}

/* Combines one element into dst (left/right order given). */
static int combine(checker_t *c, int rank, uint32_t step, elem_t *dst, elem_t src,
                   bool src_left)
{
    if (src.idx < 0 || dst->idx < 0)
        return fail(c, rank, step, "reduces uninitialised data");
    if (src.idx != dst->idx)
        return fail(c, rank, step, "combines element %d with element %d", src.idx,
                    dst->idx);
    uint32_t l = src_left ? src.set : dst->set, rr = src_left ? dst->set : src.set;
    uint32_t u = setab_union(&c->sets, l, rr);
    if (u == SET_OVERLAP || u == SET_ORDER) {
        char a[96], b[96];
        set_format(&c->sets, l, a, sizeof a);
        set_format(&c->sets, rr, b, sizeof b);
        return fail(c, rank, step, "element %d: %s %s and %s", dst->idx,
                    u == SET_OVERLAP ? "counts a contribution twice, combining"
                                     : "combines out of rank order",
                    a, b);
    }
    if (u == UINT32_MAX - 2)
        return fail(c, rank, step, "out of memory");
    dst->set = u;
    return 0;
}

/* dst = dst (op^-1) src for one element. */
static int take_out(checker_t *c, int rank, uint32_t step, elem_t *dst, elem_t src)
{
    if (src.idx < 0 || dst->idx < 0)
        return fail(c, rank, step, "reduces uninitialised data");
    if (src.idx != dst->idx)
        return fail(c, rank, step, "takes element %d out of element %d", src.idx, dst->idx);
    uint32_t d = setab_diff(&c->sets, dst->set, src.set);
    if (d == SET_NOTSUB) {
        char a[96], b[96];
        set_format(&c->sets, dst->set, a, sizeof a);
        set_format(&c->sets, src.set, b, sizeof b);
        return fail(c, rank, step, "element %d: takes %s out of %s, which lacks some of them",
                    dst->idx, b, a);
    }
    if (d == UINT32_MAX - 2)
        return fail(c, rank, step, "out of memory");
    dst->set = d;
    return 0;
}

static int run_local(checker_t *c, int rank, uint32_t i)
{
    rstate_t *r = &c->r[rank];
    const step_t sv = sched_step(r->s, i), *st = &sv;
    if (st->kind == STEP_NOP)
        return complete(c, rank, i);
    int ss, ds;
    uint64_t so, dso;
    if (resolve(c, rank, i, st->src_buf, st->src_off, st->len, &ss, &so) ||
        resolve(c, rank, i, st->dst_buf, st->dst_off, st->len, &ds, &dso))
        return -1;
    if (st->dst_buf == BUF_IN)
        return fail(c, rank, i, "writes the input buffer");
    if (st->kind == STEP_COPY && ss == ds && so == dso)
        return complete(c, rank, i); /* in-place self-copy: the engine skips it */
    if (race_check(c, rank, i, ss, so, st->len, false) ||
        race_check(c, rank, i, ds, dso, st->len, true))
        return -1;
    elem_t *src = r->store[ss] + so, *dst = r->store[ds] + dso;
    if (st->kind == STEP_COPY) {
        for (uint64_t k = 0; k < st->len; k++) {
            if (src[k].idx < 0)
                return fail(c, rank, i, "copies uninitialised data");
        }
        memmove(dst, src, st->len * sizeof *dst);
    } else {
        if (overlaps(ss, so, st->len, ds, dso, st->len))
            return fail(c, rank, i, "reduces a region into itself");
        bool src_left = st->flags & STEP_SRC_LEFT;
        if (st->flags & STEP_INVERSE) {
            if (!c->spec->invertible)
                return fail(c, rank, i, "uses an inverse the op does not have");
            for (uint64_t k = 0; k < st->len; k++)
                if (take_out(c, rank, i, &dst[k], src[k]))
                    return -1;
        } else {
            for (uint64_t k = 0; k < st->len; k++)
                if (combine(c, rank, i, &dst[k], src[k], src_left))
                    return -1;
        }
    }
    return complete(c, rank, i);
}

static uint32_t node_new(checker_t *c, int rank, uint32_t step)
{
    if (c->nn == c->ncap) {
        uint32_t nc = c->ncap ? c->ncap * 2 : 1024;
        mnode_t *p = realloc(c->nodes, nc * sizeof *p);
        if (!p)
            return NIL;
        c->nodes = p, c->ncap = nc;
    }
    mnode_t *m = &c->nodes[c->nn];
    m->rank = rank, m->step = step, m->next = NIL, m->know = c->r[rank].know;
    return c->nn++;
}

static int transfer(checker_t *c, const mnode_t *sn, const mnode_t *rn)
{
    rstate_t *sr = &c->r[sn->rank], *rr = &c->r[rn->rank];
    const step_t ssv = sched_step(sr->s, sn->step), rsv = sched_step(rr->s, rn->step);
    const step_t *ss = &ssv, *rs = &rsv;
    if (ss->len != rs->len)
        return fail(c, rn->rank, rn->step,
                    "receives %" PRIu64 " elements but rank %d step %u sends %" PRIu64,
                    rs->len, sn->rank, sn->step, ss->len);
    int sst, dst;
    uint64_t so, dso;
    if (resolve(c, sn->rank, sn->step, ss->src_buf, ss->src_off, ss->len, &sst, &so) ||
        resolve(c, rn->rank, rn->step, rs->dst_buf, rs->dst_off, rs->len, &dst, &dso))
        return -1;
    const elem_t *src = sr->store[sst] + so;
    elem_t *d = rr->store[dst] + dso;
    for (uint64_t k = 0; k < ss->len; k++)
        if (src[k].idx < 0)
            return fail(c, sn->rank, sn->step, "sends uninitialised data (element %" PRIu64 ")",
                        so + k);
    if (rs->kind == STEP_RECV) {
        memcpy(d, src, ss->len * sizeof *d);
    } else {
        bool src_left = rs->flags & STEP_SRC_LEFT;
        for (uint64_t k = 0; k < ss->len; k++)
            if (combine(c, rn->rank, rn->step, &d[k], src[k], src_left))
                return -1;
    }
    if (c->spec->coll == WEFT_COLL_BARRIER) { /* knowledge may overlap freely */
        setab_t *t = &c->sets;
        bool idem = t->idempotent, ord = t->ordered;
        t->idempotent = true, t->ordered = false;
        uint32_t u = setab_union_compute(t, rr->know, sn->know);
        t->idempotent = idem, t->ordered = ord;
        if (u == UINT32_MAX - 2)
            return fail(c, -1, NIL, "out of memory");
        rr->know = u;
    }
    if (c->spec->on_transfer && ss->len) {
        const setab_t *t = &c->sets;
        uint32_t set = src[0].set;
        c->spec->on_transfer(c->spec->trace_ctx, sn->rank, rn->rank, rn->step, ss->len,
                             t->bits + (size_t)set * t->words);
    }
    c->stats.messages++;
    c->stats.elements_moved += ss->len;
    if (complete(c, sn->rank, sn->step) || complete(c, rn->rank, rn->step))
        return -1;
    return 0;
}

static int post_comm(checker_t *c, int rank, uint32_t i)
{
    rstate_t *r = &c->r[rank];
    const step_t sv = sched_step(r->s, i), *st = &sv;
    if (st->peer < 0 || st->peer >= c->P)
        return fail(c, rank, i, "peer %d out of range", st->peer);
    if (st->peer == rank)
        return fail(c, rank, i, "sends to itself (use a copy)");
    int s;
    uint64_t off;
    bool is_send = st->kind == STEP_SEND;
    if (resolve(c, rank, i, is_send ? st->src_buf : st->dst_buf,
                is_send ? st->src_off : st->dst_off, st->len, &s, &off))
        return -1;
    if (!is_send && st->dst_buf == BUF_IN)
        return fail(c, rank, i, "receives into the input buffer");
    if (race_check(c, rank, i, s, off, st->len, !is_send))
        return -1;
    if (st->kind == STEP_RECV_REDUCE && race_check(c, rank, i, s, off, st->len, false))
        return -1;
    r->state[i] = 1;
    r->inflight[r->ninflight++] = i;
    int dst = is_send ? st->peer : rank, src = is_send ? rank : st->peer;
    rstate_t *d = &c->r[dst];
    /* look for the oldest matching opposite in the destination's lists */
    uint32_t *head = is_send ? &d->ur_head : &d->us_head;
    uint32_t *tail = is_send ? &d->ur_tail : &d->us_tail;
    uint32_t prev = NIL;
    for (uint32_t k = *head; k != NIL; prev = k, k = c->nodes[k].next) {
        const mnode_t *o = &c->nodes[k];
        const step_t osv = sched_step(c->r[o->rank].s, o->step), *os = &osv;
        int osrc = is_send ? os->peer : o->rank;
        if (osrc != src || os->tag != st->tag)
            continue;
        if (prev == NIL)
            *head = o->next;
        else
            c->nodes[prev].next = o->next;
        if (*tail == k)
            *tail = prev;
        mnode_t other = *o;
        uint32_t me = node_new(c, rank, i);
        if (me == NIL)
            return fail(c, -1, NIL, "out of memory");
        mnode_t mine = c->nodes[me];
        return is_send ? transfer(c, &mine, &other) : transfer(c, &other, &mine);
    }
    uint32_t nd = node_new(c, rank, i);
    if (nd == NIL)
        return fail(c, -1, NIL, "out of memory");
    uint32_t *mhead = is_send ? &d->us_head : &d->ur_head;
    uint32_t *mtail = is_send ? &d->us_tail : &d->ur_tail;
    if (*mtail == NIL)
        *mhead = nd;
    else
        c->nodes[*mtail].next = nd;
    *mtail = nd;
    return 0;
}

/* The rank's buffers as the call lays them out: each a store of symbolic
 * elements, an aliased one (in place) a view into the other's store. */
static int init_buffers(checker_t *c, int rank)
{
    const check_spec_t *sp = c->spec;
    rstate_t *r = &c->r[rank];
    coll_layout_t lay;
    coll_layout(sp->coll, c->P, rank, sp->root, sp->count, sp->inplace, &lay);
    r->slen[BUF_IN] = lay.in_len;
    r->slen[BUF_OUT] = lay.out_len;
    r->slen[BUF_TMP] = r->s->tmp_len;
    for (int b = 0; b < BUF_COUNT; b++) {
        r->vstore[b] = b, r->vbase[b] = 0, r->vlen[b] = r->slen[b];
    }
    if (lay.alias == ALIAS_IN_IN_OUT) {
        r->vstore[BUF_IN] = BUF_OUT, r->vbase[BUF_IN] = lay.alias_off;
        r->slen[BUF_IN] = 0;
    } else if (lay.alias == ALIAS_OUT_IN_IN) {
        r->vstore[BUF_OUT] = BUF_IN, r->vbase[BUF_OUT] = lay.alias_off;
        r->slen[BUF_OUT] = 0;
    }
    for (int b = 0; b < BUF_COUNT; b++) {
        r->store[b] = malloc((r->slen[b] ? r->slen[b] : 1) * sizeof(elem_t));
        if (!r->store[b])
            return fail(c, rank, NIL, "out of memory");
        for (uint64_t k = 0; k < r->slen[b]; k++)
            r->store[b][k].idx = -1, r->store[b][k].set = 0;
    }
    return 0;
}

/* What the rank holds before the call: its own contribution to each
 * element of its input (a bcast's root: of its output). */
static void init_contents(checker_t *c, int rank)
{
    const check_spec_t *sp = c->spec;
    rstate_t *r = &c->r[rank];
    uint32_t me = (uint32_t)rank + 1;
    int is = r->vstore[BUF_IN];
    uint64_t ib = r->vbase[BUF_IN];
    switch (sp->coll) {
    case WEFT_COLL_ALLREDUCE:
    case WEFT_COLL_REDUCE:
    case WEFT_COLL_REDUCE_SCATTER:
    case WEFT_COLL_SCATTER:
        for (uint64_t k = 0; k < r->vlen[BUF_IN]; k++)
            r->store[is][ib + k] = (elem_t){(int32_t)k, me};
        break;
    case WEFT_COLL_ALLGATHER:
    case WEFT_COLL_GATHER:
        for (uint64_t k = 0; k < r->vlen[BUF_IN]; k++)
            r->store[is][ib + k] = (elem_t){(int32_t)(rank * sp->count + k), me};
        break;
    case WEFT_COLL_BCAST:
        if (rank == sp->root)
            for (uint64_t k = 0; k < r->vlen[BUF_OUT]; k++)
                r->store[BUF_OUT][k] = (elem_t){(int32_t)k, me};
        break;
    default:
        break;
    }
    r->know = me;
}

static int init_rank(checker_t *c, int rank, check_build_fn build, void *ctx,
                     sched_t *builder)
{
    rstate_t *r = &c->r[rank];
    int rc = build(ctx, rank, builder, &r->s);
    if (rc) {
        fail(c, rank, NIL, "the builder failed (error %d)", rc);
        return rc;
    }
    if (!r->s)
        return fail(c, rank, NIL, "schedule not committed");
    if ((rc = init_buffers(c, rank)))
        return rc;
    init_contents(c, rank);
    r->us_head = r->us_tail = r->ur_head = r->ur_tail = NIL;
    uint32_t n = r->s->nsteps;
    r->pending = malloc((n ? n : 1) * sizeof *r->pending);
    r->state = calloc(n ? n : 1, 1);
    r->inflight = malloc((n ? n : 1) * sizeof *r->inflight);
    r->round_left = malloc((r->s->nrounds ? r->s->nrounds : 1) * sizeof *r->round_left);
    if (!r->pending || !r->state || !r->inflight || !r->round_left)
        return fail(c, rank, NIL, "out of memory");
    for (uint32_t k = 0; k < r->s->nrounds; k++)
        r->round_left[k] = sched_round_size(r->s, k);
    for (uint32_t i = 0; i < n; i++) {
        r->pending[i] = sched_step_waits(r->s, i);
        if (!r->pending[i] && push_work(c, rank, i))
            return -1;
    }
    c->stats.steps += n;
    return 0;
}

static int verify_rank(checker_t *c, int rank)
{
    const check_spec_t *sp = c->spec;
    rstate_t *r = &c->r[rank];
    uint32_t full = 0;
    {
        uint64_t w[64], *words = c->sets.words <= 64 ? w : malloc((size_t)c->sets.words * 8);
        if (!words)
            return fail(c, -1, NIL, "out of memory");
        memset(words, 0, (size_t)c->sets.words * 8);
        for (int k = 0; k < c->P; k++)
            words[k / 64] |= 1ull << (k % 64);
        full = setab_add(&c->sets, words);
        if (words != w)
            free(words);
    }
    if (sp->coll == WEFT_COLL_BARRIER) {
        if (!set_equal(&c->sets, r->know, full)) {
            char a[96];
            set_format(&c->sets, r->know, a, sizeof a);
            return fail(c, rank, NIL, "leaves the barrier knowing only that %s entered", a);
        }
        return 0;
    }
    int os = r->vstore[BUF_OUT];
    const elem_t *out = r->store[os] + r->vbase[BUF_OUT];
    uint64_t n = r->vlen[BUF_OUT];
    for (uint64_t k = 0; k < n; k++) {
        int32_t want_idx;
        uint32_t want_set;
        switch (sp->coll) {
        case WEFT_COLL_ALLREDUCE:
        case WEFT_COLL_REDUCE:
            want_idx = (int32_t)k, want_set = full;
            break;
        case WEFT_COLL_REDUCE_SCATTER:
            want_idx = (int32_t)(rank * sp->count + k), want_set = full;
            break;
        case WEFT_COLL_BCAST:
            want_idx = (int32_t)k, want_set = (uint32_t)sp->root + 1;
            break;
        case WEFT_COLL_SCATTER:
            want_idx = (int32_t)(rank * sp->count + k), want_set = (uint32_t)sp->root + 1;
            break;
        case WEFT_COLL_ALLGATHER:
        case WEFT_COLL_GATHER:
            want_idx = (int32_t)k, want_set = (uint32_t)(k / sp->count) + 1;
            break;
        default:
            return fail(c, -1, NIL, "unknown collective");
        }
        if (out[k].idx != want_idx || !set_equal(&c->sets, out[k].set, want_set)) {
            char a[96], b[96];
            if (out[k].idx < 0)
                snprintf(a, sizeof a, "nothing");
            else {
                char s[80];
                set_format(&c->sets, out[k].set, s, sizeof s);
                snprintf(a, sizeof a, "element %d of %s", out[k].idx, s);
            }
            char s2[80];
            set_format(&c->sets, want_set, s2, sizeof s2);
            snprintf(b, sizeof b, "element %d of %s", want_idx, s2);
            return fail(c, rank, NIL, "ends with out[%" PRIu64 "] = %s, expected %s", k, a, b);
        }
    }
    return 0;
}

/* Runs every step whose waits are over until none is left. */
static void run_work(checker_t *c)
{
    while (!c->failed && c->wn) {
        uint64_t w = c->work[--c->wn];
        int rank = (int)(w >> 32);
        uint32_t i = (uint32_t)w;
        const step_t st = sched_step(c->r[rank].s, i);
        if (step_kind_is_comm(st.kind))
            post_comm(c, rank, i);
        else
            run_local(c, rank, i);
    }
}

/* Every step must have run: those that did not (the first three) make a
 * deadlock or an unmatched message. */
static void check_all_ran(checker_t *c)
{
    int shown = 0;
    char buf[1024] = "";
    size_t used = 0;
    for (int k = 0; k < c->P && shown < 3; k++) {
        rstate_t *r = &c->r[k];
        if (!r->s || r->ndone == r->s->nsteps)
            continue;
        uint32_t i = 0;
        while (i < r->s->nsteps && r->state[i] != 1)
            i++;
        if (i == r->s->nsteps)
            continue;
        char what[160];
        step_describe(c, k, i, what, sizeof what);
        used += (size_t)snprintf(buf + used, sizeof buf - used,
                                 "%srank %d step %u (%s) never matched", shown ? "; " : "", k, i,
                                 what);
        shown++;
    }
    if (shown)
        fail(c, -1, NIL, "deadlock or unmatched message: %s", buf);
}

static void checker_free(checker_t *c)
{
    for (int k = 0; k < c->P; k++) {
        rstate_t *r = &c->r[k];
        for (int b = 0; b < BUF_COUNT; b++)
            free(r->store[b]);
        free(r->pending), free(r->state), free(r->inflight), free(r->round_left);
        sched_img_free(r->s);
    }
    free(c->r), free(c->nodes), free(c->work);
    setab_free(&c->sets);
}

int sched_check(const check_spec_t *spec, check_build_fn build, void *ctx, char *msg,
                size_t msglen, check_stats_t *stats)
{
    checker_t c;
    memset(&c, 0, sizeof c);
    c.spec = spec;
    c.P = spec->nrank;
    c.msg = msg;
    c.msglen = msglen;
    msg[0] = '\0';
    int rc = WEFT_EINVAL;
    if (c.P < 1 || c.P > 65536 || (spec->coll != WEFT_COLL_BARRIER && spec->count > INT32_MAX / (uint64_t)c.P)) {
        snprintf(msg, msglen, "checker: P=%d count=%" PRIu64 " out of range", c.P, spec->count);
        return WEFT_EINVAL;
    }
    c.r = calloc((size_t)c.P, sizeof *c.r);
    if (!c.r || setab_init(&c.sets, c.P, spec->idempotent, spec->ordered)) {
        snprintf(msg, msglen, "checker: out of memory");
        free(c.r);
        return WEFT_ENOMEM;
    }
    sched_t builder; /* one for every rank's schedule: no allocation per rank */
    sched_init(&builder, c.P, 0);
    for (int k = 0; k < c.P && !c.failed; k++) {
        sched_reset(&builder, c.P, k);
        int brc = init_rank(&c, k, build, ctx, &builder);
        if (brc > 0)
            rc = brc;
    }
    sched_free(&builder);
    run_work(&c);
    if (!c.failed)
        check_all_ran(&c);
    for (int k = 0; k < c.P && !c.failed; k++)
        verify_rank(&c, k);
    if (!c.failed)
        rc = 0;
    if (stats)
        *stats = c.stats;
    checker_free(&c);
    return rc;
}
