/* testing.h — the tests' assertion.  CHECK(cond, fmt, ...) counts a check and,
 * when cond is false, a failure, printing the first 20 with file and line
 * (after CHECK_WHO(), which multi-rank tests define to name the rank).  A
 * test ends by reporting checks and failures and exiting non-zero on any. */
#ifndef WEFT_TESTING_H
#define WEFT_TESTING_H

#include <stdio.h>

static int checks, failures;

#ifndef CHECK_WHO
#define CHECK_WHO() ((void)0)
#endif

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond) && failures++ < 20) {                                 \
            CHECK_WHO();                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
        }                                                                 \
    } while (0)

#endif
