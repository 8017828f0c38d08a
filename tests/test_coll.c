/* test_coll.c — data correctness of every algorithm of every collective at
 * the job's P (run as `weft run -n P test_coll`).
 *
 * Counts 0, 1, P-1, 2P+3 and, sampled, a large one (large_count); roots 0, P-1
 * and the middle; int32 sum (exact), float32 sum against a float64 reference, float64 max
 * (exact), bfloat16 sum (tolerance), and a non-commutative user op (affine
 * maps composed in rank order, exact) for every algorithm that claims rank
 * order.  Allreduce results must be bitwise identical on all ranks.  Small
 * counts use irregular data whose reference loops over the ranks; the large
 * count uses data with a closed-form reference so checking stays O(count).
 * Also: in place, split-phase, several requests in flight, dup and split.
 *
 *   test_coll [--mem weft|mixed] [--large N] [COLL,COLL,...]
 *     --large N: the large count is N elements (a call of 40003 float32
 *     elements is one whose messages stay under 256 KiB at 2-8 ranks, where
 *     the transport chooses differently); COLL,...: only those named */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_world.h"
#include "weft.h"

static int P, me;
/* From 8 ranks (4 or more a core here, where a call costs a millisecond
 * or more) the counts of a reduction take its kinds in turn, and a count's
 * kinds or datatypes its roots and in-place, instead of all of them: each
 * algorithm still meets every count, kind, root and in-place at P = 8-17,
 * 31-33 and 64, just not every combination of them, which coll_np1..7 run
 * in full.  From 32
 * ranks the variants that only cut the vector differently (chunks=,
 * segment=) are left to the smaller P and to the checker. */
static bool sparse;
#define CHECK_WHO() fprintf(stderr, "rank %d/%d: ", me, P)
#include "testing.h"
static weft_comm_t world;
static weft_op_t affine_op;

/* The large count: a vector of a few MiB, past every protocol switch
 * (single copy, the arena, segments); a quarter of it where ranks
 * outnumber the cores fourfold (sparse), whose every pass is slower, and
 * an eighth from 32 ranks (a rank's block of 8-byte elements is still
 * 15-31 KiB: past a cell, and staged in the arena). */
static size_t large_count = 1000003u;

/* --mem weft: every data buffer from weft_alloc (peers read it in place);
 * --mem mixed: on even ranks only, so that arena and private buffers meet
 * in one call.  Otherwise malloc. */
static int mem_mode;
static void *tbuf(size_t bytes)
{
    void *p = NULL;
    if (mem_mode == 1 || (mem_mode == 2 && me % 2 == 0)) {
        if (weft_alloc(bytes, &p) != WEFT_OK) {
            fprintf(stderr, "rank %d: weft_alloc(%zu): %s\n", me, bytes, weft_last_error());
            exit(1);
        }
        return p;
    }
    return malloc(bytes);
}
static void tfree(void *p)
{
    if (mem_mode == 1 || (mem_mode == 2 && me % 2 == 0)) {
        if (weft_free(p) != WEFT_OK) {
            fprintf(stderr, "rank %d: weft_free: %s\n", me, weft_last_error());
            exit(1);
        }
        return;
    }
    free(p);
}

/* the non-commutative op (affine maps in rank order) */
#include "affine.h"

/* ---- data ---- */

/* int32 sum has an exact inverse (algorithms may take contributions back
 * out); the user sum, commutative but opaque, has none. */
enum { K_INT32_SUM, K_FLOAT32_SUM, K_FLOAT64_MAX, K_BF16_SUM, K_INT64_MIN, K_USER_SUM, K_AFFINE,
       K_COUNT };
static const char *const kind_name[K_COUNT] = {"int32 sum", "float32 sum", "float64 max",
                                               "bf16 sum", "int64 min", "user commutative sum",
                                               "user non-commutative"};
static weft_op_t user_sum_op;

static void user_sum_fn(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    (void)dt, (void)ctx;
    const int64_t *a = in;
    int64_t *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = (int64_t)((uint64_t)a[i] + (uint64_t)b[i]);
}

static weft_dtype_t kind_dtype(int k)
{
    static const weft_dtype_t d[K_COUNT] = {WEFT_INT32, WEFT_FLOAT32, WEFT_FLOAT64, WEFT_BFLOAT16,
                                           WEFT_INT64, WEFT_INT64, WEFT_UINT64};
    return d[k];
}

static weft_op_t kind_op(int k)
{
    return k == K_FLOAT64_MAX ? WEFT_MAX
         : k == K_INT64_MIN   ? WEFT_MIN
         : k == K_USER_SUM    ? user_sum_op
         : k == K_AFFINE      ? affine_op
                              : WEFT_SUM;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Value of element i of rank r's input, as a double (exact for every kind
 * but the affine one), `closed` selects the closed-form family. */
static double value(int k, int r, size_t i, int closed)
{
    if (closed) {
        switch (k) {
        case K_INT32_SUM: return (double)((int)(i % 1000) - 500 + r);
        case K_FLOAT32_SUM: return ((double)(i % 97) - 48) * 0.25 + r * 0.125 * (double)(i % 13);
        case K_FLOAT64_MAX: return (double)(i % 1000) + r;
        case K_BF16_SUM: return (double)((int)(i % 7) - 3);
        case K_INT64_MIN: return (double)(i % 1000) - r;
        case K_USER_SUM: return (double)((int)(i % 777) - 300 + 3 * r);
        default: return 0;
        }
    }
    size_t h = (i * 2654435761u + (size_t)r * 40503u) % 1000003u;
    switch (k) {
    case K_INT32_SUM: return (double)((int)(h % 20001) - 10000);
    case K_FLOAT32_SUM: return (float)(((double)(h % 100000) - 50000) / 997.0);
    case K_FLOAT64_MAX: return ((double)(h % 100003) - 50000) / 7.0;
    case K_BF16_SUM: return from_bf16(to_bf16((float)(((double)(h % 64) - 32) / 8.0)));
    case K_INT64_MIN: return (double)((int)(h % 2000001) - 1000000);
    case K_USER_SUM: return (double)((int)(h % 40001) - 20000);
    default: return 0;
    }
}

static uint64_t affine_value(int r, size_t i)
{
    uint32_t a = (uint32_t)(i * 2654435761u + (size_t)r * 97u) | 1u;
    uint32_t b = (uint32_t)(i * 40503u + (size_t)r * 2246822519u);
    return (uint64_t)a << 32 | b;
}

static void fill(int k, void *buf, size_t off, size_t n, int r, int closed)
{
    for (size_t j = 0; j < n; j++) {
        size_t i = off + j;
        switch (k) {
        case K_INT32_SUM: ((int32_t *)buf)[j] = (int32_t)value(k, r, i, closed); break;
        case K_FLOAT32_SUM: ((float *)buf)[j] = (float)value(k, r, i, closed); break;
        case K_FLOAT64_MAX: ((double *)buf)[j] = value(k, r, i, closed); break;
        case K_INT64_MIN:
        case K_USER_SUM: ((int64_t *)buf)[j] = (int64_t)value(k, r, i, closed); break;
        case K_BF16_SUM: ((uint16_t *)buf)[j] = to_bf16((float)value(k, r, i, closed)); break;
        default: ((uint64_t *)buf)[j] = affine_value(r, i); break;
        }
    }
}

/* Checks element j of buf against the reduction over all ranks of element
 * i of their inputs; returns 1 if right. */
static int check_reduced(int k, const void *buf, size_t j, size_t i, int closed)
{
    if (k == K_AFFINE) {
        uint64_t acc = affine_value(0, i);
        for (int r = 1; r < P; r++)
            acc = affine_compose(acc, affine_value(r, i));
        return ((const uint64_t *)buf)[j] == acc;
    }
    double ref, mag = 0;
    if (closed) {
        double s = 0, m = -INFINITY;
        for (int r = 0; r < P && P <= 1; r++)
            s += value(k, r, i, 1);
        if (P > 1) { /* value = base + r * step: sum, max and min in closed form */
            double base = value(k, 0, i, 1), step = value(k, 1, i, 1) - base;
            s = base * P + step * (double)P * (P - 1) / 2;
            m = k == K_INT64_MIN ? fmin(base, base + step * (P - 1))
                                 : fmax(base, base + step * (P - 1));
            mag = fabs(base) * P + fabs(step) * (double)P * P;
        } else {
            m = value(k, 0, i, 1);
            mag = fabs(s);
        }
        ref = k == K_FLOAT64_MAX || k == K_INT64_MIN ? m : s;
    } else {
        ref = k == K_FLOAT64_MAX ? -INFINITY : k == K_INT64_MIN ? INFINITY : 0;
        for (int r = 0; r < P; r++) {
            double v = value(k, r, i, 0);
            if (k == K_FLOAT64_MAX)
                ref = v > ref ? v : ref;
            else if (k == K_INT64_MIN)
                ref = v < ref ? v : ref;
            else
                ref += v;
            mag += fabs(v);
        }
    }
    switch (k) {
    case K_INT32_SUM: return ((const int32_t *)buf)[j] == (int32_t)ref;
    case K_FLOAT64_MAX: return ((const double *)buf)[j] == ref;
    case K_INT64_MIN:
    case K_USER_SUM: return ((const int64_t *)buf)[j] == (int64_t)ref;
    case K_FLOAT32_SUM: return fabs(((const float *)buf)[j] - ref) <= 1e-6 * mag + 1e-30;
    default: return fabs(from_bf16(((const uint16_t *)buf)[j]) - ref) <= 0.02 * mag + 1e-30;
    }
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static int all_identical(const void *buf, size_t bytes)
{
    uint64_t h = hash_bytes(buf, bytes), hmax = h, hmin = h;
    weft_allreduce(WEFT_IN_PLACE, &hmax, 1, WEFT_UINT64, WEFT_MAX, world);
    weft_allreduce(WEFT_IN_PLACE, &hmin, 1, WEFT_UINT64, WEFT_MIN, world);
    return hmax == hmin;
}

/* Does this algorithm claim non-commutative ops?  Exactly those that accept
 * the affine op (the library refuses the others with WEFT_EINVAL). */
static int serves_noncommutative(weft_coll_t coll, const char *name)
{
    weft_set_algorithm(world, coll, name, NULL);
    uint64_t in = affine_value(me, 0), out = 0;
    int rc;
    if (coll == WEFT_COLL_ALLREDUCE)
        rc = weft_allreduce(&in, &out, 1, WEFT_UINT64, affine_op, world);
    else if (coll == WEFT_COLL_REDUCE)
        rc = weft_reduce(&in, &out, 1, WEFT_UINT64, affine_op, 0, world);
    else {
        uint64_t *vin = calloc((size_t)P, 8);
        rc = weft_reduce_scatter(vin, &out, 1, WEFT_UINT64, affine_op, world);
        free(vin);
    }
    if (rc != WEFT_OK)
        CHECK(rc == WEFT_EINVAL && (strstr(weft_last_error(), "commutative") ||
                                    strstr(weft_last_error(), "idempotent") ||
                                    strstr(weft_last_error(), "one machine's shared memory")),
              "%s %s refused a non-commutative op with %d: %s", weft_coll_name(coll), name, rc,
              weft_last_error());
    return rc == WEFT_OK;
}

/* The algorithms that serve one machine's shared memory only refuse the
 * others, each saying so: the board (which also carries tiny payloads
 * only), the arrival-driven ones (shm_twostep, pap_*, adaptive, hier_pap)
 * and linear_arena. */
static bool shm_only_refused(const char *name, int rc)
{
    if (rc != WEFT_EINVAL)
        return false;
    if (strstr(weft_last_error(), "one machine's shared memory"))
        return !strcmp(name, "board") || !strcmp(name, "shm_twostep") ||
               !strncmp(name, "pap_", 4) || !strcmp(name, "adaptive") ||
               !strcmp(name, "hier_pap") || !strcmp(name, "linear_arena");
    return !strcmp(name, "board") && strstr(weft_last_error(), "carries at most");
}

/* A variant that only changes how the vector is cut (chunks=K,
 * segment=BYTES): at counts 0 and 1 it is clamped to one piece, the
 * default's schedule, which the default's run covers already. */
static bool cuts_only(const char *params)
{
    /* pace= only adds waits between a rank's own steps: weft check proves
     * them at every P (check_twotree_pace_*), so above 32 ranks the data
     * need not run through them again */
    return params &&
           (!strncmp(params, "chunks=", 7) || !strncmp(params, "segment=", 8) ||
            !strncmp(params, "pace=", 5)) &&
           !strstr(params, "sync=");
}

/* From 31 ranks (8 or more a core here) the large count is most of a
 * run's time: it goes to every other algorithm, rotating with P, so that
 * each meets it at two of the four counts 31, 32, 33 and 64 (and at every
 * P below). */
static bool large_turn(int ai)
{
    return P < 31 || (P + ai) % 2 == 0;
}

static void counts_for(size_t *counts, int *nc, const char *params, int ai)
{
    *nc = 0;
    /* stage=plain: the copy into the arena's stage, made only from 64 KiB,
     * so only the large count differs from the default's run */
    if (params && !strncmp(params, "stage=", 6)) {
        if (large_turn(ai))
            counts[(*nc)++] = large_count;
        return;
    }
    if (!cuts_only(params)) {
        counts[(*nc)++] = 0;
        counts[(*nc)++] = 1;
    }
    if (P > 2)
        counts[(*nc)++] = (size_t)P - 1;
    counts[(*nc)++] = 2 * (size_t)P + 3;
    if (!params && large_turn(ai)) /* the large count with default params only */
        counts[(*nc)++] = large_count;
}

/* ---- allreduce / reduce ---- */

static void test_reduction(weft_coll_t coll, const char *name, int ai, const char *params)
{
    int noncomm = serves_noncommutative(coll, name);
    weft_set_algorithm(world, coll, name, params);
    size_t counts[6];
    int nc;
    counts_for(counts, &nc, params, ai);
    int roots[3] = {0, P - 1, P / 2}, nroots = coll == WEFT_COLL_REDUCE ? 3 : 1;
    for (int ci = 0; ci < nc; ci++) {
        size_t n = counts[ci];
        int large = n == large_count, closed = large;
        for (int k = 0; k < K_COUNT; k++) {
            if (k == K_AFFINE && (!noncomm || large))
                continue;
            /* the large count: one kind per (P, algorithm), rotating */
            if (large && k != (P + ai) % K_AFFINE)
                continue;
            /* sampled: a third of the commutative kinds per count, in turn,
             * so that the counts of an algorithm meet all of them */
            if (sparse && !large && k != K_AFFINE && k % 3 != (ci + ai) % 3)
                continue;
            size_t es = weft_dtype_size(kind_dtype(k));
            char *in = tbuf(n * es + 8), *out = tbuf(n * es + 8);
            fill(k, in, 0, n, me, closed);
            for (int ri = 0; ri < nroots; ri++) {
                if (large && ri != (P + ai) % nroots)
                    continue;
                int root = roots[ri];
                for (int inplace = 0; inplace < 2; inplace++) {
                    if (inplace && large)
                        continue;
                    if (sparse && !large && ri + nroots * inplace != (ci + k + ai) % (2 * nroots))
                        continue;
                    const void *src = in;
                    memset(out, 0xa5, n * es);
                    bool ip = inplace && (coll == WEFT_COLL_ALLREDUCE || me == root);
                    /* in place by WEFT_IN_PLACE, or (every other case) by
                     * passing the receive buffer as the send buffer */
                    bool aliased = ip && (ci + k + ri) % 2;
                    if (ip) {
                        memcpy(out, in, n * es);
                        src = aliased ? out : WEFT_IN_PLACE;
                    }
                    int rc = coll == WEFT_COLL_ALLREDUCE
                                 ? weft_allreduce(src, out, n, kind_dtype(k), kind_op(k), world)
                                 : weft_reduce(src, out, n, kind_dtype(k), kind_op(k), root, world);
                    /* algorithms exact only for idempotent ops (butterfly, dissem
                     * at most P) refuse the others, and say so; max must work */
                    if (rc == WEFT_EINVAL && k != K_FLOAT64_MAX && k != K_INT64_MIN &&
                        strstr(weft_last_error(), "idempotent"))
                        continue;
                    /* dissem_adapted with a fixed fan-out that has no 5-tuple
                     * for this P (with fanout unset it must always work) */
                    if (rc == WEFT_EINVAL && params && strstr(weft_last_error(), "not adaptable"))
                        continue;
                    if (shm_only_refused(name, rc))
                        continue;
                    CHECK(rc == WEFT_OK, "%s %s %s n=%zu: error %d: %s", weft_coll_name(coll), name,
                          kind_name[k], n, rc, weft_last_error());
                    const char *used = weft_last_algorithm(world, coll);
                    CHECK(used && (strcmp(name, "auto") ? !strcmp(used, name)
                                                        : weft_algorithm_properties(coll, used) >= 0),
                          "%s %s: weft_last_algorithm says %s", weft_coll_name(coll), name,
                          used ? used : "NULL");
                    if (coll == WEFT_COLL_ALLREDUCE || me == root) {
                        size_t bad = 0, first = 0;
                        for (size_t i = 0; i < n; i++)
                            if (!check_reduced(k, out, i, i, closed) && !bad++)
                                first = i;
                        CHECK(!bad, "%s %s %s n=%zu root=%d%s: %zu wrong, first at %zu",
                              weft_coll_name(coll), name, kind_name[k], n, root,
                              aliased ? " aliased" : ip ? " in place" : "", bad, first);
                    }
                    /* AUTO's built-in allreduce choices all give identical
                     * results (recursive doubling, rabenseifner, ring,
                     * reduce_bcast): held to it too */
                    if (coll == WEFT_COLL_ALLREDUCE &&
                        (!strcmp(name, "auto") ||
                         (weft_algorithm_properties_with(coll, name, params) & WEFT_ALGO_IDENTICAL)))
                        CHECK(all_identical(out, n * es), "allreduce %s %s n=%zu: results differ "
                              "between ranks", name, kind_name[k], n);
                }
            }
            tfree(in);
            tfree(out);
        }
    }
}

/* ---- bcast ---- */

static void test_bcast(const char *name, int ai, const char *params)
{
    weft_set_algorithm(world, WEFT_COLL_BCAST, name, params);
    size_t counts[6];
    int nc;
    counts_for(counts, &nc, params, ai);
    const weft_dtype_t dts[3] = {WEFT_INT32, WEFT_FLOAT64, WEFT_INT8};
    int roots[3] = {0, P - 1, P / 2};
    for (int ci = 0; ci < nc; ci++)
        for (int d = 0; d < 3; d++)
            for (int ri = 0; ri < 3; ri++) {
                size_t n = counts[ci];
                if (n == large_count && (d != (P + ai) % 3 || ri != (P + ai + 1) % 3))
                    continue;
                if (sparse && n != large_count && ri != (ci + d + ai) % 3)
                    continue;
                int root = roots[ri];
                size_t es = weft_dtype_size(dts[d]), bytes = n * es;
                unsigned char *buf = tbuf(bytes + 1);
                for (size_t i = 0; i < bytes; i++)
                    buf[i] = me == root ? (unsigned char)(i * 31 + (size_t)root * 7 + 1) : 0x5a;
                int rc = weft_bcast(buf, n, dts[d], root, world);
                if (shm_only_refused(name, rc)) {
                    tfree(buf);
                    continue;
                }
                CHECK(rc == WEFT_OK, "bcast %s: error %d: %s", name, rc, weft_last_error());
                size_t bad = 0;
                for (size_t i = 0; i < bytes; i++)
                    bad += buf[i] != (unsigned char)(i * 31 + (size_t)root * 7 + 1);
                CHECK(!bad, "bcast %s %s n=%zu root=%d: %zu wrong bytes", name,
                      weft_dtype_name(dts[d]), n, root, bad);
                tfree(buf);
            }
}

/* ---- block collectives ---- */

static void test_reduce_scatter(const char *name)
{
    int noncomm = serves_noncommutative(WEFT_COLL_REDUCE_SCATTER, name);
    weft_set_algorithm(world, WEFT_COLL_REDUCE_SCATTER, name, NULL);
    /* per-block counts; the last makes the whole vector about large_count */
    size_t counts[4] = {0, 1, P > 1 ? (size_t)P - 1 : 2, large_count / (size_t)P + 1};
    for (int ci = 0; ci < 4; ci++)
        for (int k = 0; k < K_COUNT; k++) {
            if (k == K_AFFINE && !noncomm)
                continue;
            if (ci == 3 && k != P % K_AFFINE) /* large: one kind, rotating with P */
                continue;
            size_t c = counts[ci], es = weft_dtype_size(kind_dtype(k));
            char *in = tbuf((size_t)P * c * es + 8), *out = tbuf((size_t)P * c * es + 8);
            for (int inplace = 0; inplace < 2; inplace++) {
                fill(k, in, 0, (size_t)P * c, me, 0);
                memset(out, 0x33, (size_t)P * c * es);
                int rc;
                if (inplace) { /* by WEFT_IN_PLACE, or by passing one buffer twice */
                    memcpy(out, in, (size_t)P * c * es);
                    rc = weft_reduce_scatter((ci + k) % 2 ? out : WEFT_IN_PLACE, out, c,
                                             kind_dtype(k), kind_op(k), world);
                } else {
                    rc = weft_reduce_scatter(in, out, c, kind_dtype(k), kind_op(k), world);
                }
                if (shm_only_refused(name, rc))
                    continue;
                CHECK(rc == WEFT_OK, "reduce_scatter %s: error %d: %s", name, rc, weft_last_error());
                size_t bad = 0;
                for (size_t j = 0; j < c; j++)
                    bad += !check_reduced(k, out, j, (size_t)me * c + j, 0);
                CHECK(!bad, "reduce_scatter %s %s c=%zu%s: %zu wrong", name, kind_name[k], c,
                      inplace ? " in place" : "", bad);
            }
            tfree(in);
            tfree(out);
        }
}

static unsigned char block_byte(int r, size_t i) { return (unsigned char)(i * 13 + (size_t)r * 101 + 7); }

static void test_gathers(weft_coll_t coll, const char *name)
{
    weft_set_algorithm(world, coll, name, NULL);
    size_t counts[4] = {0, 1, P > 1 ? (size_t)P - 1 : 2, large_count / (size_t)P + 1};
    const weft_dtype_t dts[2] = {WEFT_INT8, WEFT_FLOAT64};
    int roots[3] = {0, P - 1, P / 2};
    int nroots = coll == WEFT_COLL_ALLGATHER ? 1 : 3;
    for (int ci = 0; ci < 4; ci++)
        for (int d = 0; d < 2; d++)
            for (int ri = 0; ri < nroots; ri++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    if (ci == 3 && (d != P % 2 || ri != P % nroots || inplace != (P / 2) % 2))
                        continue; /* large: one sampled case per P */
                    if (sparse && ci != 3 && ri + nroots * inplace != (ci + d + (int)coll) % (2 * nroots))
                        continue;
                    int root = roots[ri];
                    size_t c = counts[ci], es = weft_dtype_size(dts[d]), bb = c * es;
                    size_t all = (size_t)P * bb;
                    unsigned char *big = tbuf(all + 1), *small = tbuf(bb + 1);
                    int rc;
                    bool ip = inplace && (coll == WEFT_COLL_ALLGATHER || me == root);
                    /* in place by WEFT_IN_PLACE, or by this rank's block of
                     * the whole buffer as the other buffer */
                    bool aliased = ip && (ci + d + ri) % 2;
                    void *own = big + (size_t)me * bb;
                    if (coll == WEFT_COLL_SCATTER) {
                        for (size_t i = 0; i < all; i++)
                            big[i] = block_byte(root, i);
                        memset(small, 0, bb);
                        rc = weft_scatter(me == root ? big : NULL,
                                          aliased ? own : ip ? WEFT_IN_PLACE : small, c, dts[d],
                                          root, world);
                        const unsigned char *got = ip ? big + (size_t)me * bb : small;
                        size_t bad = 0;
                        for (size_t i = 0; i < bb; i++)
                            bad += got[i] != block_byte(root, (size_t)me * bb + i);
                        CHECK(!bad, "scatter %s c=%zu root=%d%s: %zu wrong", name, c, root,
                              aliased ? " aliased" : ip ? " in place" : "", bad);
                    } else {
                        for (size_t i = 0; i < bb; i++)
                            small[i] = block_byte(me, (size_t)me * bb + i);
                        memset(big, 0, all);
                        if (ip)
                            memcpy(big + (size_t)me * bb, small, bb);
                        const void *src = aliased ? own : ip ? WEFT_IN_PLACE : small;
                        rc = coll == WEFT_COLL_ALLGATHER
                                 ? weft_allgather(src, big, c, dts[d], world)
                                 : weft_gather(src, me == root ? big : NULL, c, dts[d], root, world);
                        if (shm_only_refused(name, rc)) {
                            tfree(big);
                            tfree(small);
                            continue;
                        }
                        if (coll == WEFT_COLL_ALLGATHER || me == root) {
                            size_t bad = 0;
                            for (size_t i = 0; i < all; i++)
                                bad += big[i] != block_byte((int)(i / (bb ? bb : 1)), i);
                            CHECK(!bad, "%s %s c=%zu root=%d%s: %zu wrong", weft_coll_name(coll),
                                  name, c, root, aliased ? " aliased" : ip ? " in place" : "",
                                  bad);
                        }
                    }
                    CHECK(rc == WEFT_OK, "%s %s: error %d: %s", weft_coll_name(coll), name, rc,
                          weft_last_error());
                    tfree(big);
                    tfree(small);
                }
}

/* ---- split-phase, several in flight, dup/split ---- */

static void test_split_phase(void)
{
    weft_set_algorithm(world, WEFT_COLL_ALLREDUCE, "auto", NULL);
    weft_set_algorithm(world, WEFT_COLL_BCAST, "auto", NULL);
    weft_set_algorithm(world, WEFT_COLL_REDUCE, "auto", NULL);
    size_t n = 4099;
    int32_t *a = tbuf(n * 4), *b = tbuf(n * 4), *oa = tbuf(n * 4), *ob = tbuf(n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = (int32_t)(i + (size_t)me), b[i] = (int32_t)(i * 3 + (size_t)me);
    weft_request_t ra, rb, rc_;
    CHECK(weft_iallreduce(a, oa, n, WEFT_INT32, WEFT_SUM, world, &ra) == WEFT_OK, "iallreduce");
    CHECK(weft_ireduce(b, ob, n, WEFT_INT32, WEFT_SUM, P - 1, world, &rb) == WEFT_OK, "ireduce");
    int32_t bval = me == 0 ? 4242 : 0;
    CHECK(weft_ibcast(&bval, 1, WEFT_INT32, 0, world, &rc_) == WEFT_OK, "ibcast");
    int done = 0, polls = 0;
    while (!done) {
        CHECK(weft_test(&rb, &done) == WEFT_OK, "test: %s", weft_last_error());
        polls++;
    }
    CHECK(rb == NULL, "finished request not reset");
    CHECK(weft_wait(&ra) == WEFT_OK, "wait: %s", weft_last_error());
    CHECK(weft_wait(&rc_) == WEFT_OK, "wait bcast: %s", weft_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += oa[i] != (int32_t)(i * (size_t)P + (size_t)P * (P - 1) / 2);
        if (me == P - 1)
            bad += ob[i] != (int32_t)(3 * i * (size_t)P + (size_t)P * (P - 1) / 2);
    }
    CHECK(!bad && bval == 4242, "split-phase results wrong (%zu, bcast %d)", bad, (int)bval);
    tfree(a), tfree(b), tfree(oa), tfree(ob);
}

static void test_comms(void)
{
    weft_comm_t dup, half;
    CHECK(weft_comm_dup(world, &dup) == WEFT_OK, "dup: %s", weft_last_error());
    CHECK(weft_comm_split(world, me % 2, P - me, &half) == WEFT_OK, "split: %s", weft_last_error());
    int hs = weft_comm_size(half), hr = weft_comm_rank(half);
    int expect_size = (P + 1 - me % 2) / 2;
    CHECK(hs == expect_size, "split size %d, expected %d", hs, expect_size);
    /* key P - me reverses the order */
    CHECK(hr == (expect_size - 1 - me / 2), "split rank %d", hr);
    int32_t v = me, sum = 0, dsum = 0;
    CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, half) == WEFT_OK, "sub allreduce");
    int32_t want = 0;
    for (int r = me % 2; r < P; r += 2)
        want += r;
    CHECK(sum == want, "split allreduce %d, expected %d", (int)sum, (int)want);
    CHECK(weft_allreduce(&v, &dsum, 1, WEFT_INT32, WEFT_SUM, dup) == WEFT_OK, "dup allreduce");
    CHECK(dsum == P * (P - 1) / 2, "dup allreduce wrong");
    weft_comm_t none;
    CHECK(weft_comm_split(world, me == 0 ? WEFT_UNDEFINED : 1, 0, &none) == WEFT_OK, "split undef");
    CHECK((me == 0) == (none == NULL), "WEFT_UNDEFINED gives NULL");
    if (none)
        weft_comm_free(&none);
    CHECK(weft_comm_free(&half) == WEFT_OK && half == NULL, "free");
    CHECK(weft_comm_free(&dup) == WEFT_OK, "free dup");
    CHECK(weft_barrier(world) == WEFT_OK, "barrier");
}

/* name is one of the comma-separated names in list */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    bool use_mpi; /* --mpi: the same tests over MPI (run under mpirun) */
    if (test_world("test_coll", &argc, &argv, &world, &use_mpi))
        return 1;
    P = weft_comm_size(world);
    me = weft_comm_rank(world);
    sparse = P >= 8;
    if (sparse)
        large_count = P >= 32 ? 125003u : 250007u;
    weft_op_create(affine_fn, NULL, 0, 0, &affine_op);
    weft_op_create(user_sum_fn, NULL, 1, 0, &user_sum_op);
    while (argc > 2 && !strncmp(argv[1], "--", 2)) {
        if (!strcmp(argv[1], "--mem")) {
            mem_mode = !strcmp(argv[2], "weft") ? 1 : !strcmp(argv[2], "mixed") ? 2 : -1;
            if (mem_mode < 0) {
                fprintf(stderr, "test_coll: --mem %s: want weft or mixed\n", argv[2]);
                return 2;
            }
        } else if (!strcmp(argv[1], "--large")) {
            char *end;
            unsigned long long n = strtoull(argv[2], &end, 10);
            if (*end || *argv[2] == '-' || n < 1024 || n > 100000000ull) {
                fprintf(stderr, "test_coll: --large %s: want a count, 1024 to 10^8\n", argv[2]);
                return 2;
            }
            large_count = (size_t)n;
        } else {
            fprintf(stderr, "test_coll: %s: want --mem or --large\n", argv[1]);
            return 2;
        }
        argc -= 2, argv += 2;
    }
    const char *only = argc > 1 ? argv[1] : NULL; /* optional: collectives, comma-separated */
    for (int c = 0; c < WEFT_COLL_BARRIER; c++) {
        weft_coll_t coll = (weft_coll_t)c;
        if (only && !listed(only, weft_coll_name(coll)))
            continue;
        const char *name;
        for (int ai = 0; (name = weft_algorithm_name(coll, ai)); ai++) {
            if (coll == WEFT_COLL_REDUCE_SCATTER) {
                test_reduce_scatter(name);
                continue;
            }
            if (coll != WEFT_COLL_ALLREDUCE && coll != WEFT_COLL_REDUCE && coll != WEFT_COLL_BCAST) {
                test_gathers(coll, name);
                continue;
            }
            /* pipelined algorithms also with k = 1, 3, 16 chunks (counts below
             * k included) */
            const char *variants[6] = {NULL, "chunks=1", "chunks=3", "chunks=16",
                                       "sync=colouring", "chunks=3,sync=colouring"};
            int nv = weft_set_algorithm(world, coll, name, "chunks=3") == WEFT_OK ? 4 : 1;
            if (weft_set_algorithm(world, coll, name, "sync=colouring") == WEFT_OK)
                nv = 6; /* TwoTreeS in both modes */
            /* the two-tree reduces paced (a leaf's chunks wait for the
             * rank's forwards in the other tree), below 32 ranks */
            if (weft_set_algorithm(world, coll, name, "pace=1") == WEFT_OK) {
                variants[4] = "pace=1,chunks=16", variants[5] = "pace=auto,chunks=3";
                nv = 6;
            }
            /* rabenseifner on segments: of one element (segment=1 is less
             * than any element), of 12 bytes (one 8-byte element, three of
             * 4 bytes: whole elements, rounded down) and of 40 */
            if (weft_set_algorithm(world, coll, name, "segment=8") == WEFT_OK) {
                variants[1] = "segment=1", variants[2] = "segment=12", variants[3] = "segment=40";
                nv = 4;
            }
            if (weft_set_algorithm(world, coll, name, "fanout=2") == WEFT_OK) {
                variants[1] = "fanout=2", variants[2] = "fanout=3"; /* n-way */
                nv = 3;
            }
            if (weft_set_algorithm(world, coll, name, "stage=plain") == WEFT_OK) {
                variants[1] = "stage=plain"; /* linear_arena's stage copied plainly */
                nv = 2;
                /* the bcast's stage in pieces: of 3 elements of 4 bytes (at
                 * the large count, 4096 larger ones: the cap), and of 1 MiB
                 * copied plainly; below the stage's 64 KiB the root's
                 * scratch is its own buffer and the copies copy nothing */
                if (weft_set_algorithm(world, coll, name, "segment=12") == WEFT_OK) {
                    variants[2] = "segment=12", variants[3] = "stage=plain,segment=1M";
                    nv = 4;
                }
                /* the allreduce's and reduce's input staged block by block
                 * as each is sent; block j combined in pieces of 3 elements
                 * of 4 bytes (the large count's at the cap of 4096), staged
                 * as sent and, at the small counts, unstaged */
                if (weft_set_algorithm(world, coll, name, "stage=sent") == WEFT_OK) {
                    variants[2] = "stage=sent", variants[3] = "stage=sent,segment=12";
                    variants[4] = "segment=12";
                    nv = 5;
                }
            }
            /* hier_pap's other node levels, where there are nodes */
            if (getenv("WEFT_NODE_SIZE") &&
                weft_set_algorithm(world, coll, name, "node=leader") == WEFT_OK) {
                variants[1] = "node=leader", variants[2] = "node=twostep";
                nv = 3;
            }
            for (int vi = 0; vi < nv; vi++) {
                if (P >= 32 && cuts_only(variants[vi]))
                    continue;
                if (coll == WEFT_COLL_BCAST)
                    test_bcast(name, ai, variants[vi]);
                else
                    test_reduction(coll, name, ai, variants[vi]);
            }
        }
        /* AUTO: every call served (the non-commutative op too), and
         * weft_last_algorithm names a real algorithm of the collective */
        if (coll == WEFT_COLL_BCAST)
            test_bcast("auto", 0, NULL);
        else if (coll == WEFT_COLL_ALLREDUCE || coll == WEFT_COLL_REDUCE)
            test_reduction(coll, "auto", 0, NULL);
        weft_set_algorithm(world, coll, "auto", NULL);
    }
    if (!only) {
        test_split_phase();
        test_comms();
    }
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, world);
    weft_op_free(&affine_op);
    weft_op_free(&user_sum_op);
    if (me == 0)
        printf("test_coll P=%d%s: %d checks on rank 0, %d failures on all ranks\n", P,
               use_mpi ? " (MPI)" : "", checks, total);
    int rc = WEFT_OK;
#ifdef WEFT_HAVE_MPI
    if (use_mpi) {
        /* a dup outlives its parent (their transport goes with the last of
         * them), and communicators made from MPI outlive weft_finalize, to
         * be freed after it */
        weft_comm_t dup = NULL;
        int32_t v = me;
        rc = weft_comm_dup(world, &dup);
        if (!rc)
            rc = weft_comm_free(&world);
        if (!rc)
            rc = weft_allreduce(WEFT_IN_PLACE, &v, 1, WEFT_INT32, WEFT_SUM, dup);
        if (!rc && v != P * (P - 1) / 2)
            rc = -1;
        if (!rc)
            rc = weft_finalize();
        if (!rc)
            rc = weft_comm_free(&dup);
        if (rc)
            fprintf(stderr, "rank %d: FAIL a dup of a communicator made from MPI, its parent "
                    "freed first, then weft_finalize: %s (sum %d)\n", me, weft_last_error(), v);
        MPI_Finalize();
    } else
#endif
        rc = weft_finalize();
    return total || rc ? 1 : 0;
}
