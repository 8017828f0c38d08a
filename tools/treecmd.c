/* treecmd.c — `weft tree pipeline|bintree|twotree|twotree_reordered --np P`:
 * prints the trees a pipelined algorithm uses, level by level, from the same
 * functions the builders call (src/algo/tree_patterns.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tree_patterns.h"
#include "tool.h"

static void print_tree(int kind, int P, const char *title)
{
    int *level = malloc((size_t)P * sizeof *level), *next = malloc((size_t)P * sizeof *next);
    if (!level || !next) {
        free(level), free(next);
        return;
    }
    printf("%s\n", title);
    int n = 1, depth = 0;
    level[0] = 0;
    while (n) {
        int m = 0;
        printf("  level %d:", depth);
        for (int i = 0; i < n; i++) {
            tree_node_t t = tree_node(kind, P, level[i]);
            printf(" %d", level[i]);
            for (int c = 0; c < t.nchild; c++)
                next[m++] = t.child[c];
        }
        printf("\n");
        memcpy(level, next, (size_t)m * sizeof *level);
        n = m;
        depth++;
    }
    printf("  edges:");
    for (int v = 0; v < P; v++) {
        tree_node_t t = tree_node(kind, P, v);
        if (t.nchild == 1)
            printf(" %d->%d", v, t.child[0]);
        else if (t.nchild == 2)
            printf(" %d->%d,%d", v, t.child[0], t.child[1]);
    }
    printf("\n");
    free(level), free(next);
}

int cmd_tree(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        printf("usage: weft tree pipeline|bintree|twotree|twotree_reordered|twotree_s --np P\n"
               "Ranks are relative to the root (vrank = rank - root mod P).\n");
        return argc < 2 ? 2 : 0;
    }
    int P = 0;
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--np"))
            P = atoi(argv[i + 1]);
    if (P < 1 || P > 1 << 20) {
        fprintf(stderr, "weft tree: give --np P (1..1048576)\n");
        return 2;
    }
    const char *n = argv[1];
    if (!strcmp(n, "pipeline"))
        print_tree(TREE_CHAIN, P, "chain (all chunks):");
    else if (!strcmp(n, "bintree"))
        print_tree(TREE_BINARY, P, "complete binary tree (all chunks):");
    else if (!strcmp(n, "twotree")) {
        print_tree(TREE_TWO_C1, P, "TwoTreeC T1 (even chunks):");
        print_tree(TREE_TWO_C2, P, "TwoTreeC T2 (odd chunks):");
    } else if (!strcmp(n, "twotree_reordered")) {
        print_tree(TREE_TWO_R1, P, "Reordered TwoTreeC T1 (even chunks):");
        print_tree(TREE_TWO_R2, P, "Reordered TwoTreeC T2 (odd chunks):");
    } else if (!strcmp(n, "twotree_s")) {
        print_tree(TREE_TWO_S1, P, "TwoTreeS T1 (even chunks):");
        print_tree(TREE_TWO_S2, P, "TwoTreeS T2 (odd chunks):");
        signed char *col = malloc((size_t)(2 * P));
        if (col && twotree_s_colours(P, col) == 0) {
            printf("edge colours (parent->child:colour):\n  T1:");
            for (int t = 0; t < 2; t++) {
                if (t)
                    printf("\n  T2:");
                for (int v = 1; v < P; v++)
                    printf(" %d->%d:%d", tree_node(t ? TREE_TWO_S2 : TREE_TWO_S1, P, v).parent, v,
                           col[2 * v + t]);
            }
            printf("\n");
        } else {
            printf("no 2-colouring of the edges for P=%d\n", P);
        }
        free(col);
    } else {
        fprintf(stderr, "weft tree: unknown tree '%s'\n", n);
        return 2;
    }
    return 0;
}
