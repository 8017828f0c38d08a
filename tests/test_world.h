/* test_world.h — a test program's world: weft_init's under `weft run`, or,
 * with --mpi as its first argument (under mpirun), the twin of
 * MPI_COMM_WORLD (weft_comm_from_mpi), the argument then taken off argv.
 * The program ends the world as it was made: weft_finalize, or freeing the
 * twin (and whatever else it made from MPI) before MPI_Finalize. */
#ifndef WEFT_TEST_WORLD_H
#define WEFT_TEST_WORLD_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "weft.h"
#ifdef WEFT_HAVE_MPI
#include "weft_mpi.h"
#endif

/* *world, and whether it came from MPI; non-zero (said) on failure. */
static inline int test_world(const char *prog, int *argc, char ***argv, weft_comm_t *world,
                             bool *over_mpi)
{
    *over_mpi = *argc > 1 && !strcmp((*argv)[1], "--mpi");
    if (*over_mpi) {
#ifdef WEFT_HAVE_MPI
        MPI_Init(argc, argv);
        if (weft_comm_from_mpi(MPI_COMM_WORLD, world) != WEFT_OK) {
            fprintf(stderr, "%s: weft_comm_from_mpi: %s\n", prog, weft_last_error());
            return 1;
        }
        --*argc, ++*argv;
        return 0;
#else
        fprintf(stderr, "%s: built without MPI\n", prog);
        return 1;
#endif
    }
    if (weft_init(argc, argv) != WEFT_OK) {
        fprintf(stderr, "%s: weft_init: %s\n", prog, weft_last_error());
        return 1;
    }
    *world = weft_comm_world();
    return 0;
}

#endif
