/* fuzz_preset.c — libFuzzer harness for the simulator's preset files
 * (src/sim/model.c).  Whatever the text: 0 with every parameter finite,
 * non-negative and within its limits, or -1 with a message naming the
 * file. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    sim_model_t m;
    char msg[512] = "";
    int rc = sim_preset_parse((const char *)data, n, "fuzz", &m, msg, sizeof msg);
    assert(rc == 0 || (rc == -1 && !strncmp(msg, "fuzz", 4)));
    if (!rc) {
        double v[] = {m.L, m.o, m.g, m.G, m.O, m.gamma, m.copy, m.sw};
        for (int i = 0; i < 8; i++)
            assert(isfinite(v[i]) && v[i] >= 0);
        assert(m.ports >= 1 && m.ports <= 64 && m.cores <= 1u << 24);
    }
    return 0;
}
