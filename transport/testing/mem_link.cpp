#include "transport/testing/mem_link.hpp"

#include <algorithm>
#include <cstring>

namespace pollfab::transport::testing {

namespace {
FaultIoConfig side_faults(const MemLinkConfig& cfg, int from) {
  FaultIoConfig f;
  f.faults = from == 0 ? cfg.fault_ab : cfg.fault_ba;
  f.schedule = from == 0 ? cfg.schedule_ab : cfg.schedule_ba;
  f.reorder_unit_ns = cfg.reorder_delay_ns;
  f.max_held = cfg.pool_buffers;  // every buffer may be held: a fault never reorders "less"
  return f;
}
}  // namespace

MemLink::MemLink(const MemLinkConfig& cfg, const Clock& clock)
    : cfg_(cfg),
      clock_(clock),
      fault_a_(a_, clock, side_faults(cfg, 0)),
      fault_b_(b_, clock, side_faults(cfg, 1)) {
  pool_total_ = cfg_.pool_buffers;
  storage_.reserve(pool_total_);
  free_.reserve(pool_total_);
  for (uint32_t i = 0; i < pool_total_; ++i) {
    storage_.push_back(std::make_unique<uint8_t[]>(cfg_.max_packet_bytes));
    free_.push_back(storage_.back().get());
  }
}

MemLink::~MemLink() = default;

bool MemLink::get_buf(PacketBuf& out) noexcept {
  if (free_.empty()) return false;
  out = PacketBuf{};
  out.data = free_.back();
  out.handle = out.data;
  out.cap = cfg_.max_packet_bytes;
  free_.pop_back();
  return true;
}

void MemLink::put_buf(const PacketBuf& p) noexcept {
  if (p.ext_len) pins_.unref(p.pin);
  free_.push_back(static_cast<uint8_t*>(p.handle));
}

void MemLink::materialise(PacketBuf& pkt) noexcept {
  if (!pkt.ext_len) return;
  std::memcpy(pkt.data + (pkt.len - pkt.ext_len), pkt.ext, pkt.ext_len);
  pins_.unref(pkt.pin);
  pkt.ext = nullptr;
  pkt.ext_len = 0;
  pkt.pin = kNoPin;
}

void MemLink::transmit(int from, PacketBuf& pkt) noexcept {
  const int to = 1 - from;
  pkt.src = from == 0 ? a_.host() : b_.host();
  pkt.route = nullptr;
  uint64_t now = clock_.now_ns();
  uint64_t at = now + cfg_.latency_ns;
  if (cfg_.rate_mbps) {
    uint64_t start = std::max(now, busy_until_[from]);
    if (cfg_.queue_limit_ns && start - now > cfg_.queue_limit_ns) {
      ++queue_drops_;
      put_buf(pkt);
      return;
    }
    busy_until_[from] = start + (uint64_t(pkt.len) + 42) * 8000 / cfg_.rate_mbps;  // + Eth/IP/UDP
    at = busy_until_[from] + cfg_.latency_ns;
  }
  q_[to].push({at, seq_++, pkt});
}

bool MemLink::references(const void* p, size_t n) const noexcept {
  if (fault_a_.references(p, n) || fault_b_.references(p, n)) return true;
  const auto* lo = static_cast<const uint8_t*>(p);
  for (const Queue& q : q_) {
    Queue copy = q;  // priority_queue has no iteration; tests only
    for (; !copy.empty(); copy.pop()) {
      const PacketBuf& b = copy.top().pkt;
      if (b.ext_len && b.ext < lo + n && lo < b.ext + b.ext_len) return true;
    }
  }
  return false;
}

uint64_t MemLink::next_delivery_ns() const noexcept {
  uint64_t t = std::min(fault_a_.next_release_ns(), fault_b_.next_release_ns());
  for (const auto& q : q_)
    if (!q.empty()) t = std::min(t, q.top().at);
  return t;
}

uint32_t MemIo::max_packet_bytes() const noexcept { return link_.cfg_.max_packet_bytes; }

uint16_t MemIo::alloc(PacketBuf* out, uint16_t n) noexcept {
  uint16_t i = 0;
  while (i < n && link_.get_buf(out[i])) ++i;
  return i;
}

uint16_t MemIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  for (uint16_t i = 0; i < n; ++i) link_.transmit(side_, pkts[i]);
  return n;
}

void MemIo::free(PacketBuf* pkts, uint16_t n) noexcept {
  for (uint16_t i = 0; i < n; ++i) link_.put_buf(pkts[i]);
}

void MemIo::resolve(const HostAddr& host, Route& route) noexcept {
  std::memcpy(route.bytes, host.bytes, sizeof host.bytes);
}

uint16_t MemIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  link_.fault(1 - side_).release_due();  // what the other side held back and is now due
  auto& q = link_.q_[side_];
  uint64_t now = link_.clock_.now_ns();
  uint16_t i = 0;
  while (i < n && !q.empty() && q.top().at <= now) {
    out[i] = q.top().pkt;
    link_.materialise(out[i]);
    ++i;
    q.pop();
  }
  return i;
}

uint32_t MemIo::zero_copy_min_bytes() const noexcept { return link_.cfg_.zero_copy_min_bytes; }

PinId MemIo::pin_open() noexcept { return link_.pins_.open(); }

bool MemIo::attach(PacketBuf& pkt, const uint8_t* data, uint32_t len, PinId pin) noexcept {
  if (!link_.pins_.is_open(pin) || uint64_t(pkt.len) + len > link_.cfg_.max_packet_bytes)
    return false;
  pkt.ext = data;
  pkt.ext_len = len;
  pkt.pin = pin;
  pkt.len += len;
  link_.pins_.ref(pin);
  ++link_.attached_;
  return true;
}

bool MemIo::pinned(PinId pin) const noexcept { return link_.pins_.pinned(pin); }

void MemIo::pin_close(PinId pin) noexcept { link_.pins_.close(pin); }

bool MemIo::clone(const PacketBuf& pkt, PacketBuf& out) noexcept {
  if (!link_.get_buf(out)) return false;
  std::memcpy(out.data, pkt.data, pkt.len - pkt.ext_len);
  out.len = pkt.len;
  out.route = pkt.route;
  out.ext = pkt.ext;
  out.ext_len = pkt.ext_len;
  out.pin = pkt.pin;
  if (out.ext_len) link_.pins_.ref(out.pin);
  return true;
}

HostAddr MemIo::host() const noexcept {
  HostAddr h;
  h.bytes[0] = static_cast<uint8_t>(0xa0 + side_);
  return h;
}

}  // namespace pollfab::transport::testing
