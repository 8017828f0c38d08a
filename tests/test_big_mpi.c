/* test_big_mpi.c — messages past 1 GiB over the MPI transport (run under
 * mpirun with WEFT_NODE_SIZE=1, so every message crosses MPI): an MPI count
 * is an int, and such a message goes as a struct type of 1 MiB blocks and
 * the rest (src/xport/mpi.c).  A binomial bcast of 1 GiB + 4099 bytes (one
 * message of that size) and a binomial reduce of 1 GiB + 4096 bytes of
 * int32 (a receive reduced from a staging buffer),
 * every byte checked; then counts that differ past 1 GiB are a mismatch,
 * not a hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <mpi.h>

#include "weft.h"
#include "weft_mpi.h"

static int rank, size;
#define CHECK_WHO() fprintf(stderr, "rank %d: ", rank)
#include "testing.h"

#define BIG (((size_t)1 << 30) + 4099)

static uint8_t pattern(size_t i, int salt) { return (uint8_t)((i ^ i >> 9 ^ i >> 17) + salt); }

/* A buffer in huge pages where the kernel has them: a gigabyte of 4 KiB
 * pages costs this VM more in page faults than the transfer itself. */
static void *big_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, bytes))
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static void bcast_big(weft_comm_t w, int root)
{
    uint8_t *buf = big_alloc(BIG);
    CHECK(buf != NULL, "out of memory");
    if (!buf)
        return;
    for (size_t i = 0; i < BIG; i++)
        buf[i] = rank == root ? pattern(i, root) : 0;
    int rc = weft_bcast(buf, BIG, WEFT_UINT8, root, w);
    CHECK(rc == WEFT_OK, "bcast of %zu bytes from %d: %s", BIG, root, weft_last_error());
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < BIG; i++)
        if (buf[i] != pattern(i, root) && !wrong++)
            first = i;
    CHECK(!wrong, "bcast from %d: %zu bytes wrong, the first at %zu", root, wrong, first);
    free(buf);
}

static void reduce_big(weft_comm_t w, int root)
{
    size_t n = BIG / 4;
    int32_t *in = big_alloc(n * 4), *out = big_alloc(n * 4);
    CHECK(in && out, "out of memory");
    if (in && out) {
        for (size_t i = 0; i < n; i++)
            in[i] = (int32_t)(i & 0xfffff) * (rank + 1);
        int rc = weft_reduce(in, out, n, WEFT_INT32, WEFT_SUM, root, w);
        CHECK(rc == WEFT_OK, "reduce of %zu bytes to %d: %s", n * 4, root, weft_last_error());
        if (rank == root) {
            int32_t f = (int32_t)(size * (size + 1) / 2);
            size_t wrong = 0;
            for (size_t i = 0; i < n; i++)
                wrong += out[i] != (int32_t)(i & 0xfffff) * f;
            CHECK(!wrong, "reduce to %d: %zu elements wrong", root, wrong);
        }
    }
    free(in), free(out);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    weft_comm_t w;
    if (weft_comm_from_mpi(MPI_COMM_WORLD, &w) != WEFT_OK) {
        fprintf(stderr, "weft_comm_from_mpi: %s\n", weft_last_error());
        return 1;
    }
    CHECK(weft_set_algorithm(w, WEFT_COLL_BCAST, "binomial", NULL) == WEFT_OK, "binomial bcast");
    CHECK(weft_set_algorithm(w, WEFT_COLL_REDUCE, "binomial", NULL) == WEFT_OK,
          "binomial reduce");
    bcast_big(w, size - 1);
    reduce_big(w, 0);
    /* ranks that pass counts 4 bytes apart, both past 1 GiB: the count is
     * in the call's signature, which shifts the MPI tag, so nothing matches;
     * the stalled ranks announce their calls and one finds the difference
     * (WEFT_EMISMATCH) and aborts the communicator for the other
     * (WEFT_EPEER, with the same message) */
    if (size == 2) {
        size_t n = BIG + (rank ? 4 : 0);
        uint8_t *buf = calloc(n, 1);
        weft_comm_t d;
        CHECK(weft_comm_dup(w, &d) == WEFT_OK, "dup: %s", weft_last_error());
        int rc = buf ? weft_bcast(buf, n, WEFT_UINT8, 0, d) : WEFT_ENOMEM;
        CHECK((rc == WEFT_EMISMATCH || rc == WEFT_EPEER) &&
                  strstr(weft_last_error(), "count differ"),
              "counts that differ past 1 GiB: %d (%s)", rc, weft_last_error());
        free(buf);
        weft_comm_free(&d);
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_big_mpi P=%d: %d checks on rank 0, %d failures\n", size, checks, total);
    weft_comm_free(&w);
    MPI_Finalize();
    return total ? 1 : 0;
}
