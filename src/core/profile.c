/* profile.c — WEFT_PROFILE=DIR: every collective this process finishes is
 * recorded in memory (its call, arrival and exit time) and written at
 * weft_finalize to DIR/rank-R.pap (pap_trace.h), for `weft pap report`.
 * Clocks: the origin is rank 0's clock at the end of a barrier of the world
 * at weft_init (the seed aligns clocks with a barrier; ranks of one machine
 * share CLOCK_MONOTONIC, so rank 0's reading serves all, exactly).  Off (one branch per call) unless
 * the variable is set. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "comm.h"
#include "pap_trace.h"

static struct {
    bool on;
    char dir[PATH_MAX];
    int64_t t0;
    pap_call_t *calls;
    size_t n, cap;
    pthread_mutex_t lock;
} prof = {.lock = PTHREAD_MUTEX_INITIALIZER};

bool profile_on(void) { return prof.on; }

int64_t profile_now(void) { return (int64_t)weft_now_ns() - prof.t0; }

int profile_init(weft_comm_t world)
{
    const char *dir = getenv("WEFT_PROFILE");
    if (!dir || !*dir)
        return WEFT_OK;
    if (strlen(dir) >= sizeof prof.dir - 32)
        return weft_error(WEFT_EINVAL, "WEFT_PROFILE=%s: the path is too long", dir);
    if (mkdir(dir, 0777) && errno != EEXIST)
        return weft_error(WEFT_ESYS, "WEFT_PROFILE=%s: cannot create the directory: %s", dir,
                          strerror(errno));
    snprintf(prof.dir, sizeof prof.dir, "%s", dir);
    /* one machine, one clock (CLOCK_MONOTONIC): rank 0's reading after a
     * barrier is everyone's origin, so the times agree exactly */
    int rc = weft_barrier(world);
    int64_t t0 = (int64_t)weft_now_ns();
    if (!rc)
        rc = weft_bcast(&t0, 1, WEFT_INT64, 0, world);
    if (rc)
        return rc;
    prof.t0 = t0;
    prof.on = true;
    return WEFT_OK;
}

void profile_note(weft_request_t r, int64_t arrive_ns)
{
    const call_desc_t *d = &r->desc;
    pap_call_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.coll, sizeof c.coll, "%s", weft_coll_name((weft_coll_t)d->coll));
    snprintf(c.dtype, sizeof c.dtype, "%s", weft_dtype_name((weft_dtype_t)d->dtype));
    c.count = d->count;
    c.bytes = d->count * weft_dtype_size((weft_dtype_t)d->dtype);
    snprintf(c.comm, sizeof c.comm, "%u.%d", (unsigned)(d->key >> 32), r->comm->world[0]);
    c.seq = d->key & 0xffffffu;
    if (!d->op)
        snprintf(c.op, sizeof c.op, "-");
    else if (d->op <= WEFT_OP_BUILTIN_COUNT)
        snprintf(c.op, sizeof c.op, "%s", weft_op_name((weft_op_t)(d->op - 1)));
    else
        snprintf(c.op, sizeof c.op, "%s", r->ent->commutative ? "user_c" : "user_nc");
    c.root = coll_is_rooted((weft_coll_t)d->coll) ? d->root : -1;
    c.arrive_ns = arrive_ns;
    c.exit_ns = profile_now();
    pthread_mutex_lock(&prof.lock);
    if (prof.n == prof.cap) {
        size_t ncap = prof.cap ? 2 * prof.cap : 1024;
        pap_call_t *p = realloc(prof.calls, ncap * sizeof *p);
        if (!p) { /* keep what we have: a profile is not worth failing a call */
            pthread_mutex_unlock(&prof.lock);
            return;
        }
        prof.calls = p, prof.cap = ncap;
    }
    prof.calls[prof.n++] = c;
    pthread_mutex_unlock(&prof.lock);
}

int profile_write(weft_comm_t world)
{
    if (!prof.on)
        return WEFT_OK;
    prof.on = false;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/rank-%d.pap", prof.dir, world->rank);
    FILE *f = fopen(path, "w");
    int rc = WEFT_OK;
    if (!f) {
        rc = weft_error(WEFT_ESYS, "WEFT_PROFILE: cannot write %s: %s", path, strerror(errno));
    } else {
        pap_trace_header(f, world->rank, world->size,
                         world->node_of ? world->node_of[world->rank] : 0);
        for (size_t i = 0; i < prof.n; i++)
            pap_trace_call(f, &prof.calls[i]);
        if (fclose(f))
            rc = weft_error(WEFT_ESYS, "WEFT_PROFILE: writing %s failed", path);
    }
    free(prof.calls);
    prof.calls = NULL;
    prof.n = prof.cap = 0;
    return rc;
}
