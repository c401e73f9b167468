// The IPv4 header checksum of a frame whose header is a per-peer template (providers/dpdk/io.hpp)
// and whose only changing field is total_length: the template carries the checksum computed
// with total_length 0, and each frame adds its length to it (RFC 1624 incremental update,
// HC' = ~(~HC + m'), with m = 0). Byte order does not matter to ones'-complement sums as long as
// every word is taken as stored, which both arguments are.
#pragma once
#include <cstdint>

namespace pollfab::providers::dpdk {

// tmpl_csum: the header checksum as stored, computed with total_length 0; total_length_be: the
// frame's total_length field as stored (big-endian). Returns the checksum field to store.
constexpr uint16_t ipv4_csum_with_len(uint16_t tmpl_csum, uint16_t total_length_be) noexcept {
  uint32_t sum = uint32_t(uint16_t(~tmpl_csum)) + total_length_be;
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace pollfab::providers::dpdk
