// ARP (RFC 826) on a dpdk port: the port answers requests for its own IPv4 address, resolves a
// neighbour's MAC by broadcasting a request, and keeps the neighbour table (static entries from
// the config's dpdk.neighbours, and answers to requests this port made; an unsolicited reply or
// one from an address we did not ask for is dropped and counted, never trusted).
// Frame building and parsing only: DpdkIo sends and receives the frames.
// Thread-safety: none (DpdkIo's owner serialises). Learning allocates (control path).
#pragma once
#include <rte_ether.h>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace pollfab::providers::dpdk {

struct ArpStats {
  uint64_t requests_tx = 0;    // requests we broadcast
  uint64_t replies_tx = 0;     // requests for our address we answered
  uint64_t learned = 0;        // answers to our requests entered in the table
  uint64_t untrusted = 0;      // replies we did not ask for (dropped)
  uint64_t malformed = 0;      // ARP frames that are not Ethernet/IPv4 requests or replies
};

class Arp {
 public:
  static constexpr uint32_t kFrameBytes = 14 + 28;  // Ethernet + ARP for IPv4
  // mac/ipv4: the port's (ipv4 host order). answer: reply to requests for ipv4.
  Arp(const rte_ether_addr& mac, uint32_t ipv4, bool answer);

  // Adds a static entry "IPv4 MAC" (the config's syntax). False if malformed.
  bool add_static(const std::string& entry);
  // The MAC of ip (host order) if known.
  bool lookup(uint32_t ip, uint8_t* mac) const noexcept;
  // Writes a broadcast request for ip into out (kFrameBytes bytes) and remembers that we asked.
  void build_request(uint32_t ip, uint8_t* out) noexcept;
  // One received ARP frame (after the Ethernet type said ARP). Returns true if a reply must be
  // sent: it is written into reply (kFrameBytes bytes).
  bool on_frame(const uint8_t* frame, uint32_t len, uint8_t* reply) noexcept;
  const ArpStats& stats() const noexcept { return stats_; }

 private:
  static constexpr int kPending = 16;  // addresses asked for and not yet answered
  rte_ether_addr mac_;
  uint32_t ipv4_;
  bool answer_;
  std::unordered_map<uint32_t, std::array<uint8_t, 6>> table_;
  uint32_t pending_[kPending] = {};
  int next_pending_ = 0;
  ArpStats stats_;
};

}  // namespace pollfab::providers::dpdk
