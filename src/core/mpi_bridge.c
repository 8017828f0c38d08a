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
    xport_t *mx, *x;
    if ((rc = xport_mpi_open(comm, &mx)))
        return rc;
    int *ids = NULL;
    if ((rc = xport_twolevel_open(mx, weft_g.node_size, &ids, &x))) {
        mx->ops->close(mx);
        return rc;
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
    (*newcomm)->owns_x = true;
    return WEFT_OK;
}
