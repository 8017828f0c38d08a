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
struct board_slot;   /* segment.h */
struct arrival_rec;  /* segment.h */

/* What a rank is calling, published in the call log so that peers can tell
 * a slow rank from one that called something else.  key = context << 32 |
 * call sequence number on that communicator. */
typedef struct call_desc {
    uint64_t key;
    uint32_t sig;          /* hash of everything below */
    uint16_t coll, algo;   /* algo: index in the registry's table */
    uint64_t count;
    uint64_t op;           /* op identity (op_identity), 0 if no reduction */
    int32_t root;
    uint32_t dtype;
    uint32_t params;       /* hash of the algorithm's parameters */
    uint32_t flags;        /* CALL_FINALIZE */
} call_desc_t;
#define CALL_FINALIZE 0x1u /* the barrier inside weft_finalize */
/* A refusal for this rank's own buffers or memory (api.c, call_refused),
 * where the other ranks may have made the call alike and sent for it. */
#define CALL_OWN_REASON 0x2u
/* Over MPI, a record a rank sends of a call it refused, or abandoned (a
 * failure there, its timeout, a revoke), where peers cannot read its log
 * (mpi.c). */
#define CALL_WAS_REFUSED 0x4u
#define CALL_WAS_ABANDONED 0x8u
/* Over MPI, the answer of a rank in MPI_Finalize to an announcement of a
 * call it never made there (mpi.c). */
#define CALL_WAS_FINALIZING 0x10u
/* Over MPI, the answer of a rank that freed the communicator, to an
 * announcement of a call it never made there (mpi.c, FREED_LINGER). */
#define CALL_WAS_FREED 0x20u
/* On an abandoned call's record: the call has ended here and will never
 * move again, what it held given back (exec_finish, after the algorithm's
 * abandon), so peers may count it out of what it was still to read
 * (board.c, write_off).  A revoke marks calls abandoned that other waits
 * may still move: their records lack it. */
#define CALL_GAVE_UP 0x40u

/* A call's state in the log.  Finishing is not recorded: peers whose
 * records agree run the same schedule, so a finished peer has sent all
 * they wait for, and one write less per call is worth it. */
enum { CALL_STARTED = 1, CALL_ABANDONED = 3, CALL_REFUSED = 4 /* api.c, call_refused */ };
/* A refused call's algorithm where the program left the choice to AUTO. */
#define CALL_ALGO_AUTO UINT16_MAX
/* Not states but requests to the log: keep the record of a call whose
 * wait has stalled where newer calls cannot push it out (other threads'
 * calls, or other calls in flight, take the hashed records by the
 * thousand while it waits), and let it go when the call ends. */
enum { CALL_PIN = 5, CALL_UNPIN = 6 };
enum { PEER_UNKNOWN = -1, PEER_NEW = 0, PEER_ATTACHED = 1, PEER_FINALIZED = 2,
       PEER_FINALIZING = 3, PEER_MPI_FINALIZING = 4 /* in MPI_Finalize (mpi.c) */,
       PEER_FREED = 5 /* freed the communicator asked about (comm_freed) */ };

/* The slot (of n) where a rank keeps its record of call `key`: peers
 * look a call up with one read (shm's call log, MPI's recent calls).  A
 * communicator's calls take consecutive slots from a start drawn from its
 * context id by the high bits of a product: with the low bits (ctx + seq
 * mod 16, as before), a communicator and a twin made after it, called in
 * turn, put every call in the slot of the other's last one and kept none
 * (weft stress's control calls did). */
static inline unsigned call_slot(uint64_t key, unsigned n)
{
    uint64_t start = ((key >> 32) * 0x9e3779b97f4a7c15ull) >> 40;
    return (unsigned)((start + (uint32_t)key) % n);
}

/* Call numbers in tags and keys: 24 bits (api.c's tag layout). */
#define CALL_NUM_MASK 0xffffffu

/* The call a message tag belongs to (api.c's tag layout). */
static inline uint64_t call_key_of_tag(uint64_t tag)
{
    return (tag >> 48) << 32 | ((tag >> 24) & 0xffffffu);
}
/* watch.c: "allreduce ring, 4 x int32 sum (call #7 on communicator 1)" */
void call_describe(const call_desc_t *d, char *buf, size_t n);
/* watch.c: "ranks 0 and 2 disagree on a collective (root differ): rank 0
 * calls ...; rank 2 calls ..." */
void call_disagreement(const call_desc_t *mine, int me, const call_desc_t *theirs, int peer,
                       int refused_by, char *buf, size_t n);

/* What this rank can see of a peer's calls (xport_ops.peer_view). */
typedef struct peer_view {
    int rank_state;    /* PEER_* */
    bool found;        /* the peer's record of the call asked about */
    int state;         /* CALL_* of that record */
    call_desc_t call;  /* that record */
    bool any_on_ctx;   /* the log holds a call of this context */
    uint32_t latest_seq; /* the newest such call's sequence number */
    /* where peers learn of calls by message (MPI): the peer told of a call
     * (call) that this rank made differently (mine) */
    bool conflict;
    call_desc_t mine;
    /* or another rank ended the job: the message is in weft_last_error() */
    bool aborted;
    /* a call failed on the peer (error, timeout, revoke): the newest one,
     * described when its record is still in the log (abandoned_found) */
    bool abandoned, abandoned_found;
    call_desc_t abandoned_call;
    /* the call asked about is among its last failed ones (shm: their
     * keys, segment.h), the newest or one that failed before it */
    bool abandoned_this;
    /* the peer refused the call asked about (api.c, call_refused), seen
     * where its record is gone: the low 24 bits of its signature */
    bool refused;
    uint32_t refused_sig24;
    /* the peer ended the call asked about well, its messages all out
     * (xport_ops calls_ended: read before this rank's ring from it) */
    bool ended_well;
} peer_view_t;

typedef struct xsink {
    void *dst;
    const reducer_t *red; /* NULL: plain copy */
    bool src_left;        /* incoming data is the left operand */
    /* A receive-and-reduce whose destination a copy step was to fill just
     * before (the engine fused them): dst = seed (op) incoming, read from
     * here at the same offsets, so the destination is written once. */
    const char *seed;
    /* a destination too large to stay in the caches: written with
     * streaming stores, which skip reading each line before writing it */
    bool stream;
} xsink_t;

/* Delivers len bytes of a message at offset off into sk (copying or
 * reducing; shared by the transports). */
void xsink_deliver(const xsink_t *sk, size_t off, const void *src, size_t len);

struct xreq {
    void (*cb)(xreq_t *req, int err);
    void *owner;
    int peer;      /* world rank */
    uint64_t tag;
    uint32_t sig;  /* call signature: receivers reject a mismatch */
    bool copied;   /* a send of a call that never reduces what it receives
                    * (bcast, allgather, ...): its receiver only copies */
    bool sender_idles; /* a send of a reducing call from a rank with nothing
                        * left to receive in it: its core is free while the
                        * receiver reduces */
    bool sender_busy;  /* a send of a copy-only call from a rank with
                        * messages still to receive in it (an allgather's):
                        * its core copies those while this one moves */
    bool read_by_all;  /* a send of an algorithm built for peers reading its
                        * buffers in place (linear_arena) */
    size_t bytes;
    size_t call_bytes; /* the call's count times its element size: a message
                        * may be one piece of a pipeline */
    const void *sbuf;
    xsink_t sink;
    /* transport-private */
    bool withdrawn;     /* a send of a call that failed (disown) */
    bool sender_failed; /* a receive whose sender withdrew its message */
    size_t done;
    uint64_t cell_no;   /* shm: a posted single-copy send's cell (wseq) */
    uint64_t posted_ns; /* shm: when the receive was posted, where copies measured need it */
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
    /* Optional (NULL where peers' memory cannot be read): the call log.
     * call_note records this rank's call d in state CALL_* (callers need
     * not hold x->lock: threads may publish at once); peer_view
     * reads what peer has recorded of call `key` (quick: only that, one
     * read) and of its context and state. */
    void (*call_note)(xport_t *x, const call_desc_t *d, int state);
    int (*peer_view)(xport_t *x, int peer, uint64_t key, bool quick, peer_view_t *out);
    /* Optional: this rank enters (1) or leaves (0) weft_finalize. */
    void (*note_finalize)(xport_t *x, int entering);
    /* Ends the job: every peer's waits fail with WEFT_EPEER and msg. */
    void (*fail_job)(xport_t *x, const char *msg);
    /* Optional: tells peer this rank's call (where peers learn of calls by
     * message, not from a shared call log). */
    void (*announce)(xport_t *x, int peer, const call_desc_t *mine);
    /* Optional (shared memory only): slot i of a rank's board (segment.h),
     * and waking the given ranks that sleep in block() after this rank
     * wrote its slot. */
    struct board_slot *(*board_slot)(xport_t *x, int rank, unsigned i);
    void (*wake_ranks)(xport_t *x, const int *ranks, int n);
    /* Optional (shared memory only, with board_slot): arrival record i of a
     * rank (segment.h), which every rank of a call may write. */
    struct arrival_rec *(*arrival_rec)(xport_t *x, int rank, unsigned i);
    /* Optional: this rank's calls on context ctx numbered first .. below-1
     * (24 bits, modulo 2^24) have all ended without an error, and none of
     * that communicator's failed (well); !well: nothing is known of them.
     * A message of such a call that no receive takes proves that its
     * sender made the call otherwise (xport may end the job with
     * WEFT_EMISMATCH).  Callers need not hold x->lock. */
    void (*calls_ended)(xport_t *x, uint32_t ctx, uint32_t first, uint32_t below, bool well);
    /* Optional (with peer_view's ended_well): nothing peer sent this rank
     * waits to be taken in (x->lock held). */
    bool (*drained_from)(xport_t *x, int peer);
    /* Optional: r (a send or a receive of a call that failed, issued and
     * not complete) gives its buffer back to its caller: whatever the
     * transport still writes of a receive lands in dst instead, and the
     * receiver of a send learns that what it has not yet read of it may
     * no longer be the message (x->lock held). */
    void (*disown)(xport_t *x, xreq_t *r, void *dst);
    /* Optional: at weft_finalize, once every rank's calls have ended:
     * WEFT_EMISMATCH (the job ended) where a message is left of a call
     * this rank ended well (calls_ended), else WEFT_OK. */
    int (*sweep)(xport_t *x);
    /* Optional: a stalled wait's proof for call key (context << 32 | call
     * number) made here under signature sig (x->lock held): a message of
     * that call under another signature waits to be taken in, from a peer
     * this rank's schedule may never receive from in it (the peer made the
     * call with another algorithm); with complete (the call has taken in
     * all it expects, its caller not yet told), any message of it does;
     * and so does one of a call this rank has ended well.  WEFT_EMISMATCH
     * (the job ended), else WEFT_OK. */
    int (*sent_otherwise)(xport_t *x, uint64_t key, uint32_t sig, bool complete);
    /* Optional: WEFT_OK where call key may start, else the error (the
     * call is then refused): over MPI a call whose tags are those of an
     * earlier call this rank refused or abandoned, whose messages from
     * its peers may still wait unread (mpi.c).  Callers need not hold
     * x->lock. */
    int (*call_may_start)(xport_t *x, uint64_t key);
    /* Optional: the program freed the communicator of context id ctx on
     * this rank, next_call the number after its last call there (freed),
     * or an id freed before serves a communicator again (!freed).  A
     * peer still waiting in a later call there learns that this rank
     * never made it (peer_view's rank_state PEER_FREED). */
    void (*comm_freed)(xport_t *x, uint32_t ctx, uint32_t next_call, bool freed);
} xport_ops_t;

struct xport {
    const xport_ops_t *ops;
    int rank, size;
    int local_size; /* ranks sharing this node's cores */
    int cores;      /* cores they may run on (cpus.h); 0: as many as ranks */
    uint32_t board_payload; /* bytes a board slot carries (with ops->board_slot) */
    uint32_t tag_limit; /* step tags must be below this (2^24, or what MPI_TAG_UB leaves) */
    int *node_ids;  /* node id of every rank, or NULL (one node); owned */
    /* The rank a message names for each rank of this transport, where it
     * is a node's part of a larger one (twolevel.c: the node's segment,
     * ranked from 0, names the communicator's ranks); NULL: its own.  Not
     * owned: the enclosing transport's. */
    const int *named;
    /* A one-node transport made from an MPI communicator: the
     * MPI_COMM_WORLD rank of every rank, and an id of its segment that
     * every rank knows alike (weft_comm_from_mpi makes later communicators
     * of these ranks on it); NULL and 0 otherwise.  Owned. */
    int *mpi_world;
    uint64_t mpi_seg;
    /* A send from this rank's arena (weft_alloc) of at least this many
     * bytes is read in place by its receiver, with no copy in; 0: never. */
    size_t arena_reads_from;
    /* Set by a waiter on the board around block(): block() does not sleep
     * while it returns true (a peer's slot changed), as for a message. */
    bool (*also_ready)(void *arg);
    void *also_arg;
    pthread_mutex_t lock;
    /* The communicators on this transport (comm.c counts them under its
     * list's lock), and whether it is theirs: one made by
     * weft_comm_from_mpi or for a derived communicator is closed with the
     * last of them, whichever is freed last (a dup may outlive its
     * parent); the job's transport is weft_finalize's to close. */
    int comms;
    bool closes_with_comms;
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
