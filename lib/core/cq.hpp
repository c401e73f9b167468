// Cq: the provider-neutral completion queue (fi_cq(3)) in all four formats (CONTEXT, MSG,
// DATA, TAGGED; UNSPEC means CONTEXT), with readfrom (FI_SOURCE addresses), an ordered error
// queue (readerr with the api >= 1.5 err_data rules and the 1.0 layout for older callers),
// sread with a timeout, signal and strerror, and its wait object (lib/core/waiter.hpp):
// wait_obj FI_WAIT_NONE, UNSPEC, FD, MUTEX_COND, YIELD or SET (lib/core/wait_set.hpp: then
// FI_GETWAIT, FI_GETWAITOBJ and fi_trywait are the set's); fi_control FI_GETWAIT/FI_GETWAITOBJ;
// fi_trywait.
//
// Providers write entries with push()/push_error(), or a burst in place (burst_room/slot/commit;
// hot path: no allocation unless the ring of `size` entries overflows, then a cold overflow list). Reads return -FI_EAVAIL while an
// error entry is queued, so errors are never starved by successes.
// Thread-safety (docs/threading.md): the queue is a single-producer single-consumer ring.
//   Producers: push()/push_error() callers are serialized by the provider (its progress lock:
//     the application's thread, the progress thread or the assist thread, one at a time).
//   Consumers: read/readfrom/readerr/sread. With consumers_may_race (FI_THREAD_SAFE) a
//     spinlock serializes them; at every other level (fi_domain(3): DOMAIN, COMPLETION,
//     ENDPOINT, FID) the application does, and reads take no lock.
//   The cold lists (overflow, errors) have their own lock, taken only when they are not empty.
//   has_entries/pending/trywait/signal: any thread.
// Progress: under FI_PROGRESS_MANUAL every read drives the owning domain's progress first.
#pragma once
#include <deque>
#include <string>
#include <vector>

#include "lib/core/errors.hpp"
#include "lib/core/fid.hpp"
#include "lib/core/progress.hpp"
#include "lib/core/wait_set.hpp"
#include "lib/core/waiter.hpp"
#include "lib/util/spinlock.hpp"
#include "lib/util/spsc_ring.hpp"
#include "lib/util/thread_annotations.hpp"

namespace pollfab::core {

class Cq final : public Object, public WaitMember {
 public:
  // attr must be non-null and valid (checked by Cq::validate). `owner` is the domain object,
  // referenced for the CQ's lifetime; `progress` is driven by reads (may be null).
  // consumers_may_race: readers may call concurrently (FI_THREAD_SAFE): they take a lock.
  Cq(Object* owner, Progressable* progress, const fi_cq_attr& attr, uint32_t api_version,
     bool consumers_may_race, void* context);
  // Returns 0 or -FI_EINVAL / -FI_ENOSYS for attributes this CQ does not support.
  static int validate(const fi_cq_attr* attr) noexcept;

  fid_cq* fid() noexcept { return &box_.fid; }
  int close() override;
  Object* owner() const noexcept { return owner_; }
  int control(int command, void* arg);

  // Hot path, called by providers: written in place into the ring (inline); to the overflow
  // list (push_overflow) while it holds entries or the ring is full.
  void push(void* op_context, uint64_t flags, size_t len, void* buf, uint64_t data, uint64_t tag,
            fi_addr_t src) noexcept {
    Entry* s = overflow_n_.load(std::memory_order_acquire) ? nullptr : ring_.claim();
    if (!s) [[unlikely]] {
      push_overflow(op_context, flags, len, buf, data, tag, src);
      return;
    }
    s->op_context = op_context;
    s->flags = flags;
    s->len = len;
    s->buf = buf;
    s->data = data;
    s->tag = tag;
    s->src = src;
    ring_.commit();
    waiter_.notify();
  }
  // Queues an error completion; err.err is a positive FI_E* code. err_data is copied.
  void push_error(const fi_cq_err_entry& err) noexcept;

  ssize_t read(void* buf, size_t count, fi_addr_t* src_addr) noexcept;
  ssize_t readerr(fi_cq_err_entry* buf, uint64_t flags) noexcept;
  // fi_cq_sread: blocks (without spinning past the waiter's poll budget, driving the domain's
  // progress as it wakes) until an entry or error is queued, fi_cq_signal, or timeout_ms
  // (-1: none) passes. Returns what read() returns, -FI_EAGAIN (timeout, signal), -FI_EINTR
  // (a signal handler ran), -FI_ECANCELED (the CQ is closing).
  ssize_t sread(void* buf, size_t count, fi_addr_t* src_addr, int timeout_ms) noexcept;
  int signal() noexcept;
  // fi_trywait (fi_poll(3)): 0 if the application may block on the FI_GETWAIT object now;
  // -FI_EAGAIN if entries or errors are queued or the domain's wait source could not arm
  // (read and try again); -FI_EINVAL if the CQ has no native wait object (NONE, YIELD).
  int trywait() noexcept;
  fi_wait_obj wait_kind() const noexcept { return set_.set() ? set_.set()->wait_kind() : waiter_.kind(); }
  size_t pending() noexcept;  // successful entries queued (tests)
  // As a wait set's or poll set's member.
  bool has_entries() noexcept override;
  Progressable* progress_source() noexcept override { return progress_; }
  // How fi_cq_strerror names a prov_errno (the owning domain's Domain::prov_errno_text).
  ProvErrnoText prov_errno_text() const noexcept { return prov_text_; }
  void set_prov_errno_text(ProvErrnoText t) noexcept { prov_text_ = t; }

  struct Entry {
    void* op_context;
    uint64_t flags;
    size_t len;
    void* buf;
    uint64_t data;
    uint64_t tag;
    fi_addr_t src;
  };
  // A burst of up to n successful entries written in place (a provider's completions of one
  // ACK or one packet): burst_room(n) is true if the ring has room for n and no overflow is
  // queued (else use push()); then burst_slot(0..k-1) are written field by field and
  // burst_commit(k) publishes them (one index store, one wake-up check). Same producer rules
  // as push().
  bool burst_room(uint32_t n) noexcept {
    return !overflow_n_.load(std::memory_order_acquire) && ring_.room(n);
  }
  Entry* burst_slot(uint32_t i) noexcept { return ring_.slot(i); }
  // True when reads return fi_cq_entry (FI_CQ_FORMAT_CONTEXT): of an entry, only op_context
  // (and src, for fi_cq_readfrom) is ever read, so a burst writer may leave the rest unset.
  bool context_only() const noexcept { return format_ == FI_CQ_FORMAT_CONTEXT; }
  void burst_commit(uint32_t k) noexcept {
    if (!k) return;
    ring_.commit_n(k);
    waiter_.notify();
  }

 private:
  void push_overflow(void* op_context, uint64_t flags, size_t len, void* buf, uint64_t data,
                     uint64_t tag, fi_addr_t src) noexcept;
  void write_entry(void* dst, const Entry& e) const noexcept;
  // read()'s batch: the n oldest ring entries in format Out (fi_cq_entry ... _tagged_entry) at
  // out, left in the ring (the caller pops them).
  template <class Out>
  void copy_batch(uint8_t* out, size_t n) noexcept;
  // The next entry in completion order once the ring was found empty: the overflow list's
  // oldest (or the ring's, refilled meanwhile), or false. Consumer side.
  bool pop_overflow(Entry& out) noexcept;

  FidBox<fid_cq> box_;
  Object* owner_;
  Progressable* progress_;
  fi_cq_format format_;
  size_t entry_size_;
  uint32_t api_version_;
  util::MaybeLock read_lock_;       // consumers, when they may race (FI_THREAD_SAFE)
  util::SpscRing<Entry> ring_;      // the hot path
  util::Spinlock cold_lock_;        // overflow_ and errors_
  std::deque<Entry> overflow_ PF_GUARDED_BY(cold_lock_);  // newer than every ring entry
  // An error entry with its own copy of err_data (the provider's buffer may be on its stack).
  struct QueuedError {
    fi_cq_err_entry e{};
    std::vector<uint8_t> data;
  };
  std::deque<QueuedError> errors_ PF_GUARDED_BY(cold_lock_);
  std::atomic<size_t> overflow_n_{0};  // overflow_.size(), readable without cold_lock_
  std::atomic<size_t> errors_n_{0};    // errors_.size(), readable without cold_lock_
  QueuedError last_err_;  // the last error read: storage behind err_data handed to the application
  std::atomic<bool> signaled_{false};
  Waiter waiter_;
  SetBinding set_;  // wait_obj FI_WAIT_SET
  ProvErrnoText prov_text_ = nullptr;  // last: the hot members keep their offsets
};

// The 1.0 layout of fi_cq_err_entry (before err_data_size), for api_version < 1.5 callers.
struct fi_cq_err_entry_1_0 {
  void* op_context;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data;
  uint64_t tag;
  size_t olen;
  int err;
  int prov_errno;
  void* err_data;
};

}  // namespace pollfab::core
