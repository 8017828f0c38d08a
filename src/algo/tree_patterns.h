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

enum { TREE_CHAIN, TREE_BINARY, TREE_TWO_C1, TREE_TWO_C2, TREE_TWO_R1, TREE_TWO_R2,
       TREE_TWO_S1, TREE_TWO_S2 };

/* TwoTreeS (Sanders, Speck & Traeff 2009, as NCCL's double binary tree):
 * over the p = P-1 non-root ranks, ids 0..p-1 (id = vrank - 1), T1 is the
 * in-order "bit" tree: id 0 is a top node whose one child is the largest
 * power of two below p; id r's parent is found from its lowest set bit b:
 * (r ^ b) | 2b, or r ^ b when that is out of range; its children are r - b/2
 * and the largest r + b/2^j < p.  Odd ids are the leaves.  T2 is T1 shifted
 * by one id (id i of T2 plays T1's id i-1 mod p), which turns T1's leaves
 * into T2's inner nodes for every p (for odd p all but id 0; mirroring, the
 * other choice in the paper, keeps the leaves of odd p).  For P = 2^n + 1
 * this is the shape two-tree-collectives.txt criticises: a full tree of
 * 2^n - 1 ranks under one extra top node. */
static inline void bittree_node(int p, int id, int *parent, int child[2], int *nchild)
{
    *nchild = 0;
    if (id == 0) {
        int top = 1;
        while (top * 2 < p)
            top *= 2;
        *parent = -1;
        if (p > 1)
            child[(*nchild)++] = top;
        return;
    }
    int b = id & -id;
    int up = (id ^ b) | (b << 1);
    *parent = up < p ? up : (id ^ b);
    for (int low = b >> 1, first = 1; low; low >>= 1) {
        if (first) {
            child[(*nchild)++] = id - low;
            first = 0;
        }
        if (id + low < p) {
            child[(*nchild)++] = id + low;
            break;
        }
    }
}

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
    case TREE_TWO_S1:
    case TREE_TWO_S2: {
        int p = P - 1, shift = kind == TREE_TWO_S2 ? 1 : 0;
        if (p < 1)
            return t;
        if (v == 0) { /* the root feeds each tree's top */
            tree_add_child(&t, (0 + shift) % p + 1);
            return t;
        }
        int id = ((v - 1) - shift + p) % p, par, ch[2], nch;
        bittree_node(p, id, &par, ch, &nch);
        t.parent = par < 0 ? 0 : (par + shift) % p + 1;
        for (int c = 0; c < nch; c++)
            tree_add_child(&t, (ch[c] + shift) % p + 1);
        return t;
    }
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
