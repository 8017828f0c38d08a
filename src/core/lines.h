/* lines.h — handing a cache line just written to the core that reads it
 * next.
 *
 * A line one core has just written sits modified in that core's private
 * cache; a reader on another core then takes it with a snoop of that cache,
 * the slowest way a line can come.  CLDEMOTE (Intel, from Sapphire Rapids
 * and Tremont) moves it to the shared cache right away, where the reader's
 * load finds it.  It is a hint: on processors without it the encoding is a
 * no-op, and nothing here depends on it being honoured.  The CPU is asked
 * once per translation unit, since CPUID traps under some hypervisors. */
#ifndef WEFT_LINES_H
#define WEFT_LINES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Whether this CPU demotes lines on request (CPUID leaf 7, ECX bit 25). */
static inline bool lines_demote_supported(void)
{
#if defined(__x86_64__)
    static _Atomic int has = -1; /* threads asking at once store one answer */
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        unsigned a, b, c, d;
        h = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 25));
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return h;
#else
    return false;
#endif
}

/* Demotes the lines holding [p, p + bytes) once the stores to them before
 * this call are done (CLDEMOTE is ordered after older stores to its line). */
static inline void lines_demote(const void *p, size_t bytes)
{
#if defined(__x86_64__)
    const char *at = (const char *)((uintptr_t)p & ~(uintptr_t)63);
    for (const char *end = (const char *)p + bytes; at < end; at += 64)
        __asm__ volatile("cldemote %0" : : "m"(*at));
#else
    (void)p, (void)bytes;
#endif
}

#endif
