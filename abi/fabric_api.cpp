// fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_version, fi_open (fabric(3), fi_getinfo(3)).
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <cstring>

#include "abi/export.hpp"
#include "abi/providers.hpp"
#include "lib/core/getinfo.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/provider.hpp"

using namespace pollfab;

PF_EXPORT uint32_t fi_version(void) { return core::kApiVersion; }

PF_EXPORT int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
                         const struct fi_info* hints, struct fi_info** info) {
  abi::ensure_providers();
  return core::getinfo(version, node, service, flags, hints, info);
}

PF_EXPORT void fi_freeinfo(struct fi_info* info) { core::freeinfo(info); }

PF_EXPORT struct fi_info* fi_dupinfo(const struct fi_info* info) { return core::dupinfo(info); }

PF_EXPORT int fi_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  if (!attr || !attr->name || !attr->prov_name || !fabric) return -FI_EINVAL;
  abi::ensure_providers();
  // Layered names ("a;b") dispatch on the last part, like libfabric.
  const char* name = strrchr(attr->prov_name, ';');
  name = name ? name + 1 : attr->prov_name;
  core::Provider* p = core::find_provider(name);
  if (!p) return -FI_ENODEV;
  try {
    return p->fabric(attr, fabric, context);
  } catch (...) {
    return -FI_ENOMEM;
  }
}

PF_EXPORT int fi_open(uint32_t version, const char* name, void* attr, size_t attr_len,
                      uint64_t flags, struct fid** fid, void* context) {
  // No named objects yet (libfabric has "mr_cache"): callers treat -FI_ENOSYS as absent.
  return -FI_ENOSYS;
}
