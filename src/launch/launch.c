/* launch.c — the launcher behind `weft run -n P PROG ARGS`: creates the job
 * segment, forks P ranks with WEFT_SHM / WEFT_RANK / WEFT_SIZE set, and
 * watches them.  When a rank dies (signal, non-zero exit, or exit without
 * weft_finalize) it marks the job aborted in the segment and wakes every
 * rank, so their waits fail with WEFT_EPEER at once; ranks still alive after
 * a grace period are killed.  A rank that exits without ever joining while
 * others joined ends the job the same way.  The segment reaches the ranks
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

int launch_job(int np, char *const argv[], int verbose)
{
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
    seg_t seg;
    char name[64];
    int segfd = -1;
    if (seg_create(np, 0, &seg, name, sizeof name, &segfd)) {
        fprintf(stderr, "weft run: %s\n", weft_last_error());
        return 1;
    }
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t *pids = calloc((size_t)np, sizeof *pids);
    int *status = calloc((size_t)np, sizeof *status);
    if (!pids || !status) {
        fprintf(stderr, "weft run: out of memory\n");
        free(pids), free(status);
        close(segfd);
        seg_detach(&seg);
        return 1;
    }
    pid_t parent = getpid();
    /* orphans of the ranks (a wrapper's children) become ours, so they can
     * be reaped and, at the end, stopped */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int alive = 0, failed_rank = -1, failed_status = 0, failed_nofinal = 0, unjoined = -1;
    double grace_end = 0;
    for (int r = 0; r < np; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "weft run: fork failed for rank %d: %s\n", r, strerror(errno));
            seg_abort(&seg, -1, ABORT_DIED, "the launcher could not start every rank");
            failed_rank = r, failed_status = 1 << 8;
            grace_end = weft_now() + GRACE_SECONDS;
            break;
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
            snprintf(buf, sizeof buf, "%d", np);
            setenv("WEFT_SIZE", buf, 1);
            sigprocmask(SIG_SETMASK, &old, NULL);
            execv(path, argv);
            fprintf(stderr, "weft run: rank %d: cannot execute '%s': %s\n", r, path,
                    strerror(errno));
            _exit(127);
        }
        pids[r] = pid;
        alive++;
    }
    int exit_code = 0;
    while (alive > 0) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            int r = 0;
            while (r < np && pids[r] != pid)
                r++;
            if (r == np)
                continue;
            alive--;
            status[r] = st;
            pids[r] = 0;
            uint32_t state = atomic_load(&seg_rank(&seg, r)->state);
            bool bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0 || state == RANK_ATTACHED ||
                       state == RANK_FINALIZING;
            if (!bad && state == RANK_NEW && unjoined < 0)
                unjoined = r; /* fine unless other ranks joined: see below */
            if (bad && failed_rank == -1) {
                char what[128], msg[200];
                describe(st, what, sizeof what);
                failed_rank = r, failed_status = st;
                failed_nofinal = WIFEXITED(st) && WEXITSTATUS(st) == 0;
                snprintf(msg, sizeof msg, "rank %d %s%s", r, what,
                         failed_nofinal ? " without calling weft_finalize" : "");
                seg_abort(&seg, r, ABORT_DIED, msg);
                grace_end = weft_now() + GRACE_SECONDS;
            }
        }
        /* A rank that left without ever joining (no weft_init, a failed
         * one, WEFT_SHM lost) while others joined: they would wait for it
         * for ever. */
        if (unjoined >= 0 && failed_rank == -1 && atomic_load(&seg.hdr->attached) > 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "rank %d exited without joining the job (no weft_init, or "
                     "a failed one) while other ranks joined it", unjoined);
            seg_abort(&seg, unjoined, ABORT_DIED, msg);
            failed_rank = unjoined, failed_status = 0, failed_nofinal = 2;
            grace_end = weft_now() + GRACE_SECONDS;
        }
        if (alive == 0)
            break;
        if (grace_end > 0 && weft_now() > grace_end) {
            for (int r = 0; r < np; r++)
                if (pids[r])
                    kill(pids[r], SIGKILL);
            grace_end = weft_now() + 3600; /* kill once */
        }
        struct timespec ts = {0, 50 * 1000000L};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            for (int r = 0; r < np; r++)
                if (pids[r])
                    kill(pids[r], SIGTERM);
            if (failed_rank == -1) {
                seg_abort(&seg, -1, ABORT_DIED, "the launcher was interrupted");
                failed_rank = -2, exit_code = 128 + sig;
                grace_end = weft_now() + GRACE_SECONDS;
            }
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    int strays = reap_strays();
    if (strays)
        fprintf(stderr, "weft run: stopped %d process%s the ranks left running\n", strays,
                strays == 1 ? "" : "es");
    if (failed_rank >= 0) {
        char what[128];
        describe(failed_status, what, sizeof what);
        fprintf(stderr, "weft run: rank %d %s%s; the job was aborted\n", failed_rank, what,
                failed_nofinal == 2   ? " without joining the job while others did"
                : failed_nofinal == 1 ? " without calling weft_finalize"
                                      : "");
        if (WIFSIGNALED(failed_status))
            exit_code = 128 + WTERMSIG(failed_status);
        else
            exit_code = WEXITSTATUS(failed_status) ? WEXITSTATUS(failed_status) : 1;
    } else if (failed_rank == -2) {
        fprintf(stderr, "weft run: interrupted; the job was stopped\n");
    } else if (atomic_load(&seg.hdr->abort_code) == ABORT_ERROR) {
        /* every rank exited 0, but a rank ended the job (a mismatch) */
        fprintf(stderr, "weft run: the job was aborted: %s\n", seg.hdr->abort_msg);
        exit_code = 1;
    }
    if (verbose)
        fprintf(stderr, "weft run: %d ranks done, exit %d\n", np, exit_code);
    close(segfd);
    seg_detach(&seg);
    free(pids);
    free(status);
    return exit_code;
}
