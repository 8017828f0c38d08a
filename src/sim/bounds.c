/* bounds.c — lower bounds on each collective's time under the model, in
 * the alpha-beta-gamma terms of the seeds' cost formulas (docs/ALGORITHMS.md,
 * "Lower bounds", derives them).  d = ceil(log2 P): in each alpha the number
 * of ranks that hold (or have contributed to) a piece of data at most
 * doubles. */
#include <math.h>

#include "sim.h"

/* A message of s bytes takes L + 2o + (s - 1) max(G, O) end to end, which
 * is alpha + s beta with these two. */
double sim_beta(const sim_model_t *m) { return m->G > m->O ? m->G : m->O; }
double sim_alpha(const sim_model_t *m)
{
    double a = m->L + 2 * m->o - sim_beta(m);
    return a > 0 ? a : 0;
}

static int ceil_log2(int P)
{
    int d = 0;
    while ((1ll << d) < P)
        d++;
    return d;
}

/* Broadcast of n bytes: a k-piece pipeline over d levels takes
 * (d + k - 1)(alpha + n beta / k); its minimum over real k,
 * (sqrt((d - 1) alpha) + sqrt(n beta))^2, is the single-port bound of
 * Johnsson and Ho (Bar-Noy and Kipnis for the postal model), below every
 * integer k's time. */
static double bcast_bound(int d, double n, double a, double b)
{
    if (d == 0)
        return 0;
    double x = sqrt((d - 1) * a) + sqrt(n * b);
    return x * x > a + n * b ? x * x : a + n * b;
}

double sim_lower_bound(weft_coll_t coll, int P, uint64_t n, const sim_model_t *m)
{
    if (P <= 1)
        return 0;
    int d = ceil_log2(P);
    double a = sim_alpha(m), b = sim_beta(m), g = m->gamma, N = (double)n;
    double f = (double)(P - 1) / P;
    switch (coll) {
    case WEFT_COLL_BCAST:
        return bcast_bound(d, N, a, b);
    case WEFT_COLL_REDUCE: {
        /* the broadcast's communication reversed; and the (P-1) n bytes of
         * combining shared by P ranks at best */
        double comm = bcast_bound(d, N, a, b), work = d * a + f * N * g;
        return comm > work ? comm : work;
    }
    case WEFT_COLL_ALLREDUCE:
        /* every rank sends and receives (P-1)/P of the vector twice (once
         * reduced, once the result) and combines (P-1)/P of it */
        return d * a + 2 * f * N * b + f * N * g;
    case WEFT_COLL_REDUCE_SCATTER:
        /* n is one rank's block: of the P n bytes each rank holds, (P-1)
         * blocks must leave it and as many be combined (Chan et al.) */
        return d * a + (P - 1) * N * (b + g);
    case WEFT_COLL_ALLGATHER:
    case WEFT_COLL_SCATTER:
    case WEFT_COLL_GATHER:
        /* (P-1) blocks of n bytes arrive at every rank (leave the root) */
        return d * a + (P - 1) * N * b;
    case WEFT_COLL_BARRIER:
        return d * a;
    default:
        return -1;
    }
}
