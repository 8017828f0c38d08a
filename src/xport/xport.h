/* xport.h — the transport interface.  The engine drives every transport
 * through these few calls; nothing about shared memory or MPI leaks past
 * it.  Messages are matched by (source, tag) and may complete out of order;
 * between one source and one destination, messages with equal tags are
 * matched in the order they were sent (as in MPI).
 *
 * Requests are owned by the caller and filled in before isend/irecv; the
 * transport calls req->cb exactly once when the request finishes (possibly
 * from inside isend/irecv).  A receive delivers into sink.dst, either by
 * copying or by reducing each fragment into place (sink.red), so a
 * receive-and-reduce needs no staging buffer where the transport can avoid
 * one.  Callers hold x->lock around every call. */
#ifndef WEFT_XPORT_H
#define WEFT_XPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../core/core.h"

typedef struct xport xport_t;
typedef struct xreq xreq_t;

typedef struct xsink {
    void *dst;
    const reducer_t *red; /* NULL: plain copy */
    bool src_left;        /* incoming data is the left operand */
} xsink_t;

struct xreq {
    void (*cb)(xreq_t *req, int err);
    void *owner;
    int peer;      /* world rank */
    uint64_t tag;
    uint32_t sig;  /* call signature: receivers reject a mismatch */
    size_t bytes;
    const void *sbuf;
    xsink_t sink;
    /* transport-private */
    size_t done;
    xreq_t *next;
    void *priv;
};

typedef struct xport_ops {
    const char *name;
    int (*isend)(xport_t *x, xreq_t *req);
    int (*irecv)(xport_t *x, xreq_t *req);
    /* > 0 if anything moved, 0 if not, < 0 a weft error (EPEER) */
    int (*progress)(xport_t *x);
    /* Sleep until something may have changed for this process, at most
     * timeout_ms.  Called with x->lock held; releases it while asleep. */
    void (*block)(xport_t *x, int timeout_ms);
    /* WEFT_OK, or WEFT_EPEER with the message set when the job is dead */
    int (*health)(xport_t *x);
    void (*close)(xport_t *x);
    /* Optional: a transport for the ranks of a sub-communicator (collective
     * over x's ranks; color < 0: this rank is in none, *out = NULL).  NULL
     * for transports shared by the whole job, whose sub-communicators map
     * ranks instead. */
    int (*derive)(xport_t *x, int color, int key, xport_t **out);
} xport_ops_t;

struct xport {
    const xport_ops_t *ops;
    int rank, size;
    int local_size; /* ranks sharing this node's cores */
    int *node_ids;  /* node id of every rank, or NULL (one node); owned */
    pthread_mutex_t lock;
};

/* For transports that cannot be woken (MPI): give the core away briefly,
 * with x->lock released, then take it back. */
static inline void xport_nap(xport_t *x)
{
    struct timespec ts = {0, 20000};
    pthread_mutex_unlock(&x->lock);
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&x->lock);
}

/* Shared-memory transport of a job started by `weft run`. */
int xport_shm_open(const char *segname, int rank, int size, xport_t **out);
/* Transport of a job of one rank (no peers). */
int xport_self_open(xport_t **out);

#endif
