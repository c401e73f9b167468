// The receiver's reorder buffer of one peer: packets that arrived above rcv_nxt, held as
// received (no copy) until the gap below them fills, in a ring indexed by PSN (window_pkts
// slots at first, reorder_window_pkts once grown), with a bitmap of the occupied slots beside it. The bitmap makes a SACK (64
// PSNs per word, docs/wire-format.md "ACK") cost a few word reads instead of a scan of the
// ring: with a reorder window of 1024 the receiver, usually the busier side, builds an ACK
// every few out-of-order packets while a hole is repaired.
// A slot holds either a packet or, for a segment already copied to its place in the message
// being received (early placement, Engine::place_early), only what delivery still needs
// (Placed); the packet's buffer went back to the pool at once.
// Shapes: slots is a power of two, 8..4096. Thread-safety: none (the engine serialises).
// Allocation: at init, and once when a peer's reordering first outgrows the initial ring
// (grow: the window_pkts-sized ring every peer starts with becomes reorder_window_pkts).
#pragma once
#include <cstdint>
#include <memory>
#include <new>

#include "lib/util/seq.hpp"
#include "transport/packet_io.hpp"

namespace pollfab::transport {

class ReorderBuffer {
 public:
  // A segment placed on arrival: its offset and length in the message, and whether it is the
  // message's last.
  struct Placed {
    uint32_t offset = 0, len = 0;
    bool last = false;
  };

  void init(uint32_t slots) {
    slots_ = slots;
    mask_ = slots - 1;
    ring_ = std::make_unique<PacketBuf[]>(slots);
    bits_ = std::make_unique<uint64_t[]>(words());
  }
  bool empty() const noexcept { return count_ == 0; }
  uint32_t count() const noexcept { return count_; }
  bool has(util::Seq32 psn) const noexcept {
    const uint32_t i = psn.raw() & mask_;
    return (bits_[i >> 6] >> (i & 63)) & 1;
  }
  // The packet held for psn (has(psn) must be true).
  const PacketBuf& at(util::Seq32 psn) const noexcept { return ring_[psn.raw() & mask_]; }
  // Holds pkt for psn; the slot must be empty.
  void put(util::Seq32 psn, const PacketBuf& pkt) noexcept {
    const uint32_t i = psn.raw() & mask_;
    ring_[i] = pkt;
    bits_[i >> 6] |= 1ull << (i & 63);
    ++count_;
  }
  // Records psn as received and placed (no packet held); the slot must be empty.
  void put_placed(util::Seq32 psn, const Placed& pl) noexcept {
    PacketBuf mark;  // data == nullptr: placed; the other fields carry pl
    mark.cap = pl.offset;
    mark.len = pl.len;
    mark.ext_len = pl.last;
    put(psn, mark);
  }
  // True if psn's slot (has(psn)) is a placed segment rather than a packet.
  bool placed(util::Seq32 psn) const noexcept { return !at(psn).data; }
  Placed placed_at(util::Seq32 psn) const noexcept {
    const PacketBuf& m = at(psn);
    return {m.cap, m.len, m.ext_len != 0};
  }
  // Empties psn's slot and returns what it held (has(psn) must be true; data is null for a
  // placed segment).
  PacketBuf take(util::Seq32 psn) noexcept {
    const uint32_t i = psn.raw() & mask_;
    bits_[i >> 6] &= ~(1ull << (i & 63));
    --count_;
    PacketBuf pkt = ring_[i];
    ring_[i].data = nullptr;
    return pkt;
  }
  // Hands every held packet to f (which frees it), forgets placed segments, and empties the
  // buffer.
  template <class F>
  void clear(F&& f) noexcept {
    for (uint32_t w = 0; count_ && w < words(); ++w) {
      for (uint64_t b = bits_[w]; b; b &= b - 1) {
        PacketBuf& pkt = ring_[w * 64 + __builtin_ctzll(b)];
        if (pkt.data) f(pkt);
        pkt.data = nullptr;
        --count_;
      }
      bits_[w] = 0;
    }
  }
  // Occupancy of the 64 PSNs from `from` on: bit i set if from + i is held. Bits for PSNs past
  // from + slots - 1 are meaningless (they alias the ring's start, or read 0 in rings under 64
  // slots): the caller masks what lies beyond the ring.
  uint64_t bits64(util::Seq32 from) const noexcept {
    const uint32_t pos = from.raw() & mask_;
    if (slots_ < 64) {  // one partial word: rotate its `slots_` bits
      const uint64_t all = (1ull << slots_) - 1, w = bits_[0] & all;
      return ((w >> pos) | (w << (slots_ - pos))) & all;
    }
    const uint32_t wi = pos >> 6, sh = pos & 63;
    uint64_t v = bits_[wi] >> sh;
    if (sh) v |= bits_[(wi + 1) & (words() - 1)] << (64 - sh);
    return v;
  }
  uint32_t slots() const noexcept { return slots_; }
  // Grows the ring to `slots` (a larger power of two), keeping every held packet; the held
  // PSNs lie in [base, base + slots()). False (nothing changed) if memory is short.
  bool grow(uint32_t slots, util::Seq32 base) noexcept {
    const uint32_t nwords = slots < 64 ? 1 : slots / 64;
    std::unique_ptr<PacketBuf[]> ring(new (std::nothrow) PacketBuf[slots]);
    std::unique_ptr<uint64_t[]> bits(new (std::nothrow) uint64_t[nwords]());
    if (!ring || !bits) return false;
    for (uint32_t w = 0; w < words(); ++w) {
      for (uint64_t b = bits_[w]; b; b &= b - 1) {
        const uint32_t i = w * 64 + __builtin_ctzll(b);
        const util::Seq32 psn = base + ((i - base.raw()) & mask_);
        const uint32_t j = psn.raw() & (slots - 1);
        ring[j] = ring_[i];
        bits[j >> 6] |= 1ull << (j & 63);
      }
    }
    ring_ = std::move(ring);
    bits_ = std::move(bits);
    slots_ = slots;
    mask_ = slots - 1;
    return true;
  }

 private:
  uint32_t words() const noexcept { return slots_ < 64 ? 1 : slots_ / 64; }
  std::unique_ptr<PacketBuf[]> ring_;
  std::unique_ptr<uint64_t[]> bits_;
  uint32_t slots_ = 0, mask_ = 0, count_ = 0;
};

}  // namespace pollfab::transport
