/* test_sim.c — the LogGOPS simulator against hand-computed times, exact to
 * the nanosecond: one eager send, one rendezvous send, a 3-rank chain, a
 * 4-rank binomial broadcast (by hand and as weft builds it), a ping-pong
 * with computation, a 16-to-1 gather; weft's binomial broadcast and linear
 * pipeline against their closed-form LogGP times over several P, n and k;
 * the arrival-driven algorithms' programs (pap.c) on arrivals worked by hand;
 * the lower bounds; and every bad input (model values, presets, programs
 * that deadlock or leave a message unreceived). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "sim/evq.h"
#include "sim/goal.h"
#include "sim/sim.h"
#include "testing.h"

/* ---- programs written by hand ---- */

typedef struct {
    int kind, peer, flags;
    uint32_t tag;
    uint64_t size;  /* bytes, or ns for a calc */
    int dep[2];     /* ops this one requires, -1 none */
} hop_t;

#define MAXOPS 40
typedef struct {
    int nops[32];
    hop_t op[32][MAXOPS];
} hand_t;

static int add(hand_t *h, int r, int kind, int peer, uint64_t size, int dep)
{
    hop_t *o = &h->op[r][h->nops[r]];
    o->kind = kind, o->peer = peer, o->flags = 0, o->tag = 0, o->size = size, o->dep[0] = dep, o->dep[1] = -1;
    return h->nops[r]++;
}

static int build_hand(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len)
{
    const hand_t *h = ctx;
    int n = h->nops[rank], ne = 0;
    for (int i = 0; i < n; i++)
        ne += (h->op[rank][i].dep[0] >= 0) + (h->op[rank][i].dep[1] >= 0);
    if (sim_prog_alloc(out, (uint32_t)n, (uint32_t)ne)) {
        snprintf(msg, len, "out of memory");
        return WEFT_ENOMEM;
    }
    int e = 0;
    for (int i = 0; i < n; i++) {
        const hop_t *o = &h->op[rank][i];
        sim_op_t *op = &out->ops[i];
        memset(op, 0, sizeof *op);
        op->kind = (uint8_t)o->kind, op->flags = (uint8_t)o->flags, op->peer = o->peer, op->tag = o->tag, op->size = o->size;
        op->nic = SIM_NIC_ANY;
        op->pending = (o->dep[0] >= 0) + (o->dep[1] >= 0);
        out->succ_first[i] = (uint32_t)e;
        for (int j = i + 1; j < n; j++)
            for (int d = 0; d < 2; d++)
                if (h->op[rank][j].dep[d] == i)
                    out->succ[e++] = (uint32_t)j;
    }
    out->succ_first[n] = (uint32_t)e;
    return 0;
}

/* the order every run of this test uses (main runs them under both) */
static int g_order = SIM_ORDER_LOGGOPSIM;
static sim_opts_t order_opts;

static sim_model_t test_model(void)
{
    sim_model_t m;
    sim_model_default(&m);
    m.L = 100, m.o = 10, m.g = 20, m.G = 2, m.O = 1, m.S = 1000, m.gamma = 0.5;
    return m;
}

static double run_hand(const sim_model_t *m, int P, hand_t *h, double *mean)
{
    sim_result_t r;
    char msg[300];
    int rc = sim_run(m, P, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == 0, "sim_run: %s", msg);
    if (mean)
        *mean = r.t_mean;
    return rc ? -1 : r.t_max;
}

static void test_hand_cases(void)
{
    sim_model_t m = test_model();
    double mean;
    hand_t *h = calloc(1, sizeof *h);

    /* eager, 101 B: the sender's CPU to o + 100 O = 110; the first byte in
     * at o + L = 110; taken in at 110 + o + 100 max(O, G) = 320 */
    add(h, 0, SIM_SEND, 1, 101, -1);
    add(h, 1, SIM_RECV, 0, 101, -1);
    double t = run_hand(&m, 2, h, &mean);
    CHECK(t == 320 && mean == 215, "eager send: %g (mean %g), want 320 (215)", t, mean);

    /* noise on every use of a CPU (probability 1, 50 ns): the sender to
     * 160, the receiver to 370 */
    sim_opts_t noisy = order_opts;
    noisy.noise_prob = 1, noisy.noise_ns = 50, noisy.noise_seed = 7;
    {
        sim_result_t nr;
        char nmsg[200];
        int nrc = sim_run(&m, 2, build_hand, h, &noisy, &nr, nmsg, sizeof nmsg);
        CHECK(nrc == 0 && nr.t_max == 370 && nr.t_mean == (160 + 370) / 2.0,
              "eager send with noise: %g (mean %g), want 370 (265): %s", nr.t_max, nr.t_mean,
              nrc ? nmsg : "");
        noisy.noise_prob = 1.5;
        nrc = sim_run(&m, 2, build_hand, h, &noisy, &nr, nmsg, sizeof nmsg);
        CHECK(nrc == WEFT_EINVAL && strstr(nmsg, "noise"), "noise probability 1.5 refused: %s",
              nmsg);
    }

    /* the same with a CPU slower per byte than the link (O 3 > G 2): the
     * sender is busy to 10 + 300 = 310, the receiver takes it in by 110 +
     * 10 + 300 = 420 */
    sim_model_t mo = m;
    mo.O = 3;
    t = run_hand(&mo, 2, h, &mean);
    CHECK(t == 420 && mean == 365, "eager send, O > G: %g (mean %g), want 420 (365)", t, mean);

    /* rendezvous, 2001 B > S: rank 1 computes 3000 ns before posting; the
     * message waits for it (taken in at 3000: 3000 + 10 + 4000 = 7010) and
     * the sender's send completes only then, so its calc of 50 runs
     * 3000..3050 */
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 1, 2001, -1);
    add(h, 0, SIM_CALC, -1, 50, 0);
    add(h, 1, SIM_CALC, -1, 3000, -1);
    add(h, 1, SIM_RECV, 0, 2001, 0);
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 7010 && mean == (7010 + 3050) / 2.0, "rendezvous: %g (mean %g), want 7010 (5030)",
          t, mean);
    /* the same message eager (S raised): the sender's calc runs at its
     * CPU's free time o + 2000 O = 2010 */
    sim_model_t me = m;
    me.S = 1 << 20;
    t = run_hand(&me, 2, h, &mean);
    CHECK(t == 7010 && mean == (7010 + 2060) / 2.0, "eager 2001 B: %g (mean %g), want 7010 (4535)",
          t, mean);

    /* 3-rank chain of 1-byte messages: 2 (L + 2o) = 240 */
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 1, 1, -1);
    int r = add(h, 1, SIM_RECV, 0, 1, -1);
    add(h, 1, SIM_SEND, 2, 1, r);
    add(h, 2, SIM_RECV, 1, 1, -1);
    t = run_hand(&m, 3, h, &mean);
    CHECK(t == 240 && mean == (10 + 130 + 240) / 3.0, "chain: %g (mean %g), want 240", t, mean);

    /* tags kept apart: rank 1 waits for tag 1 first; tag 0's message (in
     * at 110, taken in by 120) waits unexpected until its receive is posted
     * at 140, after tag 1's (in at 130, NIC free at 130, done 140) */
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 1, 1, -1);
    add(h, 0, SIM_SEND, 1, 1, -1);
    h->op[0][1].tag = 1;
    r = add(h, 1, SIM_RECV, 0, 1, -1);
    h->op[1][r].tag = 1;
    add(h, 1, SIM_RECV, 0, 1, r);
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 140 && mean == (140 + 30) / 2.0, "two tags out of order: %g (mean %g), want 140",
          t, mean);

    /* binomial broadcast on 4 ranks, 1 byte: 0 -> 2 at 0, 0 -> 1 at g = 20
     * (the NIC is the later of CPU 10 and NIC 20), 2 -> 3 once 2 has it
     * (120): finish 30, 140, 130, 240 */
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 2, 1, -1);
    add(h, 0, SIM_SEND, 1, 1, -1);
    add(h, 1, SIM_RECV, 0, 1, -1);
    r = add(h, 2, SIM_RECV, 0, 1, -1);
    add(h, 2, SIM_SEND, 3, 1, r);
    add(h, 3, SIM_RECV, 2, 1, -1);
    t = run_hand(&m, 4, h, &mean);
    CHECK(t == 240 && mean == 135, "binomial by hand: %g (mean %g), want 240 (135)", t, mean);

    /* ping-pong of 11 B with 100 ns of work between: there at 110, taken
     * in by 140 (10 + 10 max(O, G) = 30), work to 240, back at 240 + 110 =
     * 350, taken in by 380; the work as a reduce of 200 B (gamma 0.5) is
     * the same 100 ns */
    for (int as_reduce = 0; as_reduce < 2; as_reduce++) {
        memset(h, 0, sizeof *h);
        int s0 = add(h, 0, SIM_SEND, 1, 11, -1);
        add(h, 0, SIM_RECV, 1, 11, s0);
        r = add(h, 1, SIM_RECV, 0, 11, -1);
        int c = add(h, 1, SIM_CALC, -1, as_reduce ? 200 : 100, r);
        if (as_reduce)
            h->op[1][c].flags = SIM_REDUCE;
        add(h, 1, SIM_SEND, 0, 11, c);
        t = run_hand(&m, 2, h, &mean);
        CHECK(t == 380 && mean == (380 + 260) / 2.0, "ping-pong%s: %g (mean %g), want 380 (320)",
              as_reduce ? " with a reduce" : "", t, mean);
    }

    /* 16 ranks send 11 B to rank 0 at once: all in at 110, taken in one per
     * receive gap g + 10 G = 40 (the NIC, not the CPU's 30, is the limit):
     * the last at 110 + 15 * 40 = 710, done at 740 */
    memset(h, 0, sizeof *h);
    for (int s = 1; s <= 16; s++) {
        add(h, s, SIM_SEND, 0, 11, -1);
        add(h, 0, SIM_RECV, s, 11, -1);
    }
    t = run_hand(&m, 17, h, &mean);
    CHECK(t == 740, "gather 16 to 1: %g, want 740", t);

    /* a receive's CPU, two NICs a rank: rank 1 takes in 101 B from rank 3
     * at 110, and 1 B from rank 0 (which computes 140 first) in at 250,
     * which it forwards to rank 2.  LogGOPSim's receive holds rank 1's CPU
     * until 110 + 10 + 100 max(O, G) = 320: the small message is taken in
     * at 320, forwarded at 330 (CPU to 340), in at rank 2 at 440, taken
     * in by 450.  Offloaded, the CPU is rank 1's again at 110 + 10 + 100 O
     * = 220: the small message is in at 250 + 10 = 260 and forwarded then
     * (CPU to 270), in at rank 2 at 370, done 380; the big one still
     * completes at 320, which ends rank 1.  Finish times 150, 340 or 320,
     * 450 or 380, and 110. */
    memset(h, 0, sizeof *h);
    add(h, 3, SIM_SEND, 1, 101, -1);
    r = add(h, 0, SIM_CALC, -1, 140, -1);
    add(h, 0, SIM_SEND, 1, 1, r);
    add(h, 1, SIM_RECV, 3, 101, -1);
    r = add(h, 1, SIM_RECV, 0, 1, -1);
    add(h, 1, SIM_SEND, 2, 1, r);
    add(h, 2, SIM_RECV, 1, 1, -1);
    sim_model_t m2 = m;
    m2.ports = 2;
    t = run_hand(&m2, 4, h, &mean);
    CHECK(t == 450 && mean == (150 + 340 + 450 + 110) / 4.0,
          "LogGOPSim's receive holds the CPU: %g (mean %g), want 450 (262.5)", t, mean);
    m2.offload = 1;
    t = run_hand(&m2, 4, h, &mean);
    CHECK(t == 380 && mean == (150 + 320 + 380 + 110) / 4.0,
          "an offloaded receive frees the CPU: %g (mean %g), want 380 (240)", t, mean);
    /* the same run's timeline of rank 1, and every rank's finish */
    {
        char *text = NULL;
        size_t len = 0;
        FILE *tl = open_memstream(&text, &len);
        double fin[4] = {0};
        sim_opts_t so = order_opts;
        so.timeline = tl, so.timeline_rank = 1, so.finish = fin;
        sim_result_t tr;
        char tmsg[200];
        int trc = sim_run(&m2, 4, build_hand, h, &so, &tr, tmsg, sizeof tmsg);
        fclose(tl);
        const char *want[] = {"0.000\tready\top 0\trecv peer 3 tag 0 bytes 101\n",
                              "0.000\tposted\top 1\trecv peer 0 tag 0 bytes 1\n",
                              "110.000\ttaken in\tmessage from 3 tag 0 bytes 101\n",
                              "250.000\ttaken in\tmessage from 0 tag 0 bytes 1\n",
                              "260.000\tdone\top 1\trecv peer 0 tag 0 bytes 1\n",
                              "260.000\tstarted\top 2\tsend peer 2 tag 0 bytes 1\n",
                              "320.000\tdone\top 0\trecv peer 3 tag 0 bytes 101\n",
                              "320.000\tfinish\n"};
        bool all = trc == 0 && text;
        for (size_t i = 0; all && i < sizeof want / sizeof *want; i++)
            all = strstr(text, want[i]) != NULL;
        CHECK(all && strstr(text, "320.000\tfinish\n") == text + len - strlen("320.000\tfinish\n"),
              "rank 1's timeline: %s", trc ? tmsg : text ? text : "(none)");
        CHECK(fin[0] == 150 && fin[1] == 320 && fin[2] == 380 && fin[3] == 110,
              "finish times %g %g %g %g, want 150 320 380 110", fin[0], fin[1], fin[2], fin[3]);
        free(text);
        so.timeline = stderr, so.timeline_rank = 4;
        trc = sim_run(&m2, 4, build_hand, h, &so, &tr, tmsg, sizeof tmsg);
        CHECK(trc == WEFT_EINVAL && strstr(tmsg, "not a rank of 0..3"),
              "a timeline of rank 4 of 4 refused: %s", tmsg);
    }
    /* and a message nobody has posted for yet waits, offloaded, until its
     * last byte is in: the eager 101 B at 320 as above */
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 1, 101, -1);
    add(h, 1, SIM_RECV, 0, 101, -1);
    t = run_hand(&m2, 2, h, &mean);
    CHECK(t == 320 && mean == (110 + 320) / 2.0, "offloaded eager send: %g (mean %g), want 320",
          t, mean);
    free(h);
}


/* A reduce calc of 200 B at gamma 0.5 costs 100 ns, as a schedule's reduce
 * does: a two-rank schedule send / recv_reduce. */
static void test_reduce_cost(void)
{
    sim_model_t m = test_model();
    sched_t b;
    sched_img_t *s = NULL;
    sched_init(&b, 2, 1);
    sched_recv_reduce(&b, 0, 0, reg(BUF_OUT, 0, 50), false);
    CHECK(sched_commit(&b, &s) == 0, "commit");
    sim_prog_t p;
    CHECK(s && sim_prog_from_sched(s, 4, true, &p) == 0 && p.nops == 2 && p.ops[0].kind == SIM_RECV &&
              p.ops[1].kind == SIM_CALC && (p.ops[1].flags & SIM_REDUCE) && p.ops[1].size == 200 &&
              p.ops[1].pending == 1 && p.succ_first[1] - p.succ_first[0] == 1,
          "recv_reduce becomes a receive and a reduce");
    sim_prog_free(&p);
    sched_img_free(s);
    sched_free(&b);
    (void)m;
}

/* ---- weft's schedules against closed forms ---- */

static double sim_weft(const sim_model_t *m, weft_coll_t coll, const char *algo, int P,
                       uint64_t count, int root, int chunks, double *mean)
{
    sim_algo_t w;
    memset(&w, 0, sizeof w);
    w.al = algo_find(coll, algo);
    w.a.coll = coll, w.a.nrank = P, w.a.root = root, w.a.count = count, w.a.esize = 4;
    w.a.commutative = true;
    w.a.params.chunks = chunks;
    sim_result_t r;
    char msg[300];
    int rc = sim_run(m, P, sim_build_algo, &w, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == 0, "%s P=%d: %s", algo, P, msg);
    if (mean)
        *mean = r.t_mean;
    return r.t_max;
}

/* Ranks sharing cores (m.cores, m.sw): one rank's CPU time on a core at a
 * time, and a switch of sw before a rank takes its core from another. */
static void test_shared_cores(void)
{
    sim_model_t m = test_model();
    double mean, t;
    hand_t *h = calloc(1, sizeof *h);

    /* two calcs of 100 at time 0 on one core: rank 0 (the core's first
     * rank) runs 0..100; rank 1 waits, switches in 100..105, runs to 205 */
    add(h, 0, SIM_CALC, -1, 100, -1);
    add(h, 1, SIM_CALC, -1, 100, -1);
    m.cores = 1, m.sw = 5;
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 205 && mean == (100 + 205) / 2.0, "two calcs on one core: %g (mean %g), want 205",
          t, mean);
    m.sw = 0; /* no switch cost: one after the other */
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 200 && mean == 150, "two calcs on one core, free switch: %g, want 200", t);
    m.cores = 2; /* as many cores as ranks: LogGOPS */
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 100 && mean == 100, "two calcs on two cores: %g, want 100", t);

    /* the ping-pong of test_hand_cases (380 on a core each) on one core,
     * switch 5: rank 0 sends 0..20; the message is in at 110 where the
     * core is free, rank 1 switches in 110..115 and takes it to 145, works
     * to 245, sends to 265; the answer is in at 355, rank 0 switches in
     * to 360 and takes it to 390 */
    memset(h, 0, sizeof *h);
    int s0 = add(h, 0, SIM_SEND, 1, 11, -1);
    add(h, 0, SIM_RECV, 1, 11, s0);
    int r = add(h, 1, SIM_RECV, 0, 11, -1);
    int c = add(h, 1, SIM_CALC, -1, 100, r);
    add(h, 1, SIM_SEND, 0, 11, c);
    m.cores = 1, m.sw = 5;
    t = run_hand(&m, 2, h, &mean);
    CHECK(t == 390 && mean == (390 + 265) / 2.0,
          "ping-pong on one core: %g (mean %g), want 390 (327.5)", t, mean);

    /* a weft schedule: at least as many cores as ranks is LogGOPS to the
     * nanosecond; fewer cores, never faster */
    sim_model_t w = test_model();
    for (int P = 3; P <= 9; P += 3) {
        double alone = sim_weft(&w, WEFT_COLL_ALLREDUCE, "recursive_doubling", P, 1024, 0, 0, NULL);
        w.cores = (uint32_t)P, w.sw = 1000;
        double own = sim_weft(&w, WEFT_COLL_ALLREDUCE, "recursive_doubling", P, 1024, 0, 0, NULL);
        w.cores = 2;
        double two = sim_weft(&w, WEFT_COLL_ALLREDUCE, "recursive_doubling", P, 1024, 0, 0, NULL);
        w.cores = 0, w.sw = 0;
        CHECK(own == alone && two > alone, "P=%d on %d cores: %g, on 2: %g, alone %g", P, P, own,
              two, alone);
    }
    free(h);
}

/* The binomial broadcast in LogGP: a rank informed at t (its receive done,
 * CPU free) starts its j-th send (biggest subtree first) at t + j gap, gap =
 * max(o + (s-1)O, g + (s-1)G); the child is informed h = 2o + L + (s-1)
 * max(O, G) later.  A rank finishes when informed, or when its last send
 * leaves its CPU. */
static double binomial_closed(const sim_model_t *m, int P, int root, double s, double *mean)
{
    double gap = fmax(m->o + (s - 1) * m->O, m->g + (s - 1) * m->G);
    double h = 2 * m->o + m->L + (s - 1) * fmax(m->O, m->G);
    double *inf = calloc((size_t)P, sizeof *inf), tmax = 0, sum = 0;
    for (int v = 0; v < P; v++) { /* parents come before children in vrank order */
        int span = binomial_span(v, P), j = 0;
        double fin = inf[v];
        for (int mask = span >> 1; mask >= 1; mask >>= 1)
            if (v + mask < P) {
                inf[v + mask] = inf[v] + j * gap + h;
                fin = inf[v] + j * gap + m->o + (s - 1) * m->O;
                j++;
            }
        fin = fmax(fin, inf[v]);
        tmax = fmax(tmax, fin);
        sum += fin;
    }
    (void)root;
    free(inf);
    *mean = sum / P;
    return tmax;
}

static void test_closed_forms(void)
{
    sim_model_t m = test_model();
    const int Ps[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 100, 1000};
    const uint64_t counts[] = {1, 25, 250}; /* 4, 100, 1000 B: eager (S = 1000) */
    for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++)
        for (size_t c = 0; c < 3; c++) {
            int P = Ps[i], root = P / 3;
            double mean, want_mean;
            double t = sim_weft(&m, WEFT_COLL_BCAST, "binomial", P, counts[c], root, 0, &mean);
            double want = binomial_closed(&m, P, root, 4.0 * counts[c], &want_mean);
            CHECK(t == want && fabs(mean - want_mean) < 1e-6 * want_mean + 1e-9,
                  "binomial bcast P=%d n=%llu: %.3f (mean %.3f), closed form %.3f (%.3f)", P,
                  (unsigned long long)counts[c] * 4, t, mean, want, want_mean);
        }
    /* the pipeline (a chain) in the alpha-beta model (o = g = O = 0): chunk
     * j is at rank i at i L + (i + j)(c - 1) G, so the last chunk is at the
     * last rank at (P - 1) L + (P + k - 2)(c - 1) G */
    sim_model_t h;
    char msg[200];
    CHECK(sim_preset_load("hockney", &h, msg, sizeof msg) == 0, "hockney preset: %s", msg);
    h.G = 2; /* whole nanoseconds per byte keep the sums exact */
    h.g = 0; /* the classic form: the link's only cost is (c - 1) G */
    const int Pp[] = {2, 3, 5, 8, 13};
    const int ks[] = {1, 2, 4, 7, 16};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) {
            int P = Pp[i], k = ks[j];
            uint64_t count = (uint64_t)k * 250; /* chunks of 1000 B */
            double t = sim_weft(&h, WEFT_COLL_BCAST, "pipeline", P, count, 0, k, NULL);
            double want = (P - 1) * h.L + (P + k - 2) * 999.0 * h.G;
            CHECK(t == want, "pipeline bcast P=%d k=%d: %.3f, closed form %.3f", P, k, t, want);
        }
}

/* ---- GOAL out and back in ---- */

/* Every schedule-built allreduce, bcast and reduce at several P: exported
 * as GOAL, read back, simulated: the same max and mean to the ns (gamma is
 * a whole number so that reductions' calc times are exact). */
static void test_goal_round_trip(void)
{
    sim_model_t m;
    sim_model_default(&m);
    m.gamma = 1, m.S = 2000;
    const weft_coll_t colls[] = {WEFT_COLL_ALLREDUCE, WEFT_COLL_BCAST, WEFT_COLL_REDUCE};
    const int Ps[] = {1, 2, 3, 5, 8, 13};
    size_t nt;
    const algo_t *tab = algo_table(&nt);
    int tried = 0;
    for (size_t ai = 0; ai < nt; ai++)
        for (int c = 0; c < 3; c++) {
            const algo_t *al = &tab[ai];
            if (al->coll != colls[c] || al->board)
                continue;
            for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
                sim_algo_t w;
                memset(&w, 0, sizeof w);
                w.al = al;
                w.a.coll = al->coll, w.a.nrank = Ps[pi], w.a.root = Ps[pi] / 2;
                w.a.count = 1000, w.a.esize = 4, w.a.commutative = true;
                w.a.idempotent = (al->flags & ALGO_NEEDS_IDEMPOTENT) != 0 || al->usable;
                char why[300];
                if (algo_usable_why(al, &w.a, why, sizeof why))
                    continue;
                if (!strcmp(al->name, "recursive_doubling") && Ps[pi] == 5) {
                    /* a program with rounds is refused, never written without them */
                    char *t = NULL;
                    size_t l = 0;
                    FILE *g = open_memstream(&t, &l);
                    int rr = sim_goal_write(g, &m, Ps[pi], sim_build_algo, &w, why, sizeof why);
                    fclose(g);
                    free(t);
                    CHECK(rr == WEFT_EINTERNAL && strstr(why, "with rounds"),
                          "GOAL export of rounds: %d (%s)", rr, why);
                }
                char *text = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);
                w.joins = true;
                int rc = sim_goal_write(f, &m, Ps[pi], sim_build_algo, &w, why, sizeof why);
                w.joins = false; /* simulated below as the simulator runs it: rounds */
                fclose(f);
                CHECK(rc == 0, "%s %s P=%d: export: %s", weft_coll_name(al->coll), al->name,
                      Ps[pi], why);
                sim_goal_t *g = NULL;
                rc = rc ? rc : sim_goal_parse(text, len, "export", &g, why, sizeof why);
                CHECK(rc == 0, "%s %s P=%d: re-import: %s", weft_coll_name(al->coll), al->name,
                      Ps[pi], why);
                sim_result_t a, b;
                int ra = sim_run(&m, Ps[pi], sim_build_algo, &w, &order_opts, &a, why, sizeof why);
                int rb = g ? sim_run(&m, Ps[pi], sim_goal_build, g, &order_opts, &b, why, sizeof why) : -1;
                CHECK(ra == 0 && rb == 0 && a.t_max == b.t_max && a.t_mean == b.t_mean &&
                          a.events == b.events,
                      "%s %s P=%d: schedule %.3f/%.3f, its GOAL %.3f/%.3f (%s)",
                      weft_coll_name(al->coll), al->name, Ps[pi], a.t_max, a.t_mean, b.t_max,
                      b.t_mean, why);
                sim_goal_free(g);
                free(text);
                tried++;
            }
        }
    CHECK(tried > 80, "only %d round trips", tried);
}

/* Parses a GOAL text and simulates it under m. */
static int run_goal_text(const char *text, sim_model_t *m, sim_result_t *r, char *msg,
                         size_t len)
{
    sim_goal_t *g;
    int rc = sim_goal_parse(text, strlen(text), "hand.goal", &g, msg, len);
    if (rc)
        return rc;
    rc = sim_run(m, sim_goal_nrank(g), sim_goal_build, g, &order_opts, r, msg, len);
    sim_goal_free(g);
    return rc;
}

/* GOAL as LogGOPSim's users write it (labels, irequires, cpu, nic,
 * comments), and every malformed file refused with its line. */
static void test_goal_parse(void)
{
    const char *good = "// a ping-pong\n"
                       "num_ranks 2\n"
                       "rank 0 {\n"
                       "  s: send 11b to 1 tag 5 nic 0 /* first */\n"
                       "  r: recv 11b from 1 tag 6\n"
                       "  r requires s\n"
                       "}\n"
                       "rank 1 {\n"
                       "a: recv 11b from 0 tag 5\n"
                       "w:calc 100 cpu 0\n"
                       "b: send 11b to 0 tag 6\n"
                       "w requires a\n"
                       "b requires w\n"
                       "}\n";
    sim_model_t m = test_model();
    sim_result_t r;
    char msg[300];
    int rc = run_goal_text(good, &m, &r, msg, sizeof msg);
    CHECK(rc == 0 && r.t_max == 380, "ping-pong from GOAL: %g, want 380 (%s)", r.t_max, msg);
    /* Three eager 1-byte sends on one (source, tag) (a key of several
     * receives: their FIFO's links are set aside), all three receives
     * posted at 0, and on each rank a calc after all three (three edges:
     * its count is set aside too, beside the two bits).  Rank 0 issues
     * at 0, 20, 40 (NIC gap), its calc runs 50..150.  The messages are in
     * at 110, 130, 150; the first posted receive must take the first
     * (FIFO), so rank 1's calc of 1000 after it runs from 120 (CPU after
     * o) to 1120 -- taking the third first would start it at 160.  The
     * other two messages wait for that CPU: taken in at 1120 and at 1140
     * (receive NIC), then the 3-edge calc runs 1150..1160. */
    const char *fifo = "num_ranks 2\n"
                       "rank 0 {\n"
                       "a: send 1b to 1 tag 0\nb: send 1b to 1 tag 0\nc: send 1b to 1 tag 0\n"
                       "d: calc 100\nd requires a\nd requires b\nd requires c\n"
                       "}\n"
                       "rank 1 {\n"
                       "a: recv 1b from 0 tag 0\nb: recv 1b from 0 tag 0\nc: recv 1b from 0 tag 0\n"
                       "d: calc 1000\nd requires a\n"
                       "e: calc 10\ne requires a\ne requires b\ne requires c\n"
                       "}\n";
    m.O = 0, m.G = 0;
    rc = run_goal_text(fifo, &m, &r, msg, sizeof msg);
    CHECK(rc == 0 && r.t_max == 1160 && r.t_mean == (150 + 1160) / 2.0,
          "one key's receives in posting order, 3-edge calcs: %g (mean %g), want 1160 (655) "
          "(%s)", r.t_max, r.t_mean, rc ? msg : "");
    sim_goal_t *g;
    struct {
        const char *text, *want;
    } bad[] = {
        {"rank 0 {\n}\n", ":1: 'rank' before num_ranks"},
        {"num_ranks 0\n", ":1: num_ranks: want 1 to 2^24"},
        {"num_ranks 99999999\n", ":1: num_ranks"},
        {"num_ranks 2\nnum_ranks 2\n", ":2: num_ranks given twice"},
        {"num_ranks 2\nrank 2 {\n}\n", ":2: expected 'rank R {' with R in 0..1"},
        {"num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n", ":4: rank 0's block given twice"},
        {"num_ranks 2\nrank 0 {\nrank 1 {\n", ":3: 'rank' inside rank 0's block"},
        {"num_ranks 2\nrank 0 {\nl: send 8 to 1\n}\n", ":3: send: expected a size such as 8b"},
        {"num_ranks 2\nrank 0 {\nl: send 0b to 1\n}\n", ":3: send: size '0b'"},
        {"num_ranks 2\nrank 0 {\nl: send 8b from 1\n}\n", ":3: send: expected 'to'"},
        {"num_ranks 2\nrank 0 {\nl: recv 8b from 2\n}\n", ":3: recv: peer '2' is not a rank"},
        {"num_ranks 2\nrank 0 {\nl: recv 8b from -1\n}\n", ":3: recv: -1 (any source)"},
        {"num_ranks 2\nrank 0 {\nl: recv 8b from 1 tag -1\n}\n", ":3: recv: tag -1"},
        {"num_ranks 2\nrank 0 {\nl: calc x\n}\n", ":3: calc: expected a time"},
        {"num_ranks 2\nrank 0 {\nl: calc 5 nic 1\n}\n", ":3: unexpected 'nic'"},
        {"num_ranks 2\nrank 0 {\nl: send 8b to 1 nic 64\n}\n", ":3: nic: expected 0 to 63"},
        {"num_ranks 2\nrank 0 {\nl: send 8b to 1 cpu 256\n}\n", ":3: cpu: expected 0 to 255"},
        {"num_ranks 2\nrank 0 {\nl: calc 5\nl: calc 6\n}\n", ":4: label 'l' defined twice"},
        {"num_ranks 2\nrank 0 {\nl: calc 5\nl requires m\n}\n", ":4: label 'm' is not defined"},
        {"num_ranks 2\nrank 0 {\nl: calc 5\nl requires l\n}\n", ":4: 'l' depends on itself"},
        {"num_ranks 2\nrank 0 {\nl: calc 5\nl requires\n}\n", ":4: expected 'LABEL requires"},
        {"num_ranks 2\nrank 0 {\n9x: calc 5\n}\n", ":3: '9x' is not a label"},
        {"num_ranks 2\nrank 0 {\nl: jump 5\n}\n", ":3: expected send, recv, calc"},
        {"num_ranks 2\nl: calc 5\n", ":2: 'l' outside a rank block"},
        {"num_ranks 2\n}\n", ":2: '}' outside a rank block"},
        {"num_ranks 2\nrank 0 {\nl: calc 5\n", ":3: rank 0's block is never closed"},
        {"num_ranks 2\n/* open\n", ":2: a comment is never closed"},
        {"// nothing\n", ":1: no num_ranks line"},
        {"num_ranks 2\nrank 0 {\nl: calc 99999999999999999999\n}\n", ":3: calc: expected"},
        {"num_ranks 2\nrank 0 { a b c d e f g h i j k l m n o p q\n", ":2: too many words"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = sim_goal_parse(bad[i].text, strlen(bad[i].text), "bad.goal", &g, msg, sizeof msg);
        CHECK(rc == WEFT_EINVAL && g == NULL && strstr(msg, "bad.goal") &&
                  strstr(msg, bad[i].want),
              "bad GOAL %zu: got '%s', want '%s'", i, msg, bad[i].want);
    }
    /* cpu and nic annotations survive a write and a read: the same time */
    const char *annotated = "num_ranks 2\nrank 0 {\na: send 100b to 1 tag 3 cpu 1 nic 1\n"
                            "b: calc 40 cpu 1\nc: send 100b to 1 tag 4 nic 0\nb requires a\n"
                            "c irequires b\n}\nrank 1 {\nx: recv 100b from 0 tag 3 cpu 1\n"
                            "y: recv 100b from 0 tag 4 nic 1\n}\n";
    rc = sim_goal_parse(annotated, strlen(annotated), "ann.goal", &g, msg, sizeof msg);
    CHECK(rc == 0, "annotated GOAL: %s", msg);
    if (!rc) {
        m = test_model();
        sim_goal_adapt(g, &m);
        CHECK(m.cpus == 2 && m.ports == 2, "cpus %d ports %d from the file", m.cpus, m.ports);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        rc = sim_goal_write(f, &m, 2, sim_goal_build, g, msg, sizeof msg);
        fclose(f);
        sim_goal_t *g2 = NULL;
        int rc2 = rc ? rc : sim_goal_parse(text, len, "rewritten", &g2, msg, sizeof msg);
        CHECK(rc2 == 0, "annotated GOAL written and read again: %s", msg);
        sim_result_t r1, r2;
        int a1 = sim_run(&m, 2, sim_goal_build, g, &order_opts, &r1, msg, sizeof msg);
        int a2 = g2 ? sim_run(&m, 2, sim_goal_build, g2, &order_opts, &r2, msg, sizeof msg) : -1;
        CHECK(a1 == 0 && a2 == 0 && r1.t_max == r2.t_max && r1.t_mean == r2.t_mean,
              "annotated GOAL round trip: %g/%g", r1.t_max, a2 == 0 ? r2.t_max : -1.0);
        sim_goal_free(g2);
        sim_goal_free(g);
        free(text);
    }

    /* a deadlocked GOAL file is a simulation error, not a crash */
    const char *cyc = "num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\na requires b\n"
                      "b requires a\n}\n";
    m = test_model();
    rc = run_goal_text(cyc, &m, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "deadlock: rank 0 never finishes"),
          "a dependency cycle: %s", msg);
}

/* ---- lower bounds ---- */

/* One schedule-built algorithm of any collective, as weft sim runs it: its
 * time, or -1 where it cannot serve the call. */
static double sim_any(const sim_model_t *m, const algo_t *al, int P, uint64_t count)
{
    sim_algo_t w;
    memset(&w, 0, sizeof w);
    w.al = al;
    w.a.coll = al->coll, w.a.nrank = P, w.a.root = P / 2, w.a.count = count, w.a.esize = 4;
    w.a.commutative = true;
    w.a.idempotent = (al->flags & ALGO_NEEDS_IDEMPOTENT) != 0 || al->usable;
    char why[300];
    if (algo_usable_why(al, &w.a, why, sizeof why))
        return -1;
    sim_result_t r;
    int rc = sim_run(m, P, sim_build_algo, &w, &order_opts, &r, why, sizeof why);
    CHECK(rc == 0, "%s %s P=%d: %s", weft_coll_name(al->coll), al->name, P, why);
    return rc ? -1 : r.t_max;
}

static void test_bounds(void)
{
    sim_model_t m;
    char msg[200];
    sim_model_default(&m); /* L 2500, o 1500, g 1000, G 6 */
    CHECK(sim_lower_bound(WEFT_COLL_ALLREDUCE, 1, 1 << 20, &m) == 0, "P = 1 costs nothing");
    /* two ranks: one message of n bytes, taken in at max(min(g, G),
     * min(o, max(O, G))) = 6 ns a byte after its first */
    CHECK(sim_lower_bound(WEFT_COLL_BCAST, 2, 1000, &m) == 5500 + 999 * 6.0, "bcast, P = 2");
    /* the greedy broadcast under LogGOPSim's defaults: the root's sends
     * start at 0, 1500, 3000, 4500, 6000, ..., and a rank reached by a
     * send at s sends from s + 5500 (o + L + o); the (P - 1)-th earliest
     * send of all, then one message's 5500 */
    const double last_send[] = {0, 0, 0, 1500, 3000, 4500, 5500, 6000};
    for (int P = 2; P <= 7; P++)
        CHECK(sim_lower_bound(WEFT_COLL_BCAST, P, 1, &m) == last_send[P] + 5500 &&
                  sim_lower_bound(WEFT_COLL_BARRIER, P, 0, &m) == last_send[P] + 5500,
              "P = %d: bcast %.1f, barrier %.1f, want %.1f", P,
              sim_lower_bound(WEFT_COLL_BCAST, P, 1, &m),
              sim_lower_bound(WEFT_COLL_BARRIER, P, 0, &m), last_send[P] + 5500);
    /* and the linear broadcast of 8 bytes meets it at P = 5: 4500 + 5500
     * + 7 bytes at 6 ns */
    double t = sim_weft(&m, WEFT_COLL_BCAST, "linear", 5, 2, 0, 0, NULL);
    CHECK(t == sim_lower_bound(WEFT_COLL_BCAST, 5, 8, &m) && t == 10042,
          "linear bcast P = 5: %.3f, bound %.3f", t, sim_lower_bound(WEFT_COLL_BCAST, 5, 8, &m));
    /* no gaps at all: one hop reaches everyone */
    sim_model_t z = m;
    z.o = 0, z.g = 0;
    CHECK(sim_lower_bound(WEFT_COLL_BCAST, 1000, 1, &z) == z.L, "o = g = 0: %.1f",
          sim_lower_bound(WEFT_COLL_BCAST, 1000, 1, &z));

    /* Every schedule-built algorithm of every collective at or above its
     * bound, under the presets and models chosen to break a careless one:
     * o and g tiny against L (many messages in flight), O above G, two
     * NICs, a costly reduction, rendezvous from small sizes, receives
     * offloaded to the NIC. */
    sim_model_t models[8];
    sim_model_default(&models[0]);
    CHECK(sim_preset_load("hockney", &models[1], msg, sizeof msg) == 0, "hockney: %s", msg);
    models[2] = models[0];
    models[2].o = 0, models[2].g = 5, models[2].G = 0.5, models[2].L = 2000;
    models[3] = models[0];
    models[3].L = 500, models[3].o = 100, models[3].g = 50, models[3].G = 0.2, models[3].O = 1;
    models[4] = models[3];
    models[4].ports = 2, models[4].gamma = 0.3;
    models[5] = models[0];
    models[5].S = 256, models[5].gamma = 2, models[5].g = 3000;
    models[6] = models[0], models[7] = models[4]; /* receives offloaded to the NIC */
    models[6].offload = models[7].offload = 1, models[6].gamma = 0.25;
    const int Ps[] = {2, 3, 5, 8, 13, 32};
    const uint64_t counts[] = {1, 250, 16384, 262144};
    size_t nt;
    const algo_t *tab = algo_table(&nt);
    int checked = 0;
    for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++)
        for (size_t ai = 0; ai < nt; ai++) {
            const algo_t *al = &tab[ai];
            if (al->board)
                continue;
            for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++)
                for (size_t ci = 0; ci < 4; ci++) {
                    int P = Ps[pi];
                    if (counts[ci] > 16384 && P > 8)
                        continue;
                    double ts = sim_any(&models[mi], al, P, counts[ci]);
                    if (ts < 0)
                        continue;
                    double lb = sim_lower_bound(al->coll, P, counts[ci] * 4, &models[mi]);
                    CHECK(lb >= 0 && ts >= lb * (1 - 1e-12),
                          "model %zu, %s %s P=%d, %llu B: %.3f below the bound %.3f", mi,
                          weft_coll_name(al->coll), al->name, P,
                          (unsigned long long)counts[ci] * 4, ts, lb);
                    checked++;
                }
        }
    CHECK(checked > 1000, "%d algorithm runs held to their bounds", checked);
}

/* ---- bad input ---- */

static void test_bad_input(void)
{
    sim_model_t m;
    sim_model_default(&m);
    char msg[300];
    struct {
        const char *key, *val, *want;
    } bad[] = {{"L", "-1", "negative"},       {"o", "nan", "not a number"},
               {"G", "inf", "not a number"},  {"g", "1e20", "absurd"},
               {"gamma", "2e9", "absurd"},    {"ports", "0", "1 to 64"},
               {"ports", "1.5", "whole"},     {"S", "x", "not a number"},
               {"Q", "1", "unknown parameter"}, {"L", "", "not a number"},
               {"cores", "1.5", "whole"},     {"cores", "-2", "negative"},
               {"cores", "16777217", "0 (a core per rank) to 2^24"},
               {"switch", "nan", "not a number"}, {"switch", "1e13", "absurd"},
               {"offload", "2", "not 0 (LogGOPSim's receive) or 1"},
               {"offload", "0.5", "whole"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sim_model_set(&m, bad[i].key, bad[i].val, msg, sizeof msg);
        CHECK(rc == -1 && strstr(msg, bad[i].want), "%s=%s: got '%s', want '%s'", bad[i].key,
              bad[i].val, msg, bad[i].want);
    }
    CHECK(sim_preset_load("nosuch", &m, msg, sizeof msg) == -1 && strstr(msg, "loggopsim"),
          "unknown preset names the choices: %s", msg);
    sim_result_t rr;
    CHECK(sim_run(&m, 0, build_hand, NULL, NULL, &rr, msg, sizeof msg) == WEFT_EINVAL &&
              sim_run(&m, (1 << 24) + 1, build_hand, NULL, NULL, &rr, msg, sizeof msg) ==
                  WEFT_EINVAL &&
              strstr(msg, "want 1 to 2^24"),
          "rank counts outside 1 to 2^24 refused: %s", msg);

    /* preset files: round trip, then broken ones naming file and line */
    char path[] = "/tmp/weft-test-sim-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    sim_model_t w = test_model(), back;
    w.cores = 3, w.sw = 1234.5, w.offload = 1;
    CHECK(sim_preset_write(path, &w, "test") == 0, "write preset");
    CHECK(sim_preset_load(path, &back, msg, sizeof msg) == 0 && back.L == w.L && back.G == w.G &&
              back.S == w.S && back.gamma == w.gamma && back.O == w.O && back.cores == 3 &&
              back.sw == 1234.5 && back.offload == 1,
          "preset round trip: %s", msg);
    struct {
        const char *text, *want;
    } files[] = {{"weft-preset 2\nL 1\n", ":1: want 'weft-preset 1'"},
                 {"", "empty"},
                 {"weft-preset 1\nL 1\nG -3\n", ":3: G: -3 is negative"},
                 {"weft-preset 1\nL\n", ":2: want 'KEY VALUE'"},
                 {"weft-preset 1\nfoo 1\n", ":2: unknown parameter 'foo'"},
                 {"weft-preset 1\nL 1 2\n", ":2: want 'KEY VALUE'"}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        FILE *f = fopen(path, "w");
        fputs(files[i].text, f);
        fclose(f);
        int rc = sim_preset_load(path, &back, msg, sizeof msg);
        CHECK(rc == -1 && strstr(msg, files[i].want) && strstr(msg, path),
              "preset file %zu: got '%s', want '%s'", i, msg, files[i].want);
    }
    unlink(path);

    /* programs that cannot finish */
    hand_t *h = calloc(1, sizeof *h);
    sim_result_t r;
    sim_model_t tm = test_model();
    add(h, 1, SIM_RECV, 0, 4, -1);
    int rc = sim_run(&tm, 2, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "rank 1 waits for a message from 0"),
          "a receive nobody sends to: %s", msg);
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 1, 4, -1);
    rc = sim_run(&tm, 2, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "from rank 0 to rank 1") && strstr(msg, "never received"),
          "a message nobody receives: %s", msg);
    memset(h, 0, sizeof *h);
    add(h, 0, SIM_SEND, 5, 4, -1);
    rc = sim_run(&tm, 2, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "peer 5"), "a peer out of range: %s", msg);
    /* a rendezvous send both ways before the receives: a real deadlock */
    memset(h, 0, sizeof *h);
    int s0 = add(h, 0, SIM_SEND, 1, 5000, -1);
    add(h, 0, SIM_RECV, 1, 5000, s0);
    int s1 = add(h, 1, SIM_SEND, 0, 5000, -1);
    add(h, 1, SIM_RECV, 0, 5000, s1);
    rc = sim_run(&tm, 2, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "deadlock"), "rendezvous both ways: %s", msg);
    rc = sim_run(&tm, 0, build_hand, h, &order_opts, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL, "P = 0 refused");
    double st[2] = {0, NAN};
    sim_opts_t so = {.start = st, .order = g_order};
    rc = sim_run(&tm, 2, build_hand, h, &so, &r, msg, sizeof msg);
    CHECK(rc == WEFT_EINVAL && strstr(msg, "start time"), "a NaN start time: %s", msg);
    free(h);
}

/* A late rank: the message waits for its start, and the skew shows in the
 * time (the 3-rank chain with rank 1 starting at 1000). */
/* CPU noise from a detour trace: the rest of a detour under way, and every
 * detour that begins while the CPU is used, the trace repeating. */
static void test_noise_trace(void)
{
    const char *text = "# two detours, the trace 1010 ns long\n100 50\n1000 10\n";
    sim_trace_t tr;
    char msg[300];
    CHECK(sim_trace_parse(text, strlen(text), "t", &tr, msg, sizeof msg) == 0 && tr.n == 2 &&
              tr.period == 1010 && tr.total == 60,
          "trace parsed: %s", msg);
    struct {
        double x, len, want;
    } c[] = {{0, 200, 50},    /* the detour at 100 begins inside */
             {110, 20, 40},   /* under way at 110: 40 left */
             {150, 800, 0},   /* between the two */
             {500, 1000, 60}, /* the one at 1000, then past the wrap the one at 100 */
             {1500, 10, 0},   /* 490 ns into the second period: nothing */
             {0, 2220, 170}}; /* two whole periods (120) and 200 ns more (50) */
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        double got = sim_trace_detour(&tr, c[i].x, c[i].len);
        CHECK(got == c[i].want, "detour at %g for %g: %g, want %g", c[i].x, c[i].len, got,
              c[i].want);
    }
    /* rank 0 computes 200 ns, then sends 1 byte: the calc meets the detour
     * at 100 (to 250), the send 250..260; the message is in at 360 and
     * taken in by 370 (every rank reads the trace from its start) */
    hand_t *h = calloc(1, sizeof *h);
    int k = add(h, 0, SIM_CALC, -1, 200, -1);
    add(h, 0, SIM_SEND, 1, 1, k);
    add(h, 1, SIM_RECV, 0, 1, -1);
    sim_model_t m = test_model();
    sim_opts_t so = order_opts;
    so.trace = &tr, so.trace_offset = 0;
    sim_result_t r;
    int rc = sim_run(&m, 2, build_hand, h, &so, &r, msg, sizeof msg);
    CHECK(rc == 0 && r.t_max == 370 && r.t_mean == (260 + 370) / 2.0,
          "noise trace: %g (mean %g), want 370 (315): %s", r.t_max, r.t_mean, rc ? msg : "");
    /* drawn offsets: repeatable for a seed, never less than no noise */
    so.trace_offset = -1, so.noise_seed = 5;
    sim_result_t r2;
    rc = sim_run(&m, 2, build_hand, h, &so, &r, msg, sizeof msg) ||
         sim_run(&m, 2, build_hand, h, &so, &r2, msg, sizeof msg);
    CHECK(rc == 0 && r.t_max == r2.t_max && r.t_max >= 320, "drawn offsets: %g and %g",
          r.t_max, r2.t_max);
    free(h);
    sim_trace_free(&tr);

    /* a period far below the lengths asked: whole periods counted at once,
     * the walk at most twice round the trace (it once went round 1e284
     * times: found by fuzz_noise) */
    text = "0 1e-300\n";
    CHECK(sim_trace_parse(text, strlen(text), "t", &tr, msg, sizeof msg) == 0, "tiny: %s", msg);
    double tiny = sim_trace_detour(&tr, 3e-300, 1);
    CHECK(isfinite(tiny) && fabs(tiny - 1) < 1e-9, "tiny period's detours for 1 ns: %g", tiny);
    sim_trace_free(&tr);

    struct {
        const char *text, *want;
    } bad[] = {{"", "no detours"},
               {"# nothing\n\n", "no detours"},
               {"100\n", "t:1: want 'START DURATION'"},
               {"100 50 7\n", "t:1: want 'START DURATION'"},
               {"1 x\n", "t:1: duration 'x' is not a number"},
               {"-5 1\n", "t:1: start -5 is not 0 to an hour"},
               {"1 nan\n", "not a number"},
               {"0 0\n", "spans 0 ns"},
               {"100 50\n120 10\n", "t:2: the detour at 120 ns begins before"},
               {"200 1\n100 1\n", "t:2: the detour at 100 ns begins before"},
               {"5 1e13\n", "not 0 to an hour"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        msg[0] = '\0';
        rc = sim_trace_parse(bad[i].text, strlen(bad[i].text), "t", &tr, msg, sizeof msg);
        CHECK(rc == -1 && strstr(msg, bad[i].want) && !tr.n && !tr.start,
              "trace '%s': got '%s', want '%s'", bad[i].text, msg, bad[i].want);
    }
    CHECK(sim_trace_load("/nonexistent/trace", &tr, msg, sizeof msg) == -1 &&
              strstr(msg, "/nonexistent/trace"),
          "missing trace file named: %s", msg);
}

static void test_start_times(void)
{
    sim_model_t m = test_model();
    hand_t *h = calloc(1, sizeof *h);
    add(h, 0, SIM_SEND, 1, 1, -1);
    int r = add(h, 1, SIM_RECV, 0, 1, -1);
    add(h, 1, SIM_SEND, 2, 1, r);
    add(h, 2, SIM_RECV, 1, 1, -1);
    double st[3] = {0, 1000, 0};
    sim_opts_t so = {.start = st, .order = g_order};
    sim_result_t res;
    char msg[200];
    int rc = sim_run(&m, 3, build_hand, h, &so, &res, msg, sizeof msg);
    /* rank 1 takes the message in at 1000 (done 1010), sends at 1010, rank 2
     * has it at 1010 + 110 + 10 = 1130 */
    CHECK(rc == 0 && res.t_max == 1130 && res.slowest == 2, "late rank: %g (slowest %d)",
          res.t_max, res.slowest);
    free(h);
}

/* The limits a caller may set: past each, WEFT_ENOTSUP and a reason that
 * starts "stopped"; a run that needs exactly max_events is not stopped. */
static void test_limits(void)
{
    sim_model_t m = test_model();
    sim_algo_t w;
    memset(&w, 0, sizeof w);
    w.al = algo_find(WEFT_COLL_BCAST, "binomial");
    w.a.coll = WEFT_COLL_BCAST, w.a.nrank = 64, w.a.count = 16, w.a.esize = 4;
    w.a.commutative = true;
    sim_result_t r;
    char msg[300];
    sim_opts_t so = {.order = g_order};
    CHECK(sim_run(&m, 64, sim_build_algo, &w, &so, &r, msg, sizeof msg) == 0, "free run: %s", msg);
    uint64_t need = r.events;
    so.max_events = need;
    CHECK(sim_run(&m, 64, sim_build_algo, &w, &so, &r, msg, sizeof msg) == 0,
          "a run of exactly max_events (%llu) was stopped: %s", (unsigned long long)need, msg);
    so.max_events = need / 2;
    int rc = sim_run(&m, 64, sim_build_algo, &w, &so, &r, msg, sizeof msg);
    CHECK(rc == WEFT_ENOTSUP && !strncmp(msg, "stopped after", 13), "max_events: %d %s", rc, msg);
    so.max_events = 0, so.max_bytes = 1000;
    rc = sim_run(&m, 64, sim_build_algo, &w, &so, &r, msg, sizeof msg);
    CHECK(rc == WEFT_ENOTSUP && !strncmp(msg, "stopped at", 10), "max_bytes: %d %s", rc, msg);
    so.max_bytes = 0, so.max_seconds = 1e-9;
    rc = sim_run(&m, 64, sim_build_algo, &w, &so, &r, msg, sizeof msg);
    CHECK(rc == WEFT_ENOTSUP && strstr(msg, "s (the limit asked for)"), "max_seconds: %d %s", rc,
          msg);
}

/* ---- the arrival-driven algorithms as programs (pap.c) ---- */

/* Three ranks arriving at 0, 10 and 20 us (and the other way round), 8
 * bytes, L 100, o 10, g 5, no per-byte costs, everything eager; the times
 * worked out by hand, message by message:
 *   pap_chain allreduce: 0 -> 1 -> 2, each handing on once the next one's
 *     1-byte arrival message is in: rank 1's reaches 0 at 10110 (taken in
 *     by 10120), 0 sends the partial (10120-10130), taken in by 1 at
 *     10230-10240; rank 2's arrival is in at 1 by 20120, 1 sends (20120-
 *     20130), 2 has the result at 20240 and sends it to 1 (20240-20250) and
 *     0 (20250-20260), taken in by 20360 and 20370: max 20370, mean
 *     (20370 + 20360 + 20260) / 3 = 20330; reversed, the chain runs
 *     2 -> 1 -> 0 and the same times follow;
 *   pap_leader: rank 0 (first) takes 1's input in at 10110-10120 and 2's at
 *     20110-20120, sends to 1 and 2 at 20120 and 20130, taken in at 20240
 *     and 20250: max 20250, mean (20140 + 20240 + 20250) / 3 = 20210;
 *   shm_twostep, reversed: rank 0 leads though it comes last, takes both
 *     inputs in at 20000-20020, sends at 20020 and 20030: max 20150, mean
 *     20110, where pap_leader (rank 2 leads) is 20250 / 20210 again;
 *   pap_chain reduce to rank 0: as the allreduce to 20240, when 2 sends the
 *     result to 0 (20240-20250), taken in at 20350-20360; rank 1 leaves
 *     once it has handed on, at 20130: max 20360, mean (20360 + 20130 +
 *     20250) / 3. */
/* hier_pap as a program: by hand on 2 ranks of one node starting
 * together (the model of test_arrival_programs): rank 1's arrival message
 * is in at rank 0 by 120, rank 0 sends its input (120-130), rank 1 has the
 * node's sum at 240 and sends it to the leader (240-250), taken in by 360;
 * the tail's broadcast reaches rank 1 at 470-480: max 480, mean 425.  With
 * every rank its own node the node level is empty, and the program must
 * be hier's exactly. */
static void test_hier_pap(const sim_model_t *m)
{
    coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = WEFT_COLL_ALLREDUCE, a.nrank = 2, a.count = 8, a.esize = 1;
    a.commutative = a.shared_board = a.node_board = true;
    sim_pap_t c;
    sim_result_t r;
    char msg[200] = "";
    int rc = sim_pap_init_hier(&c, &a, NULL);
    if (!rc)
        rc = sim_run(m, 2, sim_build_pap, &c, NULL, &r, msg, sizeof msg);
    CHECK(rc == 0 && r.t_max == 480 && r.t_mean == 425, "hier_pap, 2 ranks: %g (mean %g) %s",
          r.t_max, r.t_mean, msg);
    sim_pap_free(&c);
    /* node=leader, rank 1 arriving first (at 0, rank 0 at 100): rank 1
     * reduces; rank 0's input is in by 220, the sum goes back to the
     * leader (220-230, in by 340), whose broadcast reaches rank 1 at 450-
     * 460: max 460, mean (350 + 460) / 2.  node=twostep: rank 0 reduces
     * (rank 1's input in at 110-120) and broadcasts at 120-130, taken in at
     * 230-240: max 240, mean (130 + 240) / 2. */
    const double late0[2] = {100, 0};
    static const struct {
        int level;
        double t_max, t_mean;
    } lv[] = {{NODE_LEVEL_LEADER, 460, 405}, {NODE_LEVEL_TWOSTEP, 240, 185}};
    for (size_t i = 0; i < 2; i++) {
        a.params.node = lv[i].level;
        sim_opts_t so = {.start = late0};
        rc = sim_pap_init_hier(&c, &a, late0);
        if (!rc)
            rc = sim_run(m, 2, sim_build_pap, &c, &so, &r, msg, sizeof msg);
        CHECK(rc == 0 && r.t_max == lv[i].t_max && r.t_mean == lv[i].t_mean,
              "hier_pap node level %d, 2 ranks: %g (mean %g) %s", lv[i].level, r.t_max, r.t_mean,
              msg);
        sim_pap_free(&c);
    }
    a.params.node = NODE_LEVEL_CHAIN;
    static const int ps[] = {3, 8, 13};
    static const uint64_t counts[] = {8, 65536};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 2; j++) {
            int P = ps[i], node_of[16];
            for (int q = 0; q < P; q++)
                node_of[q] = q;
            a.nrank = P, a.count = counts[j], a.node_of = node_of, a.nnodes = P;
            sim_algo_t w;
            memset(&w, 0, sizeof w);
            w.al = algo_find(WEFT_COLL_ALLREDUCE, "hier");
            w.a = a;
            sim_result_t h, hp;
            rc = sim_run(m, P, sim_build_algo, &w, NULL, &h, msg, sizeof msg);
            if (!rc)
                rc = sim_pap_init_hier(&c, &a, NULL);
            if (!rc)
                rc = sim_run(m, P, sim_build_pap, &c, NULL, &hp, msg, sizeof msg);
            CHECK(rc == 0 && h.t_max == hp.t_max && h.t_mean == hp.t_mean,
                  "hier_pap with nodes of one rank, P=%d, %llu B: %g against hier's %g %s", P,
                  (unsigned long long)counts[j], hp.t_max, h.t_max, msg);
            sim_pap_free(&c);
        }
}

static void test_arrival_programs(void)
{
    sim_model_t m = test_model();
    m.g = 5, m.G = 0, m.O = 0, m.gamma = 0, m.S = 1u << 20;
    const double up[3] = {0, 10000, 20000}, down[3] = {20000, 10000, 0};
    struct {
        const char *algo;
        weft_coll_t coll;
        const double *start;
        double t_max, t_mean;
    } cases[] = {
        {"pap_chain", WEFT_COLL_ALLREDUCE, up, 20370, 20330},
        {"pap_chain", WEFT_COLL_ALLREDUCE, down, 20370, 20330},
        {"pap_leader", WEFT_COLL_ALLREDUCE, up, 20250, 20210},
        {"pap_leader", WEFT_COLL_ALLREDUCE, down, 20250, 20210},
        {"shm_twostep", WEFT_COLL_ALLREDUCE, up, 20250, 20210},
        {"shm_twostep", WEFT_COLL_ALLREDUCE, down, 20150, 20110},
        {"pap_chain", WEFT_COLL_REDUCE, up, 20360, (20360.0 + 20130 + 20250) / 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_pap_t c;
        sim_result_t r;
        char msg[200] = "";
        int rc = sim_pap_init(&c, cases[i].algo, cases[i].coll, 3, 8, 0, cases[i].start);
        sim_opts_t so = {.start = cases[i].start};
        if (!rc)
            rc = sim_run(&m, 3, sim_build_pap, &c, &so, &r, msg, sizeof msg);
        CHECK(rc == 0 && r.t_max == cases[i].t_max && fabs(r.t_mean - cases[i].t_mean) < 1e-6,
              "%s %s, arrivals %s: %g (mean %g), by hand %g (%g) %s", cases[i].algo,
              weft_coll_name(cases[i].coll), cases[i].start == up ? "up" : "down", r.t_max,
              r.t_mean, cases[i].t_max, cases[i].t_mean, msg);
        sim_pap_free(&c);
    }
    /* one rank: nothing to do; a chain of 1000 ranks arriving in reverse
     * completes; what they do not serve is refused */
    sim_pap_t c;
    sim_result_t r;
    char msg[200];
    CHECK(!sim_pap_init(&c, "pap_leader", WEFT_COLL_ALLREDUCE, 1, 8, 0, NULL) &&
              !sim_run(&m, 1, sim_build_pap, &c, NULL, &r, msg, sizeof msg) && r.t_max == 0,
          "one rank");
    sim_pap_free(&c);
    double *st = malloc(1000 * sizeof *st);
    for (int i = 0; st && i < 1000; i++)
        st[i] = (1000 - i) * 50.0;
    sim_opts_t so = {.start = st};
    CHECK(st && !sim_pap_init(&c, "pap_chain", WEFT_COLL_ALLREDUCE, 1000, 64, 0, st) &&
              !sim_run(&m, 1000, sim_build_pap, &c, &so, &r, msg, sizeof msg) &&
              r.t_max > 50000,
          "a reversed chain of 1000: %g", r.t_max);
    sim_pap_free(&c);
    free(st);
    test_hier_pap(&m);
    CHECK(sim_pap_init(&c, "pap_leader", WEFT_COLL_REDUCE, 3, 8, 0, NULL) == WEFT_ENOTSUP &&
              sim_pap_init(&c, "ring", WEFT_COLL_ALLREDUCE, 3, 8, 0, NULL) == WEFT_ENOTSUP,
          "what the arrival programs do not serve is refused");
}

/* ---- the event queue (evq.h) ---- */

/* Events must pop by time, and those of equal time in the order they were
 * pushed: a random simulation-like run (each pop pushes a few events at or
 * after its time, many of them at exactly its time or at a few shared
 * times) against a linear scan for the earliest. */
static void test_event_queue(void)
{
    enum { MAXQ = 4096 };
    static evq_item_t ref[MAXQ];
    static uint64_t ref_seq[MAXQ];
    evq_t q;
    memset(&q, 0, sizeof q);
    size_t nref = 0;
    uint64_t seq = 0, x = 0x9E3779B97F4A7C15ull;
    double now = 0;
    int bad = 0;
    uint64_t pops = 0;
    for (int round = 0; round < 200000 && !bad; round++) {
        int pushes = nref == 0 ? 3 : (int)(sim_uniform(&x) * 3.2); /* sometimes none */
        for (int k = 0; k < pushes && nref < MAXQ; k++) {
            double u = sim_uniform(&x), t;
            if (u < 0.3)
                t = now; /* a tie with the present */
            else if (u < 0.6)
                t = floor(now / 1000) * 1000 + 1000 * (1 + (int)(sim_uniform(&x) * 3)); /* shared */
            else
                t = now + sim_uniform(&x) * 1e6 * (u < 0.9 ? 1 : 1e6); /* far, up to 1e12 */
            evq_item_t e = {t, (uint32_t)seq, (uint32_t)(seq >> 32)};
            if (evq_push(&q, e)) {
                bad = 1;
                break;
            }
            ref[nref] = e, ref_seq[nref++] = seq++;
        }
        if (!nref || bad)
            continue;
        size_t best = 0;
        for (size_t i = 1; i < nref; i++)
            if (ref[i].t < ref[best].t || (ref[i].t == ref[best].t && ref_seq[i] < ref_seq[best]))
                best = i;
        if (q.size != nref || evq_peek_time(&q) != ref[best].t) {
            bad = 2;
            break;
        }
        evq_item_t got;
        if (evq_pop(&q, &got) || got.t != ref[best].t || got.a != ref[best].a ||
            got.b != ref[best].b) {
            bad = 3;
            break;
        }
        now = got.t;
        ref[best] = ref[nref - 1], ref_seq[best] = ref_seq[nref - 1];
        nref--;
        pops++;
        /* the look-ahead: the k-th event still to pop at this very time, in
         * push order, across the blocks of bucket 0 */
        if (round % 61 == 0) {
            uint64_t after = 0; /* the seq of the (k-1)-th, + 1 */
            for (size_t k = 0; k < 300 && !bad; k++) {
                size_t next = nref;
                for (size_t i = 0; i < nref; i++)
                    if (ref[i].t == now && ref_seq[i] >= after &&
                        (next == nref || ref_seq[i] < ref_seq[next]))
                        next = i;
                const evq_item_t *ahead = evq_ahead(&q, k);
                if (next == nref ? ahead != NULL
                                 : !ahead || ahead->a != ref[next].a || ahead->b != ref[next].b)
                    bad = 7;
                if (next == nref)
                    break;
                after = ref_seq[next] + 1;
            }
        }
    }
    CHECK(!bad && pops > 100000, "event queue: %llu pops in time-then-push order (failure %d)",
          (unsigned long long)pops, bad);
    /* bursts of many blocks, drained: still in order, and the queue holds
     * no more than one burst's blocks (and a partial block per bucket, and
     * a slab's rounding): the later bursts reuse the first one's */
    for (int burst = 0; burst < 3 && !bad; burst++) {
        enum { BURST = 200000 };
        for (int k = 0; k < BURST; k++) {
            double t = now + floor(sim_uniform(&x) * (burst ? 1e9 : 1e4));
            if (evq_push(&q, (evq_item_t){t, (uint32_t)k, 0}))
                bad = 4;
        }
        double prev = now;
        evq_item_t got;
        while (q.size && !bad) {
            if (evq_pop(&q, &got)) {
                bad = 5;
                break;
            }
            bad = got.t < prev ? 6 : 0;
            prev = got.t;
        }
        now = prev;
        size_t most = BURST * sizeof got * 256 / 255 + (EVQ_BUCKETS + 1 + 512) * sizeof(evq_block_t);
        CHECK(!bad && q.bytes <= most,
              "event queue burst %d: drained in order (failure %d), %zu bytes held after (at "
              "most %zu)", burst, bad, q.bytes, most);
    }
    /* a time before the present, a negative time and NaN are refused and
     * leave the queue as it was */
    evq_item_t e;
    size_t had = q.size;
    CHECK(evq_push(&q, (evq_item_t){now - 1, 0, 0}) == -2 &&
              evq_push(&q, (evq_item_t){-1, 0, 0}) == -2 &&
              evq_push(&q, (evq_item_t){NAN, 0, 0}) == -2 && q.size == had,
          "event queue: times before the present refused");
    /* the look-ahead across blocks: 700 events of one time, then later
     * ones; after each of 300 pops, every event still due at that time
     * in push order, and nothing past them */
    evq_t w;
    memset(&w, 0, sizeof w);
    for (uint32_t k = 0; k < 700; k++)
        bad |= evq_push(&w, (evq_item_t){5, k, 0}) ? 8 : 0;
    for (uint32_t k = 0; k < 50; k++)
        bad |= evq_push(&w, (evq_item_t){6 + k, 700 + k, 0}) ? 8 : 0;
    for (uint32_t popped = 0; popped < 300 && !bad; popped++) {
        if (evq_pop(&w, &e) || e.a != popped)
            bad = 9;
        for (uint32_t k = 0; k <= 700 - popped && !bad; k++) {
            const evq_item_t *a = evq_ahead(&w, k);
            if (popped + 1 + k < 700 ? !a || a->a != popped + 1 + k : a != NULL)
                bad = 10;
        }
    }
    CHECK(!bad, "event queue: the look-ahead over 700 events of one time, across blocks "
                "(failure %d)", bad);
    evq_free(&w);
    /* bucket 0 filled and read to the end of blocks, then pushed to at
     * that same time, for lengths around a block's */
    for (uint32_t len = EVQ_BLOCK - 2; len <= 2 * EVQ_BLOCK + 2 && !bad; len++) {
        memset(&w, 0, sizeof w);
        uint32_t next = 0;
        for (uint32_t k = 0; k < len; k++)
            bad |= evq_push(&w, (evq_item_t){7, k, 0}) ? 11 : 0;
        for (uint32_t k = 0; k < len && !bad; k++)
            if (evq_pop(&w, &e) || e.a != next++)
                bad = 12;
        for (uint32_t k = 0; k < 3 && !bad; k++)
            bad |= evq_push(&w, (evq_item_t){7, len + k, 0}) ? 11 : 0;
        bad |= evq_push(&w, (evq_item_t){8, len + 3, 0}) ? 11 : 0;
        for (uint32_t k = 0; k < 4 && !bad; k++)
            if (evq_pop(&w, &e) || e.a != next++ || e.t != (k < 3 ? 7 : 8))
                bad = 13;
        if (!bad && w.size)
            bad = 14;
        evq_free(&w);
    }
    CHECK(!bad, "event queue: bucket 0 read to a block's end, then pushed to at its time "
                "(failure %d)", bad);
    /* -0 is 0 */
    evq_t z;
    memset(&z, 0, sizeof z);
    CHECK(!evq_push(&z, (evq_item_t){-0.0, 1, 0}) && !evq_push(&z, (evq_item_t){0.0, 2, 0}) &&
              !evq_pop(&z, &e) && e.a == 1 && !evq_pop(&z, &e) && e.a == 2 && z.size == 0,
          "event queue: -0 and 0 are one time, popped in push order");
    evq_free(&z);
    evq_free(&q);
}

/* Ranks of one shape share a program (shape.h): every prediction and
 * event count must be the one private programs give, for algorithms whose
 * ranks have up to 8 peers, more (looked up in sorted pairs), more than
 * SHAPE_MAX_PEERS (never shared), and with ranks starting apart; and the
 * sharing must pay, in memory, where ranks repeat a shape. */
static void test_shared_programs(void)
{
    static const struct {
        weft_coll_t coll;
        const char *algo;
        int P;
        uint64_t count;
        bool saves;
    } cases[] = {
        {WEFT_COLL_ALLREDUCE, "ring", 200, 800, true}, /* equal blocks: ranks alike */
        {WEFT_COLL_ALLREDUCE, "ring", 200, 2048, false}, /* unequal: every rank its own */
        {WEFT_COLL_ALLREDUCE, "recursive_doubling", 1000, 16, true},
        {WEFT_COLL_ALLREDUCE, "rabenseifner", 777, 1 << 14, true},
        {WEFT_COLL_BCAST, "binomial", 1000, 2, true},
        {WEFT_COLL_ALLREDUCE, "twotree", 513, 1 << 14, true},
        {WEFT_COLL_BCAST, "pipeline", 300, 1 << 14, true},
        {WEFT_COLL_ALLGATHER, "bruck", 200, 64, false},
        {WEFT_COLL_ALLREDUCE, "direct", 100, 4, false},
    };
    sim_model_t m = test_model();
    m.S = 4096; /* both eager and rendezvous messages */
    double *start = malloc(1000 * sizeof *start);
    uint64_t x = 7;
    for (int r = 0; r < 1000; r++)
        start[r] = floor(sim_uniform(&x) * 5000);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int skew = 0; skew < 2; skew++) {
            sim_algo_t w;
            memset(&w, 0, sizeof w);
            w.al = algo_find(cases[c].coll, cases[c].algo);
            w.a.coll = cases[c].coll, w.a.nrank = cases[c].P, w.a.count = cases[c].count;
            w.a.esize = 4, w.a.commutative = true;
            sim_opts_t own = {.order = g_order, .start = skew ? start : NULL},
                       shared = own;
            own.private_programs = true;
            sim_result_t a, b;
            char msg[300] = "", msg2[300] = "";
            int ra = sim_run(&m, cases[c].P, sim_build_algo, &w, &own, &a, msg, sizeof msg);
            int rb = sim_run(&m, cases[c].P, sim_build_algo, &w, &shared, &b, msg2, sizeof msg2);
            CHECK(!ra && !rb && a.t_max == b.t_max && a.t_mean == b.t_mean &&
                      a.events == b.events && a.messages == b.messages && a.slowest == b.slowest,
                  "%s %s P=%d skew %d order %d: own programs %.3f/%.3f ns, %llu events; "
                  "shared %.3f/%.3f ns, %llu events (%s%s)",
                  weft_coll_name(cases[c].coll), cases[c].algo, cases[c].P, skew, g_order,
                  a.t_max, a.t_mean, (unsigned long long)a.events, b.t_max, b.t_mean,
                  (unsigned long long)b.events, msg, msg2);
            if (cases[c].saves)
                CHECK(b.peak_bytes < a.peak_bytes, "%s P=%d: shared programs hold %zu bytes, "
                      "own programs %zu", cases[c].algo, cases[c].P, b.peak_bytes, a.peak_bytes);
            /* rounds followed by the simulator against joins as operations,
             * with CPU noise too (the joins must not draw from it) */
            sim_opts_t noisy = shared;
            noisy.noise_prob = 0.3, noisy.noise_ns = 700, noisy.noise_seed = 11;
            for (int n = 0; n < 2; n++) {
                sim_opts_t *o = n ? &noisy : &shared;
                sim_result_t j, k;
                w.joins = true;
                int rj = sim_run(&m, cases[c].P, sim_build_algo, &w, o, &j, msg, sizeof msg);
                w.joins = false;
                int rk = sim_run(&m, cases[c].P, sim_build_algo, &w, o, &k, msg2, sizeof msg2);
                CHECK(!rj && !rk && j.t_max == k.t_max && j.t_mean == k.t_mean &&
                          j.events == k.events && j.messages == k.messages &&
                          j.slowest == k.slowest,
                      "%s %s P=%d skew %d order %d noise %d: joins %.3f/%.3f ns, %llu events; "
                      "rounds %.3f/%.3f ns, %llu events (%s%s)",
                      weft_coll_name(cases[c].coll), cases[c].algo, cases[c].P, skew, g_order, n,
                      j.t_max, j.t_mean, (unsigned long long)j.events, k.t_max, k.t_mean,
                      (unsigned long long)k.events, msg, msg2);
            }
        }
    free(start);
}

/* A program made from a schedule read in place in the builder (the path
 * `weft sim` takes) is the one its committed image makes, for every
 * schedule-built algorithm of every collective, at several P and roots. */
static bool same_program(const sim_prog_t *a, const sim_prog_t *b)
{
    return a->nops == b->nops && a->nedges == b->nedges && a->nrounds == b->nrounds &&
           !memcmp(a->ops, b->ops, (size_t)a->nops * sizeof *a->ops) &&
           !memcmp(a->succ_first, b->succ_first, ((size_t)a->nops + 1) * 4) &&
           !memcmp(a->succ, b->succ, (size_t)a->nedges * 4) &&
           (!a->nrounds || !memcmp(a->round_first, b->round_first, ((size_t)a->nrounds + 1) * 4));
}

static void test_view_programs(void)
{
    const int Ps[] = {1, 2, 3, 5, 8, 13};
    size_t nt;
    const algo_t *tab = algo_table(&nt);
    sched_t builder;
    sched_init(&builder, 1, 0);
    int compared = 0;
    for (size_t ai = 0; ai < nt; ai++) {
        const algo_t *al = &tab[ai];
        if (al->board)
            continue;
        for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
            sim_algo_t w;
            memset(&w, 0, sizeof w);
            w.al = al;
            w.a.coll = al->coll, w.a.nrank = Ps[pi], w.a.root = Ps[pi] - 1;
            w.a.count = 1000 + (uint64_t)pi, w.a.esize = 4, w.a.commutative = true;
            w.a.idempotent = (al->flags & ALGO_NEEDS_IDEMPOTENT) != 0 || al->usable;
            char why[300];
            if (algo_usable_why(al, &w.a, why, sizeof why))
                continue;
            for (int r = 0; r < Ps[pi]; r++)
                for (int joins = 0; joins < 2; joins++) {
                    sim_prog_t img, view;
                    w.joins = joins;
                    w.builder = NULL;
                    int ri = sim_build_algo(&w, r, &img, why, sizeof why);
                    w.builder = &builder;
                    int rv = sim_build_algo(&w, r, &view, why, sizeof why);
                    CHECK(ri == rv && (ri || same_program(&img, &view)),
                          "%s %s P=%d rank %d joins %d: the view's program differs from the "
                          "image's (%d, %d)",
                          weft_coll_name(al->coll), al->name, Ps[pi], r, joins, ri, rv);
                    if (!ri)
                        sim_prog_free(&img);
                    if (!rv)
                        sim_prog_free(&view);
                    compared++;
                }
        }
    }
    sched_free(&builder);
    CHECK(compared > 1000, "programs compared: %d", compared);
}

int main(void)
{
    test_event_queue();
    for (g_order = SIM_ORDER_LOGGOPSIM; g_order <= SIM_ORDER_FIFO; g_order++) {
        order_opts.order = g_order;
        test_hand_cases();
        test_shared_cores();
        test_noise_trace();
        test_closed_forms();
        test_bounds();
        test_bad_input();
        test_start_times();
        test_limits();
        test_goal_round_trip();
        test_goal_parse();
        test_shared_programs();
    }
    test_reduce_cost();
    test_view_programs();
    test_arrival_programs();
    printf("test_sim: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
