#include "lib/core/av.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cstdlib>

#include "lib/core/eq.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/ops_queues.hpp"

namespace pollfab::core {
int Av::validate(const fi_av_attr* attr) noexcept {
  if (!attr) return -FI_EINVAL;
  switch (attr->type) {
    case FI_AV_UNSPEC: case FI_AV_TABLE: case FI_AV_MAP: break;
    default: return -FI_EINVAL;
  }
  if (attr->rx_ctx_bits) return -FI_ENOSYS;  // scalable endpoints: not yet
  if (attr->name) return -FI_ENOSYS;         // named (shared) AVs: not yet
  if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC)) return -FI_EINVAL;
  return 0;
}

Av::Av(Object* owner, const AddressFormat& fmt, const fi_av_attr* attr, void* context)
    : owner_(owner), fmt_(fmt) {
  type_ = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
  init_fid(box_, FI_CLASS_AV, context, &ops_fid<Av>);
  box_.fid.ops = &ops_av<Av>;
  owner_->ref();
}

int Av::close() {
  if (refs()) return -FI_EBUSY;
  if (eq_) eq_->unref();
  owner_->unref();
  delete this;
  return 0;
}

int Av::bind(struct fid* bfid, uint64_t flags) {
  if (bfid->fclass != FI_CLASS_EQ) return -FI_EINVAL;
  std::lock_guard<std::mutex> g(mu_);
  if (eq_) return -FI_EINVAL;
  eq_ = Object::as<Eq>(bfid);
  eq_->ref();
  return 0;
}

template <class F>
int Av::insert_each(size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context, F&& name) {
  if (flags & ~(FI_MORE | FI_SYNC_ERR)) return -FI_EINVAL;
  const size_t len = fmt_.len();
  int* errors = (flags & FI_SYNC_ERR) ? static_cast<int*>(context) : nullptr;
  int inserted = 0;
  uint8_t a[kMaxAddrLen];
  for (size_t i = 0; i < count; ++i) {
    // Converted (and, for names that need it, resolved) outside the lock: resolution may wait
    // on the network (ARP) for a bounded time.
    int err = name(i, a);
    if (err) {
      if (fi_addr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      if (errors) errors[i] = err;
      continue;
    }
    std::string key = fmt_.identity(a);
    fi_addr_t idx;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        idx = it->second;  // the same name twice maps to the same fi_addr
      } else {
        Slot s;
        s.valid = true;
        std::memcpy(s.bytes, a, len);
        slots_.push_back(s);
        idx = slots_.size() - 1;
        index_.emplace(std::move(key), idx);
      }
    }
    if (fi_addr) fi_addr[i] = idx;
    if (errors) errors[i] = 0;
    ++inserted;
  }
  if (eq_) {
    fi_eq_entry ev{};
    ev.context = context;
    ev.data = static_cast<uint64_t>(inserted);
    eq_->write(FI_AV_COMPLETE, &ev, sizeof ev, 0);
    return 0;
  }
  return inserted;
}

int Av::insert(const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  if (!addr && count) return -FI_EINVAL;
  return insert_each(count, fi_addr, flags, context,
                     [&](size_t i, uint8_t* out) { return fmt_.import(addr, i, out); });
}

int Av::insertsvc(const char* node, const char* service, fi_addr_t* fi_addr, uint64_t flags,
                  void* context) {
  if (!node && !service) return -FI_EINVAL;
  return insert_each(1, fi_addr, flags, context,
                     [&](size_t, uint8_t* out) { return fmt_.from_service(node, service, out); });
}

namespace {

// The k-th node of a symmetric range from `node`: an IPv4 address plus k, or a host name whose
// trailing decimal number (keeping its width) is increased by k. Empty if node cannot count.
std::string nth_node(const std::string& node, size_t k) {
  if (k == 0) return node;
  in_addr a{};
  if (inet_pton(AF_INET, node.c_str(), &a) == 1) {
    a.s_addr = htonl(ntohl(a.s_addr) + static_cast<uint32_t>(k));
    char buf[INET_ADDRSTRLEN];
    return inet_ntop(AF_INET, &a, buf, sizeof buf) ? std::string(buf) : std::string();
  }
  size_t d = node.size();
  while (d > 0 && std::isdigit(static_cast<unsigned char>(node[d - 1]))) --d;
  if (d == node.size()) return {};
  const std::string digits = node.substr(d);
  std::string n = std::to_string(std::stoull(digits) + k);
  if (n.size() < digits.size()) n.insert(0, digits.size() - n.size(), '0');
  return node.substr(0, d) + n;
}

}  // namespace

int Av::insertsym(const char* node, size_t nodecnt, const char* service, size_t svccnt,
                  fi_addr_t* fi_addr, uint64_t flags, void* context) {
  if (!node || !service || !nodecnt || !svccnt) return -FI_EINVAL;
  char* end = nullptr;
  const unsigned long first = strtoul(service, &end, 10);
  if (!*service || *end || first == 0 || first + svccnt - 1 > 65535) return -FI_EINVAL;
  const std::string base(node);
  return insert_each(nodecnt * svccnt, fi_addr, flags, context, [&](size_t i, uint8_t* out) {
    const std::string n = nth_node(base, i / svccnt);
    if (n.empty()) return -FI_EINVAL;
    const std::string svc = std::to_string(first + i % svccnt);
    return fmt_.from_service(n.c_str(), svc.c_str(), out);
  });
}

int Av::remove(fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  std::lock_guard<std::mutex> g(mu_);
  for (size_t i = 0; i < count; ++i)
    if (fi_addr[i] >= slots_.size() || !slots_[fi_addr[i]].valid) return -FI_EINVAL;
  for (size_t i = 0; i < count; ++i) {
    Slot& s = slots_[fi_addr[i]];
    index_.erase(fmt_.identity(s.bytes));
    s.valid = false;
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return 0;
}

int Av::lookup(fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  std::lock_guard<std::mutex> g(mu_);
  if (fi_addr >= slots_.size() || !slots_[fi_addr].valid) return -FI_EINVAL;
  if (fmt_.app_format() == FI_FORMAT_UNSPEC) {
    size_t n = std::min(*addrlen, fmt_.len());
    if (addr && n) std::memcpy(addr, slots_[fi_addr].bytes, n);
    *addrlen = fmt_.len();
    return 0;
  }
  // fi_av_lookup(3): a buffer too small gets what fits (here: nothing partial of a non-binary
  // form) and the size needed; the call still succeeds as for binary names.
  int r = fmt_.export_to(slots_[fi_addr].bytes, addr, addrlen);
  return r == -FI_ETOOSMALL ? 0 : r;
}

const char* Av::straddr(const void* addr, char* buf, size_t* len) {
  std::string s = fmt_.str(addr, fmt_.len());
  if (buf && *len) {
    size_t n = std::min(*len - 1, s.size());
    std::memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  *len = s.size() + 1;
  return buf;
}

fi_addr_t Av::reverse(const void* addr) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = index_.find(fmt_.identity(static_cast<const uint8_t*>(addr)));
  return it == index_.end() ? FI_ADDR_NOTAVAIL : it->second;
}

}  // namespace pollfab::core
