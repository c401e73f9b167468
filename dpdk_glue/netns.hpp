// NetnsGuard: runs a scope of the calling thread inside a named network namespace
// (/var/run/netns/NAME, as `ip netns` creates) and returns to the original one at scope exit.
// Used so vdevs (net_tap) are created where the testbed's switch lives; sockets the PMD opens
// in the scope stay bound to that namespace. An empty name is a no-op.
#pragma once
#include <string>

namespace pollfab::dpdk_glue {

class NetnsGuard {
 public:
  explicit NetnsGuard(const std::string& name);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;
  // 0 on success (or no-op), else a positive errno; error() says what failed.
  int status() const noexcept { return status_; }
  const std::string& error() const noexcept { return error_; }

 private:
  int orig_fd_ = -1;
  int status_ = 0;
  std::string error_;
};

}  // namespace pollfab::dpdk_glue
