/* affine.h — the tests' non-commutative op: x -> a x + b (mod 2^32), a odd;
 * elements are uint64 (a << 32 | b); f o g means "apply g first, then f";
 * the result in rank order is x0 o x1 o ... o x(P-1).  (weft bench has its
 * own copy: the tool is not built with the tests.) */
#ifndef WEFT_TEST_AFFINE_H
#define WEFT_TEST_AFFINE_H

#include <stddef.h>
#include <stdint.h>

#include "weft.h"

static uint64_t affine_compose(uint64_t f, uint64_t g)
{
    uint32_t fa = (uint32_t)(f >> 32), fb = (uint32_t)f, ga = (uint32_t)(g >> 32), gb = (uint32_t)g;
    return (uint64_t)(fa * ga) << 32 | (uint32_t)(fa * gb + fb);
}

static void affine_fn(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    (void)dt, (void)ctx;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (size_t i = 0; i < n; i++)
        b[i] = affine_compose(a[i], b[i]);
}

#endif
