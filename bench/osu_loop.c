/* osu_loop.c — a plain MPI program timing collectives the way the OSU
 * micro-benchmarks do (bench/osu_loop.sh runs it with and without the
 * drop-in): each call timed alone, MPI_Barrier after it, each rank's mean
 * over the calls averaged over ranks.  Usage: osu_loop allreduce|barrier|
 * back-to-back [calls]; allreduce at 8 B, 1 KiB and 64 KiB of float32 sum.
 * back-to-back: the allreduces with no barrier between them, timed as one
 * run (the shape of an iterative solver's dot products), at 8, 64, 256 B
 * and 1 KiB.  large: MPI_Allreduce, MPI_Bcast (root 0) and MPI_Reduce
 * (root 0) at 64 KiB-16 MiB, each timed alone as above, on buffers from
 * plain malloc (what WEFT_MALLOC=arena hands out from weft's arena under
 * the drop-in); calls is then the count at 64 KiB, fewer above. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* large: each collective's mean time a call, per size. */
static void large(int rank, int size, int calls)
{
    const char *names[3] = {"allreduce", "bcast", "reduce"};
    for (int c = 0; c < 3; c++) {
        for (size_t bytes = 64 << 10; bytes <= 16 << 20; bytes *= 4) {
            int n = (int)(bytes / 4), iters = (int)((size_t)calls * (64 << 10) / bytes);
            iters = iters < 20 ? 20 : iters;
            float *a = malloc(bytes), *b = malloc(bytes);
            for (int i = 0; i < n; i++)
                a[i] = (float)(i % 7 + rank), b[i] = 0;
            double timer = 0;
            for (int i = 0; i < iters + iters / 10 + 2; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (c == 0)
                    MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                else if (c == 1)
                    MPI_Bcast(a, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
                else
                    MPI_Reduce(a, b, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
                if (i >= iters / 10 + 2)
                    timer += MPI_Wtime() - t0;
            }
            double mine = timer * 1e6 / iters, sum = 0;
            MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf("%s %zu B: %.2f us\n", names[c], bytes, sum / size);
            free(a);
            free(b);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "allreduce";
    if (!strcmp(what, "large")) {
        large(rank, size, argc > 2 ? atoi(argv[2]) : 400);
        MPI_Finalize();
        return 0;
    }
    int barrier = !strcmp(what, "barrier"), iters = argc > 2 ? atoi(argv[2]) : 2000, skip = 200;
    int loop = !strcmp(what, "back-to-back");
    const int sizes[] = {8, 1024, 65536}, loop_sizes[] = {8, 64, 256, 1024};
    for (int si = 0; si < (barrier ? 1 : loop ? 4 : 3); si++) {
        int n = (loop ? loop_sizes[si] : sizes[si]) / 4;
        float *a = calloc((size_t)n, 4), *b = calloc((size_t)n, 4);
        double timer = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (loop) {
            for (int i = 0; i < skip; i++)
                MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++)
                MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double mine = (MPI_Wtime() - t0) * 1e6 / iters, sum = 0;
            MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf("%s %d B: %.2f us\n", what, n * 4, sum / size);
            free(a);
            free(b);
            continue;
        }
        for (int i = 0; i < iters + skip; i++) {
            double t0 = MPI_Wtime();
            if (barrier)
                MPI_Barrier(MPI_COMM_WORLD);
            else
                MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            if (i >= skip)
                timer += t1 - t0;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double mine = timer * 1e6 / iters, sum = 0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%s %d B: %.2f us\n", what, barrier ? 0 : sizes[si], sum / size);
        free(a);
        free(b);
    }
    MPI_Finalize();
    return 0;
}
