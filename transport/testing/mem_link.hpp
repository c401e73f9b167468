// MemLink: an in-memory link between two PacketIo sides, driven by a clock: a fixed one-way
// latency, an optional bandwidth model, and on each side's transmit the fault layer
// (transport/fault_io.hpp, the same one the providers use): drop, duplicate, reorder (late by
// 1..4 x reorder_delay_ns), corrupt, and time-windowed schedules (FaultWindow: blackouts,
// delay spikes, probability overrides, for packets *sent* inside [start_ns, end_ns); windows
// may overlap: blackout if any says so, extra delays add up, the first overriding window's
// probabilities win). Every random decision comes from the sending side's one FaultInjector
// (seeded by fault_ab/fault_ba.seed), so a run is replayable from (config, packet sequence,
// clock). Packets become receivable when the clock reaches their delivery time. Buffers come
// from one fixed pool shared by both sides (alloc returns fewer when exhausted: back-pressure,
// as a NIC mempool would).
// a() and b() are the sides as the engines see them (the fault layer over the raw side).
// Thread-safety: none (tests drive both sides from one thread).
#pragma once
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "transport/clock.hpp"
#include "transport/fault_io.hpp"
#include "transport/packet_io.hpp"
#include "transport/pin_table.hpp"

namespace pollfab::transport::testing {

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
  // A duplicate holds a second reference to attached memory, like a cloned mbuf.
  bool clone(const PacketBuf& pkt, PacketBuf& out) noexcept override;
  // Packets whose delivery time has come (ownership passes to the caller); first sends what
  // the other side's fault layer held back and is now due.
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override;
  HostAddr host() const noexcept;

 private:
  MemLink& link_;
  int side_;
};

class MemLink {
 public:
  MemLink(const MemLinkConfig& cfg, const Clock& clock);
  ~MemLink();
  // The two sides as an engine sees them: the fault layer over the raw side.
  PacketIo& a() noexcept { return fault_a_; }
  PacketIo& b() noexcept { return fault_b_; }
  // Host address of side 0 (a) or 1 (b).
  HostAddr host(int side) const noexcept { return side == 0 ? a_.host() : b_.host(); }
  // Earliest delivery (or fault-layer release) of a packet in flight, UINT64_MAX if none.
  uint64_t next_delivery_ns() const noexcept;
  // Packets in flight, including those the fault layers hold back.
  size_t in_flight() const noexcept {
    return q_[0].size() + q_[1].size() + fault_a_.held() + fault_b_.held();
  }
  uint32_t buffers_in_use() const noexcept { return pool_total_ - uint32_t(free_.size()); }
  // dir 0: a -> b, 1: b -> a.
  const FaultStats& fault_stats(int dir) const noexcept { return fault(dir).fault_stats(); }
  const WindowStats& window_stats(int dir) const noexcept { return fault(dir).window_stats(); }

 private:
  friend class MemIo;
  struct InFlight {
    uint64_t at;
    uint64_t seq;
    PacketBuf pkt;
    bool operator>(const InFlight& o) const noexcept { return at != o.at ? at > o.at : seq > o.seq; }
  };
  using Queue = std::priority_queue<InFlight, std::vector<InFlight>, std::greater<InFlight>>;

  bool get_buf(PacketBuf& out) noexcept;
  void put_buf(const PacketBuf& p) noexcept;
  void transmit(int from_side, PacketBuf& pkt) noexcept;
  const FaultIo& fault(int dir) const noexcept { return dir == 0 ? fault_a_ : fault_b_; }
  FaultIo& fault(int dir) noexcept { return dir == 0 ? fault_a_ : fault_b_; }
  // Copies attached bytes into the packet's own buffer and drops the reference (delivery).
  void materialise(PacketBuf& pkt) noexcept;

  MemLinkConfig cfg_;
  const Clock& clock_;
  std::vector<std::unique_ptr<uint8_t[]>> storage_;
  std::vector<uint8_t*> free_;
  uint32_t pool_total_ = 0;
  Queue q_[2];  // q_[i]: packets travelling towards side i
  PinTable pins_{cfg_.max_pins};
  uint64_t seq_ = 0;
  uint64_t busy_until_[2] = {0, 0};  // per direction (from side): serialiser free at
  uint64_t queue_drops_ = 0;
 public:
  uint64_t queue_drops() const noexcept { return queue_drops_; }
  // Zero copy: pins open or still referenced, and packets sent with attached payloads.
  uint32_t pins_in_use() const noexcept { return pins_.in_use(); }
  uint64_t attached_packets() const noexcept { return attached_; }
  // True if a packet in flight (or held by a fault layer) still references memory in
  // [p, p + n) (zero copy). Tests call it when a send completes: the transport must not hand
  // memory back before that.
  bool references(const void* p, size_t n) const noexcept;

 private:
  uint64_t attached_ = 0;
  MemIo a_{*this, 0};
  MemIo b_{*this, 1};
  FaultIo fault_a_;  // a -> b
  FaultIo fault_b_;  // b -> a
};

}  // namespace pollfab::transport::testing
