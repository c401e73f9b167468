// Fabric: base of every provider's fabric object (fi_fabric(3)). Opens EQs (provider-neutral)
// and domains (provider-specific, open_domain). Its fid's tables are ops_fid<Fabric> and
// ops_fabric<Fabric> until the provider's class installs its own (install_fabric_ops). Holds the API version the application asked
// for in fi_getinfo, which decides versioned behaviours (e.g. fi_cq_readerr's layout).
#pragma once
#include <string>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Provider;

class Fabric : public Object {
 public:
  Fabric(Provider* prov, const fi_fabric_attr* attr, void* context);
  ~Fabric() override;
  fid_fabric* fid() noexcept { return &box_.fid; }
  Provider* provider() const noexcept { return prov_; }
  uint32_t api_version() const noexcept { return api_version_; }
  const std::string& name() const noexcept { return name_; }

  int close() override;
  // fi_domain(3): the provider opens its domain for info (validated by the caller).
  virtual int open_domain(fi_info* info, fid_domain** dom, uint64_t flags, void* context) = 0;
  // fi_eq_open(3): the provider-neutral EQ.
  int eq_open(fi_eq_attr* attr, fid_eq** eq, void* context);
  // fi_trywait (fi_poll(3)): 0 if the caller may block on the FI_GETWAIT objects of
  // fids[0..count) (CQs, counters, EQs); -FI_EAGAIN if one has events queued or its domain's
  // wait source could not arm (read them, then try again); -FI_EINVAL (null or empty array, an
  // object without a native wait object, objects of different wait kinds, another class).
  int trywait(struct fid** fids, int count) noexcept;
  // fi_wait_open (fi_poll(3)): a wait set (lib/core/wait_set.hpp). -FI_EINVAL (null attr or
  // out-pointer, flags, FI_WAIT_NONE), -FI_ENOSYS (FI_WAIT_SET, FI_WAIT_POLLFD).
  int wait_open(fi_wait_attr* attr, fid_wait** waitset);
  // Further fi_ops_fabric calls (fi_passive_ep) are members of the
  // provider's fabric class, which installs install_fabric_ops<Self>() (lib/core/ops_fabric.hpp).

 protected:
  FidBox<fid_fabric> box_;
  Provider* prov_;
  uint32_t api_version_;
  std::string name_;
};

}  // namespace pollfab::core
