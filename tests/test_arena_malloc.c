/* test_arena_malloc.c — the drop-in's malloc family (pmpi/arena_malloc.c),
 * run with LD_PRELOAD=libweft-mpi.so.  Usage: test_arena_malloc arena|libc
 * (what WEFT_MALLOC says: large blocks must come from weft's arena, or
 * never).  A block is in the arena if /proc/self/maps puts it in the
 * memfd named weft-arena.  Checks each function's contract on both sides
 * of WEFT_MALLOC_MIN (the test sets 64 KiB): contents kept by realloc
 * across the two allocators, zeros from calloc, alignment, overflow and
 * EINVAL cases, errno kept by free, a child of fork() freeing and
 * reallocating its parent's blocks, and threads allocating at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int checks, failures, want_arena;
/* a count whose product with 4 overflows, hidden from the compiler's
 * warnings about such calls */
static volatile size_t huge = SIZE_MAX / 2, align48 = 48;

/* errno read and written through a volatile: clang takes the allocation
 * functions for ones that never write it, and would carry a value stored
 * before a call past it */
#define ERRNO (*(volatile int *)&errno)

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Whether p lies in a mapping of the weft-arena memfd. */
static int in_arena(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
            found = strstr(line, "weft-arena") != NULL;
    }
    if (f)
        fclose(f);
    return found;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 31 + seed))
            return 0;
    return 1;
}

enum { BIG = 1 << 20, SMALL = 1000 };

static void test_malloc_free(void)
{
    unsigned char *b = malloc(BIG), *s = malloc(SMALL);
    CHECK(b && s, "malloc failed");
    CHECK(in_arena(b) == want_arena, "malloc(1 MiB) %s the arena", want_arena ? "not in" : "in");
    CHECK(!in_arena(s), "malloc(1000) in the arena");
    fill(b, BIG, 1), fill(s, SMALL, 2);
    CHECK(same(b, BIG, 1) && same(s, SMALL, 2), "contents");
    CHECK(malloc_usable_size(b) >= BIG && malloc_usable_size(s) >= SMALL, "usable size");
    ERRNO = 1234;
    free(b);
    free(s);
    free(NULL);
    CHECK(ERRNO == 1234, "free changed errno to %d", ERRNO);
    unsigned char *edge = malloc(64 << 10), *below = malloc((64 << 10) - 1);
    CHECK(in_arena(edge) == want_arena && !in_arena(below), "WEFT_MALLOC_MIN's edge");
    free(edge), free(below);
}

static void test_calloc(void)
{
    /* a freed block kept resident must come back zeroed by calloc */
    unsigned char *d = malloc(BIG);
    memset(d, 0xAB, BIG);
    free(d);
    unsigned char *z = calloc(BIG / 8, 8);
    int zero = 1;
    for (size_t i = 0; z && i < BIG; i++)
        zero &= z[i] == 0;
    CHECK(z && zero, "calloc's block is not all zeros");
    CHECK(in_arena(z) == want_arena, "calloc(1 MiB)");
    free(z);
    ERRNO = 0;
    void *volatile none = calloc(huge, 4); /* kept, so that no compiler elides the call */
    CHECK(!none && ERRNO == ENOMEM, "calloc's overflow");
}

static void test_realloc(void)
{
    unsigned char *p = malloc(SMALL);
    fill(p, SMALL, 3);
    p = realloc(p, 3 * BIG); /* glibc block growing into the arena */
    CHECK(p && same(p, SMALL, 3), "realloc up kept the contents");
    CHECK(in_arena(p) == want_arena, "realloc(3 MiB)");
    fill(p, 3 * BIG, 4);
    unsigned char *q = realloc(p, 2 * BIG); /* shrinks in place or moves */
    CHECK(q && same(q, 2 * BIG, 4), "realloc down kept the contents");
    q = realloc(q, 5 * BIG);
    CHECK(q && same(q, 2 * BIG, 4), "realloc up again kept the contents");
    q = realloc(q, 100); /* back to glibc */
    CHECK(q && same(q, 100, 4) && !in_arena(q), "realloc to 100 bytes");
    CHECK(realloc(q, 0) == NULL, "realloc(p, 0) frees");
    unsigned char *r = realloc(NULL, BIG);
    CHECK(r && in_arena(r) == want_arena, "realloc(NULL, 1 MiB)");
    ERRNO = 0;
    void *volatile kept = r; /* a failed reallocarray leaves it as it was */
    void *volatile none = reallocarray(kept, huge, 4);
    CHECK(!none && ERRNO == ENOMEM, "reallocarray's overflow");
    r = reallocarray(kept, BIG / 4, 8);
    CHECK(r && in_arena(r) == want_arena, "reallocarray(2 MiB)");
    free(r);
}

static void test_aligned(void)
{
    void *p = NULL;
    CHECK(posix_memalign(&p, 4096, BIG) == 0 && p && (uintptr_t)p % 4096 == 0, "posix_memalign");
    CHECK(in_arena(p) == want_arena, "posix_memalign(4096, 1 MiB)");
    free(p);
    CHECK(posix_memalign(&p, 3, BIG) == EINVAL, "posix_memalign's odd alignment");
    p = memalign(1 << 16, BIG); /* past a page: glibc's */
    CHECK(p && (uintptr_t)p % (1 << 16) == 0 && !in_arena(p), "memalign(64 KiB, 1 MiB)");
    free(p);
    p = aligned_alloc(64, BIG);
    CHECK(p && (uintptr_t)p % 64 == 0 && in_arena(p) == want_arena, "aligned_alloc");
    free(p);
    /* an alignment of 48 is glibc's to judge: refused (2.38) or rounded up */
    void *volatile odd = aligned_alloc(align48, BIG);
    CHECK(!odd || !in_arena(odd), "aligned_alloc(48, 1 MiB) in the arena");
    free(odd);
    p = valloc(BIG);
    CHECK(p && (uintptr_t)p % 4096 == 0 && in_arena(p) == want_arena, "valloc");
    free(p);
    p = pvalloc(BIG + 1);
    CHECK(p && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= BIG + 1, "pvalloc");
    free(p);
}

/* The child frees one parent block and grows another: neither may crash,
 * and the grown copy holds the parent's bytes. */
static void test_fork(void)
{
    unsigned char *a = malloc(BIG), *b = malloc(BIG);
    fill(a, BIG, 5), fill(b, BIG, 6);
    pid_t pid = fork();
    if (pid == 0) {
        free(a);
        unsigned char *g = realloc(b, 2 * BIG);
        int ok = g && same(g, BIG, 6);
        unsigned char *own = malloc(BIG); /* the child's own arena */
        ok &= own != NULL && in_arena(own) == want_arena;
        free(own);
        free(g);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "the child of fork() (status %d)", st);
    CHECK(same(a, BIG, 5) && same(b, BIG, 6), "the parent's blocks after the child");
    free(a), free(b);
}

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg, bad = 0;
    void *keep[8] = {0};
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t n = (seed >> 8) % 3 ? 70000 + (seed >> 12) % 300000 : 10 + (seed >> 12) % 4000;
        int k = (int)((seed >> 4) % 8);
        free(keep[k]);
        keep[k] = malloc(n);
        if (!keep[k])
            bad++;
        else
            memset(keep[k], k, n < 4096 ? n : 4096);
    }
    for (int k = 0; k < 8; k++)
        free(keep[k]);
    return (void *)(uintptr_t)bad;
}

static void test_threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        CHECK(!bad, "thread %d: %lu failed allocations", i, (unsigned long)(uintptr_t)bad);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "arena") && strcmp(argv[1], "libc"))) {
        fprintf(stderr, "usage: test_arena_malloc arena|libc (under LD_PRELOAD=libweft-mpi.so)\n");
        return 2;
    }
    want_arena = !strcmp(argv[1], "arena");
    test_malloc_free();
    test_calloc();
    test_realloc();
    test_aligned();
    test_fork();
    test_threads();
    printf("test_arena_malloc %s: %d checks, %d failures\n", argv[1], checks, failures);
    return failures != 0;
}
