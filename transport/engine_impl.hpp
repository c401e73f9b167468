// Engine internals shared by engine.cpp, engine_tx.cpp and engine_rx.cpp (not a public header).
#pragma once
#include <algorithm>
#include <cstring>

#include "transport/engine.hpp"

namespace pollfab::transport {

// One message being sent: queued, segmented, in flight, until all its packets are acked.
struct Engine::SendMsg {
  SendOp op;
  uint64_t len = 0;
  uint32_t next_offset = 0;  // bytes already cut into segments
  Seq32 last_psn;            // PSN of the final segment, valid once segmented
  bool segmented = false;
  uint8_t* inject = nullptr; // this slot's inject buffer (inject_size bytes)
  SendMsg* next = nullptr;   // peer FIFO; then the pinned list
  PinId pin = kNoPin;        // zero copy: segments attached from op.iov under this pin
  Status status = Status::Ok;  // the result, while the completion waits for the pin
};

// A posted receive.
struct Engine::RecvEntry {
  RecvOp op;
  uint64_t cap = 0;          // bytes the iov holds
  uint32_t received = 0;     // bytes of the current message seen (copied or truncated)
  RecvEntry* prev = nullptr;
  RecvEntry* next = nullptr;
};

// A message that arrived before a matching receive was posted.
struct Engine::UnexEntry {
  PeerId peer = kNoPeer;
  uint32_t flags = 0;        // wire flags of the first segment (kTagged, kCqData)
  uint64_t tag = 0, cq_data = 0;
  uint32_t msg_len = 0;
  uint32_t received = 0;
  bool complete = false;
  RecvEntry* claimed = nullptr;  // a receive posted while the message was still arriving
  uint8_t* buf = nullptr;        // msg_len bytes: inline_buf or malloc'd
  uint8_t inline_buf[Engine::kInlineUnexpectedBytes];
  UnexEntry* prev = nullptr;
  UnexEntry* next = nullptr;
  bool listed = false;           // in unexpected_[] (false once claimed)
};

struct Engine::TxSlot {
  SendMsg* msg = nullptr;
  uint32_t offset = 0;
  uint32_t len = 0;
  uint64_t sent_ns = 0;
  uint16_t tx_count = 0;
  bool sacked = false;
};

struct Engine::Peer {
  PeerAddr addr;
  Route route;
  uint64_t user = ~0ull;
  uint32_t remote_epoch = 0;
  uint32_t retired_epoch = 0;  // the incarnation remote_epoch replaced (its packets are ignored)
  bool dead = false;           // declared failed; comes back only with a new epoch
  uint64_t heard_ns = 0;       // last packet from the peer, or the start of our wait on it
  uint64_t probe_ns = 0;       // when our unanswered probe went out (0 = none)

  // send side
  Seq32 snd_una, snd_nxt;
  std::unique_ptr<TxSlot[]> txw;  // window_pkts slots indexed by psn & mask
  SendMsg* sq_head = nullptr;     // FIFO of messages not yet fully acknowledged
  SendMsg* sq_tail = nullptr;
  SendMsg* sq_next = nullptr;     // first message with segments left to send
  uint64_t srtt_ns = 0, rttvar_ns = 0, rto_ns = 0;
  bool rtt_valid = false;
  uint32_t backoff = 0;
  uint64_t rto_deadline_ns = 0;   // 0 = timer not armed
  Seq32 snd_edge;                 // receiver's window edge (ack_psn + credits): send below it
  bool persist_probe = false;     // may send one segment past snd_edge (window closed)
  bool credit_stalled = false;
  Seq32 high_sacked;              // highest PSN SACKed (valid when > snd_una)
  uint64_t rack_xmit_ns = 0;      // latest send time of a packet known delivered (RACK)
  uint64_t loss_deadline_ns = 0;  // re-run loss detection then (0 = none)
  uint64_t min_rtt_ns = 0;        // lowest RTT sample (base delay for cc)
  double cwnd = 0;                // congestion window, packets
  double ssthresh = 0;            // after a timeout, cwnd doubles per RTT up to this
  uint64_t last_decrease_ns = 0;
  uint64_t round_start_ns = 0;    // cc round: one smoothed RTT of samples
  uint64_t round_min_ns = 0;      // lowest corrected RTT sample of the round (0 = none yet)
  uint32_t good_rounds = 0;       // consecutive rounds whose lowest sample met the target

  // receive side
  Seq32 rcv_nxt;
  std::unique_ptr<PacketBuf[]> held;  // window_pkts slots, data == nullptr when empty
  uint32_t held_count = 0;
  RecvEntry* cur_recv = nullptr;      // message being reassembled into a posted receive
  UnexEntry* cur_unex = nullptr;      // ... or into an unexpected buffer
  uint32_t cur_msg_len = 0, cur_flags = 0;
  uint64_t cur_tag = 0, cur_data = 0;
  uint64_t data_rx_ns = 0;            // newest data packet's arrival (ack_delay_ns)
  uint16_t adv_credits = 0;           // credits last advertised
  uint32_t ack_pending = 0;           // packets received but not yet acknowledged
  uint64_t ack_deadline_ns = 0;
  bool ack_now = false;

  // counters (PeerStats)
  uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0, retx_pkts = 0, dup_pkts = 0;
  uint64_t rto_events = 0;

  uint32_t inflight() const noexcept { return static_cast<uint32_t>(snd_nxt - snd_una); }
};

// Copies len bytes from src into the iov list at byte offset off (clipped to the iov).
inline void copy_to_iov(const iovec* iov, uint32_t cnt, uint64_t off, const uint8_t* src,
                        uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt && len; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    uint64_t n = std::min<uint64_t>(len, iov[i].iov_len - off);
    std::memcpy(static_cast<uint8_t*>(iov[i].iov_base) + off, src, n);
    src += n; len -= n; off = 0;
  }
}

// Copies len bytes at byte offset off of the iov list into dst.
inline void copy_from_iov(const iovec* iov, uint32_t cnt, uint64_t off, uint8_t* dst,
                          uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt && len; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    uint64_t n = std::min<uint64_t>(len, iov[i].iov_len - off);
    std::memcpy(dst, static_cast<const uint8_t*>(iov[i].iov_base) + off, n);
    dst += n; len -= n; off = 0;
  }
}

// The address of bytes [off, off + len) of the iov list if they lie in one entry, else null.
inline const uint8_t* contiguous_in_iov(const iovec* iov, uint32_t cnt, uint64_t off,
                                        uint64_t len) noexcept {
  for (uint32_t i = 0; i < cnt; ++i) {
    if (off >= iov[i].iov_len) { off -= iov[i].iov_len; continue; }
    return off + len <= iov[i].iov_len ? static_cast<const uint8_t*>(iov[i].iov_base) + off : nullptr;
  }
  return nullptr;
}

inline uint64_t iov_bytes(const iovec* iov, uint32_t cnt) noexcept {
  uint64_t n = 0;
  for (uint32_t i = 0; i < cnt; ++i) n += iov[i].iov_len;
  return n;
}

}  // namespace pollfab::transport
