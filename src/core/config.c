/* config.c — algorithm choices from the environment (WEFT_ALLREDUCE_ALGO=ring,
 * WEFT_ALLREDUCE_PARAMS=...) and from weft_set_algorithm. */
#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

static void names_of(weft_coll_t coll, char *out, size_t n)
{
    size_t cnt, used = 0;
    const algo_t *t = algo_table(&cnt);
    out[0] = '\0';
    for (size_t i = 0; i < cnt && used + 32 < n; i++)
        if (t[i].coll == coll)
            used += (size_t)snprintf(out + used, n - used, "%s, ", t[i].name);
    snprintf(out + used, n - used, "auto");
}

int config_choice(weft_coll_t coll, const char *name, const char *params, algo_choice_t *out)
{
    if ((unsigned)coll >= WEFT_COLL_COUNT)
        return weft_error(WEFT_EINVAL, "unknown collective %d", (int)coll);
    memset(out, 0, sizeof *out);
    if (!name || !*name || !strcmp(name, "auto")) {
        if (params && *params)
            return weft_error(WEFT_EINVAL, "parameters '%s' need a named %s algorithm, not auto",
                              params, weft_coll_name(coll));
        return WEFT_OK;
    }
    const algo_t *al = algo_find(coll, name);
    if (!al) {
        char have[512];
        names_of(coll, have, sizeof have);
        return weft_error(WEFT_EINVAL, "no %s algorithm named '%s' (have: %s)",
                          weft_coll_name(coll), name, have);
    }
    int rc = algo_parse_params(al, params, &out->params);
    if (rc)
        return rc;
    out->al = al;
    return WEFT_OK;
}

int config_choices_from_env(algo_choice_t *choice)
{
    for (int c = 0; c < WEFT_COLL_COUNT; c++) {
        char var[64], pvar[80];
        const char *cn = weft_coll_name((weft_coll_t)c);
        int k = snprintf(var, sizeof var, "WEFT_");
        for (const char *p = cn; *p && k < 50; p++)
            var[k++] = (char)toupper((unsigned char)*p);
        var[k] = '\0';
        snprintf(pvar, sizeof pvar, "%s_PARAMS", var);
        strcat(var, "_ALGO");
        const char *name = getenv(var), *params = getenv(pvar);
        int rc = config_choice((weft_coll_t)c, name, params, &choice[c]);
        if (rc) {
            /* blame the variable at fault: the name when it names nothing,
             * else the parameters */
            bool name_bad = name && *name && strcmp(name, "auto") &&
                            !algo_find((weft_coll_t)c, name);
            char msg[512];
            snprintf(msg, sizeof msg, "%s", weft_last_error());
            return weft_error(rc, "%s=%s: %s", name_bad ? var : pvar, name_bad ? name : params,
                              msg);
        }
    }
    return WEFT_OK;
}

/* A size: digits and an optional K, M or G (core.h). */
const char *size_prefix(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s)) /* strtoull would take "-5" as 2^64 - 5 */
        return NULL;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno)
        return NULL;
    int shift = *e == 'K' ? 10 : *e == 'M' ? 20 : *e == 'G' ? 30 : 0;
    if (shift && v > (UINT64_MAX >> shift))
        return NULL;
    *out = (uint64_t)v << shift;
    return e + (shift != 0);
}

/* A variable's value as a number: digits only, lo..hi; -1 otherwise. */
static long env_number(const char *v, long lo, long hi)
{
    long x = 0;
    for (const char *c = v; *c; c++) {
        if (*c < '0' || *c > '9' || x > hi)
            return -1;
        x = x * 10 + (*c - '0');
    }
    return *v && x >= lo && x <= hi ? x : -1;
}

int config_numbers_from_env(int *node_size, uint64_t *timeout_ns)
{
    const char *ns = getenv("WEFT_NODE_SIZE"), *to = getenv("WEFT_TIMEOUT_MS"),
               *sm = getenv("WEFT_STREAM_MIN");
    long st = sm && *sm ? env_number(sm, 1, 1L << 40) : 0;
    if (st < 0)
        return weft_error(WEFT_EINVAL, "WEFT_STREAM_MIN=%s: want a size in bytes, 1 to 2^40 (a "
                                       "received message from this size, and every message of "
                                       "a bcast or gather moving this much per rank, is "
                                       "written with streaming stores)", sm);
    exec_set_stream_min((uint64_t)st); /* unset: the default, also after a re-init */
    long k = ns && *ns ? env_number(ns, 1, 65536) : 0;
    if (k < 0)
        return weft_error(WEFT_EINVAL, "WEFT_NODE_SIZE=%s: want a number of ranks per node, "
                                       "1..65536", ns);
    long ms = to && *to ? env_number(to, 0, 86400000L) : 0;
    if (ms < 0)
        return weft_error(WEFT_EINVAL, "WEFT_TIMEOUT_MS=%s: want milliseconds 0..86400000 (0: no "
                                       "timeout)", to);
    *node_size = (int)k;
    *timeout_ns = (uint64_t)ms * 1000000ull;
    return WEFT_OK;
}

int weft_algorithm_properties_with(weft_coll_t coll, const char *name, const char *params)
{
    algo_choice_t ch;
    if ((unsigned)coll >= WEFT_COLL_COUNT || !name || config_choice(coll, name, params, &ch) ||
        !ch.al)
        return -1;
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = coll;
    a.params = ch.params;
    return (int)(algo_effective_flags(ch.al, &a) &
                 (ALGO_NEEDS_COMMUTATIVE | ALGO_NEEDS_IDEMPOTENT | ALGO_IDENTICAL));
}

bool weft_verbose(void)
{
    static _Atomic int v = -1; /* threads may race to set it: all set the same */
    int now = atomic_load_explicit(&v, memory_order_relaxed);
    if (now < 0) {
        const char *e = getenv("WEFT_VERBOSE");
        now = e && *e && strcmp(e, "0");
        atomic_store_explicit(&v, now, memory_order_relaxed);
    }
    return now;
}
