/* core.h — internal declarations shared by every part of libweft: error
 * reporting, datatype and op tables, reduction kernels. */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include "tool_api.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WEFT_UNUSED __attribute__((unused))
#define WEFT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Record code and message as this thread's last error and return code. */
WEFT_TOOL_API int weft_error(int code, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* A size at the start of s: digits and an optional K, M or G (powers of
 * 1024), as tuning tables, algorithm parameters (segment=), `weft bench
 * --sizes` and `weft explain` write them.  Returns the end of the size, or
 * NULL (no digits, overflow).  config.c. */
WEFT_TOOL_API const char *size_prefix(const char *s, uint64_t *out);
void weft_error_clear(void);

/* ---- datatypes ---- */
bool dtype_valid(weft_dtype_t dt);
bool dtype_is_float(weft_dtype_t dt);

/* ---- ops ---- */
typedef struct op_info {
    weft_user_fn fn; /* NULL for builtin ops */
    void *ctx;
    int builtin;     /* WEFT_SUM.. or -1 */
    bool commutative;
    bool idempotent;
    bool invertible; /* has an exact inverse: integer sum (modular), bxor */
    /* The op's identity across processes, for the call signature: builtin
     * op + 1; a user op's function's place (module, offset) and flags. */
    uint64_t ident;
} op_info_t;

/* Looks the op up and checks it applies to dt; WEFT_EINVAL with a message
 * otherwise. */
int op_lookup(weft_op_t op, weft_dtype_t dt, op_info_t *out);

/* A ready-to-apply reduction: dst = dst (op) src, or dst = src (op) dst when
 * src_left (the order matters only for non-commutative user ops). */
typedef void (*reduce_kernel_fn)(void *dst, const void *src, size_t n);
/* dst = a (op) b, dst overlapping neither */
typedef void (*reduce3_kernel_fn)(void *dst, const void *a, const void *b, size_t n);
typedef struct reducer {
    reduce_kernel_fn kernel; /* builtin */
    reduce3_kernel_fn kernel3; /* builtin: dst = a (op) b (every type has one) */
    reduce_kernel_fn inverse; /* dst = dst (op^-1) src, where the op is invertible */
    weft_user_fn user;
    void *ctx;
    weft_dtype_t dtype;
    size_t esize;
} reducer_t;

WEFT_TOOL_API int reducer_init(reducer_t *r, weft_op_t op, weft_dtype_t dt);
WEFT_TOOL_API void reducer_apply(const reducer_t *r, void *dst, const void *src, size_t n,
                   bool src_left);
/* dst = seed (op) src, or src (op) seed when src_left, dst overlapping
 * neither: in one pass where the op has a seeded kernel, else a copy and
 * reducer_apply, 8 KiB at a time (each block still in L1 when reduced). */
WEFT_TOOL_API void reducer_apply_seeded(const reducer_t *r, void *dst, const void *seed,
                                        const void *src, size_t n, bool src_left);
/* The seeded kernel of a builtin op on dt (the widest this CPU runs), or
 * NULL for an op or type out of range. */
reduce3_kernel_fn reduce3_kernel(int builtin_op, weft_dtype_t dt);
/* dst = dst (op^-1) src: takes src's contributions out of dst; only for
 * ops op_info_t.invertible says have an exact inverse. */
void reducer_apply_inverse(const reducer_t *r, void *dst, const void *src, size_t n);
reduce_kernel_fn reduce_kernel(int builtin_op, weft_dtype_t dt);
/* Every kernel of a builtin op on dt this CPU can run, the one
 * reduce_kernel picks first and the portable one last; their count (1-3).
 * For tests: each must give the portable kernel's bits. */
int reduce_kernel_variants(int builtin_op, weft_dtype_t dt, reduce_kernel_fn fns[3]);
/* The exact inverse of a builtin op on dt, or NULL if it has none. */
reduce_kernel_fn inverse_kernel(int builtin_op, weft_dtype_t dt);

/* float16 / bfloat16 conversions (round to nearest even). */
WEFT_TOOL_API float half_to_float(uint16_t h);
WEFT_TOOL_API uint16_t float_to_half(float f);
WEFT_TOOL_API float bf16_to_float(uint16_t h);
WEFT_TOOL_API uint16_t float_to_bf16(float f);

/* FNV-1a, 64 bits: h (FNV1A_START to begin) folded with n bytes at p. */
#define FNV1A_START 1469598103934665603ull
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* WEFT_VERBOSE is set (and not 0): say on stderr what was decided, once. */
bool weft_verbose(void);

/* Monotonic time. */
WEFT_TOOL_API double weft_now(void);
uint64_t weft_now_ns(void);

#endif
