/* test_trees.c — properties of the pipelined trees (src/algo/tree_patterns.h)
 * for every P in 2..2000, and the shapes of two-tree-collectives.txt written
 * out by hand: TwoTreeC for P = 21 and Reordered TwoTreeC for P = 20. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tree_patterns.h"

#include "testing.h"

/* Checks that `kind` over P ranks is a complete binary tree of ranks
 * 1..P-1 hanging from root 0 (a two-tree half) or of 0..P-1 (bintree):
 * parent/child links agree, every rank appears once, and breadth-first
 * order fills levels left to right with no gap (heap shape). */
static void check_complete(int kind, int P, int first)
{
    int n = P - first;
    int *seen = calloc((size_t)P, sizeof *seen), *order = malloc((size_t)P * sizeof *order);
    int top = first == 0 ? 0 : tree_node(kind, P, 0).child[0];
    CHECK(first == 0 || tree_node(kind, P, 0).nchild == 1, "kind %d P=%d: root has one child", kind, P);
    order[0] = top;
    int head = 0, tail = 1, ok = 1;
    while (head < tail) {
        int v = order[head++];
        tree_node_t t = tree_node(kind, P, v);
        ok &= v >= first && v < P && !seen[v];
        seen[v] = 1;
        for (int c = 0; c < t.nchild; c++) {
            tree_node_t ch = tree_node(kind, P, t.child[c]);
            ok &= ch.parent == v;
            order[tail++] = t.child[c];
        }
        /* heap shape: the i-th node in BFS order (1-based) has children
         * 2i, 2i+1 exactly when they exist */
        int i = head, want = (2 * i <= n) + (2 * i + 1 <= n);
        ok &= t.nchild == want;
    }
    CHECK(ok && tail == n, "kind %d P=%d: not a complete binary tree over %d ranks (%d reached)",
          kind, P, n, tail);
    free(seen), free(order);
}

static void check_two_tree_split(int k1, int k2, int P)
{
    /* leaves of T1 are inner nodes of T2 and vice versa, but for at most one rank */
    int both = 0;
    for (int v = 1; v < P; v++) {
        int leaf1 = tree_node(k1, P, v).nchild == 0, leaf2 = tree_node(k2, P, v).nchild == 0;
        both += leaf1 == leaf2;
    }
    CHECK(both <= 1, "P=%d: %d ranks are leaves (or inner) in both trees", P, both);
}

/* edges "parent:child,child;..." as the seed's figures give them */
static void check_shape(int kind, int P, const char *edges)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", edges);
    for (char *e = strtok(buf, ";"); e; e = strtok(NULL, ";")) {
        int parent = atoi(e), want[2] = {-1, -1}, nw = 0;
        for (char *c = strchr(e, ':') + 1; *c; ) {
            want[nw++] = atoi(c);
            char *comma = strchr(c, ',');
            if (!comma)
                break;
            c = comma + 1;
        }
        tree_node_t t = tree_node(kind, P, parent);
        CHECK(t.nchild == nw && t.child[0] == want[0] && (nw < 2 || t.child[1] == want[1]),
              "kind %d P=%d: children of %d are %d,%d (%d), expected %d,%d", kind, P, parent,
              t.child[0], t.child[1], t.nchild, want[0], want[1]);
    }
}

/* A tree over all P ranks from root 0: links agree, every rank reached once. */
static void check_spanning(int kind, int P)
{
    int *seen = calloc((size_t)P, sizeof *seen), *q = malloc((size_t)P * sizeof *q);
    int h = 0, t = 0, ok = 1;
    q[t++] = 0;
    while (h < t && ok) {
        int v = q[h++];
        tree_node_t n = tree_node(kind, P, v);
        ok &= !seen[v];
        seen[v] = 1;
        for (int c = 0; c < n.nchild && ok; c++) {
            ok &= tree_node(kind, P, n.child[c]).parent == v && t < P;
            if (ok)
                q[t++] = n.child[c];
        }
    }
    CHECK(ok && t == P, "kind %d P=%d: not a tree over all ranks", kind, P);
    free(seen), free(q);
}

/* TwoTreeS's edge colouring: a rank's two in-edges differ, the two edges to
 * its children in one tree differ, the root's two edges differ. */
static void check_colouring(int P)
{
    signed char *col = malloc((size_t)(2 * P));
    int rc = twotree_s_colours(P, col), ok = rc == 0;
    for (int v = 1; v < P && ok; v++) {
        ok &= col[2 * v] != col[2 * v + 1] && col[2 * v] >= 0;
        for (int tr = 0; tr < 2; tr++) {
            tree_node_t n = tree_node(tr ? TREE_TWO_S2 : TREE_TWO_S1, P, v);
            if (n.nchild == 2)
                ok &= col[2 * n.child[0] + tr] != col[2 * n.child[1] + tr];
        }
    }
    int c1 = tree_node(TREE_TWO_S1, P, 0).child[0], c2 = tree_node(TREE_TWO_S2, P, 0).child[0];
    if (P > 2)
        ok &= col[2 * c1] != col[2 * c2 + 1];
    CHECK(ok, "P=%d: TwoTreeS edge colouring invalid (rc %d)", P, rc);
    free(col);
}

int main(void)
{
    for (int P = 2; P <= 2000; P++) {
        check_complete(TREE_TWO_C1, P, 1);
        check_complete(TREE_TWO_C2, P, 1);
        check_complete(TREE_TWO_R1, P, 1);
        check_complete(TREE_TWO_R2, P, 1);
        check_complete(TREE_BINARY, P, 0);
        check_two_tree_split(TREE_TWO_C1, TREE_TWO_C2, P);
        check_spanning(TREE_TWO_S1, P);
        check_spanning(TREE_TWO_S2, P);
        check_two_tree_split(TREE_TWO_S1, TREE_TWO_S2, P);
        check_colouring(P);
        for (int v = 0; v < P; v++) { /* the chain */
            tree_node_t t = tree_node(TREE_CHAIN, P, v);
            CHECK(t.parent == v - 1 && t.nchild == (v + 1 < P), "chain P=%d v=%d", P, v);
        }
    }
    /* TwoTreeC, P = 21: T1 is ranks 1..20 in increasing heap order, T2 in
     * decreasing order from 20 (children 2r-P, 2r-P-1) */
    check_shape(TREE_TWO_C1, 21, "0:1;1:2,3;2:4,5;3:6,7;4:8,9;5:10,11;6:12,13;7:14,15;"
                                 "8:16,17;9:18,19;10:20");
    check_shape(TREE_TWO_C2, 21, "0:20;20:19,18;19:17,16;18:15,14;17:13,12;16:11,10;15:9,8;"
                                 "14:7,6;13:5,4;12:3,2;11:1");
    /* Reordered TwoTreeC, P = 20: T1 increasing circularly in 1..19 from
     * ceil(20/2) = 10; T2 decreasing circularly from floor(20/2) = 10 (the
     * seed's Algorithm 3 gives both trees the root child 10 for even P) */
    check_shape(TREE_TWO_R1, 20, "0:10;10:11,12;11:13,14;12:15,16;13:17,18;14:19,1;15:2,3;"
                                 "16:4,5;17:6,7;18:8,9");
    check_shape(TREE_TWO_R2, 20, "0:10;10:9,8;9:7,6;8:5,4;7:3,2;6:1,19;5:18,17;4:16,15;"
                                 "3:14,13;2:12,11");
    /* and P = 21 reordered: T1 from 11, T2 from 10 */
    CHECK(tree_node(TREE_TWO_R1, 21, 0).child[0] == 11 && tree_node(TREE_TWO_R2, 21, 0).child[0] == 10,
          "reordered P=21 roots");
    /* TwoTreeS for P = 2^4 + 1: one extra top node above a full tree of 15 */
    CHECK(tree_node(TREE_TWO_S1, 17, 0).child[0] == 1 && tree_node(TREE_TWO_S1, 17, 1).nchild == 1 &&
              tree_node(TREE_TWO_S1, 17, 1).child[0] == 9,
          "TwoTreeS P=17 top");
    check_shape(TREE_TWO_S1, 17, "9:5,13;5:3,7;13:11,15;3:2,4;7:6,8;11:10,12;15:14,16");
    printf("test_trees: %d checks, %d failures\n", checks, failures);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
