/* test_pmpi_random.c — random collective calls of an ordinary MPI program,
 * for pmpi_random.sh to run with and without the drop-in and compare.
 *
 * From a seed, N calls drawn at random: MPI_Allreduce, MPI_Reduce,
 * MPI_Bcast, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Barrier and an
 * allreduce with a non-commutative user op (affine maps composed in rank
 * order), on four communicators (the world, a dup, two splits, one of them
 * reordered), with random datatypes, ops, roots, counts (0 to 700, and one
 * call in five up to 300,000), and MPI_IN_PLACE one time in three.  A
 * third of the buffers, by rank, come from MPI_Alloc_mem (the drop-in's
 * arena, read in place by peers), and every call's input is overwritten as
 * soon as it returns, so a peer still reading it would differ.  Rank 0
 * prints one hash per rank of everything each rank received; with
 * PMPI_RANDOM_TRACE=R, rank R prints each call and its hash to stderr, to
 * find the first call that differs.  One call in eight has a message of up
 * to 1 MiB between paired ranks in flight around it (MPI's progress rule).
 *
 * The data keep sums and products exact and in range: float sums of small
 * integers, no float products, no narrow integer products, and values
 * small enough that no sum of 8 ranks overflows a signed char.  (Open MPI
 * 4.1 saturates MPI_SHORT and MPI_SIGNED_CHAR sums that overflow, where
 * weft wraps as C's unsigned arithmetic does; MPI leaves overflow
 * undefined.) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs;

static uint64_t draw(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* pairs (m, c), the map x -> m x + c; in then inout, composed: associative
 * and not commutative */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *a = in, *b = inout;
    for (int i = 0; i + 1 < *len; i += 2) {
        unsigned m = a[i] * b[i], c = b[i] * a[i + 1] + b[i + 1];
        b[i] = m, b[i + 1] = c;
    }
}

enum { K_ALLREDUCE, K_REDUCE, K_BCAST, K_RSB, K_ALLGATHER, K_BARRIER, K_USER, K_N };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ncalls = argc > 1 ? atoi(argv[1]) : 300;
    rs = argc > 2 ? strtoull(argv[2], NULL, 10) | 1 : 12345;
    const char *tr = getenv("PMPI_RANDOM_TRACE");
    int trace = tr && *tr ? atoi(tr) : -1;
    MPI_Op user;
    MPI_Op_create(compose, 0, &user);
    MPI_Comm comms[4] = {MPI_COMM_WORLD};
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[1]); /* reordered */
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &comms[3]);
    const MPI_Datatype dts[] = {MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_SIGNED_CHAR, MPI_UINT64_T,
                                MPI_SHORT};
    const int dsz[] = {4, 8, 4, 1, 8, 2};
    const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_BOR, MPI_PROD};
    uint64_t sum = 0;
    for (int c = 0; c < ncalls; c++) {
        MPI_Comm comm = comms[draw() % 4];
        int cs, cr;
        MPI_Comm_size(comm, &cs);
        MPI_Comm_rank(comm, &cr);
        int kind = (int)(draw() % K_N), d = (int)(draw() % 6);
        int cnt = (int)(draw() % 5 == 0 ? draw() % 300000 : draw() % 700);
        int root = (int)(draw() % (uint64_t)cs), opi = (int)(draw() % 5);
        int inplace = draw() % 3 == 0;
        if (opi == 4 && d != 0 && d != 4)
            opi = 0; /* products of floats and narrow integers: see above */
        if (opi == 3 && (d == 1 || d == 2))
            opi = 0; /* no bitwise or on floats */
        size_t bytes = (size_t)cnt * 8 * (size_t)cs + 20064, outb = (size_t)cnt * dsz[d];
        /* a third of the calls, by rank, from MPI_Alloc_mem: under the
         * drop-in, weft's arena, which peers read in place */
        int mem = (c + rank) % 3 == 0;
        char *a = NULL, *b = NULL;
        if (mem) {
            MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &a);
            MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &b);
        } else {
            a = malloc(bytes), b = malloc(bytes);
        }
        if (!a || !b) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < bytes; i++) {
            a[i] = (char)((i * 7 + (size_t)rank * 13 + (size_t)c) & 0x07);
            b[i] = 0x11;
        }
        if (d == 1)
            for (size_t i = 0; i < bytes / 8; i++)
                ((double *)a)[i] = (double)((i + (size_t)rank + (size_t)c) % 17);
        if (d == 2)
            for (size_t i = 0; i < bytes / 4; i++)
                ((float *)a)[i] = (float)((i + (size_t)rank + (size_t)c) % 17);
        /* one call in eight beside a message between the ranks of a pair
         * (r, r ^ 1): one sends it with a blocking MPI_Send before its
         * call, the other posted the receive before its call and waits
         * after, so a large message (a rendezvous) completes only if the
         * call drives MPI's progress (docs/MPI.md, "MPI's progress rule") */
        int side = draw() % 8 == 0 ? 1 + (int)(draw() % 2) : 0;
        int mlen = (int)(draw() % (1u << 18)), partner = rank ^ 1;
        int msender = (side == 1) == (rank % 2 == 0);
        MPI_Request mreq = MPI_REQUEST_NULL;
        int *m = NULL;
        if (side && partner < size) {
            m = malloc((size_t)mlen * sizeof *m + 1);
            for (int i = 0; i < mlen; i++)
                m[i] = msender ? i * 5 + c + rank : -1;
            if (msender)
                MPI_Send(m, mlen, MPI_INT, partner, 77, MPI_COMM_WORLD);
            else
                MPI_Irecv(m, mlen, MPI_INT, partner, 77, MPI_COMM_WORLD, &mreq);
        }
        switch (kind) {
        case K_ALLREDUCE:
            if (inplace) {
                memcpy(b, a, outb);
                MPI_Allreduce(MPI_IN_PLACE, b, cnt, dts[d], ops[opi], comm);
            } else {
                MPI_Allreduce(a, b, cnt, dts[d], ops[opi], comm);
            }
            break;
        case K_REDUCE:
            if (inplace && cr == root) {
                memcpy(b, a, outb);
                MPI_Reduce(MPI_IN_PLACE, b, cnt, dts[d], ops[opi], root, comm);
            } else {
                MPI_Reduce(a, b, cnt, dts[d], ops[opi], root, comm);
            }
            if (cr != root)
                outb = 0;
            break;
        case K_BCAST:
            if (cr == root)
                memcpy(b, a, outb);
            MPI_Bcast(b, cnt, dts[d], root, comm);
            break;
        case K_RSB:
            MPI_Reduce_scatter_block(a, b, cnt, dts[d], opi == 3 || opi == 4 ? MPI_SUM : ops[opi],
                                     comm);
            break;
        case K_ALLGATHER:
            MPI_Allgather(a, cnt, dts[d], b, cnt, dts[d], comm);
            outb *= (size_t)cs;
            break;
        case K_BARRIER:
            MPI_Barrier(comm);
            outb = 0;
            break;
        case K_USER: {
            int n = (cnt % 5000) & ~1;
            MPI_Allreduce(a, b, n, MPI_UNSIGNED, user, comm);
            outb = (size_t)n * 4;
            break;
        }
        }
        /* the call has returned: its input is the caller's again, and a
         * peer still reading it in place would read these bytes instead */
        memset(a, 0x5a, bytes);
        uint64_t h = 0;
        for (size_t i = 0; i < outb; i++)
            h = h * 1099511628211ull + (unsigned char)b[i];
        MPI_Wait(&mreq, MPI_STATUS_IGNORE);
        for (int i = 0; m && !msender && i < mlen; i++)
            h = h * 1099511628211ull + (unsigned)m[i];
        free(m);
        if (kind == K_BCAST)
            memset(b, 0x5a, bytes);
        sum = sum * 31 + h;
        if (rank == trace)
            fprintf(stderr, "call %d: kind %d, %d ranks, type %d, count %d, root %d, op %d, in "
                    "place %d: %016llx\n", c, kind, cs, d, cnt, root, opi, inplace,
                    (unsigned long long)h);
        if (mem) {
            MPI_Free_mem(a);
            MPI_Free_mem(b);
        } else {
            free(a);
            free(b);
        }
    }
    uint64_t *all = malloc((size_t)size * sizeof *all);
    MPI_Gather(&sum, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; r++)
            printf("rank %d: %016llx\n", r, (unsigned long long)all[r]);
    free(all);
    for (int i = 1; i < 4; i++)
        MPI_Comm_free(&comms[i]);
    MPI_Op_free(&user);
    MPI_Finalize();
    return 0;
}
