/* engine.h — the progress engine: runs one rank's schedule over a transport,
 * non-blocking.  exec_progress does whatever can be done now and returns;
 * blocking calls loop on it with exec_wait, split-phase calls call it from
 * weft_test. */
#ifndef WEFT_ENGINE_H
#define WEFT_ENGINE_H

#include <stdatomic.h>

#include "../core/core.h"
#include "../sched/sched.h"
#include "../xport/xport.h"

struct exec;
/* An algorithm that is not a schedule (src/shmcoll: driven by the board in
 * shared memory): start and progress replace the schedule's steps; the
 * engine's waiting, watching, timeouts and split-phase listing stay. */
typedef struct board_ops {
    void (*start)(struct exec *e);
    /* as exec_progress: 1 done, 0 not yet, negative a weft error */
    int (*progress)(struct exec *e);
    /* true when a peer's slot this call waits for has changed */
    bool (*ready)(void *e);
    /* the communicator ranks it still waits for, up to max; their number */
    int (*waiting_for)(const struct exec *e, int *ranks, int max);
    /* asked by the watch when the call has not moved for a while: a weft
     * error when the algorithm's own state proves it can never finish */
    int (*stalled)(struct exec *e);
    /* optional: the call failed on this rank; give back what it holds in
     * shared memory so that other calls do not wait for it forever */
    void (*abandon)(struct exec *e);
} board_ops_t;

/* Where a board algorithm is in its call. */
typedef struct board_run {
    int phase;     /* BOARD_* of the algorithm */
    unsigned slot; /* this call's slot index */
    int next;      /* the next communicator rank to look for */
    int end;       /* and the end of the ranks it looks for */
    /* from board_arm (board.c): this rank's earlier calls of the
     * communicator are all finished ("Proven read"); the stamp of contents
     * of this call's slot that every reader is known to have read (0: none
     * known); the stamp the slot shows once this rank's call before this
     * one in the slot has posted (0: none in flight), since posts into a
     * slot go in call order ("Calls in flight") */
    bool ordered;
    uint64_t proven_stamp, pred_stamp;
    /* for board_finished: every peer's post that this rank read was
     * ordered (an allreduce's or barrier's: all peers) */
    bool peers_ordered;
    /* a call of no elements waiting for the one before it to be settled
     * (board.c, empty_progress): since when, 0 not yet */
    uint64_t empty_since_ns;
} board_run_t;

/* What a communicator's board and arrival-driven calls on this rank leave
 * for the next ones, each a call's key + 1 (0: none), per slot or record
 * of its pair (key parity): for the board (board.c), the last call
 * started that posts, the last that posted and finished, and the last
 * allreduce or barrier finished in which every peer's post was ordered;
 * for the arrival-driven calls that take tickets (arrival.c), the last
 * started, and the last that took its ticket (or failed). */
typedef struct board_comm {
    uint64_t last_post[2], arrival_last[2]; /* the calling thread's alone */
    /* set where a call finishes or takes its ticket, which may be in
     * another thread's wait: release, read with acquire (what the setter
     * learnt from its peers' posts comes with it) */
    _Atomic uint64_t posted[2], read_by_all, arrival_passed[2];
    /* a call of no elements that posted and left before a neighbour's log
     * held that call (board.c, check_neighbours), compared again as the communicator's
     * next calls start (board_recheck): context id << 48 | call number <<
     * 24 | the low 24 bits of its signature; 0: none.  One word: a
     * split-phase call may be moved on by another thread's wait. */
    _Atomic uint64_t unchecked;
    /* a schedule that only sent and ended before a peer it sent to had
     * noted the call (watch_sent): the call (a call_desc_t, word by word)
     * and that peer (its communicator rank + 1; 0: none), compared again
     * as the next calls start (board_recheck), up to SENT_RECHECKS of
     * them; a later such call waits for it to be settled.  Written under
     * sent_seq, odd while a writer fills the rest: a writer that finds it
     * odd gives up, and a reader that sees it move looks at the next call. */
    _Atomic uint32_t sent_seq, sent_tries;
    _Atomic int32_t sent_peer;
    _Atomic uint64_t sent_call[6];
    /* the bytes this rank last posted in each slot of the pair: how many
     * lines of it to prefetch for the next post there (board.c,
     * prefetch_next_slot); a hint, written where the post is made */
    _Atomic uint32_t posted_len[2];
} board_comm_t;

/* Where an arrival-driven algorithm (src/shmcoll/arrival.h) is in its
 * call: its messages use reqs[], pending[i] set when reqs[i] completes. */
typedef struct arrival_run {
    int phase;              /* the algorithm's */
    int order;              /* this rank's place in the arrival order, -1 not yet */
    int leader, pred, succ, last; /* communicator ranks, -1 unknown or none */
    int host_rank;          /* the communicator rank whose transport rank holds
                             * the call's record, and claims it */
    int rec;                /* its index there, -1 not known yet */
    int nexpect;            /* the ranks that take a ticket in it */
    bool await_claim;       /* it waits for host_rank to claim the records */
    uint64_t gen;           /* the call's generation in the record */
    int await_order;        /* the arrival whose entry it waits for, -1 none */
    bool await_ticket;      /* it waits for the record to be free */
    bool left;              /* counted itself out of the record */
    uint32_t nposted, ndone; /* messages posted and completed */
    uint32_t nreq;          /* reqs[0, nreq) hold this call's messages */
    int next;               /* the algorithm's cursor (next peer to reduce) */
    /* adaptive: the first arrival's choice for the call from the arrival
     * spread of the record's last call (decide), and that choice */
    int (*decide)(struct exec *e, uint64_t spread_us, int last_choice);
    int mode;
    /* hier_pap: this rank's node (its leader and size) and the node's ranks
     * seen so far in the arrival order */
    int node_leader, node_size, node_seen;
} arrival_run_t;

typedef struct exec {
    const sched_img_t *s;
    const board_ops_t *board; /* NULL: run the schedule */
    /* the abandon of the algorithm that handed this call over to a
     * schedule (exec_switch_to_schedule): what it holds in shared memory
     * (adaptive's arrival ticket) is still given back if the call fails */
    void (*abandon_switched)(struct exec *e);
    board_run_t br;           /* (its buffers are buf[BUF_IN] and buf[BUF_OUT]) */
    /* a board algorithm's outcome once it has one (1, or -error): later
     * progress returns it without running the algorithm again */
    int board_rc;
    arrival_run_t ar;
    /* the call's communicator's board and arrival state (NULL: a call
     * made without one); for an arrival-driven call that takes a ticket
     * (arrival.c: such calls of one record take them in call order), the
     * key + 1 of this rank's such call before it (0: none), and whether it
     * is one (ENLISTED) and has told bc that it is past its arrival
     * (PASSED) */
    board_comm_t *bc;
    uint64_t arrival_pred;
    enum { ARRIVAL_NONE, ARRIVAL_ENLISTED, ARRIVAL_PASSED } arrival_state;
    /* a schedule an algorithm that is not one builds and hands over to
     * (adaptive's balanced mode), kept with the request for its next call;
     * owned, freed by exec_release */
    sched_img_t *aux;
    const void *aux_key; /* what aux was built for */
    const struct algo_params *params; /* the algorithm's parameters for this call */
    bool read_by_all; /* the algorithm has its peers read its buffers in place
                       * (ALGO_STAGED_INPUT, ALGO_ROOT_READ_BY_ALL) */
    int aux_logged;      /* adaptive: the choice last logged + 1 (WEFT_VERBOSE) */
    const call_desc_t *desc; /* the call, as published in the call log */
    xport_t *x;
    const int *world; /* communicator rank -> transport rank */
    const int *node_of; /* communicator rank -> node index (NULL: one node), for
                         * algorithms that are not schedules (hier_pap) */
    int nnodes;
    char *buf[BUF_COUNT];
    reducer_t red;
    size_t esize;
    uint64_t tagbase;
    uint32_t sig;
    /* per-step state, sized for s->nsteps */
    uint32_t *pending;
    uint32_t *round_left; /* per round: its steps not yet complete */
    uint32_t rcap;
    uint32_t *ready;
    uint32_t rhead, rtail;
    xreq_t *reqs;
    uint32_t cap;
    uint32_t ndone;
    uint32_t recvs_left; /* receive steps not yet complete */
    char *tmp; /* scratch, s->tmp_len elements */
    size_t tmp_bytes;
    char *tmp_shared; /* this call's scratch in the shared arena (api.c,
                       * ALGO_STAGED_INPUT) instead of tmp, or NULL */
    /* The input's image in the stage (api.c, stage=sent), or NULL: a send
     * from the input copies its region there first and goes from there */
    char *in_image;
    int err;
    /* err's message (exec_fail): the thread that finds an error (another
     * thread's wait, progressing this call) may not be the one that
     * returns it, and messages are per thread */
    char *errmsg;
    int moved; /* the last exec_progress did something */
    /* watching for peers that will never come (watch.c) */
    uint64_t t_start;    /* ns, taken when the wait first idles (0: not yet) */
    uint64_t next_watch; /* ns: when the idle wait next asks who it waits for */
    uint64_t limit_ns;   /* the communicator's timeout, 0: none */
    bool expired;        /* exec_wait gave up at limit_ns */
    int idle;            /* polls in a row that moved nothing, kept across the
                          * calls of a polled wait (weft_test, *_timeout) */
    const int *sent_to;  /* a schedule that receives nothing: two peers to compare
                          * with at its end (-1: none), or NULL */
    /* the transport's list of unfinished schedules (any of them progresses all) */
    struct exec *anext, *aprev;
    bool listed;
    bool pinned; /* its record is among the pinned ones of the call log */
    char *orphan; /* a failed call's messages' bytes instead of the caller's buffers */
} exec_t;

/* An arrival-driven call that is to take a ticket has taken it, or will
 * not (it failed, or ended): its communicator's next such call of the
 * same record may take one (arrival.c). */
static inline void exec_arrival_pass(exec_t *e)
{
    if (e->arrival_state == ARRIVAL_ENLISTED) {
        e->arrival_state = ARRIVAL_PASSED;
        atomic_store_explicit(&e->bc->arrival_passed[e->desc->key & 1], e->desc->key + 1,
                              memory_order_release);
    }
}

/* Sizes the per-step arrays and scratch for s (reusing earlier memory). */
int exec_prepare(exec_t *e, const sched_img_t *s, size_t esize);
/* The same for n steps (or n messages of an algorithm that is not a
 * schedule), and bytes of scratch in e->tmp. */
int exec_reserve(exec_t *e, uint32_t n);
int exec_reserve_tmp(exec_t *e, size_t bytes);
/* An algorithm that is not a schedule hands the rest of its call over to
 * schedule s (committed, for this call's rank and arguments): from the
 * next exec_progress on, e runs s.  No message of its own may be in flight. */
int exec_switch_to_schedule(exec_t *e, const sched_img_t *s);
void exec_release(exec_t *e);
/* Received messages of at least this many bytes are written with
 * streaming stores (WEFT_STREAM_MIN, 0: the default; engine.c says why). */
void exec_set_stream_min(uint64_t bytes);
/* Starts the schedule; in/out are the caller's buffers.  Publishes e->desc
 * in the call log; a split-phase call (list) is also put on the transport's
 * list, so that any wait progresses it (a blocking call's own wait does). */
int exec_start(exec_t *e, const void *in, void *out, bool list);
/* One pass of progress for a test (weft_test): this call's, then, where it
 * is not done, every other call in flight's, as a wait makes (MPI's
 * progress rule), and this call's again.  As exec_progress; the
 * transport's lock held. */
int exec_test(exec_t *e);
/* After a call failed: its sends and receives still with the transport
 * (messages that arrive late, a send part way through the cells) read
 * and write zeroed memory of the call's own from here on, not the
 * caller's buffers, which the caller may free once the call returned;
 * the transport withdraws its sends still being read (xport.h, disown).
 * Their completions step nothing on: the call's schedule may be freed
 * (its communicator, or the cache) before the transport is closed. */
void exec_disown_buffers(exec_t *e);

/* e fails with code (a WEFT_* error) unless it failed already; the
 * calling thread's message is kept as the error's (errmsg). */
void exec_fail(exec_t *e, int code);
/* code, with e's message said again in this thread where it is e's error
 * (the thread that returns a call's error may not be the one that found
 * it). */
int exec_error_here(const exec_t *e, int code);

/* Ends e with rc: unlists it, records an abandoned call in the call log,
 * and for a send-only schedule that succeeded checks that the peers it
 * sent to called the same thing.  Returns rc or the mismatch.  Takes the
 * lock only for a listed schedule. */
int exec_finish(exec_t *e, int rc);
/* 1 when finished, 0 when not yet, a negative weft error on failure.
 * Caller holds e->x->lock. */
int exec_progress(exec_t *e);
/* A function a wait calls now and then while it idles, without the
 * transport's lock (engine.c says how often): the MPI transport installs
 * one that drives the MPI library's own progress, which MPI's progress rule
 * asks of a rank inside a collective (mpi.c).  NULL: none. */
void exec_set_external_progress(void (*fn)(void));
/* Blocks until finished or failed (takes the lock itself), progressing
 * every schedule over the transport.  timeout_ms < 0: no limit; otherwise
 * returns WEFT_ETIMEDOUT when it runs out.  Past e->limit_ns after it first
 * had to wait it returns WEFT_ETIMEDOUT with e->expired set and a message naming
 * the ranks it waits for. */
int exec_wait(exec_t *e, int timeout_ms);

/* Calls fn on every unfinished split-phase schedule of the process. */
void exec_for_each_active(void (*fn)(exec_t *e, void *arg), void *arg);

/* watch.c: diagnosis of a schedule that does not move.  Each returns
 * WEFT_OK when nothing is proven wrong, else the error with its message
 * (and, for a mismatch, ends the job so that no peer hangs). */
int watch_stalled(exec_t *e); /* caller holds e->x->lock */
int watch_sent(exec_t *e);    /* caller does not */
/* Compares this rank's call with the record peer (a communicator rank)
 * keeps of it; WEFT_EMISMATCH (the job ended) when they differ.  locked:
 * the caller holds e->x->lock. */
int watch_peer_agrees(exec_t *e, int peer, bool locked);
/* The same for a peer known to have made this call differently (its board
 * slot holds it): also WEFT_EPEER when its record is gone but the peer
 * left after a fault. */
int watch_peer_made_it_differently(exec_t *e, int peer, bool locked);
/* the message for an expired wait: which ranks, and where each is */
void watch_expired(exec_t *e, char *msg, size_t n);

#endif
