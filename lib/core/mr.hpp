// Mr: a memory region (fi_mr(3)). Keys: FI_MR_PROV_KEY domains assign them (a counter);
// otherwise the requested key is used and must be unique in the domain (-FI_ENOKEY).
// fi_mr_desc() returns the Mr itself (mem_desc); fi_mr_key() its key.
// Thread-safety: registration is serialised by the domain's MR lock.
#pragma once
#include <sys/uio.h>

#include <vector>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Domain;

class Mr final : public Object {
 public:
  Mr(Domain* dom, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key,
     void* context);
  fid_mr* fid() noexcept { return &box_.fid; }
  int close() override;
  uint64_t key() const noexcept { return box_.fid.key; }
  uint64_t access() const noexcept { return access_; }
  // True if [addr, addr+len) lies in the region (by virtual address).
  bool contains(const void* addr, size_t len) const noexcept;

 private:
  FidBox<fid_mr> box_;
  Domain* dom_;
  std::vector<iovec> iov_;
  uint64_t access_;
  uint64_t offset_;
};

}  // namespace pollfab::core
