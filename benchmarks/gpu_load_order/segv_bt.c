/* LD_PRELOAD: on SIGSEGV/SIGBUS/SIGABRT, append the native stack (backtrace_symbols_fd) and the process maps to
   $SEGV_BT_FILE, then die of the signal as before (Python's faulthandler, enabled later, chains to it). Used by probe.sh. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/syscall.h>
static void h(int sig, siginfo_t *si, void *uc) {
  void *b[128]; int n = backtrace(b, 128);
  const char *p = getenv("SEGV_BT_FILE"); int fd = p ? open(p, O_WRONLY | O_CREAT | O_APPEND, 0644) : 2;
  dprintf(fd, "NATIVE signal %d addr %p tid %ld\n", sig, si->si_addr, (long)syscall(SYS_gettid));
  backtrace_symbols_fd(b, n, fd);
  int m = open("/proc/self/maps", O_RDONLY); char buf[4096]; ssize_t r;
  dprintf(fd, "MAPS\n"); while ((r = read(m, buf, sizeof buf)) > 0) write(fd, buf, r);
  signal(sig, SIG_DFL); raise(sig);
}
__attribute__((constructor)) static void init(void) {
  void *b[4]; backtrace(b, 4);  /* load libgcc_s now, not in the handler */
  struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0); sigaction(SIGABRT, &sa, 0);
}
