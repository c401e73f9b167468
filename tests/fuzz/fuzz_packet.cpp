// libFuzzer target: the pollfab packet decoder and the transport engine's receive path.
//
// Per input:
//  (a) wire::decode over the whole input and over each packet cut from it; a successful decode
//      must round-trip through wire::encode (every header byte equal) and agree
//      with wire::peek_dst_ep; wire::decode_continuation of each packet after one it could
//      continue must agree with decode() whenever it accepts.
//  (b) the input is cut into packets at every "PF\x01" (magic + version) after its first byte
//      (a single packet when there is none) and fed, one by one, as packets from a known peer
//      into an Engine that has posted receives (untagged, tagged, directed; 0 B .. 70 KB) and a
//      send of its own in flight, in reliable (RDM) mode and again in datagram mode; between
//      packets the engine progresses and the manual clock moves. Then the two engines of the
//      pair exchange packets (ACKs, retransmissions, probes) for a bounded simulated time, so
//      timers and peer-failure detection run on whatever state the input left. Both engines
//      serve RMA and atomics on one 4 KiB region (key 1, offsets; key 2: read-only), and b has
//      an RMA read of its own waiting for an answer, so requests and answers in the input reach
//      the target's checks and the initiator's answer matching. Seeds include RMA writes, reads,
//      atomics and delivery-complete sends.
//  Checks: no crash, no ASan/LSan/UBSan report, completions sane (length within the buffer,
//  a known context), and after destroying both engines every link buffer is back in the pool
//  except the packets still in flight (a PacketBuf the engine forgot to free would show here).
//
// Seeds: with PF_FUZZ_WRITE_SEEDS=<dir> the binary writes a corpus of real packets captured
// from a normal exchange between two engines configured exactly like the fuzzed ones (same
// epochs and endpoint ids), so seeds stay valid whatever the wire format becomes (e.g. once
// a checksum is added), then exits. tests/fuzz/run.sh does this before fuzzing.
// Build and run: tests/fuzz/run.sh (compiled with clang++-14 -fsanitize=fuzzer,address,undefined).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/transport/harness.hpp"
#include "transport/wire.hpp"

using namespace pollfab::transport;
using namespace pollfab::transport::test;

namespace {

constexpr uint32_t kEpochA = 0xA1A2A3A4u;  // the (simulated) remote peer
constexpr uint32_t kEpochB = 0xB1B2B3B4u;  // the fuzzed engine
constexpr uint32_t kMaxPacket = 1472;
constexpr uint32_t kWindow = 16;
constexpr uint64_t kHorizonNs = 40'000'000;  // simulated time after the input was fed
constexpr uint8_t kCut[3] = {0x50, 0x46, 0x01};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_packet: invariant violated: %s\n", what);
  std::abort();
}

MemLinkConfig link_config() {
  MemLinkConfig lc;
  lc.max_packet_bytes = kMaxPacket;
  lc.pool_buffers = 512;
  return lc;
}

EngineConfig engine_config(bool reliable, uint32_t epoch) {
  EngineConfig c;
  c.reliable = reliable;
  c.epoch = epoch;
  c.window_pkts = kWindow;
  c.tx_size = 16;
  c.rx_size = 32;
  c.inject_size = 256;
  c.max_unexpected_bytes = 256 << 10;
  c.max_peers = 64;
  c.ack_coalesce_pkts = 4;
  c.rto_initial_ns = 1'000'000;
  c.peer_timeout_ns = 20'000'000;  // short enough that kHorizonNs exercises failure detection
  return c;
}

// Memory regions by key (addr = offset): 1 read-write, 2 read-only, both 4 KiB.
struct FuzzMrs final : MrLookup {
  uint8_t mem[2][4096] = {};
  pollfab::util::Status resolve(uint64_t key, uint64_t addr, uint64_t len, uint32_t access,
                                uint8_t** out, void** region) noexcept override {
    if (key != 1 && key != 2) return pollfab::util::Status::Invalid;
    if (key == 2 && (access & kAccessRemoteWrite)) return pollfab::util::Status::Permission;
    if (addr > sizeof mem[0] || len > sizeof mem[0] - addr) return pollfab::util::Status::Permission;
    *out = mem[key - 1] + addr;
    *region = mem[key - 1];
    return pollfab::util::Status::Ok;
  }
  void accessed(void*, uint32_t) noexcept override {}
};

// Two engines (a: the peer the input pretends to come from; b: the fuzzed engine) with b
// holding posted receives, a send and an RMA read of its own.
struct Rig {
  static constexpr size_t kRecvSizes[] = {0, 16, 300, 1400, 5000, 70000, 64, 2000};
  std::vector<std::vector<uint8_t>> rbuf;  // outlive the engines (declared first)
  std::vector<uint8_t> sbuf;
  std::vector<uint8_t> rma_dst = std::vector<uint8_t>(2001, 0);
  FuzzMrs mrs_a, mrs_b;
  Pair t;
  bool reliable;

  explicit Rig(bool rel)
      : sbuf(3000, 0x9c),
        t(link_config(), engine_config(rel, kEpochA), engine_config(rel, kEpochB)),
        reliable(rel) {
    for (size_t i = 0; i < std::size(kRecvSizes); ++i) {
      rbuf.emplace_back(kRecvSizes[i] + 1, 0);
      RecvOp op = make_recv(rbuf[i].data(), kRecvSizes[i], reinterpret_cast<void*>(i + 1));
      if (i % 3 == 1) {  // tagged, a few bits ignored
        op.flags |= kOpTagged;
        op.tag = 0x1234;
        op.ignore = i == 7 ? ~0ull : 0xff;
      }
      if (i == 4) op.peer = t.b_to_a;  // directed
      if (i == 5 && op.iov_count == 1) {  // two iovecs
        op.iov[1] = {rbuf[i].data() + 40000, kRecvSizes[i] - 40000};
        op.iov[0].iov_len = 40000;
        op.iov_count = 2;
      }
      if (t.b->recv(op) != pollfab::util::Status::Ok) fail("posting a receive");
    }
    // b's own send to a (3 segments in RDM, one datagram in DGRAM): ACKs in the input matter.
    const size_t len = reliable ? sbuf.size() : 1000;
    SendOp op = make_send(t.b_to_a, sbuf.data(), len, reinterpret_cast<void*>(uintptr_t(100)));
    if (t.b->send(op) != pollfab::util::Status::Ok) fail("posting a send");
    t.a->set_mr_lookup(&mrs_a);
    t.b->set_mr_lookup(&mrs_b);
    if (reliable) {  // an operation waiting for an answer the input may bring
      RmaOp rd;
      rd.kind = RmaKind::Read;
      rd.peer = t.b_to_a;
      rd.iov[0] = {rma_dst.data(), 2000};
      rd.iov_count = 1;
      rd.key = 1;
      rd.addr = 100;
      rd.flags = kOpCompletion;
      rd.context = reinterpret_cast<void*>(uintptr_t(200));
      if (t.b->rma(rd) != pollfab::util::Status::Ok) fail("posting an RMA read");
    }
  }

  size_t recv_cap(void* ctx) const {
    const uintptr_t i = reinterpret_cast<uintptr_t>(ctx);
    if (i < 1 || i > std::size(kRecvSizes)) fail("receive completion with an unknown context");
    return kRecvSizes[i - 1];
  }
};

std::vector<std::pair<const uint8_t*, size_t>> cut(const uint8_t* data, size_t size) {
  std::vector<std::pair<const uint8_t*, size_t>> out;
  size_t start = 0;
  for (size_t i = 1; i + sizeof kCut <= size; ++i) {
    if (std::memcmp(data + i, kCut, sizeof kCut) == 0) {
      out.emplace_back(data + start, i - start);
      start = i;
    }
  }
  out.emplace_back(data + start, size - start);
  return out;
}

void check_decode(const uint8_t* p, size_t len) {
  wire::Header h;
  const wire::DecodeError e = wire::decode(p, len, h);
  if (!wire::to_string(e)) fail("to_string");
  uint16_t dst = 0;
  const bool peek = wire::peek_dst_ep(p, len, dst);
  if (e != wire::DecodeError::None) return;
  if (!peek || dst != h.dst_ep) fail("peek_dst_ep disagrees with decode");
  if (size_t(h.payload_len) + wire::kHeaderBytes > len) fail("payload beyond the input");
  uint8_t enc[wire::kHeaderBytes];
  wire::encode(h, enc);
  for (size_t i = 0; i < wire::kHeaderBytes; ++i)
    if (enc[i] != p[i]) fail("decode/encode round trip changed a header byte");
}

// wire::decode_continuation against decode(), used as the receiver uses it (Engine::on_packet):
// the last packet decode() took as a segment its message continues after stays `prev` while h
// follows each packet taken in by comparison; whatever it accepts must be exactly what decode()
// gives.
void check_continuations(const std::vector<std::pair<const uint8_t*, size_t>>& pkts) {
  const uint8_t* prev = nullptr;
  wire::Header h;
  for (const auto& [p, len] : pkts) {
    if (prev) {
      wire::Header c = h, d;
      if (wire::decode_continuation(p, len, prev, c)) {
        if (wire::decode(p, len, d) != wire::DecodeError::None)
          fail("decode_continuation accepted what decode rejects");
        uint8_t ec[wire::kHeaderBytes], ed[wire::kHeaderBytes];
        wire::encode(c, ec);
        wire::encode(d, ed);
        if (std::memcmp(ec, ed, sizeof ec) != 0 || c.checksum != d.checksum)
          fail("decode_continuation and decode disagree");
        h = c;
        continue;
      }
    }
    prev = nullptr;
    if (wire::decode(p, len, h) == wire::DecodeError::None &&
        !(h.flags & (wire::kLast | wire::kBundle)) &&
        (h.type == wire::Type::Data || wire::is_rma(h.type)))
      prev = p;
  }
}

// Feeds one packet's bytes to engine b as if sent by a (truncated to the link's MTU).
bool feed(Pair& t, const uint8_t* p, size_t len) {
  PacketBuf pkt;
  if (t.link.b().alloc(&pkt, 1) != 1) return false;  // pool exhausted: stop feeding
  len = std::min<size_t>(len, pkt.cap);
  if (len) std::memcpy(pkt.data, p, len);
  // Most inputs get a valid CRC-32C, so mutations reach the code behind the checksum check;
  // those with bit 0 of checksum byte 65 set keep their bytes and exercise the check itself.
  if (len >= wire::kHeaderBytes && !(pkt.data[65] & 1)) {
    const size_t plen = wire::kHeaderBytes + pollfab::util::load_be16(pkt.data + 6);
    if (plen <= len) wire::seal(pkt.data, plen);
  }
  pkt.len = uint32_t(len);
  pkt.src = t.link.host(0);
  t.b->on_packet(pkt);
  return true;
}

// Lets the two engines talk until nothing is due before the horizon (bounded).
void settle(Pair& t) {
  const uint64_t end = t.clock.now_ns() + kHorizonNs;
  for (int i = 0; i < 2000; ++i) {
    if (t.step() != 0) continue;
    uint64_t next = std::min({t.link.next_delivery_ns(), t.a->next_deadline_ns(), t.b->next_deadline_ns()});
    if (next == UINT64_MAX || next > end) {
      // Liveness checks run in progress(); give them the rest of the horizon once.
      if (t.clock.now_ns() < end) {
        t.clock.set(end);
        t.step();
      }
      return;
    }
    t.clock.set(std::max(next, t.clock.now_ns() + 1));
  }
}

void run_engine(bool reliable, const std::vector<std::pair<const uint8_t*, size_t>>& pkts) {
  Rig rig(reliable);
  Pair& t = rig.t;
  for (const auto& [p, len] : pkts) {
    if (!feed(t, p, len)) break;
    t.b->progress();
    t.clock.advance(3'000);
  }
  settle(t);
  for (const Engine* e : {t.a.get(), t.b.get()}) {
    if (e->held_packets() > kWindow * e->peer_count()) fail("more held packets than windows");
    if (e->sends_in_use() > e->config().tx_size + Engine::kAnswerReserve) fail("send pool overdrawn");
    if (e->recvs_in_use() > e->config().rx_size) fail("receive pool overdrawn");
  }
  for (const Completion& c : t.sink_b.comps) {
    if (!(c.flags & kCompRecv)) continue;
    const size_t cap = rig.recv_cap(c.context);
    if (c.len > cap) fail("receive completion longer than its buffer");
    if (c.status == pollfab::util::Status::Ok && c.olen) fail("Ok receive with overflow");
  }
  for (size_t i = 0; i < rig.rbuf.size(); ++i)
    if (rig.rbuf[i].back() != 0) fail("write beyond a receive buffer");
  if (rig.rma_dst.back() != 0) fail("an RMA read wrote beyond its buffer");
  for (uint8_t v : rig.mrs_b.mem[1])
    if (v != 0) fail("a write reached a read-only region");
  if (std::getenv("PF_FUZZ_VERBOSE")) {  // what an input did (debugging seeds and finds)
    const EngineStats& s = t.b->stats();
    std::fprintf(stderr,
                 "%s: %zu pkts rx=%lu protocol=%lu stale=%lu unknown=%lu dead=%lu dup=%lu "
                 "ooo=%lu window=%lu no_recv=%lu acks_rx=%lu resets=%lu peers=%u comps=%zu "
                 "completed_recvs=%zu\n",
                 reliable ? "rdm" : "dgram", pkts.size(), s.rx_pkts, s.drop_protocol,
                 s.drop_stale_epoch, s.drop_unknown_peer, s.drop_dead_peer, s.dup_pkts,
                 s.ooo_pkts, s.drop_window, s.drop_no_recv, s.acks_rx, s.peer_resets,
                 t.b->peer_count(), t.sink_b.comps.size(),
                 size_t(std::count_if(t.sink_b.comps.begin(), t.sink_b.comps.end(),
                                      [](const Completion& c) {
                                        return (c.flags & kCompRecv) &&
                                               c.status == pollfab::util::Status::Ok;
                                      })));
  }
  t.a.reset();
  t.b.reset();
  if (t.link.buffers_in_use() != t.link.in_flight()) fail("packet buffer leaked by an engine");
}

// ---- seed corpus: packets b receives in a normal exchange ----

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) { std::perror(path.c_str()); std::exit(1); }
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

std::vector<std::vector<uint8_t>> capture(bool reliable) {
  Rig rig(reliable);
  Pair& t = rig.t;
  // Payload bytes in 0x80..0xbf never contain the "PF\x01" cut mark.
  std::vector<uint8_t> msg(4000);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = uint8_t(0x80 | ((i * 7) & 0x3f));
  struct M { size_t len; uint32_t flags; uint64_t tag; };
  const std::vector<M> ms = reliable
      ? std::vector<M>{{10, 0, 0}, {0, 0, 0}, {300, kOpTagged, 0x1234}, {3000, kOpCqData, 0},
                       {1400, kOpTagged | kOpCqData, 0x12ab}, {20, kOpInject, 0}}
      : std::vector<M>{{10, 0, 0}, {0, 0, 0}, {300, kOpTagged, 0x1234}, {1400, kOpCqData, 0}};
  for (const M& m : ms) {
    SendOp op = make_send(t.a_to_b, msg.data(), m.len, nullptr, kOpCompletion | m.flags);
    op.tag = m.tag;
    op.cq_data = 0x0a0b0c0d;
    if (t.a->send(op) != pollfab::util::Status::Ok) fail("seed send");
  }
  if (reliable) {  // RMA and atomic requests to b, and a delivery-complete send
    auto rma = [&](RmaKind kind, size_t len, uint64_t key) {
      RmaOp op;
      op.kind = kind;
      op.peer = t.a_to_b;
      op.iov[0] = {msg.data(), len};
      op.iov_count = 1;
      op.key = key;
      op.addr = 64;
      op.flags = kOpCompletion | (kind == RmaKind::Write ? kOpCqData : 0);
      op.cq_data = 0x0e0f;
      if (kind >= RmaKind::Atomic) {
        op.atomic_op = kind == RmaKind::CompareAtomic ? AtomicOp::Cswap : AtomicOp::Sum;
        op.datatype = AtomicType::Uint32;
        op.count = uint32_t(len / 4);
        op.compare[0] = {msg.data() + 100, len};
        op.compare_count = kind == RmaKind::CompareAtomic ? 1 : 0;
        op.result[0] = {msg.data() + 200, len};
        op.result_count = kind == RmaKind::Atomic ? 0 : 1;
      }
      if (t.a->rma(op) != pollfab::util::Status::Ok) fail("seed rma");
    };
    rma(RmaKind::Write, 3000, 1);
    rma(RmaKind::Read, 500, 1);
    rma(RmaKind::Write, 8, 2);  // refused: read-only
    rma(RmaKind::Atomic, 16, 1);
    rma(RmaKind::FetchAtomic, 8, 1);
    rma(RmaKind::CompareAtomic, 4, 1);
    SendOp dc = make_send(t.a_to_b, msg.data(), 100, nullptr, kOpCompletion | kOpDeliveryComplete);
    if (t.a->send(dc) != pollfab::util::Status::Ok) fail("seed delivery-complete send");
  }
  std::vector<std::vector<uint8_t>> got;
  PacketBuf bufs[32];
  for (int round = 0; round < 200; ++round) {
    uint16_t n;
    while ((n = t.link.a().rx_burst(bufs, 32)) > 0)
      for (uint16_t i = 0; i < n; ++i) t.a->on_packet(bufs[i]);
    while ((n = t.link.b().rx_burst(bufs, 32)) > 0)
      for (uint16_t i = 0; i < n; ++i) {
        got.emplace_back(bufs[i].data, bufs[i].data + bufs[i].len);
        t.b->on_packet(bufs[i]);
      }
    t.a->progress();
    t.b->progress();
    t.clock.advance(5'000);
  }
  return got;
}

void write_seeds(const char* dir) {
  ::mkdir(dir, 0755);
  int count = 0;
  for (bool reliable : {true, false}) {
    const std::string pre = std::string(dir) + (reliable ? "/rdm_" : "/dgram_");
    const auto pkts = capture(reliable);
    std::vector<uint8_t> all;
    for (size_t i = 0; i < pkts.size(); ++i) {
      write_file(pre + "pkt" + std::to_string(i), pkts[i]);
      all.insert(all.end(), pkts[i].begin(), pkts[i].end());
      ++count;
      if (i + 1 < pkts.size()) {  // consecutive pairs
        std::vector<uint8_t> two = pkts[i];
        two.insert(two.end(), pkts[i + 1].begin(), pkts[i + 1].end());
        write_file(pre + "pair" + std::to_string(i), two);
        ++count;
      }
    }
    write_file(pre + "stream", all);
    ++count;
  }
  std::fprintf(stderr, "fuzz_packet: wrote %d seeds to %s\n", count, dir);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (const char* dir = std::getenv("PF_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_decode(data, size);
  auto pkts = cut(data, size);
  if (pkts.size() > 64) pkts.resize(64);  // keep one execution short
  for (const auto& [p, len] : pkts) check_decode(p, len);
  check_continuations(pkts);
  run_engine(true, pkts);
  run_engine(false, pkts);
  return 0;
}
