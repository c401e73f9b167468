// PinTable: the I/O layer's bookkeeping for zero-copy pins (PacketIo::pin_open / attach /
// pinned / pin_close): a reference count per pin and a free list. A pin is recycled once it is
// closed and no reference is left, in either order (a closed pin may still be referenced by a
// packet in flight). Ids are 1..capacity (kNoPin = 0 is never handed out). Fixed capacity, no
// allocation after construction. Thread-safety: none (the owning I/O layer serialises).
#pragma once
#include <cstdint>
#include <vector>

#include "transport/packet_io.hpp"

namespace pollfab::transport {

class PinTable {
 public:
  explicit PinTable(uint32_t capacity) : pins_(size_t(capacity) + 1), free_(capacity) {
    for (uint32_t i = 0; i < capacity; ++i) free_[i] = capacity - i;  // hands out 1, 2, ...
    n_free_ = capacity;
  }
  // A new open pin without references; kNoPin when all are in use.
  PinId open() noexcept {
    if (!n_free_) return kNoPin;
    PinId id = free_[--n_free_];
    pins_[id] = {0, true};
    return id;
  }
  // True if pin is a valid id that is open (attachments may be made under it).
  bool is_open(PinId pin) const noexcept { return pin != kNoPin && pin < pins_.size() && pins_[pin].open; }
  void ref(PinId pin) noexcept { ++pins_[pin].refs; }
  void unref(PinId pin) noexcept {
    Pin& p = pins_[pin];
    if (--p.refs == 0 && !p.open) free_[n_free_++] = pin;
  }
  bool pinned(PinId pin) const noexcept { return pins_[pin].refs > 0; }
  void close(PinId pin) noexcept {
    Pin& p = pins_[pin];
    p.open = false;
    if (p.refs == 0) free_[n_free_++] = pin;
  }
  // Pins open or still referenced.
  uint32_t in_use() const noexcept { return uint32_t(free_.size()) - n_free_; }

 private:
  struct Pin {
    uint32_t refs = 0;
    bool open = false;
  };
  std::vector<Pin> pins_;     // [0] unused (kNoPin)
  std::vector<PinId> free_;
  uint32_t n_free_ = 0;
};

}  // namespace pollfab::transport
