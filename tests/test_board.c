/* test_board.c — the board allreduce (src/shmcoll/board.c) where schedules
 * never meet it: a slot reused call after call, split-phase calls in
 * flight on one communicator and on several at once (they share slots),
 * sub-communicators, a non-commutative op, in place, and refusals.  Mode
 * "mismatch": ranks pass different counts and must fail, not hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int me, P;
#define CHECK_WHO() fprintf(stderr, "rank %d/%d: ", me, P)
#include "testing.h"

/* the non-commutative op (affine maps in rank order) */
#include "affine.h"

static int32_t val(int rank, int call, int i) { return rank * 1000 + call * 7 + i; }

/* sum over the ranks of c's members (given as world ranks) */
static int32_t want(const int *members, int n, int call, int i)
{
    int32_t s = 0;
    for (int k = 0; k < n; k++)
        s += val(members[k], call, i);
    return s;
}

static void board_on(weft_comm_t c)
{
    CHECK(weft_set_algorithm(c, WEFT_COLL_ALLREDUCE, "board", NULL) == WEFT_OK, "set board: %s",
          weft_last_error());
}

static void blocking_loop(weft_comm_t w, const int *all)
{
    for (int call = 0; call < 2000; call++) {
        int32_t in[5], out[5];
        int n = call % 6; /* 0..5 elements */
        for (int i = 0; i < n; i++)
            in[i] = val(me, call, i);
        int rc = weft_allreduce(in, out, (size_t)n, WEFT_INT32, WEFT_SUM, w);
        CHECK(rc == WEFT_OK, "call %d: %s", call, weft_last_error());
        for (int i = 0; i < n; i++)
            CHECK(out[i] == want(all, P, call, i), "call %d [%d]: %d", call, i, out[i]);
    }
    CHECK(!strcmp(weft_last_algorithm(w, WEFT_COLL_ALLREDUCE), "board"), "served by %s",
          weft_last_algorithm(w, WEFT_COLL_ALLREDUCE));
}

/* k split-phase calls in flight over two communicators, waited for in
 * reverse order: calls two apart on one communicator share a slot, and
 * the communicators' slots may coincide. */
static void in_flight(weft_comm_t a, weft_comm_t b, const int *all)
{
    enum { K = 9 };
    for (int round = 0; round < 200; round++) {
        int32_t in[K][4], out[K][4];
        weft_request_t req[K];
        for (int k = 0; k < K; k++) {
            for (int i = 0; i < 4; i++)
                in[k][i] = val(me, round * K + k, i);
            int rc = weft_iallreduce(in[k], out[k], 4, WEFT_INT32, WEFT_SUM, k % 3 ? a : b,
                                     &req[k]);
            CHECK(rc == WEFT_OK, "iallreduce %d: %s", k, weft_last_error());
        }
        for (int k = K - 1; k >= 0; k--) {
            CHECK(weft_wait(&req[k]) == WEFT_OK, "wait %d: %s", k, weft_last_error());
            for (int i = 0; i < 4; i++)
                CHECK(out[k][i] == want(all, P, round * K + k, i), "round %d call %d [%d]",
                      round, k, i);
        }
    }
}

static void sub_comm(weft_comm_t w)
{
    weft_comm_t half;
    CHECK(weft_comm_split(w, me % 2, me, &half) == WEFT_OK, "split");
    board_on(half);
    int members[64], n = 0;
    for (int r = me % 2; r < P && n < 64; r += 2)
        members[n++] = r;
    for (int call = 0; call < 300; call++) {
        int32_t in = val(me, call, 0), out = 0;
        CHECK(weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, half) == WEFT_OK, "half: %s",
              weft_last_error());
        CHECK(out == want(members, n, call, 0), "half call %d: %d", call, out);
        if (call % 50 == 0) { /* and the world in between */
            CHECK(weft_allreduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, w) == WEFT_OK, "world");
        }
    }
    weft_comm_free(&half);
}

static void noncommutative_in_place(weft_comm_t w)
{
    weft_op_t op;
    weft_op_create(affine_fn, NULL, 0, 0, &op);
    uint64_t x[3], ref[3];
    for (int i = 0; i < 3; i++) {
        x[i] = (uint64_t)(2 * (me + i) + 1) << 32 | (uint32_t)(me * 3 + i);
        ref[i] = 0;
        for (int r = 0; r < P; r++) {
            uint64_t v = (uint64_t)(2 * (r + i) + 1) << 32 | (uint32_t)(r * 3 + i);
            ref[i] = r ? affine_compose(ref[i], v) : v;
        }
    }
    int rc = weft_allreduce(WEFT_IN_PLACE, x, 3, WEFT_UINT64, op, w);
    CHECK(rc == WEFT_OK, "affine: %s", weft_last_error());
    CHECK(!memcmp(x, ref, sizeof x), "affine in place: rank order not kept");
    weft_op_free(&op);
}

static void refusals(weft_comm_t w)
{
    static double big[22];
    int rc = weft_allreduce(big, big, 22, WEFT_FLOAT64, WEFT_SUM, w); /* 176 bytes */
    CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(), "at most 168 bytes"), "176 bytes: %d %s",
          rc, weft_last_error());
    rc = weft_allreduce(big, big, 21, WEFT_FLOAT64, WEFT_SUM, w); /* 168: served */
    CHECK(rc == WEFT_OK, "168 bytes: %s", weft_last_error());
}

static int mismatch_mode(weft_comm_t w)
{
    int32_t buf[4] = {0};
    int rc = weft_allreduce(WEFT_IN_PLACE, buf, me == 0 ? 2 : 3, WEFT_INT32, WEFT_SUM, w);
    printf("rank %d: mismatched board call -> %s: %s\n", me, weft_strerror(rc), weft_last_error());
    weft_finalize();
    return rc == WEFT_EMISMATCH || rc == WEFT_EPEER ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv) != WEFT_OK) {
        fprintf(stderr, "weft_init: %s\n", weft_last_error());
        return 1;
    }
    weft_comm_t w = weft_comm_world(), d;
    me = weft_comm_rank(w);
    P = weft_comm_size(w);
    board_on(w);
    if (argc > 1 && !strcmp(argv[1], "mismatch"))
        return mismatch_mode(w);
    int all[256];
    for (int r = 0; r < P && r < 256; r++)
        all[r] = r;
    blocking_loop(w, all);
    CHECK(weft_comm_dup(w, &d) == WEFT_OK, "dup");
    board_on(d);
    in_flight(w, d, all);
    sub_comm(w);
    noncommutative_in_place(w);
    refusals(w);
    weft_comm_free(&d);
    int total = failures;
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_board P=%d: %d checks on rank 0, %d failures on all ranks\n", P, checks, total);
    weft_finalize();
    return total ? 1 : 0;
}
