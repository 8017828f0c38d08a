/* fuzz_goal.c — libFuzzer harness for the GOAL reader (src/sim/goal.c).
 * Whatever the text, parsing ends in 0 or WEFT_EINVAL with a message that
 * names the file and line; what it accepts (up to 256 ranks) is simulated,
 * which ends in 0 or an error with a message (a deadlock, a message
 * nobody receives), never a crash or a hang. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/goal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    sim_goal_t *g;
    char msg[512] = "";
    int rc = sim_goal_parse((const char *)data, n, "fuzz", &g, msg, sizeof msg);
    assert(rc == 0 || (rc == WEFT_EINVAL && !strncmp(msg, "fuzz:", 5) && !g));
    if (rc)
        return 0;
    if (sim_goal_nrank(g) <= 256) {
        sim_model_t m;
        sim_model_default(&m);
        sim_goal_adapt(g, &m);
        sim_result_t r;
        msg[0] = 0;
        rc = sim_run(&m, sim_goal_nrank(g), sim_goal_build, g, NULL, &r, msg, sizeof msg);
        assert(rc == 0 || msg[0]);
        assert(rc || (r.t_max >= r.t_mean && r.t_mean >= 0));
    }
    sim_goal_free(g);
    return 0;
}
