/* test_unit.c — single-process tests of the pieces: reduction kernels for
 * every (datatype, op) against a scalar reference, half-precision
 * conversions, op/dtype validation, parameter parsing, and the symbolic
 * checker on deliberately broken schedules (it must name the wrong step). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/comm.h"
#include "core/copy.h"
#include "core/core.h"
#include "sched/check.h"

#include "testing.h"
#include "tune/table.h"
#include "xport/copyway.h"
#include "xport/cpus.h"
#include "xport/segment.h"

/* ---- kernels ---- */

static double ref_op(int op, double a, double b)
{
    switch (op) {
    case WEFT_SUM: return a + b;
    case WEFT_PROD: return a * b;
    case WEFT_MIN: return a < b ? a : b;
    case WEFT_MAX: return a > b ? a : b;
    default: return 0;
    }
}

static void test_int_kernels(void)
{
    /* every integer type and op against a 64-bit reference, with wrap */
    const weft_dtype_t types[8] = {WEFT_INT8, WEFT_INT16, WEFT_INT32, WEFT_INT64,
                                   WEFT_UINT8, WEFT_UINT16, WEFT_UINT32, WEFT_UINT64};
    for (int t = 0; t < 8; t++)
        for (int op = 0; op < WEFT_OP_BUILTIN_COUNT; op++) {
            weft_dtype_t dt = types[t];
            size_t es = weft_dtype_size(dt), n = 1001;
            unsigned char *a = malloc(n * es), *b = malloc(n * es);
            int64_t *x = malloc(n * 8), *y = malloc(n * 8);
            for (size_t i = 0; i < n; i++) {
                x[i] = (int64_t)((i * 2654435761u) % 251) - 125;
                y[i] = (int64_t)((i * 40503u) % 253) - 126;
                if (i % 17 == 0)
                    y[i] = 0; /* logical ops need zeros */
                for (size_t k = 0; k < es; k++) {
                    a[i * es + k] = (unsigned char)((uint64_t)x[i] >> (8 * k));
                    b[i * es + k] = (unsigned char)((uint64_t)y[i] >> (8 * k));
                }
            }
            reducer_t r;
            CHECK(reducer_init(&r, op, dt) == 0, "reducer_init %s %s", weft_dtype_name(dt),
                  weft_op_name(op));
            reducer_apply(&r, a, b, n, false);
            size_t bad = 0;
            bool is_signed = t < 4;
            for (size_t i = 0; i < n; i++) {
                uint64_t ux = (uint64_t)x[i], uy = (uint64_t)y[i], want;
                uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
                /* compare in the type's own width */
                int64_t sx = x[i], sy = y[i];
                uint64_t mx = ux & mask, my = uy & mask;
                switch (op) {
                case WEFT_SUM: want = ux + uy; break;
                case WEFT_PROD: want = ux * uy; break;
                case WEFT_MIN: want = is_signed ? (uint64_t)(sx < sy ? sx : sy) : (mx < my ? mx : my); break;
                case WEFT_MAX: want = is_signed ? (uint64_t)(sx > sy ? sx : sy) : (mx > my ? mx : my); break;
                case WEFT_BAND: want = ux & uy; break;
                case WEFT_BOR: want = ux | uy; break;
                case WEFT_BXOR: want = ux ^ uy; break;
                case WEFT_LAND: want = (mx != 0) && (my != 0); break;
                default: want = (mx != 0) || (my != 0); break;
                }
                uint64_t got = 0;
                for (size_t k = 0; k < es; k++)
                    got |= (uint64_t)a[i * es + k] << (8 * k);
                bad += got != (want & mask);
            }
            CHECK(!bad, "%s %s: %zu wrong", weft_dtype_name(dt), weft_op_name(op), bad);
            /* the inverse, where the op has one, takes b back out exactly
             * (through wrap-around, since a + b above wrapped) */
            bool invertible = op == WEFT_SUM || op == WEFT_BXOR;
            CHECK((r.inverse != NULL) == invertible, "%s %s: inverse %s", weft_dtype_name(dt),
                  weft_op_name(op), r.inverse ? "present" : "missing");
            if (r.inverse) {
                reducer_apply_inverse(&r, a, b, n);
                size_t wrong = 0;
                uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
                for (size_t i = 0; i < n; i++) {
                    uint64_t got = 0;
                    for (size_t k = 0; k < es; k++)
                        got |= (uint64_t)a[i * es + k] << (8 * k);
                    wrong += got != ((uint64_t)x[i] & mask);
                }
                CHECK(!wrong, "%s %s inverse: %zu wrong", weft_dtype_name(dt), weft_op_name(op),
                      wrong);
            }
            free(a), free(b), free(x), free(y);
        }
}

static void test_float_kernels(void)
{
    /* no inverse for floating point: (a + b) - b is not a */
    const weft_dtype_t fl[4] = {WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64};
    for (int t = 0; t < 4; t++)
        for (int op = 0; op <= WEFT_MAX; op++)
            CHECK(inverse_kernel(op, fl[t]) == NULL, "%s %s has no exact inverse",
                  weft_dtype_name(fl[t]), weft_op_name(op));
    for (int op = 0; op <= WEFT_MAX; op++) {
        size_t n = 1037;
        float *f = malloc(n * 4), *g = malloc(n * 4);
        double *d = malloc(n * 8), *e = malloc(n * 8);
        uint16_t *h = malloc(n * 2), *k = malloc(n * 2), *bh = malloc(n * 2), *bk = malloc(n * 2);
        for (size_t i = 0; i < n; i++) {
            double x = ((double)((i * 37) % 200) - 100) / 8, y = ((double)((i * 11) % 150) - 75) / 4;
            f[i] = (float)x, g[i] = (float)y, d[i] = x, e[i] = y;
            h[i] = float_to_half((float)x), k[i] = float_to_half((float)y);
            bh[i] = float_to_bf16((float)x), bk[i] = float_to_bf16((float)y);
        }
        reducer_t r;
        reducer_init(&r, op, WEFT_FLOAT32), reducer_apply(&r, f, g, n, false);
        reducer_init(&r, op, WEFT_FLOAT64), reducer_apply(&r, d, e, n, false);
        reducer_init(&r, op, WEFT_FLOAT16), reducer_apply(&r, h, k, n, false);
        reducer_init(&r, op, WEFT_BFLOAT16), reducer_apply(&r, bh, bk, n, false);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            double x = ((double)((i * 37) % 200) - 100) / 8, y = ((double)((i * 11) % 150) - 75) / 4;
            double want = ref_op(op, x, y);
            bad += f[i] != (float)want; /* inputs are exact dyadics */
            bad += d[i] != want;
            bad += fabs(half_to_float(h[i]) - want) > fabs(want) * 1e-3 + 1e-3;
            bad += fabs(bf16_to_float(bh[i]) - want) > fabs(want) * 8e-3 + 1e-2;
        }
        CHECK(!bad, "float kernels %s: %zu wrong", weft_op_name(op), bad);
        free(f), free(g), free(d), free(e), free(h), free(k), free(bh), free(bk);
    }
}

/* dst op src on one float16 or bfloat16 pair, as the portable kernels
 * define it: widened, combined in float32, rounded to nearest even. */
static uint16_t half_ref(weft_dtype_t t, int op, uint16_t d, uint16_t s)
{
    bool bf = t == WEFT_BFLOAT16;
    float x = bf ? bf16_to_float(d) : half_to_float(d), y = bf ? bf16_to_float(s) : half_to_float(s);
    float r = op == WEFT_SUM ? x + y : op == WEFT_PROD ? x * y : op == WEFT_MIN ? (y < x ? y : x)
                                                                         : (y > x ? y : x);
    return bf ? float_to_bf16(r) : float_to_half(r);
}

/* Results that are NaN match any NaN: which operand's payload and sign
 * survive is up to the instruction the compiler picks (x + y or y + x), and
 * F16C keeps a float16 payload that the portable conversion makes
 * canonical. */
static bool half_nan(weft_dtype_t t, uint16_t h)
{
    return t == WEFT_FLOAT16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff)
                             : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

/* Every vector kernel of float16 and bfloat16 gives the portable kernel's
 * bits (any NaN for a NaN), on random bit patterns (NaNs, infinities,
 * subnormals, ties), at lengths around each kernel's lanes and at odd
 * element offsets; and the portable kernel is half_ref element by element. */
static void test_half_kernels_exact(void)
{
    const weft_dtype_t types[2] = {WEFT_FLOAT16, WEFT_BFLOAT16};
    const size_t lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099};
    enum { MAXN = 4099 + 3 };
    uint16_t *a = malloc(MAXN * 2), *b = malloc(MAXN * 2), *want = malloc(MAXN * 2),
             *got = malloc(MAXN * 2);
    uint64_t z = 0x9E3779B97F4A7C15ull;
    size_t bad = 0, variants = 0;
    for (int t = 0; t < 2; t++)
        for (int op = 0; op <= WEFT_MAX; op++) {
            reduce_kernel_fn fns[3];
            int nv = reduce_kernel_variants(op, types[t], fns);
            CHECK(nv >= 1 && reduce_kernel(op, types[t]) == fns[0], "%s %s: kernels listed",
                  weft_dtype_name(types[t]), weft_op_name(op));
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
                for (size_t off = 0; off < 3; off += 2) {
                    size_t n = lens[li];
                    for (size_t i = 0; i < n + off; i++) {
                        z += 0x9E3779B97F4A7C15ull;
                        uint64_t r = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
                        a[i] = (uint16_t)r, b[i] = (uint16_t)(r >> 16);
                        /* a third of the pairs close in value: sums that
                         * round at a tie or cancel */
                        if ((r >> 40) % 3 == 0)
                            b[i] = (uint16_t)(a[i] ^ ((r >> 32) & 0x80ff));
                    }
                    memcpy(want, a, (n + off) * 2);
                    fns[nv - 1](want + off, b + off, n);
                    for (size_t i = off; i < n + off; i++) {
                        uint16_t r = half_ref(types[t], op, a[i], b[i]);
                        bad += want[i] != r && !(half_nan(types[t], want[i]) && half_nan(types[t], r));
                    }
                    for (int k = 0; k + 1 < nv; k++) {
                        memcpy(got, a, (n + off) * 2);
                        fns[k](got + off, b + off, n);
                        for (size_t i = 0; i < n + off; i++)
                            bad += got[i] != want[i] &&
                                   !(half_nan(types[t], got[i]) && half_nan(types[t], want[i]));
                        variants++;
                    }
                }
        }
    CHECK(!bad, "half kernels: %zu elements wrong (the portable kernels against one pair at a "
          "time, %zu vector runs against them)", bad, variants);
    free(a), free(b), free(want), free(got);
}

/* An element of dt that is a NaN (any payload, any sign). */
static bool elem_nan(weft_dtype_t dt, const unsigned char *p)
{
    if (dt == WEFT_FLOAT32) {
        float f;
        memcpy(&f, p, 4);
        return isnan(f);
    }
    if (dt == WEFT_FLOAT64) {
        double f;
        memcpy(&f, p, 8);
        return isnan(f);
    }
    if (dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_nan(dt, h);
    }
    return false;
}

/* inout = 3 in + inout (mod 2^32): an order that matters. */
static void user_affine(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    const uint32_t *a = in;
    uint32_t *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = 3 * a[i] + b[i];
    (void)dt, (void)ctx;
}

/* The seeded form, dst = seed (op) src in one pass (sink.c's fused
 * receive), gives the bits a copy of the seed then the op's kernel give,
 * for every type and builtin op, on random bit patterns at lengths around
 * the vector lanes and at odd element offsets, and leaves the bytes around
 * the destination alone; a user op goes through the copy.  A NaN matches
 * any NaN (which operand's payload survives is up to the instruction). */
static void test_seeded_kernels(void)
{
    const size_t lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 65, 1000, 4099};
    enum { MAXN = 4099 + 2 };
    size_t bad = 0, runs = 0, seeded = 0;
    uint64_t z = 0x2545F4914F6CDD1Dull;
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        size_t es = weft_dtype_size((weft_dtype_t)dt);
        unsigned char *seed = malloc(MAXN * es), *src = malloc(MAXN * es),
                      *want = malloc(MAXN * es), *got = malloc(MAXN * es);
        for (int op = 0; op < WEFT_OP_BUILTIN_COUNT; op++) {
            reducer_t r;
            if (reducer_init(&r, op, (weft_dtype_t)dt) != 0)
                continue; /* not an op of this type (bitwise ops on floats) */
            bool has3 = reduce3_kernel(op, (weft_dtype_t)dt) != NULL;
            CHECK(has3 && r.kernel3 == reduce3_kernel(op, (weft_dtype_t)dt),
                  "%s %s: a seeded kernel", weft_dtype_name(dt), weft_op_name(op));
            seeded += has3;
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
                for (size_t off = 0; off < 2; off++) {
                    size_t n = lens[li], bytes = (n + 2) * es;
                    for (size_t i = 0; i < bytes; i++) {
                        z ^= z >> 12, z ^= z << 25, z ^= z >> 27;
                        uint64_t x = z * 0x2545F4914F6CDD1Dull;
                        seed[i] = (unsigned char)x, src[i] = (unsigned char)(x >> 8);
                        want[i] = got[i] = (unsigned char)(x >> 16);
                    }
                    memcpy(want + off * es, seed + off * es, n * es);
                    reducer_apply(&r, want + off * es, src + off * es, n, false);
                    reducer_apply_seeded(&r, got + off * es, seed + off * es, src + off * es, n,
                                         false);
                    for (size_t i = 0; i < n + 2; i++) {
                        const unsigned char *g = got + i * es, *w = want + i * es;
                        bool inside = i >= off && i < off + n;
                        bad += memcmp(g, w, es) != 0 &&
                               !(inside && elem_nan((weft_dtype_t)dt, g) &&
                                 elem_nan((weft_dtype_t)dt, w));
                    }
                    runs++;
                }
        }
        free(seed), free(src), free(want), free(got);
    }
    /* a user op, not commutative, in both orders: through the copy */
    weft_op_t uop;
    CHECK(weft_op_create(user_affine, NULL, 0, 0, &uop) == WEFT_OK, "user op created");
    reducer_t ur;
    CHECK(reducer_init(&ur, uop, WEFT_UINT32) == 0 && !ur.kernel3, "user op: no seeded kernel");
    enum { UN = 5000 };
    uint32_t *us = malloc(UN * 4), *ui = malloc(UN * 4), *uw = malloc(UN * 4), *ug = malloc(UN * 4);
    for (int left = 0; left < 2; left++) {
        for (uint32_t i = 0; i < UN; i++)
            us[i] = i * 2654435761u, ui[i] = i * 40503u + 7;
        memcpy(uw, us, UN * 4);
        reducer_apply(&ur, uw, ui, UN, left);
        reducer_apply_seeded(&ur, ug, us, ui, UN, left);
        bad += memcmp(uw, ug, UN * 4) != 0;
        runs++;
    }
    free(us), free(ui), free(uw), free(ug);
    weft_op_free(&uop);
    CHECK(!bad && seeded == 8 * 9 + 4 * 4,
          "seeded kernels: %zu elements differ from a copy and the kernel over %zu runs "
          "(%zu type/op pairs with a kernel of their own, want 88)", bad, runs, seeded);
}

static void test_half_conversions(void)
{
    /* every float16 value survives float32 and back */
    size_t bad = 0;
    for (uint32_t v = 0; v < 65536; v++) {
        uint16_t h = (uint16_t)v;
        float f = half_to_float(h);
        if (isnan(f))
            bad += !isnan(half_to_float(float_to_half(f)));
        else
            bad += float_to_half(f) != h;
        uint16_t b = (uint16_t)v;
        float g = bf16_to_float(b);
        if (!isnan(g))
            bad += float_to_bf16(g) != b;
    }
    CHECK(!bad, "half round trips: %zu wrong", bad);
    /* round to nearest even */
    CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00, "rne tie to even (down)");
    CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02, "rne tie to even (up)");
    CHECK(float_to_half(65520.0f) == 0x7c00, "overflow to inf");
    CHECK(float_to_half(5.96046448e-08f) == 0x0001, "smallest subnormal");
    CHECK(float_to_bf16(1.0f + 1.0f / 256) == 0x3f80, "bf16 tie to even");
}

static void user_sub(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    const int32_t *a = in;
    int32_t *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = a[i] - b[i];
}

static void test_ops(void)
{
    op_info_t info;
    CHECK(op_lookup(WEFT_BAND, WEFT_FLOAT32, &info) == WEFT_EINVAL, "band on float32 refused");
    CHECK(strstr(weft_last_error(), "integer"), "message says why: %s", weft_last_error());
    CHECK(op_lookup(WEFT_LOR, WEFT_FLOAT64, &info) == WEFT_EINVAL, "lor on float64 refused");
    CHECK(op_lookup(9999, WEFT_INT32, &info) == WEFT_EINVAL, "unknown op refused");
    CHECK(op_lookup(WEFT_SUM, (weft_dtype_t)99, &info) == WEFT_EINVAL, "unknown dtype refused");
    CHECK(op_lookup(WEFT_MAX, WEFT_INT8, &info) == 0 && info.idempotent && info.commutative,
          "max is idempotent");
    CHECK(op_lookup(WEFT_SUM, WEFT_INT8, &info) == 0 && !info.idempotent, "sum is not");
    weft_op_t op;
    CHECK(weft_op_create(NULL, NULL, 1, 0, &op) == WEFT_EINVAL, "NULL fn refused");
    CHECK(weft_op_create(user_sub, NULL, 0, 0, &op) == WEFT_OK, "create");
    CHECK(op_lookup(op, WEFT_INT32, &info) == 0 && !info.commutative, "user op flags");
    /* order: src_left computes src - dst, otherwise dst - src */
    int32_t d[3] = {10, 20, 30}, s[3] = {1, 2, 3};
    reducer_t r;
    reducer_init(&r, op, WEFT_INT32);
    reducer_apply(&r, d, s, 3, true);
    CHECK(d[0] == -9 && d[2] == -27, "src_left order");
    reducer_apply(&r, d, s, 3, false);
    CHECK(d[0] == -10 && d[2] == -30, "dst_left order");
    CHECK(weft_op_free(&op) == WEFT_OK && op == -1, "free");
    CHECK(weft_op_free(&op) == WEFT_EINVAL, "double free refused");
    CHECK(weft_dtype_size(WEFT_BFLOAT16) == 2 && weft_dtype_size((weft_dtype_t)-1) == 0, "sizes");
}

static void test_params(void)
{
    algo_params_t p;
    const algo_t *rb = algo_find(WEFT_COLL_ALLREDUCE, "reduce_bcast");
    const algo_t *ring = algo_find(WEFT_COLL_ALLREDUCE, "ring");
    CHECK(rb && ring, "registry lookups");
    CHECK(algo_parse_params(rb, "reduce=rsg,bcast=scatter_allgather", &p) == 0 &&
              !strcmp(p.reduce, "rsg") && !strcmp(p.bcast, "scatter_allgather"), "compose params");
    CHECK(algo_parse_params(rb, "reduce=nope", &p) == WEFT_EINVAL, "unknown part refused");
    CHECK(algo_parse_params(ring, "chunks=4", &p) == WEFT_EINVAL, "ring takes no chunks");
    CHECK(algo_parse_params(ring, "junk", &p) == WEFT_EINVAL, "not key=value");
    CHECK(algo_find(WEFT_COLL_BCAST, "ring") == NULL, "no bcast ring");
    coll_args_t a = {.coll = WEFT_COLL_ALLREDUCE, .nrank = 6, .count = 10, .esize = 4};
    CHECK(algo_check_usable(ring, &a) == WEFT_EINVAL &&
              strstr(weft_last_error(), "recursive_doubling"),
          "ring refuses non-commutative and names an alternative: %s", weft_last_error());
    const algo_t *da = algo_find(WEFT_COLL_ALLREDUCE, "dissem_adapted");
    CHECK(da && algo_parse_params(da, "fanout=auto", &p) == 0 && p.fanout == 0, "fanout=auto");
    CHECK(da && algo_parse_params(da, "fanout=0", &p) == WEFT_EINVAL, "fanout=0 refused");
    /* P = 1000 has no tuple for n = 3 (weft dissem-tuple --np 1000 --fanout 3) */
    coll_args_t d = {.coll = WEFT_COLL_ALLREDUCE, .nrank = 1000, .count = 1, .esize = 4,
                     .commutative = true};
    d.params.fanout = 3;
    CHECK(da && algo_check_usable(da, &d) == WEFT_EINVAL &&
              strstr(weft_last_error(), "not adaptable") && strstr(weft_last_error(), "bruck"),
          "dissem_adapted n=3 P=1000 refused: %s", weft_last_error());
    d.params.fanout = 0;
    CHECK(da && algo_check_usable(da, &d) == 0 && dissem_auto_fanout(1000) == 4,
          "dissem_adapted with fanout unset serves P=1000 with n=4");
    /* issue 9, item 21: one spelling only, said when refused */
    const algo_t *pl = algo_find(WEFT_COLL_ALLREDUCE, "pipeline");
    const char *bad[] = {"chunks=2,chunks=3", "chunks= 2", "chunks=+2", "chunks=2,", ",chunks=2",
                         "chunks=2,,chunks=3", " chunks=2", "chunks=0x10", "chunks=99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(algo_parse_params(pl, bad[i], &p) == WEFT_EINVAL && weft_last_error()[0],
              "'%s' refused", bad[i]);
    CHECK(algo_parse_params(pl, "chunks=16384", &p) == 0 && p.chunks == 16384, "chunks=16384");
    /* dissem takes every fan-out the parser does (it refused above 63) */
    const algo_t *ds = algo_find(WEFT_COLL_ALLREDUCE, "dissem");
    coll_args_t m = {.coll = WEFT_COLL_ALLREDUCE, .nrank = 100, .count = 1, .esize = 4,
                     .commutative = true, .idempotent = true};
    CHECK(algo_parse_params(ds, "fanout=1024", &m.params) == 0 && algo_check_usable(ds, &m) == 0,
          "dissem fanout=1024 at P=100: %s", weft_last_error());
    /* a pipelined bcast on shared memory keeps its chunks at 48 KiB or less
     * (more than 2 ranks): the largest send of each rank's schedule */
    for (int shm = 0; shm < 2; shm++)
        for (int P = 2; P <= 8; P += 2) {
            const char *names[] = {"pipeline", "twotree", "bintree"};
            for (int ni = 0; ni < 3; ni++) {
                uint64_t largest = 0;
                for (int r = 0; r < P; r++) {
                    coll_args_t b = {.coll = WEFT_COLL_BCAST, .nrank = P, .rank = r,
                                     .count = 1u << 20, .esize = 4, .commutative = true,
                                     .shared_board = shm};
                    sched_img_t *sc = NULL;
                    CHECK(algo_build(algo_find(WEFT_COLL_BCAST, names[ni]), &b, &sc) == 0,
                          "build %s", names[ni]);
                    for (uint32_t i = 0; sc && i < sc->nsteps; i++) {
                        step_t st = sched_step(sc, i);
                        if (st.kind == STEP_SEND && st.len > largest)
                            largest = st.len;
                    }
                    sched_img_free(sc);
                }
                bool capped = largest * 4 <= (48u << 10);
                CHECK(capped == (shm && P > 2), "%s bcast of 4 MiB, P=%d, %s: largest chunk %llu B",
                      names[ni], P, shm ? "shared memory" : "elsewhere",
                      (unsigned long long)largest * 4);
            }
        }
    /* the environment's numbers */
    int ns;
    uint64_t to;
    setenv("WEFT_NODE_SIZE", " 4", 1);
    CHECK(config_numbers_from_env(&ns, &to) == WEFT_EINVAL && strstr(weft_last_error(),
          "WEFT_NODE_SIZE"), "WEFT_NODE_SIZE=' 4' refused");
    setenv("WEFT_NODE_SIZE", "4", 1);
    setenv("WEFT_TIMEOUT_MS", "1500", 1);
    CHECK(config_numbers_from_env(&ns, &to) == 0 && ns == 4 && to == 1500000000ull, "4, 1500");
    setenv("WEFT_TIMEOUT_MS", "-1", 1);
    CHECK(config_numbers_from_env(&ns, &to) == WEFT_EINVAL && strstr(weft_last_error(),
          "WEFT_TIMEOUT_MS"), "WEFT_TIMEOUT_MS=-1 refused");
    unsetenv("WEFT_NODE_SIZE");
    unsetenv("WEFT_TIMEOUT_MS");
}

/* ---- the checker must catch broken schedules ---- */

typedef int (*bad_builder)(sched_t *s, int rank, int P);

static int build_bad(void *ctx, int rank, sched_t *s, sched_img_t **out)
{
    bad_builder fn = (bad_builder)ctx;
    int rc = fn(s, rank, 4);
    return rc ? rc : sched_commit(s, out);
}

/* allreduce where rank 0 adds rank 1's data twice */
static int bad_double(sched_t *s, int r, int P)
{
    algo_rd_allreduce(s, &(coll_args_t){.coll = WEFT_COLL_ALLREDUCE, .nrank = P, .rank = r, .count = 3, .esize = 4, .commutative = true});
    if (r == 0) {
        sched_round(s);
        sched_reduce(s, reg(BUF_IN, 0, 3), reg(BUF_OUT, 0, 3), false);
    }
    return 0;
}

/* a receive nobody sends */
static int bad_unmatched(sched_t *s, int r, int P)
{
    algo_ring_allreduce(s, &(coll_args_t){.coll = WEFT_COLL_ALLREDUCE, .nrank = P, .rank = r, .count = 4, .esize = 4, .commutative = true});
    if (r == 2)
        sched_recv(s, 1, 999, reg(BUF_OUT, 0, 1));
    return 0;
}

/* both ranks receive before sending: deadlock under rendezvous */
static int bad_deadlock(sched_t *s, int r, int P)
{
    sched_copy(s, reg(BUF_IN, 0, 2), reg(BUF_OUT, 0, 2));
    sched_round(s);
    int peer = r ^ 1;
    uint64_t t = sched_tmp(s, 2);
    sched_recv(s, peer, 0, reg(BUF_TMP, t, 2));
    sched_round(s);
    sched_send(s, peer, 0, reg(BUF_OUT, 0, 2));
    return 0;
}

/* the send buffer is overwritten while the send is in flight */
static int bad_race(sched_t *s, int r, int P)
{
    sched_copy(s, reg(BUF_IN, 0, 2), reg(BUF_OUT, 0, 2));
    sched_round(s);
    sched_send(s, (r + 1) % P, 0, reg(BUF_OUT, 0, 2));
    sched_recv_reduce(s, (r + P - 1) % P, 0, reg(BUF_OUT, 0, 2), true);
    return 0;
}

/* binomial-like reduce combined out of rank order, claimed ordered */
static int bad_order(sched_t *s, int r, int P)
{
    /* everyone sends to 0, which combines 3, 2, 1 on the right: wrong order */
    if (r) {
        sched_send(s, 0, 0, reg(BUF_IN, 0, 1));
        return 0;
    }
    uint32_t prev = sched_copy(s, reg(BUF_IN, 0, 1), reg(BUF_OUT, 0, 1));
    for (int k = P - 1; k >= 1; k--) {
        uint32_t st = sched_recv_reduce(s, k, 0, reg(BUF_OUT, 0, 1), false);
        sched_depend(s, st, prev);
        prev = st;
    }
    return 0;
}

static void expect_fail(weft_coll_t coll, bad_builder fn, bool ordered, const char *needle,
                        const char *what)
{
    check_spec_t sp = {.coll = coll, .nrank = 4, .count = coll == WEFT_COLL_REDUCE ? 1 : 3, .ordered = ordered};
    if (fn == bad_unmatched)
        sp.count = 4;
    if (fn == bad_deadlock || fn == bad_race)
        sp.count = 2;
    char msg[1024];
    int rc = sched_check(&sp, build_bad, (void *)fn, msg, sizeof msg, NULL);
    CHECK(rc != 0 && strstr(msg, needle), "checker on %s: rc=%d msg='%s' (wanted '%s')", what, rc,
          msg, needle);
}

static void test_checker(void)
{
    expect_fail(WEFT_COLL_ALLREDUCE, bad_double, false, "twice", "double contribution");
    expect_fail(WEFT_COLL_ALLREDUCE, bad_unmatched, false, "never matched", "unmatched receive");
    expect_fail(WEFT_COLL_ALLREDUCE, bad_deadlock, false, "never matched", "deadlock");
    expect_fail(WEFT_COLL_ALLREDUCE, bad_race, false, "in-flight", "race");
    expect_fail(WEFT_COLL_REDUCE, bad_order, true, "out of rank order", "order");
    /* and the order-breaking schedule passes when the op is commutative */
    check_spec_t sp = {.coll = WEFT_COLL_REDUCE, .nrank = 4, .count = 1};
    char msg[1024];
    CHECK(sched_check(&sp, build_bad, (void *)bad_order, msg, sizeof msg, NULL) == 0,
          "commutative reduce in any order is fine: %s", msg);
}

/* The seed's worked example of Bruck's algorithm, P = 8, n = 2, rank 0:
 * round 1 sends x0 to 7 and 6 and receives from 1 and 2; round 2 sends
 * S[1] to 5 and S[0] to 3 and receives from 3 and 5. */
static void test_bruck_example(void)
{
    const algo_t *al = algo_find(WEFT_COLL_ALLREDUCE, "bruck");
    coll_args_t a = {.coll = WEFT_COLL_ALLREDUCE, .nrank = 8, .rank = 0, .count = 4, .esize = 4,
                     .commutative = true};
    a.params.fanout = 2;
    sched_img_t *s = NULL;
    CHECK(al && algo_build(al, &a, &s) == 0, "build bruck");
    int sends[8], nsend = 0, recvs[8], nrecv = 0, sbuf[8];
    for (uint32_t i = 0; s && i < s->nsteps; i++) {
        const step_t sv = sched_step(s, i), *st = &sv;
        if (st->kind == STEP_SEND && nsend < 8)
            sbuf[nsend] = st->src_buf, sends[nsend++] = st->peer;
        else if (st->kind == STEP_RECV && nrecv < 8)
            recvs[nrecv++] = st->peer;
    }
    CHECK(nsend == 4 && sends[0] == 7 && sends[1] == 6 && sends[2] == 5 && sends[3] == 3,
          "bruck sends %d: %d %d %d %d", nsend, sends[0], sends[1], sends[2], sends[3]);
    CHECK(nsend == 4 && sbuf[2] == BUF_OUT && sbuf[3] == BUF_TMP, "S[1] to 5, S[0] to 3");
    CHECK(nrecv == 4 && recvs[0] == 1 && recvs[1] == 2 && recvs[2] == 3 && recvs[3] == 5,
          "bruck receives %d: %d %d %d %d", nrecv, recvs[0], recvs[1], recvs[2], recvs[3]);
    sched_img_free(s);
}

/* A composition's properties and refusals follow from its parts (issue 9,
 * item 4: hier inter=butterfly took a sum and counted contributions twice). */
static void test_composed_properties(void)
{
    int id = WEFT_ALGO_IDENTICAL, idem = WEFT_ALGO_NEEDS_IDEMPOTENT;
    CHECK(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", NULL) & id,
          "hier (inter=rabenseifner) is identical");
    CHECK(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", "inter=ring") & id,
          "hier inter=ring is identical");
    CHECK(!(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", "inter=bruck") & id),
          "hier inter=bruck is not identical");
    CHECK(!(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", "inter=dissem_adapted") & id),
          "hier inter=dissem_adapted is not identical");
    CHECK(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", "inter=butterfly") & idem,
          "hier inter=butterfly needs an idempotent op");
    CHECK(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "hier", "inter=bogus") == -1,
          "a bad inter= is -1");
    CHECK(weft_algorithm_properties_with(WEFT_COLL_ALLREDUCE, "reduce_bcast", "reduce=rsg") &
              WEFT_ALGO_NEEDS_COMMUTATIVE, "reduce_bcast reduce=rsg needs a commutative op");
    /* the refusal, as a call over three nodes of one rank would get it */
    const algo_t *hier = algo_find(WEFT_COLL_ALLREDUCE, "hier");
    int nodes[3] = {0, 1, 2};
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = WEFT_COLL_ALLREDUCE, a.nrank = 3, a.rank = 1, a.count = 1, a.esize = 4;
    a.commutative = true, a.node_of = nodes, a.nnodes = 3;
    CHECK(algo_parse_params(hier, "inter=butterfly", &a.params) == 0, "parse");
    CHECK(algo_check_usable(hier, &a) == WEFT_EINVAL && strstr(weft_last_error(), "idempotent"),
          "hier inter=butterfly refuses a sum over 3 nodes: %s", weft_last_error());
    CHECK(algo_parse_params(hier, "inter=dissem", &a.params) == 0, "parse");
    CHECK(algo_check_usable(hier, &a) == WEFT_EINVAL, "hier inter=dissem refuses a sum over 3 "
          "nodes: %s", weft_last_error());
    a.idempotent = true;
    CHECK(algo_check_usable(hier, &a) == WEFT_OK, "hier inter=dissem takes max: %s",
          weft_last_error());
}

/* The call as on one machine's shared memory (weft run), or not. */
static void on_one_machine(coll_args_t *a, bool yes)
{
    a->shared_board = a->board_slots = a->node_board = a->arena_reads = yes;
    a->board_payload = yes ? board_payload_for(a->nrank) : 0;
}

/* One lookup of every call shape AUTO may see: an algorithm that can
 * serve it from a row of the built-in tables (never the registry fallback,
 * never an error).  arena: every rank on one machine, as under weft run. */
static void check_every_shape(bool arena)
{
    static const weft_coll_t colls[] = {WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE,
                                        WEFT_COLL_REDUCE_SCATTER, WEFT_COLL_ALLGATHER,
                                        WEFT_COLL_SCATTER, WEFT_COLL_GATHER, WEFT_COLL_BARRIER};
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
        for (int P = 1; P <= 70; P++)
            for (int lg = -1; lg <= 26; lg++)
                for (int comm = 0; comm < 2; comm++) {
                    coll_args_t a = {0};
                    a.coll = colls[c];
                    a.nrank = P;
                    a.esize = 4;
                    a.count = lg < 0 ? 0 : ((uint64_t)1 << lg) / 4 + (uint64_t)(lg & 1);
                    a.commutative = comm || !coll_is_reduction(a.coll);
                    on_one_machine(&a, arena);
                    tune_pick_t p;
                    int rc = tune_select(&a, NULL, NULL, &p);
                    char why[256] = "";
                    coll_args_t with = a;
                    if (!rc && p.params)
                        with.params = *p.params;
                    CHECK(!rc && p.row && !algo_usable_why(p.al, &with, why, sizeof why),
                          "%s %s P=%d count=%llu comm=%d arena=%d: %s %s", tune_cpu(),
                          weft_coll_name(a.coll), P, (unsigned long long)a.count, comm, arena,
                          rc ? weft_last_error() : p.row ? p.al->name : "no row", why);
                }
}

/* What a 4-rank bcast of 1 MiB picks, and from which table. */
static const char *bcast4_pick(bool arena, const tune_table_t **from)
{
    coll_args_t a = {0};
    a.coll = WEFT_COLL_BCAST;
    a.nrank = 4;
    a.esize = 4;
    a.count = 1 << 18;
    a.commutative = true;
    on_one_machine(&a, arena);
    tune_pick_t p;
    if (tune_select(&a, NULL, NULL, &p))
        return "error";
    *from = p.table;
    return p.text;
}

/* Both CPUs' rows serve every shape; the AMD rows go first only on one
 * machine and only when chosen; bad tables fail naming the line and
 * field. */
static void test_tuning_tables(void)
{
    const tune_table_t *file, *cpu, *builtin;
    const char *err;
    tune_active(&file, &cpu, &builtin, &err);
    CHECK(builtin->nrows > 0, "the built-in table did not parse");
    char was[16];
    snprintf(was, sizeof was, "%s", tune_cpu());
    static const char *const cpus[] = {"generic", "amd"};
    for (int k = 0; k < 2; k++) {
        CHECK(tune_set_cpu(cpus[k]) == WEFT_OK && !strcmp(tune_cpu(), cpus[k]), "cpu %s: %s",
              cpus[k], tune_cpu());
        tune_active(&file, &cpu, &builtin, &err);
        CHECK(k ? cpu && cpu->nrows > 0 : !cpu, "cpu %s: its rows %p", cpus[k], (void *)cpu);
        for (int arena = 0; arena < 2; arena++) {
            check_every_shape(arena);
            const tune_table_t *from = NULL;
            const char *pick = bcast4_pick(arena, &from);
            bool amd = k && arena;
            /* without arena reads (over MPI) the rows fall through to
             * linear; with them both stage in pieces, the generic rows
             * with plain stores, AMD's streamed */
            const char *want = !arena ? "linear"
                               : amd  ? "linear_arena/segment=256K"
                                      : "linear_arena/stage=plain;segment=256K";
            CHECK(!strcmp(pick, want) && from == (amd ? cpu : builtin),
                  "cpu %s arena %d: the 4-rank bcast of 1 MiB took %s from %s", cpus[k], arena,
                  pick, from ? from->source : "no table");
        }
    }
    CHECK(tune_set_cpu("sparc") == WEFT_EINVAL && strstr(weft_last_error(), "'sparc'"),
          "tune_set_cpu(sparc): %s", weft_last_error());
    CHECK(tune_set_cpu(was) == WEFT_OK, "restoring the CPU rows %s", was);
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"", "version: empty table"},
        {"weft-tuning 2\n", "t:1: version: '2' is not a version"},
        {"# c\n\nallreduce any * * ring\n", "t:3: version: the first line must be"},
        {"weft-tuning 1\nallreduce any * * rign\n", "t:2: algorithms: no algorithm 'rign'"},
        {"weft-tuning 1\nallreduce any 8-4 * ring\n", "t:2: ranks: 8-4: the range is empty"},
        {"weft-tuning 1\nallreduce any * 1x-2 ring\n", "t:2: bytes: '1x-2': want"},
        {"weft-tuning 1\nallreduce any * 99999999999999999999 ring\n", "t:2: bytes:"},
        {"weft-tuning 1\nallreduce some * * ring\n", "t:2: ops: 'some'"},
        {"weft-tuning 1\nallreduce any * 0-1K ring\n\nallreduce commutative 4 512-2K "
         "rabenseifner\n", "t:4: ranks/bytes: overlaps the row on line 2"},
        {"weft-tuning 1\nallreduce any * * ring extra\n", "t:2: row: want 5 fields"},
        {"weft-tuning 1\nallreduce any * * pipeline/chunks=abc\n", "t:2: algorithms:"},
        {"weft-tuning 1\nfoo any * * ring\n", "t:2: collective: unknown collective 'foo'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tune_table_t t;
        int rc = tune_parse(bad[i].text, "t", &t);
        CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(), bad[i].want),
              "bad table %zu: got %d '%s', want '%s'", i, rc, weft_last_error(), bad[i].want);
    }
    /* the board's width: 8232 bytes a slot in a job of up to 4 ranks, 2088
     * beyond, each a whole number of lines and a reads line; AUTO's 2-rank
     * allreduce of 8 KiB takes the board where slots are wide and falls
     * through to recursive doubling where they are not (a 2-rank
     * communicator of a larger job) */
    CHECK(board_payload_for(1) == 8232 && board_payload_for(4) == 8232 &&
              board_payload_for(5) == 2088 && board_slot_bytes(2088) == 34 * 64 &&
              board_slot_bytes(8232) == 130 * 64,
          "board widths: %u %u %u, %zu and %zu bytes a slot", board_payload_for(1),
          board_payload_for(4), board_payload_for(5), board_slot_bytes(2088),
          board_slot_bytes(8232));
    for (int wide = 0; wide < 2; wide++)
        for (uint64_t bytes = 8188; bytes <= 8236; bytes += 48) {
            coll_args_t a = {0};
            a.coll = WEFT_COLL_ALLREDUCE, a.nrank = 2, a.esize = 4, a.count = bytes / 4;
            a.commutative = a.shared_board = a.board_slots = true;
            a.board_payload = board_payload_for(wide ? 2 : 5);
            tune_pick_t p;
            int rc = tune_select(&a, NULL, NULL, &p);
            const char *want = wide && bytes <= 8192 ? "board"
                               : bytes <= 8192      ? "recursive_doubling"
                                                    : "rabenseifner";
            CHECK(!rc && p.al && !strcmp(p.al->name, want), "2-rank allreduce of %llu bytes, "
                  "%u-byte slots: %s, want %s", (unsigned long long)bytes, a.board_payload,
                  rc || !p.al ? weft_last_error() : p.al->name, want);
        }
    /* rows that cannot overlap: pow2 against notpow2, commutative against not */
    tune_table_t t;
    int rc = tune_parse("weft-tuning 1\nallreduce commutative *:pow2 * ring\n"
                        "allreduce commutative *:notpow2 * rabenseifner\n"
                        "allreduce noncommutative * 0-4K recursive_doubling|binomial\n", "t", &t);
    CHECK(rc == WEFT_OK && t.nrows == 3 && t.rows[2].nchoice == 2, "good table: %s",
          weft_last_error());
    tune_free(&t);
}

/* ---- the committed image holds what the builder was given ---- */

/* Builds one schedule of every step kind, flags, an explicit dependency,
 * three rounds and an empty one, with offsets scaled by big (2^33 forces
 * the wide image). */
static void build_mixed(sched_t *b, uint64_t big)
{
    uint32_t s0 = sched_send(b, 1, 7, reg(BUF_IN, 3 * big, 5));
    sched_recv(b, 2, 8, reg(BUF_TMP, sched_tmp(b, 5), 5));
    sched_round(b);
    sched_round(b); /* empty: no round */
    uint32_t rr = sched_recv_reduce(b, 3, 9, reg(BUF_OUT, big, 5), true);
    sched_reduce_inverse(b, reg(BUF_TMP, 0, 5), reg(BUF_OUT, 2 * big, 5));
    sched_round(b);
    uint32_t c = sched_copy(b, reg(BUF_OUT, big, 5), reg(BUF_TMP, 0, 5));
    uint32_t n = sched_nop(b);
    sched_depend(b, c, rr);
    sched_depend(b, n, s0);
    sched_depend(b, n, c);
}

/* view: sched_view's image, read in place (wide steps, no allocation of
 * its own) */
static void check_image(const sched_t *b, const sched_img_t *im, bool narrow, bool view)
{
    CHECK(im->nsteps == 6 && im->nrounds == 3 && im->nedges == 3 && im->narrow == narrow &&
              im->tmp_len == 5 && im->max_tag == 10 && im->rank == 0 && im->nrank == 4,
          "image header: %u steps, %u rounds, %u edges, narrow %d", im->nsteps, im->nrounds,
          im->nedges, im->narrow);
    for (uint32_t i = 0; i < im->nsteps; i++) {
        step_t a = b->steps[i], g = sched_step(im, i);
        bool comm = a.kind == STEP_SEND || a.kind == STEP_RECV || a.kind == STEP_RECV_REDUCE;
        bool same = a.kind == g.kind && a.flags == g.flags && a.round == g.round &&
                    a.ndeps == g.ndeps && a.len == g.len;
        if (comm)
            same = same && a.peer == g.peer && a.tag == g.tag &&
                   (a.kind == STEP_SEND ? a.src_buf == g.src_buf && a.src_off == g.src_off
                                        : a.dst_buf == g.dst_buf && a.dst_off == g.dst_off);
        else
            same = same && g.peer == -1 && a.src_buf == g.src_buf && a.src_off == g.src_off &&
                   a.dst_buf == g.dst_buf && a.dst_off == g.dst_off;
        CHECK(same, "step %u reads back as built (narrow %d)", i, narrow);
    }
    CHECK(im->round_first[0] == 0 && im->round_first[1] == 2 && im->round_first[2] == 4 &&
              im->round_first[3] == 6,
          "rounds [0,2) [2,4) [4,6)");
    CHECK(sched_step_waits(im, 0) == 0 && sched_step_waits(im, 2) == 1 &&
              sched_step_waits(im, 4) == 2 && sched_step_waits(im, 5) == 3,
          "waits: explicit dependencies plus one for the round");
    uint32_t k, end;
    sched_succ(im, 0, &k, &end);
    CHECK(end - k == 1 && im->succ[k] == 5, "send 0 releases the nop");
    sched_succ(im, 2, &k, &end);
    CHECK(end - k == 1 && im->succ[k] == 4, "recv_reduce 2 releases the copy");
    sched_succ(im, 4, &k, &end);
    CHECK(end - k == 1 && im->succ[k] == 5, "copy 4 releases the nop");
    sched_succ(im, 1, &k, &end);
    CHECK(end == k, "recv 1 has no explicit successor");
    uint32_t left[3] = {2, 2, 2}, first = 0;
    CHECK(sched_round_done(im, left, 0, &first) == 0 && sched_round_done(im, left, 1, &first) == 2 &&
              first == 2,
          "round 0's last step releases round 1");
    left[2] = 1;
    CHECK(sched_round_done(im, left, 5, &first) == 0, "the last round releases nothing");
    size_t head = (sizeof(sched_img_t) + 7) & ~(size_t)7;
    size_t want = head + 6 * (narrow ? sizeof(sched_cstep_t) : sizeof(step_t)) + (4 + 7 + 3) * 4;
    if (view)
        CHECK(im->bytes == 0 && im->steps == b->steps, "a view reads the builder's steps");
    else
        CHECK(im->bytes == want, "exact size %zu (want %zu)", im->bytes, want);
}

static void test_sched_image(void)
{
    CHECK(sizeof(sched_cstep_t) == 24, "a narrow step is 24 bytes");
    sched_t b;
    sched_init(&b, 4, 0);
    for (int pass = 0; pass < 2; pass++) { /* the second reuses the builder */
        sched_img_t *im = NULL;
        build_mixed(&b, 1);
        CHECK(sched_commit(&b, &im) == 0 && im, "commit narrow");
        if (im)
            check_image(&b, im, true, false);
        sched_img_free(im);
        sched_img_t view;
        CHECK(sched_view(&b, &view) == 0, "view");
        check_image(&b, &view, false, true);
        sched_reset(&b, 4, 0);
        im = NULL;
        build_mixed(&b, 1ull << 33);
        CHECK(sched_commit(&b, &im) == 0 && im, "commit wide");
        if (im)
            check_image(&b, im, false, false);
        sched_img_free(im);
        CHECK(sched_view(&b, &view) == 0, "view, wide");
        check_image(&b, &view, false, true);
        sched_reset(&b, 4, 0);
    }
    /* a view of an empty schedule, and of a failed build */
    sched_img_t view;
    CHECK(sched_view(&b, &view) == 0 && view.nsteps == 0 && view.nrounds == 0 &&
              view.round_first[0] == 0 && !view.succ_first,
          "empty view");
    sched_depend(&b, 0, 0);
    CHECK(sched_view(&b, &view) == WEFT_EINTERNAL, "a view of a bad build is refused");
    sched_reset(&b, 4, 0);
    /* an empty schedule: no steps, no rounds */
    sched_img_t *im = NULL;
    CHECK(sched_commit(&b, &im) == 0 && im && im->nsteps == 0 && im->nrounds == 0 &&
              im->round_first[0] == 0 && !im->succ_first,
          "empty image");
    sched_img_free(im);
    /* a build error is the commit's error, and reset clears it */
    sched_depend(&b, 0, 0);
    CHECK(sched_commit(&b, &im) == WEFT_EINTERNAL && !im, "a bad dependency is refused");
    sched_reset(&b, 4, 0);
    CHECK(sched_commit(&b, &im) == 0 && im, "reset clears the error");
    sched_img_free(im);
    sched_free(&b);
}

/* hier with the node groups built once gives every rank the schedule it
 * builds from the node map alone, over uneven, interleaved nodes. */
static void test_node_groups(void)
{
    static const weft_coll_t colls[] = {WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE};
    static const int Ps[] = {1, 2, 5, 13, 40};
    for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
        int P = Ps[pi], node_of[40], nnodes = 0, seen[40];
        for (int r = 0; r < P; r++) { /* node (r * 7) % 4, numbered by first appearance */
            int raw = (r * 7) % 4, n = -1;
            for (int k = 0; k < nnodes; k++)
                if (seen[k] == raw)
                    n = k;
            if (n < 0)
                seen[n = nnodes++] = raw;
            node_of[r] = n;
        }
        node_groups_t g;
        CHECK(node_groups_build(node_of, nnodes, P, &g) == 0, "groups P=%d", P);
        int total = 0;
        for (int n = 0; n < nnodes; n++) {
            total += g.first[n + 1] - g.first[n];
            CHECK(g.leaders[n] == g.members[g.first[n]], "leader of node %d", n);
            for (int k = g.first[n]; k < g.first[n + 1]; k++)
                CHECK(node_of[g.members[k]] == n && g.idx_of[g.members[k]] == k - g.first[n] &&
                          (k == g.first[n] || g.members[k - 1] < g.members[k]),
                      "member %d of node %d", k, n);
        }
        CHECK(total == P, "every rank in one node (P=%d)", P);
        for (size_t ci = 0; ci < 3; ci++)
            for (int r = 0; r < P; r++) {
                coll_args_t a;
                memset(&a, 0, sizeof a);
                a.coll = colls[ci], a.nrank = P, a.rank = r, a.root = P - 1, a.count = 10;
                a.esize = 4, a.commutative = true, a.node_of = node_of, a.nnodes = nnodes;
                const algo_t *al = algo_find(colls[ci], "hier");
                sched_img_t *x = NULL, *y = NULL;
                CHECK(algo_build(al, &a, &x) == 0, "hier without groups");
                a.groups = &g;
                CHECK(algo_build(al, &a, &y) == 0, "hier with groups");
                bool same = x && y && x->nsteps == y->nsteps && x->nrounds == y->nrounds &&
                            x->nedges == y->nedges;
                for (uint32_t i = 0; same && i < x->nsteps; i++) {
                    step_t u = sched_step(x, i), v = sched_step(y, i);
                    same = u.kind == v.kind && u.flags == v.flags && u.peer == v.peer &&
                           u.tag == v.tag && u.round == v.round && u.ndeps == v.ndeps &&
                           u.src_buf == v.src_buf && u.dst_buf == v.dst_buf &&
                           u.src_off == v.src_off && u.dst_off == v.dst_off && u.len == v.len;
                }
                CHECK(same, "%s hier P=%d rank %d: same schedule with groups", weft_coll_name(colls[ci]),
                      P, r);
                sched_img_free(x);
                sched_img_free(y);
            }
        node_groups_free(&g);
    }
}

/* copy_bytes (core/copy.h): every distance near the one glibc copies
 * slowly, both ways, sizes around the loop's 64-byte steps and the
 * threshold, each byte checked and nothing written past the end. */
static void test_copy_bytes(void)
{
    enum { MAX = 5000, ROOM = 8192 + MAX + 64 };
    unsigned char *src = malloc(ROOM), *dst = malloc(ROOM);
    static const size_t sizes[] = {0, 1, 63, 64, 65, 1023, 1024, 1025, 1088, 4096, MAX};
    int bad = 0;
    for (int dist = -70; dist <= 70 && !bad; dist++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes && !bad; k++) {
            size_t n = sizes[k];
            /* dst - src = dist modulo 4 KiB, the pair 4096 apart */
            unsigned char *s = src + 128;
            unsigned char *d = dst + ((uintptr_t)s - (uintptr_t)dst + (uintptr_t)(dist + 4096)) % 4096;
            CHECK((((uintptr_t)d - (uintptr_t)s) & 4095) == (uintptr_t)(dist + 4096) % 4096,
                  "copy_bytes test: distance %d not set", dist);
            for (size_t i = 0; i < ROOM; i++)
                src[i] = (unsigned char)(i * 7 + 1), dst[i] = 0xee;
            copy_bytes(d, s, n);
            for (size_t i = 0; i < n && !bad; i++)
                bad = d[i] != s[i];
            for (unsigned char *p = dst; p < dst + ROOM && !bad; p++)
                bad = (p < d || p >= d + n) && *p != 0xee;
            CHECK(!bad, "copy_bytes of %zu bytes at distance %d", n, dist);
        }
    }
    free(src), free(dst);
}

/* The cores a machine's ranks may run on: their masks' union, capped by
 * the smallest quota; ranks bound one to a core are not ranks sharing one. */
static void test_cpu_allowance(void)
{
    cpu_allow_t a[4];
    memset(a, 0, sizeof a);
    a[0].mask[0] = 1, a[1].mask[0] = 2; /* bound to cores 0 and 1 */
    CHECK(cpu_allow_cores(a, 2) == 2, "two ranks bound one to a core: 2 cores");
    a[2].mask[0] = 1, a[3].mask[0] = 2;
    CHECK(cpu_allow_cores(a, 4) == 2, "four ranks bound two to a core: 2 cores");
    a[1].mask[0] = 1;
    CHECK(cpu_allow_cores(a, 2) == 1, "two ranks confined to core 0: 1 core");
    a[0].mask[0] = a[1].mask[0] = 0xff, a[1].mask[15] = 1ull << 63;
    CHECK(cpu_allow_cores(a, 2) == 9, "masks over 1024 CPUs: %u", cpu_allow_cores(a, 2));
    a[0].quota = 4, a[1].quota = 3;
    CHECK(cpu_allow_cores(a, 2) == 3, "a quota of 3 CPUs caps 9 cores");
    memset(a, 0, sizeof a);
    a[0].count = 6; /* a mask not known: the machine's count */
    a[1].mask[0] = 3;
    CHECK(cpu_allow_cores(a, 2) == 6, "an unknown mask counts the machine's CPUs");
    cpu_allow_t self;
    cpu_allow_self(&self);
    CHECK(cpu_allow_cores(&self, 1) >= 1 && cpu_cores_self() == cpu_allow_cores(&self, 1),
          "this process may run on some core");
}

/* ---- copies measured (xport/copyway.c) ---- */

/* The sender's next n ways ('s' single copy, 'c' cells) under verdict v. */
static void ways_sent(copy_ways_t *w, unsigned v, size_t bytes, bool by_default, int n, char *out)
{
    for (int i = 0; i < n; i++)
        out[i] = copy_way_single(w, v, bytes, by_default, NULL) ? 's' : 'c';
    out[n] = 0;
}

static void test_copy_ways(void)
{
    const copy_ways_t copies = {.min = COPY_WAY_MIN};
    CHECK(copy_way_bucket_of(&copies, 64 << 10) == 0 &&
              copy_way_bucket_of(&copies, (128 << 10) - 1) == 0 &&
              copy_way_bucket_of(&copies, 128 << 10) == 1 &&
              copy_way_bucket_of(&copies, 1 << 20) == 4 &&
              copy_way_bucket_of(&copies, (size_t)64 << 20) == 10 &&
              copy_way_bucket_of(&copies, (size_t)1 << 40) == 11,
          "buckets: powers of two from 64 KiB, the last open");
    copy_ways_t w = {0};
    char got[80];
    /* no verdict: runs of three, the default's second (the doubtful way's
     * run falls in the caller's first calls) */
    ways_sent(&w, COPY_WAY_UNKNOWN, 1 << 20, false, 12, got);
    CHECK(!strcmp(got, "ssscccsssccc"), "undecided, cells by default: %s", got);
    memset(&w, 0, sizeof w);
    ways_sent(&w, COPY_WAY_UNKNOWN, 1 << 20, true, 6, got);
    CHECK(!strcmp(got, "cccsss"), "undecided, single by default: %s", got);
    /* a verdict: one run of three the other way in 64, or in 256 when clear */
    memset(&w, 0, sizeof w);
    int other = 0, first = -1;
    for (int i = 0; i < 256; i++)
        if (!copy_way_single(&w, COPY_WAY_SINGLE, 1 << 20, false, NULL) && (other++, first < 0))
            first = i;
    CHECK(other == 12 && first == 61, "single copy decided: %d by cells from %d", other, first);
    memset(&w, 0, sizeof w);
    other = 0;
    for (int i = 0; i < 256; i++)
        other += copy_way_single(&w, COPY_WAY_CELLS | COPY_WAY_CLEAR, 1 << 20, true, NULL);
    CHECK(other == 3, "cells decided clearly: %d by single copy in 256", other);
    /* timed: every copy while undecided; after, the winner's run just
     * before the other way's, and that run */
    memset(&w, 0, sizeof w);
    int timed_n = 0, untimed_undecided = 0;
    for (int i = 0; i < 12; i++) {
        bool t = false;
        copy_way_single(&w, COPY_WAY_UNKNOWN, 1 << 20, false, &t);
        untimed_undecided += !t;
    }
    memset(&w, 0, sizeof w);
    for (int i = 0; i < 64; i++) {
        bool t = false, single = copy_way_single(&w, COPY_WAY_CELLS, 1 << 20, false, &t);
        if (t && (i < 58 || single != (i >= 61)))
            timed_n = -1000;
        timed_n += t;
    }
    CHECK(untimed_undecided == 0 && timed_n == 6,
          "timed: %d undecided copies untimed, %d of 64 decided timed (want 0, 6: 58-63)",
          untimed_undecided, timed_n);
    /* settle (a busy sender's reducing messages): the first round of turns
     * untimed, the ways still taking turns in it; every copy timed after */
    copy_ways_t st = {.min = REDUCE_BUSY_WAY_MIN, .settle = true};
    char turns[13] = {0};
    int untimed_first = 0, untimed_after = 0;
    for (int i = 0; i < 12; i++) {
        bool t = true;
        turns[i] = copy_way_single(&st, COPY_WAY_UNKNOWN, 1 << 20, false, &t) ? 's' : 'c';
        *(i < 6 ? &untimed_first : &untimed_after) += !t;
    }
    CHECK(untimed_first == 6 && untimed_after == 0 &&
              !strcmp(turns, "ssscccsssccc"),
          "settle: %d of the first 6 untimed (want 6), %d of the next 6 (want 0), turns %s",
          untimed_first, untimed_after, turns);
    /* buckets from w->min: an idle sender's reducing messages from 8 KiB */
    copy_ways_t red = {.min = REDUCE_WAY_MIN};
    CHECK(copy_way_bucket_of(&red, 8 << 10) == 0 && copy_way_bucket_of(&red, 16 << 10) == 1 &&
              copy_way_bucket_of(&red, (64 << 10) - 1) == 2 &&
              copy_way_bucket_of(&red, 64 << 10) == 3 && copy_way_bucket_of(&w, 64 << 10) == 0,
          "buckets from 8 KiB");
    /* a bucket without a verdict follows the nearest smaller one's when
     * that is clear (marked carried), else none; where ranks have a core
     * each, only from the next smaller bucket */
    uint8_t pub[COPY_WAY_BUCKETS] = {0};
    CHECK(copy_way_prior(pub, 5, true) == COPY_WAY_UNKNOWN, "no verdict anywhere: none");
    pub[1] = COPY_WAY_CELLS | COPY_WAY_CLEAR;
    pub[3] = COPY_WAY_SINGLE;
    const unsigned carried_cells = COPY_WAY_CELLS | COPY_WAY_CARRIED;
    CHECK(copy_way_prior(pub, 0, true) == COPY_WAY_UNKNOWN && copy_way_prior(pub, 1, true) == pub[1] &&
              copy_way_prior(pub, 2, true) == carried_cells &&
              copy_way_prior(pub, 2, false) == carried_cells &&
              copy_way_prior(pub, 3, true) == pub[3] &&
              copy_way_prior(pub, 4, true) == COPY_WAY_UNKNOWN &&
              copy_way_prior(pub, 11, true) == COPY_WAY_UNKNOWN,
          "priors: %u %u %u %u %u %u", copy_way_prior(pub, 0, true), copy_way_prior(pub, 1, true),
          copy_way_prior(pub, 2, true), copy_way_prior(pub, 3, true),
          copy_way_prior(pub, 4, true), copy_way_prior(pub, 11, true));
    pub[3] = COPY_WAY_SINGLE | COPY_WAY_CLEAR;
    CHECK(copy_way_prior(pub, 11, true) == (COPY_WAY_SINGLE | COPY_WAY_CARRIED) &&
              copy_way_prior(pub, 4, false) == (COPY_WAY_SINGLE | COPY_WAY_CARRIED) &&
              copy_way_prior(pub, 5, false) == COPY_WAY_UNKNOWN &&
              copy_way_prior(pub, 11, false) == COPY_WAY_UNKNOWN,
          "a clear verdict carries up: any distance where ranks share cores, one bucket "
          "where not (%u %u %u)", copy_way_prior(pub, 11, true), copy_way_prior(pub, 4, false),
          copy_way_prior(pub, 5, false));
    /* a carried verdict has the other way tried in every 16 */
    memset(&w, 0, sizeof w);
    ways_sent(&w, COPY_WAY_CELLS | COPY_WAY_CARRIED, 1 << 20, true, 32, got);
    CHECK(!strcmp(got, "cccccccccccccssscccccccccccccsss"), "carried cells: %s", got);
    /* buckets count apart */
    memset(&w, 0, sizeof w);
    ways_sent(&w, COPY_WAY_UNKNOWN, 64 << 10, false, 2, got);
    ways_sent(&w, COPY_WAY_UNKNOWN, 8 << 20, false, 3, got + 2);
    CHECK(!strcmp(got, "sssss"), "each size its own count: %s", got);

    /* the receiver: a copy after one the other way is not timed; two
     * timed copies of each way make a verdict */
    memset(&w, 0, sizeof w);
    size_t mib = 1 << 20;
    uint32_t best[2];
    unsigned v = COPY_WAY_UNKNOWN;
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 1000000, best); /* first: after none */
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 100000, best);
    v = copy_way_sample(&w, mib, COPY_WAY_SINGLE, 1, best); /* after cells: not timed */
    v = copy_way_sample(&w, mib, COPY_WAY_SINGLE, 60000, best);
    CHECK(v == COPY_WAY_UNKNOWN && best[0] == 0 && best[1] == 0,
          "one timed copy of each way: no verdict (%u; %u, %u ns/KiB)", v, best[0], best[1]);
    v = copy_way_sample(&w, mib, COPY_WAY_SINGLE, 80000, best);
    CHECK(v == COPY_WAY_UNKNOWN && best[1] == 58, "single copy's two: best 58 ns/KiB, got %u",
          best[1]);
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 90000, best); /* after single: not timed */
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 95000, best);
    CHECK(v == (COPY_WAY_SINGLE | COPY_WAY_CLEAR) && best[0] == 92 && best[1] == 58,
          "single copy faster (58 against 92 ns/KiB, 1.59x: clear): verdict %u", v);
    /* hysteresis: cells 5 % faster do not move it, 20 % faster do */
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 57000, best);
    CHECK(COPY_WAY_OF(v) == COPY_WAY_SINGLE && !(v & COPY_WAY_CLEAR),
          "cells at 55 against 58: stays single copy, no longer clear (%u)", v);
    v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 48000, best);
    CHECK(COPY_WAY_OF(v) == COPY_WAY_CELLS, "cells at 46 against 58: switch (%u)", v);
    /* the figure is the best of the latest three: old fast samples age out */
    for (int i = 0; i < 3; i++)
        v = copy_way_sample(&w, mib, COPY_WAY_CELLS, 200000, best);
    CHECK(best[0] == 195 && COPY_WAY_OF(v) == COPY_WAY_SINGLE,
          "cells slowed to 195 ns/KiB: back to single copy (%u, best %u)", v, best[0]);
    /* sizes apart: the 64 KiB bucket has no samples yet */
    v = copy_way_sample(&w, 64 << 10, COPY_WAY_CELLS, 5000, best);
    CHECK(v == COPY_WAY_UNKNOWN && best[0] == 0, "another size starts afresh");
    /* typical (an idle sender's reducing messages): the mean, not the best,
     * so one drained-only sample (cells filled before the clock) does not
     * win against the way most messages were faster */
    copy_ways_t t = {.min = REDUCE_WAY_MIN, .typical = true};
    size_t kib16 = 16 << 10;
    unsigned tv = COPY_WAY_UNKNOWN;
    static const struct { unsigned way; uint64_t ns; } runs[] = {
        {COPY_WAY_CELLS, 0}, {COPY_WAY_CELLS, 800}, {COPY_WAY_CELLS, 4000},
        {COPY_WAY_SINGLE, 0}, {COPY_WAY_SINGLE, 1600}, {COPY_WAY_SINGLE, 1600}};
    for (unsigned i = 0; i < sizeof runs / sizeof runs[0]; i++)
        tv = copy_way_sample(&t, kib16, runs[i].way, runs[i].ns, best);
    CHECK(COPY_WAY_OF(tv) == COPY_WAY_SINGLE && best[0] == 150 && best[1] == 100,
          "typical: cells 50 and 250 ns/KiB (mean 150) against single copy 100: single "
          "copy (%u; %u, %u)", tv, best[0], best[1]);
}

int main(void)
{
    test_tuning_tables();
    test_composed_properties();
    test_int_kernels();
    test_float_kernels();
    test_half_conversions();
    test_half_kernels_exact();
    test_seeded_kernels();
    test_ops();
    test_params();
    test_checker();
    test_bruck_example();
    test_sched_image();
    test_node_groups();
    test_copy_bytes();
    test_cpu_allowance();
    test_copy_ways();
    printf("test_unit: %d checks, %d failures\n", checks, failures);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
