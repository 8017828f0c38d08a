/* comm.h — communicators, requests and the per-communicator schedule cache.
 * Internal to libweft. */
#ifndef WEFT_COMM_H
#define WEFT_COMM_H

#include "../algo/algo.h"
#include "../exec/engine.h"
#include "../sched/layout.h"
#include "core.h"

#define SCHED_CACHE_SIZE 32

typedef struct sched_entry {
    bool used;
    /* key */
    weft_coll_t coll;
    const algo_t *al;
    uint64_t count;
    size_t esize;
    int root;
    bool commutative, idempotent, invertible;
    algo_params_t params;
    /* value */
    sched_img_t *s;
    uint32_t params_hash;
    uint32_t sig;   /* the call signature's part this schedule fixes */
    int sent_to[2]; /* a schedule that receives nothing: its first and last
                     * send's peer (checked at its end, watch.c); else -1 */
    uint64_t last_use;
    int refs;                     /* requests running it */
    struct weft_request *spare;   /* finished requests kept for reuse */
} sched_entry_t;

typedef struct algo_choice {
    const algo_t *al; /* NULL: AUTO */
    algo_params_t params;
} algo_choice_t;

typedef struct auto_memo {
    uint64_t count;
    size_t esize;
    int root;
    unsigned opclass; /* commutative | idempotent << 1 | invertible << 2 */
    const algo_t *al; /* NULL: none yet */
    algo_params_t params;
    char text[64]; /* the choice as its row writes it: NAME[/k=v;..] */
} auto_memo_t;

/* The last call of a collective on a communicator, as coll_run resolved it:
 * a call that repeats it (same count, datatype, builtin op, root, in-place)
 * skips the op lookup, the layout, AUTO's choice or the usability check,
 * and the schedule cache's search.  Cleared when the communicator's choice
 * for the collective changes and when the cache evicts an entry. */
typedef struct call_memo {
    bool keep; /* later calls may use it (false: it holds a user op's call) */
    const algo_t *al;
    sched_entry_t *ent;
    uint64_t count;
    weft_dtype_t dt;
    weft_op_t op;
    int root;
    bool inplace;
    uint64_t op_ident;
    reducer_t red;
    coll_layout_t lay;
    const char *last_choice;
} call_memo_t;

struct weft_comm {
    int rank, size;
    int *world; /* rank -> transport rank */
    uint32_t ctx, seq;
    uint32_t first_call; /* seq of its first call */
    /* this rank's calls on it that have ended (comm_calls_ended): all
     * below ended_below (24-bit numbers, as in the tags), and of the 64
     * from there those whose bit is set in ended_after */
    uint32_t ended_below;
    uint64_t ended_after;
    bool shared_ctx; /* ctx from agree_ctx on the job's transport (comm.c) */
    bool board_slots; /* its pair of board slots is its own (comm.c) */
    xport_t *x;
    algo_choice_t choice[WEFT_COLL_COUNT];
    const char *last[WEFT_COLL_COUNT]; /* the algorithm of the last call */
    /* the same with AUTO's parameters: the name, or the memo's text (the
     * memo is per collective, so it is the last call's until the next) */
    const char *last_choice[WEFT_COLL_COUNT];
    auto_memo_t auto_memo[WEFT_COLL_COUNT]; /* AUTO's last decision per collective */
    call_memo_t memo[WEFT_COLL_COUNT];
    sched_entry_t cache[SCHED_CACHE_SIZE];
    uint64_t clock;
    int *node_of; /* node of each rank (canonical numbering), NULL: one node */
    int nnodes;
    int node_max; /* ranks in its largest node (set with node_of) */
    int active; /* unfinished requests */
    board_comm_t board; /* its board calls so far (board.c) */
    uint64_t timeout_ns; /* a blocking call gives up after this long, 0: never */
    char revoked[400];   /* why the communicator was revoked, "" if it is not */
    uint32_t call_flags; /* CALL_* flags of the next call (weft_finalize's barrier) */
    struct weft_request *dead; /* failed requests, freed with the communicator */
    /* a bcast root's stage in the arena (api.c, stage_root), while no
     * call holds it: NULL then, or never allocated */
    void *stage;
    size_t stage_bytes;
    struct weft_comm *lnext, *lprev; /* weft_g.live */
    struct {                   /* the unfinished GASPI-style call, if any */
        weft_request_t req;
        weft_coll_t coll;
        const void *in;
        void *out;
        size_t count;
        weft_dtype_t dtype;
        weft_op_t op;
        int root;
    } pending;
};

struct weft_request {
    weft_comm_t comm;
    sched_entry_t *ent;
    exec_t e;
    call_desc_t desc; /* published in the call log */
    bool counted;     /* in weft_g.unfinished */
    void *stage; /* private copy of an in-place input */
    size_t stage_bytes;
    void *shared_stage; /* the communicator's stage, while this call holds it */
    size_t shared_stage_bytes;
    int64_t arrive_ns; /* WEFT_PROFILE: when the call was made (profile.c) */
    struct weft_request *next;
};

/* Process-wide state: the transport and the world communicator. */
typedef struct weft_state {
    int initialized; /* the library: configuration read */
    xport_t *x;       /* the job's transport (weft_init), or NULL */
    weft_comm_t world;
    algo_choice_t choice[WEFT_COLL_COUNT]; /* from the environment */
    int node_size; /* WEFT_NODE_SIZE: virtual nodes of k ranks, 0: real nodes */
    uint64_t timeout_ns; /* WEFT_TIMEOUT_MS: every new communicator's timeout */
    int unfinished; /* requests started and not finished, on communicators not revoked */
    int finalized;  /* weft_finalize has run: weft_init may not run again */
    /* failed requests of freed communicators over the job's transport: it
     * may still hold their messages (posted receives into their scratch,
     * sends in flight), so they are freed only once it is closed */
    struct weft_request *graveyard;
    /* every communicator not freed yet: weft_finalize frees those of the
     * job's transport that the program left (as MPI_Finalize does), so
     * that nothing of them outlives weft */
    struct weft_comm *live;
    int fork_child; /* this process is a child of fork() (fork_refused) */
    pthread_mutex_t lock;
} weft_state_t;
extern weft_state_t weft_g;

int comm_check(weft_comm_t comm, const char *fn);
/* Nonzero (the error, set) in a child of fork(), where fn may not run. */
int fork_refused(const char *fn);

/* WEFT_PROFILE (profile.c): set up at weft_init (a barrier of the world
 * fixes the clock's origin), each finished call noted, the file written at
 * weft_finalize. */
int profile_init(weft_comm_t world);
bool profile_on(void);
int64_t profile_now(void);
void profile_note(weft_request_t r, int64_t arrive_ns);
int profile_write(weft_comm_t world);
/* Reads the configuration once; weft_init and weft_comm_from_mpi call it. */
int lib_init(void);
int comm_create(xport_t *x, int rank, int size, const int *world, uint32_t ctx,
                const algo_choice_t *choice, weft_comm_t *out);
void comm_destroy(weft_comm_t comm);
/* An allreduce among the members of a communicator being made, before it
 * exists: on its parent (weft_comm_dup, _split) or on the MPI communicator
 * it twins (weft_comm_from_mpi).  Returns a weft_err_t. */
typedef struct member_allreduce {
    int (*fn)(void *arg, void *buf, int n, weft_dtype_t dt, weft_op_t op);
    /* optional: the board pairs this rank cannot give a new communicator
     * for a post of its own still unread there (comm.c) */
    uint64_t (*unread_pairs)(void *arg);
    void *arg;
    /* the transport the communicator is made on (its comm_freed mark of
     * the id agreed on is cleared before any member can start a call
     * there), or NULL */
    xport_t *x;
} member_allreduce_t;
/* The members agree on a context id for a new communicator.  refusal:
 * 0, or 1 + this rank where it refuses the call (a bad argument of its
 * own), which every member learns from the first allreduce: then
 * *refused_by is 1 + a refusing rank and the result WEFT_EPEER. */
int comm_agree_ctx(const member_allreduce_t *ar, uint32_t refusal, uint32_t *refused_by,
                   uint32_t *ctx, uint32_t *first_call, bool *board);
/* The error a member reports where rank refused_by - 1 refused a call
 * making a communicator (fn, and why it did): WEFT_EPEER. */
int comm_peer_refused(const char *fn, uint32_t refused_by, const char *what);
/* Gives back what comm_agree_ctx gave this rank, unused. */
void comm_ctx_give_back(uint32_t ctx, uint32_t first_call, bool board);
int comm_create_on(xport_t *x, int rank, int size, const int *world, uint32_t ctx,
                   uint32_t first_call, bool board, const algo_choice_t *choice,
                   weft_comm_t *out);
/* Records the node of every rank (any ids; renumbered by first appearance). */
int comm_set_nodes(weft_comm_t comm, const int *ids);
void request_list_free(weft_request_t r);

/* Starts a collective; with req == NULL, runs it to completion. */
int coll_run(weft_comm_t comm, weft_coll_t coll, const void *in, void *out, size_t count,
             weft_dtype_t dt, weft_op_t op, int root, bool inplace, weft_request_t *req);
/* One of weft's own blocking calls (making a communicator from comm): on
 * AUTO's choice, whatever weft_set_algorithm chose for the collective. */
int coll_run_own(weft_comm_t comm, weft_coll_t coll, const void *in, void *out, size_t count,
                 weft_dtype_t dt, weft_op_t op, bool inplace);
/* Ends r with rc (may turn OK into a mismatch found at the end); returns
 * the call's result. */
int request_finish(weft_request_t r, int rc);
/* Marks comm revoked (why) and abandons its unfinished calls. */
void comm_revoke(weft_comm_t comm, const char *why);
/* Tells comm's transport which of this rank's calls on it ended well
 * (xport_ops calls_ended): those below ended_below; none once one failed
 * or comm was revoked. */
void comm_calls_ended(weft_comm_t comm);

/* config.c: WEFT_<COLL>_ALGO / WEFT_<COLL>_PARAMS */
int config_choices_from_env(algo_choice_t *choice);
int config_choice(weft_coll_t coll, const char *name, const char *params, algo_choice_t *out);
/* WEFT_NODE_SIZE (0 if unset: real nodes) and WEFT_TIMEOUT_MS (0: none). */
int config_numbers_from_env(int *node_size, uint64_t *timeout_ns);

/* tune/select.c: AUTO */
/* AUTO (src/tune/select.c): the algorithm for a call, with the parameters
 * its table row gives put in a->params; NULL only if no algorithm serves
 * it.  A call shaped like the communicator's previous one of the same
 * collective reuses that decision without a table lookup.  own: one of
 * weft's own calls, which WEFT_VERBOSE does not log. */
const algo_t *select_algo(weft_comm_t comm, coll_args_t *a, bool own);
/* The last call's algorithm as AUTO's row wrote it (with its parameters,
 * "rabenseifner/segment=512K"), or its name when the program chose it. */
WEFT_TOOL_API const char *comm_last_choice(weft_comm_t comm, weft_coll_t coll);
/* The ranks of this rank's machine in comm's transport and the cores they
 * may run on (src/xport/cpus.h); *cores 0 where that is not known (MPI
 * point to point).  Waits spin only while ranks do not outnumber cores. */
WEFT_TOOL_API void comm_node_cores(weft_comm_t comm, int *ranks, int *cores);

#endif
