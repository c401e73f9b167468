#include "transport/loopback_io.hpp"

namespace pollfab::transport {

LoopbackIo::~LoopbackIo() {
  while (head_ != tail_) inner_.free(&ring_[head_++ & (kRingPackets - 1)], 1);
}

bool LoopbackIo::loop(PacketBuf& pkt) noexcept {
  if (tail_ - head_ == kRingPackets) {
    ++ring_full_;
    return false;
  }
  if (!own_bytes(pkt)) return false;  // zero copy: the receiver gets a buffer of its own
  pkt.src = local_;
  pkt.route = nullptr;
  ring_[tail_++ & (kRingPackets - 1)] = pkt;
  ++looped_;
  return true;
}

uint16_t LoopbackIo::tx_burst(PacketBuf* pkts, uint16_t n) noexcept {
  uint16_t done = 0;
  while (done < n) {
    if (pkts[done].route && pkts[done].route->loopback) {
      if (!loop(pkts[done])) return done;
      ++done;
      continue;
    }
    uint16_t run = 1;  // the wire-bound packets up to the next local one go in one burst
    while (done + run < n && !(pkts[done + run].route && pkts[done + run].route->loopback)) ++run;
    const uint16_t sent = inner_.tx_burst(pkts + done, run);
    done += sent;
    if (sent < run) return done;
  }
  return done;
}

uint16_t LoopbackIo::rx_burst(PacketBuf* out, uint16_t n) noexcept {
  uint16_t k = 0;
  while (k < n && head_ != tail_) out[k++] = ring_[head_++ & (kRingPackets - 1)];
  if (k < n) k += inner_.rx_burst(out + k, n - k);
  return k;
}

size_t LoopbackIo::counters(util::Counter* out, size_t max) const noexcept {
  size_t k = inner_.counters(out, max);
  if (k < max) out[k++] = {"loopback_pkts", looped_};
  if (k < max) out[k++] = {"loopback_ring_full", ring_full_};
  return k;
}

}  // namespace pollfab::transport
