/* mpi_bridge.c — weft_comm_from_mpi (weft_mpi.h): a weft communicator over
 * an MPI communicator.  Built only with MPI. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "../xport/xport_mpi.h"
#include "comm.h"
#include "weft_mpi.h"

/* ---- a communicator on a segment the process has already ----
 *
 * Under the drop-in every communicator a program calls collectives on gets
 * a weft twin.  Made from nothing, a twin of ranks on one machine costs a
 * segment of its own: a file in /dev/shm, its mapping and, once used, its
 * rings' pages (bench/comm_churn.sh: a dup, one MPI_Allreduce of an int
 * and the free took 138 us at 2 ranks and 295 at 4 on 2 cores, against 4
 * and 26-30 for Open MPI alone), so a program that makes a communicator
 * for a few calls ran slower under the drop-in than without.
 * Where the process already has a one-node segment holding every rank of
 * the new communicator (that of MPI_COMM_WORLD's twin, typically), the twin
 * is made on it instead, as weft_comm_split makes one: a context id agreed
 * by the members, and nothing else.  Every member must make the same
 * choice, so they agree on the segment first; where they cannot, or no
 * board pair is free for the new communicator (its small calls would run
 * without the board), the twin gets a segment of its own as before. */

static int mpi_member_allreduce(void *arg, void *buf, int n, weft_dtype_t dt, weft_op_t op)
{
    /* comm_agree_ctx's two kinds: uint32 max and uint64 bor */
    MPI_Datatype t = dt == WEFT_UINT32 ? MPI_UINT32_T : MPI_UINT64_T;
    MPI_Op o = op == WEFT_MAX ? MPI_MAX : MPI_BOR;
    if ((dt != WEFT_UINT32 && dt != WEFT_UINT64) || (op != WEFT_MAX && op != WEFT_BOR))
        return weft_error(WEFT_EINTERNAL, "weft_comm_from_mpi: an agreement of another kind");
    if (PMPI_Allreduce(MPI_IN_PLACE, buf, n, t, o, *(MPI_Comm *)arg) != MPI_SUCCESS)
        return weft_error(WEFT_ESYS, "weft_comm_from_mpi: MPI_Allreduce failed");
    return WEFT_OK;
}

/* Whether x's segment holds every MPI_COMM_WORLD rank of wr[0..P-1]; the
 * rank of each in x into tr (may be NULL). */
static bool holds(const xport_t *x, const int *wr, int P, int *tr)
{
    for (int r = 0; r < P; r++) {
        int i = 0;
        while (i < x->size && x->mpi_world[i] != wr[r])
            i++;
        if (i == x->size)
            return false;
        if (tr)
            tr[r] = i;
    }
    return true;
}

/* Of the live transports whose segments hold every rank of wr, the one of
 * the lowest segment id, pinned (counted as one more communicator's, so
 * that it cannot close before the new one is on it); tr its ranks. */
static xport_t *pin_node_transport(const int *wr, int P, int *tr)
{
    xport_t *best = NULL;
    pthread_mutex_lock(&weft_g.lock);
    for (weft_comm_t c = weft_g.live; c; c = c->lnext) {
        const xport_t *x = c->x;
        if (x->mpi_world && x != best && (!best || x->mpi_seg < best->mpi_seg) &&
            holds(x, wr, P, NULL))
            best = c->x;
    }
    if (best) {
        holds(best, wr, P, tr);
        best->comms++;
    }
    pthread_mutex_unlock(&weft_g.lock);
    return best;
}

/* In MPI_Finalize (mpi.c, at_finalize): every live communicator's node
 * says this rank is finalizing, as weft_finalize would, so that a peer of
 * the node waiting in a call this rank skipped learns why (over MPI the
 * program calls MPI_Finalize, not weft_finalize, and may leave its
 * communicators to it). */
static void note_mpi_finalize(void)
{
    pthread_mutex_lock(&weft_g.lock);
    for (weft_comm_t c = weft_g.live; c; c = c->lnext)
        if (c->x->ops->note_finalize)
            c->x->ops->note_finalize(c->x, 1);
    pthread_mutex_unlock(&weft_g.lock);
}

static void unpin(xport_t *x)
{
    pthread_mutex_lock(&weft_g.lock);
    bool last = --x->comms == 0;
    pthread_mutex_unlock(&weft_g.lock);
    if (last && x->closes_with_comms)
        x->ops->close(x);
}

/* The twin on a segment the process has, or *out NULL where the members
 * agree there is none to share.  A member that refuses the call (refused:
 * its error code, which weft_error has reported) still takes its part in
 * the first MPI collective, saying so, so that its peers fail with
 * WEFT_EPEER naming it instead of waiting for it in a call it never makes
 * (comm.c does the same for weft_comm_dup and _split).  That allreduce is
 * made anyway, so the refusal costs nothing more; it returns the refuser's
 * own code, its message restored. */
static int share_node_segment(MPI_Comm comm, int refused, weft_comm_t *out)
{
    int P, me, rc = WEFT_OK;
    *out = NULL;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &me);
    if (P < 2)
        return refused; /* the self transport costs nothing */
    char why[256];
    snprintf(why, sizeof why, "%s", refused ? weft_last_error() : "");
    int *wr = refused ? NULL : malloc(2 * (size_t)P * sizeof *wr), *tr = wr ? wr + P : NULL;
    xport_t *x = NULL;
    if (wr && xport_mpi_world_ranks(comm, wr) == WEFT_OK)
        x = pin_node_transport(wr, P, tr);
    /* every member found one, and the same; v[3]: the last refuser + 1 */
    uint64_t v[4] = {!x, x ? x->mpi_seg : 0, x ? ~x->mpi_seg : ~0ull,
                     refused ? (uint64_t)me + 1 : 0};
    member_allreduce_t ar = {mpi_member_allreduce, NULL, &comm, NULL};
    if (PMPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
        rc = weft_error(WEFT_ESYS, "weft_comm_from_mpi: MPI_Allreduce failed");
    if (refused)
        rc = weft_error(refused, "%s", why);
    else if (!rc && v[3])
        rc = comm_peer_refused("weft_comm_from_mpi", (uint32_t)v[3],
                               "no newcomm, or a WEFT_* variable it could not read");
    ar.x = x;
    uint32_t ctx, first_call, refused_by; /* nobody refused: v[3] */
    bool board = false;
    if (!rc && !v[0] && v[1] == ~v[2] &&
        !(rc = comm_agree_ctx(&ar, 0, &refused_by, &ctx, &first_call, &board))) {
        if (board) {
            int *nodes = calloc((size_t)P, sizeof *nodes);
            rc = nodes ? comm_create_on(x, me, P, tr, ctx, first_call, true, weft_g.choice, out)
                       : weft_error(WEFT_ENOMEM, "out of memory");
            if (!nodes)
                comm_ctx_give_back(ctx, first_call, true);
            if (!rc && (rc = comm_set_nodes(*out, nodes)))
                comm_destroy(*out), *out = NULL;
            free(nodes);
        } else {
            comm_ctx_give_back(ctx, first_call, false);
        }
        if (me == 0 && weft_verbose())
            fprintf(stderr, "weft: a communicator of %d ranks: %s\n", P,
                    *out ? "on a segment the process has already"
                         : "a segment of its own (every board pair of its ranks is taken)");
    }
    if (x)
        unpin(x);
    free(wr);
    return rc;
}

weft_err_t weft_comm_from_mpi(MPI_Comm comm, weft_comm_t *newcomm)
{
    weft_comm_t none;
    int refused =
        newcomm ? WEFT_OK : weft_error(WEFT_EINVAL, "weft_comm_from_mpi: newcomm is NULL");
    if (!newcomm)
        newcomm = &none;
    *newcomm = NULL;
    pthread_mutex_lock(&weft_g.lock);
    int rc = lib_init();
    pthread_mutex_unlock(&weft_g.lock);
    if (rc && !refused)
        refused = rc;
    /* what it checks is alike on every member: a failure here is everyone's */
    if ((rc = xport_mpi_usable(comm)))
        return rc;
    xport_mpi_at_finalize(note_mpi_finalize);
    /* On one node (this machine, or one virtual node of WEFT_NODE_SIZE) no
     * MPI communicator is made: shared memory carries everything, and the
     * drop-in builds this inside the program's own collective call, where
     * a hidden MPI_Comm_dup, beside communicators the program creates in
     * other threads, hung Open MPI 4.1's context id agreement (MPICH's
     * threads/comm/comm_create_group_threads). */
    if ((rc = share_node_segment(comm, refused, newcomm)) || *newcomm)
        return rc;
    xport_t *mx = NULL, *x = NULL;
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
    if (mx)
        xport_mpi_comm_made(mx);
    return WEFT_OK;
}
