#include "providers/verbs/rc_mr.hpp"

#include <infiniband/verbs.h>
#include <rdma/fi_domain.h>

namespace pollfab::providers::verbs {

RcMr::RcMr(core::Domain* dom, const iovec& iov, uint64_t access, RcMrCache& cache,
           RcMrCache::Entry* entry, void* context)
    : core::Mr(dom, &iov, 1, access, 0, entry->mr->rkey, context),
      cache_(cache), entry_(entry), lkey_(entry->mr->lkey) {}

void RcMr::teardown() noexcept {
  if (entry_) cache_.release(entry_);
  entry_ = nullptr;
}

int ibv_access_of(uint64_t fi_access) noexcept {
  // Local write where the device writes into the region (receives, READ results, remote
  // writes); not for send-only memory, which may be read-only. 0 means every local use.
  const bool local_write = fi_access == 0 || (fi_access & (FI_RECV | FI_READ | FI_REMOTE_WRITE));
  int a = local_write ? IBV_ACCESS_LOCAL_WRITE : 0;
  if (fi_access & FI_REMOTE_WRITE) a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  if (fi_access & FI_REMOTE_READ) a |= IBV_ACCESS_REMOTE_READ;
  return a;
}

}  // namespace pollfab::providers::verbs
