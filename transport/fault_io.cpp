#include "transport/fault_io.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace pollfab::transport {

FaultIo::FaultIo(PacketIo& inner, const Clock& clock, FaultIoConfig cfg)
    : PacketIoFilter(inner), clock_(clock), cfg_(std::move(cfg)), inj_(cfg_.faults), held_(cfg_.max_held) {}

FaultIo::~FaultIo() {
  flush_out();
  held_.drain([this](const Held& h) {
    PacketBuf p = h.pkt;
    inner_.free(&p, 1);
  });
}

bool FaultIo::corrupt(PacketBuf& pkt) noexcept {
  if (!pkt.len) return true;
  const uint32_t i = inj_.corrupt_index(pkt.len);
  const uint8_t mask = inj_.corrupt_mask();
  // A bit in attached application memory: the packet gets bytes of its own first.
  if (i >= pkt.len - pkt.ext_len && !own_bytes(pkt)) return false;
  pkt.data[i] ^= mask;
  return true;
}

void FaultIo::flush_out() noexcept {
  if (!n_out_) return;
  const uint16_t sent = inner_.tx_burst(out_, n_out_);
  if (sent < n_out_) {
    tx_lost_ += n_out_ - sent;
    inner_.free(out_ + sent, static_cast<uint16_t>(n_out_ - sent));
  }
  n_out_ = 0;
}

void FaultIo::emit(PacketBuf& pkt, uint64_t delay_ns, uint64_t now) noexcept {
  // A held packet never references application memory: its endpoint may close, and the
  // application free the buffer, before the packet is released. (No buffer for the copy:
  // it goes out now, in order.)
  if (delay_ns && own_bytes(pkt)) {
    Held h{pkt, {}};
    if (pkt.route) h.route = *pkt.route;
    if (held_.push(h, now + delay_ns)) {
      ++delayed_;
      return;
    }
  }
  if (n_out_ == kOut) flush_out();
  out_[n_out_++] = pkt;
}

void FaultIo::release_due() noexcept {
  if (held_.empty()) return;
  const uint64_t now = clock_.now_ns();
  if (held_.next_due_ns() > now) return;
  held_.release_due(now, [this](const Held& h) {
    if (n_out_ == kOut) flush_out();
    out_route_[n_out_] = h.route;
    out_[n_out_] = h.pkt;
    if (h.pkt.route) out_[n_out_].route = &out_route_[n_out_];
    ++n_out_;
  });
  flush_out();
}

uint16_t FaultIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  release_due();
  // The clock is read only when a schedule, a period or a delay needs it (not per burst of a
  // drop-only run).
  uint64_t now = cfg_.schedule.empty() && !cfg_.period_ns ? 0 : clock_.now_ns();
  auto when = [&]() {
    if (!now) now = clock_.now_ns();
    return now;
  };
  const bool clean = cfg_.period_ns && (now / cfg_.period_ns) % 2 == 0;
  for (uint16_t i = 0; i < n; ++i) {
    PacketBuf& pkt = pkts[i];
    const FaultConfig* probs = &cfg_.faults;
    uint64_t delay = 0;
    if (!cfg_.schedule.empty()) {
      bool blackout = false, overridden = false;
      for (const FaultWindow& w : cfg_.schedule) {
        if (now < w.start_ns || now >= w.end_ns) continue;
        blackout |= w.blackout;
        delay += w.extra_delay_ns;
        if (w.override_faults && !overridden) {
          probs = &w.faults;
          overridden = true;
        }
      }
      if (blackout) {
        ++wstats_.blackout_dropped;
        inner_.free(&pkt, 1);
        continue;
      }
      if (delay) ++wstats_.delayed;
      if (overridden) ++wstats_.overridden;
    }
    if (clean) {  // a clean period: no probabilities, the injector's sequence untouched
      ++clean_passed_;
      emit(pkt, delay, delay ? when() : 0);
      continue;
    }
    switch (inj_.next(*probs)) {
      case FaultInjector::Action::Drop:
        ++dropped_;
        inner_.free(&pkt, 1);
        continue;
      case FaultInjector::Action::Duplicate: {
        PacketBuf dup;
        emit(pkt, delay, delay ? when() : 0);
        if (inner_.clone(pkt, dup)) {
          ++duplicated_;
          emit(dup, delay, delay ? when() : 0);
        }
        continue;
      }
      case FaultInjector::Action::Reorder:
        delay += cfg_.reorder_unit_ns * inj_.reorder_distance();
        break;
      case FaultInjector::Action::Corrupt:
        if (!corrupt(pkt)) {  // no buffer to copy it into: lost instead
          ++dropped_;
          inner_.free(&pkt, 1);
          continue;
        }
        ++corrupted_;
        break;
      case FaultInjector::Action::Pass:
        break;
    }
    emit(pkt, delay, delay ? when() : 0);
  }
  flush_out();
  return n;
}

uint16_t FaultIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  release_due();
  return inner_.rx_burst(out, n);
}

void FaultIo::service() noexcept {
  release_due();
  inner_.service();
}

size_t FaultIo::counters(util::Counter* out, size_t max) const noexcept {
  size_t k = inner_.counters(out, max);
  const util::Counter mine[] = {
      {"fault_dropped", dropped_ + wstats_.blackout_dropped},
      {"fault_duplicated", duplicated_},
      {"fault_delayed", delayed_},
      {"fault_corrupted", corrupted_},
      {"fault_tx_lost", tx_lost_},
  };
  for (const util::Counter& c : mine)
    if (k < max) out[k++] = c;
  return k;
}

bool FaultIo::references(const void* p, size_t n) const noexcept {
  const auto* lo = static_cast<const uint8_t*>(p);
  bool hit = false;
  held_.for_each([&](const Held& h) {
    if (h.pkt.ext_len && h.pkt.ext < lo + n && lo < h.pkt.ext + h.pkt.ext_len) hit = true;
  });
  return hit;
}

}  // namespace pollfab::transport
