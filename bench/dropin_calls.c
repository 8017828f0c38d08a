/* dropin_calls.c — the drop-in's newer paths timed as an MPI program calls
 * them, for bench/dropin_calls.sh to run with the MPI library alone and
 * under libweft-mpi.so: MPI_Bcast of two ints through MPI_INT, a contiguous
 * type, a struct in order and a vector (the derived-type shape cache), and
 * MPI_Allgather, MPI_Allgatherv and MPI_Reduce_scatter of float32 blocks of
 * one size at 8 B, 64 KiB and 1 MiB a rank (or the sizes in argv[2], then
 * without the bcasts), each call's last result checked.  Each figure: per call, a
 * barrier, then the call timed; the median over the calls of each rank,
 * then the maximum over ranks (weft bench's convention), and for the bcasts
 * the root's median too (its own time, which an eager root shows). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, nranks;

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median of this rank's n times, and its maximum over ranks */
static void report(const char *what, long bytes, double *t, int n, int root_too)
{
    qsort(t, (size_t)n, sizeof *t, by_value);
    double mine = t[n / 2], slowest, root = mine;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && root_too)
        printf("%-22s %8ld B  max over ranks %9.3f us  root %8.3f us\n", what, bytes,
               slowest * 1e6, root * 1e6);
    else if (rank == 0)
        printf("%-22s %8ld B  max over ranks %9.3f us\n", what, bytes, slowest * 1e6);
}

static void bcasts(double *t, int iters)
{
    MPI_Datatype contiguous, strct, vector;
    MPI_Type_contiguous(2, MPI_INT, &contiguous);
    int lengths[2] = {1, 1};
    MPI_Aint at[2] = {0, sizeof(int)};
    MPI_Datatype parts[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, lengths, at, parts, &strct);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vector);
    MPI_Datatype types[4] = {MPI_INT, contiguous, strct, vector};
    const char *names[4] = {"bcast MPI_INT x2", "bcast contiguous(2)", "bcast struct in order",
                            "bcast vector stride 2"};
    int buf[4] = {0};
    for (int k = 0; k < 4; k++) {
        if (k)
            MPI_Type_commit(&types[k]);
        for (int i = 0; i < iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Bcast(buf, k ? 1 : 2, types[k], 0, MPI_COMM_WORLD);
            t[i] = MPI_Wtime() - t0;
        }
        report(names[k], 8, t, iters, 1);
        if (k)
            MPI_Type_free(&types[k]);
    }
}

static void vector_calls(double *t, int iters, const long *bytes, int nsizes)
{
    int *counts = malloc(sizeof(int) * (size_t)nranks), *displs = malloc(sizeof(int) * (size_t)nranks);
    for (int k = 0; k < nsizes; k++) {
        int n = (int)((bytes[k] + 3) / 4), it = n > 100000 ? iters / 4 : iters;
        float *in = malloc(sizeof(float) * (size_t)n * (size_t)nranks + 1);
        float *out = malloc(sizeof(float) * (size_t)n * (size_t)nranks + 1);
        for (long i = 0; i < (long)n * nranks; i++)
            in[i] = 1.0f;
        for (int r = 0; r < nranks; r++)
            counts[r] = n, displs[r] = r * n;
        for (int call = 0; call < 3; call++) {
            long wrong = 0;
            for (int i = 0; i < it; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (call == 0)
                    MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
                else if (call == 1)
                    MPI_Allgatherv(in, n, MPI_FLOAT, out, counts, displs, MPI_FLOAT,
                                   MPI_COMM_WORLD);
                else
                    MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                t[i] = MPI_Wtime() - t0;
            }
            /* the last call's result: every element 1 (gathers) or P */
            for (long i = 0; i < (call == 2 ? n : (long)n * nranks); i++)
                wrong += out[i] != (call == 2 ? (float)nranks : 1.0f);
            if (wrong) {
                fprintf(stderr, "rank %d: %ld wrong elements\n", rank, wrong);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            const char *names[3] = {"allgather", "allgatherv", "reduce_scatter"};
            report(names[call], 4L * n, t, it, 0);
        }
        free(in), free(out);
    }
    free(counts), free(displs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int iters = argc > 1 ? atoi(argv[1]) : 400;
    if (iters < 4)
        iters = 4;
    /* argv[2]: the vector calls' bytes a rank, comma-separated; no bcasts */
    long bytes[32] = {8, 65536, 1048576};
    int nsizes = 3;
    if (argc > 2) {
        nsizes = 0;
        for (char *p = argv[2], *e; *p && nsizes < 32; p = *e ? e + 1 : e) {
            bytes[nsizes] = strtol(p, &e, 10);
            if (e == p || bytes[nsizes] < 1 || bytes[nsizes] > (1L << 28) || (*e && *e != ',')) {
                if (rank == 0)
                    fprintf(stderr, "dropin_calls: sizes '%s': want bytes a rank, 1..2^28, "
                            "comma-separated\n", argv[2]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            nsizes++;
        }
    }
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (argc <= 2)
        bcasts(t, iters);
    vector_calls(t, iters, bytes, nsizes);
    free(t);
    MPI_Finalize();
    return 0;
}
