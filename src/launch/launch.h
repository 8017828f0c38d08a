/* launch.h — starting the P processes of a shared-memory job (`weft run`). */
#ifndef WEFT_LAUNCH_H
#define WEFT_LAUNCH_H

/* Runs argv[0] as np ranks and waits for them.  Returns the exit status for
 * `weft run`: 0 when every rank exited 0 after weft_finalize (or never used
 * weft), else the first failed rank's status (128+signal when killed), 127
 * when the program cannot be executed, 2 for bad arguments. */
int launch_job(int np, char *const argv[], int verbose);

#endif
