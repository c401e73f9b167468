// Domain: base of every provider's domain (fi_domain(3)). Opens the provider-neutral CQs,
// counters and AVs, registers memory (fi_mr(3); mr_reg is virtual: a provider that registers
// with its device overrides it and creates its own Mr subclass), and delegates endpoints and
// progress to the provider. Under FI_PROGRESS_MANUAL, CQ/counter reads call progress(); under
// FI_PROGRESS_AUTO the provider's thread does.
// Its fid's tables are ops_domain<Domain> / ops_mr<Domain> until the provider's class installs
// its own (install_domain_ops<Self>, lib/core/ops_domain.hpp), which is how a provider adds
// calls the base lacks (srx_ctx, poll_open, query_atomic, ...).
// Thread-safety follows the domain's threading attribute: with FI_THREAD_SAFE the provider's
// progress and data calls take lock(); other levels rely on the application (fi_domain(3)).
#pragma once
#include "lib/core/av.hpp"
#include "lib/core/errors.hpp"
#include "lib/core/fid.hpp"
#include "lib/core/mr.hpp"
#include "lib/core/progress.hpp"
#include "lib/util/spinlock.hpp"

namespace pollfab::core {

class Fabric;

class Domain : public Object, public Progressable {
 public:
  // info: the fi_info the application passed to fi_domain (copied).
  Domain(Fabric* fabric, const fi_info* info, void* context);
  ~Domain() override;
  fid_domain* fid() noexcept { return &box_.fid; }
  Fabric* fabric() const noexcept { return fabric_; }
  const fi_info* info() const noexcept { return info_; }
  // domain_attr->name of the info it was opened with ("" if none).
  const char* name() const noexcept {
    return info_->domain_attr && info_->domain_attr->name ? info_->domain_attr->name : "";
  }
  uint32_t api_version() const noexcept;
  // domain_attr->threading it was opened with (fi_domain(3); UNSPEC reads as FI_THREAD_SAFE's
  // caution is not needed: getinfo fills a level in, FI_THREAD_DOMAIN by default).
  fi_threading threading() const noexcept {
    return info_->domain_attr && info_->domain_attr->threading != FI_THREAD_UNSPEC
               ? info_->domain_attr->threading
               : FI_THREAD_DOMAIN;
  }
  // FI_THREAD_SAFE: any thread may call anything at once (CQ readers take a lock).
  bool thread_safe() const noexcept { return threading() == FI_THREAD_SAFE; }
  // The lock of the domain's data path: its own, or one it shares with other domains
  // (share_lock: transport domains on one port share that port's lock).
  util::MaybeLock& lock() noexcept { return *lock_ptr_; }
  // domain_attr->data_progress of the info it was opened with is FI_PROGRESS_AUTO: a thread
  // progresses it, and CQ and counter reads do not (docs/progress.md).
  bool auto_progress() const noexcept {
    return info_->domain_attr && info_->domain_attr->data_progress == FI_PROGRESS_AUTO;
  }
  // What CQ and counter reads drive and sleep on: this domain under manual progress; none
  // under automatic progress (the thread writes completions and wakes the readers).
  Progressable* reads_progress() noexcept { return auto_progress() ? nullptr : this; }

  int close() override;

  // Provider hooks.
  virtual int open_endpoint(fi_info* info, fid_ep** ep, uint64_t flags, void* context) = 0;
  virtual const AddressFormat& address_format() const noexcept = 0;
  void progress() noexcept override = 0;
  // What fi_cq_strerror of this domain's CQs names a prov_errno by (null: an FI_E* code).
  virtual ProvErrnoText prov_errno_text() const noexcept { return nullptr; }
  // Called by close() once nothing references the domain, before the object is deleted.
  virtual void teardown() noexcept {}

  int av_open(fi_av_attr* attr, fid_av** av, void* context);
  int cq_open(fi_cq_attr* attr, fid_cq** cq, void* context);
  int cntr_open(fi_cntr_attr* attr, fid_cntr** cntr, void* context);
  // fi_poll_open (fi_poll(3)): a poll set over CQs and counters (lib/core/poll_set.hpp).
  int poll_open(fi_poll_attr* attr, fid_poll** pollset);
  // fi_mr_reg / regv / regattr (fi_mr(3)). Default: a core::Mr over the iov (1..4 entries),
  // key from mrs(). Returns 0, -FI_EINVAL (count, access bits), -FI_EBADFLAGS, -FI_ENOKEY
  // (requested key in use), -FI_EFAULT (memory that is not mapped: a remote access would
  // fault in the target process).
  virtual int mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset,
                     uint64_t key, uint64_t flags, fid_mr** mr, void* context);
  // The domain's memory regions by key.
  MrMap& mrs() noexcept { return mrs_; }

 protected:
  FidBox<fid_domain> box_;
  Fabric* fabric_;
  fi_info* info_ = nullptr;
  // Makes lock() the given lock (which must outlive the domain).
  void share_lock(util::MaybeLock& l) noexcept { lock_ptr_ = &l; }
  util::MaybeLock lock_;
  util::MaybeLock* lock_ptr_ = &lock_;
  MrMap mrs_;
};

}  // namespace pollfab::core
