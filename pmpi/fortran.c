/* fortran.c — Fortran entry points (mpif.h, `use mpi`, `use mpi_f08`) for
 * the collectives of both preloaded libraries: the drop-in (libweft-mpi.so)
 * and the arrival-pattern profiler (libweft-prof.so).
 *
 * Open MPI's Fortran bindings call the PMPI_ functions directly, so C entry
 * points never see a Fortran program's collectives: mpif.h and `use mpi`
 * call mpi_allreduce_ (or its other spellings), `use mpi_f08` calls
 * ompi_allreduce_f.  This file defines those names.  Each turns the Fortran
 * handles into C ones and Fortran's MPI_IN_PLACE and MPI_BOTTOM into C's
 * (fortran_args.c), and calls the C entry point of the library it is
 * linked into (interpose.c's, which serves the call in weft or hands it to
 * MPI; profile.c's, which records it).  The error code goes to ierror,
 * after the communicator's error handler saw it, as the MPI library's own
 * binding does.
 *
 * Where Open MPI's sentinels are not in the process (another MPI library,
 * whose Fortran MPI_IN_PLACE cannot be recognised), or a handle does not
 * convert, the call goes to the MPI library's own Fortran function, found
 * after this library (RTLD_NEXT): exactly what runs without it.
 * fortran_ops.c (the drop-in's user ops) and fortran_prof.c (the rest of
 * what the profiler records) add to these. */
#include <mpi.h>

#include "fortran_args.h"

/* ---- the collectives ---- */

/* a reduction's handles: whether this file serves it, converted */
static int reduction_handles(const MPI_Fint *comm, const MPI_Fint *datatype, const MPI_Fint *op,
                             MPI_Comm *c, MPI_Datatype *t, MPI_Op *o)
{
    return fortran_served() && fortran_comm(comm, c) && fortran_type(datatype, t) &&
           fortran_op(op, o);
}

/* allreduce and reduce_scatter_block, and the profiler's scan: one C
 * signature, one Fortran one */
void fortran_reduction(reduction_c *c_call, void **library, const char *name, void *sendbuf,
                       void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                       MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Op o;
    if (!reduction_handles(comm, datatype, op, &c, &t, &o)) {
        ((reduction_f *)fortran_library(library, name))(sendbuf, recvbuf, count, datatype, op, comm,
                                                        ierror);
        return;
    }
    fortran_ierror(ierror,
                   c_call(fortran_buffer(sendbuf), fortran_buffer(recvbuf), *count, t, o, c));
}

void mpi_allreduce_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *ierror)
{
    static void *library;
    fortran_reduction(MPI_Allreduce, &library, "mpi_allreduce_", sendbuf, recvbuf, count, datatype,
                      op, comm, ierror);
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
    if (!reduction_handles(comm, datatype, op, &c, &t, &o)) {
        FORWARD(reduce_f, "mpi_reduce_",
                (sendbuf, recvbuf, count, datatype, op, root, comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Reduce(fortran_buffer(sendbuf), fortran_buffer(recvbuf), *count, t,
                                      o, *root, c));
}
SPELLED_ALSO(mpi_reduce, MPI_REDUCE, ompi_reduce_f);

typedef void bcast_f(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_bcast_(void *buffer, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    if (!fortran_served() || !fortran_comm(comm, &c) || !fortran_type(datatype, &t)) {
        FORWARD(bcast_f, "mpi_bcast_", (buffer, count, datatype, root, comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Bcast(fortran_buffer(buffer), *count, t, *root, c));
}
SPELLED_ALSO(mpi_bcast, MPI_BCAST, ompi_bcast_f);

void mpi_reduce_scatter_block_(void *sendbuf, void *recvbuf, MPI_Fint *recvcount,
                               MPI_Fint *datatype, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierror)
{
    static void *library;
    fortran_reduction(MPI_Reduce_scatter_block, &library, "mpi_reduce_scatter_block_", sendbuf,
                      recvbuf, recvcount, datatype, op, comm, ierror);
}
SPELLED_ALSO(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, ompi_reduce_scatter_block_f);

typedef void reduce_scatter_f(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                              MPI_Fint *);
void mpi_reduce_scatter_(void *sendbuf, void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *datatype,
                         MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype t;
    MPI_Op o;
    if (!reduction_handles(comm, datatype, op, &c, &t, &o)) {
        FORWARD(reduce_scatter_f, "mpi_reduce_scatter_",
                (sendbuf, recvbuf, recvcounts, datatype, op, comm, ierror));
        return;
    }
    /* a Fortran INTEGER array is an int array where MPI_Fint is int */
    _Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not int");
    fortran_ierror(ierror, MPI_Reduce_scatter(fortran_buffer(sendbuf), fortran_buffer(recvbuf),
                                              recvcounts, t, o, c));
}
SPELLED_ALSO(mpi_reduce_scatter, MPI_REDUCE_SCATTER, ompi_reduce_scatter_f);

/* allgather, and the profiler's alltoall: one C signature, one Fortran one */
void fortran_block_exchange(block_exchange_c *c_call, void **library, const char *name,
                            void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                            MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm,
                            MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype st, rt;
    void *sbuf = fortran_served() ? fortran_buffer(sendbuf) : sendbuf;
    if (!fortran_served() || !fortran_comm(comm, &c) ||
        !fortran_type_if(sbuf != MPI_IN_PLACE, sendtype, &st) || !fortran_type(recvtype, &rt)) {
        ((block_exchange_f *)fortran_library(library, name))(sendbuf, sendcount, sendtype, recvbuf,
                                                             recvcount, recvtype, comm, ierror);
        return;
    }
    fortran_ierror(ierror,
                   c_call(sbuf, *sendcount, st, fortran_buffer(recvbuf), *recvcount, rt, c));
}

void mpi_allgather_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                    MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierror)
{
    static void *library;
    fortran_block_exchange(MPI_Allgather, &library, "mpi_allgather_", sendbuf, sendcount, sendtype,
                           recvbuf, recvcount, recvtype, comm, ierror);
}
SPELLED_ALSO(mpi_allgather, MPI_ALLGATHER, ompi_allgather_f);

typedef void allgatherv_f(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *,
                          MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_allgatherv_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                     MPI_Fint *recvcounts, MPI_Fint *displs, MPI_Fint *recvtype, MPI_Fint *comm,
                     MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype st, rt;
    void *sbuf = fortran_served() ? fortran_buffer(sendbuf) : sendbuf;
    if (!fortran_served() || !fortran_comm(comm, &c) ||
        !fortran_type_if(sbuf != MPI_IN_PLACE, sendtype, &st) || !fortran_type(recvtype, &rt)) {
        FORWARD(
            allgatherv_f, "mpi_allgatherv_",
            (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Allgatherv(sbuf, *sendcount, st, fortran_buffer(recvbuf), recvcounts,
                                          displs, rt, c));
}
SPELLED_ALSO(mpi_allgatherv, MPI_ALLGATHERV, ompi_allgatherv_f);

typedef void barrier_f(MPI_Fint *, MPI_Fint *);
void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierror)
{
    MPI_Comm c;
    if (!fortran_served() || !fortran_comm(comm, &c)) {
        FORWARD(barrier_f, "mpi_barrier_", (comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Barrier(c));
}
SPELLED_ALSO(mpi_barrier, MPI_BARRIER, ompi_barrier_f);

/* weft's communicators of MPI_COMM_WORLD and MPI_COMM_SELF are freed while
 * MPI still works, and WEFT_VERBOSE's log printed, by the C MPI_Finalize. */
typedef void finalize_f(MPI_Fint *);
void mpi_finalize_(MPI_Fint *ierror)
{
    if (!fortran_served()) {
        FORWARD(finalize_f, "mpi_finalize_", (ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Finalize());
}
SPELLED_ALSO(mpi_finalize, MPI_FINALIZE, ompi_finalize_f);
