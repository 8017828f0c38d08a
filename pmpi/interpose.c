/* interpose.c — libweft-mpi.so, a drop-in for unmodified MPI programs.
 *
 * LD_PRELOAD it (or link it before the MPI library) and MPI_Allreduce,
 * MPI_Bcast, MPI_Reduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Barrier
 * and, where every block has one size, MPI_Reduce_scatter and
 * MPI_Allgatherv run weft's algorithms.  Everything weft does not handle goes
 * to the MPI library's own PMPI_ entry point: mixed-type signatures,
 * MINLOC/MAXLOC, long double, intercommunicators, ops on types MPI does
 * not define them for, arguments the MPI library must reject (so errors
 * reach the communicator's error handler exactly as without the drop-in).
 * WEFT_VERBOSE=1 prints, at MPI_Finalize, per rank, how many calls weft
 * served and why the others fell back.
 *
 * One weft communicator per MPI communicator is cached as an attribute whose
 * delete callback frees it, so MPI_Comm_free releases it.  User ops are
 * recorded at MPI_Op_create (MPI offers no way to get the function back from
 * an MPI_Op) and wrapped as weft user ops with the op's commutativity.
 *
 * MPI_Alloc_mem hands out weft's shared arena (weft_alloc), which peers on
 * the same node read in place: a program that allocates its buffers that
 * way (as MPI advises for one-sided and fast paths) gets weft's zero-copy
 * path unchanged.  MPI_Free_mem gives arena blocks back to weft and the
 * rest to MPI.
 *
 * These are the C entry points; fortran.c takes a Fortran program's calls
 * to them, which Open MPI's Fortran bindings would send straight to PMPI_. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "weft.h"
#include "weft_mpi.h"

#include "arena_malloc.h"
#include "dropin.h"

/* ---- statistics ---- */

enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_RSB, C_RS, C_ALLGATHER, C_ALLGATHERV, C_BARRIER, C_N };
static const char *const cname[C_N] = {"MPI_Allreduce",      "MPI_Bcast",
                                       "MPI_Reduce",         "MPI_Reduce_scatter_block",
                                       "MPI_Reduce_scatter", "MPI_Allgather",
                                       "MPI_Allgatherv",     "MPI_Barrier"};
enum { F_DTYPE, F_OP, F_INTER, F_ARGS, F_ERROR, F_UNEQUAL, F_N };
static const char *const fname[F_N] = {"unsupported datatype", "unsupported op",
                                       "intercommunicator", "arguments for MPI to check",
                                       "weft could not build a communicator",
                                       "with unequal blocks"};
/* Threads of an MPI_THREAD_MULTIPLE program count into these at once: each
 * update is atomic (a plain ++ lost counts with four threads). */
static long served[C_N], fallback[C_N][F_N];
static int verbose = -1;

static long count_one(long *counter) { return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

static int is_verbose(void)
{
    int v = __atomic_load_n(&verbose, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("WEFT_VERBOSE");
        v = e && *e && strcmp(e, "0");
        __atomic_store_n(&verbose, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* ---- datatypes ---- */

/* The predefined types weft maps, C's and Fortran's (INTEGER, REAL,
 * DOUBLE PRECISION and their sized kin): C programs may pass Fortran types
 * too, and the Fortran bindings (fortran.c) pass nothing else.  A type is
 * mapped by its size, which the MPI library knows (INTEGER is 8 bytes under
 * -fdefault-integer-8); a size weft has no type for is not mapped.  A
 * Fortran type the library was built without is MPI_DATATYPE_NULL or has
 * size 0: never mapped. */
typedef struct known_type {
    MPI_Datatype mpi;
    int is_signed, is_float, fortran;
} known_type_t;

static const known_type_t *known_type(MPI_Datatype dt)
{
    static const known_type_t known[] = {
        {MPI_CHAR, 1, 0, 0},          {MPI_SIGNED_CHAR, 1, 0, 0}, {MPI_UNSIGNED_CHAR, 0, 0, 0},
        {MPI_BYTE, 0, 0, 0},          {MPI_SHORT, 1, 0, 0},       {MPI_UNSIGNED_SHORT, 0, 0, 0},
        {MPI_INT, 1, 0, 0},           {MPI_UNSIGNED, 0, 0, 0},    {MPI_LONG, 1, 0, 0},
        {MPI_UNSIGNED_LONG, 0, 0, 0}, {MPI_LONG_LONG, 1, 0, 0},   {MPI_LONG_LONG_INT, 1, 0, 0},
        {MPI_UNSIGNED_LONG_LONG, 0, 0, 0},
        {MPI_INT8_T, 1, 0, 0},        {MPI_INT16_T, 1, 0, 0},     {MPI_INT32_T, 1, 0, 0},
        {MPI_INT64_T, 1, 0, 0},       {MPI_UINT8_T, 0, 0, 0},     {MPI_UINT16_T, 0, 0, 0},
        {MPI_UINT32_T, 0, 0, 0},      {MPI_UINT64_T, 0, 0, 0},    {MPI_FLOAT, 1, 1, 0},
        {MPI_DOUBLE, 1, 1, 0},
        {MPI_INTEGER, 1, 0, 1},       {MPI_INTEGER1, 1, 0, 1},    {MPI_INTEGER2, 1, 0, 1},
        {MPI_INTEGER4, 1, 0, 1},      {MPI_INTEGER8, 1, 0, 1},    {MPI_REAL, 1, 1, 1},
        {MPI_REAL4, 1, 1, 1},         {MPI_REAL8, 1, 1, 1},       {MPI_DOUBLE_PRECISION, 1, 1, 1},
    };
    if (dt == MPI_DATATYPE_NULL)
        return NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].mpi == dt)
            return &known[i];
    return NULL;
}

static int map_dtype_scan(MPI_Datatype dt, weft_dtype_t *out)
{
    const known_type_t *k = known_type(dt);
    if (!k)
        return 0;
    int size = 0;
    PMPI_Type_size(dt, &size);
    if (k->is_float) {
        *out = size == 4 ? WEFT_FLOAT32 : WEFT_FLOAT64;
        return size == 4 || size == 8;
    }
    switch (size) {
    case 1: *out = k->is_signed ? WEFT_INT8 : WEFT_UINT8; return 1;
    case 2: *out = k->is_signed ? WEFT_INT16 : WEFT_UINT16; return 1;
    case 4: *out = k->is_signed ? WEFT_INT32 : WEFT_UINT32; return 1;
    case 8: *out = k->is_signed ? WEFT_INT64 : WEFT_UINT64; return 1;
    default: return 0;
    }
}

/* The last predefined type each thread mapped: a loop of calls on one
 * type skips the scan above (predefined handles live as long as MPI). */
static _Thread_local struct {
    MPI_Datatype mpi;
    weft_dtype_t w;
} last_dtype = {MPI_DATATYPE_NULL, WEFT_INT8};

static int map_dtype(MPI_Datatype dt, weft_dtype_t *out)
{
    if (dt == last_dtype.mpi && dt != MPI_DATATYPE_NULL) {
        *out = last_dtype.w;
        return 1;
    }
    if (!map_dtype_scan(dt, out))
        return 0;
    last_dtype.mpi = dt, last_dtype.w = *out;
    return 1;
}

/* ---- type signatures (bcast, allgather) ----
 * Ranks may pass different datatypes to MPI_Bcast and MPI_Allgather as long
 * as the type signatures agree (the root four MPI_INT, the others one
 * contiguous type of four MPI_INT).  So the choice between weft and the MPI
 * library is made from the signature, which every rank shares: count x dt
 * that is n elements of one predefined type weft maps goes to weft on every
 * rank, whatever the layout (a non-contiguous one is packed and unpacked
 * around the call); any other signature goes to PMPI on every rank. */

typedef struct typesig {
    weft_dtype_t wdt;
    MPI_Datatype base;
    size_t n;          /* elements of base */
    MPI_Aint offset;   /* where the data start, when contiguous */
    int contiguous;
} typesig_t;

/* ---- whether a type's data lie in type-map order ----
 * A type is served in place only where its bytes tile [true lb, true lb +
 * size) in the order of its type map, which is the order of the signature:
 * a struct of two ints at displacements 4 and 0 has no holes, but its
 * first element is the int at 4, and a rank passing two MPI_INT must
 * receive them swapped.  (Its true extent equals its size, so that test
 * alone served it in place, wrongly.)  Decoded from the type's
 * constructor, recursively; constructors not decoded here (subarray,
 * darray, the Fortran ones) are taken as out of order, which is always
 * right: the data are then packed in type-map order by MPI itself. */

typedef struct kid {
    int in_order; /* one copy's bytes tile [tlb, tlb + size) in type-map order */
    int size;
    MPI_Aint ext, tlb;
} kid_t;

typedef struct chain {
    int in_order, started;
    MPI_Aint next; /* the byte after the last block */
} chain_t;

/* bl copies of kid k at byte displacement d, the next block of the type
 * map: in order while each block starts where the last ended */
static void chain_copies(chain_t *c, const kid_t *k, MPI_Aint d, MPI_Aint bl)
{
    if (bl <= 0 || k->size == 0)
        return;
    if (!k->in_order || (bl > 1 && k->ext != k->size)) {
        c->in_order = 0;
        return;
    }
    MPI_Aint start = d + k->tlb;
    if (c->started && start != c->next)
        c->in_order = 0;
    c->started = 1;
    c->next = start + bl * (MPI_Aint)k->size;
}

static int layout_in_order(int comb, const int *ints, const MPI_Aint *addrs, const kid_t *kids)
{
    chain_t c = {1, 0, 0};
    const kid_t *k = &kids[0];
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* the type map is the old type's */
        return k->in_order;
    case MPI_COMBINER_CONTIGUOUS:
        chain_copies(&c, k, 0, ints[0]);
        break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: { /* count blocks of bl, stride apart */
        MPI_Aint stride = comb == MPI_COMBINER_VECTOR ? ints[2] * k->ext : addrs[0];
        chain_copies(&c, k, 0, ints[1]);
        if (ints[0] > 1 && ints[1] > 0 && k->size > 0)
            chain_copies(&c, k, stride, ints[1]); /* the rest follow as the second does */
        break;
    }
    case MPI_COMBINER_INDEXED:
        for (int i = 0; i < ints[0]; i++)
            chain_copies(&c, k, ints[1 + ints[0] + i] * k->ext, ints[1 + i]);
        break;
    case MPI_COMBINER_HINDEXED:
        for (int i = 0; i < ints[0]; i++)
            chain_copies(&c, k, addrs[i], ints[1 + i]);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        for (int i = 0; i < ints[0]; i++)
            chain_copies(&c, k, ints[2 + i] * k->ext, ints[1]);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (int i = 0; i < ints[0]; i++)
            chain_copies(&c, k, addrs[i], ints[1]);
        break;
    case MPI_COMBINER_STRUCT:
        for (int i = 0; i < ints[0]; i++)
            chain_copies(&c, &kids[i], addrs[i], ints[1 + i]);
        break;
    default:
        return 0;
    }
    return c.in_order;
}

static void free_derived(MPI_Datatype *t)
{
    int ni, na, nd, comb;
    PMPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        PMPI_Type_free(t);
}

/* The one predefined type dt is made of, or MPI_DATATYPE_NULL; *in_order
 * says whether its data lie in type-map order (above). */
static MPI_Datatype base_of(MPI_Datatype dt, int depth, int *in_order)
{
    int ni = 0, na = 0, nd = 0, comb = 0;
    *in_order = 0;
    if (depth > 16 || PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return MPI_DATATYPE_NULL;
    if (comb == MPI_COMBINER_NAMED) {
        weft_dtype_t w;
        *in_order = 1;
        if (dt == MPI_2INT)
            return MPI_INT; /* the pair of int: signature (int, int) */
        return map_dtype(dt, &w) ? dt : MPI_DATATYPE_NULL;
    }
    int *ints = malloc(((size_t)ni + 1) * sizeof *ints);
    MPI_Aint *addrs = malloc(((size_t)na + 1) * sizeof *addrs);
    MPI_Datatype *types = malloc(((size_t)nd + 1) * sizeof *types), base = MPI_DATATYPE_NULL;
    kid_t *kids = malloc(((size_t)nd + 1) * sizeof *kids);
    if (ints && addrs && types && kids &&
        PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, types) == MPI_SUCCESS) {
        for (int k = 0; k < nd; k++) {
            MPI_Datatype b = base_of(types[k], depth + 1, &kids[k].in_order);
            base = k == 0 || b == base ? b : MPI_DATATYPE_NULL;
            if (base == MPI_DATATYPE_NULL)
                break;
            MPI_Aint lb, text;
            PMPI_Type_size(types[k], &kids[k].size);
            PMPI_Type_get_extent(types[k], &lb, &kids[k].ext);
            PMPI_Type_get_true_extent(types[k], &kids[k].tlb, &text);
        }
        if (base != MPI_DATATYPE_NULL && nd > 0)
            *in_order = layout_in_order(comb, ints, addrs, kids);
        for (int j = 0; j < nd; j++)
            free_derived(&types[j]);
    }
    free(ints), free(addrs), free(types), free(kids);
    return base;
}

/* What a call needs of its datatype beyond the count: the one predefined
 * type it is made of (MPI_DATATYPE_NULL if none) and its layout. */
typedef struct type_shape {
    MPI_Datatype base;
    int in_order, size;
    MPI_Aint extent, tlb, textent;
} type_shape_t;

static void decode_shape(MPI_Datatype dt, type_shape_t *s)
{
    MPI_Aint lb;
    s->base = base_of(dt, 0, &s->in_order);
    PMPI_Type_size(dt, &s->size);
    PMPI_Type_get_extent(dt, &lb, &s->extent);
    PMPI_Type_get_true_extent(dt, &s->tlb, &s->textent);
}

/* ---- a derived type's shape, cached on the type ----
 * Decoding a derived type's constructors on every call cost a small bcast
 * through a contiguous type of two ints 50-60 ns at its root (0.36 against
 * 0.30 us, 2 ranks; docs/MPI.md).  The shape is
 * kept as an attribute of the type, whose delete callback MPI runs when the
 * type is freed: a handle MPI gives again to a later type cannot find a
 * stale shape.  An attribute is set once, under a lock, and never replaced,
 * so a thread that found one reads it while the type lives; it goes only
 * at MPI_Type_free, when by MPI's rules no call is using the type. */
static int type_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t type_keyval_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t type_shape_lock = PTHREAD_MUTEX_INITIALIZER;

static int delete_shape(MPI_Datatype dt, int key, void *val, void *extra)
{
    (void)dt, (void)key, (void)extra;
    free(val);
    return MPI_SUCCESS;
}

static void create_type_keyval(void)
{
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_shape, &type_keyval, NULL) !=
        MPI_SUCCESS)
        type_keyval = MPI_KEYVAL_INVALID;
}

static void cache_shape(MPI_Datatype dt, const type_shape_t *s)
{
    void *val;
    int flag = 0;
    pthread_mutex_lock(&type_shape_lock);
    PMPI_Type_get_attr(dt, type_keyval, &val, &flag);
    type_shape_t *copy = flag ? NULL : malloc(sizeof *copy);
    if (copy) {
        *copy = *s;
        if (PMPI_Type_set_attr(dt, type_keyval, copy) != MPI_SUCCESS)
            free(copy);
    }
    pthread_mutex_unlock(&type_shape_lock);
}

/* A predefined type weft maps, or the pair of ints: no holes, lower bound
 * 0, nothing to ask MPI. */
static void predefined_shape(MPI_Datatype dt, weft_dtype_t w, type_shape_t *s)
{
    s->base = dt == MPI_2INT ? MPI_INT : dt;
    s->in_order = 1;
    s->size = dt == MPI_2INT ? 2 * (int)sizeof(int) : (int)weft_dtype_size(w);
    s->extent = s->textent = s->size;
    s->tlb = 0;
}

static int shape_of(MPI_Datatype dt, type_shape_t *s)
{
    weft_dtype_t w = WEFT_INT32;
    int ni, na, nd, comb;
    /* the type this thread mapped last: a loop of calls on one type */
    if (dt == MPI_2INT || (dt == last_dtype.mpi && map_dtype(dt, &w))) {
        predefined_shape(dt, w, s);
        return 1;
    }
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED) {
        if (map_dtype(dt, &w))
            predefined_shape(dt, w, s);
        else
            s->base = MPI_DATATYPE_NULL; /* not one weft serves */
        return 1;
    }
    pthread_once(&type_keyval_once, create_type_keyval);
    if (type_keyval != MPI_KEYVAL_INVALID) {
        void *val;
        int flag = 0;
        if (PMPI_Type_get_attr(dt, type_keyval, &val, &flag) == MPI_SUCCESS && flag) {
            *s = *(const type_shape_t *)val;
            return 1;
        }
    }
    decode_shape(dt, s);
    if (type_keyval != MPI_KEYVAL_INVALID)
        cache_shape(dt, s);
    return 1;
}

static int signature(MPI_Datatype dt, int count, typesig_t *t)
{
    type_shape_t s;
    if (dt == MPI_DATATYPE_NULL || count < 0 || !shape_of(dt, &s))
        return 0;
    t->base = s.base;
    if (t->base == MPI_DATATYPE_NULL || !map_dtype(t->base, &t->wdt))
        return 0;
    int bsize = (int)weft_dtype_size(t->wdt);
    if (bsize <= 0 || s.size % bsize)
        return 0;
    t->n = (size_t)count * (size_t)(s.size / bsize);
    if (t->n > INT32_MAX)
        return 0; /* packing takes an int count; n is the same on every rank */
    t->offset = s.tlb;
    t->contiguous = s.in_order && s.textent == s.size && (count <= 1 || s.extent == s.size);
    return 1;
}

/* *data: a contiguous buffer of the signature's elements, the caller's own
 * (NULL when the caller passed NULL for no data, as MPI allows) or a packed
 * copy (copy_in: with the data of buf).  0 when the copy cannot be had.
 * Free with sig_release.  MPI_BOTTOM is a null pointer in Open MPI and
 * MPICH: with a type of absolute addresses (from MPI_Get_address) the data
 * start at the type's lower bound itself. */
static int sig_buffer(const typesig_t *t, void *buf, int count, MPI_Datatype dt, int copy_in,
                      void **data)
{
    if (t->contiguous) {
        *data = buf || t->offset ? (void *)((uintptr_t)buf + (uintptr_t)t->offset) : NULL;
        return 1;
    }
    void *tmp = malloc(t->n * weft_dtype_size(t->wdt) + 1);
    if (tmp && copy_in)
        PMPI_Sendrecv(buf, count, dt, 0, 0, tmp, (int)t->n, t->base, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
    *data = tmp;
    return tmp != NULL;
}

static void sig_release(const typesig_t *t, void *tmp, void *buf, int count, MPI_Datatype dt,
                        int copy_out)
{
    if (t->contiguous)
        return;
    if (copy_out)
        PMPI_Sendrecv(tmp, (int)t->n, t->base, 0, 0, buf, count, dt, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
    free(tmp);
}

/* The drop-in's own message for its next error (raise_error), where the
 * failure is not weft's and weft_last_error() would say something older. */
static _Thread_local char own_error[160];

/* The packed copy could not be allocated. */
static weft_err_t nomem(int c, const typesig_t *t)
{
    snprintf(own_error, sizeof own_error,
             "no memory to pack %zu elements of a non-contiguous type", t->n);
    (void)c;
    return WEFT_ENOMEM;
}

/* ---- ops ---- */

typedef struct user_op {
    MPI_Op mpi;
    void (*fn)(void); /* MPI_User_function, or a Fortran one (fortran) */
    int commute, fortran;
    weft_op_t wop; /* -1 until first use */
    struct user_op *next;
} user_op_t;

static user_op_t *user_ops;
static pthread_mutex_t ops_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local MPI_Datatype current_dtype; /* the call's datatype */

/* A Fortran op takes its length and datatype as Fortran integers, by
 * reference, as the MPI library calls it. */
typedef void fortran_user_fn(void *in, void *inout, MPI_Fint *len, MPI_Fint *dt);

static void trampoline(const void *in, void *inout, size_t count, weft_dtype_t dt, void *ctx)
{
    user_op_t *u = ctx;
    (void)dt;
    int size = 0;
    PMPI_Type_size(current_dtype, &size);
    while (count) { /* MPI's length is an int */
        int len = count > (size_t)INT32_MAX ? INT32_MAX : (int)count;
        if (u->fortran) {
            MPI_Fint flen = len, fdt = PMPI_Type_c2f(current_dtype);
            ((fortran_user_fn *)u->fn)((void *)in, inout, &flen, &fdt);
        } else {
            ((MPI_User_function *)u->fn)((void *)in, inout, &len, &current_dtype);
        }
        in = (const char *)in + (size_t)len * (size_t)size;
        inout = (char *)inout + (size_t)len * (size_t)size;
        count -= (size_t)len;
    }
}

void weft_dropin_record_op(MPI_Op op, void (*fn)(void), int commute, int fortran)
{
    user_op_t *u = calloc(1, sizeof *u);
    if (!u)
        return; /* the op stays unknown: its calls go to MPI */
    u->mpi = op, u->fn = fn, u->commute = commute, u->fortran = fortran, u->wop = -1;
    pthread_mutex_lock(&ops_lock);
    u->next = user_ops;
    user_ops = u;
    pthread_mutex_unlock(&ops_lock);
}

void weft_dropin_forget_op(MPI_Op op)
{
    pthread_mutex_lock(&ops_lock);
    for (user_op_t **pp = &user_ops; *pp; pp = &(*pp)->next)
        if ((*pp)->mpi == op) {
            user_op_t *u = *pp;
            *pp = u->next;
            if (u->wop >= 0)
                weft_op_free(&u->wop);
            free(u);
            break;
        }
    pthread_mutex_unlock(&ops_lock);
}

int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
    int rc = PMPI_Op_create(fn, commute, op);
    if (rc == MPI_SUCCESS)
        weft_dropin_record_op(*op, (void (*)(void))fn, commute, 0);
    return rc;
}

int MPI_Op_free(MPI_Op *op)
{
    weft_dropin_forget_op(*op);
    return PMPI_Op_free(op);
}

static int map_op(MPI_Op op, weft_op_t *out)
{
    static const struct {
        MPI_Op mpi;
        weft_op_t w;
    } builtin[] = {{MPI_SUM, WEFT_SUM},   {MPI_PROD, WEFT_PROD}, {MPI_MIN, WEFT_MIN},
                   {MPI_MAX, WEFT_MAX},   {MPI_BAND, WEFT_BAND}, {MPI_BOR, WEFT_BOR},
                   {MPI_BXOR, WEFT_BXOR}, {MPI_LAND, WEFT_LAND}, {MPI_LOR, WEFT_LOR}};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (builtin[i].mpi == op) {
            *out = builtin[i].w;
            return 1;
        }
    int found = 0;
    pthread_mutex_lock(&ops_lock);
    for (user_op_t *u = user_ops; u; u = u->next)
        if (u->mpi == op) {
            if (u->wop < 0) {
                if (weft_op_create(trampoline, u, u->commute, 0, &u->wop) != WEFT_OK)
                    break;
                /* every MPI op shares the trampoline: the user's function
                 * is what ranks must agree on */
                weft_op_set_origin(u->wop, (const void *)u->fn);
            }
            *out = u->wop;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&ops_lock);
    return found;
}

/* ---- communicators ---- */

static int keyval = MPI_KEYVAL_INVALID;

/* The last communicator each thread found a twin for: a loop of calls on
 * one communicator (a solver's dot products) skips the attribute lookup
 * and the intercommunicator test, 20-25 ns of a 0.23 us allreduce.  Every
 * twin deleted moves comm_epoch on, since MPI may give the freed handle to
 * the next communicator it makes. */
static unsigned long comm_epoch = 1; /* __atomic builtins: clang takes no _Atomic there */
static _Thread_local struct {
    MPI_Comm mpi;
    weft_comm_t wc;
    unsigned long epoch;
} last_comm;

static int delete_weft_comm(MPI_Comm comm, int key, void *val, void *extra)
{
    weft_comm_t wc = val;
    (void)comm, (void)key, (void)extra;
    __atomic_fetch_add(&comm_epoch, 1, __ATOMIC_RELEASE);
    weft_comm_free(&wc);
    return MPI_SUCCESS;
}

/* Once per process: two threads making their first calls on two
 * communicators at once must not each create a key (a communicator's weft
 * twin stored under the lost one would be created again, on this rank only,
 * in the middle of a collective). */
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;
static void create_keyval(void)
{
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_weft_comm, &keyval, NULL) !=
        MPI_SUCCESS)
        keyval = MPI_KEYVAL_INVALID;
}

/* The weft communicator of comm, created on first use (inside a collective
 * call, so the MPI_Comm_dup it does is collective too); NULL on failure. */
static weft_comm_t weft_of(MPI_Comm comm)
{
    pthread_once(&keyval_once, create_keyval);
    if (keyval == MPI_KEYVAL_INVALID)
        return NULL;
    void *val = NULL;
    int flag = 0;
    PMPI_Comm_get_attr(comm, keyval, &val, &flag);
    if (flag)
        return val;
    weft_comm_t wc;
    if (weft_comm_from_mpi(comm, &wc) != WEFT_OK) {
        if (is_verbose())
            fprintf(stderr, "weft-mpi: %s\n", weft_last_error());
        return NULL;
    }
    /* unattached, a twin would never be freed, and a thread's memory of it
     * (usable) would outlive the communicator */
    if (PMPI_Comm_set_attr(comm, keyval, wc) != MPI_SUCCESS) {
        weft_comm_free(&wc);
        return NULL;
    }
    return wc;
}

/* Common checks; returns the weft communicator or NULL with *why set. */
static weft_comm_t usable(MPI_Comm comm, int count, int *why)
{
    if (comm == MPI_COMM_NULL || count < 0) {
        *why = F_ARGS;
        return NULL;
    }
    unsigned long epoch = __atomic_load_n(&comm_epoch, __ATOMIC_ACQUIRE);
    if (comm == last_comm.mpi && epoch == last_comm.epoch)
        return last_comm.wc;
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
        *why = F_ARGS;
        return NULL;
    }
    if (inter) {
        *why = F_INTER;
        return NULL;
    }
    weft_comm_t wc = weft_of(comm);
    if (!wc)
        *why = F_ERROR;
    else
        last_comm.mpi = comm, last_comm.wc = wc, last_comm.epoch = epoch;
    return wc;
}

/* ---- errors ----
 * A weft error after the arguments were accepted goes to the communicator's
 * error handler, as MPI's own would, as an error code of the drop-in's
 * (MPI_Add_error_code): one a weft error, in the MPI class nearest to it,
 * its string set to weft's message at each failure.  So MPI_Error_string,
 * and the abort of MPI_ERRORS_ARE_FATAL, say what happened ("ranks
 * disagree ...", "rank 2 died ..."); with MPI_ERR_OTHER itself, as until
 * 2026-12-07, both said "known error not in list" and the reason was on
 * stderr under WEFT_VERBOSE only.  The string is the code's, not the call's:
 * two threads that fail at once with the same weft error may each read the
 * later message. */
#define WEFT_ERRORS (WEFT_EREVOKED + 1)
static int error_code[WEFT_ERRORS];
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;

static int error_class_of(int err)
{
    switch (err) {
    case WEFT_EINVAL:
        return MPI_ERR_ARG;
    case WEFT_ENOMEM:
        return MPI_ERR_NO_MEM;
    case WEFT_EINTERNAL:
        return MPI_ERR_INTERN;
    default:
        return MPI_ERR_OTHER;
    }
}

/* The MPI error code for weft's err carrying message; the class itself
 * where MPI cannot make a code. */
static int error_code_with(int err, const char *message)
{
    int cls = error_class_of(err);
    if (err <= 0 || err >= WEFT_ERRORS)
        return cls;
    char text[MPI_MAX_ERROR_STRING];
    snprintf(text, sizeof text, "%s", message);
    pthread_mutex_lock(&error_lock);
    int code = error_code[err];
    if (!code && PMPI_Add_error_code(cls, &code) != MPI_SUCCESS)
        code = 0;
    error_code[err] = code;
    if (code && PMPI_Add_error_string(code, text) != MPI_SUCCESS)
        code = 0;
    pthread_mutex_unlock(&error_lock);
    return code ? code : cls;
}

static int raise_error(MPI_Comm comm, int c, int err)
{
    char message[MPI_MAX_ERROR_STRING];
    const char *why = own_error[0] ? own_error : weft_last_error();
    snprintf(message, sizeof message, "weft-mpi: %s: %s", cname[c],
             why[0] ? why : weft_strerror((weft_err_t)err));
    own_error[0] = 0;
    if (is_verbose())
        fprintf(stderr, "%s\n", message);
    int code = error_code_with(err, message);
    PMPI_Comm_call_errhandler(comm, code);
    return code;
}

/* ---- a forced algorithm that cannot serve a call ----
 * WEFT_<COLL>_ALGO names an algorithm for every call, but an unmodified MPI
 * program may make calls it cannot serve (ring with a non-commutative op,
 * butterfly with a sum).  Failing the MPI call would end most programs, so
 * the call is served by AUTO instead, and the first such call per
 * collective says so on stderr; WEFT_STRICT=1 makes it fail instead.  Every
 * rank decides alike: the refusal depends only on arguments all ranks share
 * (op, count, P), and it comes before any message. */

static int strict(void)
{
    const char *v = getenv("WEFT_STRICT");
    return v && *v && strcmp(v, "0");
}

static int refused_by_choice(void)
{
    return strstr(weft_last_error(), "algorithms that serve this call") != NULL;
}

static void restore_choice(weft_comm_t wc, weft_coll_t coll)
{
    char var[64], pvar[72];
    const char *n = weft_coll_name(coll);
    int k = snprintf(var, sizeof var, "WEFT_");
    for (; *n && k < 48; n++)
        var[k++] = (char)(*n >= 'a' && *n <= 'z' ? *n - 32 : *n);
    var[k] = '\0';
    snprintf(pvar, sizeof pvar, "%s_PARAMS", var);
    strcat(var, "_ALGO");
    weft_set_algorithm(wc, coll, getenv(var), getenv(pvar));
}

static long told[C_N];

/* Runs `call` (a weft call on wc, evaluated twice at most); on a refusal by
 * the forced algorithm, again under AUTO.  Leaves the weft result in rc. */
#define SERVE(c, wcoll, wc, rc, call)                                                       \
    do {                                                                                    \
        rc = (call);                                                                        \
        if (rc == WEFT_EINVAL && refused_by_choice() && !strict()) {                        \
            if (!count_one(&told[c]))                                                       \
                fprintf(stderr, "weft-mpi: %s: %s; served by weft's automatic choice "      \
                                "instead (WEFT_STRICT=1 makes such calls fail)\n",          \
                        cname[c], weft_last_error());                                       \
            weft_set_algorithm(wc, wcoll, "auto", NULL);                                    \
            rc = (call);                                                                    \
            restore_choice(wc, wcoll);                                                      \
        }                                                                                   \
    } while (0)

/* A negative count is erroneous in every MPI library: MPI_ERR_COUNT through
 * the communicator's error handler, as Open MPI gives it, instead of the
 * call going to the library (MPICH 4.0 crashes in MPI_Allreduce with a
 * count of -1).  On MPI_COMM_NULL, which has no handler, the library
 * reports the communicator. */
static int refuse(MPI_Comm comm, int err)
{
    PMPI_Comm_call_errhandler(comm, err);
    return err;
}

#define REFUSE_NEGATIVE(n, comm)                                                            \
    do {                                                                                    \
        if ((n) < 0 && (comm) != MPI_COMM_NULL)                                             \
            return refuse(comm, MPI_ERR_COUNT);                                             \
    } while (0)

/* reduction_comm's why for a predefined op MPI does not define on the type
 * (mpi_defines): refused with MPI_ERR_OP (no slot of its own in fallback) */
#define F_UNDEFINED_OP F_N
#define REFUSE_UNDEFINED_OP(why, comm)                                                      \
    do {                                                                                    \
        if ((why) == F_UNDEFINED_OP) {                                                      \
            if ((comm) != MPI_COMM_NULL)                                                    \
                return refuse(comm, MPI_ERR_OP);                                            \
            (why) = F_ARGS;                                                                 \
        }                                                                                   \
    } while (0)

#define FALLBACK(c, why, call)                                                              \
    do {                                                                                    \
        count_one(&fallback[c][why]);                                                       \
        return call;                                                                        \
    } while (0)

static const void *in_place(const void *buf) { return buf == MPI_IN_PLACE ? WEFT_IN_PLACE : buf; }

/* Whether MPI defines the predefined op on the predefined type (MPI 4.1,
 * section 6.9.2): MIN and MAX on integers and floats, SUM and PROD too,
 * the logical ops on C integers, the bitwise ops on integers and MPI_BYTE;
 * MPI_CHAR is character data, for no op.  weft could compute the others
 * (a sum of bytes, an AND of floats), but MPI libraries refuse them with
 * MPI_ERR_OP, and a program must see the same error with the drop-in: the
 * drop-in refuses them itself (OP_REFUSED), through the communicator's
 * error handler as Open MPI does, since MPICH 4.0 asserts on some (MPI_LOR
 * on MPI_DOUBLE).  On Fortran types the libraries disagree with the
 * standard and with themselves (Open MPI 4.1 takes MPI_LAND on INTEGER1 and
 * refuses it on INTEGER4), so an op the standard does not define there
 * goes to the MPI library to judge (OP_TO_MPI).  Every rank passes the
 * same type and op, so every rank decides alike.  User ops take any type. */
enum { OP_REFUSED, OP_TO_MPI, OP_DEFINED };
static int mpi_defines(MPI_Op op, MPI_Datatype dt, weft_dtype_t wdt)
{
    int is_float = wdt == WEFT_FLOAT32 || wdt == WEFT_FLOAT64;
    int verdict = OP_DEFINED;
    if (dt == MPI_CHAR)
        verdict = OP_REFUSED;
    else if (op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX)
        verdict = dt != MPI_BYTE ? OP_DEFINED : OP_REFUSED;
    else if (op == MPI_LAND || op == MPI_LOR)
        verdict = !is_float && dt != MPI_BYTE && !known_type(dt)->fortran ? OP_DEFINED
                                                                           : OP_REFUSED;
    else if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        verdict = !is_float ? OP_DEFINED : OP_REFUSED;
    if (verdict == OP_REFUSED && known_type(dt)->fortran)
        verdict = OP_TO_MPI;
    return verdict;
}

/* The weft communicator for a reduction weft can serve, with the type and
 * op mapped; NULL and why otherwise. */
static weft_comm_t reduction_comm(MPI_Comm comm, int count, MPI_Datatype dt, MPI_Op op,
                                  weft_dtype_t *wdt, weft_op_t *wop, int *why)
{
    if (!map_dtype(dt, wdt)) {
        *why = F_DTYPE;
        return NULL;
    }
    int verdict = mpi_defines(op, dt, *wdt);
    if (verdict != OP_DEFINED) {
        *why = verdict == OP_REFUSED ? F_UNDEFINED_OP : F_OP;
        return NULL;
    }
    if (!map_op(op, wop)) {
        *why = F_OP;
        return NULL;
    }
    return usable(comm, count, why);
}

/* Buffers MPI forbids and its libraries check on the calling rank
 * (MPI_IN_PLACE as a receive buffer, the same buffer to send and receive a
 * reduction): MPI judges them, so the error reaches the program as without
 * the drop-in, where weft would write through MPI_IN_PLACE or serve the
 * alias in place.  Aliases MPI libraries let pass (allgather's and
 * reduce_scatter_block's, where a rank's block may sit at its own place)
 * stay with weft, which serves them in place: sending them to MPI on the
 * ranks that alias and to weft on the others would split one call in two. */
static int bad_reduction_buffers(const void *sendbuf, const void *recvbuf, int count)
{
    return recvbuf == MPI_IN_PLACE || (count > 0 && sendbuf == recvbuf);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm)
{
    REFUSE_NEGATIVE(count, comm);
    weft_dtype_t wdt;
    weft_op_t wop;
    int why = 0;
    weft_comm_t wc = reduction_comm(comm, count, dt, op, &wdt, &wop, &why);
    REFUSE_UNDEFINED_OP(why, comm);
    if (wc && bad_reduction_buffers(sendbuf, recvbuf, count))
        wc = NULL, why = F_ARGS;
    if (!wc)
        FALLBACK(C_ALLREDUCE, why, PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm));
    current_dtype = dt;
    int rc;
    SERVE(C_ALLREDUCE, WEFT_COLL_ALLREDUCE, wc, rc,
          weft_allreduce(in_place(sendbuf), recvbuf, (size_t)count, wdt, wop, wc));
    if (rc != WEFT_OK)
        return raise_error(comm, C_ALLREDUCE, rc);
    count_one(&served[C_ALLREDUCE]);
    return MPI_SUCCESS;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               int root, MPI_Comm comm)
{
    REFUSE_NEGATIVE(count, comm);
    weft_dtype_t wdt;
    weft_op_t wop;
    int why = 0, size = 0, rank = 0;
    weft_comm_t wc = reduction_comm(comm, count, dt, op, &wdt, &wop, &why);
    REFUSE_UNDEFINED_OP(why, comm);
    if (wc) {
        PMPI_Comm_size(comm, &size);
        PMPI_Comm_rank(comm, &rank);
        if (root < 0 || root >= size || (sendbuf == MPI_IN_PLACE && rank != root) ||
            (rank == root && bad_reduction_buffers(sendbuf, recvbuf, count)))
            wc = NULL, why = F_ARGS;
    }
    if (!wc)
        FALLBACK(C_REDUCE, why, PMPI_Reduce(sendbuf, recvbuf, count, dt, op, root, comm));
    current_dtype = dt;
    int rc;
    SERVE(C_REDUCE, WEFT_COLL_REDUCE, wc, rc,
          weft_reduce(in_place(sendbuf), recvbuf, (size_t)count, wdt, wop, root, wc));
    if (rc != WEFT_OK)
        return raise_error(comm, C_REDUCE, rc);
    count_one(&served[C_REDUCE]);
    return MPI_SUCCESS;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    REFUSE_NEGATIVE(count, comm);
    typesig_t t;
    int why = 0, size = 0, rank = 0;
    if (buf == MPI_IN_PLACE || !signature(dt, count, &t))
        FALLBACK(C_BCAST, count < 0 || buf == MPI_IN_PLACE ? F_ARGS : F_DTYPE,
                 PMPI_Bcast(buf, count, dt, root, comm));
    weft_comm_t wc = usable(comm, count, &why);
    if (wc) {
        PMPI_Comm_size(comm, &size);
        PMPI_Comm_rank(comm, &rank);
        if (root < 0 || root >= size)
            wc = NULL, why = F_ARGS;
    }
    if (!wc)
        FALLBACK(C_BCAST, why, PMPI_Bcast(buf, count, dt, root, comm));
    void *data;
    int have = sig_buffer(&t, buf, count, dt, rank == root, &data);
    int rc;
    SERVE(C_BCAST, WEFT_COLL_BCAST, wc, rc,
          have ? weft_bcast(data, t.n, t.wdt, root, wc) : nomem(C_BCAST, &t));
    if (have)
        sig_release(&t, data, buf, count, dt, rc == WEFT_OK && rank != root);
    if (rc != WEFT_OK)
        return raise_error(comm, C_BCAST, rc);
    count_one(&served[C_BCAST]);
    return MPI_SUCCESS;
}

/* Whether every rank's block of a v-collective has one size, counts[0]
 * (MPI requires every rank to pass the same sizes in signature, so every
 * rank answers alike); else *why: F_UNEQUAL, or F_ARGS for arguments MPI
 * must judge (no counts, a negative first one, no communicator). */
static int one_block_size(const int *counts, MPI_Comm comm, int *why)
{
    int size = 0;
    *why = F_ARGS;
    if (!counts || comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
        size <= 0 || counts[0] < 0)
        return 0;
    *why = F_UNEQUAL;
    for (int r = 1; r < size; r++)
        if (counts[r] != counts[0])
            return 0;
    return 1;
}

/* reduce_scatter_block, as MPI_Reduce_scatter_block (c = C_RSB) or as an
 * MPI_Reduce_scatter whose blocks are all count elements (C_RS) */
static int reduce_scatter_as(int c, const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm, const int *recvcounts)
{
    weft_dtype_t wdt;
    weft_op_t wop;
    int why = 0;
    weft_comm_t wc = reduction_comm(comm, count, dt, op, &wdt, &wop, &why);
    REFUSE_UNDEFINED_OP(why, comm);
    if (wc && recvbuf == MPI_IN_PLACE)
        wc = NULL, why = F_ARGS;
    if (!wc)
        FALLBACK(c, why,
                 c == C_RS ? PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm)
                           : PMPI_Reduce_scatter_block(sendbuf, recvbuf, count, dt, op, comm));
    current_dtype = dt;
    int rc;
    SERVE(c, WEFT_COLL_REDUCE_SCATTER, wc, rc,
          weft_reduce_scatter(in_place(sendbuf), recvbuf, (size_t)count, wdt, wop, wc));
    if (rc != WEFT_OK)
        return raise_error(comm, c, rc);
    count_one(&served[c]);
    return MPI_SUCCESS;
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm)
{
    REFUSE_NEGATIVE(count, comm);
    return reduce_scatter_as(C_RSB, sendbuf, recvbuf, count, dt, op, comm, NULL);
}

/* MPI_Reduce_scatter with every block of one size is reduce_scatter_block
 * (MPI requires every rank to pass the same recvcounts, so every rank
 * decides alike); other counts, a negative one included, go to MPI. */
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int why = 0;
    if (!one_block_size(recvcounts, comm, &why))
        FALLBACK(C_RS, why, PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm));
    return reduce_scatter_as(C_RS, sendbuf, recvbuf, recvcounts[0], dt, op, comm, recvcounts);
}

/* An allgatherv whose blocks are all recvcount elements but do not lie
 * one after another (displs): gathered into a contiguous copy, then each
 * block put at its displacement, in recvtype's layout. */
static int allgatherv_placed(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             typesig_t *st, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                             const typesig_t *rt, const int *displs, weft_comm_t wc,
                             MPI_Comm comm, int rank, int size)
{
    MPI_Aint lb, ext;
    PMPI_Type_get_extent(recvtype, &lb, &ext);
    size_t block = rt->n * weft_dtype_size(rt->wdt);
    char *tmp = malloc(block * (size_t)size + 1);
    void *sdata = (void *)WEFT_IN_PLACE;
    int have_s = tmp != NULL;
    /* MPI_BOTTOM is a null pointer: the displacements are added as numbers */
#define PLACE(j) ((void *)((uintptr_t)recvbuf + (uintptr_t)(displs[j] * ext)))
    if (tmp && sendbuf == MPI_IN_PLACE)
        PMPI_Sendrecv(PLACE(rank), recvcount, recvtype, 0, 0, tmp + (size_t)rank * block,
                      (int)rt->n, rt->base, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    else if (tmp)
        have_s = sig_buffer(st, (void *)sendbuf, sendcount, sendtype, 1, &sdata);
    int rc;
    SERVE(C_ALLGATHERV, WEFT_COLL_ALLGATHER, wc, rc,
          have_s ? weft_allgather(sdata, tmp, rt->n, rt->wdt, wc) : nomem(C_ALLGATHERV, rt));
    if (have_s && sendbuf != MPI_IN_PLACE)
        sig_release(st, sdata, (void *)sendbuf, sendcount, sendtype, 0);
    for (int j = 0; rc == WEFT_OK && j < size; j++)
        PMPI_Sendrecv(tmp + (size_t)j * block, (int)rt->n, rt->base, 0, 0, PLACE(j), recvcount,
                      recvtype, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
#undef PLACE
    free(tmp);
    if (rc != WEFT_OK)
        return raise_error(comm, C_ALLGATHERV, rc);
    count_one(&served[C_ALLGATHERV]);
    return MPI_SUCCESS;
}

static int displs_in_a_row(const int *displs, int recvcount, int size)
{
    for (int j = 0; j < size; j++)
        if ((long long)displs[j] != (long long)j * recvcount)
            return 0;
    return 1;
}

/* allgather, as MPI_Allgather (c = C_ALLGATHER) or as an MPI_Allgatherv
 * whose blocks are all recvcount elements (C_ALLGATHERV, with its
 * recvcounts and displs) */
#define ALLGATHER_BY_MPI()                                                                  \
    (c == C_ALLGATHERV ? PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, \
                                         displs, recvtype, comm)                            \
                       : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,   \
                                        recvtype, comm))
static int allgather_as(int c, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const int *recvcounts, const int *displs)
{
    REFUSE_NEGATIVE(sendbuf != MPI_IN_PLACE && sendcount < 0 ? sendcount : recvcount, comm);
    typesig_t rt, st;
    int why = 0, size = 0, rank = 0;
    /* the block each rank gives is recvcount x recvtype in signature; the
     * send side must say the same (else MPI judges the call) */
    int ok = recvbuf != MPI_IN_PLACE && signature(recvtype, recvcount, &rt);
    int same = ok && (sendbuf == MPI_IN_PLACE ||
                      (signature(sendtype, sendcount, &st) && st.base == rt.base && st.n == rt.n));
    if (!ok || !same)
        FALLBACK(c, recvcount < 0 || recvbuf == MPI_IN_PLACE || (ok && !same) ? F_ARGS : F_DTYPE,
                 ALLGATHER_BY_MPI());
    weft_comm_t wc = usable(comm, recvcount, &why);
    if (wc) {
        /* the whole receive buffer is described by one int count below:
         * past INT_MAX elements every rank leaves the call to MPI (the
         * count and P are the same everywhere, so all decide alike) */
        PMPI_Comm_size(comm, &size);
        if ((long long)recvcount * size > INT32_MAX)
            wc = NULL, why = F_ARGS;
    }
    if (!wc)
        FALLBACK(c, why, ALLGATHER_BY_MPI());
    PMPI_Comm_rank(comm, &rank);
    if (displs && !displs_in_a_row(displs, recvcount, size))
        return allgatherv_placed(sendbuf, sendcount, sendtype, &st, recvbuf, recvcount, recvtype,
                                 &rt, displs, wc, comm, rank, size);
    typesig_t all; /* the whole receive buffer: size blocks */
    signature(recvtype, recvcount * size, &all);
    void *rdata, *sdata = (void *)WEFT_IN_PLACE;
    int have_r = sig_buffer(&all, recvbuf, recvcount * size, recvtype, sendbuf == MPI_IN_PLACE,
                            &rdata);
    int have_s = sendbuf == MPI_IN_PLACE ||
                 (have_r && sig_buffer(&st, (void *)sendbuf, sendcount, sendtype, 1, &sdata));
    int rc;
    SERVE(c, WEFT_COLL_ALLGATHER, wc, rc,
          have_r && have_s ? weft_allgather(sdata, rdata, rt.n, rt.wdt, wc)
                           : nomem(c, have_r ? &st : &all));
    if (have_s && sendbuf != MPI_IN_PLACE)
        sig_release(&st, sdata, (void *)sendbuf, sendcount, sendtype, 0);
    if (have_r)
        sig_release(&all, rdata, recvbuf, recvcount * size, recvtype, rc == WEFT_OK);
    if (rc != WEFT_OK)
        return raise_error(comm, c, rc);
    count_one(&served[c]);
    return MPI_SUCCESS;
}
#undef ALLGATHER_BY_MPI

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather_as(C_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                        comm, NULL, NULL);
}

/* MPI_Allgatherv with every block of one size is an allgather (the blocks
 * in a row) or one whose blocks are then put in place.  The choice between
 * weft and MPI is made from the sizes, which every rank shares in
 * signature (a block's elements), never from displs, which are each
 * rank's own; other sizes, a negative one included, go to MPI. */
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm)
{
    int why = 0;
    if (!displs || !one_block_size(recvcounts, comm, &why))
        FALLBACK(C_ALLGATHERV, displs ? why : F_ARGS,
                 PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm));
    return allgather_as(C_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, recvcounts[0],
                        recvtype, comm, recvcounts, displs);
}

/* The barrier too: on one node weft's is the board (one wait per rank),
 * and its ranks leave close together where MPI's, when ranks outnumber
 * cores, leave far apart and put the spread inside the next call (8 ranks
 * on 2 cores, an OSU-style loop: a small MPI_Allreduce 38-43 us after it
 * against 52-69 after Open MPI's; docs/PERFORMANCE-LOG.md).  It synchronises the ranks
 * only: like any MPI barrier it orders nothing of point-to-point traffic,
 * which MPI_Wait completes as before. */
int MPI_Barrier(MPI_Comm comm)
{
    int why = 0;
    weft_comm_t wc = usable(comm, 0, &why);
    if (!wc)
        FALLBACK(C_BARRIER, why, PMPI_Barrier(comm));
    int rc;
    SERVE(C_BARRIER, WEFT_COLL_BARRIER, wc, rc, weft_barrier(wc));
    if (rc != WEFT_OK)
        return raise_error(comm, C_BARRIER, rc);
    count_one(&served[C_BARRIER]);
    return MPI_SUCCESS;
}

/* ---- memory ---- */

static long arena_blocks; /* MPI_Alloc_mem calls served from weft's arena */

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    void *p = NULL;
    if (size > 0 && baseptr && weft_alloc((size_t)size, &p) == WEFT_OK) {
        *(void **)baseptr = p;
        __atomic_add_fetch(&arena_blocks, 1, __ATOMIC_RELAXED);
        return MPI_SUCCESS;
    }
    return PMPI_Alloc_mem(size, info, baseptr); /* MPI checks and reports the arguments */
}

int MPI_Free_mem(void *base)
{
    if (base && weft_free(base) == WEFT_OK)
        return MPI_SUCCESS;
    return PMPI_Free_mem(base);
}

int MPI_Finalize(void)
{
    if (keyval != MPI_KEYVAL_INVALID) {
        /* free the cached weft communicators of the predefined communicators
         * while MPI still works */
        MPI_Comm predefined[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
        for (int i = 0; i < 2; i++) {
            void *val;
            int flag = 0;
            PMPI_Comm_get_attr(predefined[i], keyval, &val, &flag);
            if (flag) /* deleting an absent attribute is an error in Open MPI */
                PMPI_Comm_delete_attr(predefined[i], keyval);
        }
        PMPI_Comm_free_keyval(&keyval);
    }
    /* types still alive keep their shapes until they are freed */
    if (type_keyval != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(&type_keyval);
    if (is_verbose()) {
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        for (int c = 0; c < C_N; c++) {
            long fb = 0;
            for (int f = 0; f < F_N; f++)
                fb += fallback[c][f];
            if (!served[c] && !fb)
                continue;
            char reasons[256] = "";
            size_t used = 0;
            for (int f = 0; f < F_N; f++)
                if (fallback[c][f])
                    used += (size_t)snprintf(reasons + used, sizeof reasons - used, "%s%ld %s",
                                             used ? ", " : ": ", fallback[c][f], fname[f]);
            fprintf(stderr, "weft-mpi[rank %d]: %s: %ld served by weft, %ld by MPI%s\n", rank,
                    cname[c], served[c], fb, reasons);
        }
        if (arena_blocks)
            fprintf(stderr, "weft-mpi[rank %d]: MPI_Alloc_mem: %ld blocks from weft's arena\n",
                    rank, arena_blocks);
        if (arena_malloc_blocks())
            fprintf(stderr, "weft-mpi[rank %d]: malloc (WEFT_MALLOC=arena): %ld blocks from "
                    "weft's arena\n", rank, arena_malloc_blocks());
    }
    return PMPI_Finalize();
}
