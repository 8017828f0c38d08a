/* model.c — the LogGOPS parameters: presets, flags and preset files.
 *
 * A preset file is text: the line "weft-preset 1", then "KEY VALUE" lines
 * (keys L o g G O S gamma copy ports cores switch offload; times in ns, per-byte
 * costs in ns per byte), '#' starting a comment.  Every value is checked: a negative, NaN,
 * infinite or absurd one (a latency above an hour, a per-byte cost above a
 * second) is refused with the file, line and key. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_model_default(sim_model_t *m)
{
    /* LogGOPSim's command-line defaults (simulator.ggo): L 2500, o 1500,
     * g 1000, G 6, O 0, S 65535; it has no gamma (reductions are explicit
     * calc operations there). */
    m->L = 2500, m->o = 1500, m->g = 1000, m->G = 6, m->O = 0;
    m->S = 65535;
    m->gamma = 0, m->copy = 0;
    m->ports = 1, m->cpus = 1;
    m->offload = 0;
    m->cores = 0, m->sw = 0;
}

typedef struct {
    const char *name, *source;
    sim_model_t m;
} preset_t;

static const preset_t presets[] = {
    {"loggopsim", "LogGOPSim's defaults (spcl/LogGOPSim simulator.ggo)",
     {2500, 1500, 1000, 6, 0, 65535, 0, 0, 1, 1, 0, 0, 0}},
    /* The alpha-beta (Hockney) model the seeds' cost formulas use: a
     * message of s bytes takes alpha + (s - 1) beta end to end and holds
     * its sender's and its receiver's one port as long (L = g = alpha,
     * G = beta, no CPU overhead), so that k pieces cost k alpha more, as
     * the formulas have it.  With g = G instead (until 2026-11-29) a rank
     * could have any number of messages in flight at once, which no
     * alpha-beta formula describes.  alpha 1 us and beta 0.1 ns/byte (10
     * GB/s) are nominal round values, gamma 0.05 ns/byte. */
    {"hockney", "alpha-beta model, nominal alpha 1 us, beta 0.1 ns/B",
     {1000, 0, 1000, 0.1, 0, UINT64_MAX, 0.05, 0, 1, 1, 0, 0, 0}},
};

const char *const *sim_preset_names(void)
{
    static const char *names[sizeof presets / sizeof presets[0] + 1];
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        names[i] = presets[i].name;
    return names;
}

/* The largest values taken: an hour of latency, a second per byte. */
#define MAX_TIME 3.6e12
#define MAX_PER_BYTE 1e9

int sim_model_set(sim_model_t *m, const char *key, const char *value, char *msg, size_t len)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (end != value && !*end && errno == ERANGE) { /* too large or too small for a double */
        snprintf(msg, len, "%s: '%s' is out of a double's range", key, value);
        return -1;
    }
    if (end == value || *end || isnan(v) || isinf(v)) {
        snprintf(msg, len, "%s: '%s' is not a number", key, value);
        return -1;
    }
    if (v < 0) {
        snprintf(msg, len, "%s: %s is negative", key, value);
        return -1;
    }
    if (!strcmp(key, "ports") || !strcmp(key, "S") || !strcmp(key, "cores") ||
        !strcmp(key, "offload")) {
        if (v != floor(v)) {
            snprintf(msg, len, "%s: '%s' is not a whole number", key, value);
            return -1;
        }
        if (!strcmp(key, "offload")) {
            if (v > 1) {
                snprintf(msg, len, "offload: %s is not 0 (LogGOPSim's receive) or 1 (the NIC's)",
                         value);
                return -1;
            }
            m->offload = (int)v;
        } else if (!strcmp(key, "cores")) {
            if (v > 1 << 24) {
                snprintf(msg, len, "cores: %s is not 0 (a core per rank) to 2^24", value);
                return -1;
            }
            m->cores = (uint32_t)v;
        } else if (!strcmp(key, "ports")) {
            if (v < 1 || v > 64) {
                snprintf(msg, len, "ports: %s is not 1 to 64", value);
                return -1;
            }
            m->ports = (int)v;
        } else {
            m->S = v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
        }
        return 0;
    }
    static const char *const times[] = {"L", "o", "g", "switch"},
                             *const rates[] = {"G", "O", "gamma", "copy"};
    double *tf[] = {&m->L, &m->o, &m->g, &m->sw}, *rf[] = {&m->G, &m->O, &m->gamma, &m->copy};
    for (int i = 0; i < 4; i++)
        if (!strcmp(key, times[i])) {
            if (v > MAX_TIME) {
                snprintf(msg, len, "%s: %s ns is absurd (more than an hour)", key, value);
                return -1;
            }
            *tf[i] = v;
            return 0;
        }
    for (int i = 0; i < 4; i++)
        if (!strcmp(key, rates[i])) {
            if (v > MAX_PER_BYTE) {
                snprintf(msg, len, "%s: %s ns per byte is absurd (more than a second)", key,
                         value);
                return -1;
            }
            *rf[i] = v;
            return 0;
        }
    snprintf(msg, len,
             "unknown parameter '%s' (L o g G O S gamma copy ports cores switch offload)", key);
    return -1;
}

int sim_preset_parse(const char *text, size_t n, const char *name, sim_model_t *m, char *msg,
                     size_t len)
{
    sim_model_default(m);
    char line[512], why[200];
    int ln = 0;
    bool header = false;
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        ln++;
        if (ll >= sizeof line) {
            snprintf(msg, len, "%s:%d: line too long", name, ln);
            return -1;
        }
        memcpy(line, p, ll);
        line[ll] = 0;
        p = nl ? nl + 1 : end;
        if (strlen(line) != ll) {
            snprintf(msg, len, "%s:%d: a NUL byte in the line", name, ln);
            return -1;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char key[64], val[128], extra[8];
        int k = sscanf(line, "%63s %127s %7s", key, val, extra);
        if (k <= 0)
            continue;
        if (!header) {
            if (k != 2 || strcmp(key, "weft-preset") || strcmp(val, "1")) {
                snprintf(msg, len, "%s:%d: want 'weft-preset 1' first (version 1)", name, ln);
                return -1;
            }
            header = true;
            continue;
        }
        if (k != 2) {
            snprintf(msg, len, "%s:%d: want 'KEY VALUE'", name, ln);
            return -1;
        }
        if (sim_model_set(m, key, val, why, sizeof why)) {
            snprintf(msg, len, "%s:%d: %s", name, ln, why);
            return -1;
        }
    }
    if (!header) {
        snprintf(msg, len, "%s: empty (want 'weft-preset 1' first)", name);
        return -1;
    }
    return 0;
}

static int load_file(const char *path, sim_model_t *m, char *msg, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    bool big = n == sizeof text;
    fclose(f);
    if (big) {
        snprintf(msg, len, "%s: larger than a preset can be (64 KiB)", path);
        return -1;
    }
    return sim_preset_parse(text, n, path, m, msg, len);
}

int sim_preset_load(const char *name, sim_model_t *m, char *msg, size_t len)
{
    size_t nl = strlen(name);
    if (strchr(name, '/') || (nl > 7 && !strcmp(name + nl - 7, ".preset")))
        return load_file(name, m, msg, len);
    if (!strcmp(name, "this-machine")) { /* what `weft fit` wrote here */
        FILE *f = fopen("this-machine.preset", "r");
        if (!f) {
            snprintf(msg, len, "this-machine: no this-machine.preset in this directory "
                               "(weft fit writes it)");
            return -1;
        }
        fclose(f);
        return load_file("this-machine.preset", m, msg, len);
    }
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name)) {
            *m = presets[i].m;
            return 0;
        }
    int n = snprintf(msg, len, "unknown preset '%s' (built in:", name);
    for (size_t i = 0; i < sizeof presets / sizeof presets[0] && n > 0 && (size_t)n < len; i++)
        n += snprintf(msg + n, len - (size_t)n, " %s", presets[i].name);
    if (n > 0 && (size_t)n < len)
        snprintf(msg + n, len - (size_t)n, "; or a file: a path with '/' or NAME.preset)");
    return -1;
}

int sim_preset_write(const char *path, const sim_model_t *m, const char *comment)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "weft-preset 1\n");
    if (comment)
        fprintf(f, "# %s\n", comment);
    fprintf(f, "L %.17g\no %.17g\ng %.17g\nG %.17g\nO %.17g\n", m->L, m->o, m->g, m->G, m->O);
    if (m->S == UINT64_MAX)
        fprintf(f, "S 18446744073709551615\n");
    else
        fprintf(f, "S %llu\n", (unsigned long long)m->S);
    fprintf(f, "gamma %.17g\ncopy %.17g\nports %d\n", m->gamma, m->copy, m->ports);
    fprintf(f, "cores %u\nswitch %.17g\noffload %d\n", m->cores, m->sw, m->offload);
    return fclose(f) ? -1 : 0;
}
