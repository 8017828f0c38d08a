/* weft.h — the public API of weft, a collective-communication library.
 *
 * Every entry point validates its arguments and returns a weft_err_t; on
 * failure weft_last_error() gives a message for the calling thread.  Nothing
 * aborts the process, and a wait fails with WEFT_EPEER instead of hanging
 * when a peer process dies.  Ranks that call different collectives (or the
 * same one with different arguments or algorithms) fail with
 * WEFT_EMISMATCH naming what differed; a peer that stops is named when the
 * communicator's timeout (weft_comm_set_timeout) expires.
 *
 * Thread safety: weft_init/weft_finalize must be called by one thread.  All
 * other calls are thread-safe provided that no two threads use the same
 * communicator (or the same request) at the same time; collectives on
 * different communicators may run concurrently from different threads.
 *
 * fork(): a child shares its parent's segments, so it may not act as the
 * rank.  In a child every call on a communicator or request, and
 * weft_finalize, fails with WEFT_EINVAL; weft_alloc works (a new arena).
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1

typedef enum {
    WEFT_OK = 0,
    WEFT_EINVAL = 1,     /* bad argument; the message says which and why */
    WEFT_ENOMEM = 2,     /* out of memory or shared-memory space */
    WEFT_EPEER = 3,      /* a peer process died or aborted the job */
    WEFT_ETIMEDOUT = 4,  /* a *_timeout call not finished in its own limit: call again;
                          * past the communicator's timeout: it is now revoked */
    WEFT_EBUSY = 5,      /* another split-phase collective is unfinished */
    WEFT_ENOTSUP = 6,    /* valid request that weft does not implement */
    WEFT_ENOTINIT = 7,   /* weft_init was not called (or weft_finalize was) */
    WEFT_EMISMATCH = 8,  /* ranks disagree on a collective's arguments */
    WEFT_ESYS = 9,       /* an operating-system call failed */
    WEFT_EINTERNAL = 10, /* a bug in weft: please report it */
    WEFT_EREVOKED = 11,  /* the communicator was revoked (timeout, weft_comm_revoke; over
                          * MPI, a call refused or failed here 128 calls before: MPI.md) */
} weft_err_t;
/* A collective refused on a rank (WEFT_EINVAL, WEFT_ENOMEM, WEFT_ENOTSUP
 * before it began) still counts as that communicator's next call there:
 * peers that made it fail (WEFT_EMISMATCH, or WEFT_EPEER where they made
 * it alike) rather than wait, and calling again makes the next call, not
 * that one.  Errors about the communicator itself (invalid, revoked, in
 * a job that failed, an unfinished *_timeout call) do not count. */

/* Element types.  float16 is IEEE binary16, bfloat16 the upper half of a
 * binary32; both are reduced through float32. */
typedef enum {
    WEFT_INT8, WEFT_INT16, WEFT_INT32, WEFT_INT64,
    WEFT_UINT8, WEFT_UINT16, WEFT_UINT32, WEFT_UINT64,
    WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64,
    WEFT_DTYPE_COUNT
} weft_dtype_t;

/* Reduction operations: the predefined ones below, or a handle returned by
 * weft_op_create.  Bitwise and logical ops are defined for integer types
 * only.  Integer sum/prod wrap modulo 2^bits. */
typedef int weft_op_t;
enum {
    WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX,
    WEFT_BAND, WEFT_BOR, WEFT_BXOR, WEFT_LAND, WEFT_LOR,
    WEFT_OP_BUILTIN_COUNT
};

/* A user reduction computes inout[i] = in[i] (op) inout[i] for i < count,
 * where `in` holds the contribution of lower-ranked processes (MPI order). */
typedef void (*weft_user_fn)(const void *in, void *inout, size_t count,
                             weft_dtype_t dtype, void *ctx);

typedef struct weft_comm *weft_comm_t;
typedef struct weft_request *weft_request_t;

/* Pass as sendbuf for in-place operation (as MPI_IN_PLACE).  Passing the
 * receive buffer itself where in place takes this rank's input from is the
 * same (NCCL's convention): sendbuf == recvbuf for allreduce and the
 * reduce's root, sendbuf == recvbuf + rank*count for allgather and the
 * gather's root, recvbuf == sendbuf for reduce_scatter and recvbuf ==
 * sendbuf + rank*count at the scatter's root.  Any other overlap of the two
 * buffers is WEFT_EINVAL, before any message. */
#define WEFT_IN_PLACE ((void *)(intptr_t)1)

/* Collectives, for algorithm selection. */
typedef enum {
    WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE,
    WEFT_COLL_REDUCE_SCATTER, WEFT_COLL_ALLGATHER, WEFT_COLL_SCATTER,
    WEFT_COLL_GATHER, WEFT_COLL_BARRIER, WEFT_COLL_COUNT
} weft_coll_t;

/* ---- job and communicators ---- */

/* Join the job started by `weft run`; without it, start a job of one rank.
 * argc/argv may be NULL. */
WEFT_API weft_err_t weft_init(int *argc, char ***argv);
/* Leaves the job (a barrier with the other ranks) and frees the job's
 * communicators the program did not free; their handles are then invalid
 * (weft_comm_free of one returns WEFT_EINVAL).  Communicators made by
 * weft_comm_from_mpi (and their children) are the program's to free,
 * before MPI_Finalize; weft_finalize leaves them, and weft_comm_free still
 * frees them after it.  On shared memory a message left over of a call
 * this rank ended makes it WEFT_EMISMATCH, and the other ranks'
 * WEFT_EPEER: ranks disagreed in a call where each only sent (two that
 * each took itself for the root, say). */
WEFT_API weft_err_t weft_finalize(void);
WEFT_API int weft_initialized(void);
WEFT_API weft_comm_t weft_comm_world(void);
WEFT_API int weft_comm_rank(weft_comm_t comm);
WEFT_API int weft_comm_size(weft_comm_t comm);
/* Communicators may be made and freed without limit; at most 65534 may
 * live at once on a rank (WEFT_ENOMEM beyond).  One exception: the context
 * id of a communicator freed after an arrival-driven call (pap_leader,
 * pap_chain, shm_twostep, adaptive, hier_pap), a failed call or a
 * revocation is never reused, since something of it may be left in shared
 * memory; such ids count as live ones.  Threads may make communicators
 * from different parents at once. */
WEFT_API weft_err_t weft_comm_dup(weft_comm_t comm, weft_comm_t *newcomm);
/* Ranks with the same color form a new communicator, ordered by (key,
 * old rank).  color WEFT_UNDEFINED gives *newcomm = NULL; any other color
 * below 0 is refused (WEFT_EINVAL).  A dup or split refused on some ranks
 * (a bad color, newcomm NULL) fails on every rank: the others get
 * WEFT_EPEER naming a refusing rank, and no communicator is made. */
#define WEFT_UNDEFINED (-1)
WEFT_API weft_err_t weft_comm_split(weft_comm_t comm, int color, int key,
                           weft_comm_t *newcomm);
WEFT_API weft_err_t weft_comm_free(weft_comm_t *comm);

/* ---- stopped peers: timeouts and revocation ----
 * A blocking call (or weft_wait, or a *_timeout call, counted from its
 * first call) that has waited timeout_ms without finishing returns
 * WEFT_ETIMEDOUT with a message naming the ranks it waits for and where
 * each is, and revokes the communicator.  0: no timeout (the default, or
 * WEFT_TIMEOUT_MS from the environment for every new communicator).  The
 * setting is local: ranks may differ. */
WEFT_API weft_err_t weft_comm_set_timeout(weft_comm_t comm, int timeout_ms);
/* Abandons the communicator on this rank: its unfinished *_timeout call
 * ends, its split-phase requests' weft_test/weft_wait return WEFT_EREVOKED
 * at once (and must still be called to free them), and every later call
 * on it fails with WEFT_EREVOKED naming the reason.  Peers waiting for this
 * rank in an abandoned call fail with WEFT_EPEER.  A revoked communicator
 * cannot be repaired: free it and work on another (weft_comm_dup of a
 * healthy one), or end the job.  Revoking the world communicator lets
 * weft_finalize end without its closing barrier. */
WEFT_API weft_err_t weft_comm_revoke(weft_comm_t comm);

/* ---- blocking collectives ---- */

WEFT_API weft_err_t weft_barrier(weft_comm_t comm);
WEFT_API weft_err_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                          weft_dtype_t dtype, weft_op_t op, weft_comm_t comm);
WEFT_API weft_err_t weft_bcast(void *buf, size_t count, weft_dtype_t dtype, int root,
                      weft_comm_t comm);
/* recvbuf matters at the root only; WEFT_IN_PLACE is allowed at the root. */
WEFT_API weft_err_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
                       weft_dtype_t dtype, weft_op_t op, int root,
                       weft_comm_t comm);
/* sendbuf holds size*count elements; each rank receives its block of
 * `count` (MPI_Reduce_scatter_block).  In place: the input is in recvbuf. */
WEFT_API weft_err_t weft_reduce_scatter(const void *sendbuf, void *recvbuf,
                               size_t count, weft_dtype_t dtype, weft_op_t op,
                               weft_comm_t comm);
/* recvbuf holds size*count elements.  In place: the input is already in
 * recvbuf at rank*count. */
WEFT_API weft_err_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count,
                          weft_dtype_t dtype, weft_comm_t comm);
/* sendbuf (root) holds size*count elements; recvbuf may be WEFT_IN_PLACE at
 * the root, whose block then stays in sendbuf. */
WEFT_API weft_err_t weft_scatter(const void *sendbuf, void *recvbuf, size_t count,
                        weft_dtype_t dtype, int root, weft_comm_t comm);
/* recvbuf (root) holds size*count elements; sendbuf may be WEFT_IN_PLACE at
 * the root, whose block is then already in recvbuf at root*count. */
WEFT_API weft_err_t weft_gather(const void *sendbuf, void *recvbuf, size_t count,
                       weft_dtype_t dtype, int root, weft_comm_t comm);

/* ---- split-phase collectives ----
 * Start, then weft_test (progresses and reports) or weft_wait (blocks).
 * Buffers must stay untouched until completion.  Several may be in flight
 * on one communicator; all ranks must start them in the same order.
 * A completed request is freed and set to NULL. */
WEFT_API weft_err_t weft_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                           weft_dtype_t dtype, weft_op_t op, weft_comm_t comm,
                           weft_request_t *req);
WEFT_API weft_err_t weft_ibcast(void *buf, size_t count, weft_dtype_t dtype, int root,
                       weft_comm_t comm, weft_request_t *req);
WEFT_API weft_err_t weft_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                        weft_dtype_t dtype, weft_op_t op, int root,
                        weft_comm_t comm, weft_request_t *req);
WEFT_API weft_err_t weft_test(weft_request_t *req, int *done);
WEFT_API weft_err_t weft_wait(weft_request_t *req);

/* ---- GASPI-style split-phase collectives ----
 * Progress the collective for at most timeout_ms and return WEFT_OK when it
 * is done, or WEFT_ETIMEDOUT when it is not: then call again with the same
 * arguments to continue (ranks may use different timeouts).  WEFT_BLOCK
 * waits until done, WEFT_TEST only progresses (it never sleeps; with more
 * ranks than cores, a poll that finds nothing to do yields the core).  While one is unfinished on
 * a communicator, any other collective call on it returns WEFT_EBUSY, and a
 * continuing call with different arguments WEFT_EINVAL. */
#define WEFT_BLOCK (-1)
#define WEFT_TEST 0
WEFT_API weft_err_t weft_allreduce_timeout(const void *sendbuf, void *recvbuf, size_t count,
                                  weft_dtype_t dtype, weft_op_t op, weft_comm_t comm,
                                  int timeout_ms);
WEFT_API weft_err_t weft_bcast_timeout(void *buf, size_t count, weft_dtype_t dtype, int root,
                              weft_comm_t comm, int timeout_ms);
WEFT_API weft_err_t weft_reduce_timeout(const void *sendbuf, void *recvbuf, size_t count,
                               weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t comm,
                               int timeout_ms);

/* ---- datatypes and ops ---- */

WEFT_API size_t weft_dtype_size(weft_dtype_t dtype);
WEFT_API const char *weft_dtype_name(weft_dtype_t dtype);
WEFT_API const char *weft_op_name(weft_op_t op);
/* commutative: the op gives the same result in any order.  idempotent:
 * x op x == x (min, max, band, bor, land, lor are). */
WEFT_API weft_err_t weft_op_create(weft_user_fn fn, void *ctx, int commutative,
                          int idempotent, weft_op_t *op);
WEFT_API weft_err_t weft_op_free(weft_op_t *op);
/* Ranks must pass the same op to a collective; ranks that do not fail with
 * WEFT_EMISMATCH.  A user op is known across processes by where its
 * function lives (object file and offset, which ASLR does not change) and
 * its two flags.  Ops that share one function (a wrapper taking the real
 * function through ctx, as an MPI binding does) say here what tells them
 * apart: the address of a function or static object, read the same way. */
WEFT_API weft_err_t weft_op_set_origin(weft_op_t op, const void *origin);

/* ---- buffers in the shared arena ----
 * weft_alloc returns memory that peers on the same machine can read in
 * place: a collective whose buffers come from it moves a message by one
 * copy (or one reduction) straight from the sender's pages, without the
 * copy into shared memory or a system call (except where that holds its
 * sender while the receiver copies alone and the copy through shared
 * memory, both copying, was measured faster: between two ranks with a core
 * each from a 1 MiB call, and where ranks share cores a reducing call's
 * messages of up to 256 KiB, but a pipeline's pieces, a whole input sent
 * to a root, and linear_arena's blocks).  Any buffer works with any call;
 * these are only faster.  Blocks are whole pages, 4 KiB-aligned, and
 * zeroed on first use; the arena holds at most the machine's memory
 * (WEFT_ARENA_MAX, in MiB, sets less) and may be used before weft_init and
 * after weft_finalize.  Up to 64 MiB of freed blocks (a quarter of a
 * smaller arena) stay resident for the next weft_alloc, zeroed when handed
 * out again; the rest go back to the system at once.  bytes = 0, or more
 * than the arena holds, fails
 * (WEFT_EINVAL, WEFT_ENOMEM) with *ptr = NULL.  weft_free(NULL) does
 * nothing; a pointer weft_alloc did not return, or one freed already,
 * fails with WEFT_EINVAL.  A buffer must not be freed while a collective
 * that uses it is unfinished.  A child of fork() shares its parent's
 * blocks (the pages are shared memory): it must neither free them nor
 * treat them as private; its own weft_alloc calls get a new arena. */
WEFT_API weft_err_t weft_alloc(size_t bytes, void **ptr);
WEFT_API weft_err_t weft_free(void *ptr);

/* ---- algorithm selection ----
 * name: an algorithm of that collective (see `weft algorithms` and
 * docs/ALGORITHMS.md) or "auto".  params: NULL or "key=value,..." (e.g.
 * "chunks=8").  The environment variables WEFT_<COLL>_ALGO (e.g.
 * WEFT_ALLREDUCE_ALGO=ring) and WEFT_<COLL>_PARAMS set the default for every
 * communicator.  Every rank of comm must make the same choice.  The choice
 * serves the program's calls only: the collectives weft makes on comm to
 * make a communicator from it (weft_comm_dup, weft_comm_split) run on
 * AUTO's choice, and weft_last_algorithm does not report them.  A
 * communicator made from comm starts with comm's choices. */
WEFT_API weft_err_t weft_set_algorithm(weft_comm_t comm, weft_coll_t coll,
                              const char *name, const char *params);
/* Properties of an algorithm (bit mask), or -1 if there is none by that name. */
#define WEFT_ALGO_NEEDS_COMMUTATIVE 0x1 /* the op must be commutative */
#define WEFT_ALGO_NEEDS_IDEMPOTENT 0x2  /* the op must be idempotent */
#define WEFT_ALGO_IDENTICAL 0x4         /* every rank gets bitwise-identical results */
WEFT_API int weft_algorithm_properties(weft_coll_t coll, const char *name);
/* The same with parameters: a composition's properties follow from its
 * parts (hier's inter=, reduce_bcast's reduce=); -1 if the name or the
 * parameters are not valid. */
WEFT_API int weft_algorithm_properties_with(weft_coll_t coll, const char *name,
                                           const char *params);
/* The algorithm that served the last call of coll on comm (AUTO's choice
 * when none was set), NULL before the first call or for a bad argument. */
WEFT_API const char *weft_last_algorithm(weft_comm_t comm, weft_coll_t coll);
/* The i-th algorithm of coll (i = 0, 1, ...), NULL past the last. */
WEFT_API const char *weft_algorithm_name(weft_coll_t coll, int i);
/* "allreduce", "bcast", ... */
WEFT_API const char *weft_coll_name(weft_coll_t coll);

/* ---- errors ---- */
WEFT_API const char *weft_strerror(weft_err_t err);
/* The message of the last failed call on this thread ("" if none). */
WEFT_API const char *weft_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_H */
