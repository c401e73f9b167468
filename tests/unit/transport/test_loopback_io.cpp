// LoopbackIo (transport/loopback_io.hpp): packets to the local host come back through rx_burst
// (before the wire's), with src = the local host, in order; wire-bound packets still go out;
// a full ring is back-pressure; zero-copy packets are given bytes of their own.
#include <gtest/gtest.h>

#include "transport/loopback_io.hpp"
#include "transport/testing/manual_clock.hpp"
#include "transport/testing/mem_link.hpp"

namespace pollfab::transport {
namespace {

using testing::ManualClock;
using testing::MemLink;
using testing::MemLinkConfig;

PacketBuf make(PacketIo& io, const Route& r, uint8_t fill, uint32_t len = 100) {
  PacketBuf p;
  EXPECT_EQ(io.alloc(&p, 1), 1);
  std::memset(p.data, fill, len);
  p.len = len;
  p.route = &r;
  return p;
}

TEST(LoopbackIo, LocalPacketsComeBackFirstAndInOrderOthersGoOut) {
  ManualClock clock;
  MemLinkConfig lc;
  lc.latency_ns = 0;
  MemLink link(lc, clock);
  LoopbackIo lo(link.a(), link.host(0));
  Route local, remote;
  lo.resolve(link.host(0), local);
  lo.resolve(link.host(1), remote);
  EXPECT_TRUE(local.loopback);
  EXPECT_FALSE(remote.loopback);
  PacketBuf out[3] = {make(lo, local, 1), make(lo, remote, 2), make(lo, local, 3)};
  ASSERT_EQ(lo.tx_burst(out, 3), 3);
  EXPECT_EQ(lo.looped_packets(), 2u);
  PacketBuf in[4];
  ASSERT_EQ(lo.rx_burst(in, 4), 2u);  // the remote one went to side b
  EXPECT_EQ(in[0].data[0], 1);
  EXPECT_EQ(in[1].data[0], 3);
  EXPECT_TRUE(in[0].src == link.host(0));
  lo.free(in, 2);
  PacketBuf far[1];
  ASSERT_EQ(link.b().rx_burst(far, 1), 1);
  EXPECT_EQ(far[0].data[0], 2);
  link.b().free(far, 1);
}

TEST(LoopbackIo, AFullRingIsBackPressureAndZeroCopyIsCopied) {
  ManualClock clock;
  MemLinkConfig lc;
  lc.zero_copy_min_bytes = 0;
  MemLink link(lc, clock);
  {
    LoopbackIo lo(link.a(), link.host(0));
    Route local;
    lo.resolve(link.host(0), local);
    for (uint32_t i = 0; i < LoopbackIo::kRingPackets; ++i) {
      PacketBuf p = make(lo, local, uint8_t(i));
      ASSERT_EQ(lo.tx_burst(&p, 1), 1);
    }
    PacketBuf extra = make(lo, local, 0xee);
    EXPECT_EQ(lo.tx_burst(&extra, 1), 0);  // the caller keeps it
    lo.free(&extra, 1);
    PacketBuf in[LoopbackIo::kRingPackets];
    ASSERT_EQ(lo.rx_burst(in, LoopbackIo::kRingPackets), LoopbackIo::kRingPackets);
    lo.free(in, LoopbackIo::kRingPackets);
    // Zero copy: the application's bytes are copied at once, the pin released.
    uint8_t app[300];
    std::memset(app, 0x5a, sizeof app);
    PacketBuf z = make(lo, local, 0x11, 72);
    const PinId pin = lo.pin_open();
    ASSERT_NE(pin, kNoPin);
    ASSERT_TRUE(lo.attach(z, app, sizeof app, pin));
    ASSERT_EQ(lo.tx_burst(&z, 1), 1);
    lo.pin_close(pin);
    EXPECT_FALSE(lo.pinned(pin));
    std::memset(app, 0, sizeof app);  // the application reuses its buffer
    PacketBuf got;
    ASSERT_EQ(lo.rx_burst(&got, 1), 1);
    ASSERT_EQ(got.len, 372u);
    EXPECT_EQ(got.ext_len, 0u);
    EXPECT_EQ(got.data[72], 0x5a);
    EXPECT_EQ(got.data[371], 0x5a);
    // One packet left in the ring when it goes: the destructor frees it.
    PacketBuf left = make(lo, local, 0x22);
    ASSERT_EQ(lo.tx_burst(&left, 1), 1);
    lo.free(&got, 1);
  }
  EXPECT_EQ(link.buffers_in_use(), 0u);
}

}  // namespace
}  // namespace pollfab::transport
