/* twotree_s.c — Sanders' TwoTreeS (Sanders, Speck & Traeff 2009) for
 * broadcast and reduce, and allreduce `twotree_sc` (TwoTreeS reduce +
 * TwoTreeC broadcast), as two-tree-collectives.txt compares them.  The trees
 * are tree_patterns.h's TREE_TWO_S1/S2.  Two modes (parameter sync=):
 *
 *   none       data-driven only, like the other pipelined trees;
 *   colouring  the paper's schedule: the tree edges are 2-coloured so that
 *              the two edges into a rank, and the two edges to its children
 *              in one tree, differ; rank by rank, round t uses only the
 *              edges of colour t mod 2 — one receive and the sends of that
 *              colour — and round t+1 starts when round t is done.  A rank
 *              thus alternates receiving in one tree and sending in the
 *              other, as the paper schedules it, and pays the lock-step the
 *              seed measured.
 *
 * The colouring is a 2-colouring of the conflict graph whose vertices are
 * tree edges (identified by tree and child) and whose edges join edges that
 * must differ; every vertex has at most two conflicts, so it is paths and
 * cycles, coloured by walking them.  An odd cycle would make it impossible:
 * the builder then fails and `weft check` reports it (none occurs for P up
 * to 2000; tests/test_trees.c checks).  The one rank that can be inner in
 * both trees (see tree_patterns.h) may send in both in one round. */
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "tree_patterns.h"

/* edge e = (tree t, child v): index 2*v + t, v >= 1 */
int twotree_s_colours(int P, signed char *col)
{
    int ne = 2 * P;
    int *adj = malloc((size_t)ne * 2 * sizeof *adj), *deg = calloc((size_t)ne, sizeof *deg);
    if (!adj || !deg) {
        free(adj), free(deg);
        return WEFT_ENOMEM;
    }
#define LINK(a, b) (adj[2 * (a) + deg[a]++] = (b), adj[2 * (b) + deg[b]++] = (a))
    for (int v = 1; v < P; v++)
        LINK(2 * v + 0, 2 * v + 1); /* the two edges into v */
    for (int u = 0; u < P; u++) {
        if (u == 0) { /* the root's two out-edges */
            int c1 = tree_node(TREE_TWO_S1, P, 0).child[0], c2 = tree_node(TREE_TWO_S2, P, 0).child[0];
            if (P > 2 && c1 != c2)
                LINK(2 * c1 + 0, 2 * c2 + 1);
            continue;
        }
        for (int t = 0; t < 2; t++) {
            tree_node_t n = tree_node(t ? TREE_TWO_S2 : TREE_TWO_S1, P, u);
            if (n.nchild == 2)
                LINK(2 * n.child[0] + t, 2 * n.child[1] + t);
        }
    }
#undef LINK
    int rc = WEFT_OK;
    memset(col, -1, (size_t)ne);
    int *stack = malloc((size_t)ne * sizeof *stack);
    if (!stack)
        rc = WEFT_ENOMEM;
    for (int s = 2; s < ne && !rc; s++) {
        if (col[s] >= 0)
            continue;
        int top = 0;
        col[s] = 0;
        stack[top++] = s;
        while (top && !rc) {
            int e = stack[--top];
            for (int i = 0; i < deg[e]; i++) {
                int f = adj[2 * e + i];
                if (col[f] < 0) {
                    col[f] = (signed char)(1 - col[e]);
                    stack[top++] = f;
                } else if (col[f] == col[e]) {
                    rc = WEFT_ENOTSUP; /* odd cycle */
                }
            }
        }
    }
    free(stack), free(adj), free(deg);
    return rc;
}

int algo_twotree_s_bcast(sched_t *s, const coll_args_t *a)
{
    return pipelined_tree_bcast(s, a, TREE_TWO_S1, TREE_TWO_S2);
}

int algo_twotree_s_reduce(sched_t *s, const coll_args_t *a)
{
    return pipelined_tree_reduce(s, a, TREE_TWO_S1, TREE_TWO_S2);
}

/* TwoTreeS reduce to vrank 0, then TwoTreeC broadcast (two-tree-collectives.txt §4.3.3) */
int algo_twotree_sc_allreduce(sched_t *s, const coll_args_t *a)
{
    coll_args_t b = *a;
    b.root = 0;
    b.coll = WEFT_COLL_REDUCE;
    int rc = algo_twotree_s_reduce(s, &b);
    if (rc)
        return rc;
    sched_round(s);
    sched_new_tag_space(s);
    b.coll = WEFT_COLL_BCAST;
    return pipelined_tree_bcast(s, &b, TREE_TWO_C1, TREE_TWO_C2);
}
