/* test_signals.c — collectives in a program that takes signals all the
 * time: a SIGALRM every 200 us from an interval timer, its handler
 * installed without SA_RESTART, as profilers and some runtimes do.  Every
 * system call a wait or a message makes (futex waits, sleeps, single-copy
 * reads) may then return EINTR; none may turn into a failed call, a wrong
 * result or a hang.  Allreduce, bcast from every root and the barrier, at
 * sizes that take the board, the cells and single copy, exact integer data;
 * the signals counted, so that a run that took none fails too. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "weft.h"

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

static int fail(int rank, const char *what, size_t bytes)
{
    fprintf(stderr, "rank %d: FAIL %s of %zu bytes: %s\n", rank, what, bytes, weft_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick; /* no SA_RESTART: interrupted calls return EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &every, NULL);
    if (weft_init(&argc, &argv) != WEFT_OK) {
        fprintf(stderr, "weft_init: %s\n", weft_last_error());
        return 1;
    }
    weft_comm_t w = weft_comm_world();
    int me = weft_comm_rank(w), P = weft_comm_size(w), wrong = 0, calls = 0;
    static const size_t sizes[] = {8, 4096, 64 << 10, 1 << 20, 4 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k] / sizeof(int32_t);
        int32_t *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
        if (!in || !out)
            return fail(me, "malloc", sizes[k]);
        for (int it = 0; it < 12; it++) {
            for (size_t i = 0; i < n; i++)
                in[i] = (int32_t)(me + 1 + (int)(i % 7) + it);
            if (weft_allreduce(in, out, n, WEFT_INT32, WEFT_SUM, w) != WEFT_OK)
                return fail(me, "allreduce", sizes[k]);
            for (size_t i = 0; i < n; i++)
                wrong += out[i] != (int32_t)(P * (P + 1) / 2 + P * ((int)(i % 7) + it));
            int root = it % P;
            for (size_t i = 0; i < n; i++)
                out[i] = me == root ? (int32_t)(i * 3 + (size_t)root) : -1;
            if (weft_bcast(out, n, WEFT_INT32, root, w) != WEFT_OK)
                return fail(me, "bcast", sizes[k]);
            for (size_t i = 0; i < n; i++)
                wrong += out[i] != (int32_t)(i * 3 + (size_t)root);
            if (weft_barrier(w) != WEFT_OK)
                return fail(me, "barrier", sizes[k]);
            calls += 3;
        }
        free(in);
        free(out);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("rank %d: %d calls, %d wrong elements, %ld signals taken\n", me, calls, wrong,
           (long)ticks);
    int rc = weft_finalize();
    return rc != WEFT_OK || wrong || ticks == 0;
}
