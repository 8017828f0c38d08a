/* comm.c — joining the job, communicators (dup, split, free) and the
 * per-communicator algorithm choices.
 *
 * Context ids: a new communicator's id is the lowest no member of the
 * parent holds (agreed by small allreduces over it, "context ids" below),
 * and freed ids are reused; communicators from one split with different
 * colours share an id because their members are disjoint.  Messages are
 * tagged with (context, call sequence number, step tag), see api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "../xport/segment.h"

weft_state_t weft_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define MAX_CTX 0xffffu

/* A child of fork() is a copy of a rank that shares the rank's segments:
 * whatever it did through the copied communicators would act as that rank
 * behind its back.  (A Python child leaving by sys.exit() ran the package's
 * exit hook, weft_finalize: the job then failed, the parent's next
 * allreduce meeting the child's barrier.)  So in the child every call on a
 * communicator or a request, and weft_finalize, fails; weft_alloc works,
 * from an arena of the child's own (arena.c). */
static void note_fork_child(void) { weft_g.fork_child = 1; }
static void hook_fork(void) { pthread_atfork(NULL, NULL, note_fork_child); }

int fork_refused(const char *fn)
{
    if (!weft_g.fork_child)
        return WEFT_OK;
    return weft_error(WEFT_EINVAL, "%s: this process is a child of fork() of a weft rank; the "
                                   "communicators it copied belong to its parent", fn);
}

int comm_check(weft_comm_t comm, const char *fn)
{
    if (!weft_g.initialized)
        return weft_error(WEFT_ENOTINIT, "%s: weft_init has not been called", fn);
    if (!comm)
        return weft_error(WEFT_EINVAL, "%s: communicator is NULL", fn);
    return fork_refused(fn);
}

int comm_create(xport_t *x, int rank, int size, const int *world, uint32_t ctx,
                const algo_choice_t *choice, weft_comm_t *out)
{
    weft_comm_t c = calloc(1, sizeof *c);
    if (!c)
        return weft_error(WEFT_ENOMEM, "out of memory");
    c->world = malloc((size_t)size * sizeof *c->world);
    if (!c->world) {
        free(c);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    memcpy(c->world, world, (size_t)size * sizeof *world);
    c->rank = rank;
    c->size = size;
    c->ctx = ctx;
    c->board_slots = true; /* the world's pair, or a transport of its own */
    c->x = x;
    c->timeout_ns = weft_g.timeout_ns;
    if (choice)
        memcpy(c->choice, choice, sizeof c->choice);
    pthread_mutex_lock(&weft_g.lock);
    c->lnext = weft_g.live;
    if (weft_g.live)
        weft_g.live->lprev = c;
    weft_g.live = c;
    x->comms++;
    pthread_mutex_unlock(&weft_g.lock);
    *out = c;
    return WEFT_OK;
}

/* Takes c off the list of live communicators; the number of others left
 * on its transport. */
static int unlink_live(weft_comm_t c)
{
    pthread_mutex_lock(&weft_g.lock);
    if (c->lprev)
        c->lprev->lnext = c->lnext;
    else if (weft_g.live == c)
        weft_g.live = c->lnext;
    if (c->lnext)
        c->lnext->lprev = c->lprev;
    c->lnext = c->lprev = NULL;
    int left = --c->x->comms;
    pthread_mutex_unlock(&weft_g.lock);
    return left;
}

/* Is c a communicator not yet freed (a handle weft_finalize freed is
 * compared, never read)? */
static bool comm_is_live(weft_comm_t c)
{
    pthread_mutex_lock(&weft_g.lock);
    weft_comm_t l = weft_g.live;
    while (l && l != c)
        l = l->lnext;
    pthread_mutex_unlock(&weft_g.lock);
    return l != NULL;
}

/* weft_finalize: the communicators the program did not free.  Those over
 * the job's transport go with it; one with a call still running (another
 * thread's, against the rules) is left as it is. */
static void free_left_comms(void)
{
    for (weft_comm_t c = weft_g.live, next; c; c = next) {
        next = c->lnext;
        if (c != weft_g.world && c->x == weft_g.x && !c->active)
            comm_destroy(c);
    }
}

void request_list_free(weft_request_t r)
{
    while (r) {
        weft_request_t n = r->next;
        exec_release(&r->e);
        free(r->stage);
        weft_free(r->shared_stage);
        free(r);
        r = n;
    }
}

int comm_set_nodes(weft_comm_t c, const int *ids)
{
    int P = c->size, n = 0;
    int *map = malloc((size_t)P * sizeof *map);
    if (!map)
        return weft_error(WEFT_ENOMEM, "out of memory");
    for (int i = 0; i < P; i++) {
        int j = 0;
        while (j < i && ids[j] != ids[i])
            j++;
        map[i] = j < i ? map[j] : n++;
    }
    int *count = calloc((size_t)n, sizeof *count);
    if (!count) {
        free(map);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    c->node_max = 0;
    for (int i = 0; i < P; i++)
        if (++count[map[i]] > c->node_max)
            c->node_max = count[map[i]];
    free(count);
    free(c->node_of);
    c->node_of = NULL;
    c->nnodes = n;
    if (n > 1)
        c->node_of = map;
    else
        free(map);
    return WEFT_OK;
}

/* Nodes of a communicator over the job's shared-memory transport: virtual
 * nodes of WEFT_NODE_SIZE consecutive job ranks, else one node. */
static int shm_nodes(weft_comm_t c)
{
    if (!weft_g.node_size) {
        c->nnodes = 1;
        return WEFT_OK;
    }
    int *ids = malloc((size_t)c->size * sizeof *ids);
    if (!ids)
        return weft_error(WEFT_ENOMEM, "out of memory");
    for (int i = 0; i < c->size; i++)
        ids[i] = c->world[i] / weft_g.node_size;
    int rc = comm_set_nodes(c, ids);
    free(ids);
    return rc;
}

static void ctx_give_back(uint32_t c, uint32_t next_call, bool with_pair);
static void pair_give_back(uint32_t c);

void comm_destroy(weft_comm_t c)
{
    /* the arrival records this rank claimed for the communicator, as its
     * rank 0 or a node leader (src/shmcoll) */
    bool held_records = c->x->ops->arrival_rec && c != weft_g.world &&
                        arrival_comm_freed(c->x, c->world[c->rank], c->ctx);
    /* reused only where nothing of it may be left in flight or in shared
     * memory; else the id (and its board pair) stays retired.  Arrival
     * records are kept by id, so they retire the id alone: the board's
     * posts carry the id in their stamps, and its slots wait for their
     * readers (slot_free), so the pair serves the next communicator.
     * (Retired with the id, the pairs ran out after seven communicators
     * that had run an arrival-driven call, and with them the board.) */
    bool clean = c->shared_ctx && !c->revoked[0] && !c->dead && !c->pending.req;
    /* A shared id's word of the calls ended well outlives the free: a
     * message of one of them that comes later, which no call takes, still
     * proves that its sender made that call otherwise (at once, or in
     * weft_finalize's sweep; before, freeing the communicator hid it and
     * the job ended well).  The id's next communicator numbers its calls
     * on from c->seq, so the word names none of them, and its first call
     * to end writes over it.  An id of the communicator's own transport
     * has no next. */
    if (!c->shared_ctx && c->x->ops->calls_ended)
        c->x->ops->calls_ended(c->x, c->ctx, 0, 0, false);
    if (c->shared_ctx && c->x->ops->comm_freed)
        c->x->ops->comm_freed(c->x, c->ctx, c->seq, true);
    if (clean && !held_records)
        ctx_give_back(c->ctx, c->seq, c->board_slots);
    else if (clean && c->board_slots)
        pair_give_back(c->ctx);
    free(c->node_of);
    weft_free(c->stage);
    for (int i = 0; i < SCHED_CACHE_SIZE; i++) {
        sched_entry_t *e = &c->cache[i];
        if (!e->used)
            continue;
        request_list_free(e->spare);
        sched_img_free(e->s);
    }
    if (c->pending.req) { /* an abandoned *_timeout call */
        c->pending.req->next = c->dead;
        c->dead = c->pending.req;
    }
    /* only now, when nothing above reads the transport: another thread
     * freeing the last other communicator on it closes it as soon as this
     * one is off the count (8 threads freeing communicators at once under
     * the drop-in read an unmapped segment; MPICH's
     * threads/comm/comm_create_threads) */
    if (unlink_live(c) == 0 && c->x->closes_with_comms) {
        c->x->ops->close(c->x);
        request_list_free(c->dead);
    } else if (c->dead) {
        weft_request_t last = c->dead;
        while (last->next)
            last = last->next;
        pthread_mutex_lock(&weft_g.lock);
        last->next = weft_g.graveyard;
        weft_g.graveyard = c->dead;
        pthread_mutex_unlock(&weft_g.lock);
    }
    free(c->world);
    free(c);
}

int lib_init(void)
{
    static pthread_once_t hooked = PTHREAD_ONCE_INIT;
    if (weft_g.initialized)
        return WEFT_OK;
    pthread_once(&hooked, hook_fork);
    int rc = config_choices_from_env(weft_g.choice);
    if (rc)
        return rc;
    if ((rc = config_numbers_from_env(&weft_g.node_size, &weft_g.timeout_ns)))
        return rc;
    weft_g.initialized = 1;
    return WEFT_OK;
}

weft_err_t weft_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    weft_error_clear();
    if (weft_g.world)
        return weft_error(WEFT_EINVAL, "weft_init: already initialised");
    if (weft_g.finalized)
        return weft_error(WEFT_EINVAL, "weft_init: weft_finalize has run in this process; weft "
                                       "cannot be initialised again (as MPI)");
    int rc = lib_init();
    if (rc)
        return rc;
    const char *seg = getenv("WEFT_SHM"), *rs = getenv("WEFT_RANK"), *ss = getenv("WEFT_SIZE");
    xport_t *x;
    int rank = 0, size = 1;
    if (seg && rs && ss) {
        char *e1, *e2;
        long r = strtol(rs, &e1, 10), n = strtol(ss, &e2, 10);
        if (*e1 || *e2 || n < 1 || n > 65536 || r < 0 || r >= n)
            return weft_error(WEFT_EINVAL, "weft_init: bad WEFT_RANK=%s / WEFT_SIZE=%s", rs, ss);
        rank = (int)r, size = (int)n;
        rc = xport_shm_open(seg, rank, size, &x);
    } else {
        rc = xport_self_open(&x);
    }
    if (rc)
        return rc;
    int *world = malloc((size_t)size * sizeof *world);
    if (!world) {
        x->ops->close(x);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < size; i++)
        world[i] = i;
    rc = comm_create(x, rank, size, world, 1, weft_g.choice, &weft_g.world);
    free(world);
    if (!rc && (rc = shm_nodes(weft_g.world)))
        comm_destroy(weft_g.world), weft_g.world = NULL;
    if (rc) {
        x->ops->close(x);
        return rc;
    }
    weft_g.x = x;
    if ((rc = profile_init(weft_g.world))) {
        char why[400];
        snprintf(why, sizeof why, "%s", weft_last_error());
        comm_destroy(weft_g.world), weft_g.world = NULL;
        x->ops->close(x), weft_g.x = NULL;
        return weft_error(rc, "weft_init: %s", why);
    }
    return WEFT_OK;
}

weft_err_t weft_finalize(void)
{
    if (!weft_g.initialized)
        return weft_error(WEFT_ENOTINIT, "weft_finalize: weft is not initialised");
    if (fork_refused("weft_finalize"))
        return WEFT_EINVAL;
    int rc = WEFT_OK;
    int left = __atomic_load_n(&weft_g.unfinished, __ATOMIC_RELAXED);
    if (left > 0)
        return weft_error(WEFT_EBUSY, "weft_finalize: %d collective%s unfinished (split-phase "
                                      "requests or *_timeout calls): finish them, or "
                                      "weft_comm_revoke their communicators; weft stays "
                                      "initialised", left, left == 1 ? " is" : "s are");
    if (weft_g.world) {
        xport_t *x = weft_g.x;
        if (x->ops->note_finalize)
            x->ops->note_finalize(x, 1);
        /* No rank may leave while a peer still needs it (unless this rank
         * gave the world up: then it leaves, and peers see it gone). */
        bool met = !weft_g.world->revoked[0];
        if (met) {
            weft_g.world->call_flags = CALL_FINALIZE;
            rc = weft_barrier(weft_g.world);
        }
        int prc = profile_write(weft_g.world); /* (the program's calls and that barrier) */
        /* Every rank's calls have ended and their messages are out: one left
         * of a call this rank ended well proves that ranks disagreed where
         * both only sent (README: mismatched calls).  A second barrier lets
         * every rank hear of it before it leaves. */
        if (met && !rc && x->ops->sweep) {
            int src = x->ops->sweep(x);
            weft_g.world->call_flags = CALL_FINALIZE;
            int brc = weft_barrier(weft_g.world);
            rc = src ? src : brc;
        }
        if (!rc)
            rc = prc;
        free_left_comms();
        comm_destroy(weft_g.world);
        weft_g.world = NULL;
        weft_g.x->ops->close(weft_g.x);
        weft_g.x = NULL;
    }
    request_list_free(weft_g.graveyard);
    weft_g.graveyard = NULL;
    weft_g.initialized = 0;
    weft_g.finalized = 1;
    return rc;
}

int weft_initialized(void) { return weft_g.initialized; }
weft_comm_t weft_comm_world(void) { return weft_g.initialized ? weft_g.world : NULL; }
int weft_comm_rank(weft_comm_t comm) { return comm ? comm->rank : -1; }
int weft_comm_size(weft_comm_t comm) { return comm ? comm->size : -1; }

/* ---- context ids ----
 * The communicators of the job's transport tell their messages, call logs,
 * board slots and arrival records apart by a 16-bit context id and a
 * 24-bit call number (api.c's tags and keys).  Ids are reused: each
 * process marks the ids its live communicators hold, and a new one takes
 * the lowest id no member marks (an OR of the marks over the parent).  A
 * reused id's communicator numbers its calls on from the highest number
 * any member reached under that id, so a (context, call) pair recurs only
 * after 2^24 calls, as on one long-lived communicator, and nothing a
 * freed communicator left in shared memory can pass for a new call.  An
 * id whose communicator may have left messages or records behind (it was
 * revoked, had failed calls, or held arrival records) is never reused.
 * Threads creating communicators from different parents at once reserve
 * an id before agreeing on it; a collision makes every member retry, and
 * a retry takes its id at random among those it may have (below). */

enum { CTX_WORDS = (MAX_CTX + 1) / 64, BOARD_PAIRS = BOARD_SLOTS / 2 };
static uint64_t ctx_held[CTX_WORDS] = {3}; /* ids 0 and 1 (the world): never given */
static uint32_t ctx_next_call[MAX_CTX + 1]; /* a freed id's next call number */
/* The board's slot pairs (id mod BOARD_PAIRS) held by a live communicator
 * of this rank.  A new one gets its pair only where no member's other
 * communicators hold it; else it runs without the board (algo_board_usable
 * says why), since two communicators sharing slots wait for each other's
 * readers, and with two threads that wait can close a cycle. */
static bool pair_held[BOARD_PAIRS] = {[1 % BOARD_PAIRS] = true}; /* the world's */
_Static_assert(BOARD_PAIRS <= 64 && 64 % BOARD_PAIRS == 0,
               "lowest_free_ctx passes the pairs as one word, first_free_word by pattern");

static bool ctx_marked(uint32_t c) { return ctx_held[c / 64] >> (c % 64) & 1; }
static void ctx_mark(uint32_t c, bool on)
{
    if (on)
        ctx_held[c / 64] |= 1ull << (c % 64);
    else
        ctx_held[c / 64] &= ~(1ull << (c % 64));
}

/* Gives back a board pair this rank held for a communicator to be. */
static void pair_give_back(uint32_t c)
{
    pthread_mutex_lock(&weft_g.lock);
    pair_held[c % BOARD_PAIRS] = false;
    pthread_mutex_unlock(&weft_g.lock);
}

/* Gives back an id this rank holds, and its board pair if it holds that
 * too, for reuse from call number next_call on. */
static void ctx_give_back(uint32_t c, uint32_t next_call, bool with_pair)
{
    pthread_mutex_lock(&weft_g.lock);
    ctx_mark(c, false);
    ctx_next_call[c] = next_call;
    if (with_pair)
        pair_held[c % BOARD_PAIRS] = false;
    pthread_mutex_unlock(&weft_g.lock);
}

void comm_ctx_give_back(uint32_t ctx, uint32_t first_call, bool board)
{
    ctx_give_back(ctx, first_call, board);
}

/* A thread's draws for lowest_free_ctx's retries (xorshift64*), seeded by
 * the clock, the process and the thread; never 0 (which means no draw). */
static uint32_t retry_draw(void)
{
    static _Thread_local uint64_t x;
    if (!x)
        x = (weft_now_ns() ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&x) | 1;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    uint32_t d = (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
    return d ? d : 1;
}

/* The first word of ids holding an id this rank has free: with a free
 * board pair too (pairs), or any.  BOARD_PAIRS divides 64, so an id's pair
 * is its bit's position in its word mod BOARD_PAIRS.  Called locked. */
static uint32_t first_free_word(bool pairs)
{
    uint64_t usable = pairs ? 0 : ~0ull;
    for (unsigned p = 0; pairs && p < BOARD_PAIRS; p++)
        if (!pair_held[p])
            usable |= 0x0101010101010101ull << p;
    uint32_t w = 0;
    while (w < CTX_WORDS && !(~ctx_held[w] & usable))
        w++;
    return w;
}

/* The id of bit (pick mod the bits set) of word w's set bits; pick 0:
 * the lowest. */
static uint32_t nth_set(uint32_t w, uint64_t bits, uint32_t pick)
{
    for (uint32_t skip = pick % (uint32_t)__builtin_popcountll(bits); skip; skip--)
        bits &= bits - 1;
    return w * 64 + (uint32_t)__builtin_ctzll(bits);
}

/* Scans the words from w on, one allreduce of the members' held ids and
 * pairs a word, for an id no member holds whose pair no member holds
 * either (c), noting an id no member holds (lowest): the lowest of each,
 * or with pick, the one at pick (mod their count) in the first word that
 * has one. */
static int scan_ctx_words(const member_allreduce_t *ar, uint32_t w, uint64_t unread, uint32_t pick,
                          uint32_t *c, uint32_t *lowest)
{
    const uint64_t all_pairs = (uint64_t)-1 >> (64 - BOARD_PAIRS);
    int rc = WEFT_OK;
    for (; !rc && w < CTX_WORDS && !*c; w++) {
        uint64_t held[2] = {0, 0}; /* ids w*64.., and the pairs */
        pthread_mutex_lock(&weft_g.lock);
        held[0] = ctx_held[w];
        for (unsigned p = 0; p < BOARD_PAIRS; p++)
            held[1] |= (uint64_t)pair_held[p] << p;
        held[1] |= unread;
        pthread_mutex_unlock(&weft_g.lock);
        rc = ar->fn(ar->arg, held, 2, WEFT_UINT64, WEFT_BOR);
        if (rc || !~held[0])
            continue;
        if (!*lowest)
            *lowest = nth_set(w, ~held[0], pick);
        uint64_t usable = 0;
        for (uint32_t i = 0; i < 64; i++)
            if (!(held[0] >> i & 1) && !(held[1] >> ((w * 64 + i) % BOARD_PAIRS) & 1))
                usable |= 1ull << i;
        if (usable)
            *c = nth_set(w, usable, pick);
        if ((held[1] & all_pairs) == all_pairs)
            break; /* no pair is free: any id will do */
    }
    return rc;
}

/* The lowest id no member of comm holds whose board pair no member holds
 * either, else the lowest id no member holds, or 0 when each is held by
 * some member.  Every allreduce carries at most 16 bytes with max or bor,
 * which any algorithm the user forced on comm serves.  A word whose free
 * ids all have held pairs is passed over while some pair is free: ids
 * retired for good (arrival records) fill the low words a pair at a time
 * (the world's pair stays free in each), and settling there left
 * communicator after communicator without the board.  The scan starts at
 * the highest of the members' first words with an id they have free on a
 * pair they have free: no word before it can serve, and starting at the
 * first word with any free id cost one allreduce per word of retired ids
 * (137 us a dup after 22000 arrival-driven communicators, 2 ranks).  Only
 * where that scan finds no free id at all does a second start at the
 * members' first word with any free id.  A retry after a collision takes
 * the id at a draw of the members' instead of the lowest: two threads
 * whose agreements both took the lowest id, each reserving it first on
 * some members, would take it again and again in step (test_threads, 3
 * threads a rank making communicators at once: an agreement of 4 ranks
 * took 16144 rounds; of 6 ranks, with a busy loop beside, 228, about a
 * second, and weft stress --threads 2 timed out its setup so).  Each
 * agreement's draw is the largest of its members' draws, the same on
 * every member and independent of another agreement's, so two collide
 * again only by a chance of one in the ids free. */
static int lowest_free_ctx(const member_allreduce_t *ar, uint32_t refusal, bool retry,
                           uint32_t *c, uint32_t *refused_by, uint64_t *unread)
{
    pthread_mutex_lock(&weft_g.lock);
    uint32_t first[4] = {first_free_word(false), refusal, first_free_word(true),
                         retry ? retry_draw() : 0};
    pthread_mutex_unlock(&weft_g.lock);
    int rc = ar->fn(ar->arg, first, 4, WEFT_UINT32, WEFT_MAX); /* a refusal rides along */
    uint32_t lowest = 0;
    *c = 0;
    if ((*refused_by = rc ? 0 : first[1]))
        return WEFT_OK;
    /* every member has come this far, so is done with its earlier calls:
     * a post of this rank's still unread now may stay so for good */
    *unread = !rc && ar->unread_pairs ? ar->unread_pairs(ar->arg) : 0;
    if (!rc)
        rc = scan_ctx_words(ar, first[2], *unread, first[3], c, &lowest);
    if (!rc && !*c && !lowest && first[0] < first[2])
        rc = scan_ctx_words(ar, first[0], *unread, first[3], c, &lowest);
    if (!*c)
        *c = lowest;
    return rc;
}

/* Agrees (among the members ar reaches) on a context id held by no
 * member, and held by this rank from now on (ctx_give_back), on its first
 * call number, and on whether its board pair is the new communicator's
 * (then held too). */
int comm_agree_ctx(const member_allreduce_t *ar, uint32_t refusal, uint32_t *refused_by,
                   uint32_t *ctx, uint32_t *first_call, bool *board)
{
    for (uint32_t round = 0;; round++) {
        uint32_t c;
        uint64_t unread = 0;
        int rc = lowest_free_ctx(ar, refusal, round > 0, &c, refused_by, &unread);
        if (rc)
            return rc;
        if (*refused_by) /* the caller says who and why, or keeps its own error */
            return WEFT_EPEER;
        refusal = 0; /* said once: the retries below are the same members' */
        if (!c)
            return weft_error(WEFT_ENOMEM, "all %u communicator context ids are held by live "
                              "communicators of this one's ranks or retired (the id of a "
                              "communicator freed after an arrival-driven call, a failed call "
                              "or a revocation is never reused): free communicators you no "
                              "longer use", MAX_CTX - 1);
        /* another thread of this rank may have taken c since */
        pthread_mutex_lock(&weft_g.lock);
        bool reserved = !ctx_marked(c), pair = !pair_held[c % BOARD_PAIRS];
        uint32_t next_call = ctx_next_call[c],
                 verdict[3] = {!reserved, next_call, !pair || (unread >> (c % BOARD_PAIRS) & 1)};
        if (reserved)
            ctx_mark(c, true);
        pair_held[c % BOARD_PAIRS] = true;
        pthread_mutex_unlock(&weft_g.lock);
        /* before the verdict lets any member start a call there: a free
         * of an earlier communicator on c said no call past it was made */
        if (reserved && ar->x && ar->x->ops->comm_freed)
            ar->x->ops->comm_freed(ar->x, c, 0, false);
        rc = ar->fn(ar->arg, verdict, 3, WEFT_UINT32, WEFT_MAX);
        if (!rc && !verdict[0]) {
            *ctx = c, *first_call = verdict[1], *board = !verdict[2];
            if (round >= 2 && weft_verbose())
                fprintf(stderr, "weft: a communicator's context id took %u rounds to agree on "
                        "(threads making communicators at once)\n", round + 1);
            if (pair && !*board) /* another member's communicator has it */
                pair_give_back(c);
            return WEFT_OK;
        }
        /* a collision on another member: every member tries again */
        if (reserved)
            ctx_give_back(c, next_call, pair);
        else if (pair)
            pair_give_back(c);
        if (rc)
            return rc;
    }
}

static int parent_allreduce(void *comm, void *buf, int n, weft_dtype_t dt, weft_op_t op)
{
    return coll_run_own(comm, WEFT_COLL_ALLREDUCE, NULL, buf, (size_t)n, dt, op, true);
}

/* The board pairs that no live communicator of this rank holds, in which
 * a post of this rank is still unread: a call made otherwise by its reader
 * that nobody saw (both of no elements, say), of a communicator every
 * member has since freed.  A new communicator there would wait for that
 * read before its first post, for ever (weft stress, seed 5003), so it
 * gets another pair or runs without the board; the pair is free again once
 * the post is read. */
static uint64_t parent_unread_pairs(void *arg)
{
    weft_comm_t comm = arg;
    xport_t *x = comm->x;
    uint64_t m = 0;
    if (!x->ops->board_slot)
        return 0;
    int me = comm->world[comm->rank];
    for (unsigned p = 0; p < BOARD_PAIRS; p++) {
        pthread_mutex_lock(&weft_g.lock);
        bool held = pair_held[p];
        pthread_mutex_unlock(&weft_g.lock);
        for (unsigned k = 0; k < 2 && !held; k++) {
            board_slot_t *s = x->ops->board_slot(x, me, 2 * p + k);
            if (atomic_load_explicit(&s->stamp, memory_order_acquire) &&
                (int32_t)(s->wanted - atomic_load_explicit(board_reads(s, x->board_payload),
                                                           memory_order_acquire)) > 0)
                m |= 1ull << p;
        }
    }
    return m;
}

/* The agreement among the members of a communicator made from comm. */
static int agree_ctx(weft_comm_t comm, uint32_t *ctx, uint32_t *first_call, bool *board)
{
    member_allreduce_t ar = {parent_allreduce, parent_unread_pairs, comm, comm->x};
    uint32_t refused_by;
    return comm_agree_ctx(&ar, 0, &refused_by, ctx, first_call, board);
}

/* A rank whose weft_comm_dup or _split fails a check of its own arguments
 * still takes its part in the call's first collective, saying so: its
 * peers fail as well (WEFT_EPEER, naming it) instead of waiting for it in
 * a call it never makes, while it may wait for them elsewhere (api.c,
 * call_refused, does the same for the collectives).  It reports its own
 * error once that collective is over, whatever became of it. */
int comm_peer_refused(const char *fn, uint32_t refused_by, const char *what)
{
    return weft_error(WEFT_EPEER, "%s: rank %u refused the call (%s), so no communicator was "
                      "made", fn, refused_by - 1, what);
}

/* The refusal alone, where the communicator is made by the transport
 * (derive: MPI across machines), which has no agreement of weft's. */
static int agree_refusal(weft_comm_t comm, uint32_t refusal, uint32_t *refused_by)
{
    *refused_by = refusal;
    return parent_allreduce(comm, refused_by, 1, WEFT_UINT32, WEFT_MAX);
}

/* A communicator over a transport of its own (MPI: a new MPI communicator). */
static int derive_comm(weft_comm_t comm, int color, int key, weft_comm_t *newcomm)
{
    xport_t *nx = NULL;
    *newcomm = NULL;
    int rc = comm->x->ops->derive(comm->x, color, key, &nx);
    if (rc || !nx)
        return rc;
    int *ident = malloc((size_t)nx->size * sizeof *ident);
    if (!ident) {
        nx->ops->close(nx);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < nx->size; i++)
        ident[i] = i;
    rc = comm_create(nx, nx->rank, nx->size, ident, 1, comm->choice, newcomm);
    free(ident);
    if (!rc && nx->node_ids && (rc = comm_set_nodes(*newcomm, nx->node_ids)))
        comm_destroy(*newcomm), *newcomm = NULL;
    if (rc) {
        nx->ops->close(nx);
        return rc;
    }
    nx->closes_with_comms = true;
    return WEFT_OK;
}

/* A communicator on transport x under an agreed context id, whose calls
 * are numbered from first_call on; the id is given back if it cannot be
 * made, and when it is freed (comm_destroy). */
int comm_create_on(xport_t *x, int rank, int size, const int *world, uint32_t ctx,
                   uint32_t first_call, bool board, const algo_choice_t *choice,
                   weft_comm_t *out)
{
    int rc = comm_create(x, rank, size, world, ctx, choice, out);
    if (rc) {
        ctx_give_back(ctx, first_call, board);
        return rc;
    }
    (*out)->seq = (*out)->first_call = first_call;
    (*out)->ended_below = first_call & CALL_NUM_MASK;
    (*out)->shared_ctx = true;
    (*out)->board_slots = board;
    return WEFT_OK;
}

static int comm_create_shared(weft_comm_t comm, int rank, int size, const int *world,
                              uint32_t ctx, uint32_t first_call, bool board, weft_comm_t *out)
{
    return comm_create_on(comm->x, rank, size, world, ctx, first_call, board, comm->choice, out);
}

weft_err_t weft_comm_dup(weft_comm_t comm, weft_comm_t *newcomm)
{
    int rc = comm_check(comm, "weft_comm_dup");
    if (rc)
        return rc;
    uint32_t refusal = newcomm ? 0 : (uint32_t)comm->rank + 1, refused_by = 0;
    if (comm->x->ops->derive) {
        rc = agree_refusal(comm, refusal, &refused_by);
        if (!rc && !refused_by)
            return derive_comm(comm, 0, comm->rank, newcomm);
    } else {
        uint32_t ctx, first_call;
        bool board;
        member_allreduce_t ar = {parent_allreduce, parent_unread_pairs, comm, comm->x};
        rc = comm_agree_ctx(&ar, refusal, &refused_by, &ctx, &first_call, &board);
        if (!rc) {
            if ((rc = comm_create_shared(comm, comm->rank, comm->size, comm->world, ctx,
                                         first_call, board, newcomm)))
                return rc;
            if ((rc = shm_nodes(*newcomm)))
                comm_destroy(*newcomm), *newcomm = NULL;
            return rc;
        }
    }
    if (refusal)
        return weft_error(WEFT_EINVAL, "weft_comm_dup: newcomm is NULL");
    return refused_by ? comm_peer_refused("weft_comm_dup", refused_by, "it passed no newcomm") : rc;
}

typedef struct {
    int32_t color, key;
} split_entry_t;

/* A refusal in the split's allgather: the refused colour, and why in the
 * key (a colour of its own where the colour was fine). */
enum { SPLIT_BAD_COLOR = 0, SPLIT_NO_NEWCOMM = 1 };

static bool split_refused(const split_entry_t *e)
{
    return e->color < 0 && e->color != WEFT_UNDEFINED;
}

/* The first refusal in the allgather's entries, if any: WEFT_EPEER. */
static int split_refusal(const split_entry_t *all, int P)
{
    for (int r = 0; r < P; r++) {
        if (!split_refused(&all[r]))
            continue;
        char what[80];
        if (all[r].key == SPLIT_NO_NEWCOMM)
            snprintf(what, sizeof what, "it passed no newcomm");
        else
            snprintf(what, sizeof what, "colour %d, neither >= 0 nor WEFT_UNDEFINED", all[r].color);
        return comm_peer_refused("weft_comm_split", (uint32_t)r + 1, what);
    }
    return WEFT_OK;
}

/* This rank's own refusal, said once its part in the call is done. */
static int split_refused_here(const split_entry_t *me)
{
    if (me->key == SPLIT_NO_NEWCOMM)
        return weft_error(WEFT_EINVAL, "weft_comm_split: newcomm is NULL");
    return weft_error(WEFT_EINVAL, "weft_comm_split: color %d must be >= 0 or WEFT_UNDEFINED",
                      me->color);
}

weft_err_t weft_comm_split(weft_comm_t comm, int color, int key, weft_comm_t *newcomm)
{
    int rc = comm_check(comm, "weft_comm_split");
    if (rc)
        return rc;
    split_entry_t me = {color, key};
    if (color < 0 && color != WEFT_UNDEFINED)
        me.key = SPLIT_BAD_COLOR;
    else if (!newcomm)
        me = (split_entry_t){INT32_MIN, SPLIT_NO_NEWCOMM};
    bool refusing = split_refused(&me);
    if (comm->x->ops->derive) {
        uint32_t refused_by;
        rc = agree_refusal(comm, refusing ? (uint32_t)comm->rank + 1 : 0, &refused_by);
        if (refusing)
            return split_refused_here(&me);
        if (rc || refused_by)
            return rc ? rc
                      : comm_peer_refused("weft_comm_split", refused_by, "an argument of its own");
        return derive_comm(comm, color, key, newcomm);
    }
    int P = comm->size;
    split_entry_t *all = malloc((size_t)P * sizeof *all);
    if (!all) /* the peers wait for this rank's part: a hang only a time limit ends */
        return weft_error(WEFT_ENOMEM, "out of memory");
    rc = coll_run_own(comm, WEFT_COLL_ALLGATHER, &me, all, 2, WEFT_INT32, WEFT_SUM, false);
    if (refusing || (!rc && (rc = split_refusal(all, P)))) {
        free(all);
        if (refusing)
            return split_refused_here(&me);
        *newcomm = NULL;
        return rc;
    }
    uint32_t ctx = 0, first_call = 0;
    bool board = false;
    if (!rc)
        rc = agree_ctx(comm, &ctx, &first_call, &board);
    if (!rc && color == WEFT_UNDEFINED) /* held by the others' communicators */
        ctx_give_back(ctx, first_call, board);
    if (rc || color == WEFT_UNDEFINED) {
        free(all);
        *newcomm = NULL;
        return rc;
    }
    /* members of my colour ordered by (key, old rank): insertion sort keeps
     * it stable and P is small next to the cost of the allgather */
    int *order = malloc((size_t)P * sizeof *order), n = 0;
    if (!order) {
        free(all);
        ctx_give_back(ctx, first_call, board);
        return weft_error(WEFT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < P; i++) {
        if (all[i].color != color)
            continue;
        int j = n++;
        while (j > 0 && all[order[j - 1]].key > all[i].key) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    int newrank = -1;
    for (int i = 0; i < n; i++) {
        if (order[i] == comm->rank)
            newrank = i;
        order[i] = comm->world[order[i]];
    }
    rc = comm_create_shared(comm, newrank, n, order, ctx, first_call, board, newcomm);
    if (!rc && (rc = shm_nodes(*newcomm)))
        comm_destroy(*newcomm), *newcomm = NULL;
    free(order);
    free(all);
    return rc;
}

weft_err_t weft_comm_free(weft_comm_t *comm)
{
    if (!comm || !*comm)
        return weft_error(WEFT_EINVAL, "weft_comm_free: communicator is NULL");
    /* after weft_finalize only those made by weft_comm_from_mpi (and their
     * children) live on: the program's to free, as weft.h says */
    if (weft_g.finalized && !weft_g.initialized && !comm_is_live(*comm))
        return weft_error(WEFT_EINVAL, "weft_comm_free: weft_finalize has run, and freed the "
                                       "communicators the program left");
    if (*comm == weft_g.world && weft_g.world)
        return weft_error(WEFT_EINVAL, "weft_comm_free: the world communicator is freed by "
                                       "weft_finalize");
    if (fork_refused("weft_comm_free"))
        return WEFT_EINVAL;
    if ((*comm)->active)
        return weft_error(WEFT_EBUSY,
                          "weft_comm_free: %d %s unfinished on it (split-phase requests or "
                          "*_timeout calls): finish them first",
                          (*comm)->active,
                          (*comm)->active == 1 ? "collective is" : "collectives are");
    comm_destroy(*comm);
    *comm = NULL;
    return WEFT_OK;
}

const char *weft_last_algorithm(weft_comm_t comm, weft_coll_t coll)
{
    return comm && (unsigned)coll < WEFT_COLL_COUNT ? comm->last[coll] : NULL;
}

const char *comm_last_choice(weft_comm_t comm, weft_coll_t coll)
{
    return comm && (unsigned)coll < WEFT_COLL_COUNT ? comm->last_choice[coll] : NULL;
}

void comm_node_cores(weft_comm_t comm, int *ranks, int *cores)
{
    *ranks = comm ? comm->x->local_size : 0;
    *cores = comm ? comm->x->cores : 0;
}

weft_err_t weft_set_algorithm(weft_comm_t comm, weft_coll_t coll, const char *name,
                              const char *params)
{
    int rc = comm_check(comm, "weft_set_algorithm");
    if (rc)
        return rc;
    algo_choice_t ch;
    if ((rc = config_choice(coll, name, params, &ch)))
        return rc;
    comm->choice[coll] = ch;
    comm->memo[coll].keep = false;
    return WEFT_OK;
}
