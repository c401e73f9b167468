// The receiver's reorder buffer of one peer: packets that arrived above rcv_nxt, held as
// received (no copy) until the gap below them fills, in a ring indexed by PSN (window_pkts
// slots at first, reorder_window_pkts once grown), with a PsnBitmap of the occupied slots
// beside it. The bitmap makes a SACK (64 PSNs per word, docs/wire-format.md "ACK") cost a few
// word reads instead of a scan of the ring: with a reorder window of 1024 the receiver,
// usually the busier side, builds an ACK every few out-of-order packets while a hole is
// repaired.
// A slot holds either a packet or, for a segment already copied to its place in the message
// being received (early placement, Engine::place_early), only what delivery still needs
// (Placed); the packet's buffer went back to the pool at once. A second bitmap marks those, so
// a run of placed segments is found and taken a word at a time (placed_run, take_run) without
// reading their slots.
// Shapes: slots is a power of two, 8..4096. Thread-safety: none (the engine serialises).
// Allocation: at init, and once when a peer's reordering first outgrows the initial ring
// (grow: the window_pkts-sized ring every peer starts with becomes reorder_window_pkts).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>

#include "lib/util/seq.hpp"
#include "transport/packet_io.hpp"
#include "transport/psn_bitmap.hpp"

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
    ring_ = std::make_unique<PacketBuf[]>(slots);
    bits_.init(slots);
    placed_.init(slots);
  }
  bool empty() const noexcept { return count_ == 0; }
  uint32_t count() const noexcept { return count_; }
  uint32_t slots() const noexcept { return bits_.slots(); }
  bool has(util::Seq32 psn) const noexcept { return bits_.test(psn); }
  // The packet held for psn (has(psn) must be true).
  const PacketBuf& at(util::Seq32 psn) const noexcept { return ring_[index(psn)]; }
  // Holds pkt for psn; the slot must be empty.
  void put(util::Seq32 psn, const PacketBuf& pkt) noexcept {
    copy_pkt(ring_[index(psn)], pkt);
    bits_.set(psn);
    ++count_;
  }
  // Records psn as received and placed (no packet held); the slot must be empty.
  // Written into the slot field by field: a PacketBuf built on the stack and copied whole
  // stalled on store-to-load forwarding behind the placement's copy (6% of a receiver's time
  // at 1% loss, perf).
  void put_placed(util::Seq32 psn, const Placed& pl) noexcept {
    PacketBuf& mark = ring_[index(psn)];  // data == nullptr: placed; the other fields carry pl
    mark.data = nullptr;
    mark.cap = pl.offset;
    mark.len = pl.len;
    mark.ext_len = pl.last;
    bits_.set(psn);
    placed_.set(psn);
    ++count_;
  }
  // True if psn's slot (has(psn)) is a placed segment rather than a packet.
  bool placed(util::Seq32 psn) const noexcept { return placed_.test(psn); }
  Placed placed_at(util::Seq32 psn) const noexcept {
    const PacketBuf& m = at(psn);
    return {m.cap, m.len, m.ext_len != 0};
  }
  // Empties psn's slot and returns what it held (has(psn) must be true; data is null for a
  // placed segment).
  PacketBuf take(util::Seq32 psn) noexcept {
    bits_.clear(psn);
    placed_.clear(psn);
    --count_;
    PacketBuf& slot = ring_[index(psn)];
    PacketBuf pkt = slot;
    slot.data = nullptr;
    return pkt;
  }
  // Hands every held packet to f (which frees it), forgets placed segments, and empties the
  // buffer.
  template <class F>
  void clear(F&& f) noexcept {
    if (!count_) return;
    bits_.for_each_index([&](uint32_t i) {
      if (ring_[i].data) f(ring_[i]);
      ring_[i].data = nullptr;
    });
    bits_.clear_all();
    placed_.clear_all();
    count_ = 0;
  }
  // How many PSNs from `from` on, at most max, are placed segments in a row.
  uint32_t placed_run(util::Seq32 from, uint32_t max) const noexcept {
    max = std::min(max, count_);
    uint32_t n = 0;
    while (n < max) {
      const uint64_t w = placed_.bits64(from + n);
      const uint32_t run = ~w ? uint32_t(__builtin_ctzll(~w)) : 64;
      n += run;
      if (run < 64 || bits_.slots() < 64) break;  // (a small ring's word holds slots() PSNs)
    }
    return std::min(n, max);
  }
  // Empties the n slots from `from` on, all placed segments (placed_run).
  void take_run(util::Seq32 from, uint32_t n) noexcept {
    for (uint32_t i = 0; i < n; ++i) {
      bits_.clear(from + i);
      placed_.clear(from + i);
    }
    count_ -= n;
  }
  // Occupancy of the 64 PSNs from `from` on (PsnBitmap::bits64).
  uint64_t bits64(util::Seq32 from) const noexcept { return bits_.bits64(from); }
  // Grows the ring to `slots` (a larger power of two), keeping every held packet; the held
  // PSNs lie in [base, base + slots()). False (nothing changed) if memory is short.
  bool grow(uint32_t slots, util::Seq32 base) noexcept {
    std::unique_ptr<PacketBuf[]> ring(new (std::nothrow) PacketBuf[slots]);
    if (!ring) return false;
    bits_.for_each_index([&](uint32_t i) {
      ring[bits_.psn_at(i, base).raw() & (slots - 1)] = ring_[i];
    });
    PsnBitmap bits = bits_.grown(slots, base), placed = placed_.grown(slots, base);
    if (!bits.slots() || !placed.slots()) return false;
    bits_ = std::move(bits);
    placed_ = std::move(placed);
    ring_ = std::move(ring);
    return true;
  }

 private:
  uint32_t index(util::Seq32 psn) const noexcept { return psn.raw() & (bits_.slots() - 1); }
  std::unique_ptr<PacketBuf[]> ring_;
  PsnBitmap bits_;
  PsnBitmap placed_;  // the slots of bits_ that are placed segments (put_placed)
  uint32_t count_ = 0;
};

}  // namespace pollfab::transport
