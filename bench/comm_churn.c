/* comm_churn.c — what a communicator costs: a loop of MPI_Comm_split (or
 * MPI_Comm_dup), one MPI_Allreduce of an int on it and MPI_Comm_free, after
 * one MPI_Allreduce on MPI_COMM_WORLD.  Plain MPI; bench/comm_churn.sh runs
 * it with and without weft's drop-in.  Prints microseconds per iteration
 * (rank 0's wall time over the loop). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p, bad = 0, v = 1, s;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    const char *how = argc > 2 ? argv[2] : "dup"; /* dup | split2 | alone */
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        MPI_Comm c;
        if (!strcmp(how, "dup"))
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        else
            MPI_Comm_split(MPI_COMM_WORLD, !strcmp(how, "alone") ? r : r / 2, -r, &c);
        int cs;
        MPI_Comm_size(c, &cs);
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
        bad += s != cs;
        MPI_Comm_free(&c);
    }
    double t = MPI_Wtime() - t0;
    if (r == 0)
        printf("%s: %d iterations, %.1f us each%s\n", how, n, t / n * 1e6, bad ? ", WRONG SUMS" : "");
    MPI_Finalize();
    return bad != 0;
}
