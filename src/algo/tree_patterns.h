/* tree_patterns.h — who is my parent and who are my children, in O(1), for
 * the pipelined trees of two-tree-collectives.txt.  Pure functions of (P,
 * vrank) with vrank = rank - root mod P, so the property tests and `weft
 * tree` call exactly what the builders use.  A tree is returned as parent
 * (-1 at the root) and up to two children.
 *
 * TwoTreeC (§3, Algorithm 1): root 0 over two complete binary trees of
 * ranks 1..P-1.  T1 numbers them level by level in increasing order (heap
 * index h is rank h: children 2r, 2r+1 when < P, parent r/2); T2 in
 * decreasing order from P-1 (heap index h is rank P-h: children 2r-P and
 * 2r-P-1 when > 0, parent (P - (P-r)/2) mod P).  Leaves of one tree are
 * inner nodes of the other (but for at most one rank), so every rank sends
 * in one tree while it receives in the other.
 *
 * Reordered TwoTreeC (§4.3.2): T1 numbered increasing, circularly in
 * 1..P-1, from ceil(P/2); T2 decreasing, circularly, from floor(P/2); the
 * ranks that finish a TwoTreeC reduce first sit near the root. */
#ifndef WEFT_TREE_PATTERNS_H
#define WEFT_TREE_PATTERNS_H

typedef struct tree_node {
    int parent;      /* -1: the root */
    int child[2];
    int nchild;
} tree_node_t;

enum { TREE_CHAIN, TREE_BINARY, TREE_TWO_C1, TREE_TWO_C2, TREE_TWO_R1, TREE_TWO_R2 };

static inline void tree_add_child(tree_node_t *t, int c) { t->child[t->nchild++] = c; }

/* heap position <-> vrank for the two trees of a two-tree (1 <= h <= P-1) */
static inline int twotree_rank_of(int kind, int P, int h)
{
    int m = P - 1;
    switch (kind) {
    case TREE_TWO_C1: return h;
    case TREE_TWO_C2: return P - h;
    case TREE_TWO_R1: return (h - 1 + (P + 1) / 2 - 1) % m + 1;
    default: return ((P / 2 - 1 - (h - 1)) % m + m) % m + 1; /* TREE_TWO_R2 */
    }
}

static inline int twotree_heap_of(int kind, int P, int r)
{
    int m = P - 1;
    switch (kind) {
    case TREE_TWO_C1: return r;
    case TREE_TWO_C2: return P - r;
    case TREE_TWO_R1: return ((r - 1) - ((P + 1) / 2 - 1) + m) % m + 1;
    default: return ((P / 2 - 1) - (r - 1) + m) % m + 1;
    }
}

/* Node v (a vrank) of tree `kind` over P ranks. */
static inline tree_node_t tree_node(int kind, int P, int v)
{
    tree_node_t t = {-1, {-1, -1}, 0};
    switch (kind) {
    case TREE_CHAIN:
        t.parent = v > 0 ? v - 1 : -1;
        if (v + 1 < P)
            tree_add_child(&t, v + 1);
        return t;
    case TREE_BINARY:
        t.parent = v > 0 ? (v - 1) / 2 : -1;
        for (int c = 2 * v + 1; c <= 2 * v + 2 && c < P; c++)
            tree_add_child(&t, c);
        return t;
    default: {
        /* both trees hang below root 0 through their heap position 1 */
        if (P < 2)
            return t;
        if (v == 0) {
            tree_add_child(&t, twotree_rank_of(kind, P, 1));
            return t;
        }
        int h = twotree_heap_of(kind, P, v);
        t.parent = h == 1 ? 0 : twotree_rank_of(kind, P, h / 2);
        for (int c = 2 * h; c <= 2 * h + 1 && c < P; c++)
            tree_add_child(&t, twotree_rank_of(kind, P, c));
        return t;
    }
    }
}

#endif
