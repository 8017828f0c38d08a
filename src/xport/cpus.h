/* cpus.h — the cores the ranks of one machine may run on (cpus.c): their
 * affinity masks' union, capped by the smallest cgroup CPU quota.  Waits
 * spin only while ranks do not outnumber those cores (engine.c), and the
 * shared-memory transport sizes its rings and chooses its copies by it. */
#ifndef WEFT_CPUS_H
#define WEFT_CPUS_H

#include <stdint.h>

#include "../core/tool_api.h"

#define CPU_ALLOW_MAX 1024 /* CPUs a mask describes (glibc's CPU_SETSIZE) */

/* What one process may run on; a fixed size, so ranks can exchange it
 * as bytes (an MPI_Allgather). */
typedef struct cpu_allow {
    uint64_t mask[CPU_ALLOW_MAX / 64]; /* its affinity mask */
    uint32_t count;                    /* when the mask is unknown: the machine's CPUs */
    uint32_t quota;                    /* its cgroup's quota in whole CPUs; 0: none */
} cpu_allow_t;

/* This process's mask and quota. */
WEFT_TOOL_API void cpu_allow_self(cpu_allow_t *c);
/* The cores n processes with these allowances may run on together (>= 1). */
WEFT_TOOL_API uint32_t cpu_allow_cores(const cpu_allow_t *all, int n);
/* The cores this process may run on (>= 1): its own allowance's. */
WEFT_TOOL_API uint32_t cpu_cores_self(void);

#endif
