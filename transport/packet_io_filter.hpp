// PacketIoFilter: a PacketIo that wraps another and forwards every call to it; a layer over a
// provider's I/O (the fault layer, the loopback layer) derives from it and overrides only what
// it changes. own_bytes() gives a zero-copy packet a contiguous buffer of its own, for a layer
// that keeps a packet past the sender's completion.
// Thread-safety: none (as PacketIo). Hot path: the forwards are one virtual call each.
#pragma once
#include <cstring>

#include "transport/packet_io.hpp"

namespace pollfab::transport {

class PacketIoFilter : public PacketIo {
 public:
  // inner must outlive this object.
  explicit PacketIoFilter(PacketIo& inner) noexcept : inner_(inner) {}
  PacketIoFilter(const PacketIoFilter&) = delete;
  PacketIoFilter& operator=(const PacketIoFilter&) = delete;
  PacketIo& inner() noexcept { return inner_; }

  uint32_t max_packet_bytes() const noexcept override { return inner_.max_packet_bytes(); }
  uint16_t alloc(PacketBuf* out, uint16_t n) noexcept override { return inner_.alloc(out, n); }
  uint16_t tx_burst(PacketBuf* pkts, uint16_t n) noexcept override { return inner_.tx_burst(pkts, n); }
  void free(PacketBuf* pkts, uint16_t n) noexcept override { inner_.free(pkts, n); }
  void resolve(const HostAddr& host, Route& route) noexcept override { inner_.resolve(host, route); }
  uint16_t rx_burst(PacketBuf* out, uint16_t n) noexcept override { return inner_.rx_burst(out, n); }
  void service() noexcept override { inner_.service(); }
  int wait_fd() const noexcept override { return inner_.wait_fd(); }
  bool prepare_wait() noexcept override { return inner_.prepare_wait(); }
  uint64_t next_wait_ns() const noexcept override { return inner_.next_wait_ns(); }
  size_t counters(util::Counter* out, size_t max) const noexcept override {
    return inner_.counters(out, max);
  }
  uint32_t zero_copy_min_bytes() const noexcept override { return inner_.zero_copy_min_bytes(); }
  bool end_to_end_checked() const noexcept override { return inner_.end_to_end_checked(); }
  PinId pin_open() noexcept override { return inner_.pin_open(); }
  bool attach(PacketBuf& pkt, const uint8_t* data, uint32_t len, PinId pin) noexcept override {
    return inner_.attach(pkt, data, len, pin);
  }
  bool pinned(PinId pin) const noexcept override { return inner_.pinned(pin); }
  void pin_close(PinId pin) noexcept override { inner_.pin_close(pin); }
  bool clone(const PacketBuf& pkt, PacketBuf& out) noexcept override { return inner_.clone(pkt, out); }

 protected:
  // Attached (zero-copy) bytes of pkt are copied into a new buffer of the wrapped layer's, and
  // the reference to the application's memory dropped. False if no buffer was free (pkt
  // unchanged); true at once for a contiguous packet.
  bool own_bytes(PacketBuf& pkt) noexcept {
    if (!pkt.ext_len) return true;
    PacketBuf own;
    if (inner_.alloc(&own, 1) != 1) return false;
    const uint32_t head = pkt.len - pkt.ext_len;
    std::memcpy(own.data, pkt.data, head);
    std::memcpy(own.data + head, pkt.ext, pkt.ext_len);
    own.len = pkt.len;
    own.route = pkt.route;
    inner_.free(&pkt, 1);  // drops the reference on the application's memory
    pkt = own;
    return true;
  }

  PacketIo& inner_;
};

}  // namespace pollfab::transport
