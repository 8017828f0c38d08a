/* profile.c — libweft-prof.so, the arrival-pattern profiler for any MPI
 * program (the process-arrival-pattern seed's chapter 3 instrumentation).
 *
 * LD_PRELOAD it with WEFT_PROFILE=DIR set: every blocking collective the
 * program makes is recorded in memory (collective, datatype, count, bytes,
 * communicator, its sequence number there, arrival and exit time) and each
 * rank writes DIR/rank-R.pap at MPI_Finalize (src/core/pap_trace.h), for
 * `weft pap report DIR`.  Nothing is sent while recording; at first use of
 * a communicator its members agree on an id (one extra allreduce, inside a
 * collective they make anyway).  Clocks: after a barrier at MPI_Init, each
 * node takes its lowest rank's CLOCK_MONOTONIC reading as the origin (one
 * clock per node, so times agree exactly inside a node and up to the
 * barrier's skew across nodes, as in the seed).  Without WEFT_PROFILE it
 * records nothing.  Non-blocking collectives are not recorded (their
 * arrival is at the start, their exit at a wait the profiler does not
 * follow).  A block given MPI_IN_PLACE is recorded by the arguments
 * that describe it (the receive side), so every rank records the same
 * size.  Fortran programs' calls reach these through fortran.c and
 * fortran_prof.c. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <mpi.h>

#include "../src/core/pap_trace.h"

static struct {
    bool on;
    char dir[PATH_MAX];
    int rank, size, node;
    int64_t t0;
    pap_call_t *calls;
    size_t n, cap;
    int keyval;
    int next_id;
} prof = {.keyval = MPI_KEYVAL_INVALID};

/* per communicator: its agreed name and how many collectives it has had */
typedef struct comm_info {
    char name[32];
    uint64_t seq;
} comm_info_t;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int free_info(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm, (void)key, (void)extra;
    free(val);
    return MPI_SUCCESS;
}

static void start(void)
{
    const char *dir = getenv("WEFT_PROFILE");
    if (!dir || !*dir || strlen(dir) >= sizeof prof.dir - 32)
        return;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "libweft-prof: WEFT_PROFILE=%s: cannot create the directory: %s; not "
                        "profiling\n", dir, strerror(errno));
        return;
    }
    snprintf(prof.dir, sizeof prof.dir, "%s", dir);
    PMPI_Comm_rank(MPI_COMM_WORLD, &prof.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &prof.size);
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, prof.rank, MPI_INFO_NULL, &node);
    PMPI_Allreduce(&prof.rank, &prof.node, 1, MPI_INT, MPI_MIN, node);
    PMPI_Barrier(MPI_COMM_WORLD);
    int64_t t0 = now_ns();
    PMPI_Bcast(&t0, 1, MPI_INT64_T, 0, node);
    PMPI_Comm_free(&node);
    prof.t0 = t0;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_info, &prof.keyval, NULL);
    prof.on = true;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start();
    return rc;
}

/* The communicator's record: created at its first collective, when its
 * members agree on an id (the largest of their next ids) and name it with
 * the world rank of its rank 0. */
static comm_info_t *info_of(MPI_Comm comm)
{
    void *val;
    int found = 0;
    PMPI_Comm_get_attr(comm, prof.keyval, &val, &found);
    if (found)
        return val;
    comm_info_t *ci = calloc(1, sizeof *ci);
    if (!ci)
        return NULL;
    int id = prof.next_id, agreed = id, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (!inter)
        PMPI_Allreduce(&id, &agreed, 1, MPI_INT, MPI_MAX, comm);
    prof.next_id = agreed + 1;
    int zero = 0, root = -1;
    MPI_Group g, wg;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, 1, &zero, wg, &root);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    snprintf(ci->name, sizeof ci->name, "m%d.%d", agreed, root);
    PMPI_Comm_set_attr(comm, prof.keyval, ci);
    return ci;
}

/* The trace's name of an MPI op (pap_trace.h). */
static void op_name(MPI_Op op, char *out, size_t n)
{
    static const struct {
        MPI_Op op;
        const char *name;
    } known[] = {{MPI_SUM, "sum"},   {MPI_PROD, "prod"}, {MPI_MIN, "min"},
                 {MPI_MAX, "max"},   {MPI_BAND, "band"}, {MPI_BOR, "bor"},
                 {MPI_BXOR, "bxor"}, {MPI_LAND, "land"}, {MPI_LOR, "lor"}};
    if (op == MPI_OP_NULL) {
        snprintf(out, n, "-");
        return;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (op == known[i].op) {
            snprintf(out, n, "%s", known[i].name);
            return;
        }
    if (op == MPI_MINLOC || op == MPI_MAXLOC || op == MPI_REPLACE || op == MPI_NO_OP) {
        snprintf(out, n, "other");
        return;
    }
    int commute = 1;
    PMPI_Op_commutative(op, &commute);
    snprintf(out, n, "%s", commute ? "user_c" : "user_nc");
}

static void note(const char *coll, MPI_Datatype dt, long long count, MPI_Comm comm,
                 int64_t arrive, MPI_Op op, int root)
{
    int64_t exit_ns = now_ns() - prof.t0;
    comm_info_t *ci = info_of(comm);
    if (!ci)
        return;
    pap_call_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.coll, sizeof c.coll, "%.31s", coll);
    int len = 0, tsize = 0;
    char name[MPI_MAX_OBJECT_NAME] = "";
    if (dt != MPI_DATATYPE_NULL) {
        PMPI_Type_get_name(dt, name, &len);
        PMPI_Type_size(dt, &tsize);
    }
    for (char *p = name; *p; p++)
        if (*p == ' ')
            *p = '_';
    snprintf(c.dtype, sizeof c.dtype, "%.31s", name[0] ? name : "none");
    c.count = count > 0 ? (uint64_t)count : 0;
    c.bytes = c.count * (uint64_t)(tsize > 0 ? tsize : 0);
    snprintf(c.comm, sizeof c.comm, "%.31s", ci->name);
    c.seq = ci->seq++;
    op_name(op, c.op, sizeof c.op);
    c.root = root;
    c.arrive_ns = arrive;
    c.exit_ns = exit_ns;
    if (prof.n == prof.cap) {
        size_t ncap = prof.cap ? 2 * prof.cap : 4096;
        pap_call_t *p = realloc(prof.calls, ncap * sizeof *p);
        if (!p)
            return;
        prof.calls = p, prof.cap = ncap;
    }
    prof.calls[prof.n++] = c;
}

#define ARRIVE() int64_t arrive_ = prof.on ? now_ns() - prof.t0 : 0
#define NOTE(coll, dt, count, comm, op, root)                                                    \
    do {                                                                                         \
        if (prof.on && rc == MPI_SUCCESS)                                                        \
            note(coll, dt, count, comm, arrive_, op, root);                                      \
    } while (0)

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Allreduce(sb, rb, count, dt, op, comm);
    NOTE("allreduce", dt, count, comm, op, -1);
    return rc;
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Reduce(sb, rb, count, dt, op, root, comm);
    NOTE("reduce", dt, count, comm, op, root);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Bcast(buf, count, dt, root, comm);
    NOTE("bcast", dt, count, comm, MPI_OP_NULL, root);
    return rc;
}

int MPI_Barrier(MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Barrier(comm);
    NOTE("barrier", MPI_DATATYPE_NULL, 0, comm, MPI_OP_NULL, -1);
    return rc;
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
                  MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Allgather(sb, sc, st, rb, rc_, rt, comm);
    NOTE("allgather", rt, rc_, comm, MPI_OP_NULL, -1);
    return rc;
}

/* the elements of a vector of counts, one per rank: what every rank of a
 * v-collective shares */
static long long total_of(const int *counts, MPI_Comm comm)
{
    long long total = 0;
    int size = 0;
    if (PMPI_Comm_size(comm, &size) == MPI_SUCCESS)
        for (int r = 0; r < size; r++)
            total += counts[r];
    return total;
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int *rcs,
                   const int *displs, MPI_Datatype rt, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm);
    /* the whole gathered vector, which every rank shares (its own block
     * differs from rank to rank, and is ignored with MPI_IN_PLACE) */
    NOTE("allgatherv", rt, prof.on && rc == MPI_SUCCESS ? total_of(rcs, comm) : 0, comm,
         MPI_OP_NULL, -1);
    return rc;
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
                 MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Alltoall(sb, sc, st, rb, rc_, rt, comm);
    NOTE("alltoall", sb == MPI_IN_PLACE ? rt : st, sb == MPI_IN_PLACE ? rc_ : sc, comm,
         MPI_OP_NULL, -1);
    return rc;
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
               int root, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Gather(sb, sc, st, rb, rc_, rt, root, comm);
    NOTE("gather", sb == MPI_IN_PLACE ? rt : st, sb == MPI_IN_PLACE ? rc_ : sc, comm,
         MPI_OP_NULL, root);
    return rc;
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt,
                int root, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Scatter(sb, sc, st, rb, rc_, rt, root, comm);
    NOTE("scatter", rb == MPI_IN_PLACE ? st : rt, rb == MPI_IN_PLACE ? sc : rc_, comm,
         MPI_OP_NULL, root);
    return rc;
}

int MPI_Reduce_scatter_block(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Reduce_scatter_block(sb, rb, count, dt, op, comm);
    NOTE("reduce_scatter", dt, count, comm, op, -1);
    return rc;
}

/* recorded by the whole vector, which every rank shares (its own block
 * may differ from rank to rank) */
int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm);
    NOTE("reduce_scatterv", dt, prof.on && rc == MPI_SUCCESS ? total_of(rcs, comm) : 0, comm, op,
         -1);
    return rc;
}

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    ARRIVE();
    int rc = PMPI_Scan(sb, rb, count, dt, op, comm);
    NOTE("scan", dt, count, comm, op, -1);
    return rc;
}

int MPI_Finalize(void)
{
    if (prof.on) {
        prof.on = false;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/rank-%d.pap", prof.dir, prof.rank);
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "libweft-prof: cannot write %s: %s\n", path, strerror(errno));
        } else {
            pap_trace_header(f, prof.rank, prof.size, prof.node);
            for (size_t i = 0; i < prof.n; i++)
                pap_trace_call(f, &prof.calls[i]);
            if (fclose(f))
                fprintf(stderr, "libweft-prof: writing %s failed\n", path);
        }
        free(prof.calls);
        prof.calls = NULL;
        if (prof.keyval != MPI_KEYVAL_INVALID)
            PMPI_Comm_free_keyval(&prof.keyval);
    }
    return PMPI_Finalize();
}
