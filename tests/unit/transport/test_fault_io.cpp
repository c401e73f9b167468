// The fault layer (transport/fault_io.hpp) over a recording PacketIo: what each fault does to
// the packets the wrapped layer sees, that nothing leaks, and that attached (zero-copy)
// application memory is never written. Also the DelayLine it holds packets in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "transport/delay_line.hpp"
#include "transport/fault_io.hpp"
#include "transport/testing/manual_clock.hpp"
#include "transport/testing/mem_link.hpp"

namespace pollfab::transport {
namespace {

// A PacketIo that records what is sent (bytes, attached memory read at send) and counts buffers.
class RecordingIo final : public PacketIo {
 public:
  static constexpr uint32_t kBytes = 256;
  uint32_t max_packet_bytes() const noexcept override { return kBytes; }
  uint16_t alloc(PacketBuf* out, uint16_t n) noexcept override {
    uint16_t i = 0;
    for (; i < n && live < limit; ++i, ++live) {
      auto* b = new uint8_t[kBytes]();
      out[i] = PacketBuf{};
      out[i].data = b;
      out[i].handle = b;
      out[i].cap = kBytes;
    }
    return i;
  }
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override {
    uint16_t k = std::min<uint16_t>(n, accept);
    for (uint16_t i = 0; i < k; ++i) {
      std::vector<uint8_t> bytes(pkts[i].data, pkts[i].data + pkts[i].len - pkts[i].ext_len);
      bytes.insert(bytes.end(), pkts[i].ext, pkts[i].ext + pkts[i].ext_len);
      sent.push_back(bytes);
      routes.push_back(pkts[i].route ? pkts[i].route->bytes[0] : 0);
      release(pkts[i]);
    }
    return k;
  }
  void free(PacketBuf* pkts, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) release(pkts[i]);
  }
  void resolve(const HostAddr&, Route&) noexcept override {}
  uint16_t rx_burst(PacketBuf*, uint16_t) noexcept override { return 0; }
  size_t counters(util::Counter* out, size_t max) const noexcept override {
    if (max) out[0] = {"inner_tx", sent.size()};
    return max ? 1 : 0;
  }
  bool attach(PacketBuf& pkt, const uint8_t* data, uint32_t len, PinId pin) noexcept override {
    pkt.ext = data;
    pkt.ext_len = len;
    pkt.pin = pin;
    pkt.len += len;
    ++refs;
    return true;
  }

  std::vector<std::vector<uint8_t>> sent;
  std::vector<uint8_t> routes;
  int live = 0, refs = 0, limit = 1000;
  uint16_t accept = 64;

 private:
  void release(const PacketBuf& p) {
    if (p.ext_len) --refs;
    delete[] static_cast<uint8_t*>(p.handle);
    --live;
  }
};

PacketBuf make(RecordingIo& io, uint8_t fill, uint32_t len, const Route* r = nullptr) {
  PacketBuf p;
  EXPECT_EQ(io.alloc(&p, 1), 1);
  std::memset(p.data, fill, len);
  p.len = len;
  p.route = r;
  return p;
}

FaultIoConfig only(double drop, double dup, double reorder, double corrupt) {
  FaultIoConfig c;
  c.faults = {drop, dup, reorder, corrupt, 42};
  c.reorder_unit_ns = 1000;
  return c;
}

TEST(FaultIo, DropsDuplicatesAndFreesEverything) {
  testing::ManualClock clk;
  RecordingIo io;
  {
    FaultIo f(io, clk, only(0.3, 0.3, 0.0, 0.0));
    for (int i = 0; i < 200; ++i) {
      PacketBuf p = make(io, uint8_t(i), 40);
      ASSERT_EQ(f.tx_burst(&p, 1), 1);  // always consumed
    }
    const FaultStats& s = f.fault_stats();
    EXPECT_EQ(s.seen, 200u);
    EXPECT_GT(s.dropped, 20u);
    EXPECT_GT(s.duplicated, 20u);
    EXPECT_EQ(io.sent.size(), 200 - s.dropped + s.duplicated);
    // A duplicate is the same bytes, right behind the original.
    size_t dups = 0;
    for (size_t i = 1; i < io.sent.size(); ++i) dups += io.sent[i] == io.sent[i - 1];
    EXPECT_EQ(dups, s.duplicated);
    util::Counter c[8];
    size_t n = f.counters(c, 8);
    ASSERT_EQ(n, 6u);
    EXPECT_STREQ(c[0].name, "inner_tx");  // the wrapped layer's first
    EXPECT_STREQ(c[1].name, "fault_dropped");
    EXPECT_EQ(c[1].value, s.dropped);
    EXPECT_STREQ(c[2].name, "fault_duplicated");
    EXPECT_EQ(c[2].value, s.duplicated);
  }
  EXPECT_EQ(io.live, 0);
}

TEST(FaultIo, ReorderHoldsPacketsUntilDueWithTheirRoute) {
  testing::ManualClock clk;
  RecordingIo io;
  Route r;
  r.bytes[0] = 0x77;
  FaultIo f(io, clk, only(0, 0, 1.0, 0));
  {
    Route gone;  // the route a packet was sent with may go away while it is held
    gone.bytes[0] = 0x77;
    PacketBuf p = make(io, 1, 30, &gone);
    f.tx_burst(&p, 1);
    gone.bytes[0] = 0;
  }
  EXPECT_TRUE(io.sent.empty());
  EXPECT_EQ(f.held(), 1u);
  const uint64_t due = f.next_release_ns();
  EXPECT_GE(due, clk.now_ns() + 1000);
  EXPECT_LE(due, clk.now_ns() + 4000);
  clk.set(due - 1);
  f.service();
  EXPECT_TRUE(io.sent.empty());
  clk.set(due);
  PacketBuf none[1];
  f.rx_burst(none, 1);  // receive also releases what is due
  ASSERT_EQ(io.sent.size(), 1u);
  EXPECT_EQ(io.routes[0], 0x77);  // the copy of the route taken when it was held
  EXPECT_EQ(f.held(), 0u);
  EXPECT_EQ(io.live, 0);
}

TEST(FaultIo, AHeldPacketKeepsNoReferenceToApplicationMemory) {
  testing::ManualClock clk;
  RecordingIo io;
  std::vector<uint8_t> app(100, 0x11);
  FaultIo f(io, clk, only(0, 0, 1.0, 0));
  PacketBuf p = make(io, 0x22, 10);
  ASSERT_TRUE(io.attach(p, app.data(), 100, 1));
  f.tx_burst(&p, 1);
  EXPECT_EQ(f.held(), 1u);
  EXPECT_EQ(io.refs, 0);  // copied at hold time: the endpoint may close, the buffer go
  EXPECT_FALSE(f.references(app.data(), app.size()));
  std::fill(app.begin(), app.end(), 0xee);
  clk.set(f.next_release_ns());
  f.service();
  ASSERT_EQ(io.sent.size(), 1u);
  EXPECT_EQ(io.sent[0].size(), 110u);
  EXPECT_EQ(io.sent[0][10], 0x11);  // the bytes as they were when the packet was sent
  EXPECT_EQ(io.live, 0);
}

TEST(FaultIo, CorruptFlipsOneBitAndNeverWritesAttachedMemory) {
  testing::ManualClock clk;
  RecordingIo io;
  std::vector<uint8_t> app(200, 0xaa);
  const std::vector<uint8_t> orig = app;
  FaultIo f(io, clk, only(0, 0, 0, 1.0));
  for (int i = 0; i < 50; ++i) {
    PacketBuf p = make(io, 0x55, 20);
    ASSERT_TRUE(io.attach(p, app.data(), 200, 1));
    f.tx_burst(&p, 1);
  }
  ASSERT_EQ(io.sent.size(), 50u);
  EXPECT_EQ(app, orig);  // application memory untouched
  for (const auto& b : io.sent) {
    ASSERT_EQ(b.size(), 220u);
    int bits = 0;
    for (size_t i = 0; i < b.size(); ++i)
      bits += __builtin_popcount(b[i] ^ (i < 20 ? 0x55 : 0xaa));
    EXPECT_EQ(bits, 1);
  }
  EXPECT_EQ(f.fault_stats().corrupted, 50u);
  EXPECT_EQ(io.refs, 0);  // every reference to the application's memory dropped
  EXPECT_EQ(io.live, 0);
}

TEST(FaultIo, ScheduleBlackoutDelayAndShortTxBursts) {
  testing::ManualClock clk;
  RecordingIo io;
  FaultIoConfig c;
  const uint64_t t0 = clk.now_ns();
  c.schedule = {FaultWindow{t0, t0 + 100, true}, FaultWindow{t0 + 100, t0 + 200, false, 5000}};
  FaultIo f(io, clk, c);
  PacketBuf p = make(io, 1, 10);
  f.tx_burst(&p, 1);
  EXPECT_EQ(f.window_stats().blackout_dropped, 1u);
  clk.set(t0 + 150);
  p = make(io, 2, 10);
  f.tx_burst(&p, 1);
  EXPECT_EQ(f.window_stats().delayed, 1u);
  EXPECT_EQ(f.next_release_ns(), t0 + 150 + 5000);
  clk.set(t0 + 300);  // after the windows: sent at once, but the wrapped layer takes none
  io.accept = 0;
  p = make(io, 3, 10);
  f.tx_burst(&p, 1);
  util::Counter cs[8];
  size_t n = f.counters(cs, 8);
  EXPECT_STREQ(cs[n - 1].name, "fault_tx_lost");
  EXPECT_EQ(cs[n - 1].value, 1u);
  io.accept = 64;
  clk.set(t0 + 150 + 5000);
  f.service();
  EXPECT_EQ(io.sent.size(), 1u);
  EXPECT_EQ(io.live, 0);
}

// fault.period_ms: the probabilities apply only in periods of the clock with an odd index; in
// the others every packet passes and the injector draws nothing (its sequence resumes where it
// stopped). The schedule is not gated.
TEST(FaultIo, PeriodAlternatesCleanAndFaultyPeriods) {
  testing::ManualClock clk;
  RecordingIo io;
  FaultIoConfig c = only(1.0, 0.0, 0.0, 0.0);  // every packet of a faulty period is dropped
  c.period_ns = 10'000;
  {
    FaultIo f(io, clk, c);
    const uint64_t at[] = {2'020'000, 2'029'999, 2'030'000, 2'039'999, 2'040'000, 2'055'000};
    const bool passes[] = {true, true, false, false, true, false};
    for (size_t i = 0; i < std::size(at); ++i) {
      clk.set(at[i]);
      PacketBuf p[2] = {make(io, uint8_t(i), 20), make(io, uint8_t(i), 20)};
      ASSERT_EQ(f.tx_burst(p, 2), 2);
      EXPECT_EQ(io.sent.size(), 2 * size_t(std::count(passes, passes + i + 1, true)))
          << "a burst at " << at[i] << " ns " << (passes[i] ? "passes" : "is dropped");
    }
    EXPECT_EQ(f.clean_passed(), 6u);
    EXPECT_EQ(f.fault_stats().seen, 6u) << "only faulty periods' packets reach the injector";
    EXPECT_EQ(f.fault_stats().dropped, 6u);
  }
  EXPECT_EQ(io.live, 0);
  // A blackout window still drops in a clean period.
  RecordingIo io2;
  c.schedule = {FaultWindow{0, 10'000'000, true}};
  FaultIo g(io2, clk, c);
  clk.set(2'060'000);  // period 206: clean
  PacketBuf p = make(io2, 7, 20);
  g.tx_burst(&p, 1);
  EXPECT_EQ(io2.sent.size(), 0u);
  EXPECT_EQ(g.window_stats().blackout_dropped, 1u);
}

// The fault layer's delay line: due items leave earliest first, the rest stay.
// Drop alone draws the gap to the next drop once per drop: the configured rate, replayable from
// the seed, and a schedule's other probabilities still decide per packet.
TEST(FaultInjector, DropOnlyKeepsItsRateAndIsReplayable) {
  FaultConfig c;
  c.drop = 0.01;
  c.seed = 7;
  FaultInjector a(c), b(c);
  uint64_t dropped = 0;
  bool same = true;
  for (int i = 0; i < 200'000; ++i) {
    const auto x = a.next();
    same &= x == b.next();
    dropped += x == FaultInjector::Action::Drop;
  }
  EXPECT_TRUE(same);
  EXPECT_EQ(a.stats().seen, 200'000u);
  EXPECT_EQ(a.stats().dropped, dropped);
  EXPECT_GT(dropped, 1700u);  // 2000 expected; 4.5 standard deviations either side
  EXPECT_LT(dropped, 2300u);
  FaultConfig all_dup = c;
  all_dup.drop = 0;
  all_dup.dup = 1;
  EXPECT_EQ(a.next(all_dup), FaultInjector::Action::Duplicate);
  FaultConfig always = c;
  always.drop = 1;
  FaultInjector d(always);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d.next(), FaultInjector::Action::Drop);
}

TEST(DelayLine, ReleasesDueItemsInOrderAndRefusesWhenFull) {
  DelayLine<int> d(3);
  const uint64_t u = 20'000;
  EXPECT_TRUE(d.push(1, 2 * u));   // due 2u
  EXPECT_TRUE(d.push(2, 1 * u));   // due 1u
  EXPECT_TRUE(d.push(3, 4 * u));   // due 4u
  EXPECT_FALSE(d.push(4, 1 * u));  // full: the caller sends it in order instead
  std::vector<int> out;
  d.release_due(u, [&](int v) { out.push_back(v); });
  EXPECT_EQ(out, std::vector<int>{2});
  d.release_due(2 * u, [&](int v) { out.push_back(v); });
  EXPECT_EQ(out, (std::vector<int>{2, 1}));
  EXPECT_TRUE(d.push(5, 3 * u));  // due 3u
  d.drain([&](int v) { out.push_back(v); });
  EXPECT_EQ(out, (std::vector<int>{2, 1, 3, 5}));
  EXPECT_TRUE(d.empty());
}

}  // namespace
}  // namespace pollfab::transport

namespace pollfab::transport {
namespace {

using testing::ManualClock;
using testing::MemLink;
using testing::MemLinkConfig;

// transport.checksum = auto seals packets unless the link checks end to end: a fault layer that
// may flip bits is such a link no more, whatever it wraps.
struct CheckedLink final : PacketIoFilter {
  using PacketIoFilter::PacketIoFilter;
  bool end_to_end_checked() const noexcept override { return true; }
};

TEST(FaultIoIntegrity, CorruptionMakesACheckedLinkUnchecked) {
  ManualClock clock;
  MemLink link(MemLinkConfig{}, clock);
  CheckedLink checked(link.a());
  EXPECT_FALSE(link.a().end_to_end_checked());  // the in-memory test link claims nothing
  FaultIoConfig drops;
  drops.faults = {0.1, 0.0, 0.0, 0.0, 1};
  EXPECT_TRUE(FaultIo(checked, clock, drops).end_to_end_checked()) << "drops alone corrupt nothing";
  FaultIoConfig flips;
  flips.faults = {0.0, 0.0, 0.0, 0.01, 1};
  EXPECT_FALSE(FaultIo(checked, clock, flips).end_to_end_checked());
  FaultIoConfig windowed;
  FaultWindow w;
  w.override_faults = true;
  w.faults.corrupt = 0.5;
  windowed.schedule.push_back(w);
  EXPECT_FALSE(FaultIo(checked, clock, windowed).end_to_end_checked());
}

}  // namespace
}  // namespace pollfab::transport
