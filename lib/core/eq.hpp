// Eq: the provider-neutral event queue (fi_eq(3)): read, readerr, write, sread with timeout,
// strerror. Events are copied in and out by value (entry bytes as given to write()).
// Wait objects (lib/core/waiter.hpp): FI_WAIT_UNSPEC, FD, MUTEX_COND, YIELD, SET; fi_control
// FI_GETWAIT / FI_GETWAITOBJ; fi_trywait. An EQ opened with FI_WAIT_NONE still sleeps in
// fi_eq_sread (events come from other threads: the liveness assist, automatic progress) but
// has no object to give FI_GETWAIT.
// Thread-safety: MT-safe (a mutex; the EQ is a control-path object).
#pragma once
#include <deque>
#include <mutex>
#include <vector>

#include "lib/core/fid.hpp"
#include "lib/core/wait_set.hpp"
#include "lib/core/waiter.hpp"

namespace pollfab::core {

class Eq final : public Object, public WaitMember {
 public:
  // fi_eq_open(3). attr may be null (defaults). Returns the object or throws std::bad_alloc.
  Eq(Object* owner, const fi_eq_attr* attr, void* context);
  fid_eq* fid() noexcept { return &box_.fid; }

  int close() override;
  int control(int command, void* arg);

  // fi_eq_read: -FI_EAGAIN if empty, -FI_EAVAIL if an error is at the head, -FI_ETOOSMALL if
  // len cannot hold the event; FI_PEEK leaves it queued. Returns the bytes copied.
  ssize_t read(uint32_t* event, void* buf, size_t len, uint64_t flags);
  ssize_t readerr(fi_eq_err_entry* buf, uint64_t flags);
  // fi_eq_write: queues a copy of buf (len bytes). FI_EVENT-less flags ignored. Returns len.
  ssize_t write(uint32_t event, const void* buf, size_t len, uint64_t flags);
  // fi_eq_sread: blocks up to timeout ms (-1 forever) for an event; -FI_EAGAIN at the timeout,
  // -FI_EINTR (a signal handler ran), -FI_ECANCELED (the EQ is closing).
  ssize_t sread(uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags);
  // fi_trywait: 0, -FI_EAGAIN (events queued), -FI_EINVAL (no native wait object).
  int trywait() noexcept;
  fi_wait_obj wait_kind() const noexcept { return set_.set() ? set_.set()->wait_kind() : attr_.wait_obj; }
  // As a wait set's member.
  bool has_entries() noexcept override;
  Progressable* progress_source() noexcept override { return nullptr; }
  // Queues an error event (providers: failed async operations, refused connections). data/len:
  // the err_data bytes (copied; e.g. a reject's CM data). readerr gives them as fi_eq(3) says:
  // into the caller's buffer when it passes one (err_data with err_data_size > 0; the size is
  // set to what was copied), else as a pointer to the EQ's copy, valid until the next readerr.
  void write_error(const fi_eq_err_entry& e, const void* data = nullptr, size_t len = 0);

 private:
  struct Event {
    uint32_t event = 0;
    bool error = false;
    std::vector<uint8_t> data;
    fi_eq_err_entry err{};
    std::vector<uint8_t> err_data;
  };
  ssize_t read_locked(uint32_t* event, void* buf, size_t len, uint64_t flags);

  FidBox<fid_eq> box_;
  Object* owner_;
  fi_eq_attr attr_{};
  std::mutex mu_;
  std::deque<Event> q_;
  Waiter waiter_;
  SetBinding set_;  // wait_obj FI_WAIT_SET
  std::vector<uint8_t> last_err_data_;  // what the last readerr pointed at
};

}  // namespace pollfab::core
