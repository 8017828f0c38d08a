/* goal.c — LogGOPSim's GOAL text, out and in, so that weft's schedules run
 * in LogGOPSim and GOAL schedules (LogGOPSim's Schedgen, other tools) run
 * in weft's simulator.
 *
 * The format (Hoefler, Siebert, Lumsdaine, "Group Operation Assembly
 * Language", 2009, as LogGOPSim's txt2bin reads it):
 *
 *     num_ranks 2
 *     rank 0 {
 *     l0: send 8b to 1 tag 0
 *     l1: calc 100
 *     l1 requires l0
 *     }
 *     rank 1 { ... }
 *
 * with `recv Nb from R`, optional `tag T`, `cpu C`, `nic N` in that order,
 * `a irequires b` (a may start once b has started), and // and slash-star
 * comments.  Decisions, written here and in docs/SIM.md:
 *   - a message is at least one byte in GOAL; weft's empty messages are
 *     written as 1b, which the model times alike ((s - 1) G is 0 for both);
 *   - calc times are whole ns: a reduce of s bytes is written as calc
 *     round(gamma s) of the model it was exported under;
 *   - weft's joins (no-ops) are written as `calc 0`; the simulator does a
 *     calc that costs nothing at once, without the CPU, where LogGOPSim
 *     queues it for the CPU: the same times up to the order of simultaneous
 *     events;
 *   - an operation without `nic` may use any NIC (the k-port model);
 *   - wildcards (-1 as source or tag) are refused: weft matches exactly. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goal.h"

/* ---- writing ---- */

static uint64_t calc_ns(const sim_model_t *m, const sim_op_t *op)
{
    double c = op->flags & SIM_REDUCE ? m->gamma * (double)op->size
               : op->flags & SIM_COPY ? m->copy * (double)op->size
                                      : (double)op->size;
    return c > 0 ? (uint64_t)llround(c) : 0;
}

static int write_rank(FILE *f, const sim_model_t *m, int r, const sim_prog_t *p)
{
    fprintf(f, "rank %d {\n", r);
    for (uint32_t i = 0; i < p->nops; i++) {
        const sim_op_t *op = &p->ops[i];
        if (op->kind == SIM_CALC) {
            fprintf(f, "l%u: calc %" PRIu64, i, op->flags & SIM_INSTANT ? 0 : calc_ns(m, op));
        } else {
            fprintf(f, "l%u: %s %" PRIu64 "b %s %d tag %u", i,
                    op->kind == SIM_SEND ? "send" : "recv", op->size ? op->size : 1,
                    op->kind == SIM_SEND ? "to" : "from", op->peer, op->tag);
        }
        if (op->cpu) /* GOAL's order: tag, cpu, nic */
            fprintf(f, " cpu %u", op->cpu);
        if (op->kind != SIM_CALC && op->nic != SIM_NIC_ANY)
            fprintf(f, " nic %u", op->nic);
        fputc('\n', f);
    }
    for (uint32_t i = 0; i < p->nops; i++)
        for (uint32_t k = p->succ_first[i]; k < p->succ_first[i + 1]; k++)
            fprintf(f, "l%u %s l%u\n", p->succ[k] & ~SIM_IREQ,
                    p->succ[k] & SIM_IREQ ? "irequires" : "requires", i);
    fprintf(f, "}\n");
    return ferror(f) ? -1 : 0;
}

int sim_goal_write(FILE *f, const sim_model_t *m, int P, sim_build_fn build, void *ctx,
                   char *msg, size_t len)
{
    fprintf(f, "num_ranks %d\n", P);
    for (int r = 0; r < P; r++) {
        sim_prog_t p;
        char why[256] = "";
        int rc = build(ctx, r, &p, why, sizeof why);
        if (rc) {
            snprintf(msg, len, "rank %d: %s", r, why[0] ? why : weft_strerror(rc));
            return rc;
        }
        if (p.nrounds) { /* GOAL has no rounds: the builder must make them joins */
            sim_prog_free(&p);
            snprintf(msg, len, "rank %d: a program with rounds (build it with joins)", r);
            return WEFT_EINTERNAL;
        }
        rc = write_rank(f, m, r, &p);
        sim_prog_free(&p);
        if (rc) {
            snprintf(msg, len, "writing rank %d: %s", r, strerror(errno));
            return WEFT_EINVAL;
        }
    }
    return 0;
}

/* ---- reading ---- */

struct sim_goal {
    int nrank;
    int cpus, nics; /* largest cpu / nic named + 1 */
    sim_prog_t *prog;
};

typedef struct {
    const char *name;
    int line;
    char *msg;
    size_t msglen;
} where_t;

__attribute__((format(printf, 2, 3))) static int perr(where_t *w, const char *fmt, ...)
{
    int n = snprintf(w->msg, w->msglen, "%s:%d: ", w->name, w->line);
    if (n > 0 && (size_t)n < w->msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->msg + n, w->msglen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return WEFT_EINVAL;
}

/* One rank's block as it is read: operations, labels, edges. */
typedef struct {
    sim_op_t *ops;
    uint32_t nops, opcap;
    uint32_t (*edge)[2]; /* (op, required op | SIM_IREQ) */
    uint32_t nedge, edgecap;
    char **label; /* label of op i or NULL */
    /* open-addressed label -> op + 1 */
    uint32_t *lab_op;
    char **lab_key;
    size_t labcap, nlab;
} block_t;

static void block_reset(block_t *b)
{
    for (uint32_t i = 0; i < b->nops; i++)
        free(b->label[i]);
    b->nops = b->nedge = 0;
    for (size_t i = 0; i < b->labcap; i++)
        b->lab_key[i] = NULL;
    b->nlab = 0;
}

static void block_free(block_t *b)
{
    block_reset(b);
    free(b->ops), free(b->edge), free(b->label), free(b->lab_op), free(b->lab_key);
}

static size_t lab_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t lab_slot(const block_t *b, const char *key)
{
    size_t i = lab_hash(key) & (b->labcap - 1);
    while (b->lab_key[i] && strcmp(b->lab_key[i], key))
        i = (i + 1) & (b->labcap - 1);
    return i;
}

static int lab_grow(block_t *b)
{
    size_t oc = b->labcap, nc = oc ? oc * 2 : 64;
    char **ok = b->lab_key;
    uint32_t *oo = b->lab_op;
    b->lab_key = calloc(nc, sizeof *b->lab_key);
    b->lab_op = calloc(nc, sizeof *b->lab_op);
    if (!b->lab_key || !b->lab_op) {
        free(b->lab_key), free(b->lab_op);
        b->lab_key = ok, b->lab_op = oo;
        return -1;
    }
    b->labcap = nc;
    for (size_t i = 0; i < oc; i++)
        if (ok[i]) {
            size_t j = lab_slot(b, ok[i]);
            b->lab_key[j] = ok[i], b->lab_op[j] = oo[i];
        }
    free(ok), free(oo);
    return 0;
}

static uint32_t lab_find(const block_t *b, const char *key)
{
    if (!b->labcap)
        return 0;
    size_t i = lab_slot(b, key);
    return b->lab_key[i] ? b->lab_op[i] : 0;
}

/* ---- the tokenizer: the words of one line, comments removed ---- */

#define MAXTOK 16
#define MAXLINE 4096

typedef struct {
    char buf[MAXLINE * 3 + 1]; /* the line, ':' '{' '}' spaced out */
    char *tok[MAXTOK];
    int n;
} line_t;

/* Reads the text's next line into l's words; returns 1, 0 at the end, or
 * -1 (an error, said) for a line too long or with too many words. */
static int next_line(const char **pos, const char *end, line_t *l, where_t *w, bool *in_comment)
{
    l->n = 0;
    if (*pos >= end)
        return 0;
    const char *p = *pos;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    *pos = nl ? nl + 1 : end;
    w->line++;
    if (e - p > MAXLINE) {
        perr(w, "line longer than %d characters", MAXLINE);
        return -1;
    }
    size_t k = 0;
    for (; p < e; p++) {
        if (*in_comment) {
            if (p + 1 < e && p[0] == '*' && p[1] == '/')
                *in_comment = false, p++;
            continue;
        }
        if (p + 1 < e && p[0] == '/' && p[1] == '/')
            break;
        if (p + 1 < e && p[0] == '/' && p[1] == '*') {
            *in_comment = true, p++;
            l->buf[k++] = ' ';
            continue;
        }
        bool sep = *p == ':' || *p == '{' || *p == '}';
        if (sep)
            l->buf[k++] = ' ';
        l->buf[k++] = *p ? *p : ' ';
        if (sep)
            l->buf[k++] = ' ';
    }
    l->buf[k] = 0;
    char *save = NULL;
    for (char *t = strtok_r(l->buf, " \t\r\v\f", &save); t;
         t = strtok_r(NULL, " \t\r\v\f", &save)) {
        if (l->n == MAXTOK) {
            perr(w, "too many words on a line");
            return -1;
        }
        l->tok[l->n++] = t;
    }
    return 1;
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (!isdigit((unsigned char)*s) || d > max || v > max / 10 || v * 10 > max - d)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool is_ident(const char *s)
{
    if (!isalpha((unsigned char)*s))
        return false;
    for (s++; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static int add_op(block_t *b, const sim_op_t *op, const char *label, where_t *w)
{
    if (b->nops == b->opcap) {
        uint32_t nc = b->opcap ? b->opcap * 2 : 64;
        sim_op_t *o = realloc(b->ops, nc * sizeof *o);
        if (o)
            b->ops = o;
        char **lb = o ? realloc(b->label, nc * sizeof *lb) : NULL;
        if (!lb)
            return perr(w, "out of memory");
        b->label = lb;
        b->opcap = nc;
    }
    if (label) {
        if (lab_find(b, label))
            return perr(w, "label '%s' defined twice", label);
        if ((b->nlab + 1) * 2 > b->labcap && lab_grow(b))
            return perr(w, "out of memory");
        char *k = strdup(label);
        if (!k)
            return perr(w, "out of memory");
        size_t i = lab_slot(b, k);
        b->lab_key[i] = k, b->lab_op[i] = b->nops + 1;
        b->nlab++;
        b->label[b->nops] = k;
    } else {
        b->label[b->nops] = NULL;
    }
    b->ops[b->nops++] = *op;
    return 0;
}

/* An optional "NAME N" (cpu, nic) at word *i: 0 (taken or absent), or the
 * error; *most becomes the largest N + 1 seen. */
static int annotation(const line_t *l, int *i, const char *name, uint64_t max, uint8_t *out,
                      int *most, where_t *w)
{
    uint64_t v;
    if (*i >= l->n || strcmp(l->tok[*i], name))
        return 0;
    if (++*i >= l->n || !parse_uint(l->tok[*i], max, &v))
        return perr(w, "%s: expected 0 to %d", name, (int)max);
    *out = (uint8_t)v;
    if (v + 1 > (uint64_t)*most)
        *most = (int)v + 1;
    ++*i;
    return 0;
}

/* "[label :] send|recv Nb to|from R [tag T] [cpu C] [nic N]" or
 * "[label :] calc N [cpu C]" */
static int parse_op(block_t *b, line_t *l, int nrank, sim_goal_t *g, where_t *w)
{
    int i = 0;
    const char *label = NULL;
    if (l->n >= 2 && !strcmp(l->tok[1], ":")) {
        if (!is_ident(l->tok[0]))
            return perr(w, "'%s' is not a label (a letter, then letters, digits, _)", l->tok[0]);
        label = l->tok[0];
        i = 2;
    }
    if (i >= l->n)
        return perr(w, "expected send, recv or calc after the label");
    sim_op_t op;
    memset(&op, 0, sizeof op);
    op.nic = SIM_NIC_ANY;
    op.peer = -1;
    const char *kind = l->tok[i++];
    uint64_t v;
    if (!strcmp(kind, "calc")) {
        op.kind = SIM_CALC;
        if (i >= l->n || !parse_uint(l->tok[i], (uint64_t)1 << 53, &v))
            return perr(w, "calc: expected a time in ns (a whole number up to 2^53)");
        op.size = v;
        i++;
    } else if (!strcmp(kind, "send") || !strcmp(kind, "recv")) {
        bool send = kind[0] == 's';
        op.kind = send ? SIM_SEND : SIM_RECV;
        const char *sz = i < l->n ? l->tok[i] : "";
        size_t n = strlen(sz);
        char num[32];
        if (n < 2 || n > 30 || sz[n - 1] != 'b')
            return perr(w, "%s: expected a size such as 8b", kind);
        memcpy(num, sz, n - 1);
        num[n - 1] = 0;
        if (!parse_uint(num, (uint64_t)1 << 50, &v) || v < 1)
            return perr(w, "%s: size '%s': want 1b to 2^50 bytes", kind, sz);
        op.size = v;
        i++;
        if (i >= l->n || strcmp(l->tok[i], send ? "to" : "from"))
            return perr(w, "%s: expected '%s' after the size", kind, send ? "to" : "from");
        i++;
        if (i < l->n && !strcmp(l->tok[i], "-1"))
            return perr(w, "%s: -1 (any source) is not supported: weft matches exactly", kind);
        if (i >= l->n || !parse_uint(l->tok[i], (uint64_t)nrank - 1, &v))
            return perr(w, "%s: peer '%s' is not a rank of 0..%d", kind,
                        i < l->n ? l->tok[i] : "", nrank - 1);
        op.peer = (int32_t)v;
        i++;
        if (i < l->n && !strcmp(l->tok[i], "tag")) {
            i++;
            if (i < l->n && !strcmp(l->tok[i], "-1"))
                return perr(w, "%s: tag -1 (any tag) is not supported: weft matches exactly",
                            kind);
            if (i >= l->n || !parse_uint(l->tok[i], UINT32_MAX - 1, &v))
                return perr(w, "%s: expected a tag 0 to 2^32-2", kind);
            op.tag = (uint32_t)v;
            i++;
        }
    } else {
        return perr(w, "expected send, recv, calc, a label or a dependency, not '%s'", kind);
    }
    int rc;
    if ((rc = annotation(l, &i, "cpu", 255, &op.cpu, &g->cpus, w)) ||
        (op.kind != SIM_CALC && (rc = annotation(l, &i, "nic", 63, &op.nic, &g->nics, w))))
        return rc;
    if (i < l->n)
        return perr(w, "unexpected '%s'", l->tok[i]);
    return add_op(b, &op, label, w);
}

static int parse_dep(block_t *b, line_t *l, where_t *w)
{
    if (l->n != 3 || !is_ident(l->tok[0]) || !is_ident(l->tok[2]))
        return perr(w, "expected 'LABEL requires LABEL' or 'LABEL irequires LABEL'");
    uint32_t a = lab_find(b, l->tok[0]), c = lab_find(b, l->tok[2]);
    if (!a)
        return perr(w, "label '%s' is not defined (before this line, in this rank)", l->tok[0]);
    if (!c)
        return perr(w, "label '%s' is not defined (before this line, in this rank)", l->tok[2]);
    if (a == c)
        return perr(w, "'%s' depends on itself", l->tok[0]);
    if (b->nedge == b->edgecap) {
        uint32_t nc = b->edgecap ? b->edgecap * 2 : 64;
        void *e = realloc(b->edge, nc * sizeof *b->edge);
        if (!e)
            return perr(w, "out of memory");
        b->edge = e, b->edgecap = nc;
    }
    b->edge[b->nedge][0] = a - 1;
    b->edge[b->nedge][1] = (c - 1) | (l->tok[1][0] == 'i' ? SIM_IREQ : 0);
    b->nedge++;
    return 0;
}

/* The block's operations and edges as a program (CSR of successors). */
static int block_commit(const block_t *b, sim_prog_t *p)
{
    if (sim_prog_alloc(p, b->nops, b->nedge))
        return WEFT_ENOMEM;
    if (b->nops)
        memcpy(p->ops, b->ops, (size_t)b->nops * sizeof(sim_op_t));
    memset(p->succ_first, 0, ((size_t)b->nops + 1) * 4);
    for (uint32_t i = 0; i < b->nops; i++)
        p->ops[i].pending = 0;
    for (uint32_t e = 0; e < b->nedge; e++) {
        p->ops[b->edge[e][0]].pending++;
        p->succ_first[(b->edge[e][1] & ~SIM_IREQ) + 1]++;
    }
    for (uint32_t i = 0; i < b->nops; i++)
        p->succ_first[i + 1] += p->succ_first[i];
    uint32_t *fill = calloc((size_t)b->nops + 1, 4);
    if (!fill) {
        sim_prog_free(p);
        return WEFT_ENOMEM;
    }
    for (uint32_t e = 0; e < b->nedge; e++) {
        uint32_t on = b->edge[e][1] & ~SIM_IREQ;
        p->succ[p->succ_first[on] + fill[on]++] = b->edge[e][0] | (b->edge[e][1] & SIM_IREQ);
    }
    free(fill);
    return 0;
}

void sim_goal_free(sim_goal_t *g)
{
    if (!g)
        return;
    if (g->prog)
        for (int r = 0; r < g->nrank; r++)
            sim_prog_free(&g->prog[r]);
    free(g->prog);
    free(g);
}

/* One line inside or outside a rank block. */
static int parse_line(sim_goal_t *g, block_t *b, line_t *l, int *rank, where_t *w)
{
    uint64_t v;
    const char *t0 = l->tok[0];
    if (!strcmp(t0, "num_ranks")) {
        if (g->nrank)
            return perr(w, "num_ranks given twice");
        if (l->n != 2 || !parse_uint(l->tok[1], 1u << 24, &v) || v < 1)
            return perr(w, "num_ranks: want 1 to 2^24");
        g->prog = calloc((size_t)v, sizeof *g->prog);
        if (!g->prog)
            return perr(w, "out of memory for %d ranks", (int)v);
        g->nrank = (int)v;
        return 0;
    }
    if (!strcmp(t0, "rank")) {
        if (!g->nrank)
            return perr(w, "'rank' before num_ranks");
        if (*rank >= 0)
            return perr(w, "'rank' inside rank %d's block (missing '}')", *rank);
        if (l->n != 3 || strcmp(l->tok[2], "{") || !parse_uint(l->tok[1], (uint64_t)g->nrank - 1, &v))
            return perr(w, "expected 'rank R {' with R in 0..%d", g->nrank - 1);
        if (g->prog[v].ops)
            return perr(w, "rank %d's block given twice", (int)v);
        *rank = (int)v;
        return 0;
    }
    if (!strcmp(t0, "}")) {
        if (*rank < 0)
            return perr(w, "'}' outside a rank block");
        if (l->n != 1)
            return perr(w, "unexpected '%s' after '}'", l->tok[1]);
        int rc = block_commit(b, &g->prog[*rank]) ? perr(w, "out of memory") : 0;
        block_reset(b);
        *rank = -1;
        return rc;
    }
    if (*rank < 0)
        return perr(w, "'%s' outside a rank block", t0);
    if (l->n >= 2 && (!strcmp(l->tok[1], "requires") || !strcmp(l->tok[1], "irequires")))
        return parse_dep(b, l, w);
    return parse_op(b, l, g->nrank, g, w);
}

int sim_goal_parse(const char *text, size_t len, const char *name, sim_goal_t **out, char *msg,
                   size_t msglen)
{
    *out = NULL;
    where_t w = {name, 0, msg, msglen};
    sim_goal_t *g = calloc(1, sizeof *g);
    line_t *l = malloc(sizeof *l);
    if (!g || !l) {
        free(g), free(l);
        return perr(&w, "out of memory");
    }
    g->cpus = g->nics = 1;
    block_t b;
    memset(&b, 0, sizeof b);
    const char *pos = text, *end = text + len;
    bool in_comment = false;
    int rank = -1, rc = 0, more;
    while (!rc && (more = next_line(&pos, end, l, &w, &in_comment)) != 0) {
        if (more < 0)
            rc = WEFT_EINVAL;
        else if (l->n)
            rc = parse_line(g, &b, l, &rank, &w);
    }
    if (!rc && in_comment)
        rc = perr(&w, "a comment is never closed");
    if (!rc && rank >= 0)
        rc = perr(&w, "rank %d's block is never closed", rank);
    if (!rc && !g->nrank)
        rc = perr(&w, "no num_ranks line");
    free(l);
    block_free(&b);
    if (rc) {
        sim_goal_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int sim_goal_load(const char *path, sim_goal_t **out, char *msg, size_t len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        return WEFT_EINVAL;
    }
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    while (text) {
        if (n == cap) {
            char *t = realloc(text, cap * 2);
            if (!t) {
                free(text);
                text = NULL;
                break;
            }
            text = t, cap *= 2;
        }
        size_t got = fread(text + n, 1, cap - n, f);
        n += got;
        if (!got)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        free(text);
        snprintf(msg, len, "%s: %s", path, bad ? "read error" : "out of memory");
        return WEFT_EINVAL;
    }
    int rc = sim_goal_parse(text, n, path, out, msg, len);
    free(text);
    return rc;
}

int sim_goal_nrank(const sim_goal_t *g) { return g->nrank; }

void sim_goal_adapt(const sim_goal_t *g, sim_model_t *m)
{
    if (g->cpus > m->cpus)
        m->cpus = g->cpus;
    if (g->nics > m->ports)
        m->ports = g->nics;
}

int sim_goal_build(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len)
{
    const sim_goal_t *g = ctx;
    const sim_prog_t *p = &g->prog[rank];
    if (sim_prog_alloc(out, p->nops, p->nedges)) {
        snprintf(msg, len, "out of memory");
        return WEFT_ENOMEM;
    }
    if (p->ops) /* the run counts pending down: it gets a copy */
        memcpy(out->ops, p->ops, sim_prog_bytes(p));
    else
        out->succ_first[0] = 0; /* a rank without a block */
    return 0;
}
