/* stress.c — `weft stress`: random collectives, every result checked.
 *
 * Every rank draws the same sequence of calls from one seed: collective,
 * algorithm (or auto) and its parameters, count (0, small, odd, past one
 * shared-memory cell), datatype, op (every builtin one the type has, a
 * commutative user op and a non-commutative one), root, in place or not,
 * communicator (world, a dup, a split by parity), mode (blocking,
 * split-phase, *_timeout with random timeouts) and, per rank, user buffers
 * from malloc or weft_alloc, overwritten as soon as the call returns (a
 * peer still reading them in place would fail).  Data are a hash of (seed,
 * call, rank, element), so each rank computes the reference itself:
 * integers exactly, wrapping as the op does; floats against a float64
 * reference; bitwise identity across ranks where the algorithm claims it.
 * A refusal (an algorithm that cannot serve the op or P) must say why and
 * happen on every rank alike.
 *
 * --faults runs short jobs instead, each with one fault at a random call:
 * a rank killed, a rank stopped (SIGSTOP), a rank passing another count,
 * root, op or collective, or (--fault-kinds refuse) a rank passing what
 * weft refuses before the call begins; every survivor must end in the
 * error that fault implies (WEFT_EPEER, WEFT_ETIMEDOUT, WEFT_EMISMATCH or
 * WEFT_EPEER; the refuser WEFT_EINVAL), in bounded time, and nothing may
 * be left in /dev/shm. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "core/core.h"
#include "launch/launch.h"
#include "tool.h"
#ifdef WEFT_HAVE_MPI
#include <mpi.h>

#include "weft_mpi.h"
#endif

typedef struct stress_opts {
    int np;
    double minutes;
    uint64_t seed;
    int faults;   /* --faults: number of fault jobs */
    int verbose;
    /* inside a fault job */
    const char *fault; /* kill | stop | mismatch | refuse */
    const char *kinds[8]; /* the driver's: the jobs' faults in turn (--fault-kinds) */
    int nkinds;
    int fault_rank;
    long fault_at;
    bool fault_in_batch; /* --overlapped: made in the first overlapped batch after it */
    bool mpi;            /* --mpi: a rank of mpirun's job, over weft_comm_from_mpi */
    int threads;         /* --threads: streams of calls per rank, each in its own thread */
    int fault_limit_ms;  /* --fault-limit: a fault job's communicators' time limit */
    int fault_delay_ms;  /* --fault-delay: the faulty rank sleeps so long first */
} stress_opts_t;

/* The world of the thread's stream of calls: weft_init's, or under mpirun
 * (--mpi) MPI_COMM_WORLD's twin; with --threads, a dup of it per thread. */
static _Thread_local weft_comm_t stress_world;

/* ---- the shared random sequence ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t next(rng_t *r) { return mix64(r->s++); }
static int pick(rng_t *r, int n) { return (int)(next(r) % (uint64_t)n); }

/* ---- user ops ---- */

/* x -> a x + b (mod 2^32), composed in rank order: not commutative */
static void affine_fn(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (size_t i = 0; i < n; i++) {
        uint32_t fa = (uint32_t)(a[i] >> 32), fb = (uint32_t)a[i];
        uint32_t ga = (uint32_t)(b[i] >> 32), gb = (uint32_t)b[i];
        b[i] = (uint64_t)(fa * ga) << 32 | (uint32_t)(fa * gb + fb);
    }
}

static void usersum_fn(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    for (size_t i = 0; i < n; i++)
        ((uint64_t *)inout)[i] += ((const uint64_t *)in)[i];
}

static weft_op_t op_affine, op_usersum;

/* ---- one call ---- */

typedef struct call {
    long index;
    int comm;          /* 0 world, 1 dup, 2 split by parity */
    weft_coll_t coll;
    const char *algo;  /* NULL: auto */
    char params[96];
    weft_dtype_t dt;
    weft_op_t op;      /* builtin, op_affine or op_usersum */
    size_t count;
    int root;
    bool inplace;
    int mode;          /* 0 blocking, 1 split-phase, 2 *_timeout */
    int timeout_ms;
    int refuse;        /* a refuse job's fault: REFUSE_* below, 0 none */
} call_t;

/* What this rank alone passes in a refuse job's faulty call, for weft to
 * refuse before the call begins: no buffers (the call as its peers make
 * it), or a datatype that does not exist (another call). */
enum { REFUSE_NULL_BUFFERS = 1, REFUSE_BAD_DTYPE = 2 };
#define BAD_DTYPE ((weft_dtype_t)99)

static const char *const mode_name[3] = {"blocking", "split-phase", "timeout"};

static void describe(const call_t *c, char *buf, size_t n)
{
    snprintf(buf, n, "call %ld: %s %s%s%s on %s, %zu x %s %s, root %d%s, %s", c->index,
             weft_coll_name(c->coll), c->algo ? c->algo : "auto", c->params[0] ? "/" : "",
             c->params, c->comm == 0 ? "world" : c->comm == 1 ? "a dup" : "a split",
             c->count, weft_dtype_name(c->dt),
             c->op == op_affine ? "affine" : c->op == op_usersum ? "usersum" : weft_op_name(c->op),
             c->root, c->inplace ? ", in place" : "", mode_name[c->mode]);
}

/* Parameters for algorithm al: a random valid value for each key it takes. */
static void draw_params(rng_t *r, const algo_t *al, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    const char *keys = al->params;
    while (*keys && used < n) {
        const char *e = strchr(keys, ',');
        size_t kl = e ? (size_t)(e - keys) : strlen(keys);
        char key[16];
        snprintf(key, sizeof key, "%.*s", (int)kl, keys);
        char val[32] = "";
        if (!strcmp(key, "pace")) {
            /* the two-tree reduces' pacing (default off), drawn without
             * moving the sequence, so that every seed draws what it drew
             * before the key existed (the regression tests' seeds) */
            static const char *const pc[] = {"", "1", "3", "auto"};
            snprintf(val, sizeof val, "%s", pc[mix64(r->s ^ 0x7061636565ull) % 4]);
        } else if (pick(r, 3) != 0) { /* sometimes leave it at its default */
            if (!strcmp(key, "chunks")) {
                static const int ch[] = {1, 2, 3, 7, 64};
                snprintf(val, sizeof val, "%d", ch[pick(r, 5)]);
            } else if (!strcmp(key, "segment")) { /* rabenseifner's, bytes */
                static const char *const sg[] = {"1", "12", "256", "4K", "512K"};
                snprintf(val, sizeof val, "%s", sg[pick(r, 5)]);
            } else if (!strcmp(key, "fanout")) {
                static const char *const f[] = {"1", "2", "3", "auto"};
                snprintf(val, sizeof val, "%s", f[pick(r, 4)]);
            } else if (!strcmp(key, "sync")) {
                snprintf(val, sizeof val, "%s", pick(r, 2) ? "colouring" : "none");
            } else if (!strcmp(key, "node")) { /* hier_pap's node level */
                static const char *const l[] = {"chain", "leader", "twostep"};
                snprintf(val, sizeof val, "%s", l[pick(r, 3)]);
            } else if (!strcmp(key, "stage")) { /* linear_arena's stage copy */
                snprintf(val, sizeof val, "%s", pick(r, 2) ? "plain" : "stream");
            } else if (!strcmp(key, "threshold")) { /* adaptive's switch point, µs */
                static const char *const t[] = {"0", "5", "200", "100000000"};
                snprintf(val, sizeof val, "%s", t[pick(r, 4)]);
            } else {
                /* reduce=, bcast=, inter=: any algorithm of that collective
                 * (a new key must be taught here: a value it refuses turns
                 * a fault job's mismatch into a refusal on every rank) */
                if (strcmp(key, "reduce") && strcmp(key, "bcast") && strcmp(key, "inter")) {
                    fprintf(stderr, "stress: no values known for %s's key %s\n", al->name, key);
                    abort();
                }
                weft_coll_t pc = !strcmp(key, "reduce") ? WEFT_COLL_REDUCE
                               : !strcmp(key, "bcast")  ? WEFT_COLL_BCAST
                                                        : al->coll;
                int cnt = 0;
                while (weft_algorithm_name(pc, cnt))
                    cnt++;
                const char *nm = weft_algorithm_name(pc, pick(r, cnt));
                const algo_t *part = algo_find(pc, nm);
                bool board = part && part->board; /* refused alike everywhere: a wasted call */
                if (!board && (strcmp(nm, "hier") || strcmp(key, "inter")))
                    snprintf(val, sizeof val, "%s", nm);
            }
        }
        if (val[0])
            used += (size_t)snprintf(out + used, n - used, "%s%s=%s", used ? "," : "", key, val);
        keys = e ? e + 1 : keys + kl;
    }
}

static void draw(rng_t *r, int P, call_t *c)
{
    static const weft_coll_t colls[] = {
        WEFT_COLL_ALLREDUCE, WEFT_COLL_ALLREDUCE, WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST,
        WEFT_COLL_BCAST,     WEFT_COLL_REDUCE,    WEFT_COLL_REDUCE,    WEFT_COLL_REDUCE_SCATTER,
        WEFT_COLL_ALLGATHER, WEFT_COLL_SCATTER,   WEFT_COLL_GATHER,    WEFT_COLL_BARRIER};
    memset(c, 0, sizeof *c);
    c->comm = pick(r, 4) == 0 ? 1 : pick(r, 4) == 0 ? 2 : 0;
    c->coll = colls[pick(r, (int)(sizeof colls / sizeof colls[0]))];
    int na = 0;
    while (weft_algorithm_name(c->coll, na))
        na++;
    if (pick(r, 4) != 0) {
        c->algo = weft_algorithm_name(c->coll, pick(r, na));
        draw_params(r, algo_find(c->coll, c->algo), c->params, sizeof c->params);
    }
    c->dt = (weft_dtype_t)pick(r, WEFT_DTYPE_COUNT);
    c->op = WEFT_SUM;
    if (coll_is_reduction(c->coll)) {
        int k = pick(r, 12);
        if (k == 10)
            c->dt = WEFT_UINT64, c->op = op_affine;
        else if (k == 11)
            c->dt = WEFT_UINT64, c->op = op_usersum;
        else
            c->op = elem_is_float(c->dt) ? pick(r, 4) : pick(r, WEFT_OP_BUILTIN_COUNT);
    }
    static const size_t small[] = {0, 1, 2, 3, 5, 17, 100, 1001};
    switch (pick(r, 5)) {
    case 0: c->count = small[pick(r, 8)]; break;
    case 1: c->count = (size_t)P - 1 + (size_t)pick(r, 3); break;
    case 2: c->count = (size_t)pick(r, 5000); break;
    case 3: c->count = 2 * (size_t)P + 3; break;
    default: c->count = 9000 + (size_t)pick(r, 30000); break; /* past one cell */
    }
    if (!coll_is_reduction(c->coll) && c->coll != WEFT_COLL_BCAST && c->count > 4000)
        c->count /= 8; /* P blocks of it */
    c->root = pick(r, P); /* taken modulo the communicator's size */
    c->inplace = pick(r, 3) == 0;
    c->mode = 0;
    if (c->coll == WEFT_COLL_ALLREDUCE || c->coll == WEFT_COLL_BCAST || c->coll == WEFT_COLL_REDUCE)
        c->mode = pick(r, 10) < 6 ? 0 : pick(r, 2) ? 1 : 2;
    c->timeout_ms = pick(r, 3);
}

/* ---- data and references ---- */

/* A hash of (seed, call, rank, salt): element j's data take salt j * K. */
static uint64_t rank_hash(const stress_opts_t *o, const call_t *c, int r, uint64_t salt)
{
    return mix64(o->seed ^ mix64((uint64_t)c->index * 1000003u + (uint64_t)r) ^ salt);
}

/* Element j of rank r's input in call c. */
static double value(const stress_opts_t *o, const call_t *c, int r, size_t j)
{
    uint64_t h = rank_hash(o, c, r, j * 0x632be5ab);
    if (elem_is_float(c->dt)) {
        /* small integers: sums exact in every order up to P = 64, and
         * products are 0 or +-2^k with k < 12 (float16 overflows past 2^15,
         * and then the order decides between inf and NaN): ranks from 11
         * on give only -1, 0 and 1 to a product */
        if (c->dt == WEFT_FLOAT16 || c->dt == WEFT_BFLOAT16)
            return c->op == WEFT_PROD && r >= 11 ? (double)((int)(h % 3) - 1)
                                                 : (double)((int)(h % 5) - 2);
        double u = (double)(h >> 11) * 0x1p-53;
        if (c->op == WEFT_PROD)
            return (h & 1 ? 1 : -1) * (0.75 + 0.5 * u);
        return 2 * u - 1;
    }
    if ((c->op == WEFT_LAND || c->op == WEFT_LOR) && h % 3 == 0)
        return 0;
    return (double)((int64_t)(h % 201) - 100);
}

static uint64_t affine_value(const stress_opts_t *o, const call_t *c, int r, size_t j)
{
    return rank_hash(o, c, r, j * 0x632be5ab) | 1ull << 32; /* a odd */
}

static void put(const stress_opts_t *o, const call_t *c, void *buf, size_t i, int r, size_t j)
{
    if (c->op == op_affine)
        ((uint64_t *)buf)[i] = affine_value(o, c, r, j);
    else if (elem_is_float(c->dt))
        elem_put_float(buf, i, c->dt, value(o, c, r, j));
    else
        elem_put_int(buf, i, c->dt, (int64_t)value(o, c, r, j));
}

/* Is out[i] the reduction over ranks 0..n-1 (rank order) of element j? */
static bool reduced_ok(const stress_opts_t *o, const call_t *c, const void *out, size_t i,
                       int n, size_t j)
{
    if (c->op == op_affine) {
        uint64_t acc = affine_value(o, c, n - 1, j);
        for (int r = n - 2; r >= 0; r--) {
            uint64_t f = affine_value(o, c, r, j);
            affine_fn(&f, &acc, 1, c->dt, NULL);
        }
        return ((const uint64_t *)out)[i] == acc;
    }
    if (elem_is_float(c->dt)) {
        double acc = 0, mag = 0;
        for (int r = 0; r < n; r++) {
            char tmp[8];
            elem_put_float(tmp, 0, c->dt, value(o, c, r, j)); /* as the type holds it */
            double v = elem_get_float(tmp, 0, c->dt);
            if (r == 0)
                acc = v;
            else if (c->op == WEFT_SUM)
                acc += v;
            else if (c->op == WEFT_PROD)
                acc *= v;
            else if (c->op == WEFT_MIN)
                acc = v < acc ? v : acc;
            else
                acc = v > acc ? v : acc;
            mag += fabs(v);
        }
        double got = elem_get_float(out, i, c->dt);
        double eps = c->dt == WEFT_FLOAT64 ? 0x1p-52 : c->dt == WEFT_FLOAT32 ? 0x1p-23
                   : c->dt == WEFT_FLOAT16 ? 0x1p-10 : 0x1p-7;
        double tol = c->op == WEFT_SUM ? 2.0 * n * eps * mag
                   : c->op == WEFT_PROD ? 2.0 * n * eps * fabs(acc) : 0;
        return fabs(got - acc) <= tol;
    }
    uint64_t acc = 0;
    for (int r = 0; r < n; r++) {
        uint64_t v = (uint64_t)elem_wrap((int64_t)value(o, c, r, j), c->dt);
        /* one rank's value as it is, even under land/lor (as MPI) */
        acc = r == 0 ? v : elem_combine_int(c->op == op_usersum ? WEFT_SUM : c->op, c->dt, acc, v);
    }
    return elem_get_int(out, i, c->dt) == elem_wrap((int64_t)acc, c->dt);
}

/* ---- running and checking one call ---- */

typedef struct stats {
    long checked, refused, failed;
    long overlapped; /* calls made in overlapped batches */
} stats_t;

/* Layout of the call on a communicator of n ranks: elements of input and
 * output this rank passes. */
static void sizes_of(const call_t *c, int n, int me, int root, size_t *in_n, size_t *out_n)
{
    size_t k = c->count, nk = (size_t)n * k;
    switch (c->coll) {
    case WEFT_COLL_BCAST: *in_n = 0, *out_n = k; break;
    case WEFT_COLL_REDUCE_SCATTER: *in_n = nk, *out_n = c->inplace ? nk : k; break;
    case WEFT_COLL_ALLGATHER: *in_n = k, *out_n = nk; break;
    case WEFT_COLL_SCATTER: *in_n = me == root ? nk : 0, *out_n = k; break;
    case WEFT_COLL_GATHER: *in_n = k, *out_n = me == root ? nk : 0; break;
    case WEFT_COLL_BARRIER: *in_n = *out_n = 0; break;
    default: *in_n = k, *out_n = k; break;
    }
}

/* The call as this rank makes it: c, or with a refuse job's fault, a copy
 * in *made with its datatype replaced, or its buffers taken away. */
static const call_t *as_made(const call_t *c, call_t *made, const void **in, void **out)
{
    if (!c->refuse)
        return c;
    *made = *c;
    if (c->refuse == REFUSE_NULL_BUFFERS)
        *in = NULL, *out = NULL;
    else
        made->dt = BAD_DTYPE;
    return made;
}

static int issue(const call_t *c, weft_comm_t comm, int root, const void *in, void *out)
{
    call_t made;
    c = as_made(c, &made, &in, &out);
    size_t k = c->count;
    weft_request_t req = NULL;
    int rc;
    switch (c->coll) {
    case WEFT_COLL_ALLREDUCE:
        if (c->mode == 1 && !(rc = weft_iallreduce(in, out, k, c->dt, c->op, comm, &req)))
            return weft_wait(&req);
        if (c->mode == 2) {
            while ((rc = weft_allreduce_timeout(in, out, k, c->dt, c->op, comm, c->timeout_ms)) ==
                   WEFT_ETIMEDOUT && !strstr(weft_last_error(), "revoked"))
                ;
            return rc;
        }
        return c->mode == 1 ? rc : (int)weft_allreduce(in, out, k, c->dt, c->op, comm);
    case WEFT_COLL_BCAST:
        if (c->mode == 1 && !(rc = weft_ibcast(out, k, c->dt, root, comm, &req)))
            return weft_wait(&req);
        if (c->mode == 2) {
            while ((rc = weft_bcast_timeout(out, k, c->dt, root, comm, c->timeout_ms)) ==
                   WEFT_ETIMEDOUT && !strstr(weft_last_error(), "revoked"))
                ;
            return rc;
        }
        return c->mode == 1 ? rc : (int)weft_bcast(out, k, c->dt, root, comm);
    case WEFT_COLL_REDUCE:
        if (c->mode == 1 && !(rc = weft_ireduce(in, out, k, c->dt, c->op, root, comm, &req)))
            return weft_wait(&req);
        if (c->mode == 2) {
            while ((rc = weft_reduce_timeout(in, out, k, c->dt, c->op, root, comm,
                                             c->timeout_ms)) == WEFT_ETIMEDOUT &&
                   !strstr(weft_last_error(), "revoked"))
                ;
            return rc;
        }
        return c->mode == 1 ? rc : (int)weft_reduce(in, out, k, c->dt, c->op, root, comm);
    case WEFT_COLL_REDUCE_SCATTER: return weft_reduce_scatter(in, out, k, c->dt, c->op, comm);
    case WEFT_COLL_ALLGATHER: return weft_allgather(in, out, k, c->dt, comm);
    case WEFT_COLL_SCATTER: return weft_scatter(in, out, k, c->dt, root, comm);
    case WEFT_COLL_GATHER: return weft_gather(in, out, k, c->dt, root, comm);
    default: return weft_barrier(comm);
    }
}

/* A refusal must say why: the op, P, or the parameters the algorithm lacks. */
static bool legit_refusal(int rc)
{
    const char *m = weft_last_error();
    return (rc == WEFT_EINVAL || rc == WEFT_ENOTSUP) &&
           (strstr(m, "commutative") || strstr(m, "idempotent") || strstr(m, "adaptable") ||
            strstr(m, "exact only") || strstr(m, "colouring") || strstr(m, "tags") ||
            strstr(m, "carries at most") || strstr(m, "one machine's shared memory") ||
            strstr(m, "is not a schedule") || strstr(m, "arrival record's") ||
            strstr(m, "segments; at most") || strstr(m, "needs shared memory among") ||
            strstr(m, "every pair of board slots is held")); /* --threads: 6 a thread */
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* A third of the calls, drawn per rank (so ranks of one call differ), take
 * their user buffers from weft_alloc: peers then read them in place in the
 * shared arena.  Each is freed after its call, so the next call's buffers
 * reuse the same blocks. */
static bool user_buffers_in_arena(const stress_opts_t *o, const call_t *c, int rank)
{
    return rank_hash(o, c, rank, 0xa7e4a0000000000full) % 3 == 0; /* a salt no element takes */
}

/* *arena: asked for, and whether it was had (without an arena, malloc). */
static char *buf_get(size_t bytes, bool *arena)
{
    void *p = NULL;
    if (*arena && weft_alloc(bytes, &p) == WEFT_OK)
        return p;
    *arena = false;
    return malloc(bytes);
}

static void buf_put(char *p, bool arena)
{
    if (arena)
        weft_free(p);
    else
        free(p);
}

/* In place: the input copied where the call takes it in the output, and
 * the argument that names WEFT_IN_PLACE. */
static void place_in_place(const call_t *c, int me, int root, size_t in_n, size_t es,
                           const char *in, char *out, const void **src, void **dst)
{
    size_t k = c->count;
    switch (c->coll) {
    case WEFT_COLL_ALLREDUCE: memcpy(out, in, k * es), *src = WEFT_IN_PLACE; break;
    case WEFT_COLL_REDUCE:
        if (me == root)
            memcpy(out, in, k * es), *src = WEFT_IN_PLACE;
        break;
    case WEFT_COLL_REDUCE_SCATTER: memcpy(out, in, in_n * es), *src = WEFT_IN_PLACE; break;
    case WEFT_COLL_ALLGATHER:
        memcpy(out + (size_t)me * k * es, in, k * es), *src = WEFT_IN_PLACE;
        break;
    case WEFT_COLL_SCATTER:
        if (me == root)
            *dst = WEFT_IN_PLACE;
        break;
    case WEFT_COLL_GATHER:
        if (me == root)
            memcpy(out + (size_t)root * k * es, in, k * es), *src = WEFT_IN_PLACE;
        break;
    default: break;
    }
}

/* A call's result as it ended: with calls in flight, weft_last_error()
 * may be another call's by the time it is judged. */
typedef struct outcome {
    int rc;
    bool refusal; /* a refusal that says why */
    char msg[400];
} outcome_t;

/* Takes rc (and the thread's message) as the call's outcome; keeps the
 * first error that is not a refusal in *first_rc. */
/* The message of the thread's first error (a fault job's verdict names
 * it: by the time the rank reports, weft_last_error() is a later call's). */
static _Thread_local char first_msg[400];
static _Thread_local double first_time; /* weft_now() when it was taken */

/* A stream's splits with the job rank of each of their ranks (a split
 * numbers its ranks by key: the job's in reverse; its other communicators
 * number them as the job does), and the one the thread is calling on: a
 * time limit's message names the ranks it waited for in that
 * communicator's numbering, and a fault job's judge wants the job's
 * (fault_job). */
enum { RANKMAPS = 4, RANKMAP_MAX = 64 };
typedef struct rankmap {
    weft_comm_t comm;
    int n, job[RANKMAP_MAX];
} rankmap_t;
static _Thread_local rankmap_t rankmaps[RANKMAPS];
static _Thread_local const rankmap_t *calling_on;
/* what first_error appends, and the judge reads */
static const char not_arrived_tag[] = " [not arrived, job ranks:",
                  in_call_tag[] = " [in the call, job ranks:";

static void rankmap_drop(weft_comm_t comm)
{
    for (int i = 0; i < RANKMAPS; i++)
        if (comm && rankmaps[i].comm == comm)
            rankmaps[i].comm = NULL;
}

/* A split's ranks in the job's numbering; without a free slot (or more
 * than RANKMAP_MAX ranks) its messages are read in its own numbering. */
static void rankmap_set(weft_comm_t comm, const int *job, int n)
{
    rankmap_drop(comm);
    for (int i = 0; i < RANKMAPS && n <= RANKMAP_MAX; i++)
        if (!rankmaps[i].comm) {
            rankmaps[i].comm = comm, rankmaps[i].n = n;
            memcpy(rankmaps[i].job, job, (size_t)n * sizeof *job);
            return;
        }
}

static void calling(weft_comm_t comm)
{
    calling_on = NULL;
    for (int i = 0; i < RANKMAPS && !calling_on; i++)
        if (rankmaps[i].comm == comm)
            calling_on = &rankmaps[i];
}

/* Appends to a time limit's message, after tag, the job ranks of those it
 * names as waited for in the way `how` says: " [not arrived, job ranks: 3
 * 5]" for "(has not arrived", " [in the call, job ranks: 0]" for "(in
 * this call". */
static void job_ranks_waited(char *msg, size_t size, const char *how, const char *tag)
{
    size_t used = strlen(msg), text = used; /* read only the message, not a tag added */
    bool any = false;
    for (const char *p = strstr(msg, " rank "); p && p < msg + text && used < size;
         p = strstr(p + 6, " rank ")) {
        int r, len = 0;
        if (sscanf(p, " rank %d (%n", &r, &len) != 1 || !len || strncmp(p + len, how, strlen(how)))
            continue;
        int job = calling_on && r >= 0 && r < calling_on->n ? calling_on->job[r] : r;
        used += (size_t)snprintf(msg + used, size - used, "%s %d", any ? "" : tag, job);
        any = true;
    }
    if (any && used < size)
        snprintf(msg + used, size - used, "]");
}

static void first_error(int *first_rc, int rc, const char *msg)
{
    if (*first_rc || !rc)
        return;
    *first_rc = rc;
    first_time = weft_now();
    snprintf(first_msg, sizeof first_msg, "%s", msg);
    if (rc == WEFT_ETIMEDOUT) {
        job_ranks_waited(first_msg, sizeof first_msg, "has not arrived", not_arrived_tag);
        job_ranks_waited(first_msg, sizeof first_msg, "in this call", in_call_tag);
    }
}

static void outcome_take(outcome_t *oc, int rc, int *first_rc)
{
    oc->rc = rc;
    oc->refusal = rc && legit_refusal(rc);
    snprintf(oc->msg, sizeof oc->msg, "%s", rc ? weft_last_error() : "");
    if (!oc->refusal)
        first_error(first_rc, rc, oc->msg);
}

/* Every rank must end alike: all OK, or all refusing.  0 when all ended
 * OK, 1 when all refused as they may, -1 otherwise (said on stderr). */
static int agree_on_outcome(const stress_opts_t *o, weft_comm_t ctrl, int me, const char *what,
                            const outcome_t *oc, int *first_rc)
{
    int rc = oc->rc;
    int32_t agree[2] = {rc, -rc};
    calling(ctrl);
    int arc = weft_allreduce(WEFT_IN_PLACE, agree, 2, WEFT_INT32, WEFT_MAX, ctrl);
    if (arc) {
        first_error(first_rc, arc, weft_last_error());
        if (!o->fault) /* a fault job's survivors are meant to fail here */
            fprintf(stderr, "stress: rank %d: %s: the agreement on its outcome failed: %s\n", me,
                    what, weft_last_error());
        return -1;
    }
    if (agree[0] != -agree[1]) {
        fprintf(stderr, "stress: rank %d: %s: ranks ended differently (codes %d..%d); here %d: %s\n",
                me, what, -agree[1], agree[0], rc, oc->msg);
        return -1;
    }
    if (!rc)
        return 0;
    int result = oc->refusal ? 1 : -1;
    if (result < 0 || o->verbose)
        fprintf(stderr, "stress: rank %d: %s: %s: %s\n", me, what,
                result < 0 ? "FAILED" : "refused", oc->msg);
    return result;
}

/* The number of wrong elements in this rank's result, *at the first
 * (root_bad: a bcast root's output, checked before it was overwritten). */
static size_t wrong_elements(const stress_opts_t *o, const call_t *c, int n, int me, int root,
                             size_t out_n, const char *out, char *want, const void *dst,
                             size_t root_bad, size_t *at)
{
    size_t bad = 0, es = weft_dtype_size(c->dt), k = c->count;
    bool have = true; /* does this rank hold a result to compare with want? */
    *at = 0;
    switch (c->coll) {
    case WEFT_COLL_ALLREDUCE:
    case WEFT_COLL_REDUCE:
        have = c->coll == WEFT_COLL_ALLREDUCE || me == root;
        for (size_t j = 0; have && j < k; j++)
            if (!reduced_ok(o, c, out, j, n, j) && !bad++)
                *at = j;
        return bad;
    case WEFT_COLL_REDUCE_SCATTER:
        for (size_t j = 0; j < k; j++)
            if (!reduced_ok(o, c, out, j, n, (size_t)me * k + j) && !bad++)
                *at = j;
        return bad;
    case WEFT_COLL_BCAST: /* want is filled by the caller */
        have = me != root;
        bad = root_bad;
        break;
    case WEFT_COLL_ALLGATHER:
        for (size_t j = 0; j < out_n; j++)
            put(o, c, want, j, (int)(j / (k ? k : 1)), j % (k ? k : 1));
        break;
    case WEFT_COLL_SCATTER:
        have = dst != WEFT_IN_PLACE;
        for (size_t j = 0; have && j < k; j++)
            put(o, c, want, j, root, (size_t)me * k + j);
        break;
    case WEFT_COLL_GATHER:
        have = me == root;
        for (size_t j = 0; have && j < out_n; j++)
            put(o, c, want, j, (int)(j / (k ? k : 1)), j % (k ? k : 1));
        break;
    default: return 0;
    }
    for (size_t j = 0; have && j < out_n; j++)
        if (memcmp(out + j * es, want + j * es, es) && !bad++)
            *at = j;
    return bad;
}

/* An allreduce whose algorithm claims bitwise identity: the same bytes on
 * every rank.  0, or -1 (said on stderr). */
static int check_identical(const call_t *c, weft_comm_t ctrl, int me, const char *what,
                           const char *out)
{
    if (c->coll != WEFT_COLL_ALLREDUCE || !c->algo ||
        !(weft_algorithm_properties_with(c->coll, c->algo, c->params) & WEFT_ALGO_IDENTICAL))
        return 0;
    uint64_t h[2] = {hash_bytes(out, c->count * weft_dtype_size(c->dt)), 0};
    h[1] = ~h[0];
    if (!weft_allreduce(WEFT_IN_PLACE, h, 2, WEFT_UINT64, WEFT_MAX, ctrl) && h[0] != ~h[1]) {
        fprintf(stderr, "stress: rank %d: %s: results differ between ranks though the "
                        "algorithm claims bitwise identity\n", me, what);
        return -1;
    }
    return 0;
}

/* A call from its buffers to its verdict, in phases, so that several can
 * be in flight at once (overlapped batches, below). */
typedef struct live {
    call_t c;
    weft_comm_t comm, ctrl;
    int n, me, root;
    size_t es, in_n, out_n, root_bad;
    char what[320];
    bool in_arena, out_arena;
    char *in_base, *out_base, *in, *out, *want;
    const void *src;
    void *dst;
    weft_request_t req;
    outcome_t ended;
} live_t;

/* Chooses the algorithm and fills the buffers; -1 (said) when the
 * algorithm cannot even be set. */
static int call_prepare(const stress_opts_t *o, weft_comm_t comm, weft_comm_t ctrl,
                        const call_t *c, live_t *L)
{
    memset(L, 0, sizeof *L);
    L->c = *c, L->comm = comm, L->ctrl = ctrl;
    L->n = weft_comm_size(comm), L->me = weft_comm_rank(comm), L->root = c->root % L->n;
    L->es = weft_dtype_size(c->dt);
    int me = L->me, root = L->root;
    size_t es = L->es, k = c->count;
    describe(c, L->what, sizeof L->what);
    if (weft_set_algorithm(comm, c->coll, c->algo ? c->algo : "auto",
                           c->params[0] ? c->params : NULL)) {
        fprintf(stderr, "stress: rank %d: %s: weft_set_algorithm: %s\n", me, L->what,
                weft_last_error());
        return -1;
    }
    sizes_of(c, L->n, me, root, &L->in_n, &L->out_n);
    /* user buffers at any element offset, not only as malloc aligns them:
     * copies between a buffer and a cell then meet every distance modulo
     * a page, glibc's slow ones included (core/copy.h) */
    static _Thread_local unsigned calls;
    size_t in_shift = (size_t)(me + calls) % 16 * es, out_shift = (size_t)(me * 3 + calls * 5) % 16 * es;
    calls++;
    L->in_arena = L->out_arena = user_buffers_in_arena(o, c, me);
    L->in_base = buf_get(L->in_n * es + 16 * es + 8, &L->in_arena);
    L->out_base = buf_get(L->out_n * es + 16 * es + 8, &L->out_arena);
    if (L->in_arena || L->out_arena) {
        size_t l = strlen(L->what);
        snprintf(L->what + l, sizeof L->what - l, ", weft_alloc'd buffers");
    }
    L->in = L->in_base + in_shift, L->out = L->out_base + out_shift;
    L->want = malloc(L->out_n * es + 8);
    memset(L->out, 0xa5, L->out_n * es);
    for (size_t i = 0; i < L->in_n; i++)
        put(o, c, L->in, i, me, i);
    L->src = L->in, L->dst = L->out;
    if (c->inplace)
        place_in_place(c, me, root, L->in_n, es, L->in, L->out, &L->src, &L->dst);
    if (c->coll == WEFT_COLL_BCAST && me == root)
        for (size_t i = 0; i < k; i++)
            put(o, c, L->out, i, root, i);
    if (o->verbose > 1)
        fprintf(stderr, "stress: rank %d: %s\n", weft_comm_rank(stress_world), L->what);
    return 0;
}

/* The call has returned (or its request completed), so its input is the
 * caller's again: a peer still reading it in place (single copy, the
 * arena) would now read other bytes and fail its check.  A bcast root's
 * input is its output: checked before it is overwritten. */
static void call_returned(const stress_opts_t *o, live_t *L)
{
    const call_t *c = &L->c;
    if (c->coll == WEFT_COLL_BCAST) {
        for (size_t j = 0; j < c->count; j++)
            put(o, c, L->want, j, L->root, j);
        if (L->me == L->root && !L->ended.rc) {
            L->root_bad = memcmp(L->out, L->want, c->count * L->es) != 0;
            memset(L->out, 0x5a, c->count * L->es);
        }
    }
    memset(L->in, 0x5a, L->in_n * L->es);
}

/* Agreement across ranks, then the result; frees the buffers.  0:
 * checked, 1: refused alike, -1: failed (reported). */
static int call_judge(const stress_opts_t *o, live_t *L, int *first_rc)
{
    const call_t *c = &L->c;
    int result = agree_on_outcome(o, L->ctrl, L->me, L->what, &L->ended, first_rc);
    if (result == 0) {
        size_t at, bad = wrong_elements(o, c, L->n, L->me, L->root, L->out_n, L->out, L->want,
                                        L->dst, L->root_bad, &at);
        if (bad) {
            fprintf(stderr, "stress: rank %d: %s: %zu wrong elements, first at %zu\n", L->me,
                    L->what, bad, at);
            result = -1;
        }
        if (check_identical(c, L->ctrl, L->me, L->what, L->out))
            result = -1;
    }
    buf_put(L->in_base, L->in_arena), buf_put(L->out_base, L->out_arena), free(L->want);
    return result;
}

static int run_call(const stress_opts_t *o, weft_comm_t comm, weft_comm_t ctrl, const call_t *c,
                    int *first_rc)
{
    live_t L;
    if (call_prepare(o, comm, ctrl, c, &L))
        return -1;
    calling(comm);
    outcome_take(&L.ended, issue(c, comm, L.root, L.src, L.dst), first_rc);
    call_returned(o, &L);
    return call_judge(o, &L, first_rc);
}

/* ---- a rank's loop ---- */

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* In a fault job, a line for the driver, appended to $WEFT_STRESS_OUT
 * (one write: the ranks append at once). */
static void report_line(const char *line, size_t l)
{
    const char *path = getenv("WEFT_STRESS_OUT");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0) {
        if (write(fd, line, l) < 0)
            perror("stress: report");
        close(fd);
    }
}

/* What this rank saw first, and when (weft_now(): the clock is the
 * machine's, one for every rank, so the driver can set it beside the
 * fault's time, report_fault). */
static void report_outcome(int rank, int rc, const char *msg, double when)
{
    char line[600];
    int l = snprintf(line, sizeof line, "rank %d code %d %s {at %.6f}\n", rank, rc,
                     rc ? msg : "", when);
    if (l >= (int)sizeof line) /* cut: the time goes, the line stays a line */
        line[sizeof line - 2] = '\n', l = (int)sizeof line - 1;
    report_line(line, (size_t)l);
}

/* The faulty rank, about to make its fault: when.  A survivor's time
 * limit that ran out before it cannot be the fault's doing (fault_job). */
static void report_fault(int rank)
{
    char line[64];
    int l = snprintf(line, sizeof line, "fault %d at %.6f\n", rank, weft_now());
    report_line(line, (size_t)l);
}

/* The fault of a mismatch job: c changed so that this rank disagrees.
 * What differs is drawn from the job's seed: the count, the root, the op
 * or the collective.  The last two by AUTO: the algorithm the peers were
 * told to use may not serve the other call, which this rank alone would
 * then refuse instead of disagreeing. */
static void change_call(const stress_opts_t *o, call_t *c, long fault_at)
{
    rng_t how = {mix64(o->seed ^ 0x6d15a7c4ull) + (uint64_t)fault_at};
    bool rooted = coll_is_rooted(c->coll), three = c->coll == WEFT_COLL_ALLREDUCE ||
                                                   c->coll == WEFT_COLL_BCAST ||
                                                   c->coll == WEFT_COLL_REDUCE;
    bool builtin = coll_is_reduction(c->coll) && c->op >= 0 && c->op < WEFT_OP_BUILTIN_COUNT;
    switch (pick(&how, 4)) {
    case 1:
        if (rooted) {
            c->root++; /* taken modulo the communicator's size: another rank */
            return;
        }
        break;
    case 2:
        if (builtin) { /* min and max serve every datatype */
            c->op = c->op == WEFT_MAX ? WEFT_MIN : WEFT_MAX;
            c->algo = NULL, c->params[0] = '\0';
            return;
        }
        break;
    case 3:
        if (three) { /* the same count, op and root; allreduce -> bcast -> reduce -> allreduce */
            c->coll = c->coll == WEFT_COLL_ALLREDUCE ? WEFT_COLL_BCAST
                      : c->coll == WEFT_COLL_BCAST   ? WEFT_COLL_REDUCE
                                                     : WEFT_COLL_ALLREDUCE;
            c->algo = NULL, c->params[0] = '\0';
            return;
        }
        break;
    default: break;
    }
    c->count++;
}

/* The fault of a fault job, made at this rank's call c (its index
 * *fault_at): killed, stopped, or the call changed so the ranks disagree
 * (said with --verbose).  A mismatch needs a peer: alone in its split,
 * the fault moves on a call. */
static void make_fault(const stress_opts_t *o, weft_comm_t comm, call_t *c, long *fault_at)
{
    bool alters = !strcmp(o->fault, "mismatch") || !strcmp(o->fault, "refuse");
    if (alters && weft_comm_size(comm) == 1) {
        ++*fault_at;
        return;
    }
    if (o->fault_delay_ms) /* the peers' time limits run out first */
        nanosleep(&(struct timespec){o->fault_delay_ms / 1000, o->fault_delay_ms % 1000 * 1000000L},
                  NULL);
    report_fault(weft_comm_rank(stress_world));
    if (!strcmp(o->fault, "kill"))
        raise(SIGKILL);
    /* stopped for good: the launcher kills it once the job fails.  A
     * SIGCONT from outside stops it again, or it would go on into the
     * call changed below, a mismatch the job did not ask for.  The kernel
     * sends one (after a SIGHUP, which nohup ignores) to every stopped
     * process of a group that becomes orphaned: a fault job run from a
     * background loop whose shell exited failed so, once in 320 jobs. */
    if (!strcmp(o->fault, "stop"))
        for (;;)
            raise(SIGSTOP);
    /* a barrier has no count: call an allreduce instead, by AUTO (the
     * barrier's algorithm is no allreduce: naming it made this rank skip
     * the call, a fault of another kind) */
    if (c->coll == WEFT_COLL_BARRIER)
        c->coll = WEFT_COLL_ALLREDUCE, c->count = 1, c->op = WEFT_SUM, c->algo = NULL,
        c->params[0] = '\0';
    char was[200], now[200];
    describe(c, was, sizeof was);
    if (!strcmp(o->fault, "refuse")) {
        /* without elements no buffer is needed: nothing to refuse */
        rng_t how = {mix64(o->seed ^ 0x2ef05eull) + (uint64_t)*fault_at};
        c->refuse = c->count && pick(&how, 2) ? REFUSE_NULL_BUFFERS : REFUSE_BAD_DTYPE;
        if (o->verbose)
            fprintf(stderr, "stress: rank %d: the fault: %s with %s\n",
                    weft_comm_rank(stress_world), was,
                    c->refuse == REFUSE_NULL_BUFFERS ? "no buffers"
                                                     : "a datatype that does not exist");
        return;
    }
    change_call(o, c, *fault_at);
    describe(c, now, sizeof now);
    if (o->verbose)
        fprintf(stderr, "stress: rank %d: the fault: %s instead of %s\n",
                weft_comm_rank(stress_world), now, was);
}

/* ---- overlapped batches ----
 *
 * MPI lets a rank start several nonblocking collectives and complete them
 * in any order, and its peers need not pick the same order; a rank may
 * even make one of them blocking while the others are in flight.  A batch
 * is 2-6 split-phase allreduce, bcast or reduce calls on any of the
 * communicators, started by every rank in one order; then each rank, by
 * its own draw, makes some of them blocking where they start and waits
 * for the rest in an order of its own, by weft_wait or by polling
 * weft_test.  A wait or test must move every call in flight: one that
 * moved only its own left peers waiting in another order for ever. */
#define BATCH_MAX 6

/* A batch's calls come from their own sequence (shared by the ranks), so
 * that the main sequence, and the call a fault job's fault falls on, is
 * what it was before batches were drawn; their indices (data salts) lie
 * apart from the main sequence's. */
#define BATCH_INDEX0 (1l << 40)

static void draw_overlapped(rng_t *r, int P, call_t *c)
{
    do
        draw(r, P, c);
    while (c->coll != WEFT_COLL_ALLREDUCE && c->coll != WEFT_COLL_BCAST &&
           c->coll != WEFT_COLL_REDUCE);
    c->mode = 1;
}

static int start_split_phase(live_t *L)
{
    const void *src = L->src;
    void *dst = L->dst;
    call_t made;
    const call_t *c = as_made(&L->c, &made, &src, &dst);
    switch (c->coll) {
    case WEFT_COLL_ALLREDUCE:
        return weft_iallreduce(src, dst, c->count, c->dt, c->op, L->comm, &L->req);
    case WEFT_COLL_BCAST: return weft_ibcast(dst, c->count, c->dt, L->root, L->comm, &L->req);
    default:
        return weft_ireduce(src, dst, c->count, c->dt, c->op, L->root, L->comm, &L->req);
    }
}

/* Completes L's request by weft_wait or, polling, by weft_test.  A poll
 * knows no timeout (MPI_Test's rule), so after 20 ms it waits instead: a
 * fault job's stopped peer must end in the communicator's timeout. */
static int finish_split_phase(live_t *L, bool poll)
{
    double until = weft_now() + 0.02;
    for (unsigned spins = 0; poll; spins++) {
        int done = 0, rc = weft_test(&L->req, &done);
        if (rc || done)
            return rc;
        if (spins % 16 == 15) {
            if (weft_now() > until)
                break;
            sched_yield();
        }
    }
    return weft_wait(&L->req);
}

/* Runs one batch of nb calls and adds their verdicts to *st; returns once
 * every call of it has ended on this rank.  *fault_pending (a fault job's
 * fault rank, once its fault is due): the fault is made at the first call
 * of the batch that can take it, and stays due when that call was refused
 * alike before any byte moved. */
static void run_batch(const stress_opts_t *o, const weft_comm_t *comms, const weft_comm_t *ctrls,
                      rng_t *shared, long batch, int nb, stats_t *st, int *first_rc,
                      bool *fault_pending)
{
    weft_comm_t world = stress_world;
    int P = weft_comm_size(world), me = weft_comm_rank(world);
    rng_t mine = {mix64(o->seed ^ 0x0a7e51eull) + (uint64_t)batch * 7919u + (uint64_t)me * 104729u};
    live_t L[BATCH_MAX];
    bool prepared[BATCH_MAX];
    int order[BATCH_MAX], waits = 0, fault_j = -1;
    for (int j = 0; j < nb; j++) {
        call_t c;
        draw_overlapped(shared, P, &c);
        c.index = BATCH_INDEX0 + batch * BATCH_MAX + j;
        if (*fault_pending) {
            long moved = 0; /* a mismatch needs a peer in the call's communicator */
            make_fault(o, comms[c.comm], &c, &moved);
            if (!moved)
                *fault_pending = false, fault_j = j;
        }
        bool blocking = pick(&mine, 5) == 0;
        if (blocking)
            c.mode = 0;
        prepared[j] = !call_prepare(o, comms[c.comm], ctrls[c.comm], &c, &L[j]);
        if (!prepared[j])
            continue;
        calling(L[j].comm);
        int rc = blocking ? issue(&c, L[j].comm, L[j].root, L[j].src, L[j].dst)
                          : start_split_phase(&L[j]);
        if (blocking || rc) { /* ended, or refused at the start: nothing in flight */
            outcome_take(&L[j].ended, rc, first_rc);
            call_returned(o, &L[j]);
        } else {
            order[waits++] = j;
        }
    }
    for (int j = waits - 1; j > 0; j--) { /* this rank's own order */
        int x = pick(&mine, j + 1), t = order[j];
        order[j] = order[x], order[x] = t;
    }
    for (int w = 0; w < waits; w++) {
        live_t *l = &L[order[w]];
        /* the errors in the order they came */
        calling(l->comm);
        outcome_take(&l->ended, finish_split_phase(l, pick(&mine, 3) == 0), first_rc);
        call_returned(o, l);
    }
    st->overlapped += nb;
    for (int j = 0; j < nb; j++) {
        int res = prepared[j] ? call_judge(o, &L[j], first_rc) : -1;
        if (j == fault_j && res == 1)
            *fault_pending = true;
        st->checked += res == 0;
        st->refused += res == 1;
        st->failed += res < 0;
    }
}

/* The colour of rank r of P in a split made `how` (by parity, halves,
 * thirds). */
static int split_colour(int how, int r, int P)
{
    return how % 3 == 0 ? r % 2 : how % 3 == 1 ? r < (P + 1) / 2 : r % 3;
}

/* Communicator which (1: a dup of the world, 2: a split, ranks reversed)
 * and its control twin, with a fault job's timeouts. */
static int make_comm(const stress_opts_t *o, weft_comm_t *comms, weft_comm_t *ctrls, int which,
                     int how)
{
    /* how (made again: drawn alike on every rank): the split's colours
     * (by parity, halves, thirds) and its parent (the world, or the dup:
     * a split that may outlive its parent, made again later) */
    weft_comm_t parent = how >= 3 ? comms[1] : comms[0];
    int P = weft_comm_size(parent), me = weft_comm_rank(parent);
    calling(parent);
    int colour = split_colour(how, me, P);
    int rc = which == 1 ? weft_comm_dup(comms[0], &comms[which])
                        : weft_comm_split(parent, colour, P - me, &comms[which]);
    if (rc)
        return rc;
    /* the split's ranks: its colour's, by key (P - rank: the parent's, in
     * the job's numbering, in reverse) */
    int job[RANKMAP_MAX], n = 0;
    for (int r = P - 1; which == 2 && P <= RANKMAP_MAX && r >= 0; r--)
        if (split_colour(how, r, P) == colour)
            job[n++] = r;
    if (n)
        rankmap_set(comms[which], job, n);
    calling(comms[which]);
    /* at once: making its control twin is a call on it, which another
     * thread's stopped rank may hold up (with the time limit set after
     * the twin, fault jobs with threads hung there) */
    if (o->fault)
        weft_comm_set_timeout(comms[which], o->fault_limit_ms);
    if ((rc = weft_comm_dup(comms[which], &ctrls[which]))) {
        rankmap_drop(comms[which]);
        weft_comm_free(&comms[which]);
        return rc;
    }
    if (o->fault)
        weft_comm_set_timeout(ctrls[which], o->fault_limit_ms);
    if (n)
        rankmap_set(ctrls[which], job, n);
    /* a dup inherits the algorithms its parent was last told to use: the
     * control calls run on AUTO, which serves them on any transport */
    for (int k = 0; k < WEFT_COLL_COUNT; k++)
        weft_set_algorithm(ctrls[which], (weft_coll_t)k, "auto", NULL);
    return WEFT_OK;
}

/* Frees the dup or the split (drawn from churn, alike on every rank) and
 * makes it again; -1 (said, *first_rc set) when it cannot be made. */
static int remake_comm(const stress_opts_t *o, weft_comm_t *comms, weft_comm_t *ctrls,
                       rng_t *churn, int *first_rc)
{
    int which = 1 + pick(churn, 2), how = pick(churn, 6);
    rankmap_drop(ctrls[which]), rankmap_drop(comms[which]);
    weft_comm_free(&ctrls[which]);
    weft_comm_free(&comms[which]);
    int rc = make_comm(o, comms, ctrls, which, how);
    if (!rc)
        return 0;
    outcome_t oc;
    outcome_take(&oc, rc, first_rc);
    fprintf(stderr, "stress: rank %d: making communicator %d again: %s\n",
            weft_comm_rank(comms[0]), which, oc.msg);
    first_error(first_rc, rc, oc.msg);
    return -1;
}

/* Every 64 calls rank 0 says whether the time is up and whether to print
 * the progress line; 1 to stop (or when the control calls fail). */
static int every_64(const stress_opts_t *o, weft_comm_t ctrl, int me, long calls, double t0,
                    double *last_print, long *max_rss)
{
    double now = weft_now();
    int32_t ctl[2] = {now - t0 >= o->minutes * 60, now - *last_print >= 10};
    long rss = rss_kib();
    if (weft_bcast(ctl, 2, WEFT_INT32, 0, ctrl) ||
        weft_allreduce(WEFT_IN_PLACE, &rss, 1, WEFT_INT64, WEFT_MAX, ctrl))
        return 1;
    *max_rss = rss > *max_rss ? rss : *max_rss;
    if (ctl[1] && me == 0) {
        printf("stress: t=%.0fs calls=%ld max RSS over ranks %ld KiB\n", now - t0, calls, rss);
        fflush(stdout);
        *last_print = now;
    }
    return ctl[0];
}

/* What one stream of calls did. */
typedef struct stream_result {
    stats_t st;
    long remade, max_rss;
    int first_rc; /* the first error that was not a refusal, and its message */
    char first_msg[400];
    double first_time; /* weft_now() when first_rc was taken */
    int rc; /* setting up, or the closing count, failed */
} stream_result_t;

/* One stream of calls on world, with communicators of its own made from
 * it: the sequences are drawn from o->seed.  Stream 0 prints the progress
 * lines. */
static void run_stream(const stress_opts_t *o, weft_comm_t world, int id, stream_result_t *res)
{
    weft_comm_t comms[3], ctrls[3];
    int P = weft_comm_size(world), me = weft_comm_rank(world);
    stress_world = world;
    comms[0] = world;
    /* first: with threads, another stream's fault may come while this one
     * still makes its communicators */
    if (o->fault)
        weft_comm_set_timeout(world, o->fault_limit_ms);
    int rc = weft_comm_dup(world, &ctrls[0]);
    if (!rc && o->fault)
        weft_comm_set_timeout(ctrls[0], o->fault_limit_ms);
    if (!rc && !(rc = make_comm(o, comms, ctrls, 1, 0)))
        rc = make_comm(o, comms, ctrls, 2, 0);
    if (rc) {
        fprintf(stderr, "stress: rank %d: setting up communicators: %s\n", me, weft_last_error());
        res->rc = 1;
        res->first_rc = rc; /* a fault job's verdict: another stream's fault */
        res->first_time = weft_now();
        snprintf(res->first_msg, sizeof res->first_msg, "%s", weft_last_error());
        return;
    }
    /* the batches and the communicators remade have sequences of their
     * own: the main one stays what it was before they existed */
    rng_t r = {o->seed}, batches = {o->seed ^ 0xba7c4e5ull}, churn = {o->seed ^ 0xc0ffee5ull};
    long nbatch = 0;
    stats_t st = {0, 0, 0, 0};
    double t0 = weft_now(), last_print = id ? 1e300 : t0;
    long limit = o->fault ? o->fault_at + 200 : -1, fault_at = o->fault_at;
    int first_rc = 0;
    bool batch_fault_due = false, batch_fault_made = false;
    for (long i = 0; limit < 0 || i < limit; i++) {
        call_t c;
        draw(&r, P, &c);
        c.index = i;
        bool fault_here = o->fault && id == 0 && me == o->fault_rank; /* thread 0's stream */
        if (fault_here && !o->fault_in_batch && i == fault_at)
            make_fault(o, comms[c.comm], &c, &fault_at);
        int res_call = run_call(o, comms[c.comm], ctrls[c.comm], &c, &first_rc);
        if (res_call == 1 && i == fault_at)
            fault_at++; /* refused before any byte moved: the fault is not made yet */
        st.checked += res_call == 0;
        st.refused += res_call == 1;
        st.failed += res_call < 0;
        if (first_rc)
            break; /* an error, not a wrong result: the job is dead */
        if (pick(&batches, 8) == 0) {
            if (fault_here && o->fault_in_batch && i >= fault_at && !batch_fault_made)
                batch_fault_due = true;
            run_batch(o, comms, ctrls, &batches, nbatch++, 2 + pick(&batches, BATCH_MAX - 1), &st,
                      &first_rc, &batch_fault_due);
            batch_fault_made |= o->fault_in_batch && i >= fault_at && !batch_fault_due;
            if (first_rc)
                break;
        }
        if (pick(&churn, 48) == 0) {
            res->remade++;
            if (remake_comm(o, comms, ctrls, &churn, &first_rc)) {
                st.failed++; /* said: making a communicator failed */
                break;
            }
        }
        if (!o->fault && i % 64 == 63 &&
            every_64(o, ctrls[0], me, i + 1, t0, &last_print, &res->max_rss))
            break;
    }
    res->first_rc = first_rc;
    snprintf(res->first_msg, sizeof res->first_msg, "%s", first_msg);
    res->first_time = first_time;
    if (!o->fault) {
        /* every rank makes every call: a call failed when it failed on any
         * rank */
        long failed = st.failed;
        res->rc = weft_allreduce(WEFT_IN_PLACE, &failed, 1, WEFT_INT64, WEFT_SUM, ctrls[0]);
        st.failed = failed;
    }
    res->st = st;
    if (o->fault)
        return; /* the job ends in weft_finalize, which frees them */
    for (int k = 0; k < 3; k++) {
        rankmap_drop(ctrls[k]), rankmap_drop(comms[k]);
        weft_comm_free(&ctrls[k]);
        if (k)
            weft_comm_free(&comms[k]);
    }
}

/* --threads: a stream per thread, each on a dup of the world made here
 * (in one order on every rank), with a seed of its own.  Threads make
 * and free communicators from different parents at once and wait on
 * calls in flight that other threads' waits may move, as weft.h allows. */
enum { THREADS_MAX = 8 };

typedef struct stream_arg {
    stress_opts_t o;
    weft_comm_t world;
    int id;
    stream_result_t *res;
} stream_arg_t;

static void *stream_thread(void *p)
{
    stream_arg_t *a = p;
    run_stream(&a->o, a->world, a->id, a->res);
    return NULL;
}

static int run_threads(const stress_opts_t *o, weft_comm_t world, stream_result_t *res)
{
    /* a fault job's dups are left to weft_finalize, as the streams leave
     * theirs: a call on them may have failed */
    stream_arg_t args[THREADS_MAX];
    pthread_t th[THREADS_MAX];
    int made = 0, rc = 0;
    for (; made < o->threads; made++) {
        stream_arg_t *a = &args[made];
        a->o = *o;
        a->o.seed = mix64(o->seed * THREADS_MAX + (uint64_t)made) % 1000000000000000ull;
        a->id = made, a->res = &res[made];
        int drc = weft_comm_dup(world, &a->world);
        if (drc) {
            fprintf(stderr, "stress: rank %d: a world for thread %d: %s\n",
                    weft_comm_rank(world), made, weft_last_error());
            /* a fault job's verdict: a peer's fault may come this early */
            res[made].first_rc = drc;
            res[made].first_time = weft_now();
            snprintf(res[made].first_msg, sizeof res[made].first_msg, "%s", weft_last_error());
            rc = 1;
            break;
        }
    }
    int started = 0;
    for (; !rc && started < made; started++)
        if (pthread_create(&th[started], NULL, stream_thread, &args[started])) {
            fprintf(stderr, "stress: rank %d: pthread_create failed\n", weft_comm_rank(world));
            rc = 1;
            break;
        }
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < made && !o->fault; t++)
        weft_comm_free(&args[t].world);
    return rc;
}

static int stress_rank(const stress_opts_t *o, weft_comm_t world)
{
    int P = weft_comm_size(world), me = weft_comm_rank(world);
    weft_op_create(affine_fn, NULL, 0, 0, &op_affine);
    weft_op_create(usersum_fn, NULL, 1, 0, &op_usersum);
    double t0 = weft_now();
    stream_result_t res[THREADS_MAX];
    memset(res, 0, sizeof res);
    int nstreams = o->threads > 1 ? o->threads : 1, rc = 0;
    if (o->fault) /* weft_finalize's barrier too must end if a peer stopped */
        weft_comm_set_timeout(world, o->fault_limit_ms);
    if (nstreams == 1)
        run_stream(o, world, 0, &res[0]);
    else
        rc = run_threads(o, world, res);
    if (o->fault) {
        /* the rank's verdict: the first error of the stream the fault is
         * made in (thread 0's), else of another (or of making a thread's
         * world), else weft_finalize's */
        int first = 0;
        const char *msg = "";
        double when = 0;
        for (int t = 0; t < nstreams && !first; t++)
            first = res[t].first_rc, msg = res[t].first_msg, when = res[t].first_time;
        if (!first && rc)
            first = WEFT_EINTERNAL, msg = "starting the threads failed", when = weft_now();
        int frc = weft_finalize();
        report_outcome(me, first ? first : frc, first ? msg : weft_last_error(),
                       first ? when : weft_now());
        return first || frc ? 3 : 0;
    }
    stream_result_t all;
    memset(&all, 0, sizeof all);
    for (int t = 0; t < nstreams; t++) {
        all.st.checked += res[t].st.checked, all.st.refused += res[t].st.refused;
        all.st.failed += res[t].st.failed, all.st.overlapped += res[t].st.overlapped;
        all.remade += res[t].remade;
        all.max_rss = res[t].max_rss > all.max_rss ? res[t].max_rss : all.max_rss;
        rc |= res[t].rc;
    }
    /* the failures are summed over ranks already (run_stream) */
    long calls = all.st.checked + all.st.refused + all.st.failed, failed = all.st.failed;
    if (me == 0) {
        char threads[32] = "";
        if (nstreams > 1)
            snprintf(threads, sizeof threads, " threads=%d", nstreams);
        printf("stress: P=%d seed=%llu%s %.1f min: calls checked %ld (%ld refused alike, %ld in "
               "overlapped batches, %ld communicators remade); %ld passed, %ld failed; max RSS "
               "over ranks %ld KiB\n",
               P, (unsigned long long)o->seed, threads, (weft_now() - t0) / 60, calls,
               all.st.refused, all.st.overlapped, all.remade, calls - failed, failed, all.max_rss);
    }
    weft_op_free(&op_affine);
    weft_op_free(&op_usersum);
    int frc = o->mpi ? WEFT_OK : weft_finalize(); /* under MPI: the caller's */
    return rc || frc || failed ? 1 : 0;
}

/* ---- the fault driver ---- */

/* Segments of jobs this process launched (their names carry its pid):
 * other jobs running beside it do not count. */
static int shm_entries(void)
{
    int n = 0;
    char mine[32];
    snprintf(mine, sizeof mine, "weft-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, mine, strlen(mine));
    if (d)
        closedir(d);
    return n;
}

/* Whether an error message names a rank ("rank 3", "ranks 0 and 2"): every
 * error a fault leads to does.  One that does not is another thread's or
 * an earlier call's message, returned with this call's code. */
static bool names_a_rank(const char *msg)
{
    for (const char *p = strstr(msg, "rank"); p; p = strstr(p + 4, "rank")) {
        const char *q = p + 4 + (p[4] == 's');
        if (*q == ' ' && q[1] >= '0' && q[1] <= '9')
            return true;
    }
    return false;
}

/* With threads, a mismatch's or refusal's faulty rank ends the stream of
 * its fault (thread 0's) there, but stays alive while its other streams
 * run.  A survivor whose own stream 0 did not take part in the faulty call
 * (outside the split it was made on, or past it unharmed) goes on and
 * waits for that rank in a later call it never makes; nothing can prove
 * a disagreement there (the rank has no record of that call), so until
 * the rank reaches weft_finalize only the time limit ends the wait.  That
 * ending is right when it names the faulty rank as never having arrived. */
static bool waited_for_gone(const char *msg, int frank)
{
    char who[48];
    snprintf(who, sizeof who, "rank %d (has not arrived", frank);
    return strstr(msg, who) != NULL;
}

/* Whether line (a rank's report) is a time limit's that names job rank x
 * after tag: in the job's numbering the stream added (first_error), else,
 * for one not arrived, as the message has it. */
static bool names_waited(const char *line, int x, const char *tag)
{
    const char *list = strstr(line, tag);
    if (!list)
        return tag == not_arrived_tag && waited_for_gone(line, x);
    list += strlen(tag);
    for (int r, len; sscanf(list, " %d%n", &r, &len) == 1; list += len)
        if (r == x)
            return true;
    return false;
}

/* With threads, the survivors of a mismatch or refusal whose time limit
 * ended a wait right (waited_for_gone): for a rank whose stream had
 * already ended, and so never came: the faulty rank, a survivor whose
 * stream ended in the fault's error (WEFT_EPEER, WEFT_EMISMATCH: judged
 * apart), or one that was itself waiting so (rank 4 waiting for rank 1,
 * which waited for the faulty rank 3 on a split).  Or for a survivor in
 * the same call that ended in the fault's error or was itself waiting so:
 * a dissemination barrier's rank 4 waits for rank 0, which is in the
 * barrier waiting for the faulty rank (seed 8046's job 4), and is ended
 * only when that rank finalizes, after its other streams.  (Not the
 * faulty rank in the call: a mismatch there is proven from the records,
 * and a time limit instead is a fault of the proof.)  Followed from
 * those until nothing is added; NULL where no such ending is right (one
 * thread). */
static bool *timed_out_behind(const stress_opts_t *o, int frank, char (*lines)[700], int n)
{
    bool *stuck = o->threads > 1 ? calloc((size_t)o->np, 1) : NULL;
    if (!stuck)
        return NULL;
    bool *gone = calloc((size_t)o->np, 1);
    if (!gone) {
        free(stuck);
        return NULL;
    }
    gone[frank] = true;
    for (int i = 0; i < n; i++) {
        int r, code;
        if (sscanf(lines[i], "rank %d code %d", &r, &code) == 2 && r >= 0 && r < o->np &&
            (code == WEFT_EPEER || code == WEFT_EMISMATCH))
            gone[r] = true;
    }
    for (bool added = true; added;) {
        added = false;
        for (int i = 0; i < n; i++) {
            int r, code;
            if (sscanf(lines[i], "rank %d code %d", &r, &code) != 2 || r < 0 || r >= o->np ||
                r == frank || code != WEFT_ETIMEDOUT || stuck[r])
                continue;
            for (int x = 0; x < o->np && !stuck[r]; x++)
                stuck[r] = gone[x] && (names_waited(lines[i], x, not_arrived_tag) ||
                                       (x != frank && names_waited(lines[i], x, in_call_tag)));
            if (stuck[r])
                gone[r] = added = true;
        }
    }
    free(gone);
    return stuck;
}

/* When the fault was made (report_fault; the last line: a fault refused
 * alike moves on a call and is made again), or +inf: never. */
static double fault_time(char (*lines)[700], int n)
{
    double t = INFINITY, x;
    int r;
    for (int i = 0; i < n; i++)
        if (sscanf(lines[i], "fault %d at %lf", &r, &x) == 2)
            t = x;
    return t;
}

/* When a rank's report says it saw its error (report_outcome), or -1. */
static double report_time(const char *line)
{
    const char *p = strrchr(line, '{');
    double t;
    return p && sscanf(p, "{at %lf}", &t) == 1 ? t : -1;
}

/* What a fault job's ranks reported: how many reports, how many of them
 * wrong, and of those how many only ran out of time before the fault was
 * made (a loaded machine, or a hang: fault_job tries again); each wrong one
 * printed, and the ranks that reported marked in reported. */
typedef struct verdict {
    int seen, bad, early;
} verdict_t;

static verdict_t judge_reports(const stress_opts_t *o, int job, const char *kind, int frank,
                               long at, char (*lines)[700], int nlines, char *reported)
{
    verdict_t v = {0, 0, 0};
    bool *stuck = timed_out_behind(o, frank, lines, nlines);
    double fault_at = fault_time(lines, nlines);
    for (int i = 0; i < nlines; i++) {
        const char *line = lines[i];
        int r, code;
        if (sscanf(line, "rank %d code %d", &r, &code) != 2)
            continue;
        v.seen++;
        if (reported && r >= 0 && r < o->np)
            reported[r] = 1;
        const char *msg = line;
        for (int w = 0; w < 4 && msg; w++) /* past "rank R code C " */
            msg = (msg = strchr(msg, ' ')) ? msg + 1 : NULL;
        /* a refuse job's faulty rank fails its own call first */
        bool refuser = !strcmp(kind, "refuse") && r == frank;
        bool ok = !strcmp(kind, "kill")   ? code == WEFT_EPEER
                  : !strcmp(kind, "stop") ? code == WEFT_ETIMEDOUT || code == WEFT_EPEER
                  : refuser               ? code == WEFT_EINVAL
                  : code == WEFT_ETIMEDOUT
                      ? stuck && r >= 0 && r < o->np && stuck[r]
                      : code == WEFT_EMISMATCH || code == WEFT_EPEER;
        ok = ok && msg && (refuser || names_a_rank(msg));
        double when = report_time(line);
        bool prefault = !ok && code == WEFT_ETIMEDOUT && when >= 0 && when < fault_at;
        if (!ok) {
            v.bad++, v.early += prefault;
            char ahead[96] = "";
            if (prefault && fault_at < INFINITY)
                snprintf(ahead, sizeof ahead, " (%.0f ms before the fault)",
                         (fault_at - when) * 1e3);
            else if (prefault)
                snprintf(ahead, sizeof ahead, " (the fault was never made)");
            printf("stress: fault job %d (%s of rank %d at call %ld)%s: %s", job, kind, frank, at,
                   ahead, line);
        }
    }
    free(stuck);
    return v;
}

/* A fault job is tried again with its time limit this many times longer
 * when all that failed it is a time limit that ran out before the fault
 * was made, and at most this many times. */
enum { FAULT_LIMIT_STRETCH = 4, FAULT_TRIES = 2 };

/* Runs one job with one fault, with time limits of limit_ms on its
 * communicators; 0 when every survivor ended as the fault implies.
 *
 * A time limit that runs out before the fault is made cannot be the
 * fault's doing: before it every rank is healthy.  Either weft hung, or
 * the machine is loaded beyond the limit (seed 8309's job 3 beside a
 * campaign, docs/STRESS.md).  The job is then run once more with a
 * limit FAULT_LIMIT_STRETCH times longer, which tells the two apart: a
 * hang times out again. */
static int fault_job(const stress_opts_t *o, int job, const char *kind, int frank, long at,
                     int limit_ms, int try)
{
    char path[64], seed[32], fr[16], fa[24], np[16];
    snprintf(path, sizeof path, "/tmp/weft-stress-%d-%d", (int)getpid(), job);
    unlink(path);
    setenv("WEFT_STRESS_OUT", path, 1);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)(o->seed + (uint64_t)job));
    snprintf(fr, sizeof fr, "%d", frank);
    snprintf(fa, sizeof fa, "%ld", at);
    snprintf(np, sizeof np, "%d", o->np);
    char th[16], limit[16], delay[16];
    snprintf(th, sizeof th, "%d", o->threads);
    snprintf(limit, sizeof limit, "%d", limit_ms);
    snprintf(delay, sizeof delay, "%d", o->fault_delay_ms);
    char *args[18] = {"stress", "--np", np, "--seed", seed, "--fault", (char *)kind,
                      "--fault-rank", fr, "--fault-at", fa, "--threads", th,
                      "--fault-limit", limit, "--fault-delay", delay};
    int nargs = 17;
    if (o->fault_in_batch)
        args[nargs++] = "--overlapped";
    int before = shm_entries();
    double t0 = weft_now();
    int status = launch_self(o->np, "stress", nargs, args);
    double secs = weft_now() - t0;
    int nlines = 0, cap = 2 * o->np + 8;
    char *reported = calloc((size_t)o->np, 1);
    char(*lines)[700] = calloc((size_t)cap, sizeof *lines);
    FILE *f = fopen(path, "r");
    while (f && lines && nlines < cap && fgets(lines[nlines], sizeof *lines, f))
        nlines++;
    verdict_t v = judge_reports(o, job, kind, frank, at, lines, nlines, reported);
    free(lines);
    if (f)
        fclose(f);
    unlink(path);
    launch_reraise(); /* a Ctrl-C stops the driver, not only this job */
    /* a survivor that never reported: say which, so that the launcher's
     * word on it (killed after the grace period, a crash) can be matched */
    for (int r = 0; reported && r < o->np; r++)
        if (!reported[r] && (r != frank || !strcmp(kind, "mismatch") || !strcmp(kind, "refuse")))
            printf("stress: fault job %d (%s of rank %d at call %ld): rank %d never reported\n",
                   job, kind, frank, at, r);
    free(reported);
    int want = !strcmp(kind, "mismatch") || !strcmp(kind, "refuse") ? o->np : o->np - 1;
    int leaked = shm_entries() - before; /* our names: a leak, not a neighbour */
    bool pass = !v.bad && v.seen >= want && status != 0 && leaked <= 0;
    bool again = !pass && v.bad && v.early == v.bad && v.seen >= want && status != 0 &&
                 leaked <= 0 && try < FAULT_TRIES;
    printf("stress: fault job %d: %-8s rank %d at call %3ld: %d/%d ranks ended in the right "
           "error, weft run exit %d, %.2f s%s -> %s\n", job, kind, frank, at, v.seen - v.bad, want,
           status, secs, leaked > 0 ? ", /dev/shm LEAKED" : "",
           pass ? "ok" : again ? "again (only time limits ran out, before the fault)" : "FAILED");
    fflush(stdout);
    if (again) {
        printf("stress: fault job %d: again with time limits of %d ms, not %d: the machine may be "
               "too loaded for them; a hang times out again\n", job,
               limit_ms * FAULT_LIMIT_STRETCH, limit_ms);
        return fault_job(o, job, kind, frank, at, limit_ms * FAULT_LIMIT_STRETCH, try + 1);
    }
    return pass ? 0 : 1;
}

static int fault_driver(const stress_opts_t *o)
{
    static const char *const usual[3] = {"kill", "stop", "mismatch"};
    const char *const *kinds = o->nkinds ? o->kinds : usual;
    int nk = o->nkinds ? o->nkinds : 3;
    rng_t r = {o->seed ^ 0xfa17};
    int failed = 0;
    for (int j = 0; j < o->faults; j++) {
        /* drawn one after the other, not as two arguments, whose order C
         * leaves open (gcc and clang drew different jobs from one seed);
         * the call first, as gcc did */
        long at = 5 + pick(&r, 60);
        int frank = pick(&r, o->np);
        failed += fault_job(o, j, kinds[j % nk], frank, at, o->fault_limit_ms, 1);
    }
    printf("stress: %d fault jobs, %d passed, %d failed\n", o->faults, o->faults - failed, failed);
    return failed ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: weft stress [--np P] [--minutes M] [--seed S] [--faults N [--overlapped]\n"
               "                   [--fault-kinds K,...]] [--threads T] [--mpi] [--verbose]\n"
               "Random collectives on P ranks (default 4) for M minutes (default 1), every\n"
               "result checked; prints calls checked, passed and failed, and the ranks' RSS.\n"
               "About one call in eight is followed by an overlapped batch: 2-6 split-phase\n"
               "calls in flight at once, each rank completing them in an order of its own.\n"
               "--faults N: N short jobs instead, each with one rank killed, stopped or\n"
               "passing other arguments at a random call; every survivor must end in the\n"
               "matching error and nothing may be left in /dev/shm.  --overlapped: the\n"
               "fault falls inside an overlapped batch, with the rank's other calls in flight.\n"
               "--fault-kinds K,...: the jobs' faults in turn (default kill,stop,mismatch;\n"
               "refuse: the rank alone passes no buffers, or a datatype that does not exist,\n"
               "and must fail with WEFT_EINVAL, its peers as for a mismatch).\n"
               "--threads T (1-8): T streams of calls per rank, each in a thread of its own\n"
               "on its own dup of the world, seeded apart (a fault job's fault is made in\n"
               "thread 0's stream; every thread must end).\n"
               "--mpi: run as a rank of mpirun's job (mpirun -n P weft stress --mpi), over\n"
               "MPI_COMM_WORLD's twin: shared memory on one machine, MPI between nodes\n"
               "(WEFT_NODE_SIZE=k makes nodes of k ranks).  Fault jobs there: one at a time,\n"
               "mismatch or refuse only (--fault KIND --fault-rank R --fault-at N, each rank's\n"
               "outcome appended to $WEFT_STRESS_OUT; tests/mpi_faults.sh judges them).\n"
               "--fault-limit MS: a fault job's time limit on its communicators (1000). A job\n"
               "whose only wrong endings are time limits that ran out before the fault was\n"
               "made (a loaded machine, or a hang) runs once more with limits 4 times longer.\n"
               "--fault-delay MS: the faulty rank sleeps MS before its fault (to test that).\n");
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *e;
    double x = v ? strtod(v, &e) : 0;
    if (!v || *e || e == v || !(x >= lo && x <= hi)) {
        fprintf(stderr, "weft stress: %s %s: want a number %g..%g\n", opt, v ? v : "(none)", lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static const char *const fault_kinds[4] = {"kill", "stop", "mismatch", "refuse"};

/* The kind named k (its own static string), or NULL. */
static const char *fault_kind(const char *k, size_t len)
{
    for (int i = 0; i < 4; i++)
        if (strlen(fault_kinds[i]) == len && !strncmp(k, fault_kinds[i], len))
            return fault_kinds[i];
    return NULL;
}

/* "kill,refuse" into o->kinds: one to eight kinds, each known. */
static bool parse_fault_kinds(const char *v, stress_opts_t *o)
{
    o->nkinds = 0;
    for (const char *k = v;; k++) {
        size_t len = strcspn(k, ",");
        const char *kind = fault_kind(k, len);
        if (!kind || o->nkinds == 8)
            return false;
        o->kinds[o->nkinds++] = kind;
        if (!k[len])
            return true;
        k += len;
    }
}

/* The options into *o: 0 to go on, else the exit code (2 after saying
 * what was wrong); after --help, 0 with *done set. */
static int parse_stress_args(int argc, char **argv, stress_opts_t *o, bool *done)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(a, "--help")) {
            usage(stdout);
            *done = true;
            return 0;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose++; /* twice: every call as it starts */
            continue;
        } else if (!strcmp(a, "--overlapped")) {
            o->fault_in_batch = true;
            continue;
        } else if (!strcmp(a, "--mpi")) {
            o->mpi = true;
            continue;
        }
        if (!strcmp(a, "--np") && !parse_num(a, v, 1, 4096, &x))
            o->np = (int)x;
        else if (!strcmp(a, "--minutes") && !parse_num(a, v, 0, 10000, &x))
            o->minutes = x;
        else if (!strcmp(a, "--seed") && !parse_num(a, v, 0, 1e15, &x))
            o->seed = (uint64_t)x;
        else if (!strcmp(a, "--faults") && !parse_num(a, v, 1, 100000, &x))
            o->faults = (int)x;
        else if (!strcmp(a, "--threads") && !parse_num(a, v, 1, THREADS_MAX, &x))
            o->threads = (int)x;
        else if (!strcmp(a, "--fault") && v && fault_kind(v, strlen(v)))
            o->fault = v;
        else if (!strcmp(a, "--fault-kinds") && v && !parse_fault_kinds(v, o)) {
            fprintf(stderr, "weft stress: --fault-kinds %s: want one to eight of kill, stop, "
                            "mismatch and refuse, comma-separated\n", v);
            return 2;
        } else if (!strcmp(a, "--fault-kinds") && v)
            ;
        else if (!strcmp(a, "--fault-rank") && !parse_num(a, v, 0, 4095, &x))
            o->fault_rank = (int)x;
        else if (!strcmp(a, "--fault-at") && !parse_num(a, v, 0, 1e9, &x))
            o->fault_at = (long)x;
        else if (!strcmp(a, "--fault-limit") && !parse_num(a, v, 1, 3600000, &x))
            o->fault_limit_ms = (int)x;
        else if (!strcmp(a, "--fault-delay") && !parse_num(a, v, 0, 3600000, &x))
            o->fault_delay_ms = (int)x;
        else {
            /* parse_num has named a known option's bad value already */
            static const char *const numeric[] = {"--np", "--minutes", "--seed", "--faults",
                                                  "--threads", "--fault-rank", "--fault-at",
                                                  "--fault-limit", "--fault-delay"};
            bool known = false;
            for (size_t k = 0; k < sizeof numeric / sizeof *numeric; k++)
                known |= !strcmp(a, numeric[k]);
            if (!strcmp(a, "--fault") && v)
                fprintf(stderr, "weft stress: --fault %s: want kill, stop, mismatch or refuse\n",
                        v);
            else if (!known)
                fprintf(stderr, "weft stress: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (o->fault && (o->fault_rank < 0 || o->fault_at < 0)) {
        fprintf(stderr, "weft stress: --fault needs --fault-rank and --fault-at\n");
        return 2;
    }
    return 0;
}

/* A rank of mpirun's job (--mpi), over MPI_COMM_WORLD's twin. */
static int stress_mpi_rank(const stress_opts_t *o, int *argc, char ***argv)
{
#ifdef WEFT_HAVE_MPI
    /* one job's mismatch or refusal, as tests/mpi_faults.sh runs them
     * (each rank's outcome in $WEFT_STRESS_OUT); no driver of many, nor
     * kills and stops: mpirun ends a job whose rank dies */
    if (o->faults || (o->fault && strcmp(o->fault, "mismatch") && strcmp(o->fault, "refuse"))) {
        fprintf(stderr, "weft stress: --mpi runs single fault jobs of the kinds mismatch "
                        "and refuse only (--fault; mpirun ends a job whose rank dies, and "
                        "tests/mpi_faults.sh drives them)\n");
        return 2;
    }
    /* threads: weft's MPI transport (ranks on other nodes) calls MPI
     * from each of them */
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, o->threads > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    if (o->threads > 1 && provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "weft stress: --threads needs MPI_THREAD_MULTIPLE, which this MPI "
                        "does not provide\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    weft_comm_t world;
    if (weft_comm_from_mpi(MPI_COMM_WORLD, &world) != WEFT_OK) {
        fprintf(stderr, "weft stress: %s\n", weft_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rc = stress_rank(o, world);
    weft_comm_free(&world);
    MPI_Finalize();
    return rc;
#else
    (void)o, (void)argc, (void)argv;
    fprintf(stderr, "weft stress: --mpi needs weft built with MPI\n");
    return 2;
#endif
}

int cmd_stress(int argc, char **argv)
{
    stress_opts_t o = {4, 1.0, 1, 0, 0, NULL, {NULL}, 0, -1, -1, false, false, 1, 1000, 0};
    bool done = false;
    int rc = parse_stress_args(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    if (o.mpi)
        return stress_mpi_rank(&o, &argc, &argv);
    if (getenv("WEFT_RANK")) {
        if (weft_init(NULL, NULL)) {
            fprintf(stderr, "weft stress: weft_init: %s\n", weft_last_error());
            return 1;
        }
        return stress_rank(&o, weft_comm_world());
    }
    if (o.faults)
        return fault_driver(&o);
    return launch_self(o.np, "stress", argc, argv);
}
