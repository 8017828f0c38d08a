/* fuzz_tuning.c — libFuzzer harness for the tuning-table parser (src/tune/
 * table.c).  Whatever the text, parsing must end in WEFT_OK or WEFT_EINVAL
 * with a message naming the source; what it accepts must be well formed
 * (ranges ordered, every choice a registry algorithm of the row's
 * collective) and must never have two rows one call could match. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/core.h"
#include "tune/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *text = malloc(n + 1);
    memcpy(text, data, n);
    text[n] = '\0';
    tune_table_t t;
    int rc = tune_parse(text, "fuzz", &t);
    assert(rc == WEFT_OK || ((rc == WEFT_EINVAL || rc == WEFT_ENOMEM) &&
                             !strncmp(weft_last_error(), "fuzz", 4)));
    if (rc == WEFT_OK) {
        for (int i = 0; i < t.nrows; i++) {
            const tune_row_t *r = &t.rows[i];
            assert(r->p_lo >= 1 && r->p_lo <= r->p_hi && r->b_lo <= r->b_hi);
            assert(r->nchoice >= 1 && r->nchoice <= TUNE_CHOICES);
            for (int c = 0; c < r->nchoice; c++)
                assert(r->choice[c].al && r->choice[c].al->coll == r->coll);
        }
        tune_free(&t);
    }
    free(text);
    return 0;
}
