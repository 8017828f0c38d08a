/* pap_model.c — the arrival-driven algorithms (src/shmcoll) under a given
 * arrival pattern, for `weft pap whatif`: they are not schedules, so the
 * simulator cannot run them; this follows each one's protocol step by step
 * under the LogGP quantities of the model instead (DESIGN.md: "the
 * simulator models them from a given arrival pattern").
 *
 * For a message of n bytes: end to end a = L + 2o + (n-1)G; a sender is
 * busy s = o + (n-1)max(G, O) per message it sends back to back; reducing
 * n bytes takes gamma n.  Ranks arrive at arrive[i] (ns); the result is the
 * time inside summed over ranks (leaving minus arriving). */
#include <stdlib.h>
#include <string.h>

#include "predict.h"
#include "tool.h"

typedef struct lgp {
    double a, s, red;
} lgp_t;

static lgp_t lgp_of(const sim_model_t *m, uint64_t bytes)
{
    double n = bytes ? (double)bytes : 1, per = m->G > m->O ? m->G : m->O;
    lgp_t q = {m->L + 2 * m->o + (n - 1) * m->G, m->o + (n - 1) * per, m->gamma * (double)bytes};
    return q;
}

static double maxd(double a, double b) { return a > b ? a : b; }

/* Ranks by arrival, earliest first (ties by rank). */
static const double *sort_key;
static int by_arrival(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    if (sort_key[a] != sort_key[b])
        return sort_key[a] < sort_key[b] ? -1 : 1;
    return a - b;
}

/* The leader algorithms: the others send to `leader` at arrival; it
 * reduces them in `order` (arrival or rank order), then sends the result
 * to each in rank order. */
static double leader_inside(const lgp_t *q, const double *arrive, const int *order, int n,
                            int leader)
{
    double t = arrive[leader];
    for (int k = 0; k < n; k++) {
        int i = order[k];
        if (i != leader)
            t = maxd(t, arrive[i] + q->a) + q->red;
    }
    double sum = 0;
    int sent = 0;
    for (int i = 0; i < n; i++)
        if (i != leader)
            sum += t + sent++ * q->s + q->a - arrive[i];
    return sum + t + sent * q->s - arrive[leader];
}

/* The chain: the k-th arrival adds its part once the (k-1)-th has handed
 * the partial on (which it can only once the k-th has arrived); done[k] is
 * when the k-th holds its partial, left[k] when its hand-over is over. */
static void chain(const lgp_t *q, const double *arrive, const int *order, int n, double *done,
                  double *left)
{
    done[0] = arrive[order[0]];
    for (int k = 1; k < n; k++) {
        double start = maxd(done[k - 1], arrive[order[k]]);
        left[k - 1] = start + q->s;
        done[k] = start + q->a + q->red;
    }
}

/* The binomial broadcast from rank `root` starting at t: when each rank
 * has the result (children served largest subtree first, back to back). */
static void bcast_times(const lgp_t *q, int n, int root, double t, double *got)
{
    for (int v = 0; v < n; v++) {
        int r = (v + root) % n;
        if (!v) {
            got[r] = t;
            continue;
        }
        int span = v & -v, parent = v - span;
        /* the parent's children come in decreasing span: v is the j-th */
        int j = 0;
        for (int m = binomial_span(parent, n) / 2; m > span; m /= 2)
            j += parent + m < n;
        got[r] = got[(parent + root) % n] + j * q->s + q->a;
    }
}

double pap_model_inside(const char *algo, weft_coll_t coll, const sim_model_t *m,
                        const double *arrive, int n, uint64_t bytes, int root)
{
    if (n < 1)
        return -1;
    lgp_t q = lgp_of(m, bytes);
    int *order = malloc((size_t)n * sizeof *order);
    double *done = malloc((size_t)n * sizeof *done), *left = malloc((size_t)n * sizeof *left),
           *got = malloc((size_t)n * sizeof *got), sum = -1;
    if (!order || !done || !left || !got)
        goto out;
    for (int i = 0; i < n; i++)
        order[i] = i;
    sort_key = arrive;
    bool by_rank = !strcmp(algo, "shm_twostep");
    if (!by_rank)
        qsort(order, (size_t)n, sizeof *order, by_arrival);
    if (n == 1) {
        sum = 0;
    } else if (coll == WEFT_COLL_ALLREDUCE && (by_rank || !strcmp(algo, "pap_leader"))) {
        sum = leader_inside(&q, arrive, order, n, by_rank ? 0 : order[0]);
    } else if (!strcmp(algo, "pap_chain")) {
        chain(&q, arrive, order, n, done, left);
        int last = order[n - 1];
        sum = 0;
        if (coll == WEFT_COLL_ALLREDUCE) {
            bcast_times(&q, n, last, done[n - 1], got);
            for (int i = 0; i < n; i++)
                sum += got[i] - arrive[i];
        } else if (coll == WEFT_COLL_REDUCE) {
            double final = last == root ? done[n - 1] : done[n - 1] + q.a;
            for (int k = 0; k < n; k++) {
                int i = order[k];
                if (i == root)
                    sum += final - arrive[i];
                else
                    sum += (k == n - 1 ? done[k] + q.s : left[k]) - arrive[i];
            }
        } else {
            sum = -1;
        }
    }
out:
    free(order), free(done), free(left), free(got);
    return sum;
}
