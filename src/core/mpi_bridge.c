/* mpi_bridge.c — weft_comm_from_mpi (weft_mpi.h): a weft communicator over
 * an MPI communicator.  Built only with MPI. */
#include <stdlib.h>

#include "../xport/xport_mpi.h"
#include "comm.h"
#include "weft_mpi.h"

weft_err_t weft_comm_from_mpi(MPI_Comm comm, weft_comm_t *newcomm)
{
    if (!newcomm)
        return weft_error(WEFT_EINVAL, "weft_comm_from_mpi: newcomm is NULL");
    *newcomm = NULL;
    pthread_mutex_lock(&weft_g.lock);
    int rc = lib_init();
    pthread_mutex_unlock(&weft_g.lock);
    if (rc)
        return rc;
    if ((rc = xport_mpi_usable(comm)))
        return rc;
    /* On one node (this machine, or one virtual node of WEFT_NODE_SIZE) no
     * MPI communicator is made: shared memory carries everything, and the
     * drop-in builds this inside the program's own collective call, where
     * a hidden MPI_Comm_dup, beside communicators the program creates in
     * other threads, hung Open MPI 4.1's context id agreement (MPICH's
     * threads/comm/comm_create_group_threads). */
    xport_t *mx, *x = NULL;
    int *ids = NULL;
    if ((rc = xport_one_node_open(comm, weft_g.node_size, &ids, &x)))
        return rc;
    if (!x) {
        if ((rc = xport_mpi_open(comm, &mx)))
            return rc;
        if ((rc = xport_twolevel_open(mx, weft_g.node_size, &ids, &x))) {
            free(ids);
            mx->ops->close(mx);
            return rc;
        }
    }
    int *ident = malloc((size_t)x->size * sizeof *ident);
    if (!ident) {
        free(ids);
        x->ops->close(x);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < x->size; i++)
        ident[i] = i;
    rc = comm_create(x, x->rank, x->size, ident, 1, weft_g.choice, newcomm);
    free(ident);
    if (!rc)
        rc = comm_set_nodes(*newcomm, ids);
    free(ids);
    if (rc) {
        if (*newcomm)
            comm_destroy(*newcomm), *newcomm = NULL;
        x->ops->close(x);
        return rc;
    }
    x->closes_with_comms = true;
    return WEFT_OK;
}
