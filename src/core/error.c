/* error.c — error codes, their names, and the per-thread last-error message. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core.h"

static _Thread_local char last_msg[512];

int weft_error(int code, const char *fmt, ...)
{
    /* format aside first: callers may pass weft_last_error() as an argument
     * to prefix the message */
    char tmp[sizeof last_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(last_msg, tmp, sizeof tmp);
    return code;
}

void weft_error_clear(void) { last_msg[0] = '\0'; }

const char *weft_last_error(void) { return last_msg; }

const char *weft_strerror(weft_err_t err)
{
    switch (err) {
    case WEFT_OK: return "success";
    case WEFT_EINVAL: return "invalid argument";
    case WEFT_ENOMEM: return "out of memory";
    case WEFT_EPEER: return "a peer process died or aborted the job";
    case WEFT_ETIMEDOUT:
        return "timed out (past a *_timeout call's own limit: call again; past the "
               "communicator's: it is revoked)";
    case WEFT_EBUSY: return "another split-phase collective is unfinished";
    case WEFT_ENOTSUP: return "not supported";
    case WEFT_ENOTINIT: return "weft is not initialised";
    case WEFT_EMISMATCH: return "ranks disagree on a collective's arguments";
    case WEFT_ESYS: return "operating-system call failed";
    case WEFT_EINTERNAL: return "internal error";
    case WEFT_EREVOKED: return "the communicator was revoked";
    }
    return "unknown error code";
}

double weft_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t weft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
