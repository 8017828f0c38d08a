/* segment.h — the shared-memory segment of one job: a header (size,
 * geometry, abort state), one control block per rank (doorbell futex,
 * sleeping flag, state), the board of the arrival-driven collectives
 * (src/shmcoll: slots each rank writes for its peers to read), the call logs, and a pool of single-producer single-consumer
 * rings of cells, one for each ordered pair of ranks that talks.
 *
 * A ring is taken from the pool by its sender on the pair's first message
 * and its memory reserved then (fallocate), so the segment grows with the
 * pairs that talk, not as P²: a ring allreduce at P ranks takes 2P rings.
 * The file spans every possible ring but stays sparse; what is reserved is
 * the fixed part plus the rings taken.  Created by the launcher with
 * owner-only permissions and unlinked as soon as every rank has attached. */
#ifndef WEFT_SEGMENT_H
#define WEFT_SEGMENT_H

#include "../core/tool_api.h"
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SEG_MAGIC 0x3947455374666577ull /* bumped with the layout */
#define CELL_PAYLOAD 16384u   /* a cell's payload when memory allows */
#define CELL_PAYLOAD_MIN 1024u /* and the least it may shrink to (seg_create) */
#define CELLS_MIN 2u
#define CELLS_SMALL_P 32u /* cells per ring up to 8 ranks, at least (segment.c) */
#define CELLS_MAX 256u
/* The board (src/shmcoll): BOARD_SLOTS slots per rank, each written by its
 * rank only and read by the peers of one call; a live communicator holds a
 * pair of its own (comm.c), so the world and 7 more use the board. */
#define BOARD_SLOTS 16u
/* Bytes a slot carries: 2088 (33 lines less the header), or 8232 (129
 * lines: 8 KiB and the first line's 40) in a segment of up to
 * BOARD_WIDE_RANKS ranks.  Wide since 2026-12-01: the 2-rank allreduce on
 * the board beat every schedule to 8 KiB (4 KiB 1.3x recursive doubling's
 * time, 8 KiB 1.1x; PERFORMANCE-LOG.md, "A wider board"), where at 3-8 ranks
 * it did not pass 2 KiB; wide slots everywhere would have made the
 * board's part of the segment 130 KiB a rank instead of 34. */
#define BOARD_PAYLOAD 2088u
#define BOARD_PAYLOAD_WIDE 8232u
#define BOARD_WIDE_RANKS 4
typedef struct board_slot {
    /* line 0: the call (key + 1; 0: never written), its signature, and the
     * first 40 bytes, so that a tiny payload moves with its flag; the rest
     * on the lines after it.  The slot's last line (board_reads): how many
     * reads were done, over the slot's life; the owner rewrites the slot
     * only once it reaches wanted (so calls of any communicator may share
     * it), and never writes that line, which readers alone update. */
    _Atomic uint64_t stamp;
    uint32_t sig;
    uint32_t len;
    /* reads counted over the slot's life once every reader of its current
     * contents is done: the owner adds each call's readers as it posts */
    uint32_t wanted;
    uint32_t flags; /* BOARD_POST_*: what the post says of its rank */
    char data[];    /* the segment's board_payload bytes */
} __attribute__((aligned(64))) board_slot_t;

/* What a slot carries in a segment of nrank ranks. */
static inline uint32_t board_payload_for(int nrank)
{
    return nrank <= BOARD_WIDE_RANKS ? BOARD_PAYLOAD_WIDE : BOARD_PAYLOAD;
}

/* A slot's bytes: its lines of header and payload, and its reads line. */
static inline size_t board_slot_bytes(uint32_t payload)
{
    return (offsetof(board_slot_t, data) + payload + 63) / 64 * 64 + 64;
}

/* The reads counter of slot s, in a segment whose slots carry payload. */
static inline _Atomic uint32_t *board_reads(const board_slot_t *s, uint32_t payload)
{
    return (_Atomic uint32_t *)(void *)((char *)s + board_slot_bytes(payload) - 64);
}
/* The poster had finished every earlier call of its communicator, so it
 * had read every slot those calls had it read (board.c, "Proven read") */
#define BOARD_POST_ORDERED 1u
/* flags >> BOARD_POST_READER_SHIFT: 1 + the post's sole reader (a reduce's
 * root), 0 where every other rank of the call reads it */
#define BOARD_POST_READER_SHIFT 8

/* The arrival records of the arrival-driven collectives (src/shmcoll/
 * arrival.c): ARRIVAL_PAIRS pairs per rank.  A communicator whose rank 0
 * that rank is claims a pair for its own (owner, in the pair's first
 * record: (context + 1) << 1, | 1 once the communicator is freed), and its
 * calls take the pair's records by the parity of their sequence number.
 * Unlike a board slot, every rank of a call writes the record: ticket
 * counts the arrivals (the call's generation, the ranks expected, the ranks
 * arrived), left the ranks done with it, and order[i] who arrived i-th
 * (generation and rank, so a stale entry is never taken for this call's). */
#define ARRIVAL_PAIRS 8u
#define ARRIVAL_MAX 64u /* ranks of one call */
typedef struct arrival_rec {
    _Atomic uint64_t ticket; /* gen << 24 | total << 12 | arrived */
    _Atomic uint64_t left;   /* gen << 24 | done */
    _Atomic uint64_t owner;  /* the pair's first record only */
    /* the arrival spread (adaptive): the first arrival's time (the
     * generation's low 24 bits << 40 | us), the last call's spread in us
     * (written by its last arrival), and the first arrival's choice */
    _Atomic uint64_t first_us, spread_us, mode;
    char pad[16];
    _Atomic uint64_t order[ARRIVAL_MAX]; /* gen << 24 | rank + 1 */
} __attribute__((aligned(64))) arrival_rec_t;
/* After the pairs, one more record per rank: the communicators it could
 * not give a pair (their contexts + 1 in order[], a ring whose next slot
 * is ticket mod ARRIVAL_REFUSED), so that their other ranks, waiting for
 * the claim, fail too instead of waiting for ever. */
#define ARRIVAL_REFUSED 16u
#define SEG_ARRIVAL_BYTES_PER_RANK ((2 * ARRIVAL_PAIRS + 1) * sizeof(arrival_rec_t))

enum { RANK_NEW = 0, RANK_ATTACHED = 1, RANK_FINALIZED = 2, RANK_FINALIZING = 3 };
enum { ABORT_NONE = 0, ABORT_DIED = 1, ABORT_ERROR = 2 };

typedef struct seg_hdr {
    uint64_t magic;
    uint32_t nrank, ncells;
    uint32_t cell_bytes; /* one cell, header and payload (a multiple of 64) */
    uint32_t payload;    /* payload bytes per cell */
    uint64_t size, ranks_off, board_off, chans_off, chan_stride;
    uint64_t log_off; /* the call logs: SEG_CALLLOG records per rank */
    uint64_t arrival_off; /* the arrival records: 2 ARRIVAL_PAIRS per rank */
    uint64_t dir_off; /* P x P ring numbers (+1; 0: the pair has none yet) */
    uint64_t budget;  /* bytes the segment may reserve in all */
    uint64_t fixed;   /* bytes of everything before the pool */
    _Atomic uint32_t rings_taken;
    _Atomic uint32_t attached;
    _Atomic int32_t abort_rank;
    _Atomic uint32_t abort_code;
    int32_t launcher; /* pid of `weft run` (ranks give up when it is gone) */
    uint32_t cores;   /* the cores the ranks may run on (cpus.h), >= 1 */
    uint32_t board_payload; /* bytes a board slot carries (BOARD_PAYLOAD*) */
    char abort_msg[256];
    char name[64];
} seg_hdr_t;

#define SEG_ENDED 32
#define SEG_REFUSED 8
#define SEG_ABANDONED 8 /* failed calls whose keys a rank keeps */
typedef struct seg_rank {
    _Atomic uint32_t doorbell; /* futex word: bumped to wake the rank */
    _Atomic uint32_t sleeping;
    _Atomic uint32_t state;
    int32_t pid;
    uint64_t probe; /* address of a word in this process that peers may
                     * read with process_vm_readv to learn whether they can
                     * (shm.c, single copy); 0: the rank does not offer it */
    int32_t arena_fd;    /* this rank's arena (arena.h): its memfd's number */
    /* 1: this process is registered for membarrier's global expedited
     * barrier and issues one before it sleeps, so a peer registered too
     * may wake it without a fence of its own (shm.c, "Waiting") */
    _Atomic uint32_t membarrier;
    uint64_t arena_span; /* and size; 0: peers may not map it */
    /* the calls that failed on this rank (an error, a timeout, a revoke),
     * and the keys of the last SEG_ABANDONED of them (the newest at
     * (abandoned_keyed - 1) mod SEG_ABANDONED): a peer that finds it in
     * weft_finalize knows it left after a fault, not that it skipped a
     * collective; one whose record of a call is gone learns it gave that
     * call up, though calls in flight beside it failed after it (an
     * overlapped batch: its peers waited out the time limit instead) */
    _Atomic uint32_t abandoned;
    _Atomic uint32_t abandoned_keyed;
    _Atomic uint64_t abandoned_keys[SEG_ABANDONED];
    /* Which of this rank's calls ended well (shm.c, calls_ended), one word
     * per context id, at id mod SEG_ENDED: id << 48 | first << 24 | below,
     * its calls first .. below-1 (24-bit numbers).  Written by the rank
     * alone, after the calls' messages are out; read by peers' watches
     * and by the rank itself (a message of such a call is stale). */
    _Atomic uint64_t ended[SEG_ENDED];
    /* This rank's refused calls (api.c, call_refused), per context id at
     * id mod SEG_ENDED and call number mod SEG_REFUSED, so that a refusal
     * is written over only by one SEG_REFUSED calls later on its
     * communicator: id << 48 | number << 24 | the low 24 bits of its
     * signature.  Kept apart from the call log, whose record of it newer
     * calls (other threads') soon take the place of. */
    _Atomic uint64_t refused[SEG_ENDED][SEG_REFUSED];
    /* The communicators this rank freed (shm.c, comm_freed), per context
     * id at id mod SEG_ENDED: id << 32 | SEG_FREED | the number after its
     * last call there; cleared when the id serves again. */
    _Atomic uint64_t freed[SEG_ENDED];
} __attribute__((aligned(64))) seg_rank_t;
#define SEG_FREED 0x80000000u

/* One record of a rank's call log (SEG_CALLLOG slots, the slot chosen by
 * the call's key): a call_desc_t (xport.h) as six words under a sequence
 * lock (ver odd while the owner rewrites it), and the call's state, which
 * the owner updates in place. */
#define SEG_CALLLOG 16
/* After them, records of calls whose waits stalled, kept until they end
 * (CALL_PIN): a peer's watch finds them whatever came since. */
#define SEG_CALLPIN 8
typedef struct call_rec {
    _Atomic uint64_t ver;
    _Atomic uint64_t w[6];
    _Atomic uint32_t state;
    uint32_t pad;
} __attribute__((aligned(64))) call_rec_t;

/* A ring: this header, then the cells.  Single copy (shm.c): the receiver
 * says once whether it can read the sender's memory (cma), and counts the
 * messages it has read that way (read), which completes their sends. */
enum { RING_CMA_UNKNOWN = 0, RING_CMA_YES = 1, RING_CMA_NO = 2 };
typedef struct ring_hdr {
    _Atomic uint32_t cma;
    _Atomic uint32_t arena; /* RING_CMA_*: can the receiver map the sender's arena? */
    _Atomic uint64_t read;
    /* cells the receiver has consumed, in all: the sender rereads it only
     * when the ring looks full, so a message moves the cell's line once */
    _Atomic uint64_t consumed;
    /* written by the receiver: messages through these cells come slowly
     * (shm.c, "Slow cells"): its sender then sends reducing messages by
     * single copy */
    _Atomic uint32_t cells_slow;
    char pad0[36];
    /* line 1: the single-copy read under way, offered to the sender so that
     * both copy (shm.c, "Both copy").  The receiver writes the fields, then
     * claim: COOP_LIVE | (message number mod 2^31) << 32 | next piece;
     * either side takes a piece by compare-and-swap on claim and counts it
     * in done when copied.  orphan: a piece the sender took but could not
     * write, + 1, left to the receiver.  cancel: the receiver's call failed
     * and its buffer goes back to its caller; writing: the sender is inside
     * a piece's write (it sets writing, then reads cancel; the receiver sets
     * cancel, then waits while writing: one of them sees the other). */
    _Atomic uint64_t coop_claim;
    _Atomic uint64_t coop_done;
    _Atomic uint64_t coop_dst;
    _Atomic uint64_t coop_total;
    _Atomic uint32_t coop_piece;
    _Atomic int32_t coop_pid;
    _Atomic uint64_t coop_orphan;
    _Atomic uint32_t coop_cancel;
    _Atomic uint32_t coop_writing;
    char pad2[8];
    /* line 2, written by the receiver: per kind of message measured
     * (copyway.h: WAY_COPY, WAY_REDUCE, WAY_SMALL_COPY, WAY_REDUCE_BUSY,
     * WAY_COPY_BUSY)
     * and size (its buckets), the way its timings found faster; read by
     * the sender at each message of those kinds, rewritten only when a
     * verdict changes */
    _Atomic uint8_t way[5][12];
} __attribute__((aligned(64))) ring_hdr_t;
#define COOP_LIVE (1ull << 63)

enum { CELL_DATA = 0, CELL_READ_ME = 1 };
/* flags: a message its receiver times (shm.c, "Copies measured"), and in
 * bits 1-3 the kind it is measured as (copyway.h, WAY_*); a cell its
 * sender wrote after its call failed (shm.c, "Withdrawn sends"); a
 * single-copy message whose sender is busy receiving in its call, which
 * its receiver reads alone (shm.c, "Both copy") */
enum { CELL_MEASURED = 1, CELL_WITHDRAWN = 16, CELL_SENDER_BUSY = 32 };
#define CELL_WAY_KIND(flags) (((flags) >> 1) & 7u)
typedef struct cell {
    /* written by the sender only: the number of the message cell it holds
     * (cells ever written to the ring + 1, mod 2^32); the receiver reads a
     * cell when it holds the number it expects next */
    _Atomic uint32_t seq;
    uint32_t len;   /* payload bytes in this cell */
    uint32_t sig;
    uint16_t kind;  /* CELL_DATA, or CELL_READ_ME: the payload is a cma_desc_t */
    uint16_t flags; /* CELL_MEASURED | kind << 1 */
    uint64_t tag;
    uint64_t total; /* bytes of the whole message */
    char inline_data[32]; /* a message of up to CELL_INLINE bytes: one cache
                           * line carries flag, header and data */
    char payload[]; /* hdr->payload bytes */
} __attribute__((aligned(64))) cell_t;
#define CELL_INLINE 32u

/* Where a cell's bytes are. */
static inline char *cell_data(cell_t *c, uint64_t total)
{
    return total <= CELL_INLINE ? c->inline_data : c->payload;
}

/* Where a single-copy message's bytes are: in the sender's memory, at
 * addr in its address space and, when in_arena, at arena_off in its arena
 * (which the receiver has mapped: no system call to read them). */
typedef struct cma_desc {
    uint64_t addr;
    int32_t pid;
    uint32_t in_arena;
    uint64_t arena_off;
} cma_desc_t;

/* The word after a single-copy cell's desc: its sender sets it (atomic)
 * when the send's call fails while the message is still to be read. */
static inline uint32_t *cell_withdrawn_word(cell_t *c)
{
    return (uint32_t *)(void *)(c->payload + sizeof(cma_desc_t));
}

typedef struct seg {
    seg_hdr_t *hdr;
    size_t size;
    int fd; /* to reserve rings as they are taken; -1 where none are */
    bool populate; /* rings reserved by prefaulting instead (no fd kept) */
} seg_t;

static inline seg_rank_t *seg_rank(const seg_t *s, int r)
{
    return (seg_rank_t *)((char *)s->hdr + s->hdr->ranks_off) + r;
}

static inline board_slot_t *seg_board(const seg_t *s, int r, unsigned i)
{
    return (board_slot_t *)(void *)((char *)s->hdr + s->hdr->board_off +
                                    ((size_t)r * BOARD_SLOTS + i) *
                                        board_slot_bytes(s->hdr->board_payload));
}

static inline arrival_rec_t *seg_arrival(const seg_t *s, int r, unsigned i)
{
    return (arrival_rec_t *)((char *)s->hdr + s->hdr->arrival_off) +
           (size_t)r * (2 * ARRIVAL_PAIRS + 1) + i;
}

static inline call_rec_t *seg_calllog(const seg_t *s, int r)
{
    return (call_rec_t *)((char *)s->hdr + s->hdr->log_off) +
           (size_t)r * (SEG_CALLLOG + SEG_CALLPIN);
}

/* Cell i of a ring. */
static inline cell_t *seg_cell(const seg_t *s, ring_hdr_t *ring, uint32_t i)
{
    return (cell_t *)((char *)(ring + 1) + (size_t)i * s->hdr->cell_bytes);
}

static inline _Atomic uint32_t *seg_dir(const seg_t *s, int src, int dst)
{
    return (_Atomic uint32_t *)((char *)s->hdr + s->hdr->dir_off) +
           (size_t)src * s->hdr->nrank + (size_t)dst;
}

/* The ring from src to dst, or NULL while src has sent dst nothing. */
static inline ring_hdr_t *seg_ring_find(const seg_t *s, int src, int dst)
{
    uint32_t n = atomic_load_explicit(seg_dir(s, src, dst), memory_order_acquire);
    return n ? (ring_hdr_t *)((char *)s->hdr + s->hdr->chans_off +
                              (size_t)(n - 1) * s->hdr->chan_stride)
             : NULL;
}

/* Takes a ring for src -> dst from the pool (called by src only) and
 * reserves its memory; WEFT_ENOMEM, with a message saying how much the job
 * holds and how to give it more, when /dev/shm or WEFT_SHM_MAX runs out. */
int seg_ring_take(seg_t *s, int src, int dst, ring_hdr_t **ring);

/* Creates a segment for nrank ranks that may run on cores cores together
 * (cpus.h; 0: those this process may run on), its name written to
 * name[64].  With keep_fd, the name is unlinked at once and the open
 * descriptor returned for children to inherit; name becomes "fd:N", which
 * seg_attach takes. */
WEFT_TOOL_API int seg_create(int nrank, uint32_t cores, seg_t *s, char *name, size_t namelen,
                             int *keep_fd);
/* Attaches rank to an existing segment; the last rank to attach unlinks it. */
int seg_attach(const char *name, int rank, int nrank, seg_t *s);
WEFT_TOOL_API void seg_detach(seg_t *s);
void seg_unlink(const char *name);
/* Marks the job aborted (first caller wins) and wakes every rank. */
WEFT_TOOL_API void seg_abort(seg_t *s, int rank, uint32_t code, const char *msg);
void seg_wake(seg_t *s, int r);
void seg_wake_all(seg_t *s);

/* futex helpers on shared memory */
void futex_wait_u32(_Atomic uint32_t *addr, uint32_t val, int timeout_ms);
void futex_wake_all(_Atomic uint32_t *addr);

/* The heavy side of an asymmetric fence: membarrier(2)'s global expedited
 * barrier, a full fence on every CPU running a registered process.
 * membarrier_register: once per process, true when the kernel offers it
 * (and WEFT_MEMBARRIER is not 0); membarrier_global: false if it failed. */
bool membarrier_register(void);
bool membarrier_global(void);

#endif
