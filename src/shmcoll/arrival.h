/* arrival.h — what the arrival-driven collectives share (arrival.c): the
 * arrival record that tells each rank of a call where it arrived, and the
 * messages such an algorithm posts itself, since who talks to whom is only
 * known once ranks have arrived.
 *
 * The records (segment.h's arrival_rec_t) live on the transport rank of
 * the communicator's rank 0, which claims a pair of them for the
 * communicator at its first arrival-driven call (the others wait for that
 * claim once) and gives them back when the communicator is freed.  An
 * algorithm may instead take its tickets in a group of the communicator's
 * ranks (arrival_use_group: hier_pap, one record per node, on the node
 * leader, so that a node needs only its own shared memory).  A call
 * takes the pair's record of its parity from its first arrival until
 * every rank has counted itself out; the communicator's call after next
 * waits for it until then, like any other wait.  Records are never shared
 * between communicators: a call on one never waits for a call on another,
 * whose ranks may be busy elsewhere.  Every word carries the call's
 * generation, so no flag is ever reset and no stale entry is read as new. */
#ifndef WEFT_ARRIVAL_H
#define WEFT_ARRIVAL_H

#include "../algo/algo.h"
#include "../exec/engine.h"
#include "../xport/segment.h"

/* Step tags of the algorithms' messages (the call's tag space). */
enum { ARRIVAL_TAG_DATA = 1, ARRIVAL_TAG_RESULT = 2, ARRIVAL_TAG_FINAL = 3 };

/* Resets e->ar for this call and sizes nreq messages and tmp_bytes of
 * scratch; false (e->err set) when memory runs out.  The two halves, for
 * an algorithm that hands over to another after its ticket (adaptive). */
bool arrival_begin(exec_t *e, uint32_t nreq, size_t tmp_bytes);
void arrival_reset(exec_t *e);
/* After arrival_begin: this call's tickets are taken by n ranks only, in
 * the record of communicator rank host_rank (one of them, which claims
 * it), on the same machine as all of them. */
void arrival_use_group(exec_t *e, int host_rank, int n);
bool arrival_reserve(exec_t *e, uint32_t nreq, size_t tmp_bytes);
/* Takes this rank's ticket: true with e->ar.order set, false while the
 * record is held by another call (try again). */
bool arrival_take(exec_t *e);
/* At a call's start, when it is to take a ticket (arrival_take): its
 * place among its communicator's calls that do, on this rank. */
void arrival_enlist(exec_t *e);
/* The communicator rank that arrived i-th, or -1 if it has not yet. */
int arrival_who(exec_t *e, int i);
/* Takes this rank's ticket (unless it has one) and learns the call's first
 * arrival into e->ar.leader, then counts itself out of the record: true
 * once it is known, false while waiting (or with e->err set); *moved set
 * when anything changed.  The leader algorithms' start (pap_leader, and
 * hier_pap's node=leader). */
bool arrival_first(exec_t *e, int *moved);
/* Counts this rank out of the record: it reads nothing more of it. */
void arrival_leave(exec_t *e);
/* board_ops.abandon: the call failed here; the record is closed (marked
 * complete) so that other calls may take it. */
void arrival_abandon(exec_t *e);

/* Message i of the call (peer: a communicator rank).  A receive with
 * reduce combines the incoming bytes into dst (commutative ops only). */
int arrival_send(exec_t *e, uint32_t i, int peer, uint32_t tag, const void *buf, size_t bytes);
int arrival_recv(exec_t *e, uint32_t i, int peer, uint32_t tag, void *dst, size_t bytes,
                 bool reduce);
static inline bool arrival_done(const exec_t *e, uint32_t i) { return e->pending[i] == 2; }

/* One pass of the transport (*moved set if anything moved); a negative
 * weft error when the job died or a message failed. */
int arrival_poll(exec_t *e, int *moved);
/* The end of a progress call that did not finish: idle bookkeeping, the
 * job's health when nothing moved.  0 or a negative weft error. */
int arrival_idle(exec_t *e, int moved);
/* A chain's step (pap_chain, hier_pap): this rank's input into acc (unless
 * acc is the input), and message 0 from its predecessor e->ar.pred reduced
 * into it. */
int arrival_chain_recv(exec_t *e, char *acc);
/* One pass of the transport, then: is message i (ARRIVAL_ALL: every one
 * this rank posted) done?  When not, *ret is what the progress call
 * returns now (arrival_idle's, or the transport's error). */
#define ARRIVAL_ALL (-1)
bool arrival_await(exec_t *e, int i, int *moved, int *ret);
/* One rank: the call is done at its start (the input copied to the output
 * where they differ); true then.  (Empty calls of more ranks on one
 * machine never get here: api.c gives them the board's empty path.) */
bool arrival_trivial(exec_t *e);

/* board_ops members shared by the algorithms. */
bool arrival_ready(void *arg);
int arrival_waiting_for(const exec_t *e, int *ranks, int max);

/* The communicator (context ctx) is freed: the records it claimed on
 * transport rank host may go to another once its last call is complete.
 * Called by every rank of it for its own transport rank (the claims are
 * rank 0's and the node leaders').  True if this rank held a pair for it:
 * the context id then stays retired (comm.c). */
bool arrival_comm_freed(xport_t *x, int host, uint32_t ctx);

/* Hand-over points for adaptive: the call continues as pap_leader or
 * pap_chain from just after this rank took its ticket. */
void pap_leader_arrived(exec_t *e);
void pap_chain_arrived(exec_t *e);

/* usable() of the arrival-driven algorithms: shared memory, the record's
 * rank limit (hier_pap_usable, algo.h: the same per node). */
int arrival_usable(const coll_args_t *a, char *why, size_t len);

static inline size_t arrival_bytes(const exec_t *e) { return e->desc->count * e->esize; }

/* The call's arguments as a schedule builder takes them, for an algorithm
 * that hands over to a schedule (adaptive, hier_pap): commutative ops only,
 * as theirs are, and the communicator's node map. */
void arrival_coll_args(const exec_t *e, coll_args_t *a);

#endif
