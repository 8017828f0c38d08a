/* test_board.c — the board collectives (src/shmcoll/board.c) where
 * schedules never meet them: a slot reused call after call by allreduce,
 * bcast and reduce with every root in turn (a bcast's root and a reduce's
 * non-roots leave at once and may run calls ahead), split-phase calls in
 * flight on one communicator and on several at once (they share slots),
 * sub-communicators, a non-commutative op, in place, the barrier (no rank
 * leaves before the last has entered), a peer whose posts say it has not
 * finished its earlier calls (Proven read), split-phase calls waited for
 * in different orders by different ranks, allgathers and reduce_scatters
 * between the other calls, refusals, and calls of no elements, which wait
 * for nobody.  Modes "mismatch", "roots", "reduce_roots",
 * "crossed_roots" and "allgather_counts": ranks pass different counts or
 * roots and must fail, not hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static const weft_coll_t colls[3] = {WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE};

/* What a board slot carries, in bytes and in int32: 8232 bytes in a job of
 * up to 4 ranks, 2088 in a larger one (board_payload_for, src/xport/
 * segment.h); arrays are sized for the wider. */
#define SLOT_BYTES (P <= 4 ? 8232 : 2088)
#define SLOT_INTS (SLOT_BYTES / 4)
#define SLOT_INTS_MAX (8232 / 4)

/* Whether the last error is the board's refusal of a call of coll larger
 * than a slot, naming the slot's size. */
static int says_at_most(const char *coll)
{
    char want[96];
    snprintf(want, sizeof want, "%s board carries at most %d bytes", coll, SLOT_BYTES);
    return strstr(weft_last_error(), want) != NULL;
}

static void board_on(weft_comm_t c)
{
    for (int k = 0; k < 3; k++)
        CHECK(weft_set_algorithm(c, colls[k], "board", NULL) == WEFT_OK, "set %s board: %s",
              weft_coll_name(colls[k]), weft_last_error());
}

/* Call number `call` of the mixed sequence: which collective, which root. */
static weft_coll_t coll_of(int call) { return colls[call % 3]; }
static int root_of(int call, int n) { return (call / 3) % n; }

/* Starts (req != NULL) or makes call number `call` on c, whose rank is
 * `rank` of n; its result, where this rank gets one, goes to out[0..cnt). */
static int mixed_call(weft_comm_t c, int rank, int n, int call, int cnt, int32_t *in,
                      int32_t *out, weft_request_t *req)
{
    int root = root_of(call, n);
    for (int i = 0; i < cnt; i++)
        in[i] = val(me, call, i);
    switch (coll_of(call)) {
    case WEFT_COLL_ALLREDUCE:
        return req ? weft_iallreduce(in, out, (size_t)cnt, WEFT_INT32, WEFT_SUM, c, req)
                   : weft_allreduce(in, out, (size_t)cnt, WEFT_INT32, WEFT_SUM, c);
    case WEFT_COLL_BCAST:
        for (int i = 0; i < cnt; i++)
            out[i] = rank == root ? val(me, call, i) : -1;
        return req ? weft_ibcast(out, (size_t)cnt, WEFT_INT32, root, c, req)
                   : weft_bcast(out, (size_t)cnt, WEFT_INT32, root, c);
    default:
        for (int i = 0; i < cnt; i++)
            out[i] = -1;
        return req ? weft_ireduce(in, out, (size_t)cnt, WEFT_INT32, WEFT_SUM, root, c, req)
                   : weft_reduce(in, out, (size_t)cnt, WEFT_INT32, WEFT_SUM, root, c);
    }
}

/* Checks call number `call`'s result on this rank (members: c's ranks as
 * world ranks). */
static void check_mixed(const int *members, int n, int rank, int call, int cnt,
                        const int32_t *out, const char *where)
{
    int root = root_of(call, n);
    weft_coll_t coll = coll_of(call);
    if (coll == WEFT_COLL_REDUCE && rank != root)
        return;
    for (int i = 0; i < cnt; i++) {
        int32_t w = coll == WEFT_COLL_BCAST ? val(members[root], call, i)
                                            : want(members, n, call, i);
        CHECK(out[i] == w, "%s: %s call %d root %d [%d]: %d, want %d", where,
              weft_coll_name(coll), call, root, i, out[i], w);
    }
}

static void blocking_loop(weft_comm_t w, const int *all)
{
    for (int call = 0; call < 3000; call++) {
        int32_t in[5], out[5];
        int n = call % 6; /* 0..5 elements */
        int rc = mixed_call(w, me, P, call, n, in, out, NULL);
        CHECK(rc == WEFT_OK, "call %d: %s", call, weft_last_error());
        check_mixed(all, P, me, call, n, out, "blocking");
    }
    for (int k = 0; k < 3; k++)
        CHECK(!strcmp(weft_last_algorithm(w, colls[k]), "board"), "%s served by %s",
              weft_coll_name(colls[k]), weft_last_algorithm(w, colls[k]));
}

/* Payloads over every line of a slot (SLOT_INTS int32), counts changing
 * call after call so that a slot's lines hold a longer call's leftovers. */
static void wide_payloads(weft_comm_t w, const int *all)
{
    const int counts[] = {10, 11, 26, 42, 100, 521, SLOT_INTS - 1, SLOT_INTS, 7, SLOT_INTS / 2};
    int32_t in[SLOT_INTS_MAX], out[SLOT_INTS_MAX];
    for (int call = 0; call < 300; call++) {
        int n = counts[call % 10];
        int rc = mixed_call(w, me, P, call, n, in, out, NULL);
        CHECK(rc == WEFT_OK, "wide call %d (%d elements): %s", call, n, weft_last_error());
        check_mixed(all, P, me, call, n, out, "wide");
    }
}

/* A reduce_scatter (set to the board by the caller) of up to n int32 a
 * block, as many as fit a slot with all P blocks, in place every third
 * call; buf holds (SLOT_INTS + 2) * P. */
static void reduce_scatter_on_board(weft_comm_t w, const int *all, int call, int n, int32_t *buf)
{
    int m = P * n <= SLOT_INTS ? n : SLOT_INTS / P, ip = call % 3 == 2;
    int32_t *in = buf, out[SLOT_INTS_MAX];
    for (int i = 0; i < P * m; i++)
        in[i] = val(me, call, i);
    int rc = weft_reduce_scatter(ip ? WEFT_IN_PLACE : in, ip ? in : out, (size_t)m, WEFT_INT32,
                                 WEFT_SUM, w);
    CHECK(rc == WEFT_OK, "reduce_scatter %d (%d a block): %s", call, m, weft_last_error());
    const int32_t *got = ip ? in : out;
    for (int i = 0; i < m; i++)
        CHECK(got[i] == want(all, P, call, me * m + i), "reduce_scatter %d%s [%d]: %d, want %d",
              call, ip ? " in place" : "", i, got[i], want(all, P, call, me * m + i));
    const char *used = weft_last_algorithm(w, WEFT_COLL_REDUCE_SCATTER);
    CHECK(used && !strcmp(used, "board"), "reduce_scatter served by %s", used ? used : "nothing");
}

/* Allgathers on the board between calls of the mixed sequence, which
 * share its slots: blocks over every line of a slot (SLOT_INTS int32 fill
 * it), in place every third call, and a block too large for a slot
 * refused. */
static void allgathers(weft_comm_t w, const int *all)
{
    const int counts[] = {0, 1, 5, 10, 11, 42, 300, SLOT_INTS - 1, SLOT_INTS, 7};
    int32_t in[SLOT_INTS_MAX + 1], small_in[5], small_out[5];
    int32_t *out = malloc(sizeof(int32_t) * (SLOT_INTS + 2) * (size_t)P);
    CHECK(out && weft_set_algorithm(w, WEFT_COLL_ALLGATHER, "board", NULL) == WEFT_OK &&
              weft_set_algorithm(w, WEFT_COLL_REDUCE_SCATTER, "board", NULL) == WEFT_OK,
          "set allgather and reduce_scatter board: %s", weft_last_error());
    for (int call = 0; out && call < 600; call++) {
        int n = counts[call % 10];
        int ip = call % 3 == 1;
        for (int i = 0; i < n; i++)
            in[i] = val(me, call, i);
        for (int q = 0; q < P; q++)
            for (int i = 0; i < n; i++)
                out[q * n + i] = ip && q == me ? val(me, call, i) : -1;
        int rc = weft_allgather(ip ? WEFT_IN_PLACE : in, out, (size_t)n, WEFT_INT32, w);
        CHECK(rc == WEFT_OK, "allgather %d (%d elements): %s", call, n, weft_last_error());
        for (int q = 0; q < P; q++)
            for (int i = 0; i < n; i++)
                CHECK(out[q * n + i] == val(all[q], call, i),
                      "allgather %d%s, block %d [%d]: %d, want %d", call, ip ? " in place" : "",
                      q, i, out[q * n + i], val(all[q], call, i));
        rc = mixed_call(w, me, P, call, call % 6, small_in, small_out, NULL);
        CHECK(rc == WEFT_OK, "mixed call %d: %s", call, weft_last_error());
        check_mixed(all, P, me, call, call % 6, small_out, "between allgathers");
        reduce_scatter_on_board(w, all, call, n, out);
    }
    const char *used = weft_last_algorithm(w, WEFT_COLL_ALLGATHER);
    CHECK(used && !strcmp(used, "board"), "allgather served by %s", used ? used : "nothing");
    int rc = out ? weft_allgather(in, out, SLOT_INTS + 1, WEFT_INT32, w) : WEFT_EINVAL;
    CHECK(rc == WEFT_EINVAL && says_at_most("allgather"), "allgather of a slot and 4 bytes a "
          "rank: %d %s", rc, weft_last_error());
    /* P blocks of (SLOT_INTS + 1) / P + 1 int32: more than a slot at every P */
    rc = out ? weft_reduce_scatter(out, in, (SLOT_INTS + 1) / (size_t)P + 1, WEFT_INT32,
                                   WEFT_SUM, w)
             : WEFT_EINVAL;
    CHECK(rc == WEFT_EINVAL && strstr(weft_last_error(), "reduce_scatter board carries at most"),
          "reduce_scatter of more than a slot: %d %s", rc, weft_last_error());
    weft_set_algorithm(w, WEFT_COLL_ALLGATHER, "auto", NULL);
    weft_set_algorithm(w, WEFT_COLL_REDUCE_SCATTER, "auto", NULL);
    free(out);
}

/* A bcast's root leaves as soon as it wrote its slot: the same root many
 * times in a row runs ahead of the readers and must wait for its slot,
 * not overwrite it. */
static void root_runs_ahead(weft_comm_t w)
{
    for (int call = 0; call < 1000; call++) {
        int32_t v[3];
        for (int i = 0; i < 3; i++)
            v[i] = me == 0 ? val(0, call, i) : -1;
        if (me == 1 && call % 100 == 0)
            usleep(2000); /* a slow reader */
        CHECK(weft_bcast(v, 3, WEFT_INT32, 0, w) == WEFT_OK, "bcast %d: %s", call,
              weft_last_error());
        for (int i = 0; i < 3; i++)
            CHECK(v[i] == val(0, call, i), "run-ahead bcast %d [%d]: %d", call, i, v[i]);
        int32_t in = val(me, call, 0), out = -1;
        CHECK(weft_reduce(&in, &out, 1, WEFT_INT32, WEFT_SUM, P - 1, w) == WEFT_OK,
              "reduce %d: %s", call, weft_last_error());
        if (me == P - 1) {
            int all[256];
            for (int r = 0; r < P && r < 256; r++)
                all[r] = r;
            CHECK(out == want(all, P, call, 0), "run-ahead reduce %d: %d", call, out);
        }
    }
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
            /* calls on a are numbered k = 1, 2, 4, 5, 7, 8 and on b 0, 3, 6:
             * the mixed sequence's collective and root follow k + round */
            int rc = mixed_call(k % 3 ? a : b, me, P, round * K + k, 4, in[k], out[k], &req[k]);
            CHECK(rc == WEFT_OK, "split-phase call %d: %s", k, weft_last_error());
        }
        for (int k = K - 1; k >= 0; k--) {
            CHECK(weft_wait(&req[k]) == WEFT_OK, "wait %d: %s", k, weft_last_error());
            check_mixed(all, P, me, round * K + k, 4, out[k], "in flight");
        }
    }
}

/* Proven read (board.c): a rank that posts without reading the counter
 * relies on its peers' posts of the call before saying they had finished
 * every earlier call.  Here rank 1 starts two allreduces before it reads
 * anything (its second post is not ordered) and sleeps without progress,
 * while the others make the same calls blocking and go on to a third in
 * the slot of the first: they must wait until rank 1 has read their
 * first post, then every result must hold.  A rule that trusted any post
 * of the call before would overwrite it unread. */
static void unordered_peer(weft_comm_t w, const int *all)
{
    if (P < 2)
        return;
    for (int round = 0; round < 60; round++) {
        int base = round * 3, n = 1 + round % 5;
        int32_t in[3][5], out[3][5];
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < n; i++)
                in[k][i] = val(me, base + k, i), out[k][i] = -1;
        if (me == 1) {
            weft_request_t a, b;
            CHECK(weft_iallreduce(in[0], out[0], (size_t)n, WEFT_INT32, WEFT_SUM, w, &a) ==
                      WEFT_OK, "start %d: %s", base, weft_last_error());
            CHECK(weft_iallreduce(in[1], out[1], (size_t)n, WEFT_INT32, WEFT_SUM, w, &b) ==
                      WEFT_OK, "start %d: %s", base + 1, weft_last_error());
            usleep(round % 2 ? 3000 : 300);
            CHECK(weft_wait(&b) == WEFT_OK, "wait %d: %s", base + 1, weft_last_error());
            CHECK(weft_wait(&a) == WEFT_OK, "wait %d: %s", base, weft_last_error());
        } else {
            if (round % 3 == 0)
                usleep(200); /* rank 1 starts both before this rank posts */
            for (int k = 0; k < 2; k++)
                CHECK(weft_allreduce(in[k], out[k], (size_t)n, WEFT_INT32, WEFT_SUM, w) ==
                          WEFT_OK, "allreduce %d: %s", base + k, weft_last_error());
        }
        CHECK(weft_allreduce(in[2], out[2], (size_t)n, WEFT_INT32, WEFT_SUM, w) == WEFT_OK,
              "allreduce %d: %s", base + 2, weft_last_error());
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < n; i++)
                CHECK(out[k][i] == want(all, P, base + k, i), "unordered peer, call %d [%d]: %d, "
                      "want %d", base + k, i, out[k][i], want(all, P, base + k, i));
    }
}

/* Split-phase calls waited for in different orders by different ranks
 * (even ranks first to last, odd ranks last to first, a rank of three
 * making them blocking): a wait must move the calls it does not wait
 * for, whose posts peers wait for, and posts into a slot must keep call
 * order, or two ranks each wait for the other to read. */
static void wait_orders(weft_comm_t w, const int *all)
{
    enum { K = 6 };
    for (int round = 0; round < 150; round++) {
        int32_t in[K][4], out[K][4];
        weft_request_t req[K];
        int blocking = me % 3 == 2;
        for (int k = 0; k < K; k++) {
            int call = 100000 + round * K + k;
            int rc = mixed_call(w, me, P, call, 4, in[k], out[k], blocking ? NULL : &req[k]);
            CHECK(rc == WEFT_OK, "wait orders: call %d: %s", call, weft_last_error());
        }
        for (int j = 0; j < K && !blocking; j++) {
            int k = me % 2 ? K - 1 - j : j;
            CHECK(weft_wait(&req[k]) == WEFT_OK, "wait orders: wait %d: %s", k, weft_last_error());
        }
        for (int k = 0; k < K; k++)
            check_mixed(all, P, me, 100000 + round * K + k, 4, out[k], "wait orders");
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
        CHECK(mixed_call(half, me / 2, n, call, 1, &in, &out, NULL) == WEFT_OK, "half: %s",
              weft_last_error());
        check_mixed(members, n, me / 2, call, 1, &out, "half");
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
    uint64_t mine[3];
    memcpy(mine, x, sizeof x);
    int rc = weft_allreduce(WEFT_IN_PLACE, x, 3, WEFT_UINT64, op, w);
    CHECK(rc == WEFT_OK, "affine: %s", weft_last_error());
    CHECK(!memcmp(x, ref, sizeof x), "affine in place: rank order not kept");
    for (int root = 0; root < P; root++) { /* reduce: in place at the root */
        uint64_t y[3];
        memcpy(y, mine, sizeof y);
        rc = weft_reduce(me == root ? WEFT_IN_PLACE : y, y, 3, WEFT_UINT64, op, root, w);
        CHECK(rc == WEFT_OK, "affine reduce: %s", weft_last_error());
        if (me == root)
            CHECK(!memcmp(y, ref, sizeof y), "affine reduce to %d in place: rank order not kept",
                  root);
    }
    weft_op_free(&op);
}

/* The board barrier: no rank leaves before every rank has entered.  Each
 * rank enters after a delay of its own (now and then a long one), notes
 * the monotonic clock, which all processes of the machine share, before and
 * after; the notes are gathered at the end.  Board allreduces between the
 * barriers, and barriers on a second communicator, share the slots. */
/* Each live communicator holds a pair of board slots of its own (the world
 * and 7 more): one made when all are held runs without the board (forcing
 * it says why; AUTO serves it), and one made after a holder is freed has
 * the board again.  d is the one live duplicate of w here. */
static void slot_pairs(weft_comm_t w)
{
    enum { MORE = 7 };
    weft_comm_t c[MORE];
    for (int i = 0; i < MORE; i++)
        CHECK(weft_comm_dup(w, &c[i]) == WEFT_OK, "dup %d: %s", i, weft_last_error());
    int32_t v = me + 1, sum = 0;
    CHECK(weft_set_algorithm(c[MORE - 1], WEFT_COLL_ALLREDUCE, "board", NULL) == WEFT_OK, "set");
    CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, c[MORE - 1]) == WEFT_EINVAL &&
              strstr(weft_last_error(), "pair of board slots"),
          "the board on a communicator without slots: %s", weft_last_error());
    /* making a communicator from it runs weft's own allreduce and
     * allgather on it: on AUTO, not on the board it cannot have (they
     * failed so before, found by weft stress --threads) */
    CHECK(weft_set_algorithm(c[MORE - 1], WEFT_COLL_ALLGATHER, "bruck", NULL) == WEFT_OK,
          "set allgather");
    weft_comm_t sub = NULL;
    CHECK(weft_comm_split(c[MORE - 1], me % 2, 0, &sub) == WEFT_OK && sub,
          "a split of a communicator whose forced algorithm cannot run: %s", weft_last_error());
    weft_comm_free(&sub);
    CHECK(weft_comm_dup(c[MORE - 1], &sub) == WEFT_OK && sub,
          "a dup of a communicator whose forced algorithm cannot run: %s", weft_last_error());
    weft_comm_free(&sub);
    CHECK(weft_last_algorithm(c[MORE - 1], WEFT_COLL_ALLGATHER) == NULL,
          "weft's own calls left the program's last algorithm alone: %s",
          weft_last_algorithm(c[MORE - 1], WEFT_COLL_ALLGATHER));
    CHECK(weft_set_algorithm(c[MORE - 1], WEFT_COLL_ALLREDUCE, "auto", NULL) == WEFT_OK, "auto");
    CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, c[MORE - 1]) == WEFT_OK &&
              sum == P * (P + 1) / 2,
          "AUTO without the board: %d (%s)", sum, weft_last_error());
    weft_comm_free(&c[0]);
    weft_comm_t again;
    CHECK(weft_comm_dup(w, &again) == WEFT_OK, "dup after a free");
    board_on(again);
    sum = 0;
    CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, again) == WEFT_OK &&
              sum == P * (P + 1) / 2,
          "the board on a freed communicator's pair: %d (%s)", sum, weft_last_error());
    weft_comm_free(&again);
    for (int i = 1; i < MORE; i++)
        weft_comm_free(&c[i]);
}

static void barrier_holds(weft_comm_t w, weft_comm_t d)
{
    enum { ITERS = 200 };
    double in[ITERS], out[ITERS];
    CHECK(weft_set_algorithm(w, WEFT_COLL_BARRIER, "board", NULL) == WEFT_OK &&
              weft_set_algorithm(d, WEFT_COLL_BARRIER, "board", NULL) == WEFT_OK,
          "set barrier board: %s", weft_last_error());
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(me + 1);
    for (int it = 0; it < ITERS; it++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        usleep((unsigned)(x % 97 == 0 ? 3000 : x % 200));
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        in[it] = (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
        int rc = weft_barrier(it % 3 == 2 ? d : w);
        clock_gettime(CLOCK_MONOTONIC, &t);
        out[it] = (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
        CHECK(rc == WEFT_OK, "barrier %d: %s", it, weft_last_error());
        if (it % 4 == 1) {
            int32_t v = me, sum = 0;
            CHECK(weft_allreduce(&v, &sum, 1, WEFT_INT32, WEFT_SUM, w) == WEFT_OK &&
                      sum == P * (P - 1) / 2,
                  "allreduce between barriers: %d", (int)sum);
        }
    }
    CHECK(!strcmp(weft_last_algorithm(w, WEFT_COLL_BARRIER), "board"), "barrier served by %s",
          weft_last_algorithm(w, WEFT_COLL_BARRIER));
    double *all_in = malloc(sizeof in * (size_t)P), *all_out = malloc(sizeof out * (size_t)P);
    CHECK(all_in && all_out &&
              weft_allgather(in, all_in, ITERS, WEFT_FLOAT64, w) == WEFT_OK &&
              weft_allgather(out, all_out, ITERS, WEFT_FLOAT64, w) == WEFT_OK,
          "gather the clocks: %s", weft_last_error());
    int early = 0;
    for (int it = 0; all_in && all_out && it < ITERS; it++) {
        double last_in = 0, first_out = 1e300;
        for (int r = 0; r < P; r++) {
            if (all_in[r * ITERS + it] > last_in)
                last_in = all_in[r * ITERS + it];
            if (all_out[r * ITERS + it] < first_out)
                first_out = all_out[r * ITERS + it];
        }
        early += first_out < last_in;
    }
    CHECK(early == 0, "%d of %d barriers let a rank leave before the last one entered", early,
          ITERS);
    free(all_in), free(all_out);
    weft_set_algorithm(w, WEFT_COLL_BARRIER, "auto", NULL);
    weft_set_algorithm(d, WEFT_COLL_BARRIER, "auto", NULL);
}

/* A call of no elements waits for nobody (empty_call in board.c), though
 * a rank runs at most one such call ahead of a neighbour that has not made
 * it (empty_progress): in each round every rank but the last makes one, of
 * each collective in turn, and says so in a file, and the last makes its
 * own only once all have, so a board that still waited would hang here
 * (until the CHECK's 60 s).  Then calls that move data reuse the slots the
 * empty ones did not post in. */
static void empty_unsynced(weft_comm_t w, const int *all)
{
    const char *job = getenv("WEFT_SHM");
    char path[256];
    weft_set_algorithm(w, WEFT_COLL_ALLGATHER, "board", NULL);
    weft_set_algorithm(w, WEFT_COLL_REDUCE_SCATTER, "board", NULL);
    for (int round = 0; round < 10 && job && P > 1; round++) {
        if (me == P - 1) {
            int seen = 0;
            for (int ms = 0; ms < 60000 && seen < P - 1; ms++) {
                seen = 0;
                for (int r = 0; r < P - 1; r++) {
                    snprintf(path, sizeof path, "/tmp/%s-empty-%d-%d", job, round, r);
                    seen += access(path, F_OK) == 0;
                }
                if (seen < P - 1)
                    usleep(1000);
            }
            CHECK(seen == P - 1, "round %d: %d of %d ranks finished their empty call while "
                  "rank %d had not made it", round, seen, P - 1, me);
        }
        int32_t x = 5, y = 7;
        int rc;
        switch (round % 5) {
        case 0: rc = weft_allreduce(&x, &y, 0, WEFT_INT32, WEFT_SUM, w); break;
        case 1: rc = weft_bcast(&x, 0, WEFT_INT32, round % P, w); break;
        case 2: rc = weft_reduce(&x, &y, 0, WEFT_INT32, WEFT_MAX, round % P, w); break;
        case 3: rc = weft_allgather(&x, &y, 0, WEFT_INT32, w); break;
        default: rc = weft_reduce_scatter(&x, &y, 0, WEFT_INT32, WEFT_SUM, w); break;
        }
        CHECK(rc == WEFT_OK, "round %d: empty call: %s", round, weft_last_error());
        CHECK(x == 5 && y == 7, "round %d: an empty call wrote its buffers: %d %d", round, x, y);
        if (me < P - 1) {
            snprintf(path, sizeof path, "/tmp/%s-empty-%d-%d", job, round, me);
            FILE *f = fopen(path, "w");
            CHECK(f != NULL, "create %s", path);
            if (f)
                fclose(f);
        }
        for (int call = 0; call < 12; call++) {
            int32_t in[3], out[3];
            for (int i = 0; i < 3; i++)
                in[i] = val(me, call, i), out[i] = -1;
            CHECK(weft_allreduce(in, out, 3, WEFT_INT32, WEFT_SUM, w) == WEFT_OK,
                  "allreduce after empty calls: %s", weft_last_error());
            for (int i = 0; i < 3; i++)
                CHECK(out[i] == want(all, P, call, i), "round %d call %d [%d]: %d", round, call,
                      i, out[i]);
        }
        weft_barrier(w);
        if (me < P - 1)
            unlink(path);
    }
    weft_set_algorithm(w, WEFT_COLL_ALLGATHER, "auto", NULL);
    weft_set_algorithm(w, WEFT_COLL_REDUCE_SCATTER, "auto", NULL);
}

/* A slot's payload, in float64: a whole slot, and one element past it. */
#define SLOT_DOUBLES (SLOT_BYTES / 8)
static void refusals(weft_comm_t w)
{
    static double big[8232 / 8 + 1];
    int rc = weft_allreduce(big, big, SLOT_DOUBLES + 1, WEFT_FLOAT64, WEFT_SUM, w);
    CHECK(rc == WEFT_EINVAL && says_at_most("allreduce"), "a slot and 8 bytes: %d %s", rc,
          weft_last_error());
    rc = weft_allreduce(big, big, SLOT_DOUBLES, WEFT_FLOAT64, WEFT_SUM, w); /* a slot: served */
    CHECK(rc == WEFT_OK, "%d bytes: %s", SLOT_BYTES, weft_last_error());
    rc = weft_bcast(big, SLOT_DOUBLES + 1, WEFT_FLOAT64, 0, w);
    CHECK(rc == WEFT_EINVAL && says_at_most("bcast"), "bcast of a slot and 8 bytes: %d %s", rc,
          weft_last_error());
    rc = weft_reduce(big, me ? NULL : big, SLOT_DOUBLES + 1, WEFT_FLOAT64, WEFT_SUM, 0, w);
    CHECK(rc == WEFT_EINVAL && says_at_most("reduce"), "reduce of a slot and 8 bytes: %d %s",
          rc, weft_last_error());
}

/* Ranks that disagree: counts of an allreduce ("mismatch"), the root of a
 * bcast ("roots": every rank but the last thinks it is the root, so that
 * most roots only post and leave) or of a reduce ("reduce_roots"; and
 * "crossed_roots", where each rank takes the next for the root, so that
 * nobody reads, and later calls push the call out of the call logs).  A rank
 * that left with OK learns of it in a later call; none may hang. */
static int mismatch_mode(weft_comm_t w, const char *mode)
{
    int32_t buf[4] = {0};
    int rc;
    if (!strcmp(mode, "roots"))
        rc = weft_bcast(buf, 4, WEFT_INT32, me == P - 1 && P > 2 ? 0 : me, w);
    else if (!strcmp(mode, "reduce_roots"))
        rc = weft_reduce(me == me % 2 ? WEFT_IN_PLACE : buf, buf, 4, WEFT_INT32, WEFT_SUM,
                         me % 2, w);
    else if (!strcmp(mode, "crossed_roots")) {
        /* each rank takes the next for the root: every rank posts and
         * leaves, nobody reads.  Rank 0 first, and calls on another
         * communicator push the call out of its call log before the
         * others make it, and out of theirs after: at 2 ranks only the
         * posts left in the slots can tell */
        weft_comm_t other;
        rc = weft_comm_dup(w, &other);
        if (rc == WEFT_OK && me == 0)
            rc = weft_reduce(buf, buf + 2, 2, WEFT_INT32, WEFT_SUM, 1 % P, w);
        for (int call = 0; rc == WEFT_OK && call < 40; call++)
            rc = weft_allreduce(WEFT_IN_PLACE, buf, 1, WEFT_INT32, WEFT_SUM, other);
        if (rc == WEFT_OK && me != 0)
            rc = weft_reduce(buf, buf + 2, 2, WEFT_INT32, WEFT_SUM, (me + 1) % P, w);
        for (int call = 0; rc == WEFT_OK && call < 40; call++) /* the others' logs too */
            rc = weft_allreduce(WEFT_IN_PLACE, buf, 1, WEFT_INT32, WEFT_SUM, other);
        weft_comm_free(&other);
    } else if (!strcmp(mode, "allgather_counts")) {
        int32_t *all = calloc((size_t)P * 3, sizeof(int32_t));
        rc = all ? weft_set_algorithm(w, WEFT_COLL_ALLGATHER, "board", NULL) : WEFT_ENOMEM;
        if (rc == WEFT_OK)
            rc = weft_allgather(buf, all, me == 0 ? 2 : 3, WEFT_INT32, w);
        free(all);
    } else
        rc = weft_allreduce(WEFT_IN_PLACE, buf, me == 0 ? 2 : 3, WEFT_INT32, WEFT_SUM, w);
    for (int call = 0; rc == WEFT_OK && call < 10; call++) /* the slots come round again */
        rc = weft_bcast(buf, 4, WEFT_INT32, 0, w);
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
    if (argc > 1)
        return mismatch_mode(w, argv[1]);
    int all[256];
    for (int r = 0; r < P && r < 256; r++)
        all[r] = r;
    blocking_loop(w, all);
    wide_payloads(w, all);
    allgathers(w, all);
    root_runs_ahead(w);
    empty_unsynced(w, all);
    CHECK(weft_comm_dup(w, &d) == WEFT_OK, "dup");
    board_on(d);
    in_flight(w, d, all);
    unordered_peer(w, all);
    wait_orders(w, all);
    barrier_holds(w, d);
    sub_comm(w);
    noncommutative_in_place(w);
    refusals(w);
    slot_pairs(w);
    weft_comm_free(&d);
    int total = failures;
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_board P=%d: %d checks on rank 0, %d failures on all ranks\n", P, checks, total);
    weft_finalize();
    return total ? 1 : 0;
}
