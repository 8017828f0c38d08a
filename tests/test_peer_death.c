/* test_peer_death.c — the last rank kills itself in the middle of a
 * split-phase allreduce; every other rank must see WEFT_EPEER (naming the
 * dead rank) within a second instead of hanging.  Driven by
 * peer_death.sh, which also checks `weft run`'s exit status and that the
 * job left nothing in /dev/shm. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv))
        return 1;
    weft_comm_t w = weft_comm_world();
    int me = weft_comm_rank(w), P = weft_comm_size(w);
    if (me == 0)
        printf("segment %s\n", getenv("WEFT_SHM"));
    fflush(stdout);
    size_t n = 1 << 20;
    float *buf = calloc(n, sizeof *buf);
    for (int it = 0; it < 100000; it++) {
        weft_request_t req;
        double t0 = now();
        /* the failure may show when a call starts or while it waits */
        int rc = weft_iallreduce(WEFT_IN_PLACE, buf, n, WEFT_FLOAT32, WEFT_SUM, w, &req);
        if (rc == WEFT_OK) {
            int done = 0;
            if (me == P - 1 && it == 3) {
                weft_test(&req, &done); /* messages are in flight now */
                raise(SIGKILL);
            }
            rc = weft_wait(&req);
        }
        if (rc != WEFT_OK) {
            double dt = now() - t0;
            int ok = rc == WEFT_EPEER && strstr(weft_last_error(), "rank") && dt < 5.0;
            printf("rank %d: %s after %.3f s: %s\n", me, ok ? "EPEER" : "WRONG", dt,
                   weft_last_error());
            fflush(stdout);
            weft_finalize(); /* must return too */
            free(buf);
            return ok ? 0 : 1;
        }
    }
    free(buf);
    return 2; /* the dead rank was never noticed */
}
