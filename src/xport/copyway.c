/* copyway.c — the choice between cells and single copy for the kinds of
 * a pair's messages measured, from the receiver's own timings
 * (copyway.h). */
#include "copyway.h"

#include <limits.h>

static unsigned bucket_from(size_t min, size_t bytes)
{
    unsigned b = 0;
    for (size_t s = min * 2; s <= bytes && b + 1 < COPY_WAY_BUCKETS; s *= 2)
        b++;
    return b;
}

unsigned copy_way_bucket_of(const copy_ways_t *w, size_t bytes)
{
    return bucket_from(w->min ? w->min : COPY_WAY_MIN, bytes);
}

bool copy_way_single(copy_ways_t *w, unsigned verdict, size_t bytes, bool by_default,
                     bool *timed)
{
    unsigned b = copy_way_bucket_of(w, bytes);
    uint32_t n = w->sent[b]++;
    unsigned way = COPY_WAY_OF(verdict);
    uint32_t retry = way == COPY_WAY_UNKNOWN        ? 2 * COPY_WAY_RUN
                     : verdict & COPY_WAY_CARRIED ? COPY_WAY_RETRY_CARRIED
                     : verdict & COPY_WAY_CLEAR   ? COPY_WAY_RETRY_CLEAR
                                                  : COPY_WAY_RETRY;
    uint32_t k = n % retry;
    if (timed) /* undecided, every copy; else the winner's run just before the loser's, and it */
        *timed = k >= retry - 2 * COPY_WAY_RUN && !(w->settle && n < 2 * COPY_WAY_RUN);
    if (way == COPY_WAY_UNKNOWN) /* the doubtful way's run first, the default's after it */
        return k < COPY_WAY_RUN ? !by_default : by_default;
    bool single = way == COPY_WAY_SINGLE;
    return k >= retry - COPY_WAY_RUN ? !single : single;
}

unsigned copy_way_prior(const uint8_t *verdicts, unsigned b, bool any_distance)
{
    if (COPY_WAY_OF(verdicts[b]) != COPY_WAY_UNKNOWN)
        return verdicts[b];
    unsigned from = b;
    while (from-- > 0 && COPY_WAY_OF(verdicts[from]) == COPY_WAY_UNKNOWN)
        ;
    if (from == UINT_MAX || !(verdicts[from] & COPY_WAY_CLEAR) || (!any_distance && from + 1 != b))
        return COPY_WAY_UNKNOWN;
    return COPY_WAY_OF(verdicts[from]) | COPY_WAY_CARRIED;
}

/* A way's figure: the best of its samples kept, 0 while it has too few.
 * The best, not the mean: an interrupt or a page fault only slows a copy,
 * so the fastest recent one says what the way can do now (but see
 * typical, copyway.h). */
static uint32_t way_best(const copy_ways_t *w, unsigned b, unsigned i)
{
    if (w->taken[b][i] < COPY_WAY_NEEDED)
        return 0;
    uint32_t best = UINT32_MAX;
    uint64_t sum = 0;
    for (unsigned k = 0; k < w->taken[b][i]; k++) {
        sum += w->ns_kib[b][i][k];
        if (w->ns_kib[b][i][k] < best)
            best = w->ns_kib[b][i][k];
    }
    return w->typical ? (uint32_t)(sum / w->taken[b][i]) : best;
}

unsigned copy_way_sample(copy_ways_t *w, size_t bytes, unsigned way, uint64_t ns,
                         uint32_t best_ns_kib[2])
{
    unsigned b = copy_way_bucket_of(w, bytes), i = way == COPY_WAY_SINGLE;
    if (w->last[b] == way) {
        uint64_t per_kib = bytes ? ns * 1024 / bytes : 0;
        per_kib = per_kib < 1 ? 1 : per_kib; /* 0 means "no figure" */
        w->ns_kib[b][i][w->next[b][i]] = per_kib > UINT32_MAX ? UINT32_MAX : (uint32_t)per_kib;
        w->next[b][i] = (uint8_t)((w->next[b][i] + 1) % COPY_WAY_SAMPLES);
        if (w->taken[b][i] < COPY_WAY_SAMPLES)
            w->taken[b][i]++;
    }
    w->last[b] = (uint8_t)way;
    uint32_t cells = way_best(w, b, 0), single = way_best(w, b, 1);
    if (best_ns_kib)
        best_ns_kib[0] = cells, best_ns_kib[1] = single;
    if (!cells || !single)
        return w->verdict[b];
    unsigned cur = COPY_WAY_OF(w->verdict[b]), next = cur;
    if (cur == COPY_WAY_UNKNOWN)
        next = single < cells ? COPY_WAY_SINGLE : COPY_WAY_CELLS;
    else if (cur == COPY_WAY_CELLS && (double)single * COPY_WAY_SWITCH_RATIO < (double)cells)
        next = COPY_WAY_SINGLE;
    else if (cur == COPY_WAY_SINGLE && (double)cells * COPY_WAY_SWITCH_RATIO < (double)single)
        next = COPY_WAY_CELLS;
    uint32_t won = next == COPY_WAY_SINGLE ? single : cells;
    uint32_t lost = next == COPY_WAY_SINGLE ? cells : single;
    bool clear = (double)won * COPY_WAY_CLEAR_RATIO <= (double)lost;
    w->verdict[b] = (uint8_t)(next | (clear ? COPY_WAY_CLEAR : 0));
    return w->verdict[b];
}
