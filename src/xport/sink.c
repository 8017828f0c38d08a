/* sink.c — delivering a message's bytes into a receive's destination, for
 * every transport: a copy, a reduction into place, or, for a receive the
 * engine fused with the copy step before it (engine.c, fuse_copy), the
 * seed reduced with the message into the destination: in one pass by the
 * op's seeded kernel (reduce.c; a user op has none: it copies and reduces
 * in blocks small enough that a block of the destination is still in L1
 * when it is reduced).  Either way the destination is written once where
 * copy and reduction wrote it twice, and read back from memory in between
 * once it outgrew the caches.  A large message's copy, or fused reduction, is
 * written with streaming stores (sink.stream, engine.c says when), which
 * do not read the destination's lines before writing them. */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "../core/copy.h"
#include "xport.h"

#define SEED_BLOCK 8192u /* a multiple of every element size */

void xsink_deliver(const xsink_t *sk, size_t off, const void *src, size_t len)
{
    if (!len)
        return;
    char *d = (char *)sk->dst + off;
    if (!sk->red) {
        if (sk->stream)
            copy_streaming(d, src, len), copy_streaming_done();
        else
            copy_bytes(d, src, len);
        return;
    }
    size_t es = sk->red->esize;
    if (!sk->seed) {
        reducer_apply(sk->red, d, src, len / es, sk->src_left);
        return;
    }
    const char *seed = sk->seed + off, *in = src;
    if (!sk->stream) {
        reducer_apply_seeded(sk->red, d, seed, in, len / es, sk->src_left);
        return;
    }
    /* streaming: each block is reduced in a buffer that stays in L1 and
     * then streamed out, so the destination is never read */
    _Alignas(64) char block[SEED_BLOCK];
    for (size_t at = 0; at < len;) {
        size_t b = len - at < SEED_BLOCK ? len - at : SEED_BLOCK;
        reducer_apply_seeded(sk->red, block, seed + at, in + at, b / es, sk->src_left);
        copy_streaming(d + at, block, b);
        at += b;
    }
    copy_streaming_done();
}
