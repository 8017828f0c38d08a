/* shape.c — one copy of each distinct program, shared by every rank that
 * runs it with other peers (shape.h says why).  Two ranks share a shape
 * when their programs are equal byte for byte once each peer is replaced
 * by its slot, the order in which the program first names it: exact, so
 * the simulation is the one private programs give. */
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "shape.h"

/* The operations, the successor table and the round starts: one
 * contiguous block (prog.c). */
static size_t body_bytes(const sim_prog_t *p)
{
    return (size_t)p->nops * sizeof(sim_op_t) + ((size_t)p->nops + 1 + p->nedges) * 4 +
           (p->nrounds ? ((size_t)p->nrounds + 1) * 4 : 0);
}

/* Four independent lanes of 8 bytes: a single multiply-shift chain was
 * bound by its own latency, about a cycle a byte, and a program of
 * recursive doubling at 2^20 ranks is some 3.6 KB hashed for every rank
 * that starts (the run's largest cost outside the events). */
static uint64_t hash_bytes(const void *v, size_t n)
{
    const unsigned char *b = v;
    uint64_t h[4] = {0x9E3779B97F4A7C15ull ^ n, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                     0x27D4EB2F165667C5ull},
             w;
    for (; n >= 32; b += 32, n -= 32)
        for (int l = 0; l < 4; l++) {
            memcpy(&w, b + 8 * l, 8);
            h[l] = (h[l] ^ w) * 0xFF51AFD7ED558CCDull;
            h[l] ^= h[l] >> 29;
        }
    uint64_t x = h[0] ^ (h[1] * 0x9E3779B97F4A7C15ull) ^ (h[2] * 0xC2B2AE3D27D4EB4Full) ^
                 (h[3] * 0x165667B19E3779F9ull);
    for (; n >= 8; b += 8, n -= 8) {
        memcpy(&w, b, 8);
        x = (x ^ w) * 0xFF51AFD7ED558CCDull;
        x ^= x >> 29;
    }
    for (; n; n--)
        x = (x ^ *b++) * 0x100000001B3ull;
    x ^= x >> 33;
    return x * 0xC4CEB9FE1A85EC53ull;
}

/* Rewrites the program's peers as slots, the slots' ranks into peers[];
 * the number of peers, or SHAPE_NIL (program as it was) above
 * SHAPE_MAX_PEERS: then the slots written so far are turned back into
 * ranks. */
static uint32_t to_slots(sim_prog_t *p, uint32_t *peers)
{
    uint32_t np = 0, last = SHAPE_NIL, k = 0;
    for (uint32_t i = 0; i < p->nops; i++) {
        sim_op_t *op = &p->ops[i];
        if (op->kind == SIM_CALC)
            continue;
        uint32_t peer = (uint32_t)op->peer;
        if (peer != last) {
            for (k = 0; k < np && peers[k] != peer; k++)
                ;
            if (k == np) {
                if (np == SHAPE_MAX_PEERS) {
                    for (uint32_t j = 0; j < i; j++)
                        if (p->ops[j].kind != SIM_CALC)
                            p->ops[j].peer = (int32_t)peers[p->ops[j].peer];
                    return SHAPE_NIL;
                }
                peers[np++] = peer;
            }
            last = peer;
        }
        op->peer = (int32_t)k;
    }
    return np;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The first of n sorted values not below key (n when none is).  Without
 * branches on the data: each message searches its rank's peers and keys,
 * and a branching search mispredicted at every level (13.5 % of a
 * 2^20-rank recursive doubling's time; 3.3 % without). */
static uint32_t lower_bound(const uint64_t *v, uint32_t n, uint64_t key)
{
    if (!n)
        return 0;
    const uint64_t *base = v;
    while (n > 1) {
        uint32_t half = n / 2;
        base = base[half - 1] < key ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - v) + (*base < key);
}

static uint32_t key_index(const sim_prog_t *p, uint64_t key)
{
    uint32_t lo = lower_bound(p->rkeys, p->nkeys, key);
    return lo < p->nkeys && p->rkeys[lo] == key ? lo : SHAPE_NIL;
}

static uint64_t op_key(const sim_op_t *op) { return (uint64_t)(uint32_t)op->peer << 32 | op->tag; }

/* The distinct (peer, tag) keys of the receives, sorted, and what each
 * key's receives are (kinfo: the receive's op when it is the key's only
 * one, else SHAPE_MULTI and the key's number among such keys), appended
 * to the program's block. */
static int index_receives(sim_shape_t *sh)
{
    sim_prog_t *p = &sh->p;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < p->nops; i++)
        nr += p->ops[i].kind == SIM_RECV;
    p->nkeys = 0;
    p->rkeys = NULL;
    if (!nr)
        return 0;
    uint64_t *k = malloc((size_t)nr * sizeof *k);
    if (!k)
        return WEFT_ENOMEM;
    nr = 0;
    for (uint32_t i = 0; i < p->nops; i++)
        if (p->ops[i].kind == SIM_RECV)
            k[nr++] = op_key(&p->ops[i]);
    qsort(k, nr, sizeof *k, by_u64);
    uint32_t nk = 0;
    for (uint32_t j = 0; j < nr; j++)
        if (!nk || k[j] != k[nk - 1])
            k[nk++] = k[j];
    size_t base = (body_bytes(p) + 7) & ~(size_t)7;
    char *mem = realloc(p->ops, base + (size_t)nk * 12);
    if (!mem) {
        free(k);
        return WEFT_ENOMEM;
    }
    p->ops = (sim_op_t *)mem;
    p->succ_first = (uint32_t *)(mem + (size_t)p->nops * sizeof(sim_op_t));
    p->succ = p->succ_first + p->nops + 1;
    if (p->nrounds)
        p->round_first = p->succ + p->nedges;
    p->rkeys = (uint64_t *)(mem + base);
    p->nkeys = nk;
    memcpy(p->rkeys, k, (size_t)nk * 8);
    free(k);
    uint32_t *kinfo = (uint32_t *)(p->rkeys + nk);
    memset(kinfo, 0xff, (size_t)nk * 4);
    sh->kinfo = kinfo, sh->nmulti = 0;
    for (uint32_t i = 0; i < p->nops; i++) {
        if (p->ops[i].kind != SIM_RECV)
            continue;
        uint32_t j = key_index(p, op_key(&p->ops[i]));
        if (kinfo[j] == SHAPE_NIL)
            kinfo[j] = i;
        else if (!(kinfo[j] & SHAPE_MULTI))
            kinfo[j] = SHAPE_MULTI | sh->nmulti++;
    }
    return 0;
}

static sim_shape_t *lookup(const sim_shapes_t *t, const sim_prog_t *p, uint64_t h)
{
    if (!t->nbucket)
        return NULL;
    for (sim_shape_t *sh = t->bucket[h & (t->nbucket - 1)]; sh; sh = sh->next)
        if (sh->hash == h && sh->p.nops == p->nops && sh->p.nedges == p->nedges &&
            sh->p.nrounds == p->nrounds &&
            !memcmp(sh->p.ops, p->ops, body_bytes(p)))
            return sh;
    return NULL;
}

static void table_insert(sim_shapes_t *t, sim_shape_t *sh)
{
    if (t->count >= t->nbucket) {
        size_t nb = t->nbucket ? t->nbucket * 2 : 256;
        sim_shape_t **b = calloc(nb, sizeof *b);
        if (!b)
            return; /* then it stays private: correct, only not shared */
        for (size_t i = 0; i < t->nbucket; i++)
            for (sim_shape_t *x = t->bucket[i], *nx; x; x = nx) {
                nx = x->next;
                x->next = b[x->hash & (nb - 1)];
                b[x->hash & (nb - 1)] = x;
            }
        free(t->bucket);
        t->bucket = b, t->nbucket = nb;
    }
    sim_shape_t **head = &t->bucket[sh->hash & (t->nbucket - 1)];
    sh->next = *head;
    *head = sh;
    sh->tabled = true;
    t->count++;
}

static void table_remove(sim_shapes_t *t, sim_shape_t *sh)
{
    sim_shape_t **x = &t->bucket[sh->hash & (t->nbucket - 1)];
    while (*x != sh)
        x = &(*x)->next;
    *x = sh->next;
    t->count--;
}

/* Where a rank's sorted (rank, slot) pairs start in its block, in words
 * (8-aligned): after its states, FIFOs and peers. */
static size_t pairs_at(const sim_shape_t *sh, uint32_t npeers)
{
    return ((size_t)rp_code_words(sh->p.nops) + 2 * (size_t)sh->nmulti + npeers + 1) &
           ~(size_t)1;
}

static size_t mem_words(const sim_shape_t *sh, uint32_t npeers)
{
    return npeers > 8 ? pairs_at(sh, npeers) + 2 * (size_t)npeers
                      : (size_t)rp_code_words(sh->p.nops) + 2 * (size_t)sh->nmulti + npeers;
}

static uint64_t *sorted_pairs(const sim_rank_prog_t *rp)
{
    return (uint64_t *)(rp->mem + pairs_at(rp->sh, rp->npeers));
}

/* Slab k's size: 64 KiB doubling to SHAPE_SLAB, so that a small run does
 * not take (and zero) a huge page for a few blocks. */
static size_t slab_bytes(size_t k)
{
    return k >= 5 ? SHAPE_SLAB : (size_t)64 << 10 << k;
}

/* A rank's block of n bytes (n >= 1); what it costs goes into *bytes (a
 * slab when one is carved: blocks given back stay held). */
static void *block_get(sim_shapes_t *t, size_t n, ssize_t *bytes)
{
    if (n > SHAPE_SLAB_MAX) {
        void *b = malloc(n);
        if (b)
            *bytes += (ssize_t)n;
        return b;
    }
    size_t c = (n + 15) / 16 - 1, size = (c + 1) * 16;
    void *b = t->free_block[c];
    if (b) {
        memcpy(&t->free_block[c], b, sizeof b);
        return b;
    }
    if (t->slab_left < size) {
        if (t->nslabs == t->slabcap) {
            size_t nc = t->slabcap ? t->slabcap * 2 : 64;
            void **v = realloc(t->slabs, nc * sizeof *v);
            if (!v)
                return NULL;
            t->slabs = v, t->slabcap = nc;
        }
        size_t len = slab_bytes(t->nslabs);
        char *slab = big_alloc(len);
        if (!slab)
            return NULL;
        *bytes += (ssize_t)len;
        t->slabs[t->nslabs++] = slab;
        t->slab_next = slab, t->slab_left = len;
    }
    b = t->slab_next;
    t->slab_next += size, t->slab_left -= size;
    return b;
}

static void block_put(sim_shapes_t *t, void *b, size_t n, ssize_t *bytes)
{
    if (n > SHAPE_SLAB_MAX) {
        free(b);
        *bytes -= (ssize_t)n;
        return;
    }
    size_t c = (n + 15) / 16 - 1;
    memcpy(b, &t->free_block[c], sizeof b);
    t->free_block[c] = b;
}

static int rank_state(sim_shapes_t *t, sim_rank_prog_t *rp, const uint32_t *peers,
                      ssize_t *bytes)
{
    const sim_shape_t *sh = rp->sh;
    size_t words = mem_words(sh, rp->npeers);
    rp->mem = block_get(t, words ? words * 4 : 4, bytes);
    if (!rp->mem)
        return WEFT_ENOMEM;
    memset(rp->mem, 0, (size_t)rp_code_words(sh->p.nops) * 4);
    for (uint32_t i = 0; i < sh->p.nops; i++)
        if (!sh->p.ops[i].pending)
            rp_set_state(rp, i, SHAPE_ZERO);
    rp->round = 0;
    rp->round_left = sh->p.nrounds ? sim_round_steps(&sh->p, 0) : 0;
    memset(rp_mhead(rp), 0xff, (size_t)sh->nmulti * 8);
    memcpy((uint32_t *)rp_peers(rp), peers, (size_t)rp->npeers * 4);
    if (rp->npeers > 8) {
        uint64_t *pairs = sorted_pairs(rp);
        /* at most SHAPE_MAX_PEERS: an insertion sort beats qsort's calls */
        for (uint32_t k = 0; k < rp->npeers; k++) {
            uint64_t v = (uint64_t)peers[k] << 32 | k;
            uint32_t j = k;
            for (; j > 0 && pairs[j - 1] > v; j--)
                pairs[j] = pairs[j - 1];
            pairs[j] = v;
        }
    }
    return 0;
}

static int adopt(sim_shapes_t *t, sim_prog_t *built, sim_rank_prog_t *rp, ssize_t *bytes,
                 bool share)
{
    uint32_t peers[SHAPE_MAX_PEERS];
    uint32_t np = share ? to_slots(built, peers) : SHAPE_NIL;
    bool slotted = np != SHAPE_NIL;
    if (!slotted)
        np = 0;
    uint64_t h = hash_bytes(built->ops, body_bytes(built));
    sim_shape_t *sh = slotted ? lookup(t, built, h) : NULL;
    if (sh) {
        sim_prog_free(built);
        sh->shared = true;
        if (!sh->refs)
            t->idle_bytes -= sh->bytes;
    } else {
        sh = calloc(1, sizeof *sh);
        if (!sh)
            return WEFT_ENOMEM;
        sh->p = *built;
        if (index_receives(sh)) {
            *built = sh->p;
            free(sh);
            return WEFT_ENOMEM;
        }
        memset(built, 0, sizeof *built);
        sh->hash = h, sh->slotted = slotted;
        sh->bytes = sizeof *sh + sim_prog_bytes(&sh->p) + (size_t)sh->p.nkeys * 4;
        *bytes += (ssize_t)sh->bytes;
        if (slotted)
            table_insert(t, sh);
    }
    sh->refs++;
    rp->sh = sh, rp->npeers = np;
    if (rank_state(t, rp, peers, bytes)) {
        sim_shape_release(t, rp, bytes);
        return WEFT_ENOMEM;
    }
    return 0;
}

int sim_shape_adopt(sim_shapes_t *t, sim_prog_t *built, sim_rank_prog_t *rp, ssize_t *bytes)
{
    return adopt(t, built, rp, bytes, true);
}

int sim_shape_adopt_private(sim_shapes_t *t, sim_prog_t *built, sim_rank_prog_t *rp,
                            ssize_t *bytes)
{
    return adopt(t, built, rp, bytes, false);
}

void sim_shape_release(sim_shapes_t *t, sim_rank_prog_t *rp, ssize_t *bytes)
{
    sim_shape_t *sh = rp->sh;
    if (!sh)
        return;
    if (rp->mem) {
        size_t words = mem_words(sh, rp->npeers);
        block_put(t, rp->mem, words ? words * 4 : 4, bytes);
    }
    bool keep = sh->tabled && sh->shared && t->idle_bytes + sh->bytes <= SHAPE_IDLE_MAX;
    if (--sh->refs == 0 && keep) {
        t->idle_bytes += sh->bytes;
    } else if (sh->refs == 0) {
        if (sh->tabled)
            table_remove(t, sh);
        *bytes -= (ssize_t)sh->bytes;
        sim_prog_free(&sh->p);
        free(sh);
    }
    memset(rp, 0, sizeof *rp);
}

void sim_shapes_free(sim_shapes_t *t)
{
    for (size_t i = 0; i < t->nbucket; i++)
        for (sim_shape_t *x = t->bucket[i], *nx; x; x = nx) {
            nx = x->next;
            sim_prog_free(&x->p);
            free(x);
        }
    free(t->bucket);
    for (size_t i = 0; i < t->nslabs; i++)
        big_free(t->slabs[i], slab_bytes(i));
    free(t->slabs);
    memset(t, 0, sizeof *t);
}

uint32_t rp_key_find(const sim_rank_prog_t *rp, uint32_t src, uint32_t tag)
{
    const sim_prog_t *p = &rp->sh->p;
    if (!p->nkeys)
        return SHAPE_NIL;
    uint32_t slot = src;
    if (rp->sh->slotted) {
        const uint32_t *peers = rp_peers(rp);
        if (rp->npeers <= 8) {
            for (slot = 0; slot < rp->npeers && peers[slot] != src; slot++)
                ;
        } else {
            const uint64_t *pairs = sorted_pairs(rp);
            uint32_t lo = lower_bound(pairs, rp->npeers, (uint64_t)src << 32);
            slot = lo < rp->npeers && pairs[lo] >> 32 == src ? (uint32_t)pairs[lo] : rp->npeers;
        }
        if (slot == rp->npeers)
            return SHAPE_NIL;
    }
    return key_index(p, (uint64_t)slot << 32 | tag);
}
