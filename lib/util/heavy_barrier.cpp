#include "lib/util/heavy_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PF_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define PF_TSAN 1
#endif

namespace pollfab::util {
namespace {

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0U, 0); }

// The pid that registered (a forked child is a new process and registers again).
std::atomic<pid_t> registered_pid{0};

bool register_self() noexcept {
  const pid_t me = getpid();
  if (registered_pid.load(std::memory_order_acquire) == me) return true;
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return false;
  registered_pid.store(me, std::memory_order_release);
  return true;
}

}  // namespace

bool heavy_barrier_available() noexcept {
#if defined(PF_TSAN)
  return false;
#else
  return register_self();
#endif
}

bool heavy_barrier() noexcept {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  // Not registered in this process (a fork): once more after registering.
  return register_self() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

}  // namespace pollfab::util
