/* mpi.c — the MPI transport: schedule steps become MPI_Isend / MPI_Irecv on
 * a communicator duplicated for weft, progressed with MPI_Testsome.
 *
 * Each weft communicator over MPI has its own MPI communicator, so the MPI
 * tag only has to tell apart the calls in flight on it and the steps of one
 * call: it is (call sequence mod 2^seqbits) << stepbits | step tag, with the
 * widths taken from MPI_TAG_UB (at least 2^15 - 1 by the standard).  A
 * receive-and-reduce lands in a pooled staging buffer and is reduced into
 * place when it completes.  A message of the wrong size is reported as
 * WEFT_EMISMATCH (our communicator returns MPI errors instead of aborting). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

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
} mpi_xport_t;

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

static int map_tag(mpi_xport_t *x, uint64_t tag, int *out)
{
    uint64_t step = tag & 0xffffff, seq = (tag >> 24) & 0xffffff;
    if (step >> x->stepbits)
        return weft_error(WEFT_ENOTSUP, "schedule tag %llu exceeds the %d bits this MPI's "
                                        "MPI_TAG_UB leaves for it", (unsigned long long)step,
                          x->stepbits);
    *out = (int)((seq & ((1u << x->seqbits) - 1)) << x->stepbits | step);
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

/* A message's MPI count is an int: keep to 1 GiB of MPI_BYTE. */
static int check_size(const xreq_t *r)
{
    if (r->bytes <= ((size_t)1 << 30))
        return WEFT_OK;
    return weft_error(WEFT_ENOTSUP, "a single message of %zu bytes exceeds the MPI transport's "
                                    "1 GiB limit", r->bytes);
}

/* What every send and receive checks first: the tag fits, the size fits. */
static int prepare(mpi_xport_t *x, const xreq_t *r, int *tag)
{
    int rc = map_tag(x, r->tag, tag);
    return rc ? rc : check_size(r);
}

static int mpi_isend(xport_t *xp, xreq_t *r)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    int tag = 0, rc = prepare(x, r, &tag);
    if (rc)
        return rc;
    MPI_Request m;
    static const char dummy;
    int mrc = MPI_Isend(r->bytes ? r->sbuf : &dummy, (int)r->bytes, MPI_BYTE, r->peer, tag,
                        x->comm, &m);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Isend");
    r->priv = NULL;
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

static int mpi_irecv(xport_t *xp, xreq_t *r)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    int tag = 0, rc = prepare(x, r, &tag);
    if (rc)
        return rc;
    void *dst = r->sink.dst;
    r->priv = NULL;
    if (r->sink.red && r->bytes) {
        stage_t *s = stage_get(x, r->bytes);
        if (!s)
            return weft_error(WEFT_ENOMEM, "out of memory for a %zu-byte staging buffer",
                              r->bytes);
        r->priv = s;
        dst = s->buf;
    }
    static char dummy;
    MPI_Request m;
    int mrc = MPI_Irecv(r->bytes ? dst : &dummy, (int)r->bytes, MPI_BYTE, r->peer, tag, x->comm, &m);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(x, mrc, "Irecv");
    return track(x, m, r);
}

static int mpi_progress(xport_t *xp)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    if (x->err)
        return -x->err;
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
        stage_t *s = r->priv;
        if (s) { /* receive-and-reduce: reduce from the staging buffer */
            reducer_apply(r->sink.red, r->sink.dst, s->buf, r->bytes / r->sink.red->esize,
                          r->sink.src_left);
            s->next = x->free_stages;
            x->free_stages = s;
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
    return x->err ? weft_error(x->err, "an earlier MPI error left this communicator unusable")
                  : WEFT_OK;
}

static void mpi_close(xport_t *xp)
{
    mpi_xport_t *x = (mpi_xport_t *)xp;
    for (int i = 0; i < x->n; i++) /* only after a failure can any be left */
        if (x->mreq[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&x->mreq[i]);
            MPI_Request_free(&x->mreq[i]);
        }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Comm_free(&x->comm);
    while (x->free_stages) {
        stage_t *s = x->free_stages;
        x->free_stages = s->next;
        free(s->buf);
        free(s);
    }
    free(x->mreq), free(x->owner), free(x->idx), free(x->st), free(x->fin);
    free(x->base.node_ids);
    pthread_mutex_destroy(&x->base.lock);
    free(x);
}

static int mpi_open_comm(MPI_Comm dup, xport_t **out);

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

static const xport_ops_t mpi_ops = {
    "mpi", mpi_isend, mpi_irecv, mpi_progress, mpi_block, mpi_health, mpi_close,
    mpi_derive, NULL, NULL, NULL, NULL,
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
    x->base.tag_limit = 1u << x->stepbits;
    MPI_Comm_rank(dup, &x->base.rank);
    MPI_Comm_size(dup, &x->base.size);
    x->base.local_size = 1;
    x->base.ops = &mpi_ops;
    pthread_mutex_init(&x->base.lock, NULL);
    *out = &x->base;
    return WEFT_OK;
}

MPI_Comm xport_mpi_comm(xport_t *x) { return ((mpi_xport_t *)x)->comm; }

int xport_mpi_open(MPI_Comm comm, xport_t **out)
{
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
    MPI_Comm dup;
    int mrc = MPI_Comm_dup(comm, &dup);
    if (mrc != MPI_SUCCESS)
        return weft_error(WEFT_EINVAL, "weft_comm_from_mpi: MPI_Comm_dup failed (%d)", mrc);
    return mpi_open_comm(dup, out);
}
