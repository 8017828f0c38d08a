/* test_errors.c — bad input gets a clear error code and message, never a
 * crash or a hang.  Modes: (none) argument checks, also before weft_init;
 * "mismatch": ranks pass different counts and must fail (EMISMATCH where
 * detected, EPEER on the others) instead of hanging. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int failures, checks, me;

#define EXPECT(call, code, needle)                                                        \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        const char *nd_ = (needle);                                                       \
        checks++;                                                                         \
        if (rc_ != (code) || (nd_ && !strstr(weft_last_error(), nd_))) {                 \
            failures++;                                                                   \
            fprintf(stderr, "rank %d: FAIL line %d: %s -> %d (%s), wanted %d with '%s'\n", \
                    me, __LINE__, #call, rc_, weft_last_error(), (int)(code),             \
                    nd_ ? nd_ : "");                                                      \
        }                                                                                 \
    } while (0)

static void noncomm(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    int32_t *b = inout;
    const int32_t *a = in;
    for (size_t i = 0; i < n; i++)
        b[i] = a[i] - b[i];
}

static int mismatch_mode(void)
{
    weft_comm_t w = weft_comm_world();
    int P = weft_comm_size(w);
    int32_t buf[64] = {0};
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "ring", NULL);
    size_t n = me == 0 ? 10 : 11;
    int rc = weft_allreduce(WEFT_IN_PLACE, buf, n, WEFT_INT32, WEFT_SUM, w);
    int ok = rc == WEFT_EMISMATCH || rc == WEFT_EPEER;
    printf("rank %d/%d: mismatched count -> %s: %s\n", me, P, weft_strerror(rc), weft_last_error());
    if (!ok)
        fprintf(stderr, "rank %d: FAIL mismatched counts returned %d\n", me, rc);
    weft_finalize(); /* fails too (the job is aborted), but must return */
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int32_t a[8] = {0}, b[8] = {0};
    /* before init */
    EXPECT(weft_allreduce(a, b, 1, WEFT_INT32, WEFT_SUM, weft_comm_world()), WEFT_ENOTINIT, "weft_init");
    EXPECT(weft_barrier(NULL), WEFT_ENOTINIT, NULL);
    EXPECT(weft_finalize(), WEFT_ENOTINIT, NULL);
    if (argc > 1 && !strcmp(argv[1], "badenv")) {
        /* run with WEFT_ALLREDUCE_ALGO=bogus: weft_init must refuse it */
        EXPECT(weft_init(&argc, &argv), WEFT_EINVAL, "WEFT_ALLREDUCE_ALGO=bogus");
        printf("badenv: %s\n", weft_last_error());
        return failures ? 1 : 0;
    }
    if (weft_init(&argc, &argv) != WEFT_OK) {
        fprintf(stderr, "weft_init: %s\n", weft_last_error());
        return 1;
    }
    weft_comm_t w = weft_comm_world();
    me = weft_comm_rank(w);
    int P = weft_comm_size(w);
    if (argc > 1 && !strcmp(argv[1], "mismatch"))
        return mismatch_mode();
    EXPECT(weft_init(NULL, NULL), WEFT_EINVAL, "already");
    EXPECT(weft_allreduce(a, b, 1, WEFT_INT32, WEFT_SUM, NULL), WEFT_EINVAL, "NULL");
    EXPECT(weft_allreduce(NULL, b, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "send buffer");
    EXPECT(weft_allreduce(a, NULL, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "receive buffer");
    EXPECT(weft_allreduce(a, b, SIZE_MAX / 2, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "overflow");
    EXPECT(weft_allgather(a, b, SIZE_MAX / 8, WEFT_INT64, w), WEFT_EINVAL, "overflow");
    EXPECT(weft_allreduce(a, b, 1, (weft_dtype_t)42, WEFT_SUM, w), WEFT_EINVAL, "datatype");
    EXPECT(weft_allreduce(a, b, 1, WEFT_INT32, 777, w), WEFT_EINVAL, "unknown op");
    EXPECT(weft_allreduce(a, b, 1, WEFT_FLOAT32, WEFT_BXOR, w), WEFT_EINVAL, "integer types");
    EXPECT(weft_reduce(a, b, 1, WEFT_INT32, WEFT_SUM, P, w), WEFT_EINVAL, "root");
    EXPECT(weft_bcast(a, 1, WEFT_INT32, -1, w), WEFT_EINVAL, "root");
    EXPECT(weft_scatter(a, b, 1, WEFT_INT32, P + 5, w), WEFT_EINVAL, "root");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "fastest", NULL), WEFT_EINVAL, "ring");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "binomial", "chunks=0"), WEFT_EINVAL, "chunks");
    EXPECT(weft_set_algorithm(w, (weft_coll_t)99, "ring", NULL), WEFT_EINVAL, "collective");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "twotree_s", "sync=colouring"), WEFT_OK, NULL);
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "twotree_s", "sync=sometimes"), WEFT_EINVAL, "sync");
    weft_op_t op;
    weft_op_create(noncomm, NULL, 0, 0, &op);
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "ring", NULL), WEFT_OK, NULL);
    EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, op, w), WEFT_EINVAL, "commutative");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL), WEFT_OK, NULL);
    EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, op, w), WEFT_OK, NULL); /* AUTO serves it */
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "butterfly", NULL), WEFT_OK, NULL);
    EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "idempotent");
    EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, WEFT_MAX, w), WEFT_OK, NULL);
    if (P == 3) { /* 3 is not a power of 2 or 3 = (2+1)^1: fanout 1 refuses a sum */
        EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "dissem", "fanout=1"), WEFT_OK, NULL);
        EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "dissem_adapted");
        EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "dissem", "fanout=2"), WEFT_OK, NULL);
        EXPECT(weft_allreduce(a, b, 8, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    }
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL), WEFT_OK, NULL);
    weft_op_free(&op);
    if (P > 1 && me != 0)
        EXPECT(weft_reduce(WEFT_IN_PLACE, b, 1, WEFT_INT32, WEFT_SUM, 0, w), WEFT_EINVAL, "root only");
    EXPECT(weft_comm_free(&w), WEFT_EINVAL, "world");
    EXPECT(weft_comm_split(w, -7, 0, &(weft_comm_t){0}), WEFT_EINVAL, "color");
    EXPECT(weft_test(NULL, &(int){0}), WEFT_EINVAL, NULL);
    EXPECT(weft_wait(NULL), WEFT_EINVAL, NULL);
    EXPECT(weft_iallreduce(a, b, 1, WEFT_INT32, WEFT_SUM, w, NULL), WEFT_EINVAL, "req");
    /* count 0 with NULL buffers is fine */
    EXPECT(weft_allreduce(NULL, NULL, 0, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    EXPECT(weft_barrier(w), WEFT_OK, NULL);
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_errors P=%d: %d checks, %d failures on all ranks\n", P, checks, total);
    weft_finalize();
    return total ? 1 : 0;
}
