// RcEndpoint's connection calls (fi_cm(3)) and the rdma_cm events of its id (cm_thread.hpp).
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/fi_cm.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "lib/core/ep_options.hpp"
#include "lib/util/log.hpp"
#include "providers/verbs/rc_domain.hpp"
#include "providers/verbs/rc_endpoint.hpp"

namespace pollfab::providers::verbs {
namespace {

constexpr const char* kProv = "verbs";
constexpr int kResolveMs = 2000;
constexpr uint8_t kRetry = 7;     // transport retries before IBV_WC_RETRY_EXC_ERR

int export_sin(const sockaddr* sa, void* addr, size_t* len) {
  const size_t need = sizeof(sockaddr_in);
  const bool fits = addr && *len >= need;
  if (fits) std::memcpy(addr, sa, need);
  *len = need;
  return fits ? 0 : -FI_ETOOSMALL;
}

}  // namespace

int RcEndpoint::getopt(int level, int name, void* val, size_t* len) {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  return core::get_size_option(kRcMaxCmData, val, len);
}

int RcEndpoint::getname(void* addr, size_t* len) {
  return export_sin(rdma_get_local_addr(id_), addr, len);
}

int RcEndpoint::getpeer(void* addr, size_t* len) {
  if (state_.load() != State::Connected) return -FI_ENOTCONN;
  return export_sin(rdma_get_peer_addr(id_), addr, len);
}

int RcEndpoint::connect(const void* addr, const void* param, size_t paramlen) {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (passive_) return -FI_EINVAL;  // an FI_CONNREQ's endpoint is accepted, not connected
  if (!eq_) return -FI_ENOEQ;
  if (!addr || paramlen > kRcMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  sockaddr_in dst{};
  std::memcpy(&dst, addr, sizeof dst);
  if (dst.sin_family != AF_INET) return -FI_EINVAL;
  State idle = State::Idle;
  if (!state_.compare_exchange_strong(idle, State::Connecting)) return -FI_EISCONN;
  conn_len_ = static_cast<uint8_t>(cm_data_frame(param, paramlen, conn_data_));
  // Resolution continues on the CM thread: ADDR_RESOLVED -> route -> rdma_connect.
  if (rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&dst), kResolveMs) != 0) {
    const int e = errno;
    state_ = State::Idle;
    PF_LOG(kProv, Warn, EpCtrl, "fi_connect {}:{}: rdma_resolve_addr: {}", inet_ntoa(dst.sin_addr),
           ntohs(dst.sin_port), strerror(e));
    return e == ENETUNREACH || e == EHOSTUNREACH ? -FI_EHOSTUNREACH : -FI_EIO;
  }
  return 0;
}

int RcEndpoint::accept(const void* param, size_t paramlen) {
  if (!enabled_) return -FI_EOPBADSTATE;
  if (!passive_) return -FI_EINVAL;  // not opened from an FI_CONNREQ info
  if (!eq_) return -FI_ENOEQ;
  if (paramlen > kRcMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  State idle = State::Idle;
  if (!state_.compare_exchange_strong(idle, State::Connecting)) return -FI_EISCONN;
  uint8_t priv[kCmPrivateBytes];
  rdma_conn_param cp{};
  cp.private_data = priv;
  cp.private_data_len = static_cast<uint8_t>(cm_data_frame(param, paramlen, priv));
  cp.responder_resources = std::min(rdom_->rd_atomic(), peer_initiator_depth_);
  cp.initiator_depth = std::min(rdom_->rd_atomic(), peer_responder_resources_);
  cp.retry_count = kRetry;
  cp.rnr_retry_count = static_cast<uint8_t>(rdom_->cfg().rnr_retry);
  if (rdma_accept(id_, &cp) != 0) {
    const int e = errno;
    state_ = State::Down;
    PF_LOG(kProv, Warn, EpCtrl, "fi_accept: rdma_accept: {}", strerror(e));
    return e == EINVAL ? -FI_EINVAL : -FI_EIO;
  }
  return 0;
}

int RcEndpoint::shutdown(uint64_t flags) {
  (void)flags;
  if (state_.load() != State::Connected && state_.load() != State::Connecting) return -FI_ENOTCONN;
  local_shutdown_ = true;
  state_ = State::Down;
  rdma_disconnect(id_);
  return 0;
}

void RcEndpoint::write_cm_event(uint32_t event, const void* data, size_t len) noexcept {
  if (!eq_) return;
  try {
    std::vector<uint8_t> buf(sizeof(fi_eq_cm_entry) + len);
    auto* e = reinterpret_cast<fi_eq_cm_entry*>(buf.data());
    e->fid = &box_.fid.fid;
    e->info = nullptr;
    if (len) std::memcpy(buf.data() + sizeof(fi_eq_cm_entry), data, len);
    eq_->write(event, buf.data(), buf.size(), 0);
  } catch (...) {
    PF_LOG(kProv, Warn, Eq, "no memory for a connection event ({})", event);
  }
}

void RcEndpoint::write_cm_error(int err, const void* data, size_t len) noexcept {
  if (!eq_) return;
  try {
    fi_eq_err_entry e{};
    e.fid = &box_.fid.fid;
    e.err = err;
    e.prov_errno = -err;
    eq_->write_error(e, data, len);
  } catch (...) {
    PF_LOG(kProv, Warn, Eq, "no memory for a connection error ({})", err);
  }
}

void RcEndpoint::on_cm_event(rdma_cm_event& ev) noexcept {
  const uint8_t* data = nullptr;
  const size_t len = cm_data_parse(ev.param.conn.private_data, ev.param.conn.private_data_len, &data);
  switch (ev.event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (rdma_resolve_route(id_, kResolveMs) != 0) {
        state_ = State::Down;
        write_cm_error(FI_EHOSTUNREACH, nullptr, 0);
      }
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      rdma_conn_param cp{};
      cp.private_data = conn_data_;
      cp.private_data_len = conn_len_;
      cp.responder_resources = rdom_->rd_atomic();
      cp.initiator_depth = rdom_->rd_atomic();
      cp.retry_count = kRetry;
      cp.rnr_retry_count = static_cast<uint8_t>(rdom_->cfg().rnr_retry);
      if (rdma_connect(id_, &cp) != 0) {
        PF_LOG(kProv, Warn, EpCtrl, "fi_connect: rdma_connect: {}", strerror(errno));
        state_ = State::Down;
        write_cm_error(FI_EIO, nullptr, 0);
      }
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      if (local_shutdown_.load()) return;  // fi_shutdown while connecting: it stays down
      state_ = State::Connected;
      write_cm_event(FI_CONNECTED, data, len);
      return;
    case RDMA_CM_EVENT_REJECTED:
      state_ = State::Down;
      // status 28: the consumer (fi_reject) refused; others: no listener, a stale request.
      PF_LOG(kProv, Info, EpCtrl, "fi_connect: rejected (status {})", ev.status);
      write_cm_error(FI_ECONNREFUSED, data, len);
      return;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
      state_ = State::Down;
      write_cm_error(FI_EHOSTUNREACH, nullptr, 0);
      return;
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      state_ = State::Down;
      write_cm_error(ev.event == RDMA_CM_EVENT_UNREACHABLE ? FI_ETIMEDOUT : FI_ECONNABORTED,
                     nullptr, 0);
      return;
    case RDMA_CM_EVENT_DISCONNECTED: {
      const State was = state_.exchange(State::Down);
      if (!local_shutdown_.load()) {
        rdma_disconnect(id_);  // answer the peer's DREQ (or finish our own after an error)
        if (was == State::Connected || was == State::Connecting) write_cm_event(FI_SHUTDOWN, nullptr, 0);
      }
      return;
    }
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      state_ = State::Down;
      write_cm_error(FI_ENODEV, nullptr, 0);
      return;
    default:
      return;
  }
}

}  // namespace pollfab::providers::verbs
