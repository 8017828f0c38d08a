/* fuzz_params.c — libFuzzer harness for the algorithm parameter parser
 * (algo_parse_params) and the usability check that reads its result.
 * Input: one byte choosing the algorithm and P, then the "key=value,..."
 * text.  Whatever the text, parsing must end in WEFT_OK or WEFT_EINVAL with
 * a message, and what it accepts must be in range. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n < 2)
        return 0;
    size_t cnt;
    const algo_t *t = algo_table(&cnt);
    const algo_t *al = &t[data[0] % cnt];
    char *text = malloc(n);
    memcpy(text, data + 1, n - 1);
    text[n - 1] = '\0';
    algo_params_t p;
    int rc = algo_parse_params(al, text, &p);
    assert(rc == WEFT_OK || (rc == WEFT_EINVAL && weft_last_error()[0]));
    if (rc == WEFT_OK) {
        assert(p.chunks >= 0 && p.chunks <= 16384);
        assert(p.fanout >= 0 && p.fanout <= 1024);
        assert(p.sync == 0 || p.sync == 1);
        assert(p.stage == STAGE_STREAM || p.stage == STAGE_PLAIN ||
               (p.stage == STAGE_SENT && al->coll != WEFT_COLL_BCAST));
        assert(p.threshold >= 0 && p.threshold <= 100000001);
        assert(!p.reduce[0] || algo_find(WEFT_COLL_REDUCE, p.reduce));
        assert(!p.bcast[0] || algo_find(WEFT_COLL_BCAST, p.bcast));
        assert(!p.inter[0] || algo_find(al->coll, p.inter));
        /* the usability check over a few node maps must answer, never crash */
        int P = 1 + data[0] % 37, nodes[37];
        for (int r = 0; r < P; r++)
            nodes[r] = r % (1 + data[0] % 4);
        coll_args_t a;
        memset(&a, 0, sizeof a);
        a.coll = al->coll, a.nrank = P, a.rank = P - 1, a.count = 3, a.esize = 4;
        a.commutative = data[0] & 1, a.idempotent = data[0] & 2, a.params = p;
        a.node_of = nodes, a.nnodes = P < 1 + data[0] % 4 ? P : 1 + data[0] % 4;
        rc = algo_check_usable(al, &a);
        assert(rc == WEFT_OK || rc == WEFT_EINVAL);
    }
    free(text);
    return 0;
}
