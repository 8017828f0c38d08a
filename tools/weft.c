/* weft.c — the command line: run, bench, check, tree, dissem-tuple, stress,
 * algorithms, explain, tune, sim, fit, pap.  A command that launched a job
 * which was interrupted ends by the same signal (main). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch/launch.h"
#include "tool.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: weft COMMAND [ARGS]\n\n"
               "  run -n P PROG [ARGS]     start PROG as P ranks of a shared-memory job\n"
               "  bench COLL [OPTIONS]     time algorithms side by side (allreduce, bcast, reduce)\n"
               "  check COLL [OPTIONS]     prove schedules correct symbolically for a range of P\n"
               "  tree NAME --np P         print the trees of a pipelined algorithm\n"
               "  dissem-tuple --np P      the 5-tuple adapting n-way dissemination to P ranks\n"
               "  stress --np P --minutes M  random collectives, every result checked\n"
               "  algorithms               list every algorithm with its properties\n"
               "  explain COLL --np P --size B  what AUTO picks for a call, and why\n"
               "  tune COLL --np P [--out F]    measure the algorithms, write a tuning table\n"
               "  sim COLL --algo A --np P --size B  predict schedules under LogGOPS\n"
               "  fit [--out FILE]         measure this machine's LogGOPS parameters (a preset)\n"
               "  pap report DIR           arrival patterns of a profiled run (WEFT_PROFILE=DIR)\n"
               "  pap whatif DIR           replay them through each algorithm (the simulator)\n\n"
               "`weft COMMAND --help` for the options of each.\n");
}

static int cmd_run(int argc, char **argv)
{
    int np = 0, have_np = 0, verbose = 0, i = 1;
    for (; i < argc; i++) {
        if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "-np")) && i + 1 < argc) {
            char *e;
            long v = strtol(argv[++i], &e, 10);
            if (*e || e == argv[i] || v < 1 || v > 65536) {
                fprintf(stderr, "weft run: -n %s: the number of ranks must be 1..65536\n",
                        argv[i]);
                return 2;
            }
            np = (int)v, have_np = 1;
        } else if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--help")) {
            printf("usage: weft run -n P [-v] [--] PROG [ARGS]\n");
            return 0;
        } else {
            break;
        }
    }
    if (!have_np) {
        fprintf(stderr, "weft run: give the number of ranks with -n P\n");
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "weft run: no program given\n");
        return 2;
    }
    return launch_job(np, argv + i, verbose);
}

static int run_command(int argc, char **argv)
{
    const char *c = argv[1];
    if (!strcmp(c, "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(c, "bench"))
        return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(c, "check"))
        return cmd_check(argc - 1, argv + 1);
    if (!strcmp(c, "tree"))
        return cmd_tree(argc - 1, argv + 1);
    if (!strcmp(c, "dissem-tuple"))
        return cmd_dissem_tuple(argc - 1, argv + 1);
    if (!strcmp(c, "stress"))
        return cmd_stress(argc - 1, argv + 1);
    if (!strcmp(c, "explain"))
        return cmd_explain(argc - 1, argv + 1);
    if (!strcmp(c, "tune"))
        return cmd_tune(argc - 1, argv + 1);
    if (!strcmp(c, "sim"))
        return cmd_sim(argc - 1, argv + 1);
    if (!strcmp(c, "fit"))
        return cmd_fit(argc - 1, argv + 1);
    if (!strcmp(c, "pap"))
        return cmd_pap(argc - 1, argv + 1);
    if (!strcmp(c, "algorithms"))
        return cmd_algorithms(argc - 1, argv + 1);
    if (!strcmp(c, "--help") || !strcmp(c, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "weft: unknown command '%s'\n", c);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    int rc = run_command(argc, argv);
    /* a job this command launched was interrupted (Ctrl-C): end by that
     * signal, as a shell expects of an interrupted program */
    launch_reraise();
    return rc;
}
