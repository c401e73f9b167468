// Fabric: base of every provider's fabric object (fi_fabric(3)). Opens EQs (provider-neutral)
// and domains (provider-specific, open_domain). Holds the API version the application asked
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
  virtual int open_passive_ep(fi_info* info, fid_pep** pep, void* context) { return -FI_ENOSYS; }
  int eq_open(fi_eq_attr* attr, fid_eq** eq, void* context);

 protected:
  FidBox<fid_fabric> box_;
  Provider* prov_;
  uint32_t api_version_;
  std::string name_;
};

}  // namespace pollfab::core
