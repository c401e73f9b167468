// MemLink: an in-memory, lossy, delaying link between two PacketIo sides, driven by a clock.
//
// Each direction applies its own FaultInjector (drop, duplicate, reorder as extra delay,
// corrupt) and a fixed one-way latency. Packets become receivable when the clock reaches their
// delivery time. Buffers come from one fixed pool shared by both sides (alloc returns fewer
// when exhausted: back-pressure, as a NIC mempool would).
//
// Fault schedules: each direction may also carry a list of time windows (FaultWindow) that
// change its behaviour for packets *sent* while the clock is inside [start_ns, end_ns):
// a blackout loses every packet (drop bursts, a direction dead for a while), extra_delay_ns
// adds latency (delay spikes; later packets may overtake), and `faults` replaces the
// direction's static probabilities. Windows may overlap: blackout if any says so, extra
// delays add up, the first overriding window's probabilities win. Every random decision still
// comes from the direction's one FaultInjector (seeded by fault_ab/fault_ba.seed), so a run is
// replayable from (config, packet sequence, clock).
// Thread-safety: none (tests drive both sides from one thread).
#pragma once
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "transport/clock.hpp"
#include "transport/packet_io.hpp"
#include "transport/pin_table.hpp"
#include "transport/testing/fault_injector.hpp"

namespace pollfab::transport::testing {

// One time window of a direction's fault schedule (times are absolute clock times, ns).
struct FaultWindow {
  uint64_t start_ns = 0;         // inclusive
  uint64_t end_ns = 0;           // exclusive
  bool blackout = false;         // every packet sent in the window is lost
  uint64_t extra_delay_ns = 0;   // added to the one-way latency of packets sent in the window
  bool override_faults = false;  // use `faults` (probabilities only) instead of the static ones
  FaultConfig faults;
};

// What the schedule did to one direction's packets.
struct WindowStats {
  uint64_t blackout_dropped = 0;  // lost to a blackout window
  uint64_t delayed = 0;           // given extra latency by a window
  uint64_t overridden = 0;        // decided with a window's probabilities
};

struct MemLinkConfig {
  uint32_t max_packet_bytes = 1472;  // pollfab header + payload per packet (1500 - IPv4 - UDP)
  uint32_t pool_buffers = 16384;
  uint64_t latency_ns = 5'000;       // one way
  uint64_t reorder_delay_ns = 10'000;// extra delay unit of a reordered packet (x1..4)
  // Bandwidth model (0 = infinite): packets are serialised at this rate per direction, behind
  // the ones before them; a packet that would wait longer than queue_limit_ns in that queue is
  // dropped (a switch buffer; 0 = unbounded).
  uint64_t rate_mbps = 0;
  uint64_t queue_limit_ns = 0;
  FaultConfig fault_ab;              // faults on a -> b
  FaultConfig fault_ba;              // faults on b -> a
  std::vector<FaultWindow> schedule_ab;  // time-varying faults on a -> b (empty: none)
  std::vector<FaultWindow> schedule_ba;  // time-varying faults on b -> a
  // Zero copy (PacketIo::attach): segments of at least this many payload bytes travel as a
  // reference to the sender's memory, read only when the packet is delivered (as a NIC reads
  // at DMA time, late), so a sender that reuses memory too early delivers the wrong bytes.
  // UINT32_MAX = off (every payload is copied at send).
  uint32_t zero_copy_min_bytes = UINT32_MAX;
  uint32_t max_pins = 4096;
};

class MemLink;

class MemIo final : public PacketIo {
 public:
  MemIo(MemLink& link, int side) : link_(link), side_(side) {}
  uint32_t max_packet_bytes() const noexcept override;
  uint16_t alloc(PacketBuf* out, uint16_t n) noexcept override;
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override;
  void free(PacketBuf* pkts, uint16_t n) noexcept override;
  void resolve(const HostAddr& host, Route& route) noexcept override;
  uint32_t zero_copy_min_bytes() const noexcept override;
  PinId pin_open() noexcept override;
  bool attach(PacketBuf& pkt, const uint8_t* data, uint32_t len, PinId pin) noexcept override;
  bool pinned(PinId pin) const noexcept override;
  void pin_close(PinId pin) noexcept override;
  // Packets whose delivery time has come (ownership passes to the caller).
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept;
  HostAddr host() const noexcept;

 private:
  MemLink& link_;
  int side_;
};

class MemLink {
 public:
  MemLink(const MemLinkConfig& cfg, const Clock& clock);
  ~MemLink();
  MemIo& a() noexcept { return a_; }
  MemIo& b() noexcept { return b_; }
  // Earliest delivery time of a packet in flight, UINT64_MAX if none.
  uint64_t next_delivery_ns() const noexcept;
  size_t in_flight() const noexcept { return q_[0].size() + q_[1].size(); }
  uint32_t buffers_in_use() const noexcept { return pool_total_ - uint32_t(free_.size()); }
  const FaultStats& fault_stats(int dir) const noexcept { return fault_[dir].stats(); }
  // dir 0: a -> b, 1: b -> a.
  const WindowStats& window_stats(int dir) const noexcept { return wstats_[dir]; }

 private:
  friend class MemIo;
  struct InFlight {
    uint64_t at;
    uint64_t seq;
    PacketBuf pkt;
    uint32_t corrupt_at = UINT32_MAX;  // byte flipped at delivery (it may lie in attached memory)
    uint8_t corrupt_mask = 0;
    bool operator>(const InFlight& o) const noexcept { return at != o.at ? at > o.at : seq > o.seq; }
  };
  using Queue = std::priority_queue<InFlight, std::vector<InFlight>, std::greater<InFlight>>;

  bool get_buf(PacketBuf& out) noexcept;
  void put_buf(const PacketBuf& p) noexcept;
  void transmit(int from_side, PacketBuf& pkt) noexcept;
  // Copies attached bytes into the packet's own buffer and drops the reference (delivery).
  void materialise(PacketBuf& pkt) noexcept;

  MemLinkConfig cfg_;
  const Clock& clock_;
  std::vector<std::unique_ptr<uint8_t[]>> storage_;
  std::vector<uint8_t*> free_;
  uint32_t pool_total_ = 0;
  Queue q_[2];  // q_[i]: packets travelling towards side i
  FaultInjector fault_[2];  // fault_[0]: a->b, fault_[1]: b->a
  WindowStats wstats_[2];
  PinTable pins_{cfg_.max_pins};
  uint64_t seq_ = 0;
  uint64_t busy_until_[2] = {0, 0};  // per direction (from side): serialiser free at
  uint64_t queue_drops_ = 0;
 public:
  uint64_t queue_drops() const noexcept { return queue_drops_; }
  // Zero copy: pins open or still referenced, and packets sent with attached payloads.
  uint32_t pins_in_use() const noexcept { return pins_.in_use(); }
  uint64_t attached_packets() const noexcept { return attached_; }
  // True if a packet in flight still references memory in [p, p + n) (zero copy). Tests call
  // it when a send completes: the transport must not hand memory back before that.
  bool references(const void* p, size_t n) const noexcept;
 private:
  uint64_t attached_ = 0;
 public:
 private:
  MemIo a_{*this, 0};
  MemIo b_{*this, 1};
};

}  // namespace pollfab::transport::testing
