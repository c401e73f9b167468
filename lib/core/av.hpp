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

#include <rdma/fi_errno.h>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Eq;

// The provider's address format: the binary name the AV stores (len() bytes), and the form the
// application uses (fi_info addr_format: the binary name itself for FI_FORMAT_UNSPEC, or e.g.
// FI_SOCKADDR_IN, FI_ADDR_STR) in fi_av_insert, fi_av_lookup, fi_getname and fi_av_straddr.
class AddressFormat {
 public:
  virtual ~AddressFormat() = default;
  // Bytes of one binary name (at most Av::kMaxAddrLen).
  virtual size_t len() const noexcept = 0;
  virtual bool valid(const void* addr, size_t len) const noexcept = 0;
  // fi_av_straddr text of an address in the application's form.
  virtual std::string str(const void* addr, size_t len) const = 0;
  // The application's form (an FI_ADDR format; FI_FORMAT_UNSPEC = the binary name).
  virtual uint32_t app_format() const noexcept { return FI_FORMAT_UNSPEC; }
  // Element i of an fi_av_insert array in the application's form (binary names packed len()
  // bytes apart, FI_ADDR_STR a char* array, ...) -> the binary name at out (len() bytes).
  // Returns 0, -FI_EINVAL (malformed) or the provider's resolution error (e.g.
  // -FI_EHOSTUNREACH: the name's link address did not resolve).
  virtual int import(const void* addrs, size_t i, uint8_t* out) const noexcept {
    const auto* a = static_cast<const uint8_t*>(addrs) + i * len();
    if (!valid(a, len())) return -FI_EINVAL;
    std::memcpy(out, a, len());
    return 0;
  }
  // The binary name -> the application's form in buf (*buflen bytes of room; *buflen is set
  // to the size of the form). Returns 0 or -FI_ETOOSMALL (buf null or too small).
  virtual int export_to(const uint8_t* name, void* buf, size_t* buflen) const noexcept {
    const size_t need = len();
    const bool fits = buf && *buflen >= need;
    if (fits) std::memcpy(buf, name, need);
    *buflen = need;
    return fits ? 0 : -FI_ETOOSMALL;
  }
  // The bytes that identify the endpoint a binary name names: two names with the same identity
  // are one peer (fi_av_insert maps them to one fi_addr, and a received packet's sender, named
  // by what the link shows, finds its fi_addr by it). Default: every byte.
  virtual std::string identity(const uint8_t* name) const {
    return std::string(reinterpret_cast<const char*>(name), len());
  }
  // fi_av_insertsvc / fi_av_insertsym: the binary name of node:service (node may also be an
  // FI_ADDR_STR text with service null). Returns 0, -FI_EINVAL (malformed), -FI_ENODATA (node
  // unknown), -FI_ENOSYS (the provider has no such names) or a resolution error.
  virtual int from_service(const char* node, const char* service, uint8_t* out) const noexcept {
    (void)node, (void)service, (void)out;
    return -FI_ENOSYS;
  }
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
  // fi_av_insertsvc: one address by node and service (AddressFormat::from_service). Returns 1
  // (or 0 with a bound EQ), 0 with *fi_addr = FI_ADDR_NOTAVAIL if it did not resolve, or
  // -FI_EINVAL (bad flags or arguments).
  int insertsvc(const char* node, const char* service, fi_addr_t* fi_addr, uint64_t flags,
                void* context);
  // fi_av_insertsym: nodecnt nodes from node on (an IPv4 address counts up; a host name's
  // trailing number counts up, keeping its width) times svccnt services from service on, all
  // services of a node before the next node. Returns the number inserted like insert.
  int insertsym(const char* node, size_t nodecnt, const char* service, size_t svccnt,
                fi_addr_t* fi_addr, uint64_t flags, void* context);
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
  // Inserts count names produced by name(i, out) -> 0 or -FI_E*; the common tail of the
  // insert calls (errors per element with FI_SYNC_ERR, the FI_AV_COMPLETE event).
  template <class F>
  int insert_each(size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context, F&& name);

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
