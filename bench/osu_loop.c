/* osu_loop.c — a plain MPI program timing collectives the way the OSU
 * micro-benchmarks do (bench/osu_loop.sh runs it with and without the
 * drop-in): each call timed alone, MPI_Barrier after it, each rank's mean
 * over the calls averaged over ranks.  Usage: osu_loop allreduce|barrier|
 * back-to-back [calls]; allreduce at 8 B, 1 KiB and 64 KiB of float32 sum.
 * back-to-back: the allreduces with no barrier between them, timed as one
 * run (the shape of an iterative solver's dot products), at 8, 64, 256 B
 * and 1 KiB. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "allreduce";
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
