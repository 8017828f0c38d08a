/* xport_mpi.h — opening the MPI transport (only built with MPI). */
#ifndef WEFT_XPORT_MPI_H
#define WEFT_XPORT_MPI_H

#include <mpi.h>

#include "xport.h"

/* Duplicates comm and returns a transport over the duplicate. */
int xport_mpi_open(MPI_Comm comm, xport_t **out);

#endif
