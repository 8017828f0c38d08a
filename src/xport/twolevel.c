/* twolevel.c — the transport of a weft communicator built on MPI: messages
 * between ranks of one node go through weft's shared-memory transport (a
 * segment created by the node's first rank, its name passed over MPI), all
 * others through MPI.  Nodes are the ranks of one host and boot, or virtual
 * nodes of WEFT_NODE_SIZE consecutive MPI_COMM_WORLD ranks.  Where every
 * rank is on one node there is no MPI transport at all
 * (xport_one_node_open: shared memory only).  MPI collectives used here go
 * through PMPI_ so that weft's own drop-in (libweft-mpi.so) never sees
 * them, and none creates a communicator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "../core/comm.h"
#include "cpus.h"
#include "segment.h"
#include "xport_mpi.h"

typedef struct twolevel {
    xport_t base;
    xport_t *shm, *mpi;
    int *route; /* rank -> rank in the node's segment, or -1 */
    int *named; /* rank in the node's segment -> rank (shm's messages name it) */
} twolevel_t;

/* The transport that reaches r's peer, with r->peer renumbered for it. */
static xport_t *route(xport_t *xp, xreq_t *r)
{
    twolevel_t *t = (twolevel_t *)xp;
    int local = t->route[r->peer];
    if (local < 0)
        return t->mpi;
    r->peer = local;
    return t->shm;
}

static int node_failed(twolevel_t *t, int code);

/* A message within the node can meet a proof there (shm_irecv finds one
 * of another signature waiting): passed on like progress's. */
static int tl_isend(xport_t *xp, xreq_t *r)
{
    twolevel_t *t = (twolevel_t *)xp;
    xport_t *x = route(xp, r);
    int rc = x->ops->isend(x, r);
    return rc && x == t->shm ? node_failed(t, rc) : rc;
}

static int tl_irecv(xport_t *xp, xreq_t *r)
{
    twolevel_t *t = (twolevel_t *)xp;
    xport_t *x = route(xp, r);
    int rc = x->ops->irecv(x, r);
    return rc && x == t->shm ? node_failed(t, rc) : rc;
}

static const xport_ops_t twolevel_ops; /* ranks on more than one node */

/* A failure the node's shared memory proves (a message under another
 * signature, a ring that cannot be had, a peer that died mid-copy: every
 * error shm's progress or health returns ends the job) reaches the ranks
 * of this node only, by its segment's abort, and the other nodes' ranks
 * would wait for ours until their time limits, or for ever (test_mismatch
 * user_ops, 2 nodes of 2: the second node hung).  So a rank that meets
 * one passes it on by MPI, as tl_fail_job does; mpi_fail_job sends it
 * once.  One node alone has no one to tell. */
static int node_failed(twolevel_t *t, int code)
{
    if (t->base.ops == &twolevel_ops)
        t->mpi->ops->fail_job(t->mpi, weft_last_error());
    return code;
}

static int tl_progress(xport_t *xp)
{
    twolevel_t *t = (twolevel_t *)xp;
    int a = t->shm->ops->progress(t->shm);
    if (a < 0)
        return -node_failed(t, -a);
    int b = t->mpi->ops->progress(t->mpi);
    if (b < 0)
        return b;
    return a | b;
}

static void tl_block(xport_t *xp, int timeout_ms)
{
    xport_nap(xp); /* MPI cannot wake us */
    (void)timeout_ms;
}

static int tl_health(xport_t *xp)
{
    twolevel_t *t = (twolevel_t *)xp;
    int rc = t->shm->ops->health(t->shm);
    return rc ? node_failed(t, rc) : t->mpi->ops->health(t->mpi);
}

static void tl_close(xport_t *xp)
{
    twolevel_t *t = (twolevel_t *)xp;
    t->shm->ops->close(t->shm);
    t->mpi->ops->close(t->mpi);
    free(t->route);
    free(t->named);
    free(t->base.node_ids);
    pthread_mutex_destroy(&t->base.lock);
    free(t);
}

static int tl_derive(xport_t *xp, int color, int key, xport_t **out);

/* The call log: inside the node the segment's, between nodes MPI's
 * announcements. */
static void tl_call_note(xport_t *xp, const call_desc_t *d, int state)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->call_note)
        t->shm->ops->call_note(t->shm, d, state);
    t->mpi->ops->call_note(t->mpi, d, state);
}

/* Messages within the node go through shm with the same tags: it tells
 * stale ones (shm.c) as on a node of its own. */
static void tl_calls_ended(xport_t *xp, uint32_t ctx, uint32_t first, uint32_t below, bool well)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->calls_ended)
        t->shm->ops->calls_ended(t->shm, ctx, first, below, well);
}

/* The MPI part learns of a free when it closes (a communicator over MPI
 * has a transport of its own). */
static void tl_comm_freed(xport_t *xp, uint32_t ctx, uint32_t next_call, bool freed)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->comm_freed)
        t->shm->ops->comm_freed(t->shm, ctx, next_call, freed);
}

static bool tl_drained_from(xport_t *xp, int peer)
{
    twolevel_t *t = (twolevel_t *)xp;
    int local = t->route[peer];
    return local >= 0 && t->shm->ops->drained_from && t->shm->ops->drained_from(t->shm, local);
}

/* r's peer was renumbered for the transport that took it: each knows its
 * own requests (by address), and leaves others alone. */
static void tl_disown(xport_t *xp, xreq_t *r, void *dst)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->disown)
        t->shm->ops->disown(t->shm, r, dst);
    if (t->mpi && t->mpi->ops->disown)
        t->mpi->ops->disown(t->mpi, r, dst);
}

/* These two find their proofs in the node's shared memory too (their
 * WEFT_EMISMATCH ended the job there), so they pass it on as well: the
 * watch's last look (sent_otherwise) is how a rank that waits for a node
 * peer that made the call otherwise and moved on finds it, and the other
 * node waited for ever without this (weft stress over MPI, seed 902). */
static int tl_sent_otherwise(xport_t *xp, uint64_t key, uint32_t sig, bool complete)
{
    twolevel_t *t = (twolevel_t *)xp;
    int rc = t->shm && t->shm->ops->sent_otherwise
                 ? t->shm->ops->sent_otherwise(t->shm, key, sig, complete)
                 : WEFT_OK;
    return rc ? node_failed(t, rc) : WEFT_OK;
}

static int tl_sweep(xport_t *xp)
{
    twolevel_t *t = (twolevel_t *)xp;
    int rc = t->shm && t->shm->ops->sweep ? t->shm->ops->sweep(t->shm) : WEFT_OK;
    return rc ? node_failed(t, rc) : WEFT_OK;
}

/* A peer of this node is read in the segment's call log.  Another node's
 * abort (its fail_job, or node_failed) comes by MPI alone, so a wait that
 * stalls on peers of its own node only looks for one there first (not a
 * quick look: those come at the end of calls that only send). */
static int tl_peer_view(xport_t *xp, int peer, uint64_t key, bool quick, peer_view_t *out)
{
    twolevel_t *t = (twolevel_t *)xp;
    int local = t->route[peer];
    if (local >= 0 && !quick && t->mpi->ops->peer_view &&
        !t->mpi->ops->peer_view(t->mpi, peer, key, quick, out) && out->aborted)
        return WEFT_OK;
    xport_t *x = local >= 0 ? t->shm : t->mpi;
    if (!x || !x->ops->peer_view)
        return WEFT_ENOTSUP;
    return x->ops->peer_view(x, local >= 0 ? local : peer, key, quick, out);
}

static void tl_announce(xport_t *xp, int peer, const call_desc_t *mine)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->route[peer] < 0 && t->mpi->ops->announce)
        t->mpi->ops->announce(t->mpi, peer, mine);
}

static void tl_note_finalize(xport_t *xp, int entering)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->note_finalize)
        t->shm->ops->note_finalize(t->shm, entering); /* the node's peers read it */
}

/* Messages between nodes only: shm tells a stale one of its own by its key */
static int tl_call_may_start(xport_t *xp, uint64_t key)
{
    twolevel_t *t = (twolevel_t *)xp;
    return t->mpi->ops->call_may_start(t->mpi, key);
}

static void tl_fail_job(xport_t *xp, const char *msg)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->shm && t->shm->ops->fail_job)
        t->shm->ops->fail_job(t->shm, msg); /* this node's ranks */
    t->mpi->ops->fail_job(t->mpi, msg);   /* and by message, every rank */
}

/* Where every rank of the transport is on this node, the board is the
 * node segment's, ranks renumbered (the board allreduce under mpirun).
 * Across nodes there is no board, but each node's ranks reach the arrival
 * records of their own node (hier_pap's, on its node leader): the callers
 * name only ranks of this node there, and wake-ups go to those alone. */
static struct board_slot *tl_board_slot(xport_t *xp, int rank, unsigned i)
{
    twolevel_t *t = (twolevel_t *)xp;
    return t->shm->ops->board_slot(t->shm, t->route[rank], i);
}

static struct arrival_rec *tl_arrival_rec(xport_t *xp, int rank, unsigned i)
{
    twolevel_t *t = (twolevel_t *)xp;
    if (t->route[rank] < 0 || !t->shm->ops->arrival_rec) /* off node; a node of one */
        return NULL;
    return t->shm->ops->arrival_rec(t->shm, t->route[rank], i);
}

static void tl_wake_ranks(xport_t *xp, const int *ranks, int n)
{
    twolevel_t *t = (twolevel_t *)xp;
    int local[64];
    if (!t->shm->ops->wake_ranks)
        return; /* a node of one rank */
    for (int k = 0; k < n; k += 64) {
        int m = n - k < 64 ? n - k : 64;
        int nl = 0;
        for (int j = 0; j < m; j++)
            if (t->route[ranks[k + j]] >= 0)
                local[nl++] = t->route[ranks[k + j]];
        if (nl)
            t->shm->ops->wake_ranks(t->shm, local, nl);
    }
}

static const xport_ops_t twolevel_ops = {
    "shm+mpi", tl_isend,     tl_irecv,     tl_progress, tl_block, tl_health,  tl_close,
    tl_derive, tl_call_note, tl_peer_view, tl_note_finalize, tl_fail_job, tl_announce,
    NULL, tl_wake_ranks, tl_arrival_rec, /* no board: the ranks span nodes */
    tl_calls_ended, tl_drained_from, tl_disown, tl_sweep, tl_sent_otherwise, tl_call_may_start,
    tl_comm_freed,
};
static const xport_ops_t twolevel_one_node_ops = {
    "shm+mpi", tl_isend,     tl_irecv,     tl_progress, tl_block, tl_health,  tl_close,
    tl_derive, tl_call_note, tl_peer_view, tl_note_finalize, tl_fail_job, tl_announce,
    tl_board_slot, tl_wake_ranks, tl_arrival_rec, tl_calls_ended, tl_drained_from, tl_disown, tl_sweep,
    tl_sent_otherwise, NULL, /* no call_may_start: every message goes by shm */
    tl_comm_freed,
};

/* What names this rank's machine: its host name and the kernel's boot id
 * (two containers may share a host name, not a boot; processes under one
 * kernel can share a /dev/shm segment, and where they cannot, joining it
 * fails and every rank learns so below). */
#define HOST_KEY 128
static void host_key(char key[HOST_KEY])
{
    memset(key, 0, HOST_KEY);
    gethostname(key, 64);
    key[63] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(key + 64, HOST_KEY - 64, f))
            key[64] = '\0';
        fclose(f);
    }
}

/* Node id of every rank of the transport's MPI communicator.  No
 * communicator is created for it (MPI_Comm_split_type would be one): the
 * drop-in builds this inside a user's collective call, and a hidden
 * communicator creation there, beside the program's own in other threads,
 * hung Open MPI 4.1's context id agreement (MPICH's
 * threads/comm/comm_create_group_threads). */
static int node_ids(MPI_Comm comm, int node_size, int *ids)
{
    int P, me;
    PMPI_Comm_size(comm, &P);
    if (node_size > 0) {
        int wr;
        PMPI_Comm_rank(MPI_COMM_WORLD, &wr);
        me = wr / node_size;
        if (PMPI_Allgather(&me, 1, MPI_INT, ids, 1, MPI_INT, comm) != MPI_SUCCESS)
            return weft_error(WEFT_EINVAL, "MPI_Allgather of node ids failed");
        return WEFT_OK;
    }
    /* a node is named by its lowest rank in comm, not in MPI_COMM_WORLD:
     * a communicator merged from spawned jobs holds two world ranks 0, on
     * different machines */
    char mine[HOST_KEY], *all = malloc((size_t)P * HOST_KEY);
    if (!all)
        return weft_error(WEFT_ENOMEM, "out of memory");
    host_key(mine);
    if (PMPI_Allgather(mine, HOST_KEY, MPI_CHAR, all, HOST_KEY, MPI_CHAR, comm) != MPI_SUCCESS) {
        free(all);
        return weft_error(WEFT_EINVAL, "MPI_Allgather of host names failed");
    }
    for (int r = 0; r < P; r++) {
        ids[r] = r;
        for (int q = 0; q < r; q++)
            if (ids[q] == q &&
                !memcmp(all + (size_t)q * HOST_KEY, all + (size_t)r * HOST_KEY, HOST_KEY)) {
                ids[r] = q;
                break;
            }
    }
    free(all);
    return WEFT_OK;
}

/* The cores the ranks of this rank's node may run on together (cpus.h):
 * ranks bound one to a core by mpirun are not ranks that share one.  0 (the
 * creator's own) where the allowances could not be exchanged. */
static uint32_t node_cores(MPI_Comm comm, const int *ids, int me)
{
    int P;
    PMPI_Comm_size(comm, &P);
    cpu_allow_t mine, *all = malloc((size_t)P * sizeof *all);
    if (!all)
        return 0;
    cpu_allow_self(&mine);
    uint32_t cores = 0;
    if (PMPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                       comm) == MPI_SUCCESS) {
        int n = 0;
        for (int r = 0; r < P; r++)
            if (ids[r] == ids[me])
                all[n++] = all[r];
        cores = cpu_allow_cores(all, n);
    }
    free(all);
    return cores;
}

/* This rank's transport inside its node: the node's first rank creates the
 * segment and passes its name to every rank (a communicator per node would
 * be a hidden creation, see node_ids); every rank of comm learns whether
 * all joined, so all fail alike. */
static int node_segment(MPI_Comm comm, const int *ids, int me, int lrank, int local,
                        xport_t **out, uint64_t *seg_id)
{
    int P, rc;
    PMPI_Comm_size(comm, &P);
    char mine[64] = "", name[64] = "", *names = malloc((size_t)P * sizeof mine);
    if (!names)
        return weft_error(WEFT_ENOMEM, "out of memory");
    seg_t seg = {0};
    int first = 0; /* the node's first rank in comm (ids may be numbers of nodes) */
    while (ids[first] != ids[me])
        first++;
    uint32_t cores = node_cores(comm, ids, me);
    if (lrank == 0 && local > 1 &&
        seg_create(local, cores, &seg, mine, sizeof mine, NULL) != WEFT_OK)
        mine[0] = '\0';
    if (PMPI_Allgather(mine, sizeof mine, MPI_CHAR, names, sizeof mine, MPI_CHAR, comm) !=
        MPI_SUCCESS)
        names[(size_t)first * sizeof mine] = '\0';
    memcpy(name, names + (size_t)first * sizeof mine, sizeof name);
    name[sizeof name - 1] = '\0';
    free(names);
    xport_t *shm = NULL;
    if (local == 1)
        rc = xport_self_open(&shm);
    else if (!name[0])
        rc = weft_error(WEFT_ESYS, "the node's shared-memory segment could not be created");
    else
        rc = xport_shm_open(name, lrank, local, &shm);
    if (seg.hdr)
        seg_detach(&seg); /* the creator's own mapping; it attached again */
    int ok = rc == WEFT_OK, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (shm)
            shm->ops->close(shm);
        if (name[0] && lrank == 0)
            seg_unlink(name);
        return rc ? rc : weft_error(WEFT_ESYS, "another rank could not join its node's segment");
    }
    *out = shm;
    if (seg_id) /* from the name every member learned */
        *seg_id = fnv1a(FNV1A_START, name, strlen(name));
    return WEFT_OK;
}

/* The MPI_COMM_WORLD rank of every rank of comm, from the groups alone
 * (no communication); WEFT_ENOTSUP where one is not in the world (a
 * spawned or connected process). */
int xport_mpi_world_ranks(MPI_Comm comm, int *wr)
{
    int P;
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    PMPI_Comm_size(comm, &P);
    int *ranks = malloc((size_t)P * sizeof *ranks);
    if (!ranks)
        return weft_error(WEFT_ENOMEM, "out of memory");
    for (int r = 0; r < P; r++)
        ranks[r] = r;
    int ok = PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
             PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS &&
             PMPI_Group_translate_ranks(g, P, ranks, wg, wr) == MPI_SUCCESS;
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    for (int r = 0; ok && r < P; r++)
        ok = wr[r] != MPI_UNDEFINED;
    free(ranks);
    return ok ? WEFT_OK : weft_error(WEFT_ENOTSUP, "a rank outside MPI_COMM_WORLD");
}

int xport_one_node_open(MPI_Comm comm, int node_size, int **ids_out, xport_t **out)
{
    int P, me;
    *ids_out = NULL, *out = NULL;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &me);
    int *ids = malloc((size_t)P * sizeof *ids);
    if (!ids)
        return weft_error(WEFT_ENOMEM, "out of memory");
    if (P == 1) { /* alone: no host, boot id or cores to learn */
        int rc = xport_self_open(out);
        if (rc)
            free(ids);
        else
            ids[0] = 0, *ids_out = ids;
        return rc;
    }
    int rc = node_ids(comm, node_size, ids);
    int one = !rc;
    for (int r = 1; r < P && one; r++)
        one = ids[r] == ids[0];
    if (!one) { /* several nodes (or an error, which every rank got) */
        free(ids);
        return rc;
    }
    xport_t *x = NULL;
    uint64_t seg_id = 0;
    if ((rc = node_segment(comm, ids, me, me, P, &x, &seg_id))) {
        free(ids);
        return rc;
    }
    /* what lets communicators made later of some of these ranks share the
     * segment (weft_comm_from_mpi) */
    int *wr = P > 1 ? malloc((size_t)P * sizeof *wr) : NULL;
    if (wr && xport_mpi_world_ranks(comm, wr) == WEFT_OK)
        x->mpi_world = wr, x->mpi_seg = seg_id;
    else
        free(wr);
    for (int r = 0; r < P; r++)
        ids[r] = 0; /* a node is named by its lowest rank in comm */
    *ids_out = ids, *out = x;
    return WEFT_OK;
}

/* Wraps the MPI transport mx; *out is mx itself when every node has one rank. */
int xport_twolevel_open(xport_t *mx, int node_size, int **ids_out, xport_t **out)
{
    MPI_Comm comm = xport_mpi_comm(mx);
    int P = mx->size, me = mx->rank;
    int *ids = malloc((size_t)P * sizeof *ids);
    if (!ids)
        return weft_error(WEFT_ENOMEM, "out of memory");
    int rc = node_ids(comm, node_size, ids);
    if (rc) {
        free(ids);
        return rc;
    }
    *ids_out = ids;
    int local = 0, lrank = 0;
    for (int r = 0; r < P; r++)
        if (ids[r] == ids[me]) {
            if (r == me)
                lrank = local;
            local++;
        }
    int shared = 0; /* does any node have more than one rank? */
    for (int r = 1; r < P && !shared; r++)
        for (int q = 0; q < r && !shared; q++)
            shared = ids[q] == ids[r];
    if (!shared) {
        free(mx->node_ids);
        mx->node_ids = malloc((size_t)P * sizeof *ids);
        if (mx->node_ids)
            memcpy(mx->node_ids, ids, (size_t)P * sizeof *ids);
        *out = mx;
        return WEFT_OK;
    }
    xport_t *shm = NULL;
    if ((rc = node_segment(comm, ids, me, lrank, local, &shm, NULL)))
        return rc; /* *ids_out: the caller frees it */
    twolevel_t *t = calloc(1, sizeof *t);
    int *route = malloc((size_t)P * sizeof *route), *named = malloc((size_t)local * sizeof *named);
    if (!t || !route || !named) {
        free(t), free(route), free(named);
        shm->ops->close(shm);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    for (int r = 0, l = 0; r < P; r++) {
        route[r] = ids[r] == ids[me] ? l : -1;
        if (route[r] >= 0)
            named[l++] = r;
    }
    t->named = named;
    shm->named = named; /* "ranks 0 and 1 disagree" named the second node's first two */
    t->shm = shm;
    t->mpi = mx;
    t->route = route;
    t->base.ops = shm && local == P ? &twolevel_one_node_ops : &twolevel_ops;
    t->base.rank = me;
    t->base.size = P;
    t->base.local_size = local;
    t->base.cores = shm->cores; /* the self transport's 0 where the node has one rank */
    t->base.board_payload = shm->board_payload;
    t->base.tag_limit = mx->tag_limit; /* MPI's is the narrower */
    /* one node: every message goes by the shared memory, arena and all;
     * across nodes a send from the arena would help only some receivers */
    t->base.arena_reads_from = local == P ? shm->arena_reads_from : 0;
    t->base.node_ids = malloc((size_t)P * sizeof *ids);
    if (t->base.node_ids)
        memcpy(t->base.node_ids, ids, (size_t)P * sizeof *ids);
    pthread_mutex_init(&t->base.lock, NULL);
    xport_mpi_set_lock(mx, &t->base.lock); /* mx is used under t's lock now */
    *out = &t->base;
    return WEFT_OK;
}

static int tl_derive(xport_t *xp, int color, int key, xport_t **out)
{
    twolevel_t *t = (twolevel_t *)xp;
    xport_t *nm = NULL;
    *out = NULL;
    int rc = t->mpi->ops->derive(t->mpi, color, key, &nm);
    if (rc || !nm)
        return rc;
    int *ids = NULL;
    rc = xport_twolevel_open(nm, weft_g.node_size, &ids, out);
    free(ids);
    if (rc)
        nm->ops->close(nm);
    return rc;
}
