// Memory regions (fi_mr(3)): the Mr object and the domain's key map.
//
// Mr: one registration. fi_mr_desc() returns the Mr itself (mem_desc), fi_mr_key() its key.
// Not final: a provider that registers with a device (verbs: ibv_reg_mr) derives from it and
// releases the device registration in teardown(), which close() runs after the key is gone
// from the map and before the object is deleted.
//
// MrMap: the key -> Mr map of one domain. FI_MR_PROV_KEY domains assign keys from a counter
// (1, 2, ...; a key still in use is skipped); otherwise the application's requested key is
// used and must be unique in the domain (-FI_ENOKEY). find() is what the data path will use to
// check remote keys (today under the map's mutex; wave 2 makes lookups lock-free).
// Thread-safety: Mr is immutable after construction; MrMap is MT-safe (a mutex).
#pragma once
#include <sys/uio.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Domain;

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

 protected:
  // Provider hook: release what registration took (device registration). Default: nothing.
  virtual void teardown() noexcept {}

  FidBox<fid_mr> box_;
  Domain* dom_;
  std::vector<iovec> iov_;
  uint64_t access_;
  uint64_t offset_;
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
  bool prov_key() const noexcept { return prov_key_; }

 private:
  const bool prov_key_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Mr*> mrs_;  // reserved keys map to nullptr until set()
  uint64_t next_key_ = 1;
};

}  // namespace pollfab::core
