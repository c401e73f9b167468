// Two transport engines joined by a MemLink, driven by a ManualClock (no sleeps, deterministic).
#pragma once
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "transport/engine.hpp"
#include "transport/packet_io_filter.hpp"
#include "transport/testing/manual_clock.hpp"
#include "transport/testing/mem_link.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport::test {

using testing::ManualClock;

using testing::MemLink;
using testing::MemLinkConfig;

struct RecordingSink final : CompletionSink {
  std::vector<Completion> comps;
  std::vector<uint32_t> send_bursts;  // n of each on_sends_completed call
  std::vector<uint32_t> recv_bursts;  // n of each on_recvs_completed call
  std::function<void(const Completion&)> hook;
  void on_completion(const Completion& c) noexcept override {
    comps.push_back(c);
    if (hook) hook(c);
  }
  void on_recvs_completed(const RecvDone* r, uint32_t n) noexcept override {
    recv_bursts.push_back(n);
    CompletionSink::on_recvs_completed(r, n);
  }
  // Recorded, then one Completion each in comps (the interface's default).
  void on_sends_completed(const SendDone* s, uint32_t n) noexcept override {
    send_bursts.push_back(n);
    CompletionSink::on_sends_completed(s, n);
  }
};

// The completions of kind (kCompSend, kCompRecv, ...) that succeeded.
inline size_t ok_completions(const RecordingSink& s, uint32_t kind) {
  size_t n = 0;
  for (const Completion& c : s.comps) n += (c.flags & kind) && c.status == util::Status::Ok;
  return n;
}

// A link with this one-way latency (ns) and MemLinkConfig's other defaults.
inline MemLinkConfig link_with_latency(uint64_t one_way_ns) {
  MemLinkConfig lc;
  lc.latency_ns = one_way_ns;
  return lc;
}

// Drops the data packet with PSN `drop_psn` the first `times` times it is sent.
struct DropPsn final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    uint16_t k = 0;
    for (uint16_t i = 0; i < n; ++i) {
      wire::Header h;
      if (dropped < times && wire::decode(pkts[i].data, pkts[i].len, h) ==
                          wire::DecodeError::None &&
          h.type == wire::Type::Data && h.psn == drop_psn) {
        ++dropped;
        inner_.free(&pkts[i], 1);
        continue;
      }
      pkts[k++] = pkts[i];
    }
    const uint16_t sent = inner_.tx_burst(pkts, k);
    return static_cast<uint16_t>(sent + (n - k));  // dropped packets count as consumed
  }
  uint32_t drop_psn = 1;
  uint32_t times = 2;
  uint32_t dropped = 0;
};

class Pair {
 public:
  explicit Pair(const MemLinkConfig& lc = {}, EngineConfig ca = {}, EngineConfig cb = {})
      : link(lc, clock) {
    ca.ep_id = 1;
    cb.ep_id = 2;
    a = std::make_unique<Engine>(ca, link.a(), clock, sink_a);
    b = std::make_unique<Engine>(cb, link.b(), clock, sink_b);
    a_to_b = a->peer(PeerAddr{link.host(1), 2});
    b_to_a = b->peer(PeerAddr{link.host(0), 1});
  }

  // One round: deliver due packets to both engines, then run both engines' progress.
  // Returns the number of packets delivered.
  size_t step() {
    size_t moved = 0;
    PacketBuf bufs[32];
    for (int side = 0; side < 2; ++side) {
      PacketIo& io = side == 0 ? link.a() : link.b();
      Engine& e = side == 0 ? *a : *b;
      uint16_t n;
      while ((n = io.rx_burst(bufs, 32)) > 0) {
        for (uint16_t i = 0; i < n; ++i) e.on_packet(bufs[i]);
        moved += n;
      }
    }
    a->progress();
    b->progress();
    return moved;
  }

  // Steps until pred() holds; when nothing moves, jumps the clock to the next event.
  // Returns false if stuck (no event pending) or max_steps is exceeded.
  bool run_until(const std::function<bool()>& pred, uint64_t max_steps = 50'000'000) {
    for (uint64_t i = 0; i < max_steps; ++i) {
      if (pred()) return true;
      if (step() == 0) {
        uint64_t t = std::min({link.next_delivery_ns(), a->next_deadline_ns(), b->next_deadline_ns()});
        if (t == UINT64_MAX) return pred();
        clock.set(std::max(t, clock.now_ns() + 1));
      }
    }
    return false;
  }

  ManualClock clock;
  MemLink link;
  RecordingSink sink_a, sink_b;
  std::unique_ptr<Engine> a, b;
  PeerId a_to_b, b_to_a;
};

// Two engines on link's ends (a on end a, b on end b; their own PacketIo may filter the link's):
// delivers each end's packets to its engine and progresses both, moving the clock to the next
// event, until pred holds; at most max_rounds rounds. Returns pred(). TestClock: a Clock with
// set(t) (ManualClock, or a test's own). b_rx: where b's packets are read (a filter over the
// link's end b that changes what arrives), the link's end itself if null.
template <class TestClock>
bool drive_until(MemLink& link, TestClock& clock, Engine& a, Engine& b,
                 const std::function<bool()>& pred, int max_rounds = 200000,
                 PacketIo* b_rx = nullptr) {
  PacketBuf bufs[32];
  for (int i = 0; i < max_rounds; ++i) {
    if (pred()) return true;
    for (int side = 0; side < 2; ++side) {
      PacketIo& io = side == 0 ? link.a() : b_rx ? *b_rx : link.b();
      Engine& e = side == 0 ? a : b;
      for (uint16_t n; (n = io.rx_burst(bufs, 32)) > 0;)
        for (uint16_t k = 0; k < n; ++k) e.on_packet(bufs[k]);
    }
    a.progress();
    b.progress();
    const uint64_t t = std::min({link.next_delivery_ns(), a.next_deadline_ns(), b.next_deadline_ns()});
    if (t != UINT64_MAX) clock.set(std::max(t, clock.now_ns() + 1));
  }
  return pred();
}

inline SendOp make_send(PeerId peer, const void* buf, size_t len, void* ctx = nullptr,
                        uint32_t flags = kOpCompletion) {
  SendOp op;
  op.peer = peer;
  op.iov[0] = {const_cast<void*>(buf), len};
  op.iov_count = 1;
  op.flags = flags;
  op.context = ctx;
  return op;
}

inline RecvOp make_recv(void* buf, size_t len, void* ctx = nullptr, PeerId peer = kAnyPeer,
                        uint32_t flags = kOpCompletion) {
  RecvOp op;
  op.peer = peer;
  op.iov[0] = {buf, len};
  op.iov_count = 1;
  op.flags = flags;
  op.context = ctx;
  return op;
}

// Fills len bytes at p with an xorshift64 stream started from x (x != 0): message content that
// a test can regenerate to check what arrived.
inline void fill_xorshift(uint8_t* p, size_t len, uint64_t x) {
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < len; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; p[i] = uint8_t(x); }
}

// MR lookup for RMA tests: regions by key, addressed by offset (addr = offset into the
// region), with access bits and counts of the remote reads and writes each saw.
struct TestMrs final : MrLookup {
  struct Region {
    std::vector<uint8_t> bytes;
    uint32_t access;
    uint32_t reads = 0, writes = 0;
  };
  std::map<uint64_t, Region> regions;
  util::Status resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access, uint8_t** out,
                 void** region) noexcept override {
    auto it = regions.find(key);
    if (it == regions.end()) return util::Status::Invalid;
    Region& r = it->second;
    if ((r.access & access) != access) return util::Status::Permission;
    if (addr > r.bytes.size() || len > r.bytes.size() - addr) return util::Status::Permission;
    *out = r.bytes.data() + addr;
    *region = &r;
    return util::Status::Ok;
  }
  void accessed(void* region, uint32_t access) noexcept override {
    auto* r = static_cast<Region*>(region);
    if (access & kAccessRemoteRead) ++r->reads;
    if (access & kAccessRemoteWrite) ++r->writes;
  }
};

}  // namespace pollfab::transport::test
