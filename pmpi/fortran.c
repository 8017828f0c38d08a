/* fortran.c — the drop-in's Fortran entry points (mpif.h, `use mpi`,
 * `use mpi_f08`).
 *
 * Open MPI's Fortran bindings call the PMPI_ functions directly, so the C
 * entry points of interpose.c never see a Fortran program's collectives:
 * mpif.h and `use mpi` call mpi_allreduce_ (or its other spellings), `use
 * mpi_f08` calls ompi_allreduce_f.  This file defines those names.  Each
 * turns the Fortran handles into C ones (MPI_Comm_f2c and its kin) and
 * Fortran's MPI_IN_PLACE and MPI_BOTTOM (the addresses of Open MPI's
 * common blocks mpi_fortran_in_place and mpi_fortran_bottom) into C's, and
 * calls the C entry point, which serves the call in weft or hands it to
 * the MPI library's C function as it does for C programs.  The error code
 * goes to ierror, after the communicator's error handler saw it, as the
 * MPI library's own binding does.
 *
 * Where Open MPI's sentinels are not in the process (another MPI library,
 * whose Fortran MPI_IN_PLACE this file cannot recognise), or a handle does
 * not convert, the call goes to the MPI library's own Fortran function,
 * found after this library (RTLD_NEXT): exactly what runs without the
 * drop-in.
 *
 * User ops: MPI_OP_CREATE from mpif.h or `use mpi` is recorded with its
 * function, which weft then calls as MPI calls a Fortran op (length and
 * datatype as Fortran integers).  `use mpi_f08` creates ops through
 * pmpi_op_create_, the profiling name this file must not take, so its
 * ops stay unknown and reductions on them go to MPI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "dropin.h"

/* ---- Fortran's sentinels ---- */

enum { SPELLINGS = 4 }; /* a common block's name as compilers spell it */
static void *in_place_f[SPELLINGS], *bottom_f[SPELLINGS];
static int sentinels_found;
static pthread_once_t sentinels_once = PTHREAD_ONCE_INIT;

static void find_sentinels(void)
{
    static const char *const in_place[SPELLINGS] = {"mpi_fortran_in_place_",
                                                    "mpi_fortran_in_place__",
                                                    "mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE"};
    static const char *const bottom[SPELLINGS] = {"mpi_fortran_bottom_", "mpi_fortran_bottom__",
                                                  "mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM"};
    int ip = 0, bt = 0;
    for (int i = 0; i < SPELLINGS; i++) {
        in_place_f[i] = dlsym(RTLD_DEFAULT, in_place[i]);
        bottom_f[i] = dlsym(RTLD_DEFAULT, bottom[i]);
        ip |= in_place_f[i] != NULL, bt |= bottom_f[i] != NULL;
    }
    sentinels_found = ip && bt;
}

/* Whether this file can read the Fortran program's buffers: only then do
 * its calls go through the C entry points. */
static int weft_serves_fortran(void)
{
    pthread_once(&sentinels_once, find_sentinels);
    return sentinels_found;
}

static int is_one_of(const void *buf, void *const spellings[SPELLINGS])
{
    for (int i = 0; i < SPELLINGS; i++)
        if (spellings[i] && buf == spellings[i])
            return 1;
    return 0;
}

/* A Fortran buffer argument as C passes it. */
static void *c_buffer(void *buf)
{
    if (is_one_of(buf, in_place_f))
        return MPI_IN_PLACE;
    if (is_one_of(buf, bottom_f))
        return MPI_BOTTOM;
    return buf;
}

/* ---- handles ----
 * Open MPI's f2c functions give a null pointer for a handle out of range,
 * which the C entry points would pass on; such calls go to the MPI
 * library's Fortran binding instead, which reports them. */

static int c_comm(const MPI_Fint *f, MPI_Comm *c)
{
    *c = PMPI_Comm_f2c(*f);
    return *c != (MPI_Comm)0;
}

static int c_type(const MPI_Fint *f, MPI_Datatype *c)
{
    *c = PMPI_Type_f2c(*f);
    return *c != (MPI_Datatype)0;
}

static int c_op(const MPI_Fint *f, MPI_Op *c)
{
    *c = PMPI_Op_f2c(*f);
    return *c != (MPI_Op)0;
}

static void set_ierror(MPI_Fint *ierror, int rc)
{
    if (ierror) /* mpi_f08 may pass none */
        *ierror = (MPI_Fint)rc;
}

/* The MPI library's own Fortran function `name`, looked up once. */
static void *library_function(void **cache, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        if (!fn) {
            fprintf(stderr, "weft-mpi: the MPI library has no Fortran function %s\n", name);
            abort(); /* the program was linked against it: nothing sane remains */
        }
        __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

/* Calls the library's function `name` of C type `type` with `args`. */
#define FORWARD(type, name, args)                                                                  \
    do {                                                                                           \
        static void *fn_;                                                                          \
        ((type *)library_function(&fn_, name)) args;                                               \
    } while (0)

/* The other spellings of a Fortran name, and Open MPI's C name that its
 * mpi_f08 module calls, all for one definition. */
#define SPELLED_ALSO(lower, upper, ompi)                                                           \
    extern __typeof__(lower##_) lower##__ __attribute__((alias(#lower "_")));                      \
    extern __typeof__(lower##_) lower __attribute__((alias(#lower "_")));                          \
    extern __typeof__(lower##_) upper __attribute__((alias(#lower "_")));                          \
    extern __typeof__(lower##_) ompi __attribute__((alias(#lower "_")))

/* ---- the collectives ---- */

typedef void allreduce_f(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                         MPI_Fint *);
void mpi_allreduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Op o;
    if (!weft_serves_fortran() || !c_comm(comm, &c) || !c_type(datatype, &t) || !c_op(op, &o)) {
        FORWARD(allreduce_f, "mpi_allreduce_",
                (sendbuf, recvbuf, count, datatype, op, comm, ierror));
        return;
    }
    set_ierror(ierror, MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, t, o, c));
}
SPELLED_ALSO(mpi_allreduce, MPI_ALLREDUCE, ompi_allreduce_f);

typedef void reduce_f(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                      MPI_Fint *);
void mpi_reduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                 MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Op o;
    if (!weft_serves_fortran() || !c_comm(comm, &c) || !c_type(datatype, &t) || !c_op(op, &o)) {
        FORWARD(reduce_f, "mpi_reduce_",
                (sendbuf, recvbuf, count, datatype, op, root, comm, ierror));
        return;
    }
    set_ierror(ierror, MPI_Reduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, t, o, *root, c));
}
SPELLED_ALSO(mpi_reduce, MPI_REDUCE, ompi_reduce_f);

typedef void bcast_f(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_bcast_(void *buffer, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    if (!weft_serves_fortran() || !c_comm(comm, &c) || !c_type(datatype, &t)) {
        FORWARD(bcast_f, "mpi_bcast_", (buffer, count, datatype, root, comm, ierror));
        return;
    }
    set_ierror(ierror, MPI_Bcast(c_buffer(buffer), *count, t, *root, c));
}
SPELLED_ALSO(mpi_bcast, MPI_BCAST, ompi_bcast_f);

typedef allreduce_f reduce_scatter_block_f;
void mpi_reduce_scatter_block_(void *sendbuf, void *recvbuf, MPI_Fint *recvcount,
                               MPI_Fint *datatype, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Op o;
    if (!weft_serves_fortran() || !c_comm(comm, &c) || !c_type(datatype, &t) || !c_op(op, &o)) {
        FORWARD(reduce_scatter_block_f, "mpi_reduce_scatter_block_",
                (sendbuf, recvbuf, recvcount, datatype, op, comm, ierror));
        return;
    }
    set_ierror(ierror,
               MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount, t, o, c));
}
SPELLED_ALSO(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, ompi_reduce_scatter_block_f);

typedef void allgather_f(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                         MPI_Fint *);
void mpi_allgather_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                    MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype st, rt;
    void *sbuf = weft_serves_fortran() ? c_buffer(sendbuf) : sendbuf;
    /* with MPI_IN_PLACE the send type is ignored, and may be any integer */
    int st_ok = sbuf == MPI_IN_PLACE ? (st = MPI_DATATYPE_NULL, 1) : c_type(sendtype, &st);
    if (!weft_serves_fortran() || !c_comm(comm, &c) || !st_ok || !c_type(recvtype, &rt)) {
        FORWARD(allgather_f, "mpi_allgather_",
                (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierror));
        return;
    }
    set_ierror(ierror, MPI_Allgather(sbuf, *sendcount, st, c_buffer(recvbuf), *recvcount, rt, c));
}
SPELLED_ALSO(mpi_allgather, MPI_ALLGATHER, ompi_allgather_f);

typedef void barrier_f(MPI_Fint *, MPI_Fint *);
void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    if (!weft_serves_fortran() || !c_comm(comm, &c)) {
        FORWARD(barrier_f, "mpi_barrier_", (comm, ierror));
        return;
    }
    set_ierror(ierror, MPI_Barrier(c));
}
SPELLED_ALSO(mpi_barrier, MPI_BARRIER, ompi_barrier_f);

/* ---- ops and finalize ---- */

typedef void op_create_f(void (*)(void), MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_op_create_(void (*function)(void), MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror)
{
    MPI_Fint rc = MPI_SUCCESS;
    /* the library makes the op, marked as Fortran's for the calls it serves */
    FORWARD(op_create_f, "mpi_op_create_", (function, commute, op, &rc));
    /* Recorded only where this file serves the reductions: elsewhere the
     * library's binding may reach interpose.c's MPI_Op_create, which records
     * the op itself, and a second record would outlive MPI_OP_FREE. */
    if (rc == MPI_SUCCESS && weft_serves_fortran())
        weft_dropin_record_op(PMPI_Op_f2c(*op), function, *commute != 0, 1);
    set_ierror(ierror, rc);
}
SPELLED_ALSO(mpi_op_create, MPI_OP_CREATE, ompi_op_create_f);

typedef void op_free_f(MPI_Fint *, MPI_Fint *);
void mpi_op_free_(MPI_Fint *op, MPI_Fint *ierror)
{
    MPI_Op o;
    if (weft_serves_fortran() && c_op(op, &o))
        weft_dropin_forget_op(o);
    FORWARD(op_free_f, "mpi_op_free_", (op, ierror));
}
SPELLED_ALSO(mpi_op_free, MPI_OP_FREE, ompi_op_free_f);

/* weft's communicators of MPI_COMM_WORLD and MPI_COMM_SELF are freed while
 * MPI still works, and WEFT_VERBOSE's log printed, by the C MPI_Finalize. */
typedef void finalize_f(MPI_Fint *);
void mpi_finalize_(MPI_Fint *ierror)
{
    if (!weft_serves_fortran()) {
        FORWARD(finalize_f, "mpi_finalize_", (ierror));
        return;
    }
    set_ierror(ierror, MPI_Finalize());
}
SPELLED_ALSO(mpi_finalize, MPI_FINALIZE, ompi_finalize_f);
