/* xport_mpi.h — opening the MPI transport (only built with MPI). */
#ifndef WEFT_XPORT_MPI_H
#define WEFT_XPORT_MPI_H

#include <mpi.h>

#include "../core/tool_api.h"
#include "xport.h"

/* Whether weft can stand on comm (MPI initialised, an intracommunicator);
 * installs the hook that drives MPI's progress while weft waits. */
int xport_mpi_usable(MPI_Comm comm);
/* Where every rank of comm is on one node (this machine, or one virtual
 * node of node_size ranks): its shared-memory transport (one rank: the self
 * transport), set up by collectives on comm itself and creating no MPI
 * communicator; *out is NULL (and *ids too) where comm spans several
 * nodes.  Node ids (all 0) in *ids (malloc'd). */
int xport_one_node_open(MPI_Comm comm, int node_size, int **ids, xport_t **out);
/* The MPI_COMM_WORLD rank of every rank of comm (wr: comm's size), from
 * its group alone; WEFT_ENOTSUP when one is outside the world. */
int xport_mpi_world_ranks(MPI_Comm comm, int *wr);
/* Duplicates comm (which passed xport_mpi_usable) and returns a transport
 * over the duplicate. */
int xport_mpi_open(MPI_Comm comm, xport_t **out);
/* The MPI communicator of an MPI transport. */
MPI_Comm xport_mpi_comm(xport_t *x);
/* fn runs first in MPI_Finalize (the core's: its communicators' nodes
 * learn this rank is finalizing). */
void xport_mpi_at_finalize(void (*fn)(void));
/* weft_comm_from_mpi made a communicator on the MPI transport x: where
 * x is the job's (MPI_COMM_WORLD's twin), MPI_Finalize waits for every
 * rank there, answering peers' announcements meanwhile (mpi.c). */
void xport_mpi_comm_made(xport_t *x);
/* The lock held around the MPI transport x's use where another transport
 * took it over (its own until then); the other communicators' stalled
 * waits take it before they read x's announcements. */
void xport_mpi_set_lock(xport_t *x, pthread_mutex_t *lock);
/* How many communicators the program freed still answer announcements
 * here (mpi.c: FREED_LINGER, OWED_LINGER, the job's twin); for tests. */
WEFT_TOOL_API int xport_mpi_lingering(void);
/* Shared memory inside nodes, MPI between them, over the MPI transport mx
 * (which it takes over; *out == mx when no node has two ranks).  Node ids
 * of every rank are returned in *ids (malloc'd). */
int xport_twolevel_open(xport_t *mx, int node_size, int **ids, xport_t **out);

#endif
