/* test_pmpi_threads.c — the drop-in under MPI_THREAD_MULTIPLE: T threads,
 * each with its own duplicate of MPI_COMM_WORLD, are released together so
 * that their first calls (which create the weft communicators) race, then
 * each runs a stream of allreduces, broadcasts and reduces with exact
 * integer checks.  Then each thread creates communicators with
 * MPI_Comm_create_group (on its own parent, the others doing the same at
 * once) and reduces on each fresh one, whose weft twin is made inside that
 * call: a hidden MPI communicator creation there hung Open MPI 4.1 (MPICH's
 * threads/comm/comm_create_group_threads).  Last, on parents no weft call
 * has touched (so no weft communicator keeps the node's segment open), each
 * thread creates, uses in a barrier and frees communicators with
 * MPI_Comm_create, the others at once: each free may close the segment
 * while another thread's free still reads it (a segfault in the free until
 * comm_destroy kept its count to the end; MPICH's
 * threads/comm/comm_create_threads).  pmpi_threads.sh checks the exit
 * status and that the drop-in's log counts every call (its counters are
 * shared by the threads). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 150
#define FRESH 60 /* communicators each thread creates */

static MPI_Comm comms[THREADS], bare[THREADS];
static pthread_barrier_t start;
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static int me, P, failures;

static void fail(int t, int it, const char *what)
{
    fprintf(stderr, "rank %d thread %d call %d: wrong %s\n", me, t, it, what);
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static void *work(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    pthread_barrier_wait(&start);
    for (int it = 0; it < ITERS; it++) {
        int n = 1 + (it * 997 + t * 131) % 6000, root = (it + t) % P;
        long long *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
        for (int i = 0; i < n; i++)
            in[i] = (long long)me * 1000003 + i + t;
        MPI_Allreduce(in, out, n, MPI_LONG_LONG, MPI_SUM, c);
        for (int i = 0; i < n; i++)
            if (out[i] != 1000003LL * P * (P - 1) / 2 + (long long)P * (i + t)) {
                fail(t, it, "allreduce");
                break;
            }
        MPI_Reduce(in, out, n, MPI_LONG_LONG, MPI_MAX, root, c);
        for (int i = 0; me == root && i < n; i++)
            if (out[i] != (long long)(P - 1) * 1000003 + i + t) {
                fail(t, it, "reduce");
                break;
            }
        MPI_Bcast(in, n, MPI_LONG_LONG, root, c);
        for (int i = 0; i < n; i++)
            if (in[i] != (long long)root * 1000003 + i + t) {
                fail(t, it, "bcast");
                break;
            }
        free(in);
        free(out);
    }
    return NULL;
}

static void *fresh(void *arg)
{
    int t = (int)(long)arg;
    MPI_Group all;
    MPI_Comm_group(comms[t], &all);
    pthread_barrier_wait(&start);
    for (int it = 0; it < FRESH; it++) {
        MPI_Comm c;
        MPI_Comm_create_group(comms[t], all, t, &c);
        int sum = 0, mine = me + it;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c);
        if (sum != P * (P - 1) / 2 + P * it)
            fail(t, it, "allreduce on a fresh communicator");
        MPI_Comm_free(&c);
        /* and one of one rank, as MPICH's test does: collective on
         * MPI_COMM_SELF, so one thread at a time */
        MPI_Comm self;
        pthread_mutex_lock(&self_lock);
        MPI_Comm_dup(MPI_COMM_SELF, &self);
        pthread_mutex_unlock(&self_lock);
        MPI_Barrier(self);
        MPI_Comm_free(&self);
    }
    MPI_Group_free(&all);
    return NULL;
}

static void *bare_create(void *arg)
{
    int t = (int)(long)arg;
    MPI_Group all;
    MPI_Comm_group(bare[t], &all);
    pthread_barrier_wait(&start);
    for (int it = 0; it < FRESH; it++) {
        MPI_Comm c;
        MPI_Comm_create(bare[t], all, &c);
        MPI_Barrier(c);
        MPI_Comm_free(&c);
    }
    MPI_Group_free(&all);
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, fn, (void *)(long)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "the MPI library gives thread level %d, not MPI_THREAD_MULTIPLE\n",
                provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_barrier_init(&start, NULL, THREADS);
    run_threads(work);
    run_threads(fresh);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&comms[t]);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &bare[t]);
    run_threads(bare_create);
    for (int t = 0; t < THREADS; t++)
        MPI_Comm_free(&bare[t]);
    pthread_barrier_destroy(&start);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("%d threads x %d calls of 3 collectives, then %d fresh communicators each: %d "
               "wrong results; %d created and freed at once each\n", THREADS, ITERS, FRESH, total,
               FRESH);
    MPI_Finalize();
    return total != 0;
}
