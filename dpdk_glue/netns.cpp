#include "dpdk_glue/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pollfab::dpdk_glue {

NetnsGuard::NetnsGuard(const std::string& name) {
  if (name.empty()) return;
  orig_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (orig_fd_ < 0) {
    status_ = errno;
    error_ = std::string("open /proc/thread-self/ns/net: ") + strerror(errno);
    return;
  }
  std::string path = "/var/run/netns/" + name;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    status_ = errno;
    error_ = "open " + path + ": " + strerror(errno);
    close(orig_fd_);
    orig_fd_ = -1;
    return;
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    status_ = errno;
    error_ = "setns " + path + ": " + strerror(errno);
    close(orig_fd_);
    orig_fd_ = -1;
  }
  close(fd);
}

NetnsGuard::~NetnsGuard() {
  if (orig_fd_ >= 0) {
    (void)setns(orig_fd_, CLONE_NEWNET);
    close(orig_fd_);
  }
}

}  // namespace pollfab::dpdk_glue
