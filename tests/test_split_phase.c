/* test_split_phase.c — GASPI-style split-phase collectives
 * (weft_allreduce_timeout & co.): one rank delays 200 ms between calls while
 * the others poll with WEFT_TEST; all finish with the right result.  While a
 * call is unfinished, another collective gets WEFT_EBUSY and a continuing
 * call with a different count WEFT_EINVAL.  Also bcast and reduce, WEFT_BLOCK,
 * an expensive user op, and thousands of messages polled at WEFT_TEST on
 * more ranks than cores. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

static int me, P;
#define CHECK_WHO() fprintf(stderr, "rank %d: ", me)
#include "testing.h"

static void slow_sum(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    usleep(2000); /* an expensive reduction */
    for (size_t i = 0; i < n; i++)
        ((int64_t *)inout)[i] += ((const int64_t *)in)[i];
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv))
        return 1;
    weft_comm_t w = weft_comm_world();
    me = weft_comm_rank(w), P = weft_comm_size(w);
    int slow = P > 1 ? 1 : 0; /* the rank that dawdles */
    size_t n = 10007;
    int32_t *in = malloc(n * 4), *out = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        in[i] = (int32_t)(i % 100) + me;
    int rc, calls = 0;
    if (me == slow)
        usleep(200000);
    do {
        rc = weft_allreduce_timeout(in, out, n, WEFT_INT32, WEFT_SUM, w, WEFT_TEST);
        calls++;
        if (rc == WEFT_ETIMEDOUT && calls == 1 && me != slow) {
            /* while it is unfinished: */
            int32_t x = 1, y;
            CHECK(weft_allreduce(&x, &y, 1, WEFT_INT32, WEFT_SUM, w) == WEFT_EBUSY, "blocking call not refused");
            CHECK(weft_bcast_timeout(&x, 1, WEFT_INT32, 0, w, WEFT_TEST) == WEFT_EBUSY,
                  "other timeout call not refused");
            CHECK(weft_allreduce_timeout(in, out, n - 1, WEFT_INT32, WEFT_SUM, w, WEFT_TEST) ==
                      WEFT_EINVAL, "different count not refused: %s", weft_last_error());
        }
        if (rc == WEFT_ETIMEDOUT && me == slow)
            usleep(200000);
    } while (rc == WEFT_ETIMEDOUT);
    CHECK(rc == WEFT_OK, "allreduce_timeout: %d %s", rc, weft_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += out[i] != (int32_t)((i % 100) * (size_t)P + (size_t)P * (P - 1) / 2);
    CHECK(!bad, "allreduce_timeout: %zu wrong", bad);
    CHECK(me == slow || P == 1 || calls > 1, "rank %d finished in %d call(s) although rank %d was late", me, calls, slow);

    /* bcast and reduce, polling and blocking */
    int64_t b[64];
    for (int i = 0; i < 64; i++)
        b[i] = me == P - 1 ? 7 * i : -1;
    while ((rc = weft_bcast_timeout(b, 64, WEFT_INT64, P - 1, w, 1)) == WEFT_ETIMEDOUT)
        ;
    CHECK(rc == WEFT_OK && b[63] == 7 * 63, "bcast_timeout");
    int64_t v = me + 1, s = 0;
    CHECK(weft_reduce_timeout(&v, &s, 1, WEFT_INT64, WEFT_SUM, 0, w, WEFT_BLOCK) == WEFT_OK, "reduce");
    CHECK(me != 0 || s == (int64_t)P * (P + 1) / 2, "reduce_timeout result %lld", (long long)s);

    /* an expensive user op, progressed by polling */
    weft_op_t op;
    weft_op_create(slow_sum, NULL, 1, 0, &op);
    int64_t u[8], ur[8];
    for (int i = 0; i < 8; i++)
        u[i] = me * 10 + i;
    int polls = 0;
    while ((rc = weft_allreduce_timeout(u, ur, 8, WEFT_INT64, op, w, WEFT_TEST)) == WEFT_ETIMEDOUT)
        polls++;
    CHECK(rc == WEFT_OK, "user-op allreduce_timeout: %s", weft_last_error());
    for (int i = 0; i < 8; i++)
        CHECK(ur[i] == 10LL * P * (P - 1) / 2 + (int64_t)P * i, "user op result %d", i);
    weft_op_free(&op);
    CHECK(weft_allreduce_timeout(u, ur, 8, WEFT_INT64, WEFT_SUM, w, -5) == WEFT_EINVAL, "bad timeout");

    /* thousands of small messages, every rank polling at WEFT_TEST: with
     * more ranks than cores a poll that moves nothing must give its core
     * up (this took 76 s a call at 5 ranks on 2 cores; the test's time
     * limit is the check) */
    size_t nb = 37145;
    int8_t *ib = malloc(nb), *ob = malloc(nb);
    for (size_t i = 0; i < nb; i++)
        ib[i] = (int8_t)((i * 7 + (size_t)me * 13) % 101);
    CHECK(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "rabenseifner", "segment=12") == WEFT_OK,
          "set rabenseifner: %s", weft_last_error());
    for (int k = 0; k < 3; k++) {
        while ((rc = weft_allreduce_timeout(ib, ob, nb, WEFT_INT8, WEFT_MIN, w, WEFT_TEST)) ==
               WEFT_ETIMEDOUT)
            ;
        CHECK(rc == WEFT_OK, "polled segmented allreduce: %s", weft_last_error());
        bad = 0;
        for (size_t i = 0; i < nb; i++) {
            int8_t m = INT8_MAX;
            for (int r = 0; r < P; r++) {
                int8_t x = (int8_t)((i * 7 + (size_t)r * 13) % 101);
                m = x < m ? x : m;
            }
            bad += ob[i] != m;
        }
        CHECK(!bad, "polled segmented allreduce: %zu wrong", bad);
    }
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
    free(ib), free(ob);

    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_split_phase P=%d: rank 0 made %d calls; %d failures\n", P, calls, total);
    free(in), free(out);
    weft_finalize();
    return total ? 1 : 0;
}
