/* test_wait_orders.c — split-phase calls waited for in different orders on
 * different ranks.  MPI lets a rank wait for its requests in any order, so
 * a wait must move the calls it does not wait for: a peer may be blocked
 * in the first while this rank waits for the last.  Per algorithm (the
 * board and the arrival-driven ones, whose calls nothing but their own
 * progress moves, and a schedule-built one and AUTO for comparison), K
 * allreduces in flight per round: even ranks wait for them first to last,
 * odd ranks last to first, and every third rank makes them blocking.
 * Calls two apart share a board slot or an arrival record, so this also
 * checks that a rank's calls enter those in call order.  Every result is
 * checked; a hang fails by the test's time limit (WEFT_TIMEOUT_MS turns it
 * into an error message).  Then large calls (0.4-1.2 MB a call, the count
 * changing from round to round) by schedule-built algorithms: a peer a
 * call ahead sends messages this rank has posted no receive for, which the
 * shared-memory transport holds in buffers it keeps and hands out again for
 * messages of other sizes (shm.c, "Unexpected messages' buffers").
 * `--mpi` (under mpirun): the same over the MPI transport, where the
 * arrival-driven algorithms and the board refuse (they need one machine's
 * shared memory) unless the ranks share a node. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_world.h"
#include "weft.h"

static int me, P;
#define CHECK_WHO() fprintf(stderr, "rank %d/%d: ", me, P)
#include "testing.h"

enum { K = 6, ROUNDS = 60, MAXCOUNT = 1000, BIGCOUNT = 300000, BIGROUNDS = 9 };
static int32_t *in, *out; /* K buffers of BIGCOUNT elements each */

static int32_t val(int rank, int round, int k, int i) { return rank * 1000 + round * 7 + k * 3 + i; }

static int32_t *slot(int32_t *b, int k) { return b + (size_t)k * BIGCOUNT; }

/* rounds rounds of K calls of count elements (with vary, count, 2/3 and
 * 1/3 of it in turn) */
static void one_algorithm(weft_comm_t w, const char *algo, int count, int rounds, bool vary)
{
    int rc = weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, algo, NULL);
    CHECK(rc == WEFT_OK, "%s: %s", algo, weft_last_error());
    if (rc)
        return;
    bool blocking = me % 3 == 2, backwards = me % 2 == 1;
    int full = count;
    for (int round = 0; round < rounds; round++) {
        weft_request_t req[K];
        count = vary ? full - round % 3 * (full / 3) : full;
        for (int k = 0; k < K; k++) {
            int32_t *a = slot(in, k), *b = slot(out, k);
            for (int i = 0; i < count; i++)
                a[i] = val(me, round, k, i), b[i] = -1;
            rc = blocking ? weft_allreduce(a, b, (size_t)count, WEFT_INT32, WEFT_SUM, w)
                          : weft_iallreduce(a, b, (size_t)count, WEFT_INT32, WEFT_SUM, w,
                                            &req[k]);
            if (rc && round == 0 && k == 0 && strstr(weft_last_error(), "one machine's shared")) {
                /* over MPI between nodes: refused, and alike on every rank */
                int32_t refused[2] = {1, -1};
                weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
                weft_allreduce(WEFT_IN_PLACE, refused, 2, WEFT_INT32, WEFT_MAX, w);
                CHECK(refused[0] == -refused[1], "%s: refused on some ranks only", algo);
                if (me == 0)
                    printf("test_wait_orders: %s refused over this transport\n", algo);
                return;
            }
            CHECK(rc == WEFT_OK, "%s, %d elements, round %d, call %d: %s", algo, count, round, k,
                  weft_last_error());
            if (rc)
                return;
        }
        for (int j = 0; j < K && !blocking; j++) {
            int k = backwards ? K - 1 - j : j;
            rc = weft_wait(&req[k]);
            CHECK(rc == WEFT_OK, "%s, %d elements, round %d, wait %d: %s", algo, count, round, k,
                  weft_last_error());
            if (rc)
                return;
        }
        for (int k = 0; k < K; k++)
            for (int i = 0; i < count; i++) {
                int32_t want = 0;
                for (int r = 0; r < P; r++)
                    want += val(r, round, k, i);
                int32_t got = slot(out, k)[i];
                if (got != want) { /* one CHECK per wrong call, not per element */
                    CHECK(got == want, "%s, %d elements, round %d, call %d [%d]: %d, want %d",
                          algo, count, round, k, i, got, want);
                    break;
                }
            }
        checks++;
    }
}

int main(int argc, char **argv)
{
    weft_comm_t w;
    bool use_mpi; /* --mpi: under mpirun */
    if (test_world("test_wait_orders", &argc, &argv, &w, &use_mpi))
        return 1;
    me = weft_comm_rank(w);
    P = weft_comm_size(w);
    static const char *const algos[] = {"board",    "pap_leader", "shm_twostep",        "pap_chain",
                                        "adaptive", "hier_pap",   "recursive_doubling", "auto"};
    static const int counts[] = {4, MAXCOUNT};
    in = malloc((size_t)K * BIGCOUNT * sizeof *in);
    out = malloc((size_t)K * BIGCOUNT * sizeof *out);
    if (!in || !out) {
        fprintf(stderr, "test_wait_orders: out of memory\n");
        return 1;
    }
    for (size_t a = 0; a < sizeof algos / sizeof *algos; a++)
        for (size_t c = 0; c < 2; c++)
            if (strcmp(algos[a], "board") || counts[c] * 4 <= (P <= 4 ? 8232 : 2088)) /* a slot */
                one_algorithm(w, algos[a], counts[c], ROUNDS, false);
    static const char *const big_algos[] = {"ring", "rabenseifner", "recursive_doubling", "auto"};
    for (size_t a = 0; a < sizeof big_algos / sizeof *big_algos; a++)
        one_algorithm(w, big_algos[a], BIGCOUNT, BIGROUNDS, true);
    free(in);
    free(out);
    weft_set_algorithm(w, WEFT_COLL_ALLREDUCE, "auto", NULL);
    int total = failures;
    weft_allreduce(WEFT_IN_PLACE, &total, 1, WEFT_INT32, WEFT_SUM, w);
    if (me == 0)
        printf("test_wait_orders P=%d%s: %d checks on rank 0, %d failures on all ranks\n", P,
               use_mpi ? " (MPI)" : "", checks, total);
#ifdef WEFT_HAVE_MPI
    if (use_mpi) {
        weft_comm_free(&w);
        MPI_Finalize();
        return total ? 1 : 0;
    }
#endif
    weft_finalize();
    return total ? 1 : 0;
}
