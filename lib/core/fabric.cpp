#include "lib/core/fabric.hpp"

#include "lib/core/eq.hpp"
#include "lib/core/provider.hpp"

namespace pollfab::core {
namespace {

Fabric* self(fid_fabric* f) { return Object::as<Fabric>(f); }

int tr_domain2(fid_fabric* f, fi_info* info, fid_domain** dom, uint64_t flags, void* ctx) {
  if (!f || !info || !dom) return -FI_EINVAL;
  return guarded([&] { return self(f)->open_domain(info, dom, flags, ctx); });
}
int tr_domain(fid_fabric* f, fi_info* info, fid_domain** dom, void* ctx) {
  return tr_domain2(f, info, dom, 0, ctx);
}
int tr_passive_ep(fid_fabric* f, fi_info* info, fid_pep** pep, void* ctx) {
  if (!f || !info || !pep) return -FI_EINVAL;
  return guarded([&] { return self(f)->open_passive_ep(info, pep, ctx); });
}
int tr_eq_open(fid_fabric* f, fi_eq_attr* attr, fid_eq** eq, void* ctx) {
  if (!f || !eq) return -FI_EINVAL;
  return guarded([&] { return self(f)->eq_open(attr, eq, ctx); });
}
int tr_trywait(fid_fabric*, fid**, int) { return -FI_ENOSYS; }

fi_ops_fabric g_fabric_ops = {
    .size = sizeof(fi_ops_fabric),
    .domain = tr_domain,
    .passive_ep = tr_passive_ep,
    .eq_open = tr_eq_open,
    .wait_open = PF_ENOSYS(fi_ops_fabric, wait_open),
    .trywait = tr_trywait,
    .domain2 = tr_domain2,
};

}  // namespace

Fabric::Fabric(Provider* prov, const fi_fabric_attr* attr, void* context) : prov_(prov) {
  api_version_ = attr && attr->api_version ? attr->api_version : kApiVersion;
  if (attr && attr->name) name_ = attr->name;
  init_fid(box_, FI_CLASS_FABRIC, context);
  box_.fid.ops = &g_fabric_ops;
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
