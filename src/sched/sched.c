/* sched.c — building schedules: appending steps, rounds, dependencies, and
 * committing them into compact CSR tables the engine and checker walk. */
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "weft.h"

void sched_init(sched_t *s, int nrank, int rank)
{
    memset(s, 0, sizeof *s);
    s->round_join = SCHED_NONE;
    s->nrank = nrank;
    s->rank = rank;
    s->tag_mul = 1;
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
    region_t m = {s->remap_buf[r.buf], s->remap_off[r.buf] + r.off, r.len};
    return m;
}

void sched_free(sched_t *s)
{
    free(s->steps);
    free(s->dep);
    free(s->succ_first);
    free(s->succ);
    free(s->edges);
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

static uint32_t add_step(sched_t *s, const step_t *st)
{
    if (s->err)
        return 0;
    if (s->nsteps == s->cap) {
        uint32_t ncap = s->cap ? s->cap * 2 : 32;
        void *p = realloc(s->steps, ncap * sizeof *s->steps);
        if (!p) {
            s->err = WEFT_ENOMEM;
            return 0;
        }
        s->steps = p;
        s->cap = ncap;
    }
    uint32_t id = s->nsteps++;
    s->steps[id] = *st;
    if (s->round_join != SCHED_NONE)
        add_edge(s, id, s->round_join);
    return id;
}

static uint32_t add_comm(sched_t *s, int kind, int peer, uint32_t tag, region_t r,
                         uint8_t flags)
{
    step_t st = {0};
    r = map_region(s, r);
    st.kind = (uint8_t)kind;
    st.peer = s->peer_map ? s->peer_map[peer] : peer;
    uint64_t t = (uint64_t)tag * s->tag_mul + s->tag_add;
    st.tag = t < UINT32_MAX ? (uint32_t)t : UINT32_MAX - 1;
    st.flags = flags;
    st.len = r.len;
    if (kind == STEP_SEND) {
        st.src_buf = r.buf;
        st.src_off = r.off;
    } else {
        st.dst_buf = r.buf;
        st.dst_off = r.off;
    }
    if (st.tag + 1 > s->max_tag)
        s->max_tag = st.tag + 1;
    return add_step(s, &st);
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
    step_t st = {0};
    src = map_region(s, src);
    dst = map_region(s, dst);
    st.kind = (uint8_t)kind;
    st.peer = -1;
    st.src_buf = src.buf;
    st.src_off = src.off;
    st.dst_buf = dst.buf;
    st.dst_off = dst.off;
    st.len = dst.len;
    st.flags = flags;
    if (src.len != dst.len && !s->err)
        s->err = WEFT_EINTERNAL;
    return add_step(s, &st);
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
    step_t st = {0};
    st.kind = STEP_NOP;
    st.peer = -1;
    return add_step(s, &st);
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
        return; /* empty round: the old join still holds */
    uint32_t first = s->round_start, last = s->nsteps;
    /* the join depends on the round's steps, which already depend on the
     * previous join */
    s->round_join = SCHED_NONE;
    uint32_t j = sched_nop(s);
    for (uint32_t i = first; i < last; i++)
        add_edge(s, j, i);
    s->round_join = j;
    s->round_start = s->nsteps;
}

uint64_t sched_tmp(sched_t *s, uint64_t n)
{
    uint64_t off = s->tmp_len;
    s->tmp_len += n;
    return off;
}

/* Builds the dependency CSR and its reverse with counting sorts: O(steps +
 * edges), no comparison sort (schedules have millions of edges at large P). */
int sched_commit(sched_t *s)
{
    if (s->err)
        return s->err;
    uint32_t n = s->nsteps, m = s->nedges;
    s->dep = malloc((m ? m : 1) * sizeof *s->dep);
    s->succ_first = calloc(n + 1, sizeof *s->succ_first);
    s->succ = malloc((m ? m : 1) * sizeof *s->succ);
    uint32_t *fill = calloc(n + 1, sizeof *fill);
    if (!s->dep || !s->succ_first || !s->succ || !fill) {
        free(fill);
        return s->err = WEFT_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        s->steps[i].ndeps = 0;
    for (uint32_t i = 0; i < m; i++) {
        s->steps[s->edges[i][0]].ndeps++;
        s->succ_first[s->edges[i][1] + 1]++;
    }
    uint32_t acc = 0;
    for (uint32_t i = 0; i < n; i++) {
        s->steps[i].dep_first = acc;
        acc += s->steps[i].ndeps;
        s->succ_first[i + 1] += s->succ_first[i];
    }
    for (uint32_t i = 0; i < m; i++) {
        uint32_t st = s->edges[i][0], on = s->edges[i][1];
        s->dep[s->steps[st].dep_first + fill[st]++] = on;
    }
    memset(fill, 0, (n + 1) * sizeof *fill);
    for (uint32_t i = 0; i < m; i++) {
        uint32_t on = s->edges[i][1];
        s->succ[s->succ_first[on] + fill[on]++] = s->edges[i][0];
    }
    free(fill);
    free(s->edges);
    s->edges = NULL;
    s->nedges = s->ecap = 0;
    s->committed = true;
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
