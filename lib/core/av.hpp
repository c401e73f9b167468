// Av: the provider-neutral address vector (fi_av(3)) for FI_AV_TABLE, FI_AV_MAP and
// FI_AV_UNSPEC (= TABLE). fi_addr_t values are indices in insertion order for both types
// (FI_AV_MAP allows any value; indices keep lookups O(1)). Entries are the provider's fixed-size
// binary names (AddressFormat::len bytes, at most 64); one entry costs len + 1 bytes plus the
// reverse-lookup hash entry.
//
// insert: returns the number inserted; an invalid address gets FI_ADDR_NOTAVAIL (and, with
// FI_SYNC_ERR, its error code in the context int array). With a bound EQ (FI_EVENT) the count
// is reported as an FI_AV_COMPLETE event and insert returns 0. remove: -FI_EINVAL for an
// unknown fi_addr. lookup: -FI_EINVAL for an unknown fi_addr; copies min(*addrlen, len) bytes
// and sets *addrlen to the name's length.
// Thread-safety: MT-safe (a mutex; the AV is a control-path object, lookups by providers on
// the data path read it through entry(), once per fi_addr, and cache what they need).
#pragma once
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Eq;

// The provider's address format: size, validation and printing (fi_av_straddr).
class AddressFormat {
 public:
  virtual ~AddressFormat() = default;
  virtual size_t len() const noexcept = 0;
  virtual bool valid(const void* addr, size_t len) const noexcept = 0;
  virtual std::string str(const void* addr, size_t len) const = 0;
};

class Av final : public Object {
 public:
  static int validate(const fi_av_attr* attr) noexcept;
  Av(Object* owner, const AddressFormat& fmt, const fi_av_attr* attr, void* context);
  fid_av* fid() noexcept { return &box_.fid; }
  int close() override;
  Object* owner() const noexcept { return owner_; }
  int bind(struct fid* bfid, uint64_t flags);

  int insert(const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context);
  int remove(fi_addr_t* fi_addr, size_t count, uint64_t flags);
  int lookup(fi_addr_t fi_addr, void* addr, size_t* addrlen);
  const char* straddr(const void* addr, char* buf, size_t* len);

  // Copies the name stored at fi_addr into out (len >= addrlen()); false if unknown/removed.
  // Takes the AV lock: endpoints call it once per fi_addr and cache the result.
  bool entry(fi_addr_t fi_addr, uint8_t* out, size_t len) const noexcept {
    std::lock_guard<std::mutex> g(mu_);
    if (fi_addr >= slots_.size() || !slots_[fi_addr].valid || len < fmt_.len()) return false;
    std::memcpy(out, slots_[fi_addr].bytes, fmt_.len());
    return true;
  }
  // Reverse lookup of a name (FI_SOURCE / unknown senders); FI_ADDR_NOTAVAIL if absent.
  fi_addr_t reverse(const void* addr) const;
  // Bumped by every remove(): endpoints drop cached fi_addr -> peer mappings when it changes.
  uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  fi_av_type type() const noexcept { return type_; }
  size_t addrlen() const noexcept { return fmt_.len(); }

  static constexpr size_t kMaxAddrLen = 64;

 private:
  struct Slot {
    bool valid = false;
    uint8_t bytes[kMaxAddrLen] = {};
  };

  FidBox<fid_av> box_;
  Object* owner_;
  const AddressFormat& fmt_;
  fi_av_type type_;
  Eq* eq_ = nullptr;
  mutable std::mutex mu_;
  std::deque<Slot> slots_;  // stable addresses as it grows
  std::unordered_map<std::string, fi_addr_t> index_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace pollfab::core
