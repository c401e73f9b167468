// ARP on a dpdk port (providers/dpdk/arp.hpp): answers requests for the port's own address
// only (and only when told to), learns a neighbour only from a reply to a request it made,
// addressed to it, and counts the rest (untrusted, malformed); the static table.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_arp.h>

#include <cstring>

#include "providers/dpdk/arp.hpp"

namespace pollfab::providers::dpdk {
namespace {

constexpr uint32_t kMine = 0xc6120001;   // 198.18.0.1
constexpr uint32_t kPeer = 0xc6120002;   // 198.18.0.2
constexpr uint32_t kOther = 0xc6120003;  // 198.18.0.3

rte_ether_addr mac(uint8_t last) {
  rte_ether_addr m{};
  const uint8_t b[6] = {0x02, 0x50, 0x46, 0, 0, last};
  std::memcpy(m.addr_bytes, b, 6);
  return m;
}

// An ARP frame: op, sender (MAC, IP), target (MAC, IP), to dst.
void frame(uint8_t* out, uint16_t op, const rte_ether_addr& sha, uint32_t sip,
           const rte_ether_addr& tha, uint32_t tip) {
  std::memset(out, 0, Arp::kFrameBytes);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(out);
  eth->dst_addr = tha;
  eth->src_addr = sha;
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
  auto* a = reinterpret_cast<rte_arp_hdr*>(out + 14);
  a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
  a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  a->arp_hlen = 6;
  a->arp_plen = 4;
  a->arp_opcode = rte_cpu_to_be_16(op);
  a->arp_data.arp_sha = sha;
  a->arp_data.arp_sip = rte_cpu_to_be_32(sip);
  a->arp_data.arp_tha = tha;
  a->arp_data.arp_tip = rte_cpu_to_be_32(tip);
}

TEST(Arp, AnswersRequestsForItsOwnAddressOnly) {
  Arp arp(mac(0x0a), kMine, true);
  uint8_t in[Arp::kFrameBytes], out[Arp::kFrameBytes];
  frame(in, RTE_ARP_OP_REQUEST, mac(0x0b), kPeer, rte_ether_addr{}, kMine);
  ASSERT_TRUE(arp.on_frame(in, sizeof in, out));
  auto* a = reinterpret_cast<const rte_arp_hdr*>(out + 14);
  EXPECT_EQ(rte_be_to_cpu_16(a->arp_opcode), RTE_ARP_OP_REPLY);
  rte_ether_addr mine = mac(0x0a), peer = mac(0x0b);
  EXPECT_TRUE(rte_is_same_ether_addr(&a->arp_data.arp_sha, &mine));
  EXPECT_EQ(rte_be_to_cpu_32(a->arp_data.arp_sip), kMine);
  EXPECT_TRUE(rte_is_same_ether_addr(&a->arp_data.arp_tha, &peer));
  EXPECT_EQ(rte_be_to_cpu_32(a->arp_data.arp_tip), kPeer);
  EXPECT_EQ(arp.stats().replies_tx, 1u);
  // Another address: not ours to answer.
  frame(in, RTE_ARP_OP_REQUEST, mac(0x0b), kPeer, rte_ether_addr{}, kOther);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  // A port told not to answer (a second port sharing the address) stays silent.
  Arp quiet(mac(0x0c), kMine, false);
  frame(in, RTE_ARP_OP_REQUEST, mac(0x0b), kPeer, rte_ether_addr{}, kMine);
  EXPECT_FALSE(quiet.on_frame(in, sizeof in, out));
}

TEST(Arp, TrustsOnlyRepliesToItsOwnRequests) {
  Arp arp(mac(0x0a), kMine, true);
  uint8_t in[Arp::kFrameBytes], out[Arp::kFrameBytes], req[Arp::kFrameBytes];
  uint8_t m[6];
  // Unsolicited reply: not learnt.
  frame(in, RTE_ARP_OP_REPLY, mac(0x0b), kPeer, mac(0x0a), kMine);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  EXPECT_FALSE(arp.lookup(kPeer, m));
  EXPECT_EQ(arp.stats().untrusted, 1u);
  // We ask for kPeer; a reply for kOther is still untrusted, one for kPeer is learnt.
  arp.build_request(kPeer, req);
  EXPECT_EQ(arp.stats().requests_tx, 1u);
  auto* r = reinterpret_cast<const rte_arp_hdr*>(req + 14);
  EXPECT_EQ(rte_be_to_cpu_16(r->arp_opcode), RTE_ARP_OP_REQUEST);
  EXPECT_EQ(rte_be_to_cpu_32(r->arp_data.arp_tip), kPeer);
  EXPECT_TRUE(rte_is_broadcast_ether_addr(&reinterpret_cast<const rte_ether_hdr*>(req)->dst_addr));
  frame(in, RTE_ARP_OP_REPLY, mac(0x0d), kOther, mac(0x0a), kMine);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  EXPECT_FALSE(arp.lookup(kOther, m));
  // A reply for kPeer addressed to another MAC: untrusted.
  frame(in, RTE_ARP_OP_REPLY, mac(0x0b), kPeer, mac(0x0e), kMine);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  EXPECT_FALSE(arp.lookup(kPeer, m));
  frame(in, RTE_ARP_OP_REPLY, mac(0x0b), kPeer, mac(0x0a), kMine);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  ASSERT_TRUE(arp.lookup(kPeer, m));
  EXPECT_EQ(m[5], 0x0b);
  EXPECT_EQ(arp.stats().learned, 1u);
  EXPECT_EQ(arp.stats().untrusted, 3u);
  // The request is answered: a second reply (e.g. spoofed) is not trusted.
  frame(in, RTE_ARP_OP_REPLY, mac(0x0f), kPeer, mac(0x0a), kMine);
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  ASSERT_TRUE(arp.lookup(kPeer, m));
  EXPECT_EQ(m[5], 0x0b);
}

TEST(Arp, MalformedFramesAndStaticEntries) {
  Arp arp(mac(0x0a), kMine, true);
  uint8_t in[Arp::kFrameBytes], out[Arp::kFrameBytes];
  EXPECT_FALSE(arp.on_frame(in, 20, out));  // short
  frame(in, RTE_ARP_OP_REQUEST, mac(0x0b), kPeer, rte_ether_addr{}, kMine);
  reinterpret_cast<rte_arp_hdr*>(in + 14)->arp_plen = 16;  // not IPv4
  EXPECT_FALSE(arp.on_frame(in, sizeof in, out));
  EXPECT_EQ(arp.stats().malformed, 2u);
  EXPECT_TRUE(arp.add_static("198.18.0.77 02:00:00:00:00:77"));
  EXPECT_FALSE(arp.add_static("198.18.0.78"));
  EXPECT_FALSE(arp.add_static("nope 02:00:00:00:00:77"));
  uint8_t m[6];
  ASSERT_TRUE(arp.lookup(0xc612004d, m));
  EXPECT_EQ(m[5], 0x77);
}

}  // namespace
}  // namespace pollfab::providers::dpdk
