#include "providers/dpdk/io.hpp"

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "dpdk_glue/eal.hpp"
#include "lib/util/bits.hpp"
#include "lib/util/log.hpp"
#include "providers/dpdk/ipv4_len.hpp"
#include "transport/pin_table.hpp"

namespace pollfab::providers::dpdk {

using transport::PacketBuf;

// Zero-copy bookkeeping. Heap-allocated and preallocated: free lists are fixed arrays, so
// attach and the free callback never allocate. Deleted with the DpdkIo unless an mbuf still
// references application memory then (a real device's tx ring): it is left allocated, so the
// late free callback touches valid memory.
struct DpdkIo::ZeroCopy {
  static constexpr uint32_t kPins = 4096;
  struct Slot {
    rte_mbuf_ext_shared_info shinfo;
    ZeroCopy* owner;
    transport::PinId pin;
  };
  explicit ZeroCopy(uint32_t slots) : pins(kPins), slot(slots), free_slot(slots) {
    for (uint32_t i = 0; i < slots; ++i) {
      slot[i].owner = this;
      free_slot[i] = i;
    }
    n_free_slots = slots;
  }
  // The ext mbuf's shared info reached refcnt 0: the memory is no longer referenced.
  static void on_free(void* /*addr*/, void* opaque) noexcept {
    auto* s = static_cast<Slot*>(opaque);
    ZeroCopy* z = s->owner;
    z->pins.unref(s->pin);
    z->free_slot[z->n_free_slots++] = static_cast<uint32_t>(s - z->slot.data());
    --z->outstanding;
  }
  transport::PinTable pins;
  std::vector<Slot> slot;
  std::vector<uint32_t> free_slot;
  uint32_t n_free_slots = 0;
  uint64_t outstanding = 0;  // attachments not yet freed
};

DpdkIo::DpdkIo(std::shared_ptr<dpdk_glue::Port> port, uint32_t ipv4, uint16_t udp_port,
               std::string pin_cpus, uint32_t zero_copy_min, bool arp_answer)
    : port_(std::move(port)), mtu_(port_->mtu()), ipv4_(ipv4), udp_port_(udp_port),
      mac_(port_->mac()), pin_cpus_(std::move(pin_cpus)), arp_(mac_, ipv4, arp_answer),
      memif_(port_->shared_memory()),
      // Mapped in by Port::open if its link was up then; one that comes up after (a server's,
      // when its client connects) is mapped in by the port's link watch.
      link_was_up_(memif_ && port_->mapped_at_start()) {
  if (zero_copy_min && port_->ext_pool()) {
    zc_ = new ZeroCopy(port_->ext_pool()->size);
    zc_min_ = zero_copy_min;
  }
}

DpdkIo::~DpdkIo() {
  if (zc_ && zc_->outstanding) {
    rte_eth_tx_done_cleanup(port_->id(), 0, 0);
    if (zc_->outstanding) return;  // left allocated on purpose (see ZeroCopy)
  }
  delete zc_;
}

transport::PinId DpdkIo::pin_open() noexcept { return zc_ ? zc_->pins.open() : transport::kNoPin; }

bool DpdkIo::attach(PacketBuf& pkt, const uint8_t* data, uint32_t len,
                    transport::PinId pin) noexcept {
  if (!zc_ || !zc_->pins.is_open(pin) || uint64_t(pkt.len) + len > max_packet_bytes() ||
      len > UINT16_MAX || !zc_->n_free_slots)
    return false;
  rte_mbuf* e = rte_pktmbuf_alloc(port_->ext_pool());
  if (!e) return false;
  ZeroCopy::Slot& s = zc_->slot[zc_->free_slot[--zc_->n_free_slots]];
  s.pin = pin;
  s.shinfo.free_cb = &ZeroCopy::on_free;
  s.shinfo.fcb_opaque = &s;
  rte_mbuf_ext_refcnt_set(&s.shinfo, 1);
  // A vdev reads the memory by its virtual address (no DMA): IOVA = VA.
  void* va = const_cast<uint8_t*>(data);
  rte_pktmbuf_attach_extbuf(e, va, static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(va)),
                            static_cast<uint16_t>(len), &s.shinfo);
  e->data_len = static_cast<uint16_t>(len);
  e->pkt_len = len;
  auto* head = static_cast<rte_mbuf*>(pkt.handle);
  head->next = e;
  head->nb_segs = 2;
  zc_->pins.ref(pin);
  ++zc_->outstanding;
  pkt.ext = data;
  pkt.ext_len = len;
  pkt.pin = pin;
  pkt.len += len;
  return true;
}

bool DpdkIo::pinned(transport::PinId pin) const noexcept { return zc_ && zc_->pins.pinned(pin); }

void DpdkIo::pin_close(transport::PinId pin) noexcept {
  if (zc_ && pin != transport::kNoPin) zc_->pins.close(pin);
}

bool DpdkIo::clone(const PacketBuf& pkt, PacketBuf& out) noexcept {
  for (rte_mbuf* seg = static_cast<rte_mbuf*>(pkt.handle); seg; seg = seg->next)
    rte_mbuf_refcnt_update(seg, 1);
  out = pkt;
  return true;
}

uint16_t DpdkIo::alloc(PacketBuf* out, uint16_t n) noexcept {
  dpdk_glue::ensure_thread_registered(pin_cpus_.c_str());
  rte_mbuf* m[64];
  if (n > 64) n = 64;
  while (n && rte_pktmbuf_alloc_bulk(port_->pool(), m, n) != 0) n /= 2;
  for (uint16_t i = 0; i < n; ++i) {
    uint8_t* base = rte_pktmbuf_mtod(m[i], uint8_t*);
    out[i] = PacketBuf{};
    out[i].data = base + kL2L4Bytes;
    out[i].cap = std::min<uint32_t>(max_packet_bytes(), rte_pktmbuf_tailroom(m[i]) - kL2L4Bytes);
    out[i].handle = m[i];
  }
  return n;
}

void DpdkIo::free(PacketBuf* pkts, uint16_t n) noexcept {
  if (n == 1) {
    rte_pktmbuf_free(static_cast<rte_mbuf*>(pkts[0].handle));
    return;
  }
  rte_mbuf* m[64];
  while (n) {
    const uint16_t k = n < 64 ? n : 64;
    for (uint16_t i = 0; i < k; ++i) m[i] = static_cast<rte_mbuf*>(pkts[i].handle);
    rte_pktmbuf_free_bulk(m, k);  // one mempool put for the lot
    pkts += k;
    n = static_cast<uint16_t>(n - k);
  }
}

void DpdkIo::resolve(const transport::HostAddr& host, transport::Route& route) noexcept {
  // Template of the 42 lower-layer bytes; lengths and the IPv4 checksum are filled per frame.
  uint8_t* p = route.bytes;
  std::memset(p, 0, sizeof route.bytes);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(p);
  std::memcpy(&eth->dst_addr, host.bytes, 6);
  eth->src_addr = mac_;
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(p + 14);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->src_addr = rte_cpu_to_be_32(ipv4_);
  ip->dst_addr = rte_cpu_to_be_32(util::load_be32(host.bytes + 8));
  auto* udp = reinterpret_cast<rte_udp_hdr*>(p + 34);
  udp->src_port = rte_cpu_to_be_16(udp_port_);
  udp->dst_port = rte_cpu_to_be_16(util::load_be16(host.bytes + 6));
  ip->hdr_checksum = rte_ipv4_cksum(ip);  // with total_length 0: tx adds each frame's length
}

uint16_t DpdkIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  rte_mbuf* frames[64];
  if (n > 64) n = 64;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = static_cast<rte_mbuf*>(pkts[i].handle);
    uint8_t* base = rte_pktmbuf_mtod(m, uint8_t*);
    std::memcpy(base, pkts[i].route->bytes, kL2L4Bytes);
    auto* ip = reinterpret_cast<rte_ipv4_hdr*>(base + 14);
    ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(28 + pkts[i].len));
    ip->hdr_checksum = ipv4_csum_with_len(ip->hdr_checksum, ip->total_length);
    reinterpret_cast<rte_udp_hdr*>(base + 34)->dgram_len =
        rte_cpu_to_be_16(static_cast<uint16_t>(8 + pkts[i].len));
    m->data_len = static_cast<uint16_t>(kL2L4Bytes + pkts[i].len - pkts[i].ext_len);
    m->pkt_len = kL2L4Bytes + pkts[i].len;  // + the attached segment (zero copy), if any
    frames[i] = m;
  }
  uint16_t sent = port_->tx_burst(frames, n);
  marks_.after_tx();
  stats_.tx_frames += sent;
  return sent;
}

void DpdkIo::service() noexcept {
  // Devices that keep sent mbufs in their tx ring until a later burst would hold pins (and the
  // sends' completions) while the queue is idle: ask for them back.
  if (zc_ && zc_->outstanding) rte_eth_tx_done_cleanup(port_->id(), 0, 0);
  if (memif_ && --link_check_ == 0) [[unlikely]] check_memif_link();
}

// memif maps each connection's regions in off the data path, on the interrupt thread, when
// the port's link watch sees the link come up (dpdk_glue/memif_link_watch.hpp): a server's
// first connection is watched from its port's start, and a server's link this check sees go
// down is watched again for its next connection (one that drops and comes back between two
// checks, kLinkCheckRounds progress rounds apart, is missed: its pages fault in on use).
void DpdkIo::check_memif_link() noexcept {
  link_check_ = kLinkCheckRounds;
  const bool up = port_->link_up();
  if (!up && link_was_up_) {
    const bool watched = port_->watch_link();
    PF_LOG("dpdk", Info, Domain, "{}: link down{}", port_->name(),
           watched ? "; watching for its next connection" : "");
  }
  link_was_up_ = up;
}

template <class F>
bool DpdkIo::send_frame(uint32_t len, F&& fill) noexcept {
  dpdk_glue::ensure_thread_registered(pin_cpus_.c_str());
  rte_mbuf* m = rte_pktmbuf_alloc(port_->pool());
  if (!m) return false;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len)));
  if (!p) {
    rte_pktmbuf_free(m);
    return false;
  }
  fill(p);
  if (port_->tx_burst(&m, 1) != 1) {
    rte_pktmbuf_free(m);
    return false;
  }
  ++stats_.tx_frames;
  return true;
}

bool DpdkIo::arp_request(uint32_t ip) noexcept {
  return send_frame(Arp::kFrameBytes, [&](uint8_t* p) { arp_.build_request(ip, p); });
}

void DpdkIo::on_arp(const uint8_t* frame, uint32_t len) noexcept {
  uint8_t reply[Arp::kFrameBytes];
  if (arp_.on_frame(frame, len, reply))
    send_frame(Arp::kFrameBytes, [&](uint8_t* p) { std::memcpy(p, reply, sizeof reply); });
}

size_t DpdkIo::counters(util::Counter* out, size_t max) const noexcept {
  const IoStats& s = stats_;
  const util::Counter c[] = {
      {"rx_frames", s.rx_frames},         {"tx_frames", s.tx_frames},
      {"rx_not_ipv4", s.rx_not_ipv4},     {"rx_not_for_us", s.rx_not_for_us},
      {"rx_bad_ip", s.rx_bad_ip},         {"rx_not_udp", s.rx_not_udp},
      {"rx_bad_udp", s.rx_bad_udp},       {"rx_fragment", s.rx_fragment},
      {"rx_multiseg", s.rx_multiseg},
      {"arp_requests_tx", arp_.stats().requests_tx}, {"arp_replies_tx", arp_.stats().replies_tx},
      {"arp_learned", arp_.stats().learned},     {"arp_untrusted", arp_.stats().untrusted},
      {"arp_malformed", arp_.stats().malformed},
  };
  size_t n = std::min(max, std::size(c));
  std::copy(c, c + n, out);
  return n;
}

uint16_t DpdkIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  rte_mbuf* m[64];
  if (n > 64) n = 64;
  uint16_t got = port_->rx_burst(m, n);
  marks_.after_rx(got);
  uint16_t k = 0;
  for (uint16_t i = 0; i < got; ++i) {
    rte_mbuf* f = m[i];
    ++stats_.rx_frames;
    const uint8_t* p = rte_pktmbuf_mtod(f, const uint8_t*);
    const uint32_t len = f->data_len;
    auto drop = [&](uint64_t& counter) {
      ++counter;
      rte_pktmbuf_free(f);
    };
    if (f->nb_segs != 1) { drop(stats_.rx_multiseg); continue; }
    if (len < kL2L4Bytes) { drop(stats_.rx_not_ipv4); continue; }
    auto* eth = reinterpret_cast<const rte_ether_hdr*>(p);
    if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
      on_arp(p, len);
      rte_pktmbuf_free(f);
      continue;
    }
    if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) { drop(stats_.rx_not_ipv4); continue; }
    if (!rte_is_same_ether_addr(&eth->dst_addr, &mac_) && !rte_is_broadcast_ether_addr(&eth->dst_addr)) {
      drop(stats_.rx_not_for_us);
      continue;
    }
    auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(p + 14);
    uint16_t ip_len = rte_be_to_cpu_16(ip->total_length);
    if (ip->version_ihl != RTE_IPV4_VHL_DEF || ip_len < 28 || ip_len > len - 14) {
      drop(stats_.rx_bad_ip);
      continue;
    }
    if (rte_be_to_cpu_16(ip->fragment_offset) & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
      drop(stats_.rx_fragment);
      continue;
    }
    if (ip->next_proto_id != IPPROTO_UDP) { drop(stats_.rx_not_udp); continue; }
    if (rte_be_to_cpu_32(ip->dst_addr) != ipv4_) { drop(stats_.rx_not_for_us); continue; }
    auto* udp = reinterpret_cast<const rte_udp_hdr*>(p + 34);
    uint16_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
    if (rte_be_to_cpu_16(udp->dst_port) != udp_port_) { drop(stats_.rx_not_for_us); continue; }
    if (udp_len < 8 || udp_len != ip_len - 20) { drop(stats_.rx_bad_udp); continue; }
    PacketBuf& b = out[k++];
    b = PacketBuf{};
    b.data = const_cast<uint8_t*>(p) + kL2L4Bytes;
    b.len = udp_len - 8u;
    b.handle = f;
    // MAC, UDP port (big-endian, as in names), IPv4 address: composed in registers, one store.
    uint32_t mac_lo, ip_be;
    uint16_t mac_hi, port_be;
    std::memcpy(&mac_lo, &eth->src_addr, 4);
    std::memcpy(&mac_hi, reinterpret_cast<const uint8_t*>(&eth->src_addr) + 4, 2);
    std::memcpy(&port_be, &udp->src_port, 2);
    std::memcpy(&ip_be, &ip->src_addr, 4);
    transport::store_host(b.src, mac_lo | uint64_t(mac_hi) << 32 | uint64_t(port_be) << 48, ip_be);
  }
  return k;
}

}  // namespace pollfab::providers::dpdk
