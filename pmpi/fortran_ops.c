/* fortran_ops.c — the drop-in's Fortran MPI_OP_CREATE and MPI_OP_FREE
 * (mpif.h, `use mpi`): the op's function recorded, so that reductions on it
 * run in weft, called as MPI calls a Fortran op.  `use mpi_f08` makes its
 * ops through pmpi_op_create_, the profiling name the drop-in leaves to the
 * tools that use it: reductions on those go to MPI. */
#include <mpi.h>

#include "dropin.h"
#include "fortran_args.h"

typedef void op_create_f(void (*)(void), MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_op_create_(void (*function)(void), MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror)
{
    MPI_Fint rc = MPI_SUCCESS;
    /* the library makes the op, marked as Fortran's for the calls it serves */
    FORWARD(op_create_f, "mpi_op_create_", (function, commute, op, &rc));
    /* Recorded only where this file serves the reductions: elsewhere the
     * library's binding may reach interpose.c's MPI_Op_create, which records
     * the op itself, and a second record would outlive MPI_OP_FREE. */
    if (rc == MPI_SUCCESS && fortran_served())
        weft_dropin_record_op(PMPI_Op_f2c(*op), function, *commute != 0, 1);
    fortran_ierror(ierror, rc);
}
SPELLED_ALSO(mpi_op_create, MPI_OP_CREATE, ompi_op_create_f);

typedef void op_free_f(MPI_Fint *, MPI_Fint *);
void mpi_op_free_(MPI_Fint *op, MPI_Fint *ierror)
{
    MPI_Op o;
    if (fortran_served() && fortran_op(op, &o))
        weft_dropin_forget_op(o);
    FORWARD(op_free_f, "mpi_op_free_", (op, ierror));
}
SPELLED_ALSO(mpi_op_free, MPI_OP_FREE, ompi_op_free_f);
