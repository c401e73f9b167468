// PacketIo: how the transport sees a link, both ways. Implemented by the dpdk provider (mbufs
// on a port queue), the udp provider (kernel sockets) and transport/testing (in-memory link);
// the fault layer (transport/fault_io.hpp) wraps any of them.
//
// The transport writes the pollfab header and payload at PacketBuf::data; the I/O layer owns
// the headroom before it for its own lower headers (Ethernet/IPv4/UDP on DPDK).
// Ownership: alloc() hands buffers to the caller; tx_burst() takes back the ones it sends
// (the first `n_sent`), the caller keeps the rest; buffers from rx_burst() are the receiver's
// until it calls free(). Thread-safety: none (the owning domain serialises calls).
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/util/counter.hpp"

namespace pollfab::transport {

// Where a peer lives at the I/O layer (MAC + IPv4 + UDP port on DPDK; IPv4 + port on UDP;
// a link index in tests). Opaque to the transport: compared and hashed only.
struct HostAddr {
  uint8_t bytes[16] = {};
  friend bool operator==(const HostAddr& a, const HostAddr& b) noexcept {
    return std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
  }
};

// Sets all 16 bytes of a from two 8-byte halves (lo: bytes 0-7, hi: bytes 8-15, in memory
// order) with one 16-byte store. An I/O layer's rx_burst fills a packet's src just before the
// engine reads it whole (a 16-byte load): a load over several smaller stores still in flight
// cannot be forwarded from them and waits until they retire (about 2% of a 64-byte sender's
// time, perf; docs/performance.md item 34).
// lo and hi are the halves as this (little-endian) host loads them from memory.
inline void store_host(HostAddr& a, uint64_t lo, uint64_t hi) noexcept {
  static_assert(std::endian::native == std::endian::little, "store_host: halves in memory order");
  typedef uint64_t Halves __attribute__((vector_size(16)));
  const Halves v = {lo, hi};
  std::memcpy(a.bytes, &v, sizeof v);
}

// A transport-level endpoint address: host + endpoint id (the pollfab header's ep fields).
struct PeerAddr {
  HostAddr host;
  uint16_t ep_id = 0;
  friend bool operator==(const PeerAddr& a, const PeerAddr& b) noexcept {
    return a.ep_id == b.ep_id && a.host == b.host;
  }
};

struct PeerAddrHash {
  size_t operator()(const PeerAddr& a) const noexcept {
    uint64_t x, y;
    std::memcpy(&x, a.host.bytes, 8);
    std::memcpy(&y, a.host.bytes + 8, 8);
    uint64_t h = (x ^ (y * 0x9E3779B97F4A7C15ull) ^ a.ep_id) * 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 33));
  }
};

// Precomputed per-peer lower headers / socket address; filled by PacketIo::resolve.
struct Route {
  alignas(8) uint8_t bytes[64] = {};
  bool loopback = false;  // the destination is this host (transport/loopback_io.hpp)
};

// Zero-copy pins (PacketIo::pin_open): 0 = none.
using PinId = uint32_t;
constexpr PinId kNoPin = 0;

struct PacketBuf {
  uint8_t* data = nullptr;      // pollfab header starts here
  uint32_t len = 0;             // valid bytes of the packet (tx: set by the transport), including
                                // ext_len attached bytes
  uint32_t cap = 0;             // writable bytes from data (tx)
  void* handle = nullptr;       // I/O layer's buffer (mbuf, pool slot)
  const Route* route = nullptr; // tx: destination
  HostAddr src;                 // rx: sender's host address
  // tx, zero copy: the last ext_len bytes of the packet are not at data + len - ext_len but in
  // caller memory at ext (PacketIo::attach). rx buffers are always contiguous (ext_len 0).
  const uint8_t* ext = nullptr;
  uint32_t ext_len = 0;
  PinId pin = kNoPin;           // the pin ext was attached under
};

// A field-by-field copy of a packet buffer (see copy_op in transport/ops.hpp: an aggregate
// copy of one just written field by field stalls on store-to-load forwarding).
inline void copy_pkt(PacketBuf& d, const PacketBuf& s) noexcept {
  d.data = s.data;
  d.len = s.len;
  d.cap = s.cap;
  d.handle = s.handle;
  d.route = s.route;
  d.src = s.src;
  d.ext = s.ext;
  d.ext_len = s.ext_len;
  d.pin = s.pin;
}
static_assert(sizeof(PacketBuf) == 8 + 4 + 4 + 8 + 8 + sizeof(HostAddr) + 8 + 4 + sizeof(PinId),
              "PacketBuf changed: copy_pkt copies it field by field");

class PacketIo {
 public:
  virtual ~PacketIo() = default;
  // Largest pollfab header + payload one packet can carry, bytes (MTU minus lower headers).
  virtual uint32_t max_packet_bytes() const noexcept = 0;
  // Allocates up to n tx buffers (cap >= max_packet_bytes()); returns how many.
  virtual uint16_t alloc(PacketBuf* out, uint16_t n) noexcept = 0;
  // Sends pkts[0..n) in order; returns the count sent (those are consumed; the rest stay owned
  // by the caller). A short count is back-pressure, never an error.
  virtual uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept = 0;
  // Returns buffers (from alloc or rx) to the I/O layer.
  virtual void free(PacketBuf* pkts, uint16_t n) noexcept = 0;
  // Fills the route used to send to `host` (e.g. the Ethernet/IPv4/UDP header template).
  virtual void resolve(const HostAddr& host, Route& route) noexcept = 0;
  // Receives up to n packets (pollfab header at data, len bytes, sender at src; contiguous,
  // ext_len 0); returns how many. Lower-layer headers are validated and stripped here: what
  // fails is dropped and counted by the I/O layer, never handed up. Every field of each
  // returned packet is written (callers may pass uninitialised storage).
  virtual uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept = 0;
  // Time-driven work of the I/O layer (held fault packets, device tx cleanup); called from
  // every progress. Never blocks.
  virtual void service() noexcept {}
  // Sleeping (blocking reads, fi_trywait, automatic progress; lib/core/waiter.hpp). wait_fd():
  // a descriptor that polls readable while rx_burst() has packets to give (-1: none; a sleeper
  // then naps). prepare_wait(), called just before sleeping on it: false if the layer holds
  // packets the descriptor cannot show (a loopback ring, held faults) or could not arm its
  // wake-up (DPDK Rx interrupts); the caller then progresses again instead of sleeping.
  // next_wait_ns(): when a held packet is due (monotonic ns; UINT64_MAX: none).
  virtual int wait_fd() const noexcept { return -1; }
  virtual bool prepare_wait() noexcept { return false; }
  virtual uint64_t next_wait_ns() const noexcept { return UINT64_MAX; }
  // A second packet with pkt's bytes, for one more transmission (the fault layer's duplicate).
  // Default: a new buffer with the head bytes copied and attached memory attached again under
  // the same pin (or copied if that fails). A layer may instead hand out a second reference to
  // the same buffer (DPDK: mbuf reference count). False: out of buffers, nothing changed.
  virtual bool clone(const PacketBuf& pkt, PacketBuf& out) noexcept {
    if (alloc(&out, 1) != 1) return false;
    const uint32_t head = pkt.len - pkt.ext_len;
    std::memcpy(out.data, pkt.data, head);
    out.len = head;
    out.route = pkt.route;
    if (pkt.ext_len && !attach(out, pkt.ext, pkt.ext_len, pkt.pin)) {
      std::memcpy(out.data + head, pkt.ext, pkt.ext_len);
      out.len = pkt.len;
    }
    return true;
  }
  // The layer's counters (rx/tx, drops by cause, faults) into out[0..max); returns how many.
  virtual size_t counters(util::Counter* out, size_t max) const noexcept {
    (void)out, (void)max;
    return 0;
  }

  // Zero copy (optional; the defaults say "not supported"). A message's payload can be sent
  // from the application's memory instead of being copied into packet buffers: the transport
  // opens a pin per message, attaches payload memory to packets under it, and hands the memory
  // back to the application (its send completion) only when the message is acknowledged AND
  // pinned() is false: the I/O layer has dropped every reference (the device has read it, the
  // packet was sent or dropped). DPDK: external-buffer mbufs chained after the header mbuf.
  //
  // Segments of at least this many payload bytes go zero copy; UINT32_MAX = never.
  virtual uint32_t zero_copy_min_bytes() const noexcept { return UINT32_MAX; }
  // True if the link itself delivers exactly the bytes that were sent, end to end: shared
  // memory between processes of one host (memif), or a hardware end-to-end CRC (the
  // InfiniBand/RoCE ICRC under verbs). transport.checksum = "auto" seals packets only on links
  // where this is false (Ethernet NICs check a hop, not the path; TAP and kernel UDP).
  virtual bool end_to_end_checked() const noexcept { return false; }
  // A new pin (no references yet); kNoPin if none is free (the caller copies).
  virtual PinId pin_open() noexcept { return kNoPin; }
  // Appends len bytes of caller memory at data to pkt (whose first pkt.len bytes are written):
  // on success sets pkt.ext/ext_len/pin, adds len to pkt.len and holds a reference on pin
  // until the packet is sent and released or freed. False: out of resources, nothing changed.
  virtual bool attach(PacketBuf& pkt, const uint8_t* data, uint32_t len, PinId pin) noexcept {
    (void)pkt, (void)data, (void)len, (void)pin;
    return false;
  }
  // True while the I/O layer holds a reference to memory attached under pin.
  virtual bool pinned(PinId pin) const noexcept { (void)pin; return false; }
  // The transport is done with pin; the I/O layer recycles it once its references are gone
  // (so closing a still-pinned pin is safe: late releases touch only I/O-layer memory).
  virtual void pin_close(PinId pin) noexcept { (void)pin; }
};

}  // namespace pollfab::transport
