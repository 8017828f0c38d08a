/* copy.h — memcpy for the large copies between buffers weft does not place
 * (a user's buffer and a cell, or two user buffers).
 *
 * glibc copies a block of 4 KiB to a few hundred KiB with `rep movsb`,
 * and the CPU runs that at a tenth of its speed when the destination lies
 * 1-15 bytes past the source modulo 4 KiB (it cannot rule out an overlap
 * from the low address bits and moves small pieces).  Here (AMD EPYC,
 * glibc 2.36), copies of 4-256 KiB ran at 3-4 GB/s at such a distance
 * against 48-103 at distance 0, and a plain SSE2 loop runs them at 42-49;
 * from 1 MiB glibc copies another way, at 47 either way (the loop: 38).
 * Cells are 16 KiB, so every copy between a user's buffer and a cell is
 * in that range, and a buffer meets the distance often enough (a float
 * array from its fourth element on, against a page-aligned cell).  So
 * copies of 1 KiB to 1 MiB at distances below 64 take the loop
 * (docs/PERFORMANCE.md, "Copies that glibc makes slow"). */
#ifndef WEFT_COPY_H
#define WEFT_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Outside these, glibc copies with vector moves whatever the distance. */
#define COPY_NEAR_MIN 1024u
#define COPY_NEAR_MAX (1u << 20)

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    size_t dist = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    if (n >= COPY_NEAR_MIN && n < COPY_NEAR_MAX && dist && dist < 64) {
        char *d = dst;
        const char *s = src;
        for (; n >= 64; d += 64, s += 64, n -= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s),
                    b = _mm_loadu_si128((const __m128i *)(s + 16)),
                    c = _mm_loadu_si128((const __m128i *)(s + 32)),
                    e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_storeu_si128((__m128i *)d, a);
            _mm_storeu_si128((__m128i *)(d + 16), b);
            _mm_storeu_si128((__m128i *)(d + 32), c);
            _mm_storeu_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, s, n);
        return;
    }
#endif
    memcpy(dst, src, n);
}

#endif
