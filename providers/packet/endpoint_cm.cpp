// TransportEndpoint's connection calls (FI_EP_MSG): fi_connect, fi_accept, fi_shutdown,
// fi_getpeer, and the EQ events of the handshake (transport/connection.hpp).
#include <cstring>
#include <random>
#include <vector>

#include "lib/core/errors.hpp"
#include "lib/core/eq.hpp"
#include "providers/packet/domain.hpp"
#include "providers/packet/endpoint.hpp"
#include "providers/packet/pep.hpp"

namespace pollfab::providers::packet {

namespace {

uint32_t random_conn_id() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  uint32_t v;
  do v = rng(); while (v == 0);
  return v;
}

}  // namespace

int TransportEndpoint::connect(const void* addr, const void* param, size_t paramlen) noexcept {
  if (!cm_) return -FI_EOPNOTSUPP;
  if (!enabled_) return -FI_EOPBADSTATE;
  if (!addr || paramlen > transport::wire::kMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  if (connreq_) return -FI_EINVAL;  // an endpoint for an FI_CONNREQ is accepted, not connected
  Name n;
  const NameFormat& fmt = tdom_->name_format();
  if (!fmt.decode_app(addr, n) || n.ep_id == 0)
    return -FI_EINVAL;
  if (int r = fmt.complete(n)) return r;  // MAC by ARP / the neighbour table (takes the lock)
  util::Guard<util::MaybeLock> g(tdom_->lock());
  const util::Status st = cm_->connect(n.peer(), random_conn_id(),
                                       static_cast<const uint8_t*>(param),
                                       static_cast<uint16_t>(paramlen));
  if (st == util::Status::Busy) return -FI_EISCONN;
  return -core::fi_errno_of(st);
}

int TransportEndpoint::accept(const void* param, size_t paramlen) noexcept {
  if (!cm_) return -FI_EOPNOTSUPP;
  if (!enabled_) return -FI_EOPBADSTATE;
  if (paramlen > transport::wire::kMaxCmData || (paramlen && !param)) return -FI_EINVAL;
  if (!connreq_) return -FI_EINVAL;  // not opened from an FI_CONNREQ info
  util::Guard<util::MaybeLock> g(tdom_->lock());
  if (cm_->state() != transport::CmEndpoint::State::Idle) return -FI_EISCONN;
  // The request must have come to this port and be still unanswered (a stale handle is
  // refused): the Accept leaves from the listener's address.
  if (connreq_->pep()->link() != &tdom_->link() || connreq_->pep()->accepted(*connreq_) != 0)
    return -FI_EINVAL;
  const util::Status st = cm_->accept(connreq_->client(), connreq_->conn_id(),
                                      static_cast<const uint8_t*>(param),
                                      static_cast<uint16_t>(paramlen));
  return -core::fi_errno_of(st);
}

int TransportEndpoint::shutdown(uint64_t) noexcept {
  if (!cm_) return -FI_EOPNOTSUPP;
  util::Guard<util::MaybeLock> g(tdom_->lock());
  if (engine_) engine_->flush_posted();  // data posted before fi_shutdown goes out before it
  const util::Status st = cm_->shutdown();
  if (st != util::Status::Ok) return -core::fi_errno_of(st);
  peer_gone_ = true;  // data calls now fail with -FI_ENOTCONN
  return 0;
}

int TransportEndpoint::getpeer(void* addr, size_t* addrlen) noexcept {
  if (!cm_) return -FI_EOPNOTSUPP;
  if (!addrlen) return -FI_EINVAL;
  Name n;
  {
    util::Guard<util::MaybeLock> g(tdom_->lock());
    if (conn_peer_ == transport::kNoPeer) return -FI_ENOTCONN;
    const transport::PeerAddr& pa = cm_->peer();
    n = Name::from_host(tdom_->kind(), pa.host, pa.ep_id);
  }
  uint8_t bin[kNameBytes];
  n.encode(bin);
  return tdom_->name_format().export_to(bin, addr, addrlen);
}

void TransportEndpoint::on_cm_packet(transport::PacketBuf& pkt) noexcept {
  transport::wire::Header h;
  if (transport::wire::verify(pkt.data, pkt.len) &&
      transport::wire::decode(pkt.data, pkt.len, h) == transport::wire::DecodeError::None)
    cm_->on_packet(pkt, h, pkt.data + transport::wire::kHeaderBytes);
  tdom_->io().free(&pkt, 1);
}

// Under the link's lock (from progress or a received packet): the engine learns its peer, the
// EQ gets the event.
void TransportEndpoint::on_cm_event(transport::CmEvent ev, const uint8_t* data,
                                    uint16_t len) noexcept {
  fid_t self = &box_.fid.fid;
  if (ev == transport::CmEvent::Connected) {
    try {
      conn_peer_ = engine_->peer(cm_->peer());
    } catch (...) {
      conn_peer_ = transport::kNoPeer;
    }
  }
  if (ev == transport::CmEvent::Shutdown) peer_gone_ = true;
  if (!eq_) return;
  try {
    if (ev == transport::CmEvent::Connected || ev == transport::CmEvent::Shutdown) {
      std::vector<uint8_t> buf(sizeof(fi_eq_cm_entry) + len);
      auto* e = reinterpret_cast<fi_eq_cm_entry*>(buf.data());
      e->fid = self;
      e->info = nullptr;
      if (len) std::memcpy(buf.data() + sizeof(fi_eq_cm_entry), data, len);
      eq_->write(ev == transport::CmEvent::Connected ? FI_CONNECTED : FI_SHUTDOWN, buf.data(),
                 buf.size(), 0);
      return;
    }
    fi_eq_err_entry err{};
    err.fid = self;
    err.err = ev == transport::CmEvent::Refused ? FI_ECONNREFUSED : FI_ETIMEDOUT;
    err.prov_errno = -err.err;
    eq_->write_error(err, data, len);
  } catch (...) {
  }
}

}  // namespace pollfab::providers::packet
