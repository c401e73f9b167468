// Memory regions (fi_mr(3)): the Mr object and the domain's key map.
//
// Mr: one registration. fi_mr_desc() returns the Mr itself (mem_desc), fi_mr_key() its key.
// Not final: a provider that registers with a device (verbs: ibv_reg_mr) derives from it and
// releases the device registration in teardown(), which close() runs after the key is gone
// from the map and before the object is deleted.
//
// Remote access (fi_mr(3), fi_rma(3)): resolve() turns a target address into a local one, as a
// virtual address (FI_MR_VIRT_ADDR) or as an offset into the region (less the registration's
// offset); bind() attaches counters (FI_REMOTE_WRITE / FI_REMOTE_READ, the FI_RMA_EVENT
// counters) that remote_access() bumps.
//
// MrMap: the key -> Mr map of one domain. FI_MR_PROV_KEY domains assign keys from a counter
// (1, 2, ...; a key still in use is skipped); otherwise the application's requested key is
// used and must be unique in the domain (-FI_ENOKEY). find() takes the map's mutex;
// find_serialised() takes none, for the data path: every change of the map happens with the
// owning domain's lock held too (Domain::mr_reg, Mr::close), and the data path holds that lock.
// Thread-safety: Mr is immutable after construction except its counter bindings (bind before
// use); MrMap is MT-safe (a mutex) except find_serialised (see above).
#pragma once
#include <sys/uio.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Domain;

// What a domain's mr_mode (fi_domain(3) domain_attr->mr_mode) asks of its regions. The legacy
// FI_MR_BASIC means FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY (fi_mr(3)).
inline bool mr_mode_prov_key(int mode) noexcept { return mode == FI_MR_BASIC || (mode & FI_MR_PROV_KEY); }
inline bool mr_mode_virt_addr(int mode) noexcept { return mode == FI_MR_BASIC || (mode & FI_MR_VIRT_ADDR); }

class Mr : public Object {
 public:
  // iov: count entries (count >= 1), copied. key: the key MrMap::reserve() gave.
  Mr(Domain* dom, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key,
     void* context);
  ~Mr() override;
  fid_mr* fid() noexcept { return &box_.fid; }
  // fi_close(3): -FI_EBUSY while referenced; else removes the key, teardown(), deletes.
  int close() override;
  uint64_t key() const noexcept { return box_.fid.key; }
  uint64_t access() const noexcept { return access_; }
  uint64_t offset() const noexcept { return offset_; }
  Domain* domain() const noexcept { return dom_; }
  // True if [addr, addr+len) lies in the region (by virtual address).
  bool contains(const void* addr, size_t len) const noexcept;
  // The local address of [addr, addr + len) for a remote access: addr is a virtual address
  // (virt_addr) or an offset into the region (minus offset()); the range must lie in one of
  // the region's iovs. nullptr if it does not (or wraps).
  uint8_t* resolve(uint64_t addr, uint64_t len, bool virt_addr) const noexcept;
  // fi_mr_bind(3): a counter with FI_REMOTE_WRITE and/or FI_REMOTE_READ (bumped by remote
  // writes / reads of the region). Errors: -FI_EINVAL (not a counter of this domain),
  // -FI_EBADFLAGS (other flags).
  int bind(struct fid* bfid, uint64_t flags);
  // A remote access completed: bumps the bound counters (write: FI_REMOTE_WRITE's, read:
  // FI_REMOTE_READ's).
  void remote_access(bool read, bool write) noexcept;

 protected:
  // Provider hook: release what registration took (device registration). Default: nothing.
  virtual void teardown() noexcept {}

  FidBox<fid_mr> box_;
  Domain* dom_;
  std::vector<iovec> iov_;
  uint64_t access_;
  uint64_t offset_;
  class Cntr* rwrite_cntr_ = nullptr;
  class Cntr* rread_cntr_ = nullptr;
};

class MrMap {
 public:
  explicit MrMap(bool prov_key) : prov_key_(prov_key) {}
  // Reserves a key for a new region: the next free provider key (FI_MR_PROV_KEY), or
  // `requested`. Returns 0 and sets key, or -FI_ENOKEY (requested key in use). The key stays
  // reserved until remove(); set() attaches the region.
  int reserve(uint64_t requested, uint64_t& key);
  void set(uint64_t key, Mr* mr) noexcept;
  void remove(uint64_t key) noexcept;
  // The region with this key, nullptr if none.
  Mr* find(uint64_t key) const noexcept;
  // find() without the mutex: the caller holds the owning domain's lock (see above).
  Mr* find_serialised(uint64_t key) const noexcept {
    auto it = mrs_.find(key);
    return it == mrs_.end() ? nullptr : it->second;
  }
  bool prov_key() const noexcept { return prov_key_; }

 private:
  const bool prov_key_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Mr*> mrs_;  // reserved keys map to nullptr until set()
  uint64_t next_key_ = 1;
};

}  // namespace pollfab::core
