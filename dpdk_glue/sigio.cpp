#include "dpdk_glue/sigio.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

std::atomic<pid_t> g_sink_tid{0};

void* sink_main(void*) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGIO);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
  g_sink_tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  for (;;) pause();  // handlers run here; this thread never does anything else
  return nullptr;
}

pid_t sink_tid() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    if (pthread_create(&t, &a, sink_main, nullptr) == 0) {
      pthread_setname_np(t, "pollfab-sigio");
      while (!g_sink_tid.load(std::memory_order_acquire)) sched_yield();
    }
    pthread_attr_destroy(&a);
  });
  return g_sink_tid.load(std::memory_order_acquire);
}

}  // namespace

int confine_tap_sigio() noexcept {
  struct sigaction sa;
  if (sigaction(SIGIO, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
      !(sa.sa_flags & SA_RESTART)) {
    sa.sa_flags |= SA_RESTART;
    sigaction(SIGIO, &sa, nullptr);
  }
  pid_t tid = sink_tid();
  if (!tid) return 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  int n = 0;
  while (dirent* e = readdir(d)) {
    int fd = atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(d)) continue;
    char path[64], target[64] = {};
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0 || strcmp(target, "/dev/net/tun") != 0) continue;
    f_owner_ex owner{};
    if (fcntl(fd, F_GETOWN_EX, &owner) != 0) continue;
    if (owner.type == F_OWNER_TID && owner.pid == tid) continue;
    if (owner.pid != getpid()) continue;  // not the PMD's process-wide owner: leave it
    f_owner_ex mine{F_OWNER_TID, tid};
    if (fcntl(fd, F_SETOWN_EX, &mine) == 0) ++n;
  }
  closedir(d);
  PF_LOG("dpdk", Debug, Domain, "SIGIO of {} TUN fds directed to thread {}", n, tid);
  return n;
}

}  // namespace pollfab::dpdk_glue
