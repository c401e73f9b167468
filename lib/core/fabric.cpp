#include "lib/core/fabric.hpp"

#include "lib/core/cntr.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/eq.hpp"
#include "lib/core/ops_fabric.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/provider.hpp"
#include "lib/core/wait_set.hpp"

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

int Fabric::trywait(struct fid** fids, int count) noexcept {
  if (!fids || count <= 0) return -FI_EINVAL;
  fi_wait_obj kind = FI_WAIT_NONE;
  for (int i = 0; i < count; ++i) {  // one kind of native object for the whole call
    if (!fids[i]) return -FI_EINVAL;
    fi_wait_obj k;
    switch (fids[i]->fclass) {
      case FI_CLASS_CQ: k = Object::as<Cq>(fids[i])->wait_kind(); break;
      case FI_CLASS_CNTR: k = Object::as<Cntr>(fids[i])->wait_kind(); break;
      case FI_CLASS_EQ: k = Object::as<Eq>(fids[i])->wait_kind(); break;
      case FI_CLASS_WAIT: k = Object::as<WaitSet>(fids[i])->wait_kind(); break;
      default: return -FI_EINVAL;
    }
    if (k == FI_WAIT_UNSPEC) k = FI_WAIT_FD;
    if (i && k != kind) return -FI_EINVAL;
    kind = k;
  }
  for (int i = 0; i < count; ++i) {
    int r;
    switch (fids[i]->fclass) {
      case FI_CLASS_CQ: r = Object::as<Cq>(fids[i])->trywait(); break;
      case FI_CLASS_CNTR: r = Object::as<Cntr>(fids[i])->trywait(); break;
      case FI_CLASS_WAIT: r = Object::as<WaitSet>(fids[i])->trywait(); break;
      default: r = Object::as<Eq>(fids[i])->trywait(); break;
    }
    if (r) return r;
  }
  return 0;
}

int Fabric::wait_open(fi_wait_attr* attr, fid_wait** waitset) {
  if (!waitset) return -FI_EINVAL;
  if (int r = WaitSet::validate(attr)) return r;
  auto* w = new WaitSet(this, *attr, nullptr);
  *waitset = w->fid();
  return 0;
}

int Fabric::eq_open(fi_eq_attr* attr, fid_eq** eq, void* context) {
  if (attr) {
    if (int r = SetBinding::validate(attr->wait_obj, attr->wait_set)) return r;
    if (attr->flags & ~FI_WRITE) return -FI_EINVAL;
  }
  auto* e = new Eq(this, attr, context);
  *eq = e->fid();
  return 0;
}

}  // namespace pollfab::core
