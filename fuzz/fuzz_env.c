/* fuzz_env.c — libFuzzer harness for the environment weft reads at
 * weft_init: WEFT_<COLL>_ALGO / _PARAMS, WEFT_NODE_SIZE, WEFT_TIMEOUT_MS.
 * Input: lines "DVALUE" (the digit D picks one of those variables).  Every
 * setting must be taken or refused with a message naming the variable. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"

static const char *const vars[] = {
    "WEFT_ALLREDUCE_ALGO", "WEFT_ALLREDUCE_PARAMS", "WEFT_BCAST_ALGO", "WEFT_BCAST_PARAMS",
    "WEFT_REDUCE_ALGO",    "WEFT_REDUCE_PARAMS",    "WEFT_NODE_SIZE",  "WEFT_TIMEOUT_MS",
    "WEFT_BARRIER_ALGO",   "WEFT_GATHER_PARAMS"};
#define NVARS (sizeof vars / sizeof vars[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *text = malloc(n + 1);
    memcpy(text, data, n);
    text[n] = '\0';
    for (size_t i = 0; i < NVARS; i++)
        unsetenv(vars[i]);
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        size_t v = (size_t)(unsigned char)(line[0] - '0') % NVARS;
        setenv(vars[v], line[0] ? line + 1 : "", 1);
    }
    algo_choice_t choice[WEFT_COLL_COUNT];
    int rc = config_choices_from_env(choice);
    assert(rc == WEFT_OK || (rc == WEFT_EINVAL && strstr(weft_last_error(), "WEFT_")));
    int node_size;
    uint64_t timeout_ns;
    rc = config_numbers_from_env(&node_size, &timeout_ns);
    assert(rc == WEFT_OK || (rc == WEFT_EINVAL && strstr(weft_last_error(), "WEFT_")));
    if (rc == WEFT_OK)
        assert(node_size >= 0 && node_size <= 65536 && timeout_ns <= 86400000ull * 1000000ull);
    free(text);
    return 0;
}
