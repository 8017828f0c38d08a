/* fortran_args.h — the Fortran entry points' shared pieces (fortran_args.c),
 * hidden inside the library that links them. */
#ifndef WEFT_FORTRAN_ARGS_H
#define WEFT_FORTRAN_ARGS_H

#include <mpi.h>

#define WEFT_HIDDEN __attribute__((visibility("hidden")))

/* Whether Open MPI's sentinels were found: only then do Fortran calls go
 * through the C entry points; otherwise to the library's own binding. */
WEFT_HIDDEN int fortran_served(void);
/* A Fortran buffer argument as C passes it (MPI_IN_PLACE, MPI_BOTTOM). */
WEFT_HIDDEN void *fortran_buffer(void *buf);
/* The C handle of a Fortran one; 0 where it does not convert. */
WEFT_HIDDEN int fortran_comm(const MPI_Fint *f, MPI_Comm *c);
WEFT_HIDDEN int fortran_type(const MPI_Fint *f, MPI_Datatype *c);
WEFT_HIDDEN int fortran_op(const MPI_Fint *f, MPI_Op *c);
/* A datatype argument MPI reads only where `used` (a send type beside
 * MPI_IN_PLACE, a receive type off the root): any integer where not used,
 * passed on as MPI_DATATYPE_NULL. */
WEFT_HIDDEN int fortran_type_if(int used, const MPI_Fint *f, MPI_Datatype *c);
WEFT_HIDDEN void fortran_ierror(MPI_Fint *ierror, int rc);
/* The MPI library's own function `name` (found after this library). */
WEFT_HIDDEN void *fortran_library(void **cache, const char *name);

/* allreduce's, reduce_scatter_block's and scan's arguments, in C and in
 * Fortran */
typedef int reduction_c(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef void reduction_f(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                         MPI_Fint *);
/* Such a call from Fortran: converted and made through c_call, or given to
 * the library's own function `name` (fortran.c). */
WEFT_HIDDEN void fortran_reduction(reduction_c *c_call, void **library, const char *name,
                                   void *sendbuf, void *recvbuf, MPI_Fint *count,
                                   MPI_Fint *datatype, MPI_Fint *op, MPI_Fint *comm,
                                   MPI_Fint *ierror);

/* allgather's and alltoall's arguments, in C and in Fortran */
typedef int block_exchange_c(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
typedef void block_exchange_f(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *,
                              MPI_Fint *, MPI_Fint *);
/* the same for these */
WEFT_HIDDEN void fortran_block_exchange(block_exchange_c *c_call, void **library, const char *name,
                                        void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype,
                                        void *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype,
                                        MPI_Fint *comm, MPI_Fint *ierror);

/* Calls the library's function `name` of C type `type` with `args`. */
#define FORWARD(type, name, args)                                                                  \
    do {                                                                                           \
        static void *fn_;                                                                          \
        ((type *)fortran_library(&fn_, name)) args;                                                \
    } while (0)

/* The other spellings of a Fortran name, and Open MPI's C name that its
 * mpi_f08 module calls, all for one definition. */
#define SPELLED_ALSO(lower, upper, ompi)                                                           \
    extern __typeof__(lower##_) lower##__ __attribute__((alias(#lower "_")));                      \
    extern __typeof__(lower##_) lower __attribute__((alias(#lower "_")));                          \
    extern __typeof__(lower##_) upper __attribute__((alias(#lower "_")));                          \
    extern __typeof__(lower##_) ompi __attribute__((alias(#lower "_")))

#endif
