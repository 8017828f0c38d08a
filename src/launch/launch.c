/* launch.c — the launcher behind `weft run -n P PROG ARGS`: creates the job
 * segment, forks P ranks with WEFT_SHM / WEFT_RANK / WEFT_SIZE set, and
 * watches them.  When a rank dies (signal, non-zero exit, or exit without
 * weft_finalize) it marks the job aborted in the segment and wakes every
 * rank, so their waits fail with WEFT_EPEER at once; ranks still alive after
 * a grace period are killed, and named, as is any that crashes meanwhile
 * (a rank stopped by a signal is killed at once: it cannot end itself).
 * A rank that exits without ever joining while others joined ends the job
 * the same way.  The segment reaches the ranks
 * as an inherited descriptor and its name is unlinked before any rank
 * starts, so nothing is left in /dev/shm however the launcher ends.  Ranks
 * die with the launcher (PR_SET_PDEATHSIG), and a rank started through a
 * wrapper that forks gives up when it finds the launcher gone.  The
 * launcher is the subreaper of everything the ranks start: what is still
 * running when the ranks have ended is stopped (and said so). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/core.h"
#include "../xport/segment.h"
#include "launch.h"

#define GRACE_SECONDS 2.0

/* Finds prog like execvp would; 0 and the path in out, or an errno. */
static int resolve(const char *prog, char *out, size_t n)
{
    if (strchr(prog, '/')) {
        struct stat st;
        if (stat(prog, &st) != 0)
            return errno;
        if (S_ISDIR(st.st_mode))
            return EISDIR;
        if (access(prog, X_OK) != 0)
            return errno;
        snprintf(out, n, "%s", prog);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int err = ENOENT;
    while (*path) {
        const char *e = strchr(path, ':');
        size_t l = e ? (size_t)(e - path) : strlen(path);
        snprintf(out, n, "%.*s/%s", (int)l, l ? path : ".", prog);
        struct stat st;
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (access(out, X_OK) == 0)
                return 0;
            err = EACCES;
        }
        if (!e)
            break;
        path = e + 1;
    }
    return err;
}

static void describe(int status, char *out, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
}

/* Processes the ranks left behind (a wrapper's children, daemons): as the
 * subreaper, the launcher inherits them; they die with the job. */
static int reap_strays(void)
{
    int killed = 0;
    DIR *d = opendir("/proc");
    pid_t me = getpid();
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *close_paren = strrchr(buf, ')'); /* the name may hold anything */
        int ppid = 0;
        char state;
        if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == me) {
            kill((pid_t)atoi(e->d_name), SIGKILL);
            killed++;
        }
    }
    if (d)
        closedir(d);
    for (double end = weft_now() + 2; killed && weft_now() < end;) {
        if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
            break;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return killed;
}

/* A job as the launcher watches it. */
typedef struct {
    int np;
    seg_t seg;
    pid_t *pids;        /* 0 once reaped */
    char *killed;       /* the launcher signalled the rank itself */
    char *stopped;      /* stopped by a signal (SIGSTOP, SIGTSTP...), not continued */
    int alive;
    int failed_rank;    /* the first rank that failed; -1 none, -2 interrupted */
    int failed_status;  /* its wait status */
    int failed_how;     /* FAILED_* below */
    int unjoined;       /* a rank that exited 0 without joining, or -1 */
    int interrupted_by; /* the signal that stopped the launcher (failed_rank -2) */
    double grace_end;   /* when to kill the ranks still running; 0: not yet */
} job_t;

enum { FAILED_STATUS, FAILED_NO_FINALIZE, FAILED_NO_JOIN };

/* The first failure ends the job: aborted in the segment by who (a rank,
 * or -1: the launcher; every rank's wait fails with WEFT_EPEER), and the
 * rest killed after a grace period.  rank is the failure reported. */
static void job_fail(job_t *j, int who, int rank, int st, int how, const char *msg)
{
    seg_abort(&j->seg, who, ABORT_DIED, msg);
    j->failed_rank = rank, j->failed_status = st, j->failed_how = how;
    j->grace_end = weft_now() + GRACE_SECONDS;
}

/* Forks the ranks; a rank gets the segment as the descriptor segfd and
 * its place from the environment.  A failed fork fails the job. */
static void start_ranks(job_t *j, const char *path, char *const argv[], const char *name,
                        int segfd, const sigset_t *old)
{
    pid_t parent = getpid();
    for (int r = 0; r < j->np; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "weft run: fork failed for rank %d: %s\n", r, strerror(errno));
            job_fail(j, -1, r, 1 << 8, FAILED_STATUS, "the launcher could not start every rank");
            return;
        }
        if (pid == 0) {
            char buf[32];
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(1);
            fcntl(segfd, F_SETFD, 0); /* the rank inherits the segment */
            setenv("WEFT_SHM", name, 1);
            snprintf(buf, sizeof buf, "%d", r);
            setenv("WEFT_RANK", buf, 1);
            snprintf(buf, sizeof buf, "%d", j->np);
            setenv("WEFT_SIZE", buf, 1);
            sigprocmask(SIG_SETMASK, old, NULL);
            execv(path, argv);
            fprintf(stderr, "weft run: rank %d: cannot execute '%s': %s\n", r, path,
                    strerror(errno));
            _exit(127);
        }
        j->pids[r] = pid;
        j->alive++;
    }
}

/* Reaps the ranks that have ended.  A rank failed when it died, exited
 * non-zero, or exited 0 after weft_init without weft_finalize. */
static void reap_ranks(job_t *j)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
        int r = 0;
        while (r < j->np && j->pids[r] != pid)
            r++;
        if (r == j->np)
            continue; /* a stray the subreaper inherited */
        if (WIFSTOPPED(st) || WIFCONTINUED(st)) {
            j->stopped[r] = WIFSTOPPED(st);
            continue;
        }
        j->alive--;
        j->pids[r] = 0;
        uint32_t state = atomic_load(&seg_rank(&j->seg, r)->state);
        bool bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0 || state == RANK_ATTACHED ||
                   state == RANK_FINALIZING;
        if (!bad && state == RANK_NEW && j->unjoined < 0)
            j->unjoined = r; /* fine unless other ranks joined: see watch_ranks */
        if (bad && j->failed_rank != -1 && WIFSIGNALED(st) && !j->killed[r]) {
            /* after the first failure too: a survivor that crashed would
             * otherwise pass unseen behind the failure the job reports */
            char what[128];
            describe(st, what, sizeof what);
            fprintf(stderr, "weft run: rank %d %s after the job was aborted\n", r, what);
        }
        if (bad && j->failed_rank == -1) {
            char what[128], msg[200];
            int how = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? FAILED_NO_FINALIZE : FAILED_STATUS;
            describe(st, what, sizeof what);
            snprintf(msg, sizeof msg, "rank %d %s%s", r, what,
                     how == FAILED_NO_FINALIZE ? " without calling weft_finalize" : "");
            job_fail(j, r, r, st, how, msg);
        }
    }
}

/* Kills, and names, the ranks still running after the job was aborted:
 * at the grace period's end every one, before it those stopped by a
 * signal.  A stopped rank cannot see the abort, so it cannot end itself:
 * killed at once, not after the grace period (a stress fault job that
 * stops a rank took 2 s longer).  Continuing it instead would let it run
 * on past a failure its program may not expect. */
static void kill_ranks(job_t *j, bool stopped_only)
{
    for (int r = 0; r < j->np; r++) {
        if (!j->pids[r] || (stopped_only && (!j->stopped[r] || j->killed[r])))
            continue;
        if (stopped_only)
            fprintf(stderr, "weft run: rank %d was stopped by a signal when the job was "
                    "aborted: killed\n", r);
        else
            fprintf(stderr, "weft run: rank %d had not ended %.0f s after the job was aborted: "
                    "killed\n", r, GRACE_SECONDS);
        kill(j->pids[r], SIGKILL);
        j->killed[r] = 1;
    }
}

/* Waits until every rank has ended, failing the job on the first failure
 * or on SIGINT, SIGTERM or SIGHUP (blocked in set: taken synchronously). */
static void watch_ranks(job_t *j, const sigset_t *set)
{
    while (j->alive > 0) {
        reap_ranks(j);
        /* A rank that left without ever joining (no weft_init, a failed
         * one, WEFT_SHM lost) while others joined: they would wait for it
         * for ever. */
        if (j->unjoined >= 0 && j->failed_rank == -1 && atomic_load(&j->seg.hdr->attached) > 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "rank %d exited without joining the job (no weft_init, or "
                     "a failed one) while other ranks joined it", j->unjoined);
            job_fail(j, j->unjoined, j->unjoined, 0, FAILED_NO_JOIN, msg);
        }
        if (j->alive == 0)
            break;
        if (j->failed_rank != -1)
            kill_ranks(j, true);
        if (j->grace_end > 0 && weft_now() > j->grace_end) {
            kill_ranks(j, false);
            j->grace_end = weft_now() + 3600; /* kill once */
        }
        struct timespec ts = {0, 50 * 1000000L};
        int sig = sigtimedwait(set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            for (int r = 0; r < j->np; r++)
                if (j->pids[r]) {
                    kill(j->pids[r], SIGTERM);
                    j->killed[r] = 1;
                }
            if (j->failed_rank == -1) {
                job_fail(j, -1, -2, 0, FAILED_STATUS, "the launcher was interrupted");
                j->interrupted_by = sig;
            }
        }
    }
}

/* Says how the job ended; its exit code (the failed rank's, as a shell
 * gives it for a signal). */
static int job_report(job_t *j)
{
    if (j->failed_rank >= 0) {
        char what[128];
        describe(j->failed_status, what, sizeof what);
        fprintf(stderr, "weft run: rank %d %s%s; the job was aborted\n", j->failed_rank, what,
                j->failed_how == FAILED_NO_JOIN       ? " without joining the job while others did"
                : j->failed_how == FAILED_NO_FINALIZE ? " without calling weft_finalize"
                                                      : "");
        if (WIFSIGNALED(j->failed_status))
            return 128 + WTERMSIG(j->failed_status);
        return WEXITSTATUS(j->failed_status) ? WEXITSTATUS(j->failed_status) : 1;
    }
    if (j->failed_rank == -2) {
        fprintf(stderr, "weft run: interrupted; the job was stopped\n");
        return 128 + j->interrupted_by;
    }
    if (atomic_load(&j->seg.hdr->abort_code) == ABORT_ERROR) {
        /* every rank exited 0, but a rank ended the job (a mismatch) */
        fprintf(stderr, "weft run: the job was aborted: %s\n", j->seg.hdr->abort_msg);
        return 1;
    }
    return 0;
}

static int last_interrupt;

int launch_interrupted(void) { return last_interrupt; }

void launch_reraise(void)
{
    int sig = last_interrupt;
    if (!sig)
        return;
    fflush(stdout);
    signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
}

int launch_job(int np, char *const argv[], int verbose)
{
    last_interrupt = 0;
    if (np < 1 || np > 65536) {
        fprintf(stderr, "weft run: -n %d: the number of ranks must be 1..65536\n", np);
        return 2;
    }
    if (!argv || !argv[0]) {
        fprintf(stderr, "weft run: no program given\n");
        return 2;
    }
    char path[4096];
    int e = resolve(argv[0], path, sizeof path);
    if (e) {
        fprintf(stderr, "weft run: cannot execute '%s': %s\n", argv[0], strerror(e));
        return 127;
    }
    job_t j = {.np = np, .failed_rank = -1, .unjoined = -1};
    char name[64];
    int segfd = -1;
    if (seg_create(np, 0, &j.seg, name, sizeof name, &segfd)) {
        fprintf(stderr, "weft run: %s\n", weft_last_error());
        return 1;
    }
    j.pids = calloc((size_t)np, sizeof *j.pids);
    j.killed = calloc((size_t)np, 1);
    j.stopped = calloc((size_t)np, 1);
    if (!j.pids || !j.killed || !j.stopped) {
        free(j.pids);
        free(j.killed);
        free(j.stopped);
        fprintf(stderr, "weft run: out of memory\n");
        close(segfd);
        seg_detach(&j.seg);
        return 1;
    }
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* orphans of the ranks (a wrapper's children) become ours, so they can
     * be reaped and, at the end, stopped */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    start_ranks(&j, path, argv, name, segfd, &old);
    watch_ranks(&j, &set);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int strays = reap_strays();
    if (strays)
        fprintf(stderr, "weft run: stopped %d process%s the ranks left running\n", strays,
                strays == 1 ? "" : "es");
    int exit_code = job_report(&j);
    last_interrupt = j.failed_rank == -2 ? j.interrupted_by : 0;
    if (verbose)
        fprintf(stderr, "weft run: %d ranks done, exit %d\n", np, exit_code);
    close(segfd);
    seg_detach(&j.seg);
    free(j.pids);
    free(j.killed);
    free(j.stopped);
    return exit_code;
}
