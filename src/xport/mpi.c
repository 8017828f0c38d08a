/* mpi.c — the MPI transport: schedule steps become MPI_Isend / MPI_Irecv on
 * a communicator duplicated for weft, progressed with MPI_Testsome.
 *
 * Each weft communicator over MPI has its own MPI communicator, so the MPI
 * tag only has to tell apart the calls in flight on it and the steps of one
 * call: it is (call sequence mod 2^seqbits) << stepbits | step field, with
 * the widths taken from MPI_TAG_UB (at least 2^15 - 1 by the standard).
 * The step field is the step tag shifted by a hash of the call's signature
 * and of its round of tags (its number past seqbits), mod the field's
 * range less the two side-band tags: one call's steps stay apart, while a
 * message of a call made differently on its sender (another op, root,
 * fan-out or algorithm), or one left over from the call 2^seqbits calls
 * before, almost never matches — it
 * stalls the receive, and the stalled wait's announcement (watch.c) names
 * the difference, where shared memory compares the signature in the cell.  A
 * receive-and-reduce lands in a pooled staging buffer and is reduced into
 * place when it completes.  A message of the wrong size is reported as
 * WEFT_EMISMATCH (our communicator returns MPI errors instead of aborting). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "../exec/engine.h"
#include "xport.h"
#include "xport_mpi.h"

typedef struct stage {
    void *buf;
    size_t cap;
    struct stage *next;
} stage_t;

typedef struct mpi_xport {
    xport_t base;
    MPI_Comm comm;
    int stepbits, seqbits;
    MPI_Request *mreq;
    xreq_t **owner;
    int *idx;
    MPI_Status *st;
    xreq_t **fin; /* requests finished by one progress call */
    int n, cap;
    stage_t *free_stages;
    int err;
    /* the call exchange: there is no memory to read peers' calls from, so a
     * stalled wait announces its call to the peers it waits for, in a
     * message with a tag no schedule uses (see watch.c) */
    int announce_tag, abort_tag;
    call_desc_t *heard;  /* per peer: the last call it announced (key 0: none) */
    call_desc_t *told;   /* per peer: what this rank last announced to it */
    call_desc_t *replied; /* per peer: this rank's record sent back to it */
    /* per peer: the last of its records that says it refused or gave up a
     * call, kept apart from heard, which the peer's next announcement
     * (of a later call: it went on) overwrites; key 0: none */
    call_desc_t *gave_up;
    call_desc_t mine[16]; /* this rank's recent calls, slot by key */
    char abort_out[256];  /* the notice fail_job sends */
    char abort_in[256];   /* the first notice received ("": none) */
    struct mpi_xport *next_open; /* open_list */
    /* the lock its users hold: its own, or the two-level transport's that
     * took it over (xport_mpi_set_lock) */
    pthread_mutex_t *lock;
    bool rescan; /* answer the announcements heard again (call_note) */
    /* Per round of tags (a call number modulo 2^seqbits): the number + 1
     * of the last call of it that this rank refused for its own reason or
     * abandoned, whose peers' messages may be left in MPI (0: none;
     * allocated at the first); and, once a later call of that round came,
     * why the communicator is unusable here (call_may_start) */
    uint32_t *spoilt;
    char unusable[400];
    /* It refused or gave up a call (peers may wait for its answer): freed,
     * it lingers in open_list, answering, until MPI_Finalize (at_finalize).
     * Lingering: the program freed it (mpi_close). */
    bool owes, lingering;
    uint32_t next_call; /* the number after this rank's last call here */
} mpi_xport_t;

/* Every MPI transport open in this process, so that a stalled wait can
 * answer announcements on communicators where it has no call in flight
 * (drain_others).  Lock order: a transport's lock, open_lock, another
 * transport's lock (only tried), job_lock. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static mpi_xport_t *open_list;
static uint64_t drained_all_ns; /* when drain_others last ran */
static bool hooked;     /* at_finalize will run in MPI_Finalize */
static bool job_made;   /* job_x carries a communicator every rank made */
static bool finalizing; /* it runs: answers say this rank is finalizing */

/* The job's transport: the first one open over a duplicate of
 * MPI_COMM_WORLD (weft_comm_from_mpi's twin of it, the drop-in's), which
 * every rank of the job has.  mpi_fail_job tells its ranks too. */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static mpi_xport_t *job_x;
static char job_abort_out[256]; /* the notice sent there ("": none yet) */
static char job_abort_in[256];  /* the first notice received there */

/* Takes one abort notice that has come on comm into msg (256 bytes); false
 * if none has.  A matched probe: the job's transport is read both by its
 * own waits and by any other's (job_aborted), and a probe that a second
 * reader beat to the message would leave the first in MPI_Recv for ever. */
static bool take_abort(MPI_Comm comm, int tag, char *msg)
{
    int flag = 0;
    MPI_Message m;
    if (MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &flag, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        !flag)
        return false;
    if (MPI_Mrecv(msg, 256, MPI_CHAR, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return false;
    msg[255] = '\0';
    return true;
}

/* Keeps notice, received on transport x, as the job's when x is job_x. */
static void job_notice(const mpi_xport_t *x, const char *notice)
{
    pthread_mutex_lock(&job_lock);
    if (x == job_x && !job_abort_in[0])
        snprintf(job_abort_in, sizeof job_abort_in, "%s", notice);
    pthread_mutex_unlock(&job_lock);
}

/* Whether an abort notice has come on the job's transport, taking in those
 * that wait there: a rank that waits on another communicator (a dup of the
 * world) for ranks that left after a disagreement elsewhere learns it so.
 * The message is said (weft_error) when one has. */
static bool job_aborted(void)
{
    pthread_mutex_lock(&job_lock);
    mpi_xport_t *j = job_x;
    char msg[256];
    while (j && take_abort(j->comm, j->abort_tag, msg))
        if (!job_abort_in[0])
            snprintf(job_abort_in, sizeof job_abort_in, "%s", msg);
    bool aborted = job_abort_in[0] != '\0';
    if (aborted)
        weft_error(WEFT_EPEER, "%s", job_abort_in);
    pthread_mutex_unlock(&job_lock);
    return aborted;
}

static int mpi_fail(mpi_xport_t *x, int mrc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mrc, s, &len);
    int code = mrc == MPI_ERR_TRUNCATE ? WEFT_EMISMATCH : WEFT_EPEER;
    x->err = code;
    return weft_error(code, "MPI %s failed: %s%s", what, s,
                      code == WEFT_EMISMATCH ? " (do all ranks pass the same count?)" : "");
}

static int map_tag(mpi_xport_t *x, uint64_t tag, uint32_t sig, int *out)
{
    uint64_t step = tag & 0xffffff, seq = (tag >> 24) & 0xffffff;
    uint64_t range = x->base.tag_limit; /* the side-band tags lie above */
    if (step >= range)
        return weft_error(WEFT_ENOTSUP, "schedule tag %llu exceeds the %d bits this MPI's "
                                        "MPI_TAG_UB leaves for it", (unsigned long long)step,
                          x->stepbits);
    /* the call's round of tags (its number past the tag's bits) is hashed
     * in with the signature: a message left unread in MPI by a call made
     * otherwise (no receive took it, and no rank waited for it: docs/MPI.md)
     * then almost never matches the call 2^seqbits calls later that has
     * the same tag bits, where it would be taken as that call's own */
    uint64_t round = seq >> x->seqbits;
    uint64_t shift = (((uint64_t)sig | round << 32) * 0x9e3779b97f4a7c15ull >> 32) % range;
    *out = (int)((seq & ((1u << x->seqbits) - 1)) << x->stepbits | (step + shift) % range);
    return WEFT_OK;
}

static int track(mpi_xport_t *x, MPI_Request m, xreq_t *r)
{
    if (x->n == x->cap) {
        int nc = x->cap ? x->cap * 2 : 64;
        MPI_Request *a = realloc(x->mreq, (size_t)nc * sizeof *a);
        if (a)
            x->mreq = a;
        xreq_t **b = a ? realloc(x->owner, (size_t)nc * sizeof *b) : NULL;
        if (b)
            x->owner = b;
        int *c = b ? realloc(x->idx, (size_t)nc * sizeof *c) : NULL;
        if (c)
            x->idx = c;
        MPI_Status *d = c ? realloc(x->st, (size_t)nc * sizeof *d) : NULL;
        if (d)
            x->st = d;
        xreq_t **e = d ? realloc(x->fin, (size_t)nc * sizeof *e) : NULL;
        if (e)
            x->fin = e;
        if (!e)
            return weft_error(WEFT_ENOMEM, "out of memory for MPI requests");
        x->cap = nc;
    }
    x->mreq[x->n] = m;
    x->owner[x->n] = r;
    x->n++;
    return WEFT_OK;
}

/* A message's MPI count is an int: up to 1 GiB it goes as that many
 * MPI_BYTE, past it as one element of a struct of 1 MiB blocks and the
 * bytes left over (1.2 GB of gradients in one MPI_Allreduce is an
 * ordinary call).  The type is freed once the operation is posted, which
 * MPI allows. */
#define MPI_BYTES_MAX ((size_t)1 << 30)
#define BIG_BLOCK ((size_t)1 << 20)

typedef struct msg_shape {
    int count;
    MPI_Datatype type;
} msg_shape_t;

static int shape_of(mpi_xport_t *x, size_t bytes, msg_shape_t *m)
{
    if (bytes <= MPI_BYTES_MAX) {
        m->count = (int)bytes, m->type = MPI_BYTE;
        return WEFT_OK;
    }
    size_t nblk = bytes / BIG_BLOCK, rest = bytes % BIG_BLOCK;
    if (nblk > INT32_MAX)
        return weft_error(WEFT_ENOTSUP, "a single message of %zu bytes is beyond what this "
                                        "transport describes to MPI (2 PiB)", bytes);
    MPI_Datatype blk;
    int lens[2] = {(int)nblk, (int)rest};
    MPI_Aint disp[2] = {0, (MPI_Aint)(nblk * BIG_BLOCK)};
    int mrc = MPI_Type_contiguous((int)BIG_BLOCK, MPI_BYTE, &blk);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Type_contiguous");
    MPI_Datatype types[2] = {blk, MPI_BYTE};
    mrc = MPI_Type_create_struct(rest ? 2 : 1, lens, disp, types, &m->type);
    MPI_Type_free(&blk);
    if (mrc == MPI_SUCCESS && (mrc = MPI_Type_commit(&m->type)) != MPI_SUCCESS)
        MPI_Type_free(&m->type);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Type_create_struct");
    m->count = 1;
    return WEFT_OK;
}

static void shape_done(msg_shape_t *m)
{
    if (m->type != MPI_BYTE)
        MPI_Type_free(&m->type);
}

static int mpi_isend(xport_t *xp, xreq_t *r)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    int tag = 0;
    msg_shape_t sh;
    int rc = map_tag(x, r->tag, r->sig, &tag);
    if (rc || (rc = shape_of(x, r->bytes, &sh)))
        return rc;
    MPI_Request m;
    static const char dummy;
    int mrc = MPI_Isend(r->bytes ? r->sbuf : &dummy, sh.count, sh.type, r->peer, tag, x->comm,
                        &m);
    shape_done(&sh);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Isend");
    r->priv = NULL;
    r->done = 0; /* a send (done marks receives: their size is checked) */
    return track(x, m, r);
}

static stage_t *stage_get(mpi_xport_t *x, size_t bytes)
{
    for (stage_t **pp = &x->free_stages; *pp; pp = &(*pp)->next)
        if ((*pp)->cap >= bytes) {
            stage_t *s = *pp;
            *pp = s->next;
            return s;
        }
    stage_t *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->cap = bytes ? bytes : 1;
    s->buf = malloc(s->cap);
    if (!s->buf) {
        free(s);
        return NULL;
    }
    return s;
}

static void stage_put(mpi_xport_t *x, stage_t *s)
{
    s->next = x->free_stages;
    x->free_stages = s;
}

static int mpi_irecv(xport_t *xp, xreq_t *r)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    int tag = 0;
    msg_shape_t sh;
    int rc = map_tag(x, r->tag, r->sig, &tag);
    if (rc || (rc = shape_of(x, r->bytes, &sh)))
        return rc;
    void *dst = r->sink.dst;
    stage_t *s = NULL;
    r->done = 1;
    if (r->sink.red && r->bytes) {
        if (!(s = stage_get(x, r->bytes))) {
            shape_done(&sh);
            return weft_error(WEFT_ENOMEM, "out of memory for a %zu-byte staging buffer",
                              r->bytes);
        }
        dst = s->buf;
    }
    r->priv = s;
    static char dummy;
    MPI_Request m;
    int mrc = MPI_Irecv(r->bytes ? dst : &dummy, sh.count, sh.type, r->peer, tag, x->comm, &m);
    shape_done(&sh);
    if (mrc != MPI_SUCCESS) {
        if (s)
            stage_put(x, s), r->priv = NULL;
        return mpi_fail(x, mrc, "Irecv");
    }
    return track(x, m, r);
}

static int mpi_health(xport_t *xp);

static int mpi_progress(xport_t *xp)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if (x->err) /* with its message: the failed call keeps this thread's last */
        return -mpi_health(xp);
    if (!x->n)
        return 0;
    int outcount = 0;
    int mrc = MPI_Testsome(x->n, x->mreq, &outcount, x->idx, x->st);
    if (mrc != MPI_SUCCESS && mrc != MPI_ERR_IN_STATUS)
        return -mpi_fail(x, mrc, "Testsome");
    if (outcount == MPI_UNDEFINED || outcount == 0)
        return 0;
    int err = 0;
    for (int k = 0; k < outcount; k++) {
        int i = x->idx[k];
        xreq_t *r = x->owner[i];
        x->fin[k] = r;
        x->owner[i] = NULL;
        if (mrc == MPI_ERR_IN_STATUS && x->st[k].MPI_ERROR != MPI_SUCCESS) {
            err = mpi_fail(x, x->st[k].MPI_ERROR, "message");
            continue;
        }
        MPI_Count got = 0; /* bytes: a count of MPI_BYTE would overflow past 2 GiB */
        if (r->done && MPI_Get_elements_x(&x->st[k], MPI_BYTE, &got) == MPI_SUCCESS &&
            (size_t)got != r->bytes) {
            /* a shorter message fits without an MPI error: a rank sent
             * something else (other count, algorithm or collective) */
            x->err = WEFT_EMISMATCH;
            err = weft_error(WEFT_EMISMATCH, "rank %d sent %lld bytes where rank %d expects %zu: "
                             "do all ranks pass the same count, datatype and algorithm?",
                             r->peer, (long long)got, x->base.rank, r->bytes);
            continue;
        }
        stage_t *s = r->priv;
        if (s) { /* receive-and-reduce: reduce from the staging buffer */
            xsink_deliver(&r->sink, 0, s->buf, r->bytes);
            stage_put(x, s);
            r->priv = NULL;
        }
    }
    int w = 0;
    for (int i = 0; i < x->n; i++)
        if (x->owner[i]) {
            x->mreq[w] = x->mreq[i];
            x->owner[w] = x->owner[i];
            w++;
        }
    x->n = w;
    /* callbacks last: they may only enqueue work, never post */
    for (int k = 0; k < outcount; k++)
        x->fin[k]->cb(x->fin[k], err);
    return err ? -err : 1;
}

static void mpi_block(xport_t *xp, int timeout_ms)
{
    /* MPI offers no way to sleep until a message arrives without blocking
     * in one request: give the core away briefly and poll again */
    xport_nap(xp);
    (void)timeout_ms;
}

static int mpi_health(xport_t *xp)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if (x->err && x->abort_in[0]) /* another rank's notice (fail_job) */
        return weft_error(x->err, "%s", x->abort_in);
    return x->err ? weft_error(x->err, "an earlier MPI error left this communicator unusable")
                  : WEFT_OK;
}

static void unlist_open(mpi_xport_t *x)
{
    for (mpi_xport_t **p = &open_list; *p; p = &(*p)->next_open)
        if (*p == x) {
            *p = x->next_open;
            break;
        }
}

static void mpi_release(mpi_xport_t *x);

int xport_mpi_lingering(void)
{
    int n = 0;
    pthread_mutex_lock(&open_lock);
    for (mpi_xport_t *y = open_list; y; y = y->next_open)
        n += __atomic_load_n(&y->lingering, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&open_lock);
    return n;
}

/* Frees the staging buffers of receive-and-reduce steps. */
static void drop_stages(mpi_xport_t *x)
{
    while (x->free_stages) {
        stage_t *st = x->free_stages;
        x->free_stages = st->next;
        free(st->buf);
        free(st);
    }
}

/* How many freed communicators, with no refusal or failure to answer for,
 * linger in open_list (the latest freed): a rank that skipped a call,
 * freed the communicator and then waits elsewhere tells its peers in that
 * call so (CALL_WAS_FREED) when its own wait stalls, and they fail with
 * WEFT_EMISMATCH where they waited for ever.  Bounded, so that a program
 * making and freeing communicators in a loop holds at most this many MPI
 * communicators more (MPICH has a few thousand context ids); a skip on a
 * communicator freed longer ago than that goes undetected. */
#define FREED_LINGER 8
static mpi_xport_t *freed_ring[FREED_LINGER]; /* open_lock */
static unsigned freed_next;

/* How many freed communicators on which this rank refused or gave up a
 * call linger (the latest freed): a peer may still wait in that call, and
 * only this rank's answer to its announcement tells it why.  They used to
 * stay until MPI_Finalize, every one: a program that freed communicators
 * in a loop after refused calls held an MPI communicator for each (45 KB
 * each under Open MPI; MPICH has a few thousand context ids), and every
 * stalled wait's drain probed them all (weft stress over MPI, 4,000 of
 * them: one 6,000-step allreduce took minutes).  A peer still waiting in
 * a call refused here 64 such frees ago waits for its time limit. */
#define OWED_LINGER 64
static mpi_xport_t *owed_ring[OWED_LINGER]; /* open_lock */
static unsigned owed_next;
static bool owed_any; /* a transport of this process owed answers */

static void mpi_close(xport_t *xp)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    int fin = 0;
    MPI_Finalized(&fin);
    pthread_mutex_lock(&open_lock);
    bool can = x->heard && hooked && !fin && !__atomic_load_n(&finalizing, __ATOMIC_ACQUIRE);
    /* the job's twin waits for the barrier in MPI_Finalize; a
     * communicator freed after a call refused or given up here (its peers
     * may still wait for this rank's answer: a program that frees it and
     * calls MPI_Finalize, say) for OWED_LINGER such frees more; the others
     * for FREED_LINGER frees more */
    bool until_finalize = can && x == job_x && job_made;
    mpi_xport_t *evicted = NULL;
    if (can) {
        __atomic_store_n(&x->lingering, true, __ATOMIC_RELEASE);
        x->lock = &x->base.lock; /* the two-level transport's goes */
        drop_stages(x); /* only announcements are answered now */
        if (!until_finalize) {
            mpi_xport_t **ring = x->owes ? owed_ring : freed_ring;
            unsigned *next = x->owes ? &owed_next : &freed_next;
            evicted = ring[*next];
            ring[*next] = x;
            *next = (*next + 1) % (x->owes ? OWED_LINGER : FREED_LINGER);
            if (evicted)
                unlist_open(evicted);
        }
    } else {
        unlist_open(x);
    }
    pthread_mutex_unlock(&open_lock);
    if (!can)
        mpi_release(x);
    if (evicted) /* (drains hold open_lock: none of it runs now) */
        mpi_release(evicted);
}

static void mpi_release(mpi_xport_t *x)
{
    for (int i = 0; i < x->n; i++) /* only after a failure can any be left */
        if (x->mreq[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&x->mreq[i]);
            MPI_Request_free(&x->mreq[i]);
        }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Comm_free(&x->comm);
    drop_stages(x);
    free(x->mreq), free(x->owner), free(x->idx), free(x->st), free(x->fin);
    free(x->heard), free(x->told), free(x->replied), free(x->gave_up);
    free(x->spoilt);
    free(x->base.node_ids);
    pthread_mutex_lock(&job_lock);
    if (job_x == x)
        job_x = NULL;
    pthread_mutex_unlock(&job_lock);
    pthread_mutex_destroy(&x->base.lock);
    free(x);
}

static int mpi_open_comm(MPI_Comm dup, xport_t **out);

static call_desc_t *mine_of(mpi_xport_t *x, uint64_t key)
{
    return &x->mine[call_slot(key, sizeof x->mine / sizeof x->mine[0])];
}

/* Sends d to peer from buf[peer], which stays put until the transport
 * closes (announcements and replies have buffers of their own, and each
 * changes once per call at most). */
static void send_desc(mpi_xport_t *x, call_desc_t *buf, int peer, const call_desc_t *d)
{
    buf[peer] = *d;
    MPI_Request m;
    if (MPI_Isend(&buf[peer], (int)sizeof *d, MPI_BYTE, peer, x->announce_tag, x->comm, &m) ==
        MPI_SUCCESS)
        MPI_Request_free(&m);
}

/* Answers peer's announcement of call d with this rank's own record of
 * it, where this rank made it otherwise or refused it: the peer may be
 * waiting in that very call, and nothing else tells it over MPI. */
static void answer(mpi_xport_t *x, int peer, const call_desc_t *d)
{
    const call_desc_t *own = mine_of(x, d->key);
    if (x->replied[peer].key == d->key)
        return; /* once */
    if (own->key == d->key &&
        (own->sig != d->sig || (own->flags & (CALL_WAS_REFUSED | CALL_WAS_ABANDONED))))
        send_desc(x, x->replied, peer, own);
    /* in MPI_Finalize, or freed here: a call this rank never made here,
     * nor ever will */
    uint32_t n = (uint32_t)d->key & CALL_NUM_MASK;
    bool fin = __atomic_load_n(&finalizing, __ATOMIC_ACQUIRE);
    if ((fin || __atomic_load_n(&x->lingering, __ATOMIC_ACQUIRE)) && own->key != d->key &&
        ((n - x->next_call) & CALL_NUM_MASK) < (CALL_NUM_MASK >> 1)) {
        call_desc_t gone = {.key = d->key, .flags = fin ? CALL_WAS_FINALIZING : CALL_WAS_FREED};
        send_desc(x, x->replied, peer, &gone);
    }
}

/* Takes in every announcement that has arrived.  One about a call this rank
 * made differently is answered with this rank's own record of it, so the
 * announcer learns too (it may be waiting in that very call).  An abort
 * notice makes the transport fail as if the job had ended. */
static int drain_announcements(mpi_xport_t *x)
{
    int taken = 0;
    /* the peers that announced a call before this rank refused or
     * abandoned it (they announce a call once) */
    if (__atomic_exchange_n(&x->rescan, false, __ATOMIC_ACQUIRE))
        for (int p = 0; p < x->base.size; p++)
            if (x->heard[p].key)
                answer(x, p, &x->heard[p]);
    for (;;) {
        int flag = 0;
        MPI_Status st;
        char msg[256];
        /* the two side-band tags only: schedule traffic stays for its receives */
        if (take_abort(x->comm, x->abort_tag, msg)) {
            if (!x->abort_in[0])
                snprintf(x->abort_in, sizeof x->abort_in, "%s", msg);
            job_notice(x, msg);
            x->err = WEFT_EPEER;
            weft_error(WEFT_EPEER, "%s", x->abort_in);
            continue;
        }
        if (MPI_Iprobe(MPI_ANY_SOURCE, x->announce_tag, x->comm, &flag, &st) != MPI_SUCCESS ||
            !flag)
            return taken;
        call_desc_t d;
        if (MPI_Recv(&d, (int)sizeof d, MPI_BYTE, st.MPI_SOURCE, x->announce_tag, x->comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return taken;
        x->heard[st.MPI_SOURCE] = d;
        if (d.flags & (CALL_WAS_REFUSED | CALL_WAS_ABANDONED))
            x->gave_up[st.MPI_SOURCE] = d;
        answer(x, st.MPI_SOURCE, &d);
        taken++;
    }
}

/* Call key left its round of tags spoilt: the messages its peers sent
 * for it may wait in MPI unread, and a later call of the same round (2^seqbits
 * calls on) has the same tags, so MPI would hand them to it as its own
 * (a silently wrong result: a reduce's root that refused for its buffer,
 * its leaves having sent).  No MPI call can tell them apart, nor which
 * were sent: that call is refused instead (call_may_start). */
static void spoil(mpi_xport_t *x, uint64_t key)
{
    uint32_t rounds = 1u << x->seqbits, *sp = __atomic_load_n(&x->spoilt, __ATOMIC_ACQUIRE);
    if (!sp) {
        uint32_t *fresh = calloc(rounds, sizeof *fresh);
        if (!fresh) { /* no memory to remember it: refuse every later call */
            snprintf(x->unusable, sizeof x->unusable, "out of memory to track a call refused "
                     "or failed here");
            return;
        }
        if (!__atomic_compare_exchange_n(&x->spoilt, &sp, fresh, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            free(fresh); /* another thread's is there: sp */
        else
            sp = fresh;
    }
    uint32_t n = (uint32_t)key & CALL_NUM_MASK;
    __atomic_store_n(&sp[n & (rounds - 1)], n + 1, __ATOMIC_RELEASE);
}

static int mpi_call_may_start(xport_t *xp, uint64_t key)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    uint32_t *sp = __atomic_load_n(&x->spoilt, __ATOMIC_ACQUIRE);
    uint32_t n = (uint32_t)key & CALL_NUM_MASK;
    uint32_t was = sp ? __atomic_load_n(&sp[n & ((1u << x->seqbits) - 1)], __ATOMIC_ACQUIRE) : 0;
    if (!x->unusable[0] && was && was - 1 != n) {
        pthread_mutex_lock(x->lock);
        snprintf(x->unusable, sizeof x->unusable, "over MPI this communicator is unusable on "
                 "this rank from call #%u on, whose MPI tags are those of call #%u, which was "
                 "refused or failed here while other ranks may have made it: their messages of "
                 "it may still wait in MPI, which would hand them to a call with its tags (one "
                 "every %u); free the communicator and make another (docs/MPI.md)", n, was - 1,
                 1u << x->seqbits);
        pthread_mutex_unlock(x->lock);
    }
    return x->unusable[0] ? weft_error(WEFT_EREVOKED, "%s", x->unusable) : WEFT_OK;
}

static void mpi_call_note(xport_t *xp, const call_desc_t *d, int state)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if ((state == CALL_REFUSED && (d->flags & CALL_OWN_REASON)) || state == CALL_ABANDONED)
        spoil(x, d->key);
    call_desc_t *m = mine_of(x, d->key);
    if (state == CALL_STARTED || state == CALL_REFUSED)
        x->next_call = ((uint32_t)d->key + 1) & CALL_NUM_MASK;
    if (state == CALL_STARTED) {
        *m = *d; /* told to peers when a wait stalls */
        return;
    }
    if (state == CALL_REFUSED) {
        *m = *d;
        m->flags |= CALL_WAS_REFUSED;
    } else if (state == CALL_ABANDONED && m->key == d->key) {
        m->flags |= CALL_WAS_ABANDONED;
    } else {
        return;
    }
    /* Peers waiting in it learn it from this rank's answer to their
     * announcement, which those that announced it already (once a call)
     * get at the next drain here: now, where the lock is free (a failed
     * call's caller may hold it), else when a wait of this rank stalls. */
    if (!x->heard)
        return;
    x->owes = true;
    __atomic_store_n(&owed_any, true, __ATOMIC_RELAXED);
    __atomic_store_n(&x->rescan, true, __ATOMIC_RELEASE);
    if (pthread_mutex_trylock(x->lock) == 0) {
        drain_announcements(x);
        pthread_mutex_unlock(x->lock);
    }
}

static int answer_all(bool every_freed);

/* Takes in the announcements that wait on the other communicators of
 * this process, answering those about calls made differently here: a rank
 * that made a send-only call otherwise (a reduce's leaf that took another
 * root) ends it at once and goes on to wait elsewhere, and the peer left
 * waiting in that call hears why only from the answer to its
 * announcement, which no wait of this rank on that communicator is left
 * to give.  At most every 20 ms (a watch round checks each of its peers);
 * answer_all passes over this rank's own, whose lock the caller holds. */
static void drain_others(void)
{
    uint64_t now = weft_now_ns(), last = __atomic_load_n(&drained_all_ns, __ATOMIC_RELAXED);
    if (now - last >= 20000000ull &&
        __atomic_compare_exchange_n(&drained_all_ns, &last, now, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
        answer_all(false);
}

/* What this rank knows of peer's call `key` from its announcements. */
static int mpi_peer_view(xport_t *xp, int peer, uint64_t key, bool quick, peer_view_t *out)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    memset(out, 0, sizeof *out);
    out->rank_state = PEER_ATTACHED;
    if (!x->heard)
        return WEFT_ENOTSUP;
    drain_announcements(x);
    if (x->err == WEFT_EPEER) {
        out->aborted = true;
        if (x->abort_in[0]) /* said again: the caller returns it */
            weft_error(WEFT_EPEER, "%s", x->abort_in);
        return WEFT_OK;
    }
    if (!quick)
        drain_others();
    if (!quick && job_aborted()) { /* not at the end of every send-only call */
        out->aborted = true;
        return WEFT_OK;
    }
    const call_desc_t *h = &x->heard[peer];
    /* the peer's answer about this call, where a later announcement
     * followed it (the peer refused the call and went on to the next) */
    const call_desc_t *a = h->key != key && x->gave_up[peer].key == key ? &x->gave_up[peer] : h;
    out->call = *a;
    if (a->key == key) {
        out->found = true;
        if (a->flags & (CALL_WAS_FINALIZING | CALL_WAS_FREED)) {
            out->found = false;
            out->rank_state =
                a->flags & CALL_WAS_FINALIZING ? PEER_MPI_FINALIZING : PEER_FREED;
            return WEFT_OK;
        }
        out->state = a->flags & CALL_WAS_REFUSED     ? CALL_REFUSED
                     : a->flags & CALL_WAS_ABANDONED ? CALL_ABANDONED
                                                     : CALL_STARTED;
    } else if (h->key) {
        const call_desc_t *own = mine_of(x, h->key);
        if (own->key == h->key && own->sig != h->sig) {
            out->conflict = true; /* a call this rank has left, made differently */
            out->mine = *own;
        }
    }
    if (h->key && h->key >> 32 == key >> 32) {
        out->any_on_ctx = true;
        out->latest_seq = (uint32_t)h->key;
    }
    return WEFT_OK;
}

/* Tells peer this rank's current call (once per call). */
static void mpi_announce(xport_t *xp, int peer, const call_desc_t *mine)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if (x->told && x->told[peer].key != mine->key)
        send_desc(x, x->told, peer, mine);
}

/* Sends notice to every rank of comm but this one, on the abort tag. */
static void send_abort(MPI_Comm comm, int me, int size, int tag, char *notice, int len)
{
    for (int p = 0; p < size; p++) {
        MPI_Request m;
        if (p != me && MPI_Isend(notice, len, MPI_CHAR, p, tag, comm, &m) == MPI_SUCCESS)
            MPI_Request_free(&m);
    }
}

/* There is no job to abort under MPI: tell every rank of the communicator,
 * whose stalled waits then fail with WEFT_EPEER and this message, and
 * every rank of the job, on its transport (job_x): shared memory's abort
 * ends the whole job, and over MPI the ranks outside a split whose call
 * was proven to disagree went on to wait, on another communicator, for
 * ranks that had left after it (docs/MPI.md).  Their waits read that
 * transport's notices as their own.  Its state is that transport's
 * thread's to change: this rank's own calls there go on. */
static void mpi_fail_job(xport_t *xp, const char *msg)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if (x->abort_out[0])
        return; /* once */
    snprintf(x->abort_out, sizeof x->abort_out, "%s", msg);
    send_abort(x->comm, x->base.rank, x->base.size, x->abort_tag, x->abort_out,
               (int)sizeof x->abort_out);
    x->err = WEFT_EMISMATCH;
    pthread_mutex_lock(&job_lock);
    mpi_xport_t *j = job_x;
    if (j && j != x && !job_abort_out[0]) {
        snprintf(job_abort_out, sizeof job_abort_out, "%s", msg);
        send_abort(j->comm, j->base.rank, j->base.size, j->abort_tag, job_abort_out,
                   (int)sizeof job_abort_out);
    }
    pthread_mutex_unlock(&job_lock);
}

/* A transport for a sub-communicator: MPI_Comm_split keeps MPI's ordering by
 * (key, rank), the same as weft_comm_split. */
static int mpi_derive(xport_t *xp, int color, int key, xport_t **out)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    MPI_Comm nc;
    int mrc = MPI_Comm_split(x->comm, color < 0 ? MPI_UNDEFINED : color, key, &nc);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Comm_split");
    *out = NULL;
    if (nc == MPI_COMM_NULL)
        return WEFT_OK;
    return mpi_open_comm(nc, out);
}

/* r, a receive of a call that failed, gives its buffer back: MPI would
 * write a message it matches there (a receive-and-reduce's lands in its
 * staging buffer and is reduced into dst, exec_disown_buffers' memory, so
 * only direct receives need this).  It is cancelled, and completed while
 * it may be: a message matched already lands now, before the call
 * returns.  One whose sender does not finish it within a second is left
 * (docs: a failed call's buffers).  Sends are not cancelled: MPI-4
 * deprecates it, and Open MPI does not cancel a send at all. */
static void mpi_disown(xport_t *xp, xreq_t *r, void *dst)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    (void)dst;
    int i = 0;
    while (i < x->n && x->owner[i] != r)
        i++;
    if (i == x->n || !r->done || r->priv)
        return;
    if (MPI_Cancel(&x->mreq[i]) != MPI_SUCCESS)
        return;
    int flag = 0;
    for (int waits = 0; !flag && waits < 20000; waits++) {
        if (MPI_Test(&x->mreq[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return;
        if (!flag)
            nanosleep(&(struct timespec){0, 50000}, NULL);
    }
    if (!flag)
        return;
    x->n--; /* completed: MPI_Test set it to MPI_REQUEST_NULL */
    x->mreq[i] = x->mreq[x->n];
    x->owner[i] = x->owner[x->n];
}

static const xport_ops_t mpi_ops = {
    "mpi", mpi_isend, mpi_irecv, mpi_progress, mpi_block, mpi_health, mpi_close,
    mpi_derive, mpi_call_note, mpi_peer_view, NULL, mpi_fail_job, mpi_announce, NULL, NULL, NULL,
    NULL, NULL, /* no calls_ended: MPI keeps what nothing received */
    mpi_disown, NULL, NULL, mpi_call_may_start, NULL, /* comm_freed: mpi_close */
};

static int mpi_open_comm(MPI_Comm dup, xport_t **out)
{
    mpi_xport_t *x = calloc(1, sizeof *x);
    if (!x) {
        MPI_Comm_free(&dup);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    x->comm = dup;
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    /* MPI_TAG_UB is an attribute of MPI_COMM_WORLD only (Open MPI does not
     * copy it to communicators from MPI_Comm_split): read it there, so that
     * every communicator of the job gets the same tag space */
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    long tag_ub = flag && ub ? *ub : 32767;
    int bits = 0;
    while (bits < 31 && (1L << (bits + 1)) - 1 <= tag_ub)
        bits++;
    /* step tags as wide as shared memory's (24 bits) where MPI allows, with
     * 7 bits for the calls in flight (more than the schedule cache holds) */
    x->stepbits = bits >= 31 ? 24 : bits >= 26 ? 18 : bits - 6;
    x->seqbits = bits - x->stepbits;
    /* the two largest step tags (seq 0) carry announcements and abort
     * notices: no schedule uses them */
    x->base.tag_limit = (1u << x->stepbits) - 2;
    x->announce_tag = (int)x->base.tag_limit;
    x->abort_tag = (int)x->base.tag_limit + 1;
    MPI_Comm_rank(dup, &x->base.rank);
    MPI_Comm_size(dup, &x->base.size);
    x->heard = calloc((size_t)x->base.size, sizeof *x->heard);
    x->told = calloc((size_t)x->base.size, sizeof *x->told);
    x->replied = calloc((size_t)x->base.size, sizeof *x->replied);
    x->gave_up = calloc((size_t)x->base.size, sizeof *x->gave_up);
    /* without them no call exchange: it is optional */
    if (!x->heard || !x->told || !x->replied || !x->gave_up) {
        free(x->heard), free(x->told), free(x->replied), free(x->gave_up);
        x->heard = x->told = x->replied = x->gave_up = NULL;
    }
    x->base.local_size = 1;
    x->base.ops = &mpi_ops;
    pthread_mutex_init(&x->base.lock, NULL);
    x->lock = &x->base.lock;
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(dup, MPI_COMM_WORLD, &same);
    pthread_mutex_lock(&job_lock);
    if (same == MPI_CONGRUENT && !job_x)
        job_x = x;
    pthread_mutex_unlock(&job_lock);
    pthread_mutex_lock(&open_lock);
    x->next_open = open_list;
    open_list = x;
    pthread_mutex_unlock(&open_lock);
    *out = &x->base;
    return WEFT_OK;
}

MPI_Comm xport_mpi_comm(xport_t *x) { return ((mpi_xport_t *)x)->comm; }

void xport_mpi_set_lock(xport_t *x, pthread_mutex_t *lock)
{
    pthread_mutex_lock(&open_lock); /* drain_others reads it */
    ((mpi_xport_t *)x)->lock = lock;
    pthread_mutex_unlock(&open_lock);
}

/* MPI's progress rule: a rank waiting in a collective that weft serves is
 * inside an MPI call (the drop-in) or at least in an MPI program, and a
 * peer's blocking send to a receive it posted before must still complete.
 * Open MPI and MPICH move a large message (a rendezvous) only while the
 * receiver is in their progress engine, which weft's waits on cells or on
 * the board never entered: the sender waited in MPI_Send for the receiver,
 * the receiver in weft for the sender, for ever (test_pmpi's progress
 * case).  A probe drives that engine (about 50 ns here); the engine calls
 * it while a wait idles (exec_set_external_progress).  It probes
 * MPI_COMM_WORLD, which takes nothing from its queues: MPICH answers a
 * probe of MPI_COMM_SELF without entering its progress engine.  Below
 * MPI_THREAD_MULTIPLE only the main thread may call MPI, so other threads
 * of such a program do not probe (docs/MPI.md). */
static int mpi_thread_level = MPI_THREAD_SINGLE;

static void drive_mpi(void)
{
    int fin = 0, main_thread = 1, flag;
    if (PMPI_Finalized(&fin) != MPI_SUCCESS || fin)
        return;
    if (mpi_thread_level < MPI_THREAD_MULTIPLE &&
        (PMPI_Is_thread_main(&main_thread) != MPI_SUCCESS || !main_thread))
        return;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

static void (*_Atomic core_at_finalize)(void);

void xport_mpi_at_finalize(void (*fn)(void)) { core_at_finalize = fn; }

void xport_mpi_comm_made(xport_t *x)
{
    pthread_mutex_lock(&job_lock);
    if (job_x == (mpi_xport_t *)x)
        job_made = true;
    pthread_mutex_unlock(&job_lock);
}

/* How many freed communicators one pass of a stalled wait's drain looks
 * at: each look is two MPI probes, and a probe that finds nothing yields
 * the core under Open MPI's mpi_yield_when_idle (the ranks outnumber the
 * cores), so looking at all 72 in every pass (each 20 ms) would keep the
 * stalled rank probing; in slices of 8 each is answered within 9 passes. */
#define LINGER_SLICE 8
static unsigned linger_pass; /* open_lock */

/* Answers the announcements waiting on every MPI communicator of the
 * process whose lock is free (not the caller's own), the freed ones all
 * (every_freed) or LINGER_SLICE of them in turn; how many there were. */
static int answer_all(bool every_freed)
{
    int taken = 0;
    pthread_mutex_lock(&open_lock);
    unsigned nfreed = 0, k = 0;
    for (mpi_xport_t *y = open_list; y; y = y->next_open)
        nfreed += __atomic_load_n(&y->lingering, __ATOMIC_ACQUIRE);
    unsigned slices = (nfreed + LINGER_SLICE - 1) / LINGER_SLICE;
    unsigned slice = slices ? linger_pass++ % slices : 0;
    for (mpi_xport_t *y = open_list; y; y = y->next_open) {
        if (__atomic_load_n(&y->lingering, __ATOMIC_ACQUIRE) && !every_freed &&
            k++ / LINGER_SLICE != slice)
            continue;
        if (y->heard && pthread_mutex_trylock(y->lock) == 0) {
            taken += drain_announcements(y);
            pthread_mutex_unlock(y->lock);
        }
    }
    pthread_mutex_unlock(&open_lock);
    return taken;
}

/* Without the job's communicator, how long a rank that refused or gave up
 * calls answers announcements in MPI_Finalize: until none has come for
 * FIN_QUIET_NS, FIN_MOST_NS at most (a stalled peer announces 20 ms into
 * its stall). */
#define FIN_QUIET_NS 1000000000ull
#define FIN_MOST_NS 10000000000ull

/* The first act of MPI_Finalize (the delete callback of an attribute of
 * MPI_COMM_SELF).  Over MPI the answers to announcements are all a peer
 * waiting for this rank learns from, and a rank that refused a call, or
 * skipped one, then freed the communicator and called MPI_Finalize gave
 * none: its peers waited for ever (weft stress fault jobs over MPI).  So
 * this rank answers on until every rank of the job has reached
 * MPI_Finalize (a nonblocking barrier on the job's communicator, which lingers
 * for it when the program frees it), saying of any call it never made
 * that it is finalizing, so that a peer waiting in one fails with
 * WEFT_EMISMATCH; where there is no such communicator, a rank that
 * refused or gave up calls answers until none has come for a while.
 * Then the communicators that lingered for it go. */
static int at_finalize(MPI_Comm self, int keyval, void *attr, void *extra)
{
    (void)self, (void)keyval, (void)attr, (void)extra;
    __atomic_store_n(&finalizing, true, __ATOMIC_RELEASE);
    void (*core)(void) = core_at_finalize;
    if (core)
        core();
    bool owes = __atomic_load_n(&owed_any, __ATOMIC_RELAXED);
    pthread_mutex_lock(&open_lock);
    for (mpi_xport_t *y = open_list; y; y = y->next_open)
        __atomic_store_n(&y->rescan, true, __ATOMIC_RELEASE); /* heard before: answered */
    pthread_mutex_unlock(&open_lock);
    pthread_mutex_lock(&job_lock);
    MPI_Request all = MPI_REQUEST_NULL;
    if (job_x && job_made && MPI_Ibarrier(job_x->comm, &all) != MPI_SUCCESS)
        all = MPI_REQUEST_NULL;
    pthread_mutex_unlock(&job_lock);
    uint64_t start = weft_now_ns(), last = start;
    for (long polls = 0;; polls++) {
        int taken = answer_all(true), done = 1;
        uint64_t now = weft_now_ns();
        if (taken)
            last = now;
        if (all != MPI_REQUEST_NULL) {
            if (MPI_Test(&all, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                done = 1; /* (the request is gone) */
        } else {
            done = !owes || now - last >= FIN_QUIET_NS || now - start >= FIN_MOST_NS;
        }
        if (done)
            break;
        if (polls < 1000) {
            sched_yield();
        } else {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    pthread_mutex_lock(&open_lock);
    memset(freed_ring, 0, sizeof freed_ring);
    memset(owed_ring, 0, sizeof owed_ring);
    mpi_xport_t *gone = NULL;
    for (mpi_xport_t **p = &open_list; *p;) {
        mpi_xport_t *y = *p;
        if (y->lingering) {
            *p = y->next_open;
            y->next_open = gone;
            gone = y;
        } else {
            p = &y->next_open;
        }
    }
    pthread_mutex_unlock(&open_lock);
    while (gone) {
        mpi_xport_t *y = gone;
        gone = y->next_open;
        mpi_release(y);
    }
    return MPI_SUCCESS;
}

static void install_drive(void)
{
    if (PMPI_Query_thread(&mpi_thread_level) != MPI_SUCCESS)
        mpi_thread_level = MPI_THREAD_SINGLE;
    exec_set_external_progress(drive_mpi);
    int kv = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &kv, NULL) == MPI_SUCCESS &&
        MPI_Comm_set_attr(MPI_COMM_SELF, kv, NULL) == MPI_SUCCESS)
        hooked = true;
}

int xport_mpi_usable(MPI_Comm comm)
{
    static pthread_once_t drive_once = PTHREAD_ONCE_INIT;
    int init = 0;
    MPI_Initialized(&init);
    if (!init)
        return weft_error(WEFT_ENOTINIT, "weft_comm_from_mpi: MPI_Init has not been called");
    if (comm == MPI_COMM_NULL)
        return weft_error(WEFT_EINVAL, "weft_comm_from_mpi: MPI_COMM_NULL");
    int inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
        return weft_error(WEFT_ENOTSUP, "weft_comm_from_mpi: intercommunicators are not supported");
    pthread_once(&drive_once, install_drive);
    return WEFT_OK;
}

int xport_mpi_open(MPI_Comm comm, xport_t **out)
{
    MPI_Comm dup;
    int mrc = MPI_Comm_dup(comm, &dup);
    if (mrc != MPI_SUCCESS)
        return weft_error(WEFT_EINVAL, "weft_comm_from_mpi: MPI_Comm_dup failed (%d)", mrc);
    return mpi_open_comm(dup, out);
}
