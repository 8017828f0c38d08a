/* fortran_prof.c — the profiler's Fortran entry points beyond fortran.c's:
 * MPI_INIT and MPI_INIT_THREAD (where the profiler starts its clock) and
 * the collectives it records that the drop-in does not serve (alltoall,
 * gather, scatter, scan).  Same conversions, same fallback to the
 * MPI library's own binding, as fortran.c. */
#include <mpi.h>

#include "fortran_args.h"

typedef void init_f(MPI_Fint *);
void mpi_init_(MPI_Fint *ierror)
{
    if (!fortran_served()) {
        FORWARD(init_f, "mpi_init_", (ierror));
        return;
    }
    int argc = 0; /* Fortran has no argv to give: as Open MPI's binding */
    char **argv = NULL;
    fortran_ierror(ierror, MPI_Init(&argc, &argv));
}
SPELLED_ALSO(mpi_init, MPI_INIT, ompi_init_f);

typedef void init_thread_f(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
    if (!fortran_served()) {
        FORWARD(init_thread_f, "mpi_init_thread_", (required, provided, ierror));
        return;
    }
    int argc = 0, prov = MPI_THREAD_SINGLE;
    char **argv = NULL;
    int rc = MPI_Init_thread(&argc, &argv, *required, &prov);
    *provided = prov;
    fortran_ierror(ierror, rc);
}
SPELLED_ALSO(mpi_init_thread, MPI_INIT_THREAD, ompi_init_thread_f);

void mpi_alltoall_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                   MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierror)
{
    static void *library;
    fortran_block_exchange(MPI_Alltoall, &library, "mpi_alltoall_", sendbuf, sendcount, sendtype,
                           recvbuf, recvcount, recvtype, comm, ierror);
}
SPELLED_ALSO(mpi_alltoall, MPI_ALLTOALL, ompi_alltoall_f);

typedef void rooted_f(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                      MPI_Fint *, MPI_Fint *);
static int is_root(MPI_Comm c, const MPI_Fint *root)
{
    int rank = -1;
    PMPI_Comm_rank(c, &rank);
    return rank == *root;
}

void mpi_gather_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                 MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *root, MPI_Fint *comm,
                 MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype st, rt;
    void *sbuf = fortran_served() ? fortran_buffer(sendbuf) : sendbuf;
    /* the receive side is the root's alone */
    if (!fortran_served() || !fortran_comm(comm, &c) ||
        !fortran_type_if(sbuf != MPI_IN_PLACE, sendtype, &st) ||
        !fortran_type_if(is_root(c, root), recvtype, &rt)) {
        FORWARD(rooted_f, "mpi_gather_",
                (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Gather(sbuf, *sendcount, st, fortran_buffer(recvbuf), *recvcount, rt,
                                      *root, c));
}
SPELLED_ALSO(mpi_gather, MPI_GATHER, ompi_gather_f);

void mpi_scatter_(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                  MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *root, MPI_Fint *comm,
                  MPI_Fint *ierror)
{
    MPI_Comm c;
    MPI_Datatype st, rt;
    void *rbuf = fortran_served() ? fortran_buffer(recvbuf) : recvbuf;
    /* the send side is the root's alone */
    if (!fortran_served() || !fortran_comm(comm, &c) ||
        !fortran_type_if(is_root(c, root), sendtype, &st) ||
        !fortran_type_if(rbuf != MPI_IN_PLACE, recvtype, &rt)) {
        FORWARD(rooted_f, "mpi_scatter_",
                (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierror));
        return;
    }
    fortran_ierror(ierror, MPI_Scatter(fortran_buffer(sendbuf), *sendcount, st, rbuf, *recvcount,
                                       rt, *root, c));
}
SPELLED_ALSO(mpi_scatter, MPI_SCATTER, ompi_scatter_f);

void mpi_scan_(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
               MPI_Fint *comm, MPI_Fint *ierror)
{
    static void *library;
    fortran_reduction(MPI_Scan, &library, "mpi_scan_", sendbuf, recvbuf, count, datatype, op, comm,
                      ierror);
}
SPELLED_ALSO(mpi_scan, MPI_SCAN, ompi_scan_f);
