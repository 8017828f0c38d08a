/* fuzz_bench_opts.c — libFuzzer harness for `weft bench`'s option parser.
 * Input: NUL-separated arguments after "bench".  Every command line must
 * be taken (with every option in range) or refused with status 2.  Run it
 * with -close_fd_mask=3: the parser says on stderr what it refuses. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *text = malloc(n + 1), *argv[34] = {"bench"};
    memcpy(text, data, n);
    text[n] = '\0';
    int argc = 1;
    for (size_t i = 0; i < n && argc < 33; i += strlen(text + i) + 1)
        argv[argc++] = text + i;
    argv[argc] = NULL;
    bench_opts_t o;
    int rc = bench_parse(argc, argv, &o);
    assert(rc == 0 || rc == 1 || rc == 2);
    if (rc == 0) {
        assert(o.np >= 1 && o.np <= 4096);
        assert(o.nsizes >= 1 && o.nsizes <= 64);
        for (int i = 0; i < o.nsizes; i++)
            assert(o.sizes[i] <= (1ull << 40)); /* 0 bytes is a valid call */
        assert(o.iters == -1 || o.iters >= 1);
        assert(o.root >= 0 && (o.transport || o.root < o.np));
        assert(o.dtype < WEFT_DTYPE_COUNT);
        /* a builtin op, or --op noncommutative: affine maps held as uint64 */
        assert((o.op >= 0 && o.op < WEFT_OP_BUILTIN_COUNT) ||
               (o.op == OP_AFFINE && o.dtype == WEFT_UINT64));
        assert(memchr(o.algos, '\0', sizeof o.algos));
        assert(o.nmif >= 0 && o.nmif <= 16 && (!o.redraw || o.nmif) && !(o.nmif && o.osu));
        assert(!(o.arrivals && (o.nmif || o.osu)));
        for (int i = 0; i < o.nmif; i++)
            assert(o.mif[i] >= 0 && o.mif[i] <= 1000);
    }
    free(text);
    return 0;
}
