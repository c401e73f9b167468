#include "providers/verbs/sidr.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <rdma/fi_errno.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace pollfab::providers::verbs {
namespace {

sockaddr_in sin_of(uint32_t ipv4, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(ipv4);
  return a;
}

// Waits up to `ms` for the next event on ch (non-blocking fd). nullptr on timeout or error.
rdma_cm_event* next_event(rdma_event_channel* ch, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(ch, &ev) == 0) return ev;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return nullptr;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now()).count();
    if (left <= 0) return nullptr;
    pollfd p{ch->fd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(left));
  }
}

}  // namespace

std::unique_ptr<SidrListener> SidrListener::start(uint32_t ipv4, uint16_t service, uint32_t qpn,
                                                  std::string& err) {
  std::unique_ptr<SidrListener> l(new SidrListener());
  l->qpn_ = qpn;
  if (!(l->cm_ = CmThread::start(err, "pollfab-sidr"))) return nullptr;
  if (rdma_create_id(l->cm_->channel(), &l->listen_, static_cast<CmHandler*>(l.get()),
                     RDMA_PS_UDP) != 0)
    return err = fmt::format("rdma_create_id: {}", strerror(errno)), nullptr;
  sockaddr_in a = sin_of(ipv4, service);
  if (rdma_bind_addr(l->listen_, reinterpret_cast<sockaddr*>(&a)) != 0)
    return err = fmt::format("rdma_bind_addr {}:{}: {}", inet_ntoa(a.sin_addr), service,
                             strerror(errno)), nullptr;
  if (rdma_listen(l->listen_, 64) != 0)
    return err = fmt::format("rdma_listen: {}", strerror(errno)), nullptr;
  l->service_ = ntohs(rdma_get_src_port(l->listen_));
  return l;
}

SidrListener::~SidrListener() {
  // After rdma_destroy_id no event of the listener is being handled or will come.
  if (listen_) rdma_destroy_id(listen_);
  cm_.reset();
}

void SidrListener::on_cm_event(rdma_cm_event& ev) noexcept {
  if (ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) return;
  // The event is counted on the listener's id: the request's own id may go before the ack.
  rdma_cm_id* id = ev.id;
  rdma_conn_param cp{};
  cp.qp_num = qpn_;
  if (rdma_accept(id, &cp) == 0) answered_.fetch_add(1, std::memory_order_relaxed);
  rdma_destroy_id(id);
}

int sidr_resolve(uint32_t src_ipv4, uint32_t dst_ipv4, uint16_t service, int timeout_ms,
                 uint32_t& qpn, std::string& err) {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) return err = fmt::format("rdma_create_event_channel: {}", strerror(errno)), -FI_EIO;
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  rdma_cm_id* id = nullptr;
  int rc = -FI_EIO;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_UDP) != 0) {
    err = fmt::format("rdma_create_id: {}", strerror(errno));
    rdma_destroy_event_channel(ch);
    return rc;
  }
  sockaddr_in src = sin_of(src_ipv4, 0), dst = sin_of(dst_ipv4, service);
  // One step: issue it, then wait for the event that ends it.
  auto step = [&](const char* what, rdma_cm_event_type want, auto issue) -> rdma_cm_event* {
    if (issue() != 0) {
      err = fmt::format("{}: {}", what, strerror(errno));
      return nullptr;
    }
    rdma_cm_event* ev = next_event(ch, timeout_ms);
    if (!ev) {
      err = fmt::format("{}: no answer within {} ms", what, timeout_ms);
      rc = -FI_EHOSTUNREACH;
      return nullptr;
    }
    if (ev->event != want) {
      err = fmt::format("{}: {} (status {})", what, rdma_event_str(ev->event), ev->status);
      rc = ev->event == RDMA_CM_EVENT_REJECTED ? -FI_ECONNREFUSED : -FI_EHOSTUNREACH;
      rdma_ack_cm_event(ev);
      return nullptr;
    }
    return ev;
  };
  rdma_cm_event* ev = step("rdma_resolve_addr", RDMA_CM_EVENT_ADDR_RESOLVED, [&] {
    return rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&dst),
                             timeout_ms);
  });
  if (ev) {
    rdma_ack_cm_event(ev);
    ev = step("rdma_resolve_route", RDMA_CM_EVENT_ROUTE_RESOLVED,
              [&] { return rdma_resolve_route(id, timeout_ms); });
  }
  if (ev) {
    rdma_ack_cm_event(ev);
    rdma_conn_param cp{};
    ev = step("rdma_connect (SIDR)", RDMA_CM_EVENT_ESTABLISHED, [&] { return rdma_connect(id, &cp); });
  }
  if (ev) {
    qpn = ev->param.ud.qp_num;
    rdma_ack_cm_event(ev);
    rc = 0;
  }
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return rc;
}

}  // namespace pollfab::providers::verbs
