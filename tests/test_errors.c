/* test_errors.c — bad input gets a clear error code and message, never a
 * crash or a hang.  Modes: (none) argument checks, also before weft_init;
 * "mismatch": ranks pass different counts and must fail (EMISMATCH where
 * detected, EPEER on the others) instead of hanging. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void user_sum(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    for (size_t i = 0; i < n; i++)
        ((int32_t *)inout)[i] += ((const int32_t *)in)[i];
}

static void user_max(const void *in, void *inout, size_t n, weft_dtype_t dt, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        int32_t x = ((const int32_t *)in)[i], *y = (int32_t *)inout + i;
        *y = x > *y ? x : *y;
    }
}

/* A call that repeats the last one's shape reuses its resolution (comm.h,
 * call_memo_t): what changed in between must still count. */
static void repeated_calls(weft_comm_t w)
{
    int P = weft_comm_size(w);
    int32_t x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = me + 1;
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    EXPECT(weft_allreduce(NULL, y, 8, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "send buffer");
    EXPECT(weft_allreduce(x, NULL, 8, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "receive buffer");
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, WEFT_BXOR, w), WEFT_OK, NULL);
    EXPECT(weft_allreduce(x, y, 8, WEFT_FLOAT32, WEFT_BXOR, w), WEFT_EINVAL, "integer types");
    /* the algorithm chosen between two equal calls is the one that runs */
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "ring", NULL), WEFT_OK, NULL);
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    checks++;
    if (strcmp(weft_last_algorithm(w, WEFT_COLL_ALLREDUCE), "ring"))
        failures++, fprintf(stderr, "rank %d: FAIL: ring chosen, %s ran\n", me,
                            weft_last_algorithm(w, WEFT_COLL_ALLREDUCE));
    { /* a communicator made from w starts with w's choices */
        weft_comm_t d = NULL;
        EXPECT(weft_comm_dup(w, &d), WEFT_OK, NULL);
        EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, WEFT_SUM, d), WEFT_OK, NULL);
        checks++;
        const char *ran = d ? weft_last_algorithm(d, WEFT_COLL_ALLREDUCE) : NULL;
        if (!ran || strcmp(ran, "ring"))
            failures++, fprintf(stderr, "rank %d: FAIL: a dup of a ring communicator ran %s\n",
                                me, ran ? ran : "nothing");
        weft_comm_free(&d);
    }
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "butterfly", NULL), WEFT_OK, NULL);
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "idempotent");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL), WEFT_OK, NULL);
    /* a user op freed and its handle given to another function */
    weft_op_t u, v;
    EXPECT(weft_op_create(user_sum, NULL, 1, 0, &u), WEFT_OK, NULL);
    weft_op_t handle = u;
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, u, w), WEFT_OK, NULL);
    checks++;
    if (y[0] != P * (P + 1) / 2)
        failures++, fprintf(stderr, "rank %d: FAIL: user sum gave %d\n", me, (int)y[0]);
    weft_op_free(&u);
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, handle, w), WEFT_EINVAL, "op");
    EXPECT(weft_op_create(user_max, NULL, 1, 0, &v), WEFT_OK, NULL);
    EXPECT(weft_allreduce(x, y, 8, WEFT_INT32, v, w), WEFT_OK, NULL);
    checks++;
    if (y[0] != P)
        failures++, fprintf(stderr, "rank %d: FAIL: user max (handle %d, was %d) gave %d\n",
                            me, v, handle, (int)y[0]);
    weft_op_free(&v);
    /* more call shapes than the schedule cache holds, then the first again */
    for (int n = 1; n <= 40; n++)
        EXPECT(weft_allreduce(x, y, (size_t)n, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    y[0] = 0;
    EXPECT(weft_allreduce(x, y, 1, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
    checks++;
    if (y[0] != P * (P + 1) / 2)
        failures++, fprintf(stderr, "rank %d: FAIL: sum after evictions gave %d\n", me,
                            (int)y[0]);
}

/* The permissions of the mapping holding addr ("rw-s"...), and its end;
 * false if no mapping holds it. */
static bool mapping_at(uintptr_t addr, char perms[5], uintptr_t *end)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi)
            found = true, *end = hi;
    }
    if (f)
        fclose(f);
    return found;
}

/* weft_alloc / weft_free: usable before weft_init, bad input refused with
 * a message, blocks page-aligned, zeroed, reusable once freed; the arena
 * accessible only up to its last block, the rest of its span PROT_NONE
 * (arena.h: valgrind's leak check read all of it). */
static void arena_checks(void)
{
    void *p = (void *)1, *q = NULL, *r = NULL;
    EXPECT(weft_alloc(0, &p), WEFT_EINVAL, "0 bytes");
    checks++, failures += p != NULL; /* *ptr is NULL after a failure */
    EXPECT(weft_alloc(16, NULL), WEFT_EINVAL, "ptr is NULL");
    EXPECT(weft_alloc(SIZE_MAX, &p), WEFT_ENOMEM, "more than the arena");
    EXPECT(weft_alloc((size_t)1 << 50, &p), WEFT_ENOMEM, "WEFT_ARENA_MAX");
    EXPECT(weft_alloc(10000, &q), WEFT_OK, NULL);
    EXPECT(weft_alloc(1, &r), WEFT_OK, NULL);
    checks++;
    if (!q || !r || ((uintptr_t)q & 4095) || ((uintptr_t)r & 4095) ||
        (char *)r - (char *)q < 10000) {
        failures++;
        fprintf(stderr, "rank %d: FAIL weft_alloc gave %p and %p\n", me, q, r);
        return;
    }
    char perms[5] = "", after[5] = "";
    uintptr_t end = 0, end2 = 0, top = (uintptr_t)r + 4096;
    checks++;
    if (!mapping_at((uintptr_t)r, perms, &end) || strcmp(perms, "rw-s") || end != top ||
        !mapping_at(top, after, &end2) || strcmp(after, "---s")) {
        failures++;
        fprintf(stderr, "rank %d: FAIL the arena past its top (%#lx) is %s, not ---s (the "
                "block below: %s to %#lx)\n", me, (unsigned long)top, after, perms,
                (unsigned long)end);
    }
    size_t zeros = 0;
    for (size_t i = 0; i < 10000; i++)
        zeros += ((unsigned char *)q)[i] == 0;
    checks++, failures += zeros != 10000;
    memset(q, 0x5c, 10000);
    int32_t local[4];
    EXPECT(weft_free(local), WEFT_EINVAL, "not returned by weft_alloc");
    void *m = malloc(64);
    EXPECT(weft_free(m), WEFT_EINVAL, "not returned by weft_alloc");
    free(m);
    EXPECT(weft_free((char *)q + 4096), WEFT_EINVAL, "not returned by weft_alloc");
    EXPECT(weft_free(NULL), WEFT_OK, NULL);
    EXPECT(weft_free(q), WEFT_OK, NULL);
    EXPECT(weft_free(q), WEFT_EINVAL, "freed already");
    void *q2 = NULL;
    EXPECT(weft_alloc(8192, &q2), WEFT_OK, NULL); /* reuses the freed block, zeroed */
    checks++, failures += q2 != q || ((unsigned char *)q2)[100] != 0;
    EXPECT(weft_free(q2), WEFT_OK, NULL);
    EXPECT(weft_free(r), WEFT_OK, NULL);
}

/* A child of fork starts an arena of its own: its allocations do not
 * overlap the parent's blocks, and the parent's are not its to free. */
static void arena_fork_check(void)
{
    void *mine = NULL;
    EXPECT(weft_alloc(4096, &mine), WEFT_OK, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        void *other = NULL;
        int bad = weft_alloc(4096, &other) != WEFT_OK || other == mine ||
                  weft_free(mine) != WEFT_EINVAL || weft_free(other) != WEFT_OK;
        _exit(bad);
    }
    int st = 0;
    checks++;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
        failures++;
        fprintf(stderr, "FAIL: weft_alloc in a child of fork (status %d)\n", st);
    }
    EXPECT(weft_free(mine), WEFT_OK, NULL);
}

/* A child of fork that calls weft on its copy of the rank's communicators
 * is refused, and its exit leaves the job alone: the parent's next
 * collectives (run by the caller) still meet their peers. */
static void fork_child_check(weft_comm_t w)
{
    pid_t pid = fork();
    if (pid == 0) {
        int32_t x = 1, y = 0;
        weft_request_t r = NULL;
        int bad = weft_allreduce(&x, &y, 1, WEFT_INT32, WEFT_SUM, w) != WEFT_EINVAL ||
                  !strstr(weft_last_error(), "child of fork") ||
                  weft_ibcast(&x, 1, WEFT_INT32, 0, w, &r) != WEFT_EINVAL ||
                  weft_barrier(w) != WEFT_EINVAL || weft_finalize() != WEFT_EINVAL ||
                  !strstr(weft_last_error(), "weft_finalize");
        exit(bad); /* exit, not _exit: whatever runs at exit runs */
    }
    int st = 0;
    checks++;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
        failures++;
        fprintf(stderr, "FAIL: weft calls in a child of fork were not refused (status %d)\n",
                st);
    }
}

/* Run with WEFT_ARENA_MAX=4 (MiB): the arena fills and says so; freeing
 * makes room again. */
static int arena_limit_mode(void)
{
    void *a = NULL, *b = NULL;
    EXPECT(weft_alloc(3u << 20, &a), WEFT_OK, NULL);
    EXPECT(weft_alloc(2u << 20, &b), WEFT_ENOMEM, "arena is full");
    EXPECT(weft_free(a), WEFT_OK, NULL);
    EXPECT(weft_alloc(7u << 19, &b), WEFT_OK, NULL); /* 3.5 MiB: the first page is the arena's */
    EXPECT(weft_free(b), WEFT_OK, NULL);
    /* A freed block stays resident up to a quarter of this arena (1 MiB)
     * and comes back zeroed; kept blocks that leave no room for a request
     * are given back to make it. */
    void *c = NULL, *d = NULL;
    EXPECT(weft_alloc(1u << 20, &a), WEFT_OK, NULL);
    EXPECT(weft_alloc(2u << 20, &b), WEFT_OK, NULL);
    memset(a, 0x5c, 1u << 20);
    EXPECT(weft_free(a), WEFT_OK, NULL); /* kept */
    EXPECT(weft_free(b), WEFT_OK, NULL); /* past the bound: given back */
    EXPECT(weft_alloc(1u << 20, &c), WEFT_OK, NULL);
    size_t nonzero = 0;
    for (size_t i = 0; c && i < 1u << 20; i++)
        nonzero += ((unsigned char *)c)[i] != 0;
    checks++, failures += c != a || nonzero;
    if (c != a || nonzero)
        fprintf(stderr, "FAIL: the kept block came back at %p (was %p) with %zu bytes not zero\n",
                c, a, nonzero);
    EXPECT(weft_free(c), WEFT_OK, NULL); /* kept again */
    EXPECT(weft_alloc(7u << 19, &d), WEFT_OK, NULL); /* fits only without the kept block */
    checks++, failures += d != a;
    EXPECT(weft_free(d), WEFT_OK, NULL);
    printf("arena_limit: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
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
    if (argc > 1 && !strcmp(argv[1], "arena_limit"))
        return arena_limit_mode();
    if (argc > 1 && !strcmp(argv[1], "arena_badenv")) {
        /* run with WEFT_ARENA_MAX=lots: weft_alloc and weft_init refuse it */
        EXPECT(weft_alloc(64, &(void *){NULL}), WEFT_EINVAL, "WEFT_ARENA_MAX=lots");
        if (getenv("WEFT_SHM")) /* under weft run: the transport opens the arena */
            EXPECT(weft_init(&argc, &argv), WEFT_EINVAL, "WEFT_ARENA_MAX=lots");
        printf("arena_badenv: %s\n", weft_last_error());
        return failures ? 1 : 0;
    }
    arena_checks(); /* before weft_init */
    if (!getenv("WEFT_SHM")) /* alone, not a rank of weft run */
        arena_fork_check();
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
    fork_child_check(w);
    EXPECT(weft_allreduce(a, b, 1, WEFT_INT32, WEFT_SUM, NULL), WEFT_EINVAL, "NULL");
    EXPECT(weft_allreduce(NULL, b, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "send buffer");
    EXPECT(weft_allreduce(a, NULL, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "receive buffer");
    EXPECT(weft_allreduce(a, b, SIZE_MAX / 2, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "overflow");
    EXPECT(weft_allgather(a, b, SIZE_MAX / 8, WEFT_INT64, w), WEFT_EINVAL, "overflow");
    EXPECT(weft_bcast(a, (size_t)1 << 62, WEFT_INT8, 0, w), WEFT_EINVAL, "overflow"); /* 2^62 B */
    {   /* overlapping buffers: refused before any message (on every rank
         * here), unless the send buffer is where in place takes this rank's
         * input from (test_coll passes such aliased buffers) */
        int32_t *v = calloc(4 * (size_t)P + 8, sizeof *v);
        EXPECT(weft_allreduce(v, v + 1, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "overlap");
        EXPECT(weft_allreduce(v + 3, v, 4, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "overlap");
        EXPECT(weft_allgather(v, v + 1, 4, WEFT_INT32, w), WEFT_EINVAL, "overlap");
        EXPECT(weft_reduce_scatter(v, v + 1, 2, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "overlap");
        EXPECT(weft_allreduce(v, v + 4, 4, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
        free(v);
    }
    EXPECT(weft_allreduce(a, b, 1, (weft_dtype_t)42, WEFT_SUM, w), WEFT_EINVAL, "datatype");
    EXPECT(weft_allreduce(a, b, 1, WEFT_INT32, 777, w), WEFT_EINVAL, "unknown op");
    EXPECT(weft_allreduce(a, b, 1, WEFT_FLOAT32, WEFT_BXOR, w), WEFT_EINVAL, "integer types");
    EXPECT(weft_reduce(a, b, 1, WEFT_INT32, WEFT_SUM, P, w), WEFT_EINVAL, "root");
    EXPECT(weft_bcast(a, 1, WEFT_INT32, -1, w), WEFT_EINVAL, "root");
    EXPECT(weft_scatter(a, b, 1, WEFT_INT32, P + 5, w), WEFT_EINVAL, "root");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "fastest", NULL), WEFT_EINVAL, "ring");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "binomial", "chunks=0"), WEFT_EINVAL, "chunks");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "rabenseifner", "segment=0"), WEFT_EINVAL,
           "segment");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "rabenseifner", "segment=4X"), WEFT_EINVAL,
           "segment");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "rabenseifner", "segment=2048G"),
           WEFT_EINVAL, "segment");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "ring", "segment=1M"), WEFT_EINVAL,
           "no parameter");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "linear_arena", "stage=fast"), WEFT_EINVAL,
           "stream, plain or sent");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "linear_arena", "stage=sent"), WEFT_EINVAL,
           "segment=BYTES");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "linear_arena", "segment=0"), WEFT_EINVAL,
           "segment");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "linear", "stage=plain"), WEFT_EINVAL,
           "no parameter");
    {   /* more segments than a schedule may have: refused, saying how many */
        int32_t *big = calloc(5000, sizeof *big), *res = calloc(5000, sizeof *res);
        EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "rabenseifner", "segment=4"), WEFT_OK,
               NULL);
        EXPECT(weft_allreduce(big, res, 5000, WEFT_INT32, WEFT_SUM, w), WEFT_EINVAL, "at most 4096");
        EXPECT(weft_allreduce(big, res, 4096, WEFT_INT32, WEFT_SUM, w), WEFT_OK, NULL);
        EXPECT(weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL), WEFT_OK, NULL);
        free(big);
        free(res);
    }
    EXPECT(weft_set_algorithm(w, (weft_coll_t)99, "ring", NULL), WEFT_EINVAL, "collective");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "twotree_s", "sync=colouring"), WEFT_OK, NULL);
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "twotree_s", "sync=sometimes"), WEFT_EINVAL, "sync");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_REDUCE, "twotree", "pace=auto,chunks=8"), WEFT_OK, NULL);
    EXPECT(weft_set_algorithm(w, WEFT_COLL_REDUCE, "twotree", "pace=-1"), WEFT_EINVAL, "pace=-1");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_REDUCE, "twotree", "pace=often"), WEFT_EINVAL,
           "0..16384 or auto");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_BCAST, "twotree", "pace=1"), WEFT_EINVAL, "pace");
    EXPECT(weft_set_algorithm(w, WEFT_COLL_REDUCE, "auto", NULL), WEFT_OK, NULL);
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
    repeated_calls(w);
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
    arena_checks(); /* and after */
    /* communicators the program leaves are weft_finalize's to free (the
     * sanitizer jobs see no leak); freeing one afterwards is refused */
    weft_comm_t left = NULL, left2 = NULL;
    EXPECT(weft_comm_dup(w, &left), WEFT_OK, NULL);
    EXPECT(weft_comm_split(left, me % 2, 0, &left2), WEFT_OK, NULL);
    EXPECT(weft_barrier(left2), WEFT_OK, NULL);
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_errors P=%d: %d checks, %d failures on all ranks\n", P, checks, total);
    weft_finalize();
    if (weft_comm_free(&left) != WEFT_EINVAL || !strstr(weft_last_error(), "weft_finalize has run"))
        fprintf(stderr, "rank %d: FAIL weft_comm_free after weft_finalize: %s\n", me,
                weft_last_error()), total++;
    return total ? 1 : 0;
}
