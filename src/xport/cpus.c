/* cpus.c — how many cores the ranks of one machine may run on (cpus.h).
 *
 * A machine's CPU count is not the answer: ranks started under `taskset`,
 * a batch system's cpuset or `mpirun --bind-to` run on the CPUs of their
 * affinity masks, and a container's CPU quota (cgroup cpu.max) caps the
 * time they get.  Two ranks confined to one core that spin on each other
 * took 2 ms an 8-byte allreduce here (each spins its time slice away while
 * the rank it waits for cannot run), against 5 us once they yield.  So
 * the segment's creator counts the cores of the union of the masks of the
 * machine's ranks, capped by the smallest quota: ranks bound one to a core
 * (one CPU each) are not taken for ranks sharing one.  Under MPI the ranks
 * exchange their allowances (twolevel.c); `weft run` counts its own, which
 * its ranks inherit (a program that narrows its own mask is not seen). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpus.h"

/* The quota, in whole CPUs (at least 1), of the cgroup v2 directory dir and
 * its ancestors under /sys/fs/cgroup; 0 where none is set. */
static uint32_t quota_v2(char *dir)
{
    uint32_t best = 0;
    for (;;) {
        char path[4200];
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", dir);
        FILE *f = fopen(path, "r");
        if (f) {
            char q[32] = "";
            unsigned long long period = 0;
            if (fscanf(f, "%31s %llu", q, &period) == 2 && strcmp(q, "max") && period) {
                unsigned long long n = strtoull(q, NULL, 10) / period;
                uint32_t cpus = n < 1 ? 1 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
                if (!best || cpus < best)
                    best = cpus;
            }
            fclose(f);
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            if (dir[0] && strcmp(dir, "/"))
                dir[0] = '/', dir[1] = '\0';
            else
                return best;
        } else {
            *slash = '\0';
        }
    }
}

/* The same under cgroup v1's cpu controller (cpu.cfs_quota_us, -1: none),
 * at its usual mount points. */
static uint32_t quota_v1(const char *dir)
{
    static const char *const mounts[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
    for (size_t i = 0; i < sizeof mounts / sizeof *mounts; i++) {
        char path[4200];
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/cpu.cfs_quota_us", mounts[i], dir);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        long long quota = -1, period = 0;
        if (fscanf(f, "%lld", &quota) != 1)
            quota = -1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/cpu.cfs_period_us", mounts[i], dir);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
        if (quota <= 0 || period <= 0)
            return 0;
        long long n = quota / period;
        return n < 1 ? 1 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    return 0;
}

/* This process's cgroup quota in whole CPUs; 0: none. */
static uint32_t cgroup_quota(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[4200];
    uint32_t best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1;
        char *dir = c2 + 1;
        uint32_t q = 0;
        if (!strcmp(line, "0") && !controllers[0]) {
            q = quota_v2(dir);
        } else {
            /* v1: the line whose controllers include "cpu" */
            char list[256];
            snprintf(list, sizeof list, ",%s,", controllers);
            if (strstr(list, ",cpu,"))
                q = quota_v1(dir);
        }
        if (q && (!best || q < best))
            best = q;
    }
    fclose(f);
    return best;
}

void cpu_allow_self(cpu_allow_t *c)
{
    memset(c, 0, sizeof *c);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
        for (int cpu = 0; cpu < CPU_ALLOW_MAX && cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set))
                c->mask[cpu / 64] |= 1ull << (cpu % 64);
    } else { /* a mask wider than CPU_SETSIZE: the machine's count */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->count = n > 0 ? (uint32_t)n : 1;
    }
    c->quota = cgroup_quota();
}

uint32_t cpu_allow_cores(const cpu_allow_t *all, int n)
{
    uint64_t mask[CPU_ALLOW_MAX / 64] = {0};
    uint32_t unmasked = 0, quota = 0;
    for (int r = 0; r < n; r++) {
        for (int w = 0; w < CPU_ALLOW_MAX / 64; w++)
            mask[w] |= all[r].mask[w];
        if (all[r].count > unmasked)
            unmasked = all[r].count;
        if (all[r].quota && (!quota || all[r].quota < quota))
            quota = all[r].quota;
    }
    uint32_t cores = 0;
    for (int w = 0; w < CPU_ALLOW_MAX / 64; w++)
        cores += (uint32_t)__builtin_popcountll(mask[w]);
    if (unmasked > cores)
        cores = unmasked;
    if (quota && quota < cores)
        cores = quota;
    return cores ? cores : 1;
}

uint32_t cpu_cores_self(void)
{
    cpu_allow_t self;
    cpu_allow_self(&self);
    return cpu_allow_cores(&self, 1);
}
