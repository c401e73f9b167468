// The tx path's IPv4 checksum (providers/dpdk/ipv4_len.hpp) equals a full computation
// (rte_ipv4_cksum) for every total_length a frame can have, over header templates with varied
// addresses, and a receiver's check of the header sums to zero.
#include <gtest/gtest.h>
#include <rte_ip.h>

#include <cstring>

#include "providers/dpdk/ipv4_len.hpp"

namespace {

using pollfab::providers::dpdk::ipv4_csum_with_len;

TEST(Ipv4Len, IncrementalChecksumMatchesAFullOneForEveryLength) {
  uint32_t seed = 12345;
  for (int t = 0; t < 64; ++t) {
    rte_ipv4_hdr tmpl{};
    tmpl.version_ihl = RTE_IPV4_VHL_DEF;
    tmpl.fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
    tmpl.time_to_live = 64;
    tmpl.next_proto_id = IPPROTO_UDP;
    seed = seed * 1103515245u + 12345u;
    tmpl.src_addr = seed;
    seed = seed * 1103515245u + 12345u;
    tmpl.dst_addr = t == 0 ? 0xffffffffu : t == 1 ? 0u : seed;
    tmpl.hdr_checksum = rte_ipv4_cksum(&tmpl);  // as resolve() stores it
    for (uint32_t len = 28; len <= 65535; ++len) {
      rte_ipv4_hdr h = tmpl;
      h.total_length = rte_cpu_to_be_16(static_cast<uint16_t>(len));
      h.hdr_checksum = ipv4_csum_with_len(h.hdr_checksum, h.total_length);
      rte_ipv4_hdr full = h;
      full.hdr_checksum = 0;
      const uint16_t want = rte_ipv4_cksum(&full);
      // Ones'-complement zero has two spellings; a receiver accepts either (the sum below).
      if (h.hdr_checksum != want) {
        ASSERT_EQ(uint16_t(h.hdr_checksum ^ want), 0xffff) << len;
      }
      ASSERT_EQ(rte_raw_cksum(&h, sizeof h), 0xffff) << "template " << t << " length " << len;
    }
  }
}

}  // namespace
