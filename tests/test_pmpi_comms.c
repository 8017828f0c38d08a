/* test_pmpi_comms.c — an MPI program that makes and frees communicators
 * as it goes, for the drop-in: splits (ranks reordered by key), dups and
 * a communicator of one rank, up to LIVE of them alive at once, each used
 * for a few collectives of every size path (the board, cells, single copy)
 * with every result checked.  Under the drop-in the twins after the first
 * are made on a segment the process has already while a board pair is
 * free among their members, and on one of their own once none is
 * (tests/pmpi_comms.sh checks both happen).  Plain MPI: it runs without
 * weft too. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROUNDS = 120, LIVE = 16, BIG = 70001 };

static int wrank, wsize;
#define CHECK_WHO() fprintf(stderr, "rank %d: ", wrank)
#include "testing.h"

/* The value rank r contributes at element i in round k. */
static int32_t val(int r, int k, int i) { return (int32_t)(r * 7919 + k * 31 + i % 1009); }

static void use(MPI_Comm c, int round, int32_t *in, int32_t *out)
{
    int me, n, cw[1] = {wrank};
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    int *wr = malloc(sizeof(int) * (size_t)n);
    /* the members' world ranks, to compute every reference here */
    MPI_Allgather(cw, 1, MPI_INT, wr, 1, MPI_INT, c);
    static const int counts[] = {1, 40, 3000, BIG};
    for (int ci = 0; ci < 4; ci++) {
        int cnt = counts[(ci + round) % 4];
        for (int i = 0; i < cnt; i++)
            in[i] = val(wrank, round, i);
        MPI_Allreduce(in, out, cnt, MPI_INT32_T, MPI_SUM, c);
        int bad = 0;
        for (int i = 0; i < cnt; i++) {
            int32_t want = 0;
            for (int q = 0; q < n; q++)
                want += val(wr[q], round, i);
            bad += out[i] != want;
        }
        CHECK(!bad, "round %d: allreduce of %d on %d ranks: %d wrong", round, cnt, n, bad);
        int root = (round + ci) % n;
        if (me == root)
            for (int i = 0; i < cnt; i++)
                out[i] = val(wrank, round + 1, i);
        MPI_Bcast(out, cnt, MPI_INT32_T, root, c);
        bad = 0;
        for (int i = 0; i < cnt; i++)
            bad += out[i] != val(wr[root], round + 1, i);
        CHECK(!bad, "round %d: bcast of %d from %d on %d ranks: %d wrong", round, cnt, root, n,
              bad);
        MPI_Reduce(in, out, cnt, MPI_INT32_T, MPI_MAX, root, c);
        bad = 0;
        for (int i = 0; me == root && i < cnt; i++) {
            int32_t want = val(wr[0], round, i);
            for (int q = 1; q < n; q++)
                want = val(wr[q], round, i) > want ? val(wr[q], round, i) : want;
            bad += out[i] != want;
        }
        CHECK(!bad, "round %d: reduce of %d to %d on %d ranks: %d wrong", round, cnt, root, n,
              bad);
    }
    MPI_Barrier(c);
    free(wr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int32_t *in = malloc(sizeof(int32_t) * BIG), *out = malloc(sizeof(int32_t) * BIG);
    MPI_Comm live[LIVE];
    for (int i = 0; i < LIVE; i++)
        live[i] = MPI_COMM_NULL;
    use(MPI_COMM_WORLD, 0, in, out); /* the world's twin first: the segment others share */
    for (int round = 1; round < ROUNDS; round++) {
        MPI_Comm *slot = &live[round % LIVE];
        if (*slot != MPI_COMM_NULL)
            MPI_Comm_free(slot);
        switch (round % 4) {
        case 0: MPI_Comm_dup(MPI_COMM_WORLD, slot); break;
        case 1: MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, slot); break;
        case 2: MPI_Comm_split(MPI_COMM_WORLD, wrank < 3, -wrank, slot); break;
        default: MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, slot); break; /* alone */
        }
        use(*slot, round, in, out);
        /* an older one used again, after newer ones took the pairs */
        MPI_Comm old = live[(round + LIVE / 2) % LIVE];
        if (old != MPI_COMM_NULL)
            use(old, round, in, out);
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i] != MPI_COMM_NULL)
            MPI_Comm_free(&live[i]);
    int total = failures;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("test_pmpi_comms P=%d: %d checks on rank 0, %d failures on all ranks\n", wsize,
               checks, total);
    free(in), free(out);
    MPI_Finalize();
    return total ? 1 : 0;
}
