#include "providers/dpdk/arp.hpp"

#include <arpa/inet.h>
#include <rte_arp.h>

#include <cstdio>
#include <cstring>

namespace pollfab::providers::dpdk {

Arp::Arp(const rte_ether_addr& mac, uint32_t ipv4, bool answer)
    : mac_(mac), ipv4_(ipv4), answer_(answer) {}

bool Arp::add_static(const std::string& entry) {
  char ip[32];
  unsigned m[6];
  if (sscanf(entry.c_str(), "%31s %2x:%2x:%2x:%2x:%2x:%2x", ip, &m[0], &m[1], &m[2], &m[3],
             &m[4], &m[5]) != 7)
    return false;
  in_addr a{};
  if (inet_pton(AF_INET, ip, &a) != 1) return false;
  std::array<uint8_t, 6> mac;
  for (int i = 0; i < 6; ++i) mac[static_cast<size_t>(i)] = static_cast<uint8_t>(m[i]);
  table_[ntohl(a.s_addr)] = mac;
  return true;
}

bool Arp::lookup(uint32_t ip, uint8_t* mac) const noexcept {
  auto it = table_.find(ip);
  if (it == table_.end()) return false;
  std::memcpy(mac, it->second.data(), 6);
  return true;
}

namespace {

void build(uint8_t* out, const rte_ether_addr& dst_eth, const rte_ether_addr& src_mac,
           uint32_t src_ip, uint16_t op, const rte_ether_addr& tha, uint32_t tpa) {
  auto* eth = reinterpret_cast<rte_ether_hdr*>(out);
  eth->dst_addr = dst_eth;
  eth->src_addr = src_mac;
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
  auto* arp = reinterpret_cast<rte_arp_hdr*>(out + 14);
  arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
  arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  arp->arp_hlen = RTE_ETHER_ADDR_LEN;
  arp->arp_plen = 4;
  arp->arp_opcode = rte_cpu_to_be_16(op);
  arp->arp_data.arp_sha = src_mac;
  arp->arp_data.arp_sip = rte_cpu_to_be_32(src_ip);
  arp->arp_data.arp_tha = tha;
  arp->arp_data.arp_tip = rte_cpu_to_be_32(tpa);
}

}  // namespace

void Arp::build_request(uint32_t ip, uint8_t* out) noexcept {
  rte_ether_addr bcast;
  std::memset(bcast.addr_bytes, 0xff, 6);
  rte_ether_addr zero{};
  build(out, bcast, mac_, ipv4_, RTE_ARP_OP_REQUEST, zero, ip);
  bool known = false;
  for (uint32_t p : pending_) known |= p == ip;
  if (!known) {
    pending_[next_pending_] = ip;
    next_pending_ = (next_pending_ + 1) % kPending;
  }
  ++stats_.requests_tx;
}

bool Arp::on_frame(const uint8_t* frame, uint32_t len, uint8_t* reply) noexcept {
  if (len < kFrameBytes) {
    ++stats_.malformed;
    return false;
  }
  const auto* arp = reinterpret_cast<const rte_arp_hdr*>(frame + 14);
  if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
      arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
      arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4) {
    ++stats_.malformed;
    return false;
  }
  const uint16_t op = rte_be_to_cpu_16(arp->arp_opcode);
  const uint32_t sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
  const uint32_t tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
  if (op == RTE_ARP_OP_REQUEST) {
    if (!answer_ || tip != ipv4_ || !ipv4_) return false;  // not for us: ignored
    build(reply, arp->arp_data.arp_sha, mac_, ipv4_, RTE_ARP_OP_REPLY, arp->arp_data.arp_sha, sip);
    ++stats_.replies_tx;
    return true;
  }
  if (op != RTE_ARP_OP_REPLY) {
    ++stats_.malformed;
    return false;
  }
  // Trusted only if addressed to us and answering an address we asked for.
  int asked = -1;
  for (int i = 0; i < kPending; ++i)
    if (pending_[i] == sip && sip) asked = i;
  if (asked < 0 || tip != ipv4_ || !rte_is_same_ether_addr(&arp->arp_data.arp_tha, &mac_) ||
      !rte_is_unicast_ether_addr(&arp->arp_data.arp_sha)) {
    ++stats_.untrusted;
    return false;
  }
  pending_[asked] = 0;
  std::array<uint8_t, 6> mac;
  std::memcpy(mac.data(), arp->arp_data.arp_sha.addr_bytes, 6);
  try {
    table_[sip] = mac;
  } catch (...) {
    return false;
  }
  ++stats_.learned;
  return false;
}

}  // namespace pollfab::providers::dpdk
