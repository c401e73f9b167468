// DelayLine: items the fault layer holds back (reorder and delay faults, transport/fault_io.hpp),
// each released once its due time has come. Due items come out in due-time order, items due
// at the same time in the order they were pushed.
// Fixed capacity set at construction (push fails when full: the caller sends the item in
// order instead); a binary min-heap on (due_ns, push sequence) in preallocated storage: push and
// release are O(log n), no allocation after construction. Thread-safety: none (the owning I/O
// layer serialises).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace pollfab::transport {

template <typename T>
class DelayLine {
 public:
  explicit DelayLine(uint32_t capacity) : cap_(capacity) { items_.reserve(capacity); }

  bool empty() const noexcept { return items_.empty(); }
  uint32_t size() const noexcept { return static_cast<uint32_t>(items_.size()); }
  uint32_t capacity() const noexcept { return cap_; }
  // Due time of the earliest item; UINT64_MAX when empty.
  uint64_t next_due_ns() const noexcept { return items_.empty() ? UINT64_MAX : items_.front().due_ns; }

  // Holds v until due_ns. False (nothing held) when full.
  bool push(const T& v, uint64_t due_ns) noexcept {
    if (items_.size() == cap_) return false;
    items_.push_back(Item{v, due_ns, seq_++});  // capacity reserved: never reallocates
    std::push_heap(items_.begin(), items_.end(), Later{});
    return true;
  }
  // Calls f(v) for every item due at now_ns (earliest first) and drops it. f may push.
  template <typename F>
  void release_due(uint64_t now_ns, F&& f) {
    while (!items_.empty() && items_.front().due_ns <= now_ns) {
      std::pop_heap(items_.begin(), items_.end(), Later{});
      Item it = items_.back();
      items_.pop_back();
      f(it.v);
    }
  }
  // Calls f(v) for every held item, in push order, and drops them all (shutdown).
  template <typename F>
  void drain(F&& f) {
    std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) { return a.seq < b.seq; });
    for (const Item& it : items_) f(it.v);
    items_.clear();
  }
  // Calls f(v) for every held item (inspection; order unspecified).
  template <typename F>
  void for_each(F&& f) const {
    for (const Item& it : items_) f(it.v);
  }

 private:
  struct Item {
    T v;
    uint64_t due_ns;
    uint64_t seq;
  };
  struct Later {  // heap order: the earliest (due, seq) at the front
    bool operator()(const Item& a, const Item& b) const noexcept {
      return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.seq > b.seq;
    }
  };
  std::vector<Item> items_;
  uint32_t cap_;
  uint64_t seq_ = 0;
};

}  // namespace pollfab::transport
