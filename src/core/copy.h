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
 * (docs/PERFORMANCE-LOG.md, "Copies that glibc makes slow"). */
#ifndef WEFT_COPY_H
#define WEFT_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Outside these, glibc copies with vector moves whatever the distance. */
#define COPY_NEAR_MIN 1024u
#define COPY_NEAR_MAX (1u << 20)

#if defined(__x86_64__)
/* Copies n rounded down to 64 bytes in 16-byte vectors and returns how
 * many: stored as they are, or streamed past the caches (stream: dst
 * 16-byte aligned, and the caller fences before anyone reads them). */
static inline size_t copy_lines(char *dst, const char *src, size_t n, bool stream)
{
    size_t k = 0;
    for (; n - k >= 64; k += 64) {
        const char *s = src + k;
        __m128i v[4] = {_mm_loadu_si128((const __m128i *)s),
                        _mm_loadu_si128((const __m128i *)(s + 16)),
                        _mm_loadu_si128((const __m128i *)(s + 32)),
                        _mm_loadu_si128((const __m128i *)(s + 48))};
        for (int i = 0; i < 4; i++) {
            if (stream)
                _mm_stream_si128((__m128i *)(dst + k + 16 * i), v[i]);
            else
                _mm_storeu_si128((__m128i *)(dst + k + 16 * i), v[i]);
        }
    }
    return k;
}
#endif

/* memcpy with streaming stores where the destination is 16-byte aligned
 * (the head and tail around that by memcpy), a plain memcpy on other
 * machines.  The caller fences (copy_streaming_done) before anything says
 * the bytes are in. */
static inline void copy_streaming(char *d, const char *s, size_t n)
{
#if defined(__x86_64__)
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t k = copy_lines(d, s, n, true);
    d += k, s += k, n -= k;
#endif
    memcpy(d, s, n);
}

static inline void copy_streaming_done(void)
{
#if defined(__x86_64__)
    _mm_sfence(); /* streaming stores are not ordered with later ones */
#endif
}

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    size_t dist = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    if (n >= COPY_NEAR_MIN && n < COPY_NEAR_MAX && dist && dist < 64) {
        size_t k = copy_lines(dst, src, n, false);
        memcpy((char *)dst + k, (const char *)src + k, n - k);
        return;
    }
#endif
    memcpy(dst, src, n);
}

#endif
