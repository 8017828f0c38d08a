/* fail_writev.c — an LD_PRELOAD shim for the tests of shm.c's both-copy
 * path: process_vm_writev fails with EFAULT on every call
 * (WEFT_TEST_WRITEV=all: a sender that may not write its receiver) or on
 * every call but the 8-byte probe (=pieces: a sender whose pieces fail
 * after the probe said yes, which its receiver must copy itself).  At exit
 * it says how many calls it refused, so that a test can tell the path ran. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_long refused;

ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long nlocal,
                          const struct iovec *remote, unsigned long nremote,
                          unsigned long flags)
{
    const char *mode = getenv("WEFT_TEST_WRITEV");
    size_t len = 0;
    for (unsigned long i = 0; i < nlocal; i++)
        len += local[i].iov_len;
    if (mode && (!strcmp(mode, "all") || (!strcmp(mode, "pieces") && len != 8))) {
        atomic_fetch_add(&refused, 1);
        errno = EFAULT;
        return -1;
    }
    ssize_t (*real)(pid_t, const struct iovec *, unsigned long, const struct iovec *,
                    unsigned long, unsigned long) = dlsym(RTLD_NEXT, "process_vm_writev");
    return real(pid, local, nlocal, remote, nremote, flags);
}

__attribute__((destructor)) static void say_refused(void)
{
    long n = atomic_load(&refused);
    if (n)
        fprintf(stderr, "fail_writev: refused %ld writes in process %d\n", n, (int)getpid());
}
