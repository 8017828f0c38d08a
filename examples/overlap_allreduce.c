/* overlap_allreduce.c — overlap computation with a split-phase allreduce
 * (GASPI style): start weft_allreduce_timeout with WEFT_TEST, do a slice of
 * independent work, call again, until it returns WEFT_OK.  Prints how much
 * work was done while the reduction was in flight.
 * Run: weft run -n 4 ./overlap_allreduce */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft.h>

/* independent work: a slice of a long dot product */
static double work(const double *x, size_t lo, size_t hi)
{
    double s = 0;
    for (size_t i = lo; i < hi; i++)
        s += x[i] * sqrt(x[i] + 1.0);
    return s;
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv) != WEFT_OK) {
        fprintf(stderr, "weft_init: %s\n", weft_last_error());
        return 1;
    }
    weft_comm_t world = weft_comm_world();
    int rank = weft_comm_rank(world), size = weft_comm_size(world);
    size_t n = 1 << 22, m = 1 << 22, slice = 1 << 14;
    float *grad = malloc(n * sizeof *grad), *sum = malloc(n * sizeof *sum);
    double *x = malloc(m * sizeof *x);
    for (size_t i = 0; i < n; i++)
        grad[i] = (float)((i % 7) + rank);
    for (size_t i = 0; i < m; i++)
        x[i] = (double)(i % 100);
    size_t done = 0;
    double acc = 0;
    int rc, polls = 0;
    /* the reduction progresses inside each call; the work between calls
     * overlaps it */
    while ((rc = weft_allreduce_timeout(grad, sum, n, WEFT_FLOAT32, WEFT_SUM, world, WEFT_TEST)) ==
           WEFT_ETIMEDOUT) {
        if (done < m) {
            size_t hi = done + slice < m ? done + slice : m;
            acc += work(x, done, hi);
            done = hi;
        }
        polls++;
    }
    if (rc != WEFT_OK) {
        fprintf(stderr, "allreduce: %s\n", weft_last_error());
        return 1;
    }
    double overlapped = (double)done / (double)m;
    acc += work(x, done, m); /* the rest after the reduction */
    int ok = sum[5] == (float)(5 * size + size * (size - 1) / 2);
    printf("rank %d: allreduce of %zu floats done after %d polls; %.0f%% of the other work "
           "overlapped it; result %s (checksum %.3g)\n",
           rank, n, polls, 100 * overlapped, ok ? "right" : "WRONG", acc);
    free(grad), free(sum), free(x);
    weft_finalize();
    return ok ? 0 : 1;
}
