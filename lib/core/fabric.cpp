#include "lib/core/fabric.hpp"

#include "lib/core/eq.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/provider.hpp"

namespace pollfab::core {

Fabric::Fabric(Provider* prov, const fi_fabric_attr* attr, void* context) : prov_(prov) {
  api_version_ = attr && attr->api_version ? attr->api_version : kApiVersion;
  if (attr && attr->name) name_ = attr->name;
  init_fid(box_, FI_CLASS_FABRIC, context, &ops_fid<Fabric>);
  box_.fid.ops = &ops_fabric<Fabric>;
}

Fabric::~Fabric() = default;

int Fabric::close() {
  if (refs()) return -FI_EBUSY;
  delete this;
  return 0;
}

int Fabric::eq_open(fi_eq_attr* attr, fid_eq** eq, void* context) {
  if (attr) {
    switch (attr->wait_obj) {
      case FI_WAIT_NONE: case FI_WAIT_UNSPEC: case FI_WAIT_MUTEX_COND: case FI_WAIT_YIELD: break;
      default: return -FI_ENOSYS;
    }
    if (attr->flags & ~FI_WRITE) return -FI_EINVAL;
  }
  auto* e = new Eq(this, attr, context);
  *eq = e->fid();
  return 0;
}

}  // namespace pollfab::core
