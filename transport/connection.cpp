#include "transport/connection.hpp"

#include <algorithm>
#include <cstring>

#include "lib/util/bits.hpp"

namespace pollfab::transport {

bool send_cm(PacketIo& io, const Route& route, uint16_t src_ep, uint32_t src_epoch,
             const PeerAddr& to, uint32_t dst_epoch, wire::Type type, uint32_t conn_id,
             uint8_t kind, const uint8_t* data, uint16_t len, bool checksum) noexcept {
  PacketBuf pkt;
  if (io.alloc(&pkt, 1) != 1) return false;
  const uint32_t total = static_cast<uint32_t>(wire::kHeaderBytes + wire::kCmExtBytes + len);
  if (pkt.cap < total) {
    io.free(&pkt, 1);
    return false;
  }
  wire::Header h;
  h.type = type;
  h.payload_len = static_cast<uint16_t>(wire::kCmExtBytes + len);
  h.src_ep = src_ep;
  h.dst_ep = to.ep_id;
  h.src_epoch = src_epoch;
  h.dst_epoch = dst_epoch;
  wire::encode(h, pkt.data);
  uint8_t* ext = pkt.data + wire::kHeaderBytes;
  util::store_be32(ext, conn_id);
  ext[4] = kind;
  ext[5] = 0;
  util::store_be16(ext + 6, len);
  if (len) std::memcpy(ext + wire::kCmExtBytes, data, len);
  pkt.len = total;
  pkt.route = &route;
  if (checksum) wire::seal(pkt.data, pkt.len);
  if (io.tx_burst(&pkt, 1) != 1) {
    io.free(&pkt, 1);
    return false;
  }
  return true;
}

CmExt decode_cm(const uint8_t* payload) noexcept {
  CmExt e;
  e.conn_id = util::load_be32(payload);
  e.kind = payload[4];
  e.data_len = util::load_be16(payload + 6);
  e.data = payload + wire::kCmExtBytes;
  return e;
}

// ---- CmEndpoint ---------------------------------------------------------------------------

CmEndpoint::CmEndpoint(PacketIo& io, Clock& clock, CmSink& sink, const CmConfig& cfg,
                       uint16_t ep_id, uint32_t epoch) noexcept
    : io_(io), clock_(clock), sink_(sink), cfg_(cfg), ep_id_(ep_id), epoch_(epoch) {}

void CmEndpoint::send(wire::Type type, uint8_t kind, const uint8_t* data, uint16_t len) noexcept {
  send_cm(io_, route_, ep_id_, epoch_, peer_, peer_epoch_, type, conn_id_, kind, data, len,
          cfg_.checksum);
}

void CmEndpoint::arm() noexcept {
  const uint64_t now = clock_.now_ns();
  interval_ = cfg_.resend_ns;
  next_resend_ = now + interval_;
  deadline_ = now + cfg_.timeout_ns;
}

Status CmEndpoint::start(State st, const PeerAddr& peer, uint32_t conn_id, const uint8_t* data,
                         uint16_t len) noexcept {
  if (state_ != State::Idle) return Status::Busy;
  if (len > wire::kMaxCmData) return Status::TooBig;
  if (!conn_id || (len && !data)) return Status::Invalid;
  peer_ = peer;
  peer_epoch_ = 0;
  conn_id_ = conn_id;
  io_.resolve(peer_.host, route_);
  if (len) std::memcpy(data_, data, len);
  data_len_ = len;
  state_ = st;
  arm();
  resend_current();  // the first ConnReq (client) or Accept (server)
  return Status::Ok;
}

Status CmEndpoint::connect(const PeerAddr& listener, uint32_t conn_id, const uint8_t* data,
                           uint16_t len) noexcept {
  return start(State::Connecting, listener, conn_id, data, len);
}

Status CmEndpoint::accept(const PeerAddr& client, uint32_t conn_id, const uint8_t* data,
                          uint16_t len) noexcept {
  return start(State::Accepting, client, conn_id, data, len);
}

Status CmEndpoint::shutdown() noexcept {
  if (state_ != State::Connected) return Status::NotConnected;
  state_ = State::Disconnecting;
  data_len_ = 0;
  arm();
  send(wire::Type::Disconnect, wire::kCmRequest, nullptr, 0);
  return Status::Ok;
}

void CmEndpoint::finish(State s, CmEvent ev, const uint8_t* data, uint16_t len) noexcept {
  state_ = s;
  next_resend_ = deadline_ = UINT64_MAX;
  sink_.on_cm_event(ev, data, len);
}

void CmEndpoint::resend_current() noexcept {
  switch (state_) {
    case State::Connecting: send(wire::Type::ConnReq, 0, data_, data_len_); break;
    case State::Accepting: send(wire::Type::ConnResp, wire::kCmAccept, data_, data_len_); break;
    case State::Disconnecting: send(wire::Type::Disconnect, wire::kCmRequest, nullptr, 0); break;
    default: break;
  }
}

void CmEndpoint::on_packet(const PacketBuf& pkt, const wire::Header& h,
                           const uint8_t* payload) noexcept {
  const CmExt e = decode_cm(payload);
  if (e.conn_id != conn_id_ || !conn_id_) {
    ++drops_;  // another (or an older) connection's packet
    return;
  }
  const PeerAddr from{pkt.src, h.src_ep};
  switch (h.type) {
    case wire::Type::ConnResp:
      if (e.kind == wire::kCmAccept && state_ == State::Connecting && pkt.src == peer_.host) {
        peer_ = from;  // the accepting endpoint, on the listener's host
        peer_epoch_ = h.src_epoch;
        send(wire::Type::ConnResp, wire::kCmConfirm, nullptr, 0);
        finish(State::Connected, CmEvent::Connected, e.data, e.data_len);
      } else if (e.kind == wire::kCmAccept && from == peer_ &&
                 (state_ == State::Connected || state_ == State::Disconnecting)) {
        send(wire::Type::ConnResp, wire::kCmConfirm, nullptr, 0);  // our Confirm was lost
      } else if (e.kind == wire::kCmReject && state_ == State::Connecting &&
                 pkt.src == peer_.host) {
        finish(State::Refused, CmEvent::Refused, e.data, e.data_len);
      } else if (e.kind == wire::kCmConfirm && state_ == State::Accepting && from == peer_) {
        peer_epoch_ = h.src_epoch;
        finish(State::Connected, CmEvent::Connected, nullptr, 0);
      } else {
        ++drops_;
      }
      return;
    case wire::Type::Disconnect:
      if (!(from == peer_)) {
        ++drops_;
        return;
      }
      if (e.kind == wire::kCmRequest) {
        send(wire::Type::Disconnect, wire::kCmAck, nullptr, 0);  // every time: acks get lost
        if (state_ == State::Connected || state_ == State::Accepting)
          finish(State::Closed, CmEvent::Shutdown, nullptr, 0);
        else if (state_ == State::Disconnecting)  // both sides shut down at once
          state_ = State::Closed, next_resend_ = deadline_ = UINT64_MAX;
      } else if (e.kind == wire::kCmAck && state_ == State::Disconnecting) {
        state_ = State::Closed;
        next_resend_ = deadline_ = UINT64_MAX;
      } else {
        ++drops_;
      }
      return;
    case wire::Type::Reset:
      if (pkt.src == peer_.host &&
          (state_ == State::Connecting || state_ == State::Accepting ||
           state_ == State::Connected || state_ == State::Disconnecting)) {
        if (state_ == State::Connecting)
          finish(State::Refused, CmEvent::Refused, nullptr, 0);
        else if (state_ == State::Disconnecting)
          state_ = State::Closed, next_resend_ = deadline_ = UINT64_MAX;
        else
          finish(State::Closed, CmEvent::Shutdown, nullptr, 0);
      } else {
        ++drops_;
      }
      return;
    default:
      ++drops_;
      return;
  }
}

void CmEndpoint::on_peer_data() noexcept {
  if (state_ == State::Accepting) finish(State::Connected, CmEvent::Connected, nullptr, 0);
}

void CmEndpoint::progress() noexcept {
  if (next_resend_ == UINT64_MAX) return;
  const uint64_t now = clock_.now_ns();
  if (now >= deadline_) {
    if (state_ == State::Disconnecting) {  // the peer is gone; we are done anyway
      state_ = State::Closed;
      next_resend_ = deadline_ = UINT64_MAX;
    } else {
      finish(State::TimedOut, CmEvent::TimedOut, nullptr, 0);
    }
    return;
  }
  if (now >= next_resend_) {
    resend_current();
    interval_ = std::min(interval_ * 2, cfg_.resend_ns * 8);
    next_resend_ = now + interval_;
  }
}

uint64_t CmEndpoint::next_deadline_ns() const noexcept {
  return std::min(next_resend_, deadline_);
}

// ---- CmListener ---------------------------------------------------------------------------

CmListener::CmListener(PacketIo& io, Clock& clock, CmListenerSink& sink, const CmConfig& cfg,
                       uint16_t ep_id, uint32_t epoch)
    : io_(io), clock_(clock), sink_(sink), cfg_(cfg), ep_id_(ep_id), epoch_(epoch) {}

CmListener::Request* CmListener::find(uint64_t id) noexcept {
  for (Request& r : requests_)
    if (r.id == id) return &r;
  return nullptr;
}

void CmListener::send_reject(Request& r) noexcept {
  send_cm(io_, r.route, ep_id_, epoch_, r.client, r.client_epoch, wire::Type::ConnResp,
          r.conn_id, wire::kCmReject, r.reject_data.data(),
          static_cast<uint16_t>(r.reject_data.size()), cfg_.checksum);
}

void CmListener::on_packet(const PacketBuf& pkt, const wire::Header& h,
                           const uint8_t* payload) noexcept {
  if (h.type != wire::Type::ConnReq) {
    ++drops_;
    return;
  }
  const CmExt e = decode_cm(payload);
  const PeerAddr client{pkt.src, h.src_ep};
  if (!e.conn_id) {
    ++drops_;
    return;
  }
  for (Request& r : requests_) {
    if (r.conn_id != e.conn_id || !(r.client == client)) continue;
    if (r.st == Request::St::Rejected) send_reject(r);  // the Reject was lost
    return;  // pending: the application is deciding; accepted: the endpoint resends its Accept
  }
  try {
    Request r{next_id_++, client, h.src_epoch, e.conn_id, Request::St::Pending, 0, {}, {}};
    io_.resolve(client.host, r.route);
    if (pending() >= kMaxPending) {  // backlog full: refuse at once, no event
      r.st = Request::St::Rejected;
      r.answered_ns = clock_.now_ns();
      requests_.push_back(std::move(r));
      send_reject(requests_.back());
      return;
    }
    requests_.push_back(std::move(r));
  } catch (...) {
    ++drops_;  // no memory: the client resends
    return;
  }
  sink_.on_request(requests_.back().id, client, e.conn_id, e.data, e.data_len);
}

Status CmListener::reject(uint64_t id, const uint8_t* data, uint16_t len) noexcept {
  if (len > wire::kMaxCmData) return Status::TooBig;
  Request* r = find(id);
  if (!r || r->st != Request::St::Pending || (len && !data)) return Status::Invalid;
  try {
    r->reject_data.assign(data, data + len);
  } catch (...) {
    return Status::NoMemory;
  }
  r->st = Request::St::Rejected;
  r->answered_ns = clock_.now_ns();
  send_reject(*r);
  return Status::Ok;
}

Status CmListener::accepted(uint64_t id) noexcept {
  Request* r = find(id);
  if (!r || r->st != Request::St::Pending) return Status::Invalid;
  r->st = Request::St::Accepted;
  r->answered_ns = clock_.now_ns();
  return Status::Ok;
}

bool CmListener::request(uint64_t id, PeerAddr& client, uint32_t& conn_id) const noexcept {
  for (const Request& r : requests_)
    if (r.id == id) {
      client = r.client;
      conn_id = r.conn_id;
      return true;
    }
  return false;
}

void CmListener::progress() noexcept {
  const uint64_t now = clock_.now_ns();
  const uint64_t keep = 2 * cfg_.timeout_ns;
  // Answered requests leave in answer order only roughly; erase any that are old enough.
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->st != Request::St::Pending && now - it->answered_ns > keep)
      it = requests_.erase(it);
    else
      ++it;
  }
}

size_t CmListener::pending() const noexcept {
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(), [](const Request& r) {
    return r.st == Request::St::Pending;
  }));
}

}  // namespace pollfab::transport
