#include "providers/verbs/cm_thread.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pollfab::providers::verbs {

std::shared_ptr<CmThread> CmThread::start(std::string& err, const char* name) {
  std::shared_ptr<CmThread> cm(new CmThread());
  if (!(cm->channel_ = rdma_create_event_channel()))
    return err = fmt::format("rdma_create_event_channel: {}", strerror(errno)), nullptr;
  const int fd = cm->channel_->fd;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if ((cm->stop_fd_ = eventfd(0, EFD_CLOEXEC)) < 0)
    return err = fmt::format("eventfd: {}", strerror(errno)), nullptr;
  cm->thread_ = std::thread([p = cm.get(), name] { p->run(name); });
  return cm;
}

CmThread::~CmThread() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (channel_) rdma_destroy_event_channel(channel_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

void CmThread::run(const char* name) noexcept {
  pthread_setname_np(pthread_self(), name);
  for (;;) {
    pollfd p[2] = {{channel_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    rdma_cm_event* ev = nullptr;
    while (rdma_get_cm_event(channel_, &ev) == 0) {
      rdma_cm_id* owner = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->listen_id : ev->id;
      if (auto* h = owner ? static_cast<CmHandler*>(owner->context) : nullptr) h->on_cm_event(*ev);
      rdma_ack_cm_event(ev);
    }
  }
}

}  // namespace pollfab::providers::verbs
