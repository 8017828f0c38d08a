/* test_pmpi_random.c — random collective calls of an ordinary MPI program,
 * for pmpi_random.sh to run with and without the drop-in and compare.
 *
 * From a seed, N calls drawn at random: MPI_Allreduce, MPI_Reduce,
 * MPI_Bcast, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Barrier and an
 * allreduce with a non-commutative user op (affine maps composed in rank
 * order), bcast and allgather through random derived types of each rank's
 * own (below), on four communicators (the world, a dup, two splits, one of
 * them reordered), with random datatypes, ops, roots, counts (0 to 700, and
 * one call in five up to 300,000), and MPI_IN_PLACE one time in three (in
 * allreduce, reduce, reduce_scatter_block and allgather).  A third of the
 * buffers, by rank, come from MPI_Alloc_mem (the drop-in's arena, read in
 * place by peers), and every call's input is overwritten as soon as it
 * returns, so a peer still reading it would differ.  Rank 0
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

/* ---- random derived datatypes of MPI_INT ----
 * For a typed bcast or allgather every rank builds a type of its own, from
 * a generator of its own, carrying a number of ints the call fixes: one
 * signature (n ints) among the ranks, laid out as the constructors allow:
 * blocks out of memory order, holes, lower bounds moved, extents widened,
 * nested to depth 3.  A rank's buffer is hashed whole, holes included, so
 * a byte written outside the type map differs too. */
static uint64_t xs(uint64_t *st)
{
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    return *st;
}

static int divisor_of(int k, uint64_t *st)
{
    int d;
    do
        d = 1 + (int)(xs(st) % (uint64_t)k);
    while (k % d);
    return d;
}

static void drop(MPI_Datatype *t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(t);
}

static void true_span(MPI_Datatype t, MPI_Aint *tlb, MPI_Aint *span, MPI_Aint *ext)
{
    MPI_Aint lb;
    MPI_Type_get_true_extent(t, tlb, span);
    MPI_Type_get_extent(t, &lb, ext);
}

/* m blocks of span[j] bytes placed one after another in a random order (in
 * order one time in three), gaps of 0-2 units between: at[j], where block
 * j's data start */
static void place_blocks(int m, const MPI_Aint *span, MPI_Aint *at, MPI_Aint unit, uint64_t *st)
{
    int order[8];
    for (int j = 0; j < m; j++)
        order[j] = j;
    if (xs(st) % 3)
        for (int j = m - 1; j > 0; j--) {
            int i = (int)(xs(st) % (uint64_t)(j + 1)), o = order[i];
            order[i] = order[j], order[j] = o;
        }
    MPI_Aint cur = 0;
    for (int i = 0; i < m; i++) {
        cur += unit * (MPI_Aint)(xs(st) % 3);
        at[order[i]] = cur;
        cur += span[order[i]];
    }
}

/* k ints split into m >= 1 parts of at least one each */
static int split_parts(int k, int *part, uint64_t *st)
{
    int m = 1 + (int)(xs(st) % (uint64_t)(k < 8 ? k : 8)), left = k;
    for (int j = 0; j < m; j++) {
        int rest = m - j - 1;
        part[j] = j == m - 1 ? left : 1 + (int)(xs(st) % (uint64_t)(left - rest));
        left -= part[j];
    }
    return m;
}

static MPI_Datatype rand_type(int k, int depth, uint64_t *st);

/* Copies of t must not overlap (a receive through such a type is
 * erroneous): where its extent came out shorter than its data's span (a
 * struct takes the bounds resized members set, MPI's sticky markers, and
 * ignores the others' data), it is widened. */
static MPI_Datatype rand_type_apart(int k, int depth, uint64_t *st)
{
    MPI_Datatype t = rand_type(k, depth, st), w;
    MPI_Aint tlb, span, ext, lb;
    MPI_Type_get_true_extent(t, &tlb, &span);
    MPI_Type_get_extent(t, &lb, &ext);
    if (ext >= span)
        return t;
    MPI_Type_create_resized(t, lb, span, &w);
    drop(&t);
    return w;
}

static MPI_Datatype rand_type(int k, int depth, uint64_t *st)
{
    MPI_Datatype t, kid, kids[8] = {0};
    MPI_Aint tlb, span, ext, at[8] = {0}, spans[8] = {0}, disp[8] = {0};
    int part[8], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, m, d, bl;
    switch (depth >= 3 ? 0 : (int)(xs(st) % 10)) {
    case 1: /* contiguous copies of a type of k/d */
        d = divisor_of(k, st);
        kid = rand_type_apart(k / d, depth + 1, st);
        MPI_Type_contiguous(d, kid, &t);
        drop(&kid);
        return t;
    case 2: /* strided blocks of int */
        bl = divisor_of(k, st);
        MPI_Type_vector(k / bl, bl, bl + (int)(xs(st) % 3), MPI_INT, &t);
        return t;
    case 3: /* strided blocks of a type of its own, stride in bytes */
        d = divisor_of(k, st);
        kid = rand_type_apart(d, depth + 1, st);
        bl = divisor_of(k / d, st);
        true_span(kid, &tlb, &span, &ext);
        MPI_Type_create_hvector(k / d / bl, bl, bl * ext + 4 * (MPI_Aint)(xs(st) % 3), kid, &t);
        drop(&kid);
        return t;
    case 4: /* blocks of int in any order, displacements in ints */
    case 5: /* the same in bytes */
        m = split_parts(k, part, st);
        for (int j = 0; j < m; j++)
            spans[j] = 4 * (MPI_Aint)part[j];
        place_blocks(m, spans, at, 4, st);
        if (xs(st) % 2 == 0) {
            int di[8];
            for (int j = 0; j < m; j++)
                di[j] = (int)(at[j] / 4);
            MPI_Type_indexed(m, part, di, MPI_INT, &t);
        } else {
            MPI_Type_create_hindexed(m, part, at, MPI_INT, &t);
        }
        return t;
    case 6: /* a struct of types of their own, in any order */
    case 7:
        m = split_parts(k, part, st);
        for (int j = 0; j < m; j++) {
            kids[j] = rand_type_apart(part[j], depth + 1, st);
            true_span(kids[j], &tlb, &spans[j], &ext);
            disp[j] = -tlb;
        }
        place_blocks(m, spans, at, 4, st);
        for (int j = 0; j < m; j++)
            disp[j] += at[j];
        MPI_Type_create_struct(m, ones, disp, kids, &t);
        for (int j = 0; j < m; j++)
            drop(&kids[j]);
        return t;
    case 8: { /* equal blocks of int in any order */
        bl = divisor_of(k, st);
        m = k / bl;
        if (m > 8)
            break;
        int di[8];
        for (int j = 0; j < m; j++)
            spans[j] = 4 * (MPI_Aint)bl;
        place_blocks(m, spans, at, 4, st);
        for (int j = 0; j < m; j++)
            di[j] = (int)(at[j] / 4);
        MPI_Type_create_indexed_block(m, bl, di, MPI_INT, &t);
        return t;
    }
    case 9: /* the lower bound moved down, the extent widened */
        kid = rand_type_apart(k, depth + 1, st);
        true_span(kid, &tlb, &span, &ext);
        MPI_Aint lb = tlb - 4 * (MPI_Aint)(xs(st) % 3);
        MPI_Type_create_resized(kid, lb, tlb + span - lb + 4 * (MPI_Aint)(xs(st) % 3), &t);
        drop(&kid);
        return t;
    default:
        break;
    }
    if (k == 1 && xs(st) % 2)
        return MPI_INT;
    MPI_Type_contiguous(k, MPI_INT, &t);
    return t;
}

/* A committed random type of k ints and the bytes count copies of it span
 * from the buffer's start (every true lb here is >= 0). */
static MPI_Datatype typed_buffer(int k, int count, uint64_t *st, size_t *need)
{
    MPI_Datatype t = rand_type_apart(k, 0, st);
    MPI_Type_commit(&t);
    MPI_Aint tlb, span, ext;
    true_span(t, &tlb, &span, &ext);
    *need = 64 + (count ? (size_t)(tlb + span) + (size_t)(count - 1) * (size_t)ext : 0);
    return t;
}

/* n ints of value base + i written through type t (count copies) */
static void fill_typed(char *buf, int count, MPI_Datatype t, int n, int base, MPI_Comm comm)
{
    int *v = malloc((size_t)n * sizeof *v + 1), pos = 0;
    for (int i = 0; i < n; i++)
        v[i] = base + i;
    MPI_Unpack(v, n * (int)sizeof *v, &pos, buf, count, t, comm);
    free(v);
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = h * 1099511628211ull + (unsigned char)p[i];
    return h;
}

enum { K_ALLREDUCE, K_REDUCE, K_BCAST, K_RSB, K_ALLGATHER, K_BARRIER, K_USER, K_BCAST_TYPED,
       K_ALLGATHER_TYPED, K_N };

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
        uint64_t extra = 0;
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
            if (inplace) { /* the input in the receive buffer, the result at its start */
                memcpy(b, a, outb * (size_t)cs);
                MPI_Reduce_scatter_block(MPI_IN_PLACE, b, cnt, dts[d],
                                         opi == 3 || opi == 4 ? MPI_SUM : ops[opi], comm);
            } else {
                MPI_Reduce_scatter_block(a, b, cnt, dts[d],
                                         opi == 3 || opi == 4 ? MPI_SUM : ops[opi], comm);
            }
            break;
        case K_ALLGATHER:
            if (inplace) { /* this rank's block already at its place */
                memcpy(b + outb * (size_t)cr, a, outb);
                MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, cnt, dts[d], comm);
            } else {
                MPI_Allgather(a, cnt, dts[d], b, cnt, dts[d], comm);
            }
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
        case K_BCAST_TYPED:
        case K_ALLGATHER_TYPED: {
            /* n ints a rank, n a multiple of 24: each rank's type carries
             * k of them (k divides 24), its count n / k */
            int n = 24 * (cnt % 5 == 0 ? cnt % 3000 : cnt % 40);
            uint64_t ts = rs ^ ((uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull);
            int ks = divisor_of(24, &ts), kr = divisor_of(24, &ts);
            int scount = n / ks, rcount = n / kr, copies = kind == K_BCAST_TYPED ? 1 : cs;
            size_t sneed, rneed;
            MPI_Datatype st = typed_buffer(ks, scount, &ts, &sneed);
            MPI_Datatype rt = typed_buffer(kr, rcount * copies, &ts, &rneed);
            char *sb = malloc(sneed), *rb = malloc(rneed);
            memset(sb, 0x11, sneed);
            memset(rb, 0x22, rneed);
            if (kind == K_BCAST_TYPED) {
                /* the root sends through its first type, the others
                 * receive through their second */
                if (cr == root) {
                    fill_typed(sb, scount, st, n, 1000 * c, comm);
                    MPI_Bcast(sb, scount, st, root, comm);
                } else {
                    MPI_Bcast(rb, rcount, rt, root, comm);
                }
            } else {
                fill_typed(sb, scount, st, n, 1000 * c + 100000 * cr, comm);
                MPI_Allgather(sb, scount, st, rb, rcount, rt, comm);
            }
            extra = hash_bytes(hash_bytes(0, sb, sneed), rb, rneed);
            free(sb), free(rb);
            drop(&st), drop(&rt);
            outb = 0;
            break;
        }
        }
        /* the call has returned: its input is the caller's again, and a
         * peer still reading it in place would read these bytes instead */
        memset(a, 0x5a, bytes);
        uint64_t h = hash_bytes(extra, b, outb);
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
