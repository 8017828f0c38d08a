/* hier.c — two-level (hierarchical) allreduce, broadcast and reduce: inside
 * each node over shared memory, between node leaders over the network.
 *
 * The node map comes with the call (coll_args.node_of): real nodes under MPI
 * (MPI_COMM_TYPE_SHARED) or virtual nodes (WEFT_NODE_SIZE=k).  A node's
 * leader is its lowest rank.  Each phase is an existing algorithm built on a
 * sub-group through the schedule's peer map, in a tag space of its own
 * (sched_part: leaders build phases the other ranks do not).  allreduce: binomial reduce
 * to the leader, allreduce among leaders (inter=NAME, default rabenseifner),
 * binomial bcast from the leader.  The op must be commutative: nodes need
 * not be contiguous rank ranges.  This is the structure of the
 * arrival-pattern seed's hierarchical allreduce and of MPICH's SMP-aware
 * collectives. */
#include <stdlib.h>
#include <string.h>

#include "algo.h"

typedef struct group {
    const int *members; /* ranks of my node, ascending */
    int nmembers, myidx;
    const int *leaders; /* leader (lowest rank) of each node, by node index */
    int nnodes, mynode;
    node_groups_t own;  /* made here when the call brings no group form */
} group_t;

int node_groups_build(const int *node_of, int nnodes, int P, node_groups_t *g)
{
    memset(g, 0, sizeof *g);
    g->nnodes = nnodes;
    g->first = calloc((size_t)nnodes + 1, sizeof *g->first);
    g->members = malloc((size_t)P * sizeof *g->members);
    g->leaders = malloc((size_t)nnodes * sizeof *g->leaders);
    g->idx_of = malloc((size_t)P * sizeof *g->idx_of);
    if (!g->first || !g->members || !g->leaders || !g->idx_of) {
        node_groups_free(g);
        return WEFT_ENOMEM;
    }
    for (int r = 0; r < P; r++)
        g->first[(node_of ? node_of[r] : 0) + 1]++;
    for (int n = 0; n < nnodes; n++)
        g->first[n + 1] += g->first[n];
    /* first[n] is node n's fill cursor; it ends at node n + 1's start */
    for (int r = 0; r < P; r++) {
        int n = node_of ? node_of[r] : 0;
        g->members[g->first[n]++] = r;
    }
    for (int n = nnodes; n > 0; n--)
        g->first[n] = g->first[n - 1];
    g->first[0] = 0;
    for (int n = 0; n < nnodes; n++) {
        g->leaders[n] = g->members[g->first[n]];
        for (int k = g->first[n]; k < g->first[n + 1]; k++)
            g->idx_of[g->members[k]] = k - g->first[n];
    }
    return WEFT_OK;
}

void node_groups_free(node_groups_t *g)
{
    free(g->first), free(g->members), free(g->leaders), free(g->idx_of);
    memset(g, 0, sizeof *g);
}

/* My node's part of the call's group form, made here (O(P)) when the call
 * brings none. */
static int group_of(const coll_args_t *a, group_t *g)
{
    memset(g, 0, sizeof *g);
    const node_groups_t *ng = a->groups;
    if (!ng) {
        int rc = node_groups_build(a->node_of, a->node_of ? a->nnodes : 1, a->nrank, &g->own);
        if (rc)
            return rc;
        ng = &g->own;
    }
    g->nnodes = ng->nnodes;
    g->mynode = a->node_of ? a->node_of[a->rank] : 0;
    g->members = ng->members + ng->first[g->mynode];
    g->nmembers = ng->first[g->mynode + 1] - ng->first[g->mynode];
    g->myidx = ng->idx_of[a->rank];
    g->leaders = ng->leaders;
    return WEFT_OK;
}

static void group_free(group_t *g) { node_groups_free(&g->own); }

/* Builds algorithm `name` of coll on a sub-group (peers through map). */
static int sub_build(sched_t *s, const coll_args_t *a, weft_coll_t coll, const char *name,
                     const int *map, int n, int idx, int root, tagspace_t outer, unsigned part)
{
    const algo_t *al = algo_find(coll, name);
    if (!al)
        return WEFT_EINVAL;
    coll_args_t sub = *a;
    sub.coll = coll;
    sub.nrank = n;
    sub.rank = idx;
    sub.root = root;
    sub.node_of = NULL;
    sub.nnodes = 1;
    sub.groups = NULL;
    memset(&sub.params, 0, sizeof sub.params);
    sched_part(s, outer, part, 3);
    s->peer_map = map;
    int rc = al->build(s, &sub);
    s->peer_map = NULL;
    sched_round(s);
    return rc;
}

const char *hier_inter_name(const coll_args_t *a)
{
    if (a->params.inter[0])
        return a->params.inter;
    return a->coll == WEFT_COLL_ALLREDUCE ? "rabenseifner" : "binomial";
}

/* hier allreduce, with or without its first phase: hier_pap (src/shmcoll)
 * reduces inside the node in arrival order itself and hands the rest over
 * to this schedule, the node's sum then in the leader's output. */
static int hier_allreduce_phases(sched_t *s, const coll_args_t *a, bool node_reduce)
{
    tagspace_t o = sched_space(s);
    group_t g;
    int rc = group_of(a, &g);
    if (rc)
        return rc;
    /* 1: reduce to the node leader, whose output then holds the node's sum */
    if (node_reduce)
        rc = sub_build(s, a, WEFT_COLL_REDUCE, "binomial", g.members, g.nmembers, g.myidx, 0, o,
                       0);
    /* 2: leaders allreduce that in place */
    if (!rc && g.myidx == 0) {
        sched_remap(s, BUF_IN, BUF_OUT, 0);
        rc = sub_build(s, a, WEFT_COLL_ALLREDUCE, hier_inter_name(a), g.leaders,
                       g.nnodes, g.mynode, 0, o, 1);
        sched_remap_reset(s);
    }
    /* 3: the leader broadcasts inside its node */
    if (!rc)
        rc = sub_build(s, a, WEFT_COLL_BCAST, "binomial", g.members, g.nmembers, g.myidx, 0, o, 2);
    group_free(&g);
    sched_space_restore(s, o);
    return rc;
}

int algo_hier_allreduce(sched_t *s, const coll_args_t *a)
{
    return hier_allreduce_phases(s, a, true);
}

int algo_hier_tail_allreduce(sched_t *s, const coll_args_t *a)
{
    return hier_allreduce_phases(s, a, false);
}

int algo_hier_bcast(sched_t *s, const coll_args_t *a)
{
    tagspace_t o = sched_space(s);
    group_t g;
    int rc = group_of(a, &g);
    if (rc)
        return rc;
    int rnode = a->node_of ? a->node_of[a->root] : 0, rleader = g.leaders[rnode];
    region_t buf = reg(BUF_OUT, 0, a->count);
    /* 1: a root that is not its node's leader hands the data to it */
    sched_part(s, o, 0, 3);
    if (a->root != rleader) {
        if (a->rank == a->root)
            sched_send(s, rleader, 0, buf);
        else if (a->rank == rleader)
            sched_recv(s, a->root, 0, buf);
        sched_round(s);
    }
    /* 2: leaders broadcast from the root's leader */
    if (g.myidx == 0)
        rc = sub_build(s, a, WEFT_COLL_BCAST, hier_inter_name(a), g.leaders, g.nnodes,
                       g.mynode, rnode, o, 1);
    /* 3: every leader broadcasts inside its node (the root's node too: the
     * root just gets its own data again) */
    if (!rc)
        rc = sub_build(s, a, WEFT_COLL_BCAST, "binomial", g.members, g.nmembers, g.myidx, 0, o, 2);
    group_free(&g);
    sched_space_restore(s, o);
    return rc;
}

int algo_hier_reduce(sched_t *s, const coll_args_t *a)
{
    tagspace_t o = sched_space(s);
    group_t g;
    int rc = group_of(a, &g);
    if (rc)
        return rc;
    int rnode = a->node_of ? a->node_of[a->root] : 0, rleader = g.leaders[rnode];
    uint64_t n = a->count;
    /* A leader that is not the root accumulates in scratch: only the root's
     * output may be written. */
    bool leader = g.myidx == 0;
    bool acc_in_tmp = leader && a->rank != a->root;
    uint64_t t = acc_in_tmp ? sched_tmp(s, n) : 0;
    if (acc_in_tmp)
        sched_remap(s, BUF_OUT, BUF_TMP, t);
    /* 1: reduce to the node leader */
    rc = sub_build(s, a, WEFT_COLL_REDUCE, "binomial", g.members, g.nmembers, g.myidx, 0, o, 0);
    /* 2: leaders reduce to the root's leader, in place */
    if (!rc && leader) {
        sched_remap(s, BUF_IN, acc_in_tmp ? BUF_TMP : BUF_OUT, t);
        rc = sub_build(s, a, WEFT_COLL_REDUCE, hier_inter_name(a), g.leaders, g.nnodes,
                       g.mynode, rnode, o, 1);
    }
    sched_remap_reset(s);
    /* 3: the root's leader hands the result to the root */
    sched_part(s, o, 2, 3);
    if (!rc && a->root != rleader) {
        if (a->rank == rleader)
            sched_send(s, a->root, 0, reg(BUF_TMP, t, n));
        else if (a->rank == a->root)
            sched_recv(s, rleader, 0, reg(BUF_OUT, 0, n));
    }
    group_free(&g);
    sched_space_restore(s, o);
    return rc;
}
