// FaultIo: the one fault layer. It wraps any PacketIo (DPDK port, UDP socket, in-memory link)
// and, on transmit, drops, duplicates, reorders, delays or corrupts packets; everything else
// (receive, buffers, routes, zero-copy pins) passes straight through to the wrapped layer.
// Used by the dpdk and udp providers when the config has faults ([fault], FI_DPDK_FAULT_*,
// FI_UDP_FAULT_*; the providers do not wrap at all otherwise) and by the in-memory test link.
//
// Per transmitted packet, in this order:
//   0. the period (FaultIoConfig::period_ns, 0 = off): in a period of the clock with an even
//      index, floor(now / period_ns), the probabilities are not applied (step 2 is skipped): a
//      run alternates between clean and faulty periods, so a benchmark compares the two under
//      the same conditions (scripts/bench-loss.sh); the schedule (1) still applies;
//   1. the schedule (time windows, absolute clock times): a blackout window drops it; windows'
//      extra_delay_ns add up; the first window with override_faults replaces the probabilities;
//   2. one FaultInjector decision (seeded: a run replays from seed, probabilities and packet
//      sequence):
//      Drop      - freed, never sent;
//      Duplicate - a second copy goes out right behind it (PacketIo::clone: a second reference
//                  where the layer has one, as DPDK's mbuf reference count, else a copy);
//      Reorder   - held for 1..4 x reorder_unit_ns, so later packets overtake it;
//      Corrupt   - one bit of the packet flipped (header or payload; a byte in attached
//                  application memory is never written: the packet is first copied into a
//                  buffer of its own). Receivers drop it on the CRC-32C (drop_checksum);
//   3. a packet with any delay is held in a DelayLine (max_held packets; when full it is sent
//      at once, in order) and sent by the first tx_burst/rx_burst/service/release_due call at
//      or after its due time.
// tx_burst consumes every packet it is given (sent, dropped or held); packets the wrapped layer
// does not take are freed (lost, as on a full ring) and counted as fault_tx_lost.
// Held packets keep a copy of their route and bytes of their own (never a reference to
// application memory), so an endpoint may close, and its buffers be freed, while they wait.
//
// Counters: the wrapped layer's, then fault_dropped, fault_duplicated, fault_delayed,
// fault_corrupted, fault_tx_lost.
// Thread-safety: none (the owning domain serialises). Allocation: the DelayLine at
// construction only.
#pragma once
#include <cstdint>
#include <vector>

#include "transport/clock.hpp"
#include "transport/delay_line.hpp"
#include "transport/fault_injector.hpp"
#include "transport/packet_io_filter.hpp"

namespace pollfab::transport {

// One time window of a fault schedule (absolute clock times, ns).
struct FaultWindow {
  uint64_t start_ns = 0;         // inclusive
  uint64_t end_ns = 0;           // exclusive
  bool blackout = false;         // every packet sent in the window is lost
  uint64_t extra_delay_ns = 0;   // added to the delay of packets sent in the window
  bool override_faults = false;  // use `faults` (probabilities only) instead of the static ones
  FaultConfig faults;
};

// What the schedule did.
struct WindowStats {
  uint64_t blackout_dropped = 0;  // lost to a blackout window
  uint64_t delayed = 0;           // given extra delay by a window
  uint64_t overridden = 0;        // decided with a window's probabilities
};

struct FaultIoConfig {
  FaultConfig faults;                 // probabilities (each 0..1) and seed
  std::vector<FaultWindow> schedule;  // time-varying faults (empty: none)
  uint64_t reorder_unit_ns = 20'000;  // a reordered packet is late by 1..4 of these
  uint32_t max_held = 256;            // packets held (reorder, delay) at once
  uint64_t period_ns = 0;             // faults only in periods with an odd index (0: always)
};

class FaultIo final : public PacketIoFilter {
 public:
  // inner and clock must outlive this object.
  FaultIo(PacketIo& inner, const Clock& clock, FaultIoConfig cfg);
  // Frees held packets through the wrapped layer.
  ~FaultIo() override;

  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override;
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override;
  void service() noexcept override;
  size_t counters(util::Counter* out, size_t max) const noexcept override;
  // A layer that may flip bits is a link without an end-to-end check (the CRC must catch them).
  bool end_to_end_checked() const noexcept override {
    return !corrupts() && inner_.end_to_end_checked();
  }
  // Held packets are released by service() when due: a sleeper wakes for the first of them.
  uint64_t next_wait_ns() const noexcept override {
    return std::min(held_.next_due_ns(), inner_.next_wait_ns());
  }

  // Sends the held packets whose time has come (also done by tx_burst, rx_burst, service).
  void release_due() noexcept;
  // When the next held packet is due; UINT64_MAX if none is held.
  uint64_t next_release_ns() const noexcept { return held_.next_due_ns(); }
  uint32_t held() const noexcept { return held_.size(); }
  // True if a held packet references application memory in [p, p + n) (never, by design;
  // the tests check it).
  bool references(const void* p, size_t n) const noexcept;
  const FaultStats& fault_stats() const noexcept { return inj_.stats(); }
  const WindowStats& window_stats() const noexcept { return wstats_; }
  // Packets sent in clean periods (period_ns), past the probabilities.
  uint64_t clean_passed() const noexcept { return clean_passed_; }

 private:
  bool corrupts() const noexcept {
    if (cfg_.faults.corrupt > 0) return true;
    for (const FaultWindow& w : cfg_.schedule)
      if (w.override_faults && w.faults.corrupt > 0) return true;
    return false;
  }
  struct Held {
    PacketBuf pkt;
    Route route;  // pkt.route points here once released
  };
  // Flips one bit of pkt (copying it into its own buffer first if the bit lies in attached
  // memory). False if that copy found no buffer (the packet is then dropped).
  bool corrupt(PacketBuf& pkt) noexcept;
  // Queues pkt for the wrapped layer now (delay 0) or holds it.
  void emit(PacketBuf& pkt, uint64_t delay_ns, uint64_t now) noexcept;
  void flush_out() noexcept;

  const Clock& clock_;
  FaultIoConfig cfg_;
  FaultInjector inj_;
  WindowStats wstats_;
  DelayLine<Held> held_;
  static constexpr uint16_t kOut = 64;
  PacketBuf out_[kOut];  // packets on their way to the wrapped layer (one tx burst)
  Route out_route_[kOut];
  uint16_t n_out_ = 0;
  uint64_t dropped_ = 0, duplicated_ = 0, delayed_ = 0, corrupted_ = 0, tx_lost_ = 0;
  uint64_t clean_passed_ = 0;
};

}  // namespace pollfab::transport
