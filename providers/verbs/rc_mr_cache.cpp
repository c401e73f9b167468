#include "providers/verbs/rc_mr_cache.hpp"

#include <infiniband/verbs.h>

#include <iterator>

namespace pollfab::providers::verbs {
namespace {
constexpr int kRemote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
}  // namespace

RcMrCache::~RcMrCache() {
  for (Entry& e : entries_)
    if (e.mr) ibv_dereg_mr(e.mr);
}

RcMrCache::Entry* RcMrCache::acquire(void* addr, size_t len, int access) {
  const auto start = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_start_.upper_bound(start);
  for (int n = 0; n < kLookupDepth && it != by_start_.begin(); ++n) {
    Entry& e = *(--it)->second;
    // Remote access must match exactly: closing a region must revoke what its key allowed.
    if (e.start <= start && start + len <= e.start + e.len && (e.access & access) == access &&
        (e.access & kRemote) == (access & kRemote)) {
      ++e.users;
      ++stats_.hits;
      return &e;
    }
  }
  ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access);
  if (!mr) return nullptr;
  ++stats_.misses;
  try {
    entries_.push_back(Entry{mr, start, len, access, 1});
    by_start_.emplace(start, std::prev(entries_.end()));
  } catch (...) {
    if (!entries_.empty() && entries_.back().mr == mr) entries_.pop_back();
    ibv_dereg_mr(mr);
    throw;
  }
  ++stats_.live;
  return &entries_.back();
}

void RcMrCache::release(Entry* e) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  if (--e->users > 0) return;
  auto [lo, hi] = by_start_.equal_range(e->start);
  for (auto it = lo; it != hi; ++it)
    if (&*it->second == e) {
      ibv_dereg_mr(e->mr);
      entries_.erase(it->second);
      by_start_.erase(it);
      --stats_.live;
      return;
    }
}

RcMrCache::Stats RcMrCache::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

}  // namespace pollfab::providers::verbs
