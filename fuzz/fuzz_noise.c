/* fuzz_noise.c — libFuzzer harness for the simulator's noise traces
 * (src/sim/noise.c).  Whatever the text: 0 with detours in order, none
 * overlapping, every time finite and non-negative, and the detour
 * function finite and non-negative wherever it is asked; or -1 with a
 * message naming the file and nothing held. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    sim_trace_t t;
    char msg[512] = "";
    int rc = sim_trace_parse((const char *)data, n, "fuzz", &t, msg, sizeof msg);
    assert(rc == 0 || (rc == -1 && !strncmp(msg, "fuzz", 4) && !t.n && !t.start && !t.dur));
    if (rc)
        return 0;
    assert(t.n > 0 && t.period > 0 && isfinite(t.period) && t.total >= 0);
    for (size_t i = 0; i < t.n; i++) {
        assert(t.start[i] >= 0 && t.dur[i] >= 0 && isfinite(t.start[i] + t.dur[i]));
        assert(!i || t.start[i] >= t.start[i - 1] + t.dur[i - 1]);
    }
    const double xs[] = {0, t.start[0], t.period / 2, t.period, 3 * t.period + 1};
    const double lens[] = {0, 1, t.period / 3, t.period, 5.5 * t.period};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++)
        for (size_t j = 0; j < sizeof lens / sizeof *lens; j++) {
            double d = sim_trace_detour(&t, xs[i], lens[j]);
            assert(isfinite(d) && d >= 0 && d <= t.total * (lens[j] / t.period + 3));
        }
    sim_trace_free(&t);
    return 0;
}
