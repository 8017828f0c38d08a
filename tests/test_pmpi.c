/* test_pmpi.c — an ordinary MPI program (no weft calls) for the drop-in:
 * MPI_Allreduce / MPI_Reduce / MPI_Bcast / MPI_Reduce_scatter(_block) /
 * MPI_Allgather(v) with every predefined datatype and op weft maps, MPI_IN_PLACE,
 * user ops (commutative and not), count 0 and NULL buffers, a type of size
 * 0, a resized receive type, MPI_COMM_SELF, a split
 * communicator, MPI_Barrier (checked by the clock), live communicators
 * that keep no descriptor each, and calls that must fall back to MPI
 * (derived datatype, MINLOC).  It checks every result itself, so it passes
 * with or without LD_PRELOAD=libweft-mpi.so; pmpi.sh checks that weft
 * served the calls. */
#include <dirent.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int rank, size;
#define CHECK_WHO() fprintf(stderr, "rank %d: ", rank)
#include "testing.h"

typedef struct {
    MPI_Datatype t;
    const char *name;
    int size, is_float, is_signed;
} dt_t;

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Does this kernel prefault shared mappings on request (MADV_POPULATE_WRITE)? */
static int populate_works(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    int ok = madvise(p, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
    munmap(p, 4096);
    return ok;
}

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int64_t val(int r, int i) { return (int64_t)((i * 7 + r * 3) % 11) + (r == 1 ? 0 : 1); }

static void put(void *buf, int i, int64_t v, const dt_t *d)
{
    if (d->is_float) {
        if (d->size == 4)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = (double)v;
        return;
    }
    memcpy((char *)buf + (size_t)i * (size_t)d->size, &v, (size_t)d->size); /* little endian */
}

static int64_t get(const void *buf, int i, const dt_t *d)
{
    if (d->is_float)
        return d->size == 4 ? (int64_t)((const float *)buf)[i] : (int64_t)((const double *)buf)[i];
    int64_t v = 0;
    memcpy(&v, (const char *)buf + (size_t)i * (size_t)d->size, (size_t)d->size);
    if (d->is_signed && d->size < 8 && (v >> (8 * d->size - 1)) & 1)
        v |= -((int64_t)1 << (8 * d->size));
    return v;
}

static int64_t reduce_ref(MPI_Op op, int i, const dt_t *d)
{
    int64_t acc = val(0, i);
    for (int r = 1; r < size; r++) {
        int64_t v = val(r, i);
        if (op == MPI_SUM) acc += v;
        else if (op == MPI_PROD) acc *= v;
        else if (op == MPI_MIN) acc = v < acc ? v : acc;
        else if (op == MPI_MAX) acc = v > acc ? v : acc;
        else if (op == MPI_BAND) acc &= v;
        else if (op == MPI_BOR) acc |= v;
        else if (op == MPI_BXOR) acc ^= v;
        else if (op == MPI_LAND) acc = acc && v;
        else if (op == MPI_LOR) acc = acc || v;
    }
    if (!d->is_float && d->size < 8) { /* wrap to the type */
        int64_t m = (int64_t)1 << (8 * d->size);
        acc = ((acc % m) + m) % m;
        if (d->is_signed && acc >= m / 2)
            acc -= m;
    }
    return acc;
}

/* non-commutative user op on pairs of uint64 (affine maps, see test_coll) */
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    uint64_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        uint32_t fa = (uint32_t)(a[i] >> 32), fb = (uint32_t)a[i];
        uint32_t ga = (uint32_t)(b[i] >> 32), gb = (uint32_t)b[i];
        b[i] = (uint64_t)(fa * ga) << 32 | (uint32_t)(fa * gb + fb);
    }
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* What MPI allows that a drop-in must not refuse: NULL buffers with no data
 * (count 0, a reduce's receive buffer off the root), a type of size 0 with
 * a count, receive types with holes and a negative lower bound. */
static void empty_and_resized(void)
{
    CHECK(MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast of NULL, 0");
    CHECK(MPI_Allreduce(NULL, NULL, 0, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allreduce of NULL, 0");
    CHECK(MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS,
          "reduce of NULL, 0");
    CHECK(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allgather of NULL, 0");
    CHECK(MPI_Reduce_scatter_block(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD) ==
          MPI_SUCCESS, "reduce_scatter_block of NULL, 0");
    int x = rank + 1, y = -1;
    MPI_Reduce(&x, rank == size - 1 ? &y : NULL, 1, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD);
    CHECK(rank != size - 1 || y == size * (size + 1) / 2,
          "reduce, NULL receive buffers off the root");
    int keep[10];
    for (int i = 0; i < 10; i++)
        keep[i] = rank * 10 + i;
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    CHECK(MPI_Bcast(keep, 10, none, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast of a type of size 0");
    MPI_Allgather(keep, 3, none, keep, 3, none, MPI_COMM_WORLD);
    for (int i = 0; i < 10; i++)
        CHECK(keep[i] == rank * 10 + i, "a type of size 0 changed element %d", i);
    MPI_Type_free(&none);
    /* one int per block of two, the block's origin one int before the data */
    MPI_Datatype holes;
    MPI_Type_create_resized(MPI_INT, -(MPI_Aint)sizeof(int), 2 * sizeof(int), &holes);
    MPI_Type_commit(&holes);
    int *g = malloc(sizeof(int) * (2 * (size_t)size + 1)), mine = 100 + rank;
    for (int i = 0; i < 2 * size + 1; i++)
        g[i] = -7;
    MPI_Allgather(&mine, 1, MPI_INT, g + 1, 1, holes, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(g[2 * r + 1] == 100 + r && g[2 * r] == -7, "allgather into a resized type, block %d",
              r);
    free(g);
    MPI_Type_free(&holes);
}

/* The drop-in keeps a derived type's decoded shape on the type: a type
 * freed and another made in its place (MPI may give it the same handle)
 * must be decoded afresh.  Made alternately, each used once: a contiguous
 * type of 4 ints, then a vector taking every other int of 8, which served
 * with the first one's shape would be read as contiguous. */
static void types_made_again(void)
{
    for (int round = 0; round < 8; round++) {
        MPI_Datatype t;
        int strided = round % 2, buf[8];
        if (strided)
            MPI_Type_vector(4, 1, 2, MPI_INT, &t);
        else
            MPI_Type_contiguous(4, MPI_INT, &t);
        MPI_Type_commit(&t);
        for (int i = 0; i < 8; i++)
            buf[i] = rank == 0 ? 100 * round + i : -1;
        MPI_Bcast(buf, 1, t, 0, MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++) {
            int sent = !strided ? i < 4 : i % 2 == 0;
            int want = rank == 0 || sent ? 100 * round + i : -1;
            CHECK(buf[i] == want, "bcast through a %s type made again (round %d): element %d is %d",
                  strided ? "vector" : "contiguous", round, i, buf[i]);
        }
        MPI_Type_free(&t);
    }
}

/* MPI_Reduce_scatter and MPI_Allgatherv, which the drop-in serves where
 * every block has one size; rs: 3 ints per rank, rs[i] = i + rank. */
static void blocks_of_one_size(const int *rs)
{
    int rso[3];
    /* MPI_Reduce_scatter: blocks of one size (weft's), in place too, and
     * blocks of rank + 1 elements (MPI's) */
    int *counts = malloc(sizeof(int) * (size_t)size), *rsi = malloc(sizeof(int) * 3 * (size_t)size);
    for (int r = 0; r < size; r++)
        counts[r] = 3;
    memset(rso, 0, sizeof rso);
    MPI_Reduce_scatter(rs, rso, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j < 3; j++)
        CHECK(rso[j] == size * (rank * 3 + j) + size * (size - 1) / 2, "reduce_scatter");
    memcpy(rsi, rs, sizeof(int) * 3 * (size_t)size);
    MPI_Reduce_scatter(MPI_IN_PLACE, rsi, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j < 3; j++)
        CHECK(rsi[j] == size * (rank * 3 + j) + size * (size - 1) / 2, "reduce_scatter in place");
    int first = 0; /* where this rank's block starts with blocks of r + 1 */
    for (int r = 0; r < size; r++)
        counts[r] = r + 1, first += r < rank ? r + 1 : 0;
    int *uneq = malloc(sizeof(int) * (size_t)(size * (size + 1) / 2));
    int *uo = malloc(sizeof(int) * (size_t)(rank + 1));
    for (int i = 0; i < size * (size + 1) / 2; i++)
        uneq[i] = i * 2 + rank;
    MPI_Reduce_scatter(uneq, uo, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j <= rank; j++)
        CHECK(uo[j] == size * (first + j) * 2 + size * (size - 1) / 2,
              "reduce_scatter with unequal blocks, element %d", j);
    free(counts), free(rsi), free(uneq), free(uo);
    /* MPI_Allgatherv: blocks of one size in a row, the same blocks placed in
     * reverse order with a gap of one int after each (in place too), and
     * blocks of rank + 1 ints (MPI's) */
    int *vc = malloc(sizeof(int) * (size_t)size), *vd = malloc(sizeof(int) * (size_t)size);
    int *va = malloc(sizeof(int) * 4 * (size_t)size), mineb[3];
    for (int j = 0; j < 3; j++)
        mineb[j] = 1000 * rank + j;
    for (int layout = 0; layout < 3; layout++) {
        for (int r = 0; r < size; r++)
            vc[r] = 3, vd[r] = layout == 0 ? 3 * r : 4 * (size - 1 - r);
        for (int i = 0; i < 4 * size; i++)
            va[i] = -1;
        if (layout == 2)
            memcpy(va + vd[rank], mineb, sizeof mineb);
        MPI_Allgatherv(layout == 2 ? MPI_IN_PLACE : mineb, 3, MPI_INT, va, vc, vd, MPI_INT,
                       MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            for (int j = 0; j < 3; j++)
                CHECK(va[vd[r] + j] == 1000 * r + j, "allgatherv (layout %d): block %d, element %d",
                      layout, r, j);
            if (layout > 0)
                CHECK(va[vd[r] + 3] == -1, "allgatherv (layout %d) wrote the gap after block %d",
                      layout, r);
        }
    }
    for (int r = 0, at = 0; r < size; at += r + 1, r++)
        vc[r] = r + 1, vd[r] = at;
    int *vb = malloc(sizeof(int) * (size_t)(size * (size + 1) / 2));
    int *mine_v = malloc(sizeof(int) * (size_t)(rank + 1));
    for (int j = 0; j <= rank; j++)
        mine_v[j] = 1000 * rank + j;
    MPI_Allgatherv(mine_v, rank + 1, MPI_INT, vb, vc, vd, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int j = 0; j <= r; j++)
            CHECK(vb[vd[r] + j] == 1000 * r + j, "allgatherv with unequal blocks: %d, %d", r, j);
    free(vc), free(vd), free(va), free(vb), free(mine_v);
}

/* MPI's progress rule with weft inside: rank 0 posts a receive and enters a
 * collective; rank 1 sends to it with a blocking send first, then enters
 * the collective.  The send is large (a rendezvous in Open MPI and MPICH),
 * so it completes only if rank 0's collective drives the MPI library's
 * progress while it waits: weft's waits did not, and both ranks hung.  And
 * the other way round: rank 0 starts a large send, rank 1 receives it with
 * a blocking receive, then both enter the collective.  Each collective weft
 * serves a different way: the board (8 bytes, the barrier), a schedule
 * (64 KiB bcast), single copy or the arena (4 MiB allreduce). */
static void progress_rule(void)
{
    if (size < 2)
        return;
    const int n = 1 << 20; /* ints: 4 MiB */
    int *msg = malloc((size_t)n * sizeof *msg), *big = malloc((size_t)n * sizeof *big),
        *sum = malloc((size_t)n * sizeof *sum);
    for (int c = 0; c < 4; c++)
        for (int dir = 0; dir < 2; dir++) {
            int sender = dir ? 0 : 1, receiver = dir ? 1 : 0;
            for (int i = 0; i < n; i++)
                msg[i] = rank == sender ? i * 3 + c + dir : -1, big[i] = rank + i % 7;
            MPI_Request req = MPI_REQUEST_NULL;
            if (rank == receiver && !dir)
                MPI_Irecv(msg, n, MPI_INT, sender, 40 + c, MPI_COMM_WORLD, &req);
            else if (rank == sender && !dir)
                MPI_Send(msg, n, MPI_INT, receiver, 40 + c, MPI_COMM_WORLD);
            else if (rank == sender)
                MPI_Isend(msg, n, MPI_INT, receiver, 40 + c, MPI_COMM_WORLD, &req);
            else if (rank == receiver)
                MPI_Recv(msg, n, MPI_INT, sender, 40 + c, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int x = rank + 1, y = 0, rc;
            if (c == 0)
                rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                y = y == size * (size + 1) / 2;
            else if (c == 1)
                rc = MPI_Barrier(MPI_COMM_WORLD), y = 1;
            else if (c == 2) {
                if (rank == size - 1)
                    for (int i = 0; i < 16384; i++)
                        big[i] = i ^ 5;
                rc = MPI_Bcast(big, 16384, MPI_INT, size - 1, MPI_COMM_WORLD);
                y = 1;
                for (int i = 0; i < 16384; i++)
                    y &= big[i] == (i ^ 5);
            } else {
                rc = MPI_Allreduce(big, sum, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                y = 1;
                for (int i = 0; i < n; i += 4099)
                    y &= sum[i] == size * (size - 1) / 2 + size * (i % 7);
            }
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK(rc == MPI_SUCCESS && y, "collective %d beside a %s send: wrong result", c,
                  dir ? "started" : "blocking");
            int wrong = 0;
            for (int i = 0; rank == receiver && i < n; i++)
                wrong += msg[i] != i * 3 + c + dir;
            CHECK(!wrong, "collective %d beside a %s send: %d elements of the message wrong", c,
                  dir ? "started" : "blocking", wrong);
        }
    free(msg), free(big), free(sum);
}

/* Ranks that pass different counts to one MPI_Allreduce, under the drop-in
 * and MPI_ERRORS_RETURN: every rank gets an error of class MPI_ERR_OTHER
 * whose string names the call and the disagreement.  (Until 2026-12-07 the
 * string was "known error not in list", and MPI_ERRORS_ARE_FATAL's abort
 * said no more.) */
static int mismatch_mode(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double in[4] = {1, 2, 3, 4}, out[4];
    int rc = MPI_Allreduce(in, out, rank == 0 ? 4 : 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0, cls = -1;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, text, &len);
    }
    CHECK(cls == MPI_ERR_OTHER, "mismatched counts: rc %d, error class %d, not MPI_ERR_OTHER",
          rc, cls);
    CHECK(strstr(text, "weft-mpi: MPI_Allreduce: ") && strstr(text, "disagree") &&
              strstr(text, "4 x float64") && strstr(text, "3 x float64"),
          "mismatched counts: the error string '%s' does not say what differed", text);
    printf("rank %d: %s\n", rank, failures ? "mismatch FAILED" : "mismatch ok");
    MPI_Finalize();
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && !strcmp(argv[1], "mismatch"))
        return mismatch_mode();
    const dt_t dts[] = {
        {MPI_SIGNED_CHAR, "signed char", 1, 0, 1}, {MPI_UNSIGNED_CHAR, "unsigned char", 1, 0, 0},
        {MPI_SHORT, "short", 2, 0, 1},             {MPI_UNSIGNED_SHORT, "unsigned short", 2, 0, 0},
        {MPI_INT, "int", 4, 0, 1},                 {MPI_UNSIGNED, "unsigned", 4, 0, 0},
        {MPI_LONG, "long", 8, 0, 1},               {MPI_UNSIGNED_LONG, "unsigned long", 8, 0, 0},
        {MPI_LONG_LONG, "long long", 8, 0, 1},     {MPI_INT8_T, "int8_t", 1, 0, 1},
        {MPI_INT16_T, "int16_t", 2, 0, 1},         {MPI_INT32_T, "int32_t", 4, 0, 1},
        {MPI_INT64_T, "int64_t", 8, 0, 1},         {MPI_UINT8_T, "uint8_t", 1, 0, 0},
        {MPI_UINT16_T, "uint16_t", 2, 0, 0},       {MPI_UINT32_T, "uint32_t", 4, 0, 0},
        {MPI_UINT64_T, "uint64_t", 8, 0, 0},       {MPI_FLOAT, "float", 4, 1, 1},
        {MPI_DOUBLE, "double", 8, 1, 1},
    };
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
                          MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR};
    const char *opn[] = {"sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"};
    enum { N = 37 };
    char in[N * 8], out[N * 8 * 16];
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int o = 0; o < 9; o++) {
            const dt_t *t = &dts[d];
            if (t->is_float && o >= 4)
                continue; /* bitwise/logical ops are for integers */
            for (int i = 0; i < N; i++)
                put(in, i, val(rank, i), t);
            MPI_Allreduce(in, out, N, t->t, ops[o], MPI_COMM_WORLD);
            int bad = 0;
            for (int i = 0; i < N; i++)
                bad += get(out, i, t) != reduce_ref(ops[o], i, t);
            CHECK(!bad, "allreduce %s %s: %d wrong", t->name, opn[o], bad);
            /* in place, and reduce to the last rank */
            memcpy(out, in, sizeof in);
            MPI_Allreduce(MPI_IN_PLACE, out, N, t->t, ops[o], MPI_COMM_WORLD);
            bad = 0;
            for (int i = 0; i < N; i++)
                bad += get(out, i, t) != reduce_ref(ops[o], i, t);
            CHECK(!bad, "allreduce in place %s %s", t->name, opn[o]);
            memset(out, 0, sizeof out);
            MPI_Reduce(in, out, N, t->t, ops[o], size - 1, MPI_COMM_WORLD);
            if (rank == size - 1) {
                bad = 0;
                for (int i = 0; i < N; i++)
                    bad += get(out, i, t) != reduce_ref(ops[o], i, t);
                CHECK(!bad, "reduce %s %s", t->name, opn[o]);
            }
        }
    /* bcast, reduce_scatter_block, allgather (int and double) */
    int ib[N];
    for (int i = 0; i < N; i++)
        ib[i] = rank == 1 % size ? i * 5 + 3 : -1;
    MPI_Bcast(ib, N, MPI_INT, 1 % size, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += ib[i] != i * 5 + 3;
    CHECK(!bad, "bcast");
    int *rs = malloc(sizeof(int) * 3 * (size_t)size), rso[3];
    for (int i = 0; i < 3 * size; i++)
        rs[i] = i + rank;
    MPI_Reduce_scatter_block(rs, rso, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int j = 0; j < 3; j++)
        CHECK(rso[j] == size * (rank * 3 + j) + size * (size - 1) / 2, "reduce_scatter_block");
    blocks_of_one_size(rs);
    double *ag = malloc(sizeof(double) * 2 * (size_t)size), mine[2] = {rank * 1.5, rank + 0.25};
    MPI_Allgather(mine, 2, MPI_DOUBLE, ag, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(ag[2 * r] == r * 1.5 && ag[2 * r + 1] == r + 0.25, "allgather");
    memset(ag, 0, sizeof(double) * 2 * (size_t)size);
    ag[2 * rank] = mine[0], ag[2 * rank + 1] = mine[1];
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(ag[2 * r] == r * 1.5, "allgather in place");
    /* user ops */
    MPI_Op aff, us;
    MPI_Op_create(affine, 0, &aff);
    MPI_Op_create(isum, 1, &us);
    uint64_t a[5], ar[5];
    for (int i = 0; i < 5; i++)
        a[i] = (uint64_t)(2 * (rank + i) + 1) << 32 | (uint32_t)(rank * 7 + i);
    MPI_Allreduce(a, ar, 5, MPI_UINT64_T, aff, MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++) {
        uint64_t acc = (uint64_t)(2 * i + 1) << 32 | (uint32_t)i;
        for (int r = 1; r < size; r++) {
            uint64_t g = (uint64_t)(2 * (r + i) + 1) << 32 | (uint32_t)(r * 7 + i);
            int one = 1;
            MPI_Datatype dd = MPI_UINT64_T;
            uint64_t tmp = g;
            affine(&acc, &tmp, &one, &dd);
            acc = tmp;
        }
        CHECK(ar[i] == acc, "non-commutative user op, element %d", i);
    }
    int u = rank + 1, ur = 0;
    MPI_Allreduce(&u, &ur, 1, MPI_INT, us, MPI_COMM_WORLD);
    CHECK(ur == size * (size + 1) / 2, "commutative user op");
    MPI_Op_free(&aff);
    MPI_Op_free(&us);
    /* count 0, MPI_COMM_SELF, a split communicator */
    CHECK(MPI_Allreduce(in, out, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "count 0");
    int s1 = 41, s2 = 0;
    MPI_Allreduce(&s1, &s2, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    CHECK(s2 == 41, "COMM_SELF");
    empty_and_resized();
    types_made_again();
    progress_rule();
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hv = rank, hs = 0, want = 0;
    MPI_Allreduce(&hv, &hs, 1, MPI_INT, MPI_SUM, half);
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    CHECK(hs == want, "split comm");
    /* a long vector on it: schedules with many steps (pipeline chunks=1000
     * in pmpi.sh) need MPI_TAG_UB from MPI_COMM_WORLD, not the split's */
    int *hl = malloc(5000 * sizeof *hl), *hr = malloc(5000 * sizeof *hr);
    for (int i = 0; i < 5000; i++)
        hl[i] = rank + i;
    MPI_Allreduce(hl, hr, 5000, MPI_INT, MPI_SUM, half);
    int hsize = 0;
    MPI_Comm_size(half, &hsize);
    for (int i = 0; i < 5000; i++)
        CHECK(hr[i] == want + hsize * i, "split comm, long vector, element %d", i);
    free(hl), free(hr);
    /* communicators made and freed in turn, each of other ranks: MPI gives
     * a freed handle to the next one (Open MPI does, from the same memory),
     * and the drop-in's memory of the last communicator it served must not
     * outlive it */
    int reused = 0;
    MPI_Comm prev = MPI_COMM_NULL;
    for (int it = 0; it < 24; it++) {
        MPI_Comm c;
        int color = (rank + it) % 3 == 0;
        MPI_Comm_split(MPI_COMM_WORLD, color, size - rank, &c);
        reused += c == prev;
        int v = rank + 1, sum = 0, ref = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        for (int r = 0; r < size; r++)
            ref += ((r + it) % 3 == 0) == color ? r + 1 : 0;
        CHECK(sum == ref, "split %d of a series made and freed: %d, want %d", it, sum, ref);
        prev = c;
        MPI_Comm_free(&c);
    }
    if (rank == 0)
        printf("test_pmpi: %d of 24 communicators got the handle of the one freed before\n",
               reused);
    /* MPI_Barrier on the world, the split and COMM_SELF: no rank leaves
     * before the last one entered (the last rank enters 30 ms late; ranks
     * of one machine share CLOCK_MONOTONIC) */
    for (int round = 0; round < 3; round++) {
        MPI_Comm c = round == 0 ? MPI_COMM_WORLD : round == 1 ? half : MPI_COMM_SELF;
        int crank = 0, csize = 1;
        MPI_Comm_rank(c, &crank);
        MPI_Comm_size(c, &csize);
        if (crank == csize - 1)
            nanosleep(&(struct timespec){0, 30000000}, NULL);
        double entered = mono_now(), left;
        CHECK(MPI_Barrier(c) == MPI_SUCCESS, "MPI_Barrier, round %d", round);
        left = mono_now();
        double last_in = 0;
        MPI_Allreduce(&entered, &last_in, 1, MPI_DOUBLE, MPI_MAX, c);
        CHECK(left >= last_in, "MPI_Barrier, round %d: left %.6f before the last rank entered "
              "at %.6f", round, left, last_in);
    }
    MPI_Comm_free(&half);
    /* live communicators keep no descriptor each: under the drop-in every
     * one has a segment, reserved by prefaulting where the kernel can
     * (Linux 5.14), so a program's limit of open files is its own */
    if (populate_works()) {
        enum { NC = 24 };
        MPI_Comm dups[NC];
        int fds0 = open_fds();
        for (int i = 0; i < NC; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &dups[i]);
            CHECK(MPI_Barrier(dups[i]) == MPI_SUCCESS, "barrier on dup %d", i);
        }
        int grew = open_fds() - fds0;
        CHECK(grew < NC / 2, "%d live communicators hold %d more descriptors", NC, grew);
        for (int i = 0; i < NC; i++)
            MPI_Comm_free(&dups[i]);
    }
    /* derived datatypes: weft serves any signature of one predefined type
     * (packing a strided layout), whatever type each rank uses for it */
    MPI_Datatype vec, con4;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(4, MPI_INT, &con4);
    MPI_Type_commit(&con4);
    int v8[8];
    for (int i = 0; i < 8; i++)
        v8[i] = rank == 0 ? 100 + i : -1;
    MPI_Bcast(v8, 1, vec, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++)
        CHECK(v8[i] == (i % 2 == 0 || rank == 0 ? 100 + i : -1), "strided bcast, element %d", i);
    for (int root = 0; root < 2 && root < size; root++) {
        /* the root four MPI_INT, the others one contiguous type of four, and
         * the last rank the strided type: one signature, three types */
        for (int i = 0; i < 8; i++)
            v8[i] = rank == root ? 10 * root + i : -1;
        if (rank == root)
            MPI_Bcast(v8, 4, MPI_INT, root, MPI_COMM_WORLD);
        else if (rank == size - 1)
            MPI_Bcast(v8, 1, vec, root, MPI_COMM_WORLD);
        else
            MPI_Bcast(v8, 1, con4, root, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++) {
            int at = rank == size - 1 && rank != root ? 2 * i : i;
            CHECK(v8[at] == 10 * root + i, "bcast with mixed types, root %d, element %d", root, i);
        }
    }
    int *g4 = malloc(4 * sizeof(int) * (size_t)size), mine4[4];
    for (int i = 0; i < 4; i++)
        mine4[i] = rank * 10 + i;
    if (rank % 2)
        MPI_Allgather(mine4, 1, con4, g4, 4, MPI_INT, MPI_COMM_WORLD);
    else
        MPI_Allgather(mine4, 4, MPI_INT, g4, 1, con4, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 4; i++)
            CHECK(g4[4 * r + i] == r * 10 + i, "allgather with mixed types");
    free(g4);
    /* a type map out of memory order: a struct of ints at 4 then 0, and
     * indexed blocks at 2 then 0, with no holes; ranks passing plain ints
     * get the elements in type-map order */
    {
        int bl2[2] = {1, 1}, ibl[2] = {2, 2}, idisp[2] = {2, 0};
        MPI_Aint rdisp[2] = {4, 0};
        MPI_Datatype ints2[2] = {MPI_INT, MPI_INT}, rev, idx;
        MPI_Type_create_struct(2, bl2, rdisp, ints2, &rev);
        MPI_Type_indexed(2, ibl, idisp, MPI_INT, &idx);
        MPI_Type_commit(&rev);
        MPI_Type_commit(&idx);
        int p2[2] = {rank == 0 ? 1 : -1, rank == 0 ? 2 : -1}, p4[4];
        for (int i = 0; i < 4; i++)
            p4[i] = rank == 0 ? 10 + i : -1;
        MPI_Bcast(p2, rank == 0 ? 1 : 2, rank == 0 ? rev : MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(p4, rank == 0 ? 1 : 4, rank == 0 ? idx : MPI_INT, 0, MPI_COMM_WORLD);
        if (rank != 0)
            CHECK(p2[0] == 2 && p2[1] == 1 && p4[0] == 12 && p4[1] == 13 && p4[2] == 10 &&
                  p4[3] == 11, "bcast through types out of memory order: %d %d, %d %d %d %d",
                  p2[0], p2[1], p4[0], p4[1], p4[2], p4[3]);
        int *gr = malloc(2 * sizeof(int) * (size_t)size), mine2[2] = {rank * 10, rank * 10 + 1};
        MPI_Allgather(mine2, 1, rev, gr, 2, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            CHECK(gr[2 * r] == r * 10 + 1 && gr[2 * r + 1] == r * 10,
                  "allgather through a type out of memory order, block %d", r);
        free(gr);
        MPI_Type_free(&rev);
        MPI_Type_free(&idx);
    }
    /* MPI_BOTTOM and types of absolute addresses, contiguous and strided */
    int abs8[8], abs16[16];
    for (int i = 0; i < 16; i++)
        abs16[i] = rank == size - 1 ? 300 + i : -1;
    for (int i = 0; i < 8; i++)
        abs8[i] = rank == size - 1 ? 200 + i : -1;
    MPI_Aint at8, at16;
    MPI_Get_address(abs8, &at8);
    MPI_Get_address(abs16, &at16);
    MPI_Datatype abs_con, abs_vec, int_t = MPI_INT, vec8;
    int eight = 8, one = 1;
    MPI_Type_vector(8, 1, 2, MPI_INT, &vec8);
    MPI_Type_create_struct(1, &eight, &at8, &int_t, &abs_con);
    MPI_Type_create_struct(1, &one, &at16, &vec8, &abs_vec);
    MPI_Type_commit(&abs_con);
    MPI_Type_commit(&abs_vec);
    CHECK(MPI_Bcast(MPI_BOTTOM, 1, abs_con, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS &&
          MPI_Bcast(MPI_BOTTOM, 1, abs_vec, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS,
          "bcast from MPI_BOTTOM");
    for (int i = 0; i < 8; i++)
        CHECK(abs8[i] == 200 + i, "bcast from MPI_BOTTOM, contiguous, element %d", i);
    for (int i = 0; i < 16; i++)
        CHECK(abs16[i] == (i % 2 == 0 || rank == size - 1 ? 300 + i : -1),
              "bcast from MPI_BOTTOM, strided, element %d", i);
    int *gabs = malloc(8 * sizeof(int) * (size_t)size);
    for (int i = 0; i < 8; i++)
        abs8[i] = rank * 10 + i;
    MPI_Allgather(MPI_BOTTOM, 1, abs_con, gabs, 8, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 8; i++)
            CHECK(gabs[8 * r + i] == r * 10 + i, "allgather from MPI_BOTTOM, block %d", r);
    free(gabs);
    MPI_Type_free(&abs_con);
    MPI_Type_free(&abs_vec);
    MPI_Type_free(&vec8);
    MPI_Type_free(&con4);
    MPI_Type_free(&vec);
    /* fallbacks: a mixed signature (int, double) and MINLOC */
    struct { int i; double d; } id = {rank == 0 ? 7 : 0, rank == 0 ? 2.5 : 0};
    MPI_Datatype idt;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(__typeof__(id), i), offsetof(__typeof__(id), d)};
    MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, disp, tys, &idt);
    MPI_Type_commit(&idt);
    MPI_Bcast(&id, 1, idt, 0, MPI_COMM_WORLD);
    CHECK(id.i == 7 && id.d == 2.5, "struct bcast through MPI");
    MPI_Type_free(&idt);
    struct { int v, r; } ml = {rank * 10 % 7, rank}, mr;
    MPI_Allreduce(&ml, &mr, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(mr.v == 6 || size < 4, "maxloc");
    /* MPI_Alloc_mem'd buffers (weft's arena under the drop-in): a large
     * allreduce read in place, then MPI_Free_mem */
    {
        int n = 1 << 18;
        float *ai = NULL, *ao = NULL;
        CHECK(MPI_Alloc_mem((MPI_Aint)n * 4, MPI_INFO_NULL, &ai) == MPI_SUCCESS &&
              MPI_Alloc_mem((MPI_Aint)n * 4, MPI_INFO_NULL, &ao) == MPI_SUCCESS, "MPI_Alloc_mem");
        for (int i = 0; i < n; i++)
            ai[i] = (float)((i + rank) % 13);
        MPI_Allreduce(ai, ao, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            float expect = 0;
            for (int r = 0; r < size; r++)
                expect += (float)((i + r) % 13);
            wrong += ao[i] != expect;
        }
        CHECK(!wrong, "allreduce of MPI_Alloc_mem buffers: %d wrong", wrong);
        CHECK(MPI_Free_mem(ai) == MPI_SUCCESS && MPI_Free_mem(ao) == MPI_SUCCESS, "MPI_Free_mem");
    }
    /* bad input: errors come back through the error handler, as from MPI */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 1, y = 0;
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL) != MPI_SUCCESS, "COMM_NULL");
    int ccls = 0;
    MPI_Error_class(MPI_Allreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), &ccls);
    CHECK(ccls == MPI_ERR_COUNT, "allreduce of count -1: error class %d, not MPI_ERR_COUNT", ccls);
    MPI_Error_class(MPI_Bcast(&x, -2, MPI_INT, 0, MPI_COMM_WORLD), &ccls);
    CHECK(ccls == MPI_ERR_COUNT, "bcast of count -2: error class %d, not MPI_ERR_COUNT", ccls);
    CHECK(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD) != MPI_SUCCESS, "root out of range");
    CHECK(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD) != MPI_SUCCESS, "root -1");
    /* what MPI forbids and Open MPI checks on every rank: the drop-in
     * leaves it to MPI (it wrote through MPI_IN_PLACE, and computed ops MPI
     * does not define on a type) */
    int v[4] = {1, 2, 3, 4}, cls = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen = 0;
    MPI_Get_library_version(lib, &liblen);
    if (strstr(lib, "Open MPI")) {
        CHECK(MPI_Allreduce(v, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS,
              "allreduce into MPI_IN_PLACE");
        CHECK(MPI_Allreduce(v, v, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS,
              "allreduce with the send buffer as the receive buffer");
        CHECK(MPI_Bcast(MPI_IN_PLACE, 4, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS,
              "bcast of MPI_IN_PLACE");
    } else if (rank == 0) {
        /* MPICH does not check these: it aborts or crashes, with the
         * drop-in as without it (docs/MPI.md, "MPICH") */
        lib[strcspn(lib, "\n")] = 0;
        for (char *t = lib; (t = strchr(t, '\t')); )
            *t = ' ';
        printf("test_pmpi: MPI_IN_PLACE and aliasing errors not tried: %s does not check "
               "them\n", lib);
    }
    float f = 1.0f, g = 0.0f;
    int frc = MPI_Allreduce(&f, &g, 1, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD);
    MPI_Error_class(frc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_BAND on MPI_FLOAT: error class %d, not MPI_ERR_OP", cls);
    double d = 1.0, e = 0.0;
    frc = MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_LOR, MPI_COMM_WORLD);
    MPI_Error_class(frc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_LOR on MPI_DOUBLE: error class %d, not MPI_ERR_OP", cls);
    /* under the drop-in (libweft loaded): weft's own refusal after MPI
     * accepted the arguments (an allgather's send buffer overlapping the
     * receive buffer off its own block, which Open MPI lets pass) is
     * MPI_ERR_ARG, and the string says why */
    if (dlsym(RTLD_DEFAULT, "weft_comm_from_mpi")) {
        int *blocks = calloc((size_t)size * 2 + 1, sizeof *blocks);
        frc = MPI_Allgather(blocks + 1, 2, MPI_INT, blocks, 2, MPI_INT, MPI_COMM_WORLD);
        char text[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_class(frc, &cls);
        MPI_Error_string(frc, text, &len);
        CHECK(cls == MPI_ERR_ARG && strstr(text, "weft-mpi: MPI_Allgather: ") &&
                  strstr(text, "overlap"),
              "overlapping allgather: error class %d, not MPI_ERR_ARG, string '%s'", cls, text);
        free(blocks);
    }
    /* and the world still works */
    x = rank + 1, y = 0;
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
              y == size * (size + 1) / 2,
          "allreduce after the refused calls: %d", y);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_pmpi P=%d: %d checks, %d failures\n", size, checks, total);
    free(rs);
    free(ag);
    MPI_Finalize();
    return total ? 1 : 0;
}
