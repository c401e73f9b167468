// IntrusiveList<T>: a doubly linked FIFO whose nodes embed `T* prev, *next` (no allocation).
// Thread-safety: none.
#pragma once
#include <cstddef>

namespace pollfab::util {

template <class T>
class IntrusiveList {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  T* front() const noexcept { return head_; }
  T* back() const noexcept { return tail_; }
  size_t size() const noexcept { return size_; }

  void push_back(T* n) noexcept {
    n->next = nullptr;
    n->prev = tail_;
    if (tail_) tail_->next = n; else head_ = n;
    tail_ = n;
    ++size_;
  }
  void erase(T* n) noexcept {
    if (n->prev) n->prev->next = n->next; else head_ = n->next;
    if (n->next) n->next->prev = n->prev; else tail_ = n->prev;
    n->prev = n->next = nullptr;
    --size_;
  }
  T* pop_front() noexcept {
    T* n = head_;
    if (n) erase(n);
    return n;
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pollfab::util
