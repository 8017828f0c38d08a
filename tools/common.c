/* common.c — pieces the tool's commands share: list matching and starting
 * a job of this very executable. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int launch_self(int np, const char *cmd, int argc, char **argv)
{
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) {
        fprintf(stderr, "weft %s: cannot find my own executable: %s\n", cmd, strerror(errno));
        return 1;
    }
    exe[l] = '\0';
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
