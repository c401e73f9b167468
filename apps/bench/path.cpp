// pollfab-bench-path: Google Benchmark microbenchmarks of the transport's per-message path, two
// engines joined by an in-process ring (no device, no copies beyond the transport's own), the
// real clock (the calibrated TSC where there is one).
//   BM_Message/<bytes>   one message end to end, in windows of 32: post (Engine::send), segment
//                        and seal (emit_segment, CRC-32C), tx burst, rx demux and verify
//                        (on_packet), match (Matcher), place (copy into the receive), receive
//                        completion (the sink writes a CQ entry into a ring), re-post of the
//                        receive, ACK (coalesced, send_ack / on_ack), send completion. Items/s
//                        in the report are messages/s on one core doing both sides.
//   BM_Message/<bytes>/0 the same without the CRC (transport.checksum = off)
//   BM_WireEncodeSeal, BM_WireDecodeVerify: the 72-byte header alone, with its CRC
//   BM_IdleProgress/<peers>: a progress round with nothing to do, <peers> peers known
// scripts/bench-path.sh runs BM_MessageCounted (a fixed 96,000 messages) under callgrind and prints instructions per message for
// each step (the functions above, inclusive). A benchmark, not a test.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transport/clock.hpp"
#include "transport/engine.hpp"
#include "transport/matcher.hpp"
#include "transport/packet_io.hpp"
#include "transport/wire.hpp"

namespace {

using namespace pollfab::transport;

constexpr uint32_t kMtu = 1472;
constexpr uint32_t kBufs = 4096;
constexpr uint16_t kWindow = 32;

// Both sides' buffers come from one pool; tx_burst hands packets to the other side's rx ring.
class Ring {
 public:
  Ring() : storage_(new uint8_t[size_t(kBufs) * kMtu]) {
    for (uint32_t i = 0; i < kBufs; ++i) free_.push_back(storage_.get() + size_t(i) * kMtu);
  }
  std::unique_ptr<uint8_t[]> storage_;
  std::vector<uint8_t*> free_;
  std::vector<PacketBuf> q_[2];  // q_[i]: packets waiting for side i
  size_t head_[2] = {0, 0};
};

class RingIo final : public PacketIo {
 public:
  RingIo(Ring& r, int side) : r_(r), side_(side) {
    for (auto& q : r_.q_) q.reserve(kBufs);
  }
  uint32_t max_packet_bytes() const noexcept override { return kMtu; }
  uint16_t alloc(PacketBuf* out, uint16_t n) noexcept override {
    uint16_t k = 0;
    for (; k < n && !r_.free_.empty(); ++k) {
      out[k] = PacketBuf{};
      out[k].data = r_.free_.back();
      out[k].cap = kMtu;
      r_.free_.pop_back();
    }
    return k;
  }
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    auto& q = r_.q_[1 - side_];
    for (uint16_t i = 0; i < n; ++i) {
      q.push_back(pkts[i]);
      q.back().src.bytes[0] = uint8_t(side_ + 1);
    }
    return n;
  }
  void free(PacketBuf* pkts, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) r_.free_.push_back(pkts[i].data);
  }
  void resolve(const HostAddr&, Route&) noexcept override {}
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override {
    auto& q = r_.q_[side_];
    size_t& h = r_.head_[side_];
    uint16_t k = 0;
    for (; k < n && h < q.size(); ++k) out[k] = q[h++];
    if (h == q.size()) {
      q.clear();
      h = 0;
    }
    return k;
  }

 private:
  Ring& r_;
  int side_;
};

// A completion sink that writes what fi_cq_read would return into a ring (the CQ write).
struct RingSink final : CompletionSink {
  struct Entry {
    void* context;
    uint64_t flags, len, data, tag;
    void* buf;
  };
  Entry ring[8192];
  uint32_t head = 0, tail = 0;
  void on_completion(const Completion& c) noexcept override {
    ring[tail++ & 8191] = Entry{c.context, c.flags, c.len, c.cq_data, c.tag, c.buf};
  }
  // The bursts, as the provider takes them: an entry each, no Completion built.
  void on_sends_completed(const SendDone* s, uint32_t n) noexcept override {
    for (uint32_t i = 0; i < n; ++i)
      if (s[i].cq_entry) ring[tail++ & 8191] = Entry{s[i].context, s[i].flags, 0, 0, 0, nullptr};
  }
  void on_recvs_completed(const RecvDone* r, uint32_t n) noexcept override {
    for (uint32_t i = 0; i < n; ++i)
      if (r[i].cq_entry)
        ring[tail++ & 8191] = Entry{r[i].context, r[i].flags, r[i].len, r[i].cq_data, r[i].tag,
                                    r[i].buf};
  }
};

struct Path {
  explicit Path(bool checksum, uint64_t peer_timeout_ns = 0) {
    clock.use_tsc(pollfab::util::tsc_calibration());
    EngineConfig c;
    c.checksum = checksum;
    c.peer_timeout_ns = peer_timeout_ns;
    c.ep_id = 1;
    a = std::make_unique<Engine>(c, io_a, clock, sink_a);
    c.ep_id = 2;
    b = std::make_unique<Engine>(c, io_b, clock, sink_b);
    HostAddr ha, hb;
    ha.bytes[0] = 1;
    hb.bytes[0] = 2;
    to_b = a->peer(PeerAddr{hb, 2});
  }
  void rx(RingIo& io, Engine& e) {
    PacketBuf bufs[32];
    for (uint16_t n; (n = io.rx_burst(bufs, 32)) > 0;)
      for (uint16_t i = 0; i < n; ++i) e.on_packet(bufs[i]);
  }
  SystemClock clock;
  Ring ring;
  RingIo io_a{ring, 0}, io_b{ring, 1};
  RingSink sink_a, sink_b;
  std::unique_ptr<Engine> a, b;
  PeerId to_b = kNoPeer;
};

void BM_Message(benchmark::State& st) {
  const size_t len = size_t(st.range(0));
  Path p(st.range(1) != 0);
  std::vector<uint8_t> src(len, 0x5a);
  std::vector<uint8_t> dst(len * kWindow);
  // Posts as the provider does: the operation written into the engine's entry or slot.
  auto post_recv = [&](size_t slot) {
    RecvEntry* e = p.b->recv_entry();
    if (!e) return pollfab::util::Status::NoResource;
    RecvOp& r = e->op;
    r.peer = kAnyPeer;
    r.iov[0] = {dst.data() + slot * len, len};
    r.iov_count = 1;
    r.tag = r.ignore = r.min_multi_recv = 0;
    r.flags = kOpCompletion;
    r.context = reinterpret_cast<void*>(slot);
    return p.b->post_recv(e);
  };
  for (size_t s = 0; s < kWindow; ++s) post_recv(s);
  uint64_t msgs = 0;
  for (auto _ : st) {
    for (uint16_t i = 0; i < kWindow; ++i) {
      SendOp* op = p.a->send_slot();
      if (!op) {
        st.SkipWithError("no send slot");
        break;
      }
      op->peer = p.to_b;
      op->iov[0] = {src.data(), len};
      op->iov_count = 1;
      op->tag = op->cq_data = 0;
      op->flags = kOpCompletion;
      op->context = nullptr;
      if (p.a->post_send(op) != pollfab::util::Status::Ok) st.SkipWithError("send refused");
    }
    p.a->progress();           // the batched tx burst
    p.rx(p.io_b, *p.b);        // demux, verify, match, place, receive completions
    while (p.sink_b.head != p.sink_b.tail)  // the application reads its CQ and re-posts
      post_recv(reinterpret_cast<size_t>(p.sink_b.ring[p.sink_b.head++ & 8191].context));
    p.b->ack_all_now();
    p.b->progress();           // the ACK
    p.rx(p.io_a, *p.a);        // ACK processing, send completions
    p.sink_a.head = p.sink_a.tail;
    p.a->progress();
    msgs += kWindow;
  }
  st.SetItemsProcessed(int64_t(msgs));
  st.SetBytesProcessed(int64_t(msgs * len));
}
BENCHMARK(BM_Message)->Args({64, 1})->Args({64, 0})->Args({1024, 1})->Args({4096, 1})->Args({4096, 0});
// A fixed count (3000 windows = 96,000 messages) for instruction counting under callgrind.
BENCHMARK(BM_Message)->Name("BM_MessageCounted")->Args({64, 1})->Args({4096, 1})->Iterations(3000);

// One progress round of an engine that has nothing to do: an application's fi_cq_read finding
// no completion, and the part of every round that is not its packets. <peers> peers known to
// the engine, the first of them after a message exchanged with it, the rest never used (an MPI
// job's other ranks); the liveness check on, as configured by default.
void BM_IdleProgress(benchmark::State& st) {
  Path p(false, EngineConfig{}.peer_timeout_ns);
  const auto peers = static_cast<uint32_t>(st.range(0));
  for (uint32_t i = 1; i < peers; ++i) {
    HostAddr h;
    h.bytes[0] = 3;
    h.bytes[1] = uint8_t(i >> 8);
    h.bytes[2] = uint8_t(i);
    p.a->peer(PeerAddr{h, 2});
  }
  uint8_t buf[64] = {};
  RecvEntry* e = p.b->recv_entry();
  e->op.peer = kAnyPeer;
  e->op.iov[0] = {buf, sizeof buf};
  e->op.iov_count = 1;
  e->op.flags = kOpCompletion;
  p.b->post_recv(e);
  SendOp* op = p.a->send_slot();
  op->peer = p.to_b;
  op->iov[0] = {buf, sizeof buf};
  op->iov_count = 1;
  op->flags = kOpCompletion;
  p.a->post_send(op);
  p.a->progress();
  p.rx(p.io_b, *p.b);
  p.b->ack_all_now();
  p.b->progress();
  p.rx(p.io_a, *p.a);
  p.a->progress();
  for (auto _ : st) p.a->progress();
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_IdleProgress)->Arg(1)->Arg(16)->Arg(256);

// The header of a one-segment 64-byte message.
wire::Header data_header_64() {
  wire::Header h;
  h.type = wire::Type::Data;
  h.payload_len = 64;
  h.msg_len = 64;
  return h;
}

void BM_WireEncodeSeal(benchmark::State& st) {
  uint8_t pkt[wire::kHeaderBytes + 64] = {};
  wire::Header h = data_header_64();
  for (auto _ : st) {
    ++h.psn;
    wire::encode(h, pkt);
    wire::seal(pkt, sizeof pkt, nullptr, 0);
    benchmark::DoNotOptimize(pkt);
  }
}
BENCHMARK(BM_WireEncodeSeal);

void BM_WireDecodeVerify(benchmark::State& st) {
  uint8_t pkt[wire::kHeaderBytes + 64] = {};
  wire::encode(data_header_64(), pkt);
  wire::seal(pkt, sizeof pkt, nullptr, 0);
  for (auto _ : st) {
    wire::Header out;
    bool ok = wire::verify(pkt, sizeof pkt) && wire::decode(pkt, sizeof pkt, out) == wire::DecodeError::None;
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_WireDecodeVerify);

}  // namespace

BENCHMARK_MAIN();
