/* predict.h — the simulator's figures for the tool's other commands
 * (weft explain, weft tune --by sim); simcmd.c holds them beside weft sim. */
#ifndef WEFT_PREDICT_H
#define WEFT_PREDICT_H

#include "algo/algo.h"
#include "sim/sim.h"

/* The LogGOPS time of one call of al (params "k=v,..." or NULL) on P ranks
 * of bytes each, under model m, LogGOPSim's order, all ranks starting at
 * 0 unless limits->start gives their start times; op is a builtin op or
 * OP_AFFINE, root the root of a rooted collective.  shm: the schedule as weft builds it
 * on its shared memory (a bcast's chunks capped there), else as elsewhere.  limits (NULL: none) gives the
 * simulation's max_events, max_bytes and max_seconds: past one it gives up
 * with WEFT_ENOTSUP and a reason starting "stopped".  0, or a weft error
 * code with the reason in why. */
int sim_predict(const sim_model_t *m, const algo_t *al, const char *params, int P,
                uint64_t bytes, weft_dtype_t dt, int op, int root, bool shm,
                const sim_opts_t *limits, sim_result_t *r, char *why, size_t len);

/* The model a command predicts with: preset (a name or a preset file), or
 * with NULL this machine's (./this-machine.preset, which weft fit writes)
 * when there is one, else LogGOPSim's defaults.  Its name goes to name. */
int sim_model_for_tools(const char *preset, sim_model_t *m, char *name, size_t nlen, char *msg,
                        size_t len);

/* The chunk count in 1..kmax with the least time eval(ctx, k) gives (-1:
 * no figure): doubling from 1 while the time falls, then a ternary search
 * around the best power of two.  Its time, or -1 if no k gave one. */
double sim_search_chunks(double (*eval)(void *ctx, int k), void *ctx, int kmax, int *best);

#endif
