/* dropin.h — what the drop-in's Fortran bindings (fortran.c) share with its
 * C entry points (interpose.c), inside libweft-mpi.so only. */
#ifndef WEFT_DROPIN_H
#define WEFT_DROPIN_H

#include <mpi.h>

/* A user op and its function, so that reductions on it can run in weft;
 * fortran: the function takes its length and datatype as Fortran
 * integers.  Recorded after the MPI library made the op, forgotten before
 * it frees it. */
__attribute__((visibility("hidden"))) void weft_dropin_record_op(MPI_Op op, void (*fn)(void),
                                                                 int commute, int fortran);
__attribute__((visibility("hidden"))) void weft_dropin_forget_op(MPI_Op op);

#endif
