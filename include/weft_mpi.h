/* weft_mpi.h — weft over MPI: build a weft communicator on an MPI
 * communicator, so weft's algorithms run wherever MPI runs (mpirun, srun).
 * Installed when weft is built with MPI. */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <mpi.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A weft communicator with the ranks of comm (same rank numbers).  weft
 * duplicates comm, so its traffic never meets the application's.  Needs
 * MPI_Init (weft_init is not needed).  Free it with weft_comm_free before
 * MPI_Finalize.  Ranks that share a node also get weft's shared-memory
 * transport (set WEFT_NODE_SIZE=k to group every k consecutive ranks into a
 * virtual node instead, for testing); messages between them go through it,
 * the rest through MPI.  It is collective over comm: a rank that refuses
 * the call (newcomm NULL: WEFT_EINVAL) still takes part, and every other
 * rank then fails with WEFT_EPEER naming it. */
WEFT_API weft_err_t weft_comm_from_mpi(MPI_Comm comm, weft_comm_t *newcomm);

#ifdef __cplusplus
}
#endif
#endif
