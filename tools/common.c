/* common.c — pieces the tool's commands share: list matching, lists of
 * numbers, and starting a job of this very executable. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "launch/launch.h"
#include "tool.h"

bool name_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, name, n))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

int number_list(const char *s, uint64_t *out, int max, int *n, uint64_t lo_ok, uint64_t hi_ok,
                char *why, size_t len)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        uint64_t a, b = 0, step = 2;
        bool mul = true;
        const char *e = size_prefix(p, &a);
        if (!e)
            goto bad;
        if (*e == ':') {
            e = size_prefix(e + 1, &b);
            if (!e)
                goto bad;
            if (*e == ':') {
                mul = e[1] == 'x';
                if (e[1] != 'x' && e[1] != '+')
                    goto bad;
                e = size_prefix(e + 2, &step);
                if (!e || step < (mul ? 2u : 1u))
                    goto bad;
            }
            if (b < a || (mul && a == 0))
                goto bad;
        } else {
            b = a;
        }
        if (a < lo_ok || b > hi_ok) {
            snprintf(why, len, "want %" PRIu64 " to %" PRIu64, lo_ok, hi_ok);
            return -1;
        }
        for (uint64_t v = a; v <= b;) {
            if (*n == max) {
                snprintf(why, len, "more than %d values", max);
                return -1;
            }
            out[(*n)++] = v;
            uint64_t nv = mul ? v * step : v + step;
            if (nv <= v)
                break;
            v = nv;
        }
        if (*e && (*e != ',' || !e[1]))
            goto bad;
        p = *e ? e + 1 : e;
    }
    if (*n)
        return 0;
bad:
    snprintf(why, len, "want N, N,M,... or LO:HI (doubling), LO:HI:xK or LO:HI:+K; K, M, G "
                       "allowed");
    return -1;
}

bool tool_can_write(const char *path)
{
    struct stat st;
    bool existed = stat(path, &st) == 0;
    FILE *f = fopen(path, "a");
    if (!f)
        return false;
    fclose(f);
    if (!existed)
        remove(path);
    return true;
}

int launch_self(int np, const char *cmd, int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) {
        fprintf(stderr, "weft %s: cannot find my own executable: %s\n", cmd, strerror(errno));
        return 1;
    }
    exe[l] = '\0';
    /* rebuilt while this runs (make beside a long weft stress): the path
     * names the new binary or nothing, the link still this one */
    if (l > 10 && !strcmp(exe + l - 10, " (deleted)"))
        snprintf(exe, sizeof exe, "/proc/self/exe");
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args)
        return 1;
    args[0] = exe;
    args[1] = (char *)cmd;
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    int rc = launch_job(np, args, 0);
    free(args);
    return rc;
}
