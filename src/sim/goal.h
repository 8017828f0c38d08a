/* goal.h — GOAL schedules (LogGOPSim's text format) out of and into the
 * simulator; goal.c has the format and the choices made reading it. */
#ifndef WEFT_SIM_GOAL_H
#define WEFT_SIM_GOAL_H

#include <stdio.h>

#include "sim.h"

/* Writes P ranks' programs (built one at a time, as the simulator does) as
 * GOAL to f; calc times of reductions and copies use m. */
int sim_goal_write(FILE *f, const sim_model_t *m, int P, sim_build_fn build, void *ctx,
                   char *msg, size_t len);

typedef struct sim_goal sim_goal_t;
/* Parses len bytes of text, called name in messages; 0, or WEFT_EINVAL
 * with "name:line: what" in msg. */
int sim_goal_parse(const char *text, size_t len, const char *name, sim_goal_t **out, char *msg,
                   size_t msglen);
int sim_goal_load(const char *path, sim_goal_t **out, char *msg, size_t len);
void sim_goal_free(sim_goal_t *g);
int sim_goal_nrank(const sim_goal_t *g);
/* Raises m's CPUs and NICs to those the file names. */
void sim_goal_adapt(const sim_goal_t *g, sim_model_t *m);
/* A sim_build_fn over a parsed file (ctx: the sim_goal_t). */
int sim_goal_build(void *ctx, int rank, sim_prog_t *out, char *msg, size_t len);

#endif
