// Connection management for connected endpoints (FI_EP_MSG; semantics fi_cm(3), fi_eq(3)):
// the handshake and teardown that run beside an endpoint's Engine, over the same PacketIo, with
// the packet types ConnReq, ConnResp, Disconnect and Reset (wire.hpp, docs/wire-format.md).
//
//   client endpoint              listener                    accepting endpoint
//   connect(): ConnReq  ------>  request event (once per conn_id)
//     (resent with backoff)      reject(): ConnResp/Reject (kept; resent on a duplicate ConnReq)
//                                accepted(): duplicates ignored from then on
//                                                            accept(): ConnResp/Accept (resent)
//   Accept  <----------------------------------------------  from the accepting endpoint
//   Connected event; Confirm -------------------------------> Connected event (or on the
//     (a duplicate Accept gets another Confirm)                first data packet)
//   shutdown(): Disconnect/Request (resent) --------------->  Shutdown event; Disconnect/Ack
//
// Every packet of a connection carries the client's conn_id (random, non-zero), so duplicates
// and late packets of an older attempt are recognised; an Accept is believed only from the
// listener's host. Loss is repaired by resending with exponential backoff (resend_ns doubling
// up to 8x); a side that gets no answer within timeout_ns ends with TimedOut: nothing waits
// forever. Reset tells a side that the other no longer knows the connection.
// Thread-safety: none (the owner serialises, like Engine). Allocation: the listener's request
// table (control path); endpoints allocate nothing after construction.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "lib/util/status.hpp"
#include "transport/clock.hpp"
#include "transport/packet_io.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport {

using util::Status;

struct CmConfig {
  uint64_t resend_ns = 20'000'000;     // first resend of an unanswered packet; doubles to 8x
  uint64_t timeout_ns = 5'000'000'000; // connect/accept/shutdown give up after this
  bool checksum = true;                // seal CM packets with a CRC-32C
};

enum class CmEvent : uint8_t {
  Connected,  // both: the connection is up (data: the peer's CM data; none on the server)
  Refused,    // client: the listener rejected (data: its CM data)
  TimedOut,   // client or server: no answer within timeout_ns
  Shutdown,   // the peer shut the connection down (or reset it)
};

class CmSink {
 public:
  virtual ~CmSink() = default;
  virtual void on_cm_event(CmEvent ev, const uint8_t* data, uint16_t len) noexcept = 0;
};

// One connected endpoint's side of the protocol (client or accepting server).
class CmEndpoint {
 public:
  enum class State : uint8_t { Idle, Connecting, Accepting, Connected, Disconnecting, Closed,
                               Refused, TimedOut };
  // ep_id/epoch: the endpoint's (the Engine's) identity, sent as src_ep/src_epoch.
  CmEndpoint(PacketIo& io, Clock& clock, CmSink& sink, const CmConfig& cfg, uint16_t ep_id,
             uint32_t epoch) noexcept;

  // Client: connects to the listener at `listener` with CM data (len <= wire::kMaxCmData) under
  // conn_id (non-zero, random). Returns Ok, Busy (not Idle), TooBig (data), Invalid (conn_id 0).
  Status connect(const PeerAddr& listener, uint32_t conn_id, const uint8_t* data,
                 uint16_t len) noexcept;
  // Server: answers the request conn_id of `client` (from the listener's request) with an
  // Accept and CM data. Returns Ok, Busy (not Idle), TooBig, Invalid.
  Status accept(const PeerAddr& client, uint32_t conn_id, const uint8_t* data,
                uint16_t len) noexcept;
  // fi_shutdown: tells the peer (resent until acknowledged or timed out). Returns Ok, or
  // NotConnected if there is no connection to shut down.
  Status shutdown() noexcept;

  // A CM packet addressed to this endpoint (h decoded, payload = its CmExt and data).
  void on_packet(const PacketBuf& pkt, const wire::Header& h, const uint8_t* payload) noexcept;
  // A data packet from the peer arrived: for an accepting server, proof the client has the
  // Accept (its Confirm may be lost).
  void on_peer_data() noexcept;
  // Resends and timeouts. Call from progress.
  void progress() noexcept;
  // Earliest time (ns) progress() has work; UINT64_MAX if none.
  uint64_t next_deadline_ns() const noexcept;

  State state() const noexcept { return state_; }
  // The connected peer (valid from Connected on; the client learns it from the Accept).
  const PeerAddr& peer() const noexcept { return peer_; }
  uint32_t conn_id() const noexcept { return conn_id_; }
  uint64_t drops() const noexcept { return drops_; }  // CM packets ignored (stale, foreign)

 private:
  void send(wire::Type type, uint8_t kind, const uint8_t* data, uint16_t len) noexcept;
  // connect/accept: checks, takes the peer and CM data, sends the first packet.
  Status start(State st, const PeerAddr& peer, uint32_t conn_id, const uint8_t* data,
               uint16_t len) noexcept;
  void arm() noexcept;  // first resend timer and the deadline of the current exchange
  void resend_current() noexcept;
  void finish(State s, CmEvent ev, const uint8_t* data, uint16_t len) noexcept;

  PacketIo& io_;
  Clock& clock_;
  CmSink& sink_;
  CmConfig cfg_;
  uint16_t ep_id_;
  uint32_t epoch_;
  State state_ = State::Idle;
  PeerAddr peer_;       // the listener while connecting, then the connected peer
  uint32_t peer_epoch_ = 0;
  uint32_t conn_id_ = 0;
  Route route_;
  uint8_t data_[wire::kMaxCmData];  // CM data of the packet being resent
  uint16_t data_len_ = 0;
  uint64_t next_resend_ = UINT64_MAX, deadline_ = UINT64_MAX, interval_ = 0;
  uint64_t drops_ = 0;
};

// A passive endpoint's side: requests from clients, answered by reject() or by an accepting
// CmEndpoint (then accepted()).
class CmListenerSink {
 public:
  virtual ~CmListenerSink() = default;
  // A new request (one per client endpoint and conn_id, duplicates are not reported again).
  virtual void on_request(uint64_t request, const PeerAddr& client, uint32_t conn_id,
                          const uint8_t* data, uint16_t len) noexcept = 0;
};

class CmListener {
 public:
  static constexpr size_t kMaxPending = 1024;  // requests the application has not answered
  CmListener(PacketIo& io, Clock& clock, CmListenerSink& sink, const CmConfig& cfg,
             uint16_t ep_id, uint32_t epoch);

  // A CM packet addressed to the listener (ConnReq; anything else is counted and dropped).
  void on_packet(const PacketBuf& pkt, const wire::Header& h, const uint8_t* payload) noexcept;
  // The application rejected the request (fi_reject) with CM data: the client gets a Reject,
  // again for each duplicate ConnReq. Returns Ok, Invalid (unknown or answered request), TooBig.
  Status reject(uint64_t request, const uint8_t* data, uint16_t len) noexcept;
  // The application accepted the request on an endpoint (fi_accept): duplicates of the ConnReq
  // are ignored from now on. Returns Ok or Invalid (unknown or answered request).
  Status accepted(uint64_t request) noexcept;
  // The request's client and conn_id (for the accepting endpoint); false if unknown.
  bool request(uint64_t request, PeerAddr& client, uint32_t& conn_id) const noexcept;
  // Forgets answered requests older than 2 x timeout_ns (their clients have given up).
  void progress() noexcept;
  size_t pending() const noexcept;
  uint64_t drops() const noexcept { return drops_; }

 private:
  struct Request {
    uint64_t id;
    PeerAddr client;
    uint32_t client_epoch;
    uint32_t conn_id;
    enum class St : uint8_t { Pending, Accepted, Rejected } st;
    uint64_t answered_ns;
    Route route;
    std::vector<uint8_t> reject_data;
  };
  Request* find(uint64_t id) noexcept;
  void send_reject(Request& r) noexcept;

  PacketIo& io_;
  Clock& clock_;
  CmListenerSink& sink_;
  CmConfig cfg_;
  uint16_t ep_id_;
  uint32_t epoch_;
  std::deque<Request> requests_;  // in arrival order (stable addresses for their routes)
  uint64_t next_id_ = 1;
  uint64_t drops_ = 0;
};

// Sends one CM packet (header + CmExt + data) from (src_ep, src_epoch) to `to` over route.
// Returns false if no buffer or the link refused it (the caller's timer resends).
bool send_cm(PacketIo& io, const Route& route, uint16_t src_ep, uint32_t src_epoch,
             const PeerAddr& to, uint32_t dst_epoch, wire::Type type, uint32_t conn_id,
             uint8_t kind, const uint8_t* data, uint16_t len, bool checksum) noexcept;
// The CM extension of a decoded CM packet's payload.
struct CmExt {
  uint32_t conn_id = 0;
  uint8_t kind = 0;
  uint16_t data_len = 0;
  const uint8_t* data = nullptr;
};
CmExt decode_cm(const uint8_t* payload) noexcept;

}  // namespace pollfab::transport
