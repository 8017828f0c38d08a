/* xport_mpi.h — opening the MPI transport (only built with MPI). */
#ifndef WEFT_XPORT_MPI_H
#define WEFT_XPORT_MPI_H

#include <mpi.h>

#include "xport.h"

/* Duplicates comm and returns a transport over the duplicate. */
int xport_mpi_open(MPI_Comm comm, xport_t **out);
/* The MPI communicator of an MPI transport. */
MPI_Comm xport_mpi_comm(xport_t *x);
/* Shared memory inside nodes, MPI between them, over the MPI transport mx
 * (which it takes over; *out == mx when no node has two ranks).  Node ids
 * of every rank are returned in *ids (malloc'd). */
int xport_twolevel_open(xport_t *mx, int node_size, int **ids, xport_t **out);

#endif
