/* test_stage.c — the bcast root's stage in the shared arena (linear_arena,
 * api.c stage_root): a root copies a large buffer into its arena once and
 * every peer copies it from there.
 *
 *   test_stage          the stage is taken: a root that overwrites its
 *                       buffer right after starting an ibcast (white-box:
 *                       erroneous for a user) still sends what it held at
 *                       the call; then calls whose bytes change from call to
 *                       call, sizes that grow and shrink (the stage grows),
 *                       odd sizes at odd addresses (the streamed copy's
 *                       head and tail), two ibcasts in flight from one root
 *                       (the second needs a stage of its own), a root buffer
 *                       from weft_alloc (not staged), every root.
 *                       Then the same for the allreduce and reduce
 *                       linear_arena, whose every rank stages its input and
 *                       scratch (ALGO_STAGED_INPUT, api.c stage_input): the
 *                       input taken at the call, sizes around the
 *                       threshold, in place, every root, an input from
 *                       weft_alloc (only the scratch staged), an allreduce
 *                       and a reduce in flight at once.  Both again with the
 *                       stage made as the schedule sends (the bcast's in
 *                       pieces, segment=256K; the allreduce's and reduce's
 *                       block by block, stage=sent), but for the white-box
 *                       overwrite: such a stage is not taken at the call.
 *   test_stage small    the same calls in an arena of 1 MiB
 *                       (WEFT_ARENA_MAX, set by CMakeLists.txt), too small
 *                       for the larger calls' stage: those go from the
 *                       user's buffer, still right, and the message of the
 *                       last failed call stays what it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int me, P;
#define CHECK_WHO() fprintf(stderr, "rank %d: ", me)
#include "testing.h"

static unsigned char byte_at(size_t i, int root, int call)
{
    return (unsigned char)(i * 131 + (size_t)root * 17 + (size_t)call * 7 + (i >> 12));
}

static void fill(unsigned char *b, size_t n, int root, int call)
{
    for (size_t i = 0; i < n; i++)
        b[i] = byte_at(i, root, call);
}

static size_t wrong(const unsigned char *b, size_t n, int root, int call)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != byte_at(i, root, call);
    return bad;
}

/* One bcast of n bytes at buf (which may be misaligned) from root. */
static void one_bcast(unsigned char *buf, size_t n, int root, int call, weft_comm_t w)
{
    if (me == root)
        fill(buf, n, root, call);
    else
        memset(buf, 0x5a, n);
    int rc = weft_bcast(buf, n, WEFT_UINT8, root, w);
    CHECK(rc == WEFT_OK, "bcast of %zu from %d: %s", n, root, weft_last_error());
    size_t bad = wrong(buf, n, root, call);
    CHECK(!bad, "bcast of %zu from %d, call %d: %zu wrong bytes", n, root, call, bad);
}

/* The root's bytes as they were at the call, whatever it does to its
 * buffer afterwards: only true of a staged call. */
static void taken_at_call(weft_comm_t w, size_t n)
{
    unsigned char *buf = malloc(n);
    int root = P - 1;
    if (me == root)
        fill(buf, n, root, 1);
    weft_request_t req;
    int rc = weft_ibcast(buf, n, WEFT_UINT8, root, w, &req);
    CHECK(rc == WEFT_OK, "ibcast: %s", weft_last_error());
    if (me == root)
        memset(buf, 0xee, n);
    rc = weft_wait(&req);
    CHECK(rc == WEFT_OK, "wait: %s", weft_last_error());
    if (me != root) {
        size_t bad = wrong(buf, n, root, 1);
        CHECK(!bad, "the root's later writes reached %zu bytes of %zu: not staged", bad, n);
    }
    free(buf);
}

/* Two ibcasts from one root in flight at once, of two sizes. */
static void two_in_flight(weft_comm_t w, size_t n1, size_t n2)
{
    unsigned char *a = malloc(n1), *b = malloc(n2);
    int root = 0;
    if (me == root)
        fill(a, n1, root, 2), fill(b, n2, root, 3);
    weft_request_t ra, rb;
    CHECK(weft_ibcast(a, n1, WEFT_UINT8, root, w, &ra) == WEFT_OK, "ibcast a: %s",
          weft_last_error());
    CHECK(weft_ibcast(b, n2, WEFT_UINT8, root, w, &rb) == WEFT_OK, "ibcast b: %s",
          weft_last_error());
    CHECK(weft_wait(&rb) == WEFT_OK, "wait b: %s", weft_last_error());
    CHECK(weft_wait(&ra) == WEFT_OK, "wait a: %s", weft_last_error());
    size_t bad = wrong(a, n1, root, 2) + wrong(b, n2, root, 3);
    CHECK(!bad, "two in flight (%zu and %zu bytes): %zu wrong bytes", n1, n2, bad);
    free(a);
    free(b);
}

/* ---- allreduce and reduce: every rank's input staged ---- */

static int32_t in_at(size_t i, int rank, int call) { return (int32_t)(i * 3 + (size_t)rank * 7 + (size_t)call); }

/* the sum over the ranks of in_at(i, r, call) */
static int32_t sum_at(size_t i, int call)
{
    return (int32_t)((size_t)P * (i * 3 + (size_t)call) + 7 * (size_t)P * (size_t)(P - 1) / 2);
}

static void fill_in(int32_t *b, size_t n, int call)
{
    for (size_t i = 0; i < n; i++)
        b[i] = in_at(i, me, call);
}

static size_t wrong_sums(const int32_t *b, size_t n, int call)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += b[i] != sum_at(i, call);
    return bad;
}

/* Starts an allreduce (root < 0) or a reduce of n int32 from in to out
 * (in NULL: in place). */
static int start_sum(const int32_t *in, int32_t *out, size_t n, int root, weft_comm_t w,
                     weft_request_t *req)
{
    const void *src = in ? (const void *)in : WEFT_IN_PLACE;
    if (root < 0)
        return weft_iallreduce(src, out, n, WEFT_INT32, WEFT_SUM, w, req);
    if (!in && me != root) /* in place is the root's alone */
        src = out;
    return weft_ireduce(src, out, n, WEFT_INT32, WEFT_SUM, root, w, req);
}

static void one_sum(int32_t *in, int32_t *out, size_t n, int root, int call, weft_comm_t w)
{
    fill_in(in ? in : out, n, call);
    if (in)
        memset(out, 0x5a, n * 4);
    weft_request_t req;
    int rc = start_sum(in, out, n, root, w, &req);
    if (!rc)
        rc = weft_wait(&req);
    CHECK(rc == WEFT_OK, "%s of %zu%s: %s", root < 0 ? "allreduce" : "reduce", n,
          in ? "" : " in place", weft_last_error());
    if (root < 0 || me == root) {
        size_t bad = wrong_sums(out, n, call);
        CHECK(!bad, "%s of %zu%s, root %d, call %d: %zu wrong", root < 0 ? "allreduce" : "reduce",
              n, in ? "" : " in place", root, call, bad);
    }
}

/* params: NULL, the whole input staged at the call; "stage=sent", each
 * block staged as it is sent (not taken at the call, then: the input must
 * stay untouched until the call completes, as weft.h says). */
static void staged_sums(weft_comm_t w, int small, const char *params)
{
    char said[512] = "";
    if (small) { /* a failed call, whose message must outlive the unstaged ones */
        CHECK(weft_allreduce(NULL, NULL, 1, (weft_dtype_t)999, WEFT_SUM, w) == WEFT_EINVAL,
              "datatype 999 accepted");
        snprintf(said, sizeof said, "%s", weft_last_error());
    }
    CHECK(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "linear_arena", params) == WEFT_OK,
          "allreduce linear_arena refused: %s", weft_last_error());
    CHECK(weft_set_algorithm(w, WEFT_COLL_REDUCE, "linear_arena", params) == WEFT_OK,
          "reduce linear_arena refused: %s", weft_last_error());
    size_t most = 1 << 20; /* elements */
    int32_t *in = malloc(most * 4 + 16), *out = malloc(most * 4 + 16);
    /* taken at the call: the input overwritten while the call runs */
    if (!small && P >= 2 && !params) {
        size_t n = most;
        for (int root = -1; root < P; root += P) {
            fill_in(in, n, 1);
            weft_request_t req;
            CHECK(start_sum(in, out, n, root, w, &req) == WEFT_OK, "start: %s", weft_last_error());
            memset(in, 0xee, n * 4);
            CHECK(weft_wait(&req) == WEFT_OK, "wait: %s", weft_last_error());
            if (root < 0 || me == root) {
                size_t bad = wrong_sums(out, n, 1);
                CHECK(!bad, "later writes to the input reached %zu of %zu sums: not staged", bad, n);
            }
        }
    }
    const size_t counts[] = {1, 1023, 1024 * (size_t)P, 262144, 1 << 20, 70001, 5};
    int call = 50;
    for (int k = 0; k < (int)(sizeof counts / sizeof *counts); k++)
        for (int rep = 0; rep < 4; rep++, call++) {
            int root = rep < 2 ? -1 : (k + rep) % P; /* allreduce twice, then reduce */
            int32_t *o = out + (counts[k] & 1);      /* odd ones misaligned */
            one_sum(rep % 2 ? NULL : in + (counts[k] & 1), o, counts[k], root, call, w);
        }
    /* an allreduce and a reduce in flight at once: a stage each */
    {
        size_t n1 = 300000, n2 = 200000;
        int32_t *o2 = malloc(n2 * 4), *in2 = malloc(n2 * 4);
        fill_in(in, n1, 60), fill_in(in2, n2, 61);
        weft_request_t ra, rb;
        CHECK(start_sum(in, out, n1, -1, w, &ra) == WEFT_OK, "iallreduce: %s", weft_last_error());
        CHECK(start_sum(in2, o2, n2, P - 1, w, &rb) == WEFT_OK, "ireduce: %s", weft_last_error());
        CHECK(weft_wait(&rb) == WEFT_OK && weft_wait(&ra) == WEFT_OK, "wait: %s",
              weft_last_error());
        size_t bad = wrong_sums(out, n1, 60) + (me == P - 1 ? wrong_sums(o2, n2, 61) : 0);
        CHECK(!bad, "allreduce and reduce in flight: %zu wrong", bad);
        free(o2), free(in2);
    }
    if (small)
        CHECK(!strcmp(weft_last_error(), said), "the last error became \"%s\", was \"%s\"",
              weft_last_error(), said);
    /* an input from the arena: read in place, only the scratch staged */
    int32_t *arena_in = NULL;
    if (weft_alloc(most * 4, (void **)&arena_in) == WEFT_OK) {
        one_sum(arena_in, out, most, -1, 70, w);
        one_sum(arena_in, out, most, 0, 71, w);
        one_sum(NULL, arena_in, most, -1, 72, w);
        weft_free(arena_in);
    } else {
        CHECK(small, "weft_alloc of 4 MiB: %s", weft_last_error());
    }
    free(in), free(out);
}

/* params: NULL, the root's whole buffer staged at the call; "segment=...",
 * staged in pieces as the schedule sends them (linear.c). */
static void staged_bcasts(weft_comm_t w, int small, const char *params)
{
    CHECK(weft_set_algorithm(w, WEFT_COLL_BCAST, "linear_arena", params) == WEFT_OK,
          "linear_arena %s refused: %s", params ? params : "", weft_last_error());
    char said[512] = "";
    if (small) { /* a failed call, whose message must outlive the unstaged ones */
        CHECK(weft_bcast(NULL, 1, WEFT_UINT8, -1, w) == WEFT_EINVAL, "root -1 accepted");
        snprintf(said, sizeof said, "%s", weft_last_error());
    }

    /* sizes around the threshold and up, shrinking again; odd ones at odd
     * addresses; the root moves */
    static const size_t sizes[] = {65535, 65536, 1 << 20, 300001, 4 << 20, 65537, (2 << 20) + 13};
    size_t most = 4 << 20;
    unsigned char *mem = malloc(most + 16);
    int call = 10;
    for (int k = 0; k < (int)(sizeof sizes / sizeof *sizes); k++)
        for (int rep = 0; rep < 2; rep++, call++)
            one_bcast(mem + (sizes[k] & 1) * 3, sizes[k], (k + rep) % P, call, w);
    free(mem);
    if (small)
        CHECK(!strcmp(weft_last_error(), said), "the last error became \"%s\", was \"%s\"",
              weft_last_error(), said);

    two_in_flight(w, 1 << 20, 3 << 20);
    two_in_flight(w, 200000, 200000);

    /* a root buffer from the arena goes in place, unstaged */
    unsigned char *arena_buf = NULL;
    if (weft_alloc(1 << 20, (void **)&arena_buf) == WEFT_OK) {
        one_bcast(arena_buf, 1 << 20, 0, 40, w);
        weft_free(arena_buf);
    } else {
        CHECK(small, "weft_alloc of 1 MiB: %s", weft_last_error());
    }
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv))
        return 1;
    weft_comm_t w = weft_comm_world();
    me = weft_comm_rank(w), P = weft_comm_size(w);
    int small = argc > 1 && !strcmp(argv[1], "small");
    CHECK(weft_set_algorithm(w, WEFT_COLL_BCAST, "linear_arena", NULL) == WEFT_OK,
          "linear_arena refused: %s", weft_last_error());
    if (!small && P >= 3)
        taken_at_call(w, 8 << 20);
    staged_bcasts(w, small, NULL);
    staged_bcasts(w, small, "segment=256K");
    staged_sums(w, small, NULL);
    staged_sums(w, small, "stage=sent");

    int local[2] = {checks, failures}, total[2];
    weft_allreduce(local, total, 2, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_stage P=%d%s: %d checks, %d failures on all ranks\n", P,
               small ? " (small arena)" : "", total[0], total[1]);
    weft_finalize();
    return total[1] ? 1 : 0;
}
