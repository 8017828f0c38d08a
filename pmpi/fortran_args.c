/* fortran_args.c — what the Fortran entry points of libweft-mpi.so and
 * libweft-prof.so share: Fortran's MPI_IN_PLACE and MPI_BOTTOM, handles
 * turned into C's, and the MPI library's own Fortran functions (see
 * fortran.c for why these entry points exist). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fortran_args.h"

/* ---- Fortran's sentinels ---- */

enum { SPELLINGS = 4 }; /* a common block's name as compilers spell it */
static void *in_place_f[SPELLINGS], *bottom_f[SPELLINGS];
static int sentinels_found;
static pthread_once_t sentinels_once = PTHREAD_ONCE_INIT;

static void find_sentinels(void)
{
    static const char *const in_place[SPELLINGS] = {"mpi_fortran_in_place_",
                                                    "mpi_fortran_in_place__",
                                                    "mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE"};
    static const char *const bottom[SPELLINGS] = {"mpi_fortran_bottom_", "mpi_fortran_bottom__",
                                                  "mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM"};
    int ip = 0, bt = 0;
    for (int i = 0; i < SPELLINGS; i++) {
        in_place_f[i] = dlsym(RTLD_DEFAULT, in_place[i]);
        bottom_f[i] = dlsym(RTLD_DEFAULT, bottom[i]);
        ip |= in_place_f[i] != NULL, bt |= bottom_f[i] != NULL;
    }
    sentinels_found = ip && bt;
}

/* Found once per process: before MPI_Init too (the profiler's MPI_INIT). */
int fortran_served(void)
{
    pthread_once(&sentinels_once, find_sentinels);
    return sentinels_found;
}

static int is_one_of(const void *buf, void *const spellings[SPELLINGS])
{
    for (int i = 0; i < SPELLINGS; i++)
        if (spellings[i] && buf == spellings[i])
            return 1;
    return 0;
}

/* A Fortran buffer argument as C passes it. */
void *fortran_buffer(void *buf)
{
    if (is_one_of(buf, in_place_f))
        return MPI_IN_PLACE;
    if (is_one_of(buf, bottom_f))
        return MPI_BOTTOM;
    return buf;
}

/* ---- handles ----
 * Open MPI's f2c functions give a null pointer for a handle out of range,
 * which the C entry points would pass on; such calls go to the MPI
 * library's Fortran binding instead, which reports them. */

int fortran_comm(const MPI_Fint *f, MPI_Comm *c)
{
    *c = PMPI_Comm_f2c(*f);
    return *c != (MPI_Comm)0;
}

int fortran_type(const MPI_Fint *f, MPI_Datatype *c)
{
    *c = PMPI_Type_f2c(*f);
    return *c != (MPI_Datatype)0;
}

int fortran_type_if(int used, const MPI_Fint *f, MPI_Datatype *c)
{
    if (used)
        return fortran_type(f, c);
    *c = MPI_DATATYPE_NULL;
    return 1;
}

int fortran_op(const MPI_Fint *f, MPI_Op *c)
{
    *c = PMPI_Op_f2c(*f);
    return *c != (MPI_Op)0;
}

void fortran_ierror(MPI_Fint *ierror, int rc)
{
    if (ierror) /* mpi_f08 may pass none */
        *ierror = (MPI_Fint)rc;
}

/* The MPI library's own Fortran function `name`, looked up once. */
void *fortran_library(void **cache, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = dlsym(RTLD_NEXT, name);
        if (!fn) {
            fprintf(stderr, "weft: the MPI library has no Fortran function %s\n", name);
            abort(); /* the program was linked against it: nothing sane remains */
        }
        __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    }
    return fn;
}
