/* noise.c — CPU noise from a detour trace (sim.h, sim_trace_t).
 *
 * The way LogGOPSim's --noise-trace does it (Hoefler, Schneider and
 * Lumsdaine, "Characterizing the Influence of System Noise on Large-Scale
 * Applications by Simulation", SC10): a trace lists the detours one CPU
 * took -- when each began and how long it lasted, in ns, as Netgauge's
 * noise benchmark records them -- and repeats; each rank reads it from an
 * offset of its own (or all from one offset: co-scheduled noise).  A use
 * of the CPU from x for len ns is held up by what is left of a detour under
 * way at x, and by every detour that begins in (x, x + len].
 *
 * Two choices of weft's: the trace's period is the end of its last detour
 * (LogGOPSim takes the last detour's start, so a run wraps a little
 * earlier there), and detours may not overlap (a file where they do is
 * refused with its line), so at most one is under way at any time. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim.h"

/* The largest time taken: an hour, as for the model's latencies. */
#define TRACE_MAX_NS 3.6e12

static int grow(sim_trace_t *t, size_t *cap)
{
    size_t nc = *cap ? *cap * 2 : 1024;
    double *s = realloc(t->start, nc * sizeof *s);
    if (s)
        t->start = s;
    double *d = s ? realloc(t->dur, nc * sizeof *d) : NULL;
    if (!d)
        return -1;
    t->dur = d, *cap = nc;
    return 0;
}

/* One "START DURATION" line (comment already cut): 0 and the numbers, 1 for
 * a blank line, -1 with why. */
static int parse_line(char *line, double *start, double *dur, char *why, size_t len)
{
    char a[64], b[64], extra[8];
    int k = sscanf(line, "%63s %63s %7s", a, b, extra);
    if (k <= 0)
        return 1;
    if (k != 2) {
        snprintf(why, len, "want 'START DURATION' (ns)");
        return -1;
    }
    const char *names[2] = {"start", "duration"}, *text[2] = {a, b};
    double *out[2] = {start, dur};
    for (int i = 0; i < 2; i++) {
        char *end;
        errno = 0;
        double v = strtod(text[i], &end);
        if (end == text[i] || *end || errno == ERANGE || !isfinite(v)) {
            snprintf(why, len, "%s '%s' is not a number", names[i], text[i]);
            return -1;
        }
        if (v < 0 || v > TRACE_MAX_NS) {
            snprintf(why, len, "%s %s is not 0 to an hour's ns", names[i], text[i]);
            return -1;
        }
        *out[i] = v;
    }
    return 0;
}

int sim_trace_parse(const char *text, size_t n, const char *name, sim_trace_t *t, char *msg,
                    size_t len)
{
    memset(t, 0, sizeof *t);
    size_t cap = 0;
    int ln = 0;
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        char line[256], why[160];
        ln++;
        if (ll >= sizeof line) {
            snprintf(msg, len, "%s:%d: line too long", name, ln);
            goto bad;
        }
        memcpy(line, p, ll);
        line[ll] = '\0';
        p = nl ? nl + 1 : end;
        if (strlen(line) != ll) {
            snprintf(msg, len, "%s:%d: a NUL byte in the line", name, ln);
            goto bad;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        double s, d;
        int rc = parse_line(line, &s, &d, why, sizeof why);
        if (rc > 0)
            continue;
        if (rc < 0) {
            snprintf(msg, len, "%s:%d: %s", name, ln, why);
            goto bad;
        }
        if (t->n && s < t->start[t->n - 1] + t->dur[t->n - 1]) {
            snprintf(msg, len, "%s:%d: the detour at %.17g ns begins before the one at %.17g "
                     "ns ends (%.17g): detours come in order and do not overlap", name, ln, s,
                     t->start[t->n - 1], t->start[t->n - 1] + t->dur[t->n - 1]);
            goto bad;
        }
        if (t->n == cap && grow(t, &cap)) {
            snprintf(msg, len, "%s: out of memory at line %d", name, ln);
            goto bad;
        }
        t->start[t->n] = s, t->dur[t->n++] = d;
        t->total += d;
    }
    if (!t->n) {
        snprintf(msg, len, "%s: no detours (want 'START DURATION' lines, ns)", name);
        goto bad;
    }
    t->period = t->start[t->n - 1] + t->dur[t->n - 1];
    if (!(t->period > 0)) {
        snprintf(msg, len, "%s: the trace spans 0 ns", name);
        goto bad;
    }
    return 0;
bad:
    sim_trace_free(t);
    return -1;
}

int sim_trace_load(const char *path, sim_trace_t *t, char *msg, size_t len)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    struct stat st;
    if (!f || fstat(fileno(f), &st)) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (st.st_size > (1 << 30)) {
        snprintf(msg, len, "%s: larger than a trace may be (1 GiB)", path);
        fclose(f);
        return -1;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t n = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!text) {
        snprintf(msg, len, "%s: out of memory", path);
        return -1;
    }
    int rc = sim_trace_parse(text, n, path, t, msg, len);
    free(text);
    return rc;
}

void sim_trace_free(sim_trace_t *t)
{
    free(t->start), free(t->dur);
    memset(t, 0, sizeof *t);
}

double sim_trace_detour(const sim_trace_t *t, double x, double len)
{
    double P = t->period, extra = 0;
    x = fmod(x, P);
    if (len >= P) { /* whole periods: every detour of each */
        /* fmod is exact, so what is left is below P whatever the scale;
         * len - k * P was not (a period of 1e-300 ns left 1e-16 ns, and
         * the walk below went round the trace 1e284 times) */
        double rest = fmod(len, P);
        extra += round((len - rest) / P) * t->total;
        len = rest;
    }
    size_t lo = 0, hi = t->n; /* the first detour beginning after x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->start[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && t->start[lo - 1] + t->dur[lo - 1] > x) /* under way at x */
        extra += t->start[lo - 1] + t->dur[lo - 1] - x;
    double end = x + len; /* detours beginning in (x, end], across the wrap */
    for (size_t j = lo;; j++) {
        if (j == t->n) {
            j = 0;
            end -= P;
        }
        if (t->start[j] > end)
            break;
        extra += t->dur[j];
    }
    return extra;
}
