/* reduce.c — datatypes, reduction ops and their kernels.
 *
 * Kernels compute dst[i] = dst[i] (op) src[i], and seeded ones dst[i] =
 * a[i] (op) b[i] (for a receive fused with the copy before it: sink.c).
 * They are plain loops over
 * restrict pointers, compiled at -O3 so that gcc vectorises them; float16 and
 * bfloat16 are widened to float32, reduced, and rounded back (round to
 * nearest even): by hand-written AVX-512 or AVX2 kernels where the CPU has
 * them (picked at run time, each giving the portable kernel's bits), else in
 * blocks through the float32 kernels.  Signed integer sum/prod wrap
 * (computed in unsigned) so overflow is defined.  min/max on floats follow
 * `b < a ? b : a`: with a NaN the result is whichever operand the
 * comparison keeps (as MPI leaves it undefined).  User ops are kept in a
 * small table guarded by a mutex. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "copy.h"
#include "core.h"

static const struct {
    const char *name;
    size_t size;
    bool is_float;
} dtypes[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = {"int8", 1, false},       [WEFT_INT16] = {"int16", 2, false},
    [WEFT_INT32] = {"int32", 4, false},     [WEFT_INT64] = {"int64", 8, false},
    [WEFT_UINT8] = {"uint8", 1, false},     [WEFT_UINT16] = {"uint16", 2, false},
    [WEFT_UINT32] = {"uint32", 4, false},   [WEFT_UINT64] = {"uint64", 8, false},
    [WEFT_FLOAT16] = {"float16", 2, true},  [WEFT_BFLOAT16] = {"bfloat16", 2, true},
    [WEFT_FLOAT32] = {"float32", 4, true},  [WEFT_FLOAT64] = {"float64", 8, true},
};

bool dtype_valid(weft_dtype_t dt) { return (unsigned)dt < WEFT_DTYPE_COUNT; }
bool dtype_is_float(weft_dtype_t dt) { return dtype_valid(dt) && dtypes[dt].is_float; }
size_t weft_dtype_size(weft_dtype_t dt) { return dtype_valid(dt) ? dtypes[dt].size : 0; }
const char *weft_dtype_name(weft_dtype_t dt)
{
    return dtype_valid(dt) ? dtypes[dt].name : "invalid";
}

static const char *const builtin_names[WEFT_OP_BUILTIN_COUNT] = {
    "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"};

/* ---- user ops ---- */

#define USER_OP_BASE 64
#define USER_OP_MAX 256
static struct {
    bool used;
    weft_user_fn fn;
    void *ctx;
    bool commutative, idempotent;
    uint64_t ident; /* op_info_t.ident */
} user_ops[USER_OP_MAX];
static pthread_mutex_t user_ops_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where an address lives, the same in every process running the same
 * programs: its object file's name and its offset in it (ASLR moves the
 * base, not the offset).  0 for an address outside every loaded object
 * (the heap, the stack). */
static uint64_t place_of(const void *addr)
{
    Dl_info di;
    if (!addr || !dladdr(addr, &di) || !di.dli_fbase)
        return 0;
    const char *name = di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
    name = name ? name + 1 : di.dli_fname ? di.dli_fname : "";
    uint64_t off = (uint64_t)((const char *)addr - (const char *)di.dli_fbase);
    unsigned char le[8]; /* the offset's bytes, lowest first */
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(off >> (8 * i));
    return fnv1a(fnv1a(FNV1A_START, name, strlen(name)), le, sizeof le);
}

static uint64_t user_ident(const void *origin, bool commutative, bool idempotent)
{
    uint64_t h = place_of(origin);
    return (h ? h : 0x5eed) << 2 | (uint64_t)commutative << 1 | (uint64_t)idempotent;
}

weft_err_t weft_op_create(weft_user_fn fn, void *ctx, int commutative,
                          int idempotent, weft_op_t *op)
{
    if (!fn || !op)
        return weft_error(WEFT_EINVAL, "weft_op_create: fn and op must not be NULL");
    pthread_mutex_lock(&user_ops_lock);
    for (int i = 0; i < USER_OP_MAX; i++) {
        if (!user_ops[i].used) {
            user_ops[i].used = true;
            user_ops[i].fn = fn;
            user_ops[i].ctx = ctx;
            user_ops[i].commutative = commutative != 0;
            user_ops[i].idempotent = idempotent != 0;
            user_ops[i].ident = user_ident((const void *)fn, commutative, idempotent);
            pthread_mutex_unlock(&user_ops_lock);
            *op = USER_OP_BASE + i;
            return WEFT_OK;
        }
    }
    pthread_mutex_unlock(&user_ops_lock);
    return weft_error(WEFT_ENOMEM, "weft_op_create: all %d user-op slots are in use",
                      USER_OP_MAX);
}

weft_err_t weft_op_free(weft_op_t *op)
{
    if (!op)
        return weft_error(WEFT_EINVAL, "weft_op_free: op must not be NULL");
    long i = (long)*op - USER_OP_BASE; /* no overflow for INT_MIN */
    pthread_mutex_lock(&user_ops_lock);
    if (i < 0 || i >= USER_OP_MAX || !user_ops[i].used) {
        pthread_mutex_unlock(&user_ops_lock);
        return weft_error(WEFT_EINVAL, "weft_op_free: %d is not a user-defined op", *op);
    }
    user_ops[i].used = false;
    pthread_mutex_unlock(&user_ops_lock);
    *op = -1;
    return WEFT_OK;
}

weft_err_t weft_op_set_origin(weft_op_t op, const void *origin)
{
    long i = (long)op - USER_OP_BASE; /* no overflow for INT_MIN */
    pthread_mutex_lock(&user_ops_lock);
    if (i < 0 || i >= USER_OP_MAX || !user_ops[i].used) {
        pthread_mutex_unlock(&user_ops_lock);
        return weft_error(WEFT_EINVAL, "weft_op_set_origin: %d is not a user-defined op", op);
    }
    user_ops[i].ident = user_ident(origin, user_ops[i].commutative, user_ops[i].idempotent);
    pthread_mutex_unlock(&user_ops_lock);
    return WEFT_OK;
}

const char *weft_op_name(weft_op_t op)
{
    if (op >= 0 && op < WEFT_OP_BUILTIN_COUNT)
        return builtin_names[op];
    if (op >= USER_OP_BASE && op < USER_OP_BASE + USER_OP_MAX)
        return "user";
    return "invalid";
}

int op_lookup(weft_op_t op, weft_dtype_t dt, op_info_t *out)
{
    if (!dtype_valid(dt))
        return weft_error(WEFT_EINVAL, "unknown datatype %d", (int)dt);
    if (op >= 0 && op < WEFT_OP_BUILTIN_COUNT) {
        if (op >= WEFT_BAND && dtype_is_float(dt))
            return weft_error(WEFT_EINVAL,
                              "op %s is defined for integer types only, not %s",
                              builtin_names[op], dtypes[dt].name);
        out->fn = NULL;
        out->ctx = NULL;
        out->builtin = op;
        out->commutative = true;
        out->idempotent = op == WEFT_MIN || op == WEFT_MAX || op == WEFT_BAND ||
                          op == WEFT_BOR || op == WEFT_LAND || op == WEFT_LOR;
        out->invertible = inverse_kernel(op, dt) != NULL;
        out->ident = (uint64_t)op + 1;
        return WEFT_OK;
    }
    long i = (long)op - USER_OP_BASE; /* no overflow for INT_MIN */
    bool ok = false;
    pthread_mutex_lock(&user_ops_lock);
    if (i >= 0 && i < USER_OP_MAX && user_ops[i].used) {
        out->fn = user_ops[i].fn;
        out->ctx = user_ops[i].ctx;
        out->builtin = -1;
        out->commutative = user_ops[i].commutative;
        out->idempotent = user_ops[i].idempotent;
        out->invertible = false;
        out->ident = user_ops[i].ident;
        ok = true;
    }
    pthread_mutex_unlock(&user_ops_lock);
    if (!ok)
        return weft_error(WEFT_EINVAL, "unknown op %d (not builtin, not created by "
                                       "weft_op_create or already freed)", op);
    return WEFT_OK;
}

/* ---- half precision ---- */

typedef union {
    uint32_t u;
    float f;
} fbits;

float half_to_float(uint16_t h)
{
    const fbits magic = {.u = 113u << 23};
    const uint32_t shifted_exp = 0x7c00u << 13;
    fbits o;
    o.u = (uint32_t)(h & 0x7fff) << 13;
    uint32_t exp = shifted_exp & o.u;
    o.u += (uint32_t)(127 - 15) << 23;
    if (exp == shifted_exp) {
        o.u += (uint32_t)(128 - 16) << 23;
    } else if (exp == 0) {
        o.u += 1u << 23;
        o.f -= magic.f;
    }
    o.u |= (uint32_t)(h & 0x8000) << 16;
    return o.f;
}

uint16_t float_to_half(float fl)
{
    const fbits f32infty = {.u = 255u << 23};
    const fbits f16max = {.u = (127u + 16) << 23};
    const fbits denorm_magic = {.u = ((127u - 15) + (23 - 10) + 1) << 23};
    fbits f = {.f = fl};
    uint32_t sign = f.u & 0x80000000u;
    uint16_t o;
    f.u ^= sign;
    if (f.u >= f16max.u) {
        o = f.u > f32infty.u ? 0x7e00 : 0x7c00;
    } else if (f.u < (113u << 23)) {
        f.f += denorm_magic.f;
        o = (uint16_t)(f.u - denorm_magic.u);
    } else {
        uint32_t mant_odd = (f.u >> 13) & 1;
        f.u += ((uint32_t)(15 - 127) << 23) + 0xfff;
        f.u += mant_odd;
        o = (uint16_t)(f.u >> 13);
    }
    return (uint16_t)(o | (sign >> 16));
}

float bf16_to_float(uint16_t h)
{
    fbits f = {.u = (uint32_t)h << 16};
    return f.f;
}

uint16_t float_to_bf16(float fl)
{
    fbits f = {.f = fl};
    if ((f.u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((f.u >> 16) | 0x40); /* quiet NaN */
    f.u += 0x7fff + ((f.u >> 16) & 1);
    return (uint16_t)(f.u >> 16);
}

/* ---- kernels ---- */

/* Branch-free bfloat16 conversions the compiler can vectorise. */
static inline float bf16_widen(uint16_t h)
{
    fbits f = {.u = (uint32_t)h << 16};
    return f.f;
}

static inline uint16_t bf16_narrow(float x)
{
    fbits f = {.f = x};
    uint32_t rounded = (f.u + 0x7fff + ((f.u >> 16) & 1)) >> 16;
    uint32_t quiet = (f.u >> 16) | 0x40;
    return (uint16_t)((f.u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

/* Plain kernels are cloned for AVX2 and picked at load time (ifunc), so
 * in-cache reductions use the wide registers where the CPU has them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL_CLONES
#endif

#define SUMOP(a, b) ((a) + (b))
#define SUBOP(a, b) ((a) - (b))
#define PRODOP(a, b) ((a) * (b))
#define MINOP(a, b) ((b) < (a) ? (b) : (a))
#define MAXOP(a, b) ((b) > (a) ? (b) : (a))
#define BANDOP(a, b) ((a) & (b))
#define BOROP(a, b) ((a) | (b))
#define BXOROP(a, b) ((a) ^ (b))
#define LANDOP(a, b) ((a) && (b))
#define LOROP(a, b) ((a) || (b))

#define KERNEL(name, T, OP)                                                   \
    KERNEL_CLONES static void name(void *dst_, const void *src_, size_t n)   \
    {                                                                         \
        T *restrict d = dst_;                                                 \
        const T *restrict s = src_;                                           \
        for (size_t i = 0; i < n; i++)                                        \
            d[i] = (T)OP(d[i], s[i]);                                         \
    }

/* The seeded form, dst[i] = a[i] (op) b[i]: a receive-and-reduce the
 * engine fused with the copy before it (sink.c) reads the copy's source
 * and the message and writes the destination once, where a copy then a
 * kernel wrote it twice and read it back in between. */
#define KERNEL3(name, T, OP)                                                  \
    KERNEL_CLONES static void name(void *dst_, const void *a_, const void *b_, size_t n) \
    {                                                                         \
        T *restrict d = dst_;                                                 \
        const T *restrict a = a_, *restrict b = b_;                           \
        for (size_t i = 0; i < n; i++)                                        \
            d[i] = (T)OP(a[i], b[i]);                                         \
    }

/* Signed wrap-around arithmetic through the unsigned type of equal width. */
#define KERNEL_WRAP(name, T, U, OP)                                           \
    KERNEL_CLONES static void name(void *dst_, const void *src_, size_t n)   \
    {                                                                         \
        T *restrict d = dst_;                                                 \
        const T *restrict s = src_;                                           \
        for (size_t i = 0; i < n; i++)                                        \
            d[i] = (T)(U)OP((U)d[i], (U)s[i]);                                \
    }

#define KERNEL3_WRAP(name, T, U, OP)                                          \
    KERNEL_CLONES static void name(void *dst_, const void *a_, const void *b_, size_t n) \
    {                                                                         \
        T *restrict d = dst_;                                                 \
        const T *restrict a = a_, *restrict b = b_;                           \
        for (size_t i = 0; i < n; i++)                                        \
            d[i] = (T)(U)OP((U)a[i], (U)b[i]);                                \
    }

/* An op's plain and seeded kernels on type tn, from one line each. */
#define KERNELS(op, tn, T, OP) KERNEL(k_##op##_##tn, T, OP) KERNEL3(k3_##op##_##tn, T, OP)
#define KERNELS_WRAP(op, tn, T, U, OP)                                        \
    KERNEL_WRAP(k_##op##_##tn, T, U, OP) KERNEL3_WRAP(k3_##op##_##tn, T, U, OP)

#define INT_KERNELS(tn, T, U)                                                 \
    KERNEL_WRAP(k_sub_##tn, T, U, SUBOP) /* the inverse of sum: plain only */ \
    KERNELS_WRAP(sum, tn, T, U, SUMOP)                                        \
    KERNELS_WRAP(prod, tn, T, U, PRODOP)                                      \
    KERNELS(min, tn, T, MINOP)                                                \
    KERNELS(max, tn, T, MAXOP)                                                \
    KERNELS(band, tn, T, BANDOP)                                              \
    KERNELS(bor, tn, T, BOROP)                                                \
    KERNELS(bxor, tn, T, BXOROP)                                              \
    KERNELS(land, tn, T, LANDOP)                                              \
    KERNELS(lor, tn, T, LOROP)

/* uint8/uint16 promote to int in C: multiply through unsigned int to avoid
 * signed overflow. */
INT_KERNELS(i8, int8_t, uint8_t)
INT_KERNELS(i16, int16_t, uint16_t)
INT_KERNELS(i32, int32_t, uint32_t)
INT_KERNELS(i64, int64_t, uint64_t)
INT_KERNELS(u8, uint8_t, unsigned)
INT_KERNELS(u16, uint16_t, unsigned)
INT_KERNELS(u32, uint32_t, uint32_t)
INT_KERNELS(u64, uint64_t, uint64_t)

#define FLOAT_KERNELS(tn, T)                                                  \
    KERNELS(sum, tn, T, SUMOP)                                                \
    KERNELS(prod, tn, T, PRODOP)                                              \
    KERNELS(min, tn, T, MINOP)                                                \
    KERNELS(max, tn, T, MAXOP)

FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)

/* Half types: widen a block, apply the float32 kernel, round back.  Each
 * kernel is written seeded, dst = a (op) b, where a may be dst itself
 * (every block or vector is read before it is written): the plain kernel
 * is the seeded one with a = dst (PLAIN_OF), so the two give the same
 * bits by construction. */
#define HALF_BLOCK 256
#define HALF_KERNEL3(name, F32K, TOF, FROMF)                                  \
    KERNEL_CLONES static void name(void *dst_, const void *a_, const void *b_, size_t n) \
    {                                                                         \
        uint16_t *d = dst_;                                                   \
        const uint16_t *x = a_, *y = b_;                                      \
        float a[HALF_BLOCK], b[HALF_BLOCK];                                   \
        for (size_t i = 0; i < n; i += HALF_BLOCK) {                          \
            size_t m = n - i < HALF_BLOCK ? n - i : HALF_BLOCK;               \
            for (size_t j = 0; j < m; j++) {                                  \
                a[j] = TOF(x[i + j]);                                         \
                b[j] = TOF(y[i + j]);                                         \
            }                                                                 \
            F32K(a, b, m);                                                    \
            for (size_t j = 0; j < m; j++)                                    \
                d[i + j] = FROMF(a[j]);                                       \
        }                                                                     \
    }
#define PLAIN_OF(name, seeded)                                                \
    static void name(void *dst, const void *src, size_t n) { seeded(dst, dst, src, n); }

HALF_KERNEL3(k3_sum_f16, k_sum_f32, half_to_float, float_to_half)
HALF_KERNEL3(k3_prod_f16, k_prod_f32, half_to_float, float_to_half)
HALF_KERNEL3(k3_min_f16, k_min_f32, half_to_float, float_to_half)
HALF_KERNEL3(k3_max_f16, k_max_f32, half_to_float, float_to_half)
HALF_KERNEL3(k3_sum_bf16, k_sum_f32, bf16_widen, bf16_narrow)
HALF_KERNEL3(k3_prod_bf16, k_prod_f32, bf16_widen, bf16_narrow)
HALF_KERNEL3(k3_min_bf16, k_min_f32, bf16_widen, bf16_narrow)
HALF_KERNEL3(k3_max_bf16, k_max_f32, bf16_widen, bf16_narrow)
PLAIN_OF(k_sum_f16, k3_sum_f16)
PLAIN_OF(k_prod_f16, k3_prod_f16)
PLAIN_OF(k_min_f16, k3_min_f16)
PLAIN_OF(k_max_f16, k3_max_f16)
PLAIN_OF(k_sum_bf16, k3_sum_bf16)
PLAIN_OF(k_prod_bf16, k3_prod_bf16)
PLAIN_OF(k_min_bf16, k3_min_bf16)
PLAIN_OF(k_max_bf16, k3_max_bf16)

/* float16 with the F16C conversion instructions, 8 lanes at a time; the
 * portable kernels above serve CPUs without them and the tail. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define F16C_KERNEL(name, VOP, portable)                                       \
    __attribute__((target("avx2,f16c"))) static void name(void *dst_, const void *a_, \
                                                          const void *b_, size_t n) \
    {                                                                          \
        uint16_t *d = dst_;                                                    \
        const uint16_t *x = a_, *y = b_;                                       \
        size_t i = 0;                                                          \
        for (; i + 8 <= n; i += 8) {                                           \
            __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))); \
            __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i))); \
            _mm_storeu_si128((__m128i *)(d + i),                               \
                             _mm256_cvtps_ph(VOP(a, b), _MM_FROUND_TO_NEAREST_INT)); \
        }                                                                      \
        if (i < n)                                                             \
            portable(d + i, x + i, y + i, n - i);                              \
    }
F16C_KERNEL(k3_sum_f16c, _mm256_add_ps, k3_sum_f16)
F16C_KERNEL(k3_prod_f16c, _mm256_mul_ps, k3_prod_f16)
/* min/max as the portable kernels: b < a ? b : a keeps a on ties and NaN */
#define MINV(a, b) _mm256_blendv_ps(a, b, _mm256_cmp_ps(b, a, _CMP_LT_OQ))
#define MAXV(a, b) _mm256_blendv_ps(a, b, _mm256_cmp_ps(b, a, _CMP_GT_OQ))
F16C_KERNEL(k3_min_f16c, MINV, k3_min_f16)
F16C_KERNEL(k3_max_f16c, MAXV, k3_max_f16)

/* bfloat16 on AVX2, 16 lanes a pass without a pack: a 32-bit lane holds
 * two values, the even one in its low half (widened by a shift left) and
 * the odd one in its high half (widened by masking the low half off).  Each
 * result is rounded to nearest even in place, so its bfloat16 is the high
 * half of the lane, NaNs quieted as bf16_narrow does; the even result is
 * shifted down and the two halves merged.  Bit for bit the portable kernel
 * (test_unit compares every kernel on random bit patterns). */
#define BF16_ROUND_AVX2(u)                                                     \
    ({                                                                         \
        __m256i nan_ = _mm256_castps_si256(                                    \
            _mm256_cmp_ps(_mm256_castsi256_ps(u), _mm256_castsi256_ps(u), _CMP_UNORD_Q)); \
        __m256i inc_ = _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)); \
        _mm256_or_si256(_mm256_add_epi32(u, _mm256_andnot_si256(nan_, inc_)),  \
                        _mm256_and_si256(nan_, qbit));                         \
    })
#define BF16_KERNEL(name, VOP, portable)                                       \
    __attribute__((target("avx2"))) static void name(void *dst_, const void *a_, \
                                                     const void *b_, size_t n) \
    {                                                                          \
        uint16_t *d = dst_;                                                    \
        const uint16_t *xs = a_, *ys = b_;                                     \
        const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff); \
        const __m256i qbit = _mm256_set1_epi32(0x400000), high = _mm256_set1_epi32(-65536); \
        size_t i = 0;                                                          \
        for (; i + 16 <= n; i += 16) {                                         \
            __m256i x = _mm256_loadu_si256((const __m256i *)(xs + i));         \
            __m256i y = _mm256_loadu_si256((const __m256i *)(ys + i));         \
            __m256i even = _mm256_castps_si256(                                \
                VOP(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)),             \
                    _mm256_castsi256_ps(_mm256_slli_epi32(y, 16))));           \
            __m256i odd = _mm256_castps_si256(                                 \
                VOP(_mm256_castsi256_ps(_mm256_and_si256(x, high)),            \
                    _mm256_castsi256_ps(_mm256_and_si256(y, high))));          \
            even = BF16_ROUND_AVX2(even);                                      \
            odd = BF16_ROUND_AVX2(odd);                                        \
            _mm256_storeu_si256((__m256i *)(d + i),                            \
                                _mm256_or_si256(_mm256_srli_epi32(even, 16),   \
                                                _mm256_and_si256(odd, high))); \
        }                                                                      \
        if (i < n)                                                             \
            portable(d + i, xs + i, ys + i, n - i);                            \
    }
BF16_KERNEL(k3_sum_bf16v, _mm256_add_ps, k3_sum_bf16)
BF16_KERNEL(k3_prod_bf16v, _mm256_mul_ps, k3_prod_bf16)
BF16_KERNEL(k3_min_bf16v, MINV, k3_min_bf16)
BF16_KERNEL(k3_max_bf16v, MAXV, k3_max_bf16)

/* The same two on AVX-512 (F only), twice the lanes a pass; the tails go to
 * the AVX2 kernels. */
#define MINV512(a, b) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, a, _CMP_LT_OQ), a, b)
#define MAXV512(a, b) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(b, a, _CMP_GT_OQ), a, b)
#define F16C512_KERNEL(name, VOP, tail)                                        \
    __attribute__((target("avx512f"))) static void name(void *dst_, const void *a_, \
                                                        const void *b_, size_t n) \
    {                                                                          \
        uint16_t *d = dst_;                                                    \
        const uint16_t *x = a_, *y = b_;                                       \
        size_t i = 0;                                                          \
        for (; i + 16 <= n; i += 16) {                                         \
            __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))); \
            __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(y + i))); \
            _mm256_storeu_si256((__m256i *)(d + i),                            \
                                _mm512_cvtps_ph(VOP(a, b), _MM_FROUND_TO_NEAREST_INT)); \
        }                                                                      \
        if (i < n)                                                             \
            tail(d + i, x + i, y + i, n - i);                                  \
    }
F16C512_KERNEL(k3_sum_f16z, _mm512_add_ps, k3_sum_f16c)
F16C512_KERNEL(k3_prod_f16z, _mm512_mul_ps, k3_prod_f16c)
F16C512_KERNEL(k3_min_f16z, MINV512, k3_min_f16c)
F16C512_KERNEL(k3_max_f16z, MAXV512, k3_max_f16c)

#define BF16_ROUND_512(u)                                                      \
    _mm512_mask_or_epi32(                                                      \
        _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one))), \
        _mm512_cmp_ps_mask(_mm512_castsi512_ps(u), _mm512_castsi512_ps(u), _CMP_UNORD_Q), u, qbit)
#define BF16_512_KERNEL(name, VOP, tail)                                       \
    __attribute__((target("avx512f"))) static void name(void *dst_, const void *a_, \
                                                        const void *b_, size_t n) \
    {                                                                          \
        uint16_t *d = dst_;                                                    \
        const uint16_t *xs = a_, *ys = b_;                                     \
        const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff); \
        const __m512i qbit = _mm512_set1_epi32(0x400000), high = _mm512_set1_epi32(-65536); \
        size_t i = 0;                                                          \
        for (; i + 32 <= n; i += 32) {                                         \
            __m512i x = _mm512_loadu_si512((const void *)(xs + i));            \
            __m512i y = _mm512_loadu_si512((const void *)(ys + i));            \
            __m512i even = _mm512_castps_si512(                                \
                VOP(_mm512_castsi512_ps(_mm512_slli_epi32(x, 16)),             \
                    _mm512_castsi512_ps(_mm512_slli_epi32(y, 16))));           \
            __m512i odd = _mm512_castps_si512(                                 \
                VOP(_mm512_castsi512_ps(_mm512_and_si512(x, high)),            \
                    _mm512_castsi512_ps(_mm512_and_si512(y, high))));          \
            even = BF16_ROUND_512(even);                                       \
            odd = BF16_ROUND_512(odd);                                         \
            _mm512_storeu_si512((void *)(d + i),                               \
                                _mm512_or_si512(_mm512_srli_epi32(even, 16),   \
                                                _mm512_and_si512(odd, high))); \
        }                                                                      \
        if (i < n)                                                             \
            tail(d + i, xs + i, ys + i, n - i);                                \
    }
BF16_512_KERNEL(k3_sum_bf16z, _mm512_add_ps, k3_sum_bf16v)
BF16_512_KERNEL(k3_prod_bf16z, _mm512_mul_ps, k3_prod_bf16v)
BF16_512_KERNEL(k3_min_bf16z, MINV512, k3_min_bf16v)
BF16_512_KERNEL(k3_max_bf16z, MAXV512, k3_max_bf16v)

/* the plain kernels of the vector ones */
PLAIN_OF(k_sum_f16c, k3_sum_f16c)
PLAIN_OF(k_prod_f16c, k3_prod_f16c)
PLAIN_OF(k_min_f16c, k3_min_f16c)
PLAIN_OF(k_max_f16c, k3_max_f16c)
PLAIN_OF(k_sum_bf16v, k3_sum_bf16v)
PLAIN_OF(k_prod_bf16v, k3_prod_bf16v)
PLAIN_OF(k_min_bf16v, k3_min_bf16v)
PLAIN_OF(k_max_bf16v, k3_max_bf16v)
PLAIN_OF(k_sum_f16z, k3_sum_f16z)
PLAIN_OF(k_prod_f16z, k3_prod_f16z)
PLAIN_OF(k_min_f16z, k3_min_f16z)
PLAIN_OF(k_max_f16z, k3_max_f16z)
PLAIN_OF(k_sum_bf16z, k3_sum_bf16z)
PLAIN_OF(k_prod_bf16z, k3_prod_bf16z)
PLAIN_OF(k_min_bf16z, k3_min_bf16z)
PLAIN_OF(k_max_bf16z, k3_max_bf16z)
#define HAVE_F16C_KERNELS 1
#endif

#define INT_ROW(tn)                                                           \
    {k_sum_##tn, k_prod_##tn, k_min_##tn, k_max_##tn, k_band_##tn,            \
     k_bor_##tn, k_bxor_##tn, k_land_##tn, k_lor_##tn}
#define FLOAT_ROW(tn) {k_sum_##tn, k_prod_##tn, k_min_##tn, k_max_##tn}
#define INT_ROW3(tn)                                                          \
    {k3_sum_##tn, k3_prod_##tn, k3_min_##tn, k3_max_##tn, k3_band_##tn,       \
     k3_bor_##tn, k3_bxor_##tn, k3_land_##tn, k3_lor_##tn}
#define FLOAT_ROW3(tn) {k3_sum_##tn, k3_prod_##tn, k3_min_##tn, k3_max_##tn}

static const reduce_kernel_fn kernels[WEFT_DTYPE_COUNT][WEFT_OP_BUILTIN_COUNT] = {
    [WEFT_INT8] = INT_ROW(i8),       [WEFT_INT16] = INT_ROW(i16),
    [WEFT_INT32] = INT_ROW(i32),     [WEFT_INT64] = INT_ROW(i64),
    [WEFT_UINT8] = INT_ROW(u8),      [WEFT_UINT16] = INT_ROW(u16),
    [WEFT_UINT32] = INT_ROW(u32),    [WEFT_UINT64] = INT_ROW(u64),
    [WEFT_FLOAT16] = FLOAT_ROW(f16), [WEFT_BFLOAT16] = FLOAT_ROW(bf16),
    [WEFT_FLOAT32] = FLOAT_ROW(f32), [WEFT_FLOAT64] = FLOAT_ROW(f64),
};

/* (float16 and bfloat16: the portable ones; half_variant3 gives the
 * vector ones) */
static const reduce3_kernel_fn kernels3[WEFT_DTYPE_COUNT][WEFT_OP_BUILTIN_COUNT] = {
    [WEFT_INT8] = INT_ROW3(i8),     [WEFT_INT16] = INT_ROW3(i16),
    [WEFT_INT32] = INT_ROW3(i32),   [WEFT_INT64] = INT_ROW3(i64),
    [WEFT_UINT8] = INT_ROW3(u8),    [WEFT_UINT16] = INT_ROW3(u16),
    [WEFT_UINT32] = INT_ROW3(u32),  [WEFT_UINT64] = INT_ROW3(u64),
    [WEFT_FLOAT16] = FLOAT_ROW3(f16), [WEFT_BFLOAT16] = FLOAT_ROW3(bf16),
    [WEFT_FLOAT32] = FLOAT_ROW3(f32), [WEFT_FLOAT64] = FLOAT_ROW3(f64),
};

#ifdef HAVE_F16C_KERNELS
#include <cpuid.h>
#include <stdatomic.h>
/* F16C from CPUID itself: clang 14 (Debian's) has no "f16c" for
 * __builtin_cpu_supports. */
static bool cpu_has_f16c(void)
{
    /* CPUID traps under some hypervisors: ask once.  Threads resolving
     * their first float16 calls at once may each ask: the same answer,
     * stored atomically (a plain int was a data race, TSan: weft stress
     * with threads) */
    static _Atomic int has = -1;
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        unsigned a, b, c, d;
        h = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return h;
}
#endif

/* The widest vector kernels of a half type this CPU runs: 2 AVX-512, 1
 * AVX2 (with F16C for float16), 0 none (the portable ones serve). */
static int half_level(int builtin_op, weft_dtype_t dt)
{
#ifdef HAVE_F16C_KERNELS
    if (builtin_op > WEFT_MAX || (dt != WEFT_FLOAT16 && dt != WEFT_BFLOAT16) ||
        !__builtin_cpu_supports("avx2") || (dt == WEFT_FLOAT16 && !cpu_has_f16c()))
        return 0;
    return __builtin_cpu_supports("avx512f") ? 2 : 1;
#else
    (void)builtin_op, (void)dt;
    return 0;
#endif
}

/* The half-precision kernels this CPU can run, widest first: AVX-512, then
 * AVX2 (with F16C for float16).  0 where only the portable one serves. */
static int half_variants(int builtin_op, weft_dtype_t dt, reduce_kernel_fn *fns)
{
    int n = 0, level = half_level(builtin_op, dt);
#ifdef HAVE_F16C_KERNELS
    if (!level)
        return 0;
    static const reduce_kernel_fn z[2][4] = {
        {k_sum_f16z, k_prod_f16z, k_min_f16z, k_max_f16z},
        {k_sum_bf16z, k_prod_bf16z, k_min_bf16z, k_max_bf16z}};
    static const reduce_kernel_fn v[2][4] = {
        {k_sum_f16c, k_prod_f16c, k_min_f16c, k_max_f16c},
        {k_sum_bf16v, k_prod_bf16v, k_min_bf16v, k_max_bf16v}};
    int b = dt == WEFT_BFLOAT16;
    if (level == 2)
        fns[n++] = z[b][builtin_op];
    fns[n++] = v[b][builtin_op];
#else
    (void)level, (void)fns;
#endif
    return n;
}

/* The same for the seeded kernels: the widest this CPU can run, or NULL. */
static reduce3_kernel_fn half_variant3(int builtin_op, weft_dtype_t dt)
{
    int level = half_level(builtin_op, dt);
#ifdef HAVE_F16C_KERNELS
    if (!level)
        return NULL;
    static const reduce3_kernel_fn z[2][4] = {
        {k3_sum_f16z, k3_prod_f16z, k3_min_f16z, k3_max_f16z},
        {k3_sum_bf16z, k3_prod_bf16z, k3_min_bf16z, k3_max_bf16z}};
    static const reduce3_kernel_fn v[2][4] = {
        {k3_sum_f16c, k3_prod_f16c, k3_min_f16c, k3_max_f16c},
        {k3_sum_bf16v, k3_prod_bf16v, k3_min_bf16v, k3_max_bf16v}};
    int b = dt == WEFT_BFLOAT16;
    return level == 2 ? z[b][builtin_op] : v[b][builtin_op];
#else
    (void)level;
    return NULL;
#endif
}

reduce_kernel_fn reduce_kernel(int builtin_op, weft_dtype_t dt)
{
    if (!dtype_valid(dt) || builtin_op < 0 || builtin_op >= WEFT_OP_BUILTIN_COUNT)
        return NULL;
    reduce_kernel_fn v[2];
    return half_variants(builtin_op, dt, v) ? v[0] : kernels[dt][builtin_op];
}

int reduce_kernel_variants(int builtin_op, weft_dtype_t dt, reduce_kernel_fn fns[3])
{
    if (!dtype_valid(dt) || builtin_op < 0 || builtin_op >= WEFT_OP_BUILTIN_COUNT)
        return 0;
    int n = half_variants(builtin_op, dt, fns);
    fns[n++] = kernels[dt][builtin_op];
    return n;
}

reduce3_kernel_fn reduce3_kernel(int builtin_op, weft_dtype_t dt)
{
    if (!dtype_valid(dt) || builtin_op < 0 || builtin_op >= WEFT_OP_BUILTIN_COUNT)
        return NULL;
    reduce3_kernel_fn v = half_variant3(builtin_op, dt);
    return v ? v : kernels3[dt][builtin_op];
}

/* Integer sum is modular arithmetic, so subtraction undoes it exactly, and
 * xor is its own inverse.  Floating-point sum is deliberately not here:
 * (a + b) - b is not a, and when the part taken out dominates the rest the
 * difference can lose every digit; algorithms recompute without it instead. */
reduce_kernel_fn inverse_kernel(int builtin_op, weft_dtype_t dt)
{
    static const reduce_kernel_fn sub[WEFT_DTYPE_COUNT] = {
        [WEFT_INT8] = k_sub_i8,   [WEFT_INT16] = k_sub_i16, [WEFT_INT32] = k_sub_i32,
        [WEFT_INT64] = k_sub_i64, [WEFT_UINT8] = k_sub_u8,  [WEFT_UINT16] = k_sub_u16,
        [WEFT_UINT32] = k_sub_u32, [WEFT_UINT64] = k_sub_u64,
    };
    if (!dtype_valid(dt) || dtype_is_float(dt))
        return NULL;
    if (builtin_op == WEFT_SUM)
        return sub[dt];
    if (builtin_op == WEFT_BXOR)
        return kernels[dt][WEFT_BXOR];
    return NULL;
}

int reducer_init(reducer_t *r, weft_op_t op, weft_dtype_t dt)
{
    op_info_t info = {0};
    int rc = op_lookup(op, dt, &info);
    if (rc)
        return rc;
    memset(r, 0, sizeof *r);
    r->dtype = dt;
    r->esize = dtypes[dt].size;
    if (info.builtin >= 0) {
        r->kernel = reduce_kernel(info.builtin, dt);
        r->kernel3 = reduce3_kernel(info.builtin, dt);
        r->inverse = inverse_kernel(info.builtin, dt);
    }
    r->user = info.fn;
    r->ctx = info.ctx;
    return WEFT_OK;
}

void reducer_apply_inverse(const reducer_t *r, void *dst, const void *src, size_t n)
{
    if (n)
        r->inverse(dst, src, n); /* schedules ask for it only where it exists */
}

void reducer_apply(const reducer_t *r, void *dst, const void *src, size_t n,
                   bool src_left)
{
    if (n == 0)
        return;
    if (r->kernel) {
        r->kernel(dst, src, n); /* builtin ops are commutative */
        return;
    }
    if (src_left) {
        r->user(src, dst, n, r->dtype, r->ctx); /* dst = src op dst */
        return;
    }
    /* dst = dst op src: run the user function on a copy of src, then move
     * the result back, a block at a time. */
    unsigned char tmp[4096];
    size_t per = sizeof tmp / r->esize;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per;
        size_t off = i * r->esize, bytes = m * r->esize;
        copy_bytes(tmp, (const char *)src + off, bytes);
        r->user((char *)dst + off, tmp, m, r->dtype, r->ctx);
        copy_bytes((char *)dst + off, tmp, bytes);
    }
}

void reducer_apply_seeded(const reducer_t *r, void *dst, const void *seed, const void *src,
                          size_t n, bool src_left)
{
    if (n == 0)
        return;
    if (r->kernel3) {
        r->kernel3(dst, seed, src, n); /* builtin ops are commutative */
        return;
    }
    /* a block at a time, each still in L1 when the op reads it back */
    size_t per = 8192 / r->esize;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per, off = i * r->esize;
        copy_bytes((char *)dst + off, (const char *)seed + off, m * r->esize);
        reducer_apply(r, (char *)dst + off, (const char *)src + off, m, src_left);
    }
}
