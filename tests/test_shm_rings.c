/* test_shm_rings.c — the shared-memory rings are taken per pair that talks
 * (segment.h), so a job's /dev/shm use follows its algorithms, not P².
 *
 *   test_shm_rings fits: allreduce by ring, recursive doubling and binomial,
 *       exact int32 sums; run at a P whose P² rings would not fit the
 *       WEFT_SHM_MAX it is given (CMakeLists.txt), so it passes only
 *       because rings are taken on use.
 *   test_shm_rings full: a pairwise reduce_scatter (every pair talks) that
 *       the limit cannot hold: every rank must fail — WEFT_ENOMEM naming
 *       the full shared memory where a ring could not be taken, WEFT_EPEER
 *       elsewhere — and none may hang. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int check_allreduce(weft_comm_t w, const char *algo, size_t n)
{
    int me = weft_comm_rank(w), P = weft_comm_size(w);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (int32_t)(me * 7 + (int)i);
    int rc = weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, algo, NULL);
    if (!rc)
        rc = weft_allreduce(WEFT_IN_PLACE, v, n, WEFT_INT32, WEFT_SUM, w);
    int bad = rc != WEFT_OK;
    for (size_t i = 0; !bad && i < n; i++)
        bad = v[i] != (int32_t)(7 * P * (P - 1) / 2 + P * (int)i);
    if (bad)
        printf("rank %d: WRONG %s allreduce of %zu: %s\n", me, algo, n,
               rc ? weft_last_error() : "wrong sum");
    free(v);
    return bad;
}

static int fits(weft_comm_t w)
{
    static const char *algos[] = {"ring", "recursive_doubling", "binomial"};
    int bad = 0;
    for (int a = 0; a < 3; a++)
        for (size_t n = 0; n <= 5000; n = n * 7 + 1)
            bad |= check_allreduce(w, algos[a], n);
    return bad;
}

static int full(weft_comm_t w)
{
    int me = weft_comm_rank(w), P = weft_comm_size(w);
    size_t n = 16;
    int32_t *in = calloc((size_t)P * n, sizeof *in), *out = calloc(n, sizeof *out);
    int rc = weft_set_algorithm(w, WEFT_COLL_REDUCE_SCATTER, "pairwise", NULL);
    if (!rc)
        rc = weft_reduce_scatter(in, out, n, WEFT_INT32, WEFT_SUM, w);
    int ok = (rc == WEFT_ENOMEM && strstr(weft_last_error(), "shared memory is full")) ||
             rc == WEFT_EPEER;
    printf("rank %d: %s %d: %s\n", me, ok ? "failed as it should," : "WRONG", rc,
           rc ? weft_last_error() : "no error");
    free(in), free(out);
    return !ok;
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv))
        return 1;
    int bad = argc > 1 && !strcmp(argv[1], "full") ? full(weft_comm_world())
                                                   : fits(weft_comm_world());
    fflush(stdout);
    weft_finalize();
    return bad;
}
