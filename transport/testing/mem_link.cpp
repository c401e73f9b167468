#include "transport/testing/mem_link.hpp"

#include <algorithm>
#include <cstring>

namespace pollfab::transport::testing {

MemLink::MemLink(const MemLinkConfig& cfg, const Clock& clock)
    : cfg_(cfg), clock_(clock), fault_{FaultInjector(cfg.fault_ab), FaultInjector(cfg.fault_ba)} {
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

void MemLink::put_buf(const PacketBuf& p) noexcept { free_.push_back(static_cast<uint8_t*>(p.handle)); }

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
  FaultInjector& f = fault_[from];
  const FaultConfig* probs = &f.config();
  const auto& schedule = from == 0 ? cfg_.schedule_ab : cfg_.schedule_ba;
  if (!schedule.empty()) {
    WindowStats& ws = wstats_[from];
    bool blackout = false, overridden = false;
    uint64_t extra = 0;
    for (const FaultWindow& w : schedule) {
      if (now < w.start_ns || now >= w.end_ns) continue;
      blackout |= w.blackout;
      extra += w.extra_delay_ns;
      if (w.override_faults && !overridden) {
        probs = &w.faults;
        overridden = true;
      }
    }
    if (blackout) {
      ++ws.blackout_dropped;
      put_buf(pkt);
      return;
    }
    if (extra) {
      ++ws.delayed;
      at += extra;
    }
    if (overridden) ++ws.overridden;
  }
  switch (f.next(*probs)) {
    case FaultInjector::Action::Drop:
      put_buf(pkt);
      return;
    case FaultInjector::Action::Duplicate: {
      PacketBuf copy;
      if (get_buf(copy)) {
        std::memcpy(copy.data, pkt.data, pkt.len);
        copy.len = pkt.len;
        copy.src = pkt.src;
        q_[to].push({at + 1, seq_++, copy});
      }
      break;
    }
    case FaultInjector::Action::Reorder:
      at += cfg_.reorder_delay_ns * f.reorder_distance();
      break;
    case FaultInjector::Action::Corrupt:
      if (pkt.len) pkt.data[f.corrupt_index(pkt.len)] ^= f.corrupt_mask();
      break;
    case FaultInjector::Action::Pass:
      break;
  }
  q_[to].push({at, seq_++, pkt});
}

uint64_t MemLink::next_delivery_ns() const noexcept {
  uint64_t t = UINT64_MAX;
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
  auto& q = link_.q_[side_];
  uint64_t now = link_.clock_.now_ns();
  uint16_t i = 0;
  while (i < n && !q.empty() && q.top().at <= now) {
    out[i++] = q.top().pkt;
    q.pop();
  }
  return i;
}

HostAddr MemIo::host() const noexcept {
  HostAddr h;
  h.bytes[0] = static_cast<uint8_t>(0xa0 + side_);
  return h;
}

}  // namespace pollfab::transport::testing
