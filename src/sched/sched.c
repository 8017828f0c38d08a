/* sched.c — building schedules: appending steps, rounds, dependencies, and
 * committing them into the compact image (sched_img_t) the engine, the
 * checker and the simulator read. */
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "weft.h"

void sched_init(sched_t *s, int nrank, int rank)
{
    memset(s, 0, sizeof *s);
    sched_reset(s, nrank, rank);
}

void sched_reset(sched_t *s, int nrank, int rank)
{
    s->nsteps = s->nedges = 0;
    s->round = s->round_start = 0;
    s->tmp_len = 0;
    s->tag_mul = 1, s->tag_add = 0;
    s->max_tag = 0;
    s->nrank = nrank;
    s->rank = rank;
    s->peer_map = NULL;
    s->err = 0;
    sched_remap_reset(s);
}

void sched_remap_reset(sched_t *s)
{
    for (int b = 0; b < BUF_COUNT; b++)
        s->remap_buf[b] = (uint8_t)b, s->remap_off[b] = 0;
}

void sched_remap(sched_t *s, int from, int to, uint64_t off)
{
    s->remap_buf[from] = (uint8_t)to;
    s->remap_off[from] = off;
}

void sched_part(sched_t *s, tagspace_t outer, unsigned k, unsigned n)
{
    uint64_t mul = (uint64_t)outer.mul * n, add = (uint64_t)outer.add + (uint64_t)k * outer.mul;
    if (mul >= (1u << 24) || add >= (1u << 24)) {
        s->err = s->err ? s->err : WEFT_ENOTSUP;
        return;
    }
    s->tag_mul = (uint32_t)mul;
    s->tag_add = (uint32_t)add;
}

void sched_space_restore(sched_t *s, tagspace_t t)
{
    s->tag_mul = t.mul;
    s->tag_add = t.add;
}

static region_t map_region(const sched_t *s, region_t r)
{
    region_t m = reg(s->remap_buf[r.buf], s->remap_off[r.buf] + r.off, r.len);
    return m;
}

void sched_free(sched_t *s)
{
    free(s->steps);
    free(s->edges);
    free(s->view);
    memset(s, 0, sizeof *s);
}

static void add_edge(sched_t *s, uint32_t step, uint32_t on)
{
    if (s->err)
        return;
    if (s->nedges == s->ecap) {
        uint32_t ncap = s->ecap ? s->ecap * 2 : 64;
        void *p = realloc(s->edges, ncap * sizeof *s->edges);
        if (!p) {
            s->err = WEFT_ENOMEM;
            return;
        }
        s->edges = p;
        s->ecap = ncap;
    }
    s->edges[s->nedges][0] = step;
    s->edges[s->nedges][1] = on;
    s->nedges++;
}

/* A new step, zeroed but for its round, written in place: a step built on
 * the stack and copied in (48 bytes, stored field by field and loaded in
 * 16-byte pieces) stalled on store forwarding, a tenth of the time of a
 * simulation that builds a million ranks' schedules.  NULL after an error
 * (the step is then not there). */
static step_t *add_step(sched_t *s, uint32_t *id)
{
    *id = 0;
    if (s->err)
        return NULL;
    if (s->nsteps == s->cap) {
        uint32_t ncap = s->cap ? s->cap * 2 : 32;
        void *p = realloc(s->steps, ncap * sizeof *s->steps);
        if (!p) {
            s->err = WEFT_ENOMEM;
            return NULL;
        }
        s->steps = p;
        s->cap = ncap;
    }
    *id = s->nsteps++;
    step_t *st = &s->steps[*id];
    memset(st, 0, sizeof *st);
    st->round = s->round;
    return st;
}

static uint32_t add_comm(sched_t *s, int kind, int peer, uint32_t tag, region_t r,
                         uint8_t flags)
{
    uint32_t id;
    step_t *st = add_step(s, &id);
    if (!st)
        return id;
    r = map_region(s, r);
    st->kind = (uint8_t)kind;
    st->peer = s->peer_map ? s->peer_map[peer] : peer;
    uint64_t t = (uint64_t)tag * s->tag_mul + s->tag_add;
    st->tag = t < UINT32_MAX ? (uint32_t)t : UINT32_MAX - 1;
    st->flags = flags;
    st->len = r.len;
    if (kind == STEP_SEND) {
        st->src_buf = r.buf;
        st->src_off = r.off;
    } else {
        st->dst_buf = r.buf;
        st->dst_off = r.off;
    }
    if (st->tag + 1 > s->max_tag)
        s->max_tag = st->tag + 1;
    return id;
}

uint32_t sched_send(sched_t *s, int peer, uint32_t tag, region_t src)
{
    return add_comm(s, STEP_SEND, peer, tag, src, 0);
}

uint32_t sched_recv(sched_t *s, int peer, uint32_t tag, region_t dst)
{
    return add_comm(s, STEP_RECV, peer, tag, dst, 0);
}

uint32_t sched_recv_reduce(sched_t *s, int peer, uint32_t tag, region_t dst,
                           bool incoming_left)
{
    return add_comm(s, STEP_RECV_REDUCE, peer, tag, dst,
                    incoming_left ? STEP_SRC_LEFT : 0);
}

static uint32_t add_local(sched_t *s, int kind, region_t src, region_t dst,
                          uint8_t flags)
{
    src = map_region(s, src);
    dst = map_region(s, dst);
    if (src.len != dst.len && !s->err)
        s->err = WEFT_EINTERNAL;
    uint32_t id;
    step_t *st = add_step(s, &id);
    if (!st)
        return id;
    st->kind = (uint8_t)kind;
    st->peer = -1;
    st->src_buf = src.buf;
    st->src_off = src.off;
    st->dst_buf = dst.buf;
    st->dst_off = dst.off;
    st->len = dst.len;
    st->flags = flags;
    return id;
}

uint32_t sched_reduce(sched_t *s, region_t src, region_t dst, bool src_left)
{
    return add_local(s, STEP_REDUCE, src, dst, src_left ? STEP_SRC_LEFT : 0);
}

uint32_t sched_reduce_inverse(sched_t *s, region_t src, region_t dst)
{
    return add_local(s, STEP_REDUCE, src, dst, STEP_INVERSE);
}

uint32_t sched_copy(sched_t *s, region_t src, region_t dst)
{
    return add_local(s, STEP_COPY, src, dst, 0);
}

uint32_t sched_nop(sched_t *s)
{
    uint32_t id;
    step_t *st = add_step(s, &id);
    if (st) {
        st->kind = STEP_NOP;
        st->peer = -1;
    }
    return id;
}

void sched_depend(sched_t *s, uint32_t step, uint32_t on)
{
    if (on >= step) {
        if (!s->err)
            s->err = WEFT_EINTERNAL;
        return;
    }
    add_edge(s, step, on);
}

void sched_round(sched_t *s)
{
    if (s->err || s->round_start == s->nsteps)
        return; /* empty round: the last one still holds */
    s->round++;
    s->round_start = s->nsteps;
}

uint64_t sched_tmp(sched_t *s, uint64_t n)
{
    uint64_t off = s->tmp_len;
    s->tmp_len += n;
    return off;
}

static bool fits_narrow(const step_t *st)
{
    bool comm = step_kind_is_comm(st->kind);
    uint64_t off = st->kind == STEP_SEND || !comm ? st->src_off : st->dst_off;
    return st->len <= UINT32_MAX && off <= UINT32_MAX &&
           (comm ? st->peer >= 0 : st->dst_off <= UINT32_MAX) && st->ndeps <= CSTEP_NDEPS_MAX;
}

static void pack_step(const step_t *st, sched_cstep_t *c)
{
    bool comm = step_kind_is_comm(st->kind);
    uint32_t b1 = comm && st->kind != STEP_SEND ? st->dst_buf : st->src_buf;
    uint32_t b2 = comm ? 0 : st->dst_buf;
    c->head = (uint32_t)st->kind | (uint32_t)(st->flags & 3) << 3 | (b1 & 3) << 5 | (b2 & 3) << 7 |
              st->ndeps << 9;
    c->round = st->round;
    c->len = (uint32_t)st->len;
    c->off = (uint32_t)(comm && st->kind != STEP_SEND ? st->dst_off : st->src_off);
    c->a = comm ? (uint32_t)st->peer : (uint32_t)st->dst_off;
    c->b = comm ? st->tag : 0;
}

/* The successor lists of the explicit dependencies, by a counting sort:
 * O(steps + edges), no comparison sort (schedules have millions of edges at
 * large P); edges of one step keep the order they were added in. */
static void fill_succ(const sched_t *s, uint32_t *succ_first, uint32_t *succ)
{
    uint32_t n = s->nsteps, m = s->nedges;
    memset(succ_first, 0, ((size_t)n + 1) * sizeof *succ_first);
    for (uint32_t i = 0; i < m; i++)
        succ_first[s->edges[i][1] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        succ_first[i + 1] += succ_first[i];
    /* succ_first[i] serves as step i's fill cursor, which leaves it at
     * step i + 1's start; shifting the table back restores it */
    for (uint32_t i = 0; i < m; i++)
        succ[succ_first[s->edges[i][1]]++] = s->edges[i][0];
    for (uint32_t i = n; i > 0; i--)
        succ_first[i] = succ_first[i - 1];
    succ_first[0] = 0;
}

/* Each step's count of explicit dependencies, from the edges. */
static void count_deps(sched_t *s)
{
    for (uint32_t i = 0; i < s->nsteps; i++)
        s->steps[i].ndeps = 0;
    for (uint32_t i = 0; i < s->nedges; i++)
        s->steps[s->edges[i][0]].ndeps++;
}

/* Round r's first step at rf[r], for every round, and n at rf[nrounds]. */
static void fill_rounds(const sched_t *s, uint32_t nrounds, uint32_t *rf)
{
    uint32_t n = s->nsteps;
    for (uint32_t i = 0, r = 0; i < n; i++)
        while (r <= s->steps[i].round)
            rf[r++] = i;
    rf[nrounds] = n;
}

int sched_commit(sched_t *s, sched_img_t **out)
{
    *out = NULL;
    if (s->err)
        return s->err;
    uint32_t n = s->nsteps, m = s->nedges;
    count_deps(s);
    bool narrow = true;
    for (uint32_t i = 0; i < n && narrow; i++)
        narrow = fits_narrow(&s->steps[i]);
    uint32_t nrounds = n ? s->steps[n - 1].round + 1 : 0;
    size_t head = (sizeof(sched_img_t) + 7) & ~(size_t)7;
    size_t step_bytes = (size_t)n * (narrow ? sizeof(sched_cstep_t) : sizeof(step_t));
    size_t succ_words = m ? (size_t)n + 1 + m : 0;
    size_t bytes = head + step_bytes + ((size_t)nrounds + 1 + succ_words) * sizeof(uint32_t);
    char *mem = malloc(bytes);
    if (!mem)
        return s->err = WEFT_ENOMEM;
    sched_img_t *im = (sched_img_t *)mem;
    memset(im, 0, sizeof *im);
    im->nsteps = n, im->nrounds = nrounds, im->nedges = m;
    im->max_tag = s->max_tag, im->tmp_len = s->tmp_len;
    im->nrank = s->nrank, im->rank = s->rank;
    for (uint32_t i = 0; i < n; i++)
        im->nrecvs += s->steps[i].kind == STEP_RECV || s->steps[i].kind == STEP_RECV_REDUCE;
    im->narrow = narrow;
    im->bytes = bytes;
    char *p = mem + head;
    im->steps = p;
    if (narrow)
        for (uint32_t i = 0; i < n; i++)
            pack_step(&s->steps[i], (sched_cstep_t *)p + i);
    else if (n)
        memcpy(p, s->steps, step_bytes);
    uint32_t *rf = (uint32_t *)(p + step_bytes);
    im->round_first = rf;
    fill_rounds(s, nrounds, rf);
    if (m) {
        uint32_t *sf = rf + nrounds + 1;
        fill_succ(s, sf, sf + n + 1);
        im->succ_first = sf;
        im->succ = sf + n + 1;
    }
    *out = im;
    return 0;
}

void sched_img_free(sched_img_t *im) { free(im); }

int sched_view(sched_t *s, sched_img_t *view)
{
    memset(view, 0, sizeof *view);
    if (s->err)
        return s->err;
    uint32_t n = s->nsteps, m = s->nedges;
    uint32_t nrounds = n ? s->steps[n - 1].round + 1 : 0;
    size_t words = (size_t)nrounds + 1 + (m ? (size_t)n + 1 + m : 0);
    if (words > s->view_cap) {
        uint32_t *t = realloc(s->view, words * sizeof *t);
        if (!t)
            return s->err = WEFT_ENOMEM;
        s->view = t, s->view_cap = words;
    }
    count_deps(s);
    view->nsteps = n, view->nrounds = nrounds, view->nedges = m;
    view->max_tag = s->max_tag, view->tmp_len = s->tmp_len;
    view->nrank = s->nrank, view->rank = s->rank;
    for (uint32_t i = 0; i < n; i++)
        view->nrecvs += s->steps[i].kind == STEP_RECV || s->steps[i].kind == STEP_RECV_REDUCE;
    view->steps = s->steps;
    view->round_first = s->view;
    fill_rounds(s, nrounds, s->view);
    if (m) {
        uint32_t *sf = s->view + nrounds + 1;
        fill_succ(s, sf, sf + n + 1);
        view->succ_first = sf;
        view->succ = sf + n + 1;
    }
    return 0;
}

const char *step_kind_name(int kind)
{
    static const char *const names[] = {"nop", "send", "recv", "recv_reduce",
                                        "reduce", "copy"};
    return kind >= 0 && kind <= STEP_COPY ? names[kind] : "?";
}

const char *buf_name(int buf)
{
    static const char *const names[] = {"in", "out", "tmp"};
    return buf >= 0 && buf < BUF_COUNT ? names[buf] : "?";
}
