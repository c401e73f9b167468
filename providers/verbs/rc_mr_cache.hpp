// RcMrCache: one device registration (ibv_reg_mr) shared by every fi_mr_reg of the same memory
// in a domain while any of them is open (fi_verbs(7) "memory registration cache"): a second
// registration of a range that an open one covers, with local access it allows and the same
// remote access, costs no system call
// and no pinned pages, and gets the same keys. The device registration goes when its last
// user closes. Registrations are not kept after that: without memory hooks, a freed and
// remapped range would be served stale pages (libfabric's cache needs its memhooks for that).
// Lookup: the registrations starting at or below the range, nearest first, at most
// kLookupDepth of them. Thread-safety: MT-safe (a mutex; control path).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>

struct ibv_mr;
struct ibv_pd;

namespace pollfab::providers::verbs {

class RcMrCache {
 public:
  static constexpr int kLookupDepth = 16;
  struct Entry {
    ibv_mr* mr = nullptr;
    uintptr_t start = 0;
    size_t len = 0;
    int access = 0;  // ibv_access_flags
    int users = 0;
  };
  struct Stats {
    uint64_t hits = 0, misses = 0, live = 0;
  };

  explicit RcMrCache(ibv_pd* pd) : pd_(pd) {}
  ~RcMrCache();  // deregisters what is left (the domain's MRs are closed first)
  // A registration covering [addr, addr + len) with at least `access` (and exactly its remote
// access: a region's close must revoke what its key allowed remotely): an open one, or a new
  // one (errno set and nullptr if ibv_reg_mr fails).
  Entry* acquire(void* addr, size_t len, int access);
  // One user fewer; the last one deregisters.
  void release(Entry* e) noexcept;
  Stats stats() const;

 private:
  ibv_pd* pd_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;
  std::multimap<uintptr_t, std::list<Entry>::iterator> by_start_;
  Stats stats_;
};

}  // namespace pollfab::providers::verbs
