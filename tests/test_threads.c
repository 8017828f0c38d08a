/* test_threads.c — collectives on different communicators run concurrently
 * from different threads (the thread-safety contract of weft.h).  Each of
 * T threads owns a duplicate of the world communicator and runs a stream of
 * allreduces, broadcasts and split-phase reduces on it, checking every
 * result; then the threads make and free communicators at once; then more
 * communicators are made and freed than there are context ids; and a call
 * that cannot finish times out beside a thread whose calls keep moving. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define THREADS 3
#define ITERS 60

static int P, me;

typedef struct {
    weft_comm_t comm;
    int id, failures;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    size_t n = 1000 + 977 * (size_t)w->id;
    int64_t *in = malloc(n * 8), *out = malloc(n * 8);
    for (int it = 0; it < ITERS; it++) {
        for (size_t i = 0; i < n; i++)
            in[i] = (int64_t)(i + (size_t)me * 3 + (size_t)it + (size_t)w->id);
        if (weft_allreduce(in, out, n, WEFT_INT64, WEFT_SUM, w->comm) != WEFT_OK) {
            fprintf(stderr, "thread %d: %s\n", w->id, weft_last_error());
            w->failures++;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            int64_t want = (int64_t)P * (int64_t)(i + (size_t)it + (size_t)w->id) +
                           3 * (int64_t)P * (P - 1) / 2;
            if (out[i] != want) {
                w->failures++;
                break;
            }
        }
        int root = it % P;
        int64_t v = me == root ? 1000 * it + w->id : -1;
        weft_bcast(&v, 1, WEFT_INT64, root, w->comm);
        w->failures += v != 1000 * it + w->id;
        weft_request_t req = NULL;
        int64_t mx = me + it, res = -1;
        if (weft_ireduce(&mx, &res, 1, WEFT_INT64, WEFT_MAX, root, w->comm, &req) != WEFT_OK ||
            weft_wait(&req) != WEFT_OK) {
            w->failures++;
            break; /* the job is dead: req may never have been set */
        }
        if (me == root)
            w->failures += res != P - 1 + it;
    }
    free(in);
    free(out);
    return NULL;
}

/* Each thread makes and frees communicators from its own parent while the
 * others do the same: two of them given one context id would take each
 * other's messages.  Every fifth one lives to the end, so that ids are
 * reused around live ones. */
enum { MADE = 60 };

static void *make_comms(void *arg)
{
    worker_t *w = arg;
    weft_comm_t kept[MADE];
    int nkept = 0;
    for (int it = 0; it < MADE && !w->failures; it++) {
        weft_comm_t c = NULL;
        int rc = it % 2 ? weft_comm_dup(w->comm, &c)
                        : weft_comm_split(w->comm, me % 2, -me, &c);
        if (rc != WEFT_OK) {
            fprintf(stderr, "thread %d, communicator %d: %s\n", w->id, it, weft_last_error());
            w->failures++;
            break;
        }
        int n = weft_comm_size(c);
        int64_t v[3] = {w->id, it, me}, sum[3];
        if (weft_allreduce(v, sum, 3, WEFT_INT64, WEFT_SUM, c) != WEFT_OK ||
            sum[0] != (int64_t)n * w->id || sum[1] != (int64_t)n * it) {
            fprintf(stderr, "thread %d, communicator %d: wrong sum or %s\n", w->id, it,
                    weft_last_error());
            w->failures++;
        }
        if (it % 5 == 0)
            kept[nkept++] = c;
        else
            weft_comm_free(&c);
    }
    while (nkept)
        weft_comm_free(&kept[--nkept]);
    return NULL;
}

/* More communicators than there are context ids, made and freed in turn:
 * ids are reused.  Calls go on from where the id's last holder stopped,
 * so a call on each new one must find nothing of the old ones. */
static int many_comms(weft_comm_t world)
{
    int failures = 0;
    for (int i = 0; i < 70000 && !failures; i++) {
        weft_comm_t c = NULL;
        if (weft_comm_dup(world, &c) != WEFT_OK) {
            fprintf(stderr, "communicator %d: %s\n", i, weft_last_error());
            return 1;
        }
        if (i % 997 == 0) {
            int32_t v = i + me, s = 0;
            failures += weft_allreduce(&v, &s, 1, WEFT_INT32, WEFT_SUM, c) != WEFT_OK ||
                        s != P * i + P * (P - 1) / 2;
        }
        failures += weft_comm_free(&c) != WEFT_OK;
    }
    return failures;
}

/* A call that can never finish (the last rank never makes it) still times
 * out while another thread's calls, on a communicator without that rank,
 * keep moving: a wait looks at its time limit when its own call does not
 * move, whatever the others do.  (It looked only in turns where no call
 * moved, and took a transport's messages, any call's, for its own moves:
 * here the limit of 300 ms came at up to 430 ms; beside calls that never
 * pause it would never come.) */
typedef struct {
    weft_comm_t comm;
    int stop, calls, failures;
} busy_t;

static void *keep_busy(void *arg)
{
    busy_t *b = arg;
    /* calls of many steps, so that one is nearly always in flight; every
     * rank stops after the same call: the first where any asked to (its
     * flag, element 0, reduced with MAX) */
    enum { N = 1 << 16 };
    int32_t *in = calloc(N, 4), *out = calloc(N, 4);
    for (out[0] = 0; !out[0]; b->calls++) {
        in[0] = __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
        if (weft_allreduce(in, out, N, WEFT_INT32, WEFT_MAX, b->comm) != WEFT_OK) {
            fprintf(stderr, "busy thread: %s\n", weft_last_error());
            b->failures++;
            break;
        }
    }
    free(in);
    free(out);
    return NULL;
}

static int stalled_beside_busy(weft_comm_t world, weft_comm_t *late_out)
{
    int failures = 0, last = P - 1;
    weft_comm_t late = NULL, busy = NULL;
    if (weft_comm_dup(world, late_out) ||
        weft_comm_split(world, me == last ? WEFT_UNDEFINED : 0, me, &busy)) {
        fprintf(stderr, "stalled_beside_busy: %s\n", weft_last_error());
        return 1;
    }
    late = *late_out;
    if (me != last) {
        weft_comm_set_timeout(late, 300);
        busy_t b = {busy, 0, 0, 0};
        pthread_t th;
        pthread_create(&th, NULL, keep_busy, &b);
        int64_t *v = calloc(1 << 16, 8), *sum = calloc(1 << 16, 8);
        int rc = weft_allreduce(v, sum, 1 << 16, WEFT_INT64, WEFT_SUM, late);
        char why[512];
        snprintf(why, sizeof why, "%s", weft_last_error());
        free(v);
        free(sum);
        __atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
        /* the first rank to time out revokes: the others may see that */
        if (rc != WEFT_ETIMEDOUT && rc != WEFT_EPEER) {
            fprintf(stderr, "rank %d: a call the last rank never makes, beside %d busy "
                    "calls: %d (%s), want WEFT_ETIMEDOUT or WEFT_EPEER\n", me, b.calls, rc,
                    why);
            failures++;
        }
        failures += b.failures;
        weft_comm_free(&busy);
    }
    return failures;
}

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv))
        return 1;
    weft_comm_t world = weft_comm_world();
    P = weft_comm_size(world), me = weft_comm_rank(world);
    worker_t w[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t].id = t, w[t].failures = 0;
        if (weft_comm_dup(world, &w[t].comm))
            return 1;
    }
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, work, &w[t]);
    int failures = 0;
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, make_comms, &w[t]);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        failures += w[t].failures;
        weft_comm_free(&w[t].comm);
    }
    failures += many_comms(world);
    /* the last rank keeps `late` until every rank is done with it: freed,
     * it would tell the others it never made their call, and they would
     * fail with WEFT_EMISMATCH before the time limit this checks */
    weft_comm_t late = NULL;
    if (P >= 3)
        failures += stalled_beside_busy(world, &late);
    weft_allreduce(WEFT_IN_PLACE, &failures, 1, WEFT_INT32, WEFT_SUM, world);
    if (late)
        weft_comm_free(&late);
    if (me == 0)
        printf("test_threads P=%d: %d threads x %d iterations, %d failures\n", P, THREADS, ITERS,
               failures);
    weft_finalize();
    return failures ? 1 : 0;
}
