/* launch.h — starting the P processes of a shared-memory job (`weft run`). */
#ifndef WEFT_LAUNCH_H
#define WEFT_LAUNCH_H

/* Runs argv[0] as np ranks and waits for them.  Returns the exit status for
 * `weft run`: 0 when every rank exited 0 after weft_finalize (or never used
 * weft), else the first failed rank's status (128+signal when killed), 127
 * when the program cannot be executed, 2 for bad arguments. */
int launch_job(int np, char *const argv[], int verbose);

/* The signal (SIGINT, SIGTERM or SIGHUP) that stopped the last job, or 0.
 * The launcher takes it to stop the ranks, so the process that ran the job
 * would never hear it: a tool that runs several jobs (weft stress's fault
 * jobs, weft fit) would go on to the next one after a Ctrl-C. */
int launch_interrupted(void);
/* Where the last job was interrupted, ends this process by that same
 * signal, as a shell expects of an interrupted program (a script running
 * it stops too); returns otherwise.  Call it once the caller's own files
 * are cleaned up. */
void launch_reraise(void);

#endif
