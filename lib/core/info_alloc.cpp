#include "lib/core/info_alloc.hpp"

#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace pollfab::core {
namespace {

// malloc + memcpy. A zero length still allocates one byte so a present-but-empty buffer stays
// non-null (and a null result always means out of memory).
void* mem_dup(const void* src, size_t len) noexcept {
  void* p = malloc(len ? len : 1);
  if (p && len) memcpy(p, src, len);
  return p;
}

template <class T>
T* struct_dup(const T* src) noexcept {
  return static_cast<T*>(mem_dup(src, sizeof(T)));
}

void close_nic(fid_nic* nic) noexcept {
  fi_ops* ops = nic->fid.ops;
  if (FI_CHECK_OP(ops, struct fi_ops, close)) ops->close(&nic->fid);
}

}  // namespace

fi_info* allocinfo() noexcept {
  auto* info = static_cast<fi_info*>(calloc(1, sizeof(fi_info)));
  if (!info) return nullptr;
  info->tx_attr = static_cast<fi_tx_attr*>(calloc(1, sizeof(fi_tx_attr)));
  info->rx_attr = static_cast<fi_rx_attr*>(calloc(1, sizeof(fi_rx_attr)));
  info->ep_attr = static_cast<fi_ep_attr*>(calloc(1, sizeof(fi_ep_attr)));
  info->domain_attr = static_cast<fi_domain_attr*>(calloc(1, sizeof(fi_domain_attr)));
  info->fabric_attr = static_cast<fi_fabric_attr*>(calloc(1, sizeof(fi_fabric_attr)));
  if (!info->tx_attr || !info->rx_attr || !info->ep_attr || !info->domain_attr ||
      !info->fabric_attr) {
    freeinfo(info);
    return nullptr;
  }
  return info;
}

fi_info* dupinfo(const fi_info* info) noexcept {
  if (!info) return allocinfo();

  fi_info* dup = struct_dup(info);
  if (!dup) return nullptr;
  // Clear every owned pointer first so freeinfo() on a partial copy frees only our memory.
  dup->next = nullptr;
  dup->src_addr = nullptr;
  dup->dest_addr = nullptr;
  dup->tx_attr = nullptr;
  dup->rx_attr = nullptr;
  dup->ep_attr = nullptr;
  dup->domain_attr = nullptr;
  dup->fabric_attr = nullptr;
  dup->nic = nullptr;  // duplicated below, by the nic itself (FI_DUP), as libfabric does

  if (info->nic) {  // as libfabric: a nic that cannot duplicate itself (-FI_ENOSYS) is left out
    fi_ops* ops = info->nic->fid.ops;
    if (FI_CHECK_OP(ops, struct fi_ops, control)) {
      if (const int r = ops->control(&info->nic->fid, FI_DUP, &dup->nic); r != 0) {
        dup->nic = nullptr;
        if (r != -FI_ENOSYS) goto fail;
      }
    }
  }
  if (info->src_addr) {
    dup->src_addr = mem_dup(info->src_addr, info->src_addrlen);
    if (!dup->src_addr) goto fail;
  }
  if (info->dest_addr) {
    dup->dest_addr = mem_dup(info->dest_addr, info->dest_addrlen);
    if (!dup->dest_addr) goto fail;
  }
  if (info->tx_attr) {
    dup->tx_attr = struct_dup(info->tx_attr);
    if (!dup->tx_attr) goto fail;
  }
  if (info->rx_attr) {
    dup->rx_attr = struct_dup(info->rx_attr);
    if (!dup->rx_attr) goto fail;
  }
  if (info->ep_attr) {
    dup->ep_attr = struct_dup(info->ep_attr);
    if (!dup->ep_attr) goto fail;
    dup->ep_attr->auth_key = nullptr;
    if (info->ep_attr->auth_key) {
      dup->ep_attr->auth_key = static_cast<uint8_t*>(
          mem_dup(info->ep_attr->auth_key, info->ep_attr->auth_key_size));
      if (!dup->ep_attr->auth_key) goto fail;
    }
  }
  if (info->domain_attr) {
    dup->domain_attr = struct_dup(info->domain_attr);
    if (!dup->domain_attr) goto fail;
    dup->domain_attr->name = nullptr;
    dup->domain_attr->auth_key = nullptr;
    if (info->domain_attr->name) {
      dup->domain_attr->name = strdup(info->domain_attr->name);
      if (!dup->domain_attr->name) goto fail;
    }
    if (info->domain_attr->auth_key) {
      dup->domain_attr->auth_key = static_cast<uint8_t*>(
          mem_dup(info->domain_attr->auth_key, info->domain_attr->auth_key_size));
      if (!dup->domain_attr->auth_key) goto fail;
    }
  }
  if (info->fabric_attr) {
    dup->fabric_attr = struct_dup(info->fabric_attr);
    if (!dup->fabric_attr) goto fail;
    dup->fabric_attr->name = nullptr;
    dup->fabric_attr->prov_name = nullptr;
    if (info->fabric_attr->name) {
      dup->fabric_attr->name = strdup(info->fabric_attr->name);
      if (!dup->fabric_attr->name) goto fail;
    }
    if (info->fabric_attr->prov_name) {
      dup->fabric_attr->prov_name = strdup(info->fabric_attr->prov_name);
      if (!dup->fabric_attr->prov_name) goto fail;
    }
  }
  return dup;

fail:
  freeinfo(dup);
  return nullptr;
}

fi_info* dupinfo_list(const fi_info* info) noexcept {
  fi_info* head = nullptr;
  fi_info** tail = &head;
  for (; info; info = info->next) {
    fi_info* d = dupinfo(info);
    if (!d) {
      freeinfo(head);
      return nullptr;
    }
    *tail = d;
    tail = &d->next;
  }
  return head;
}

void freeinfo(fi_info* info) noexcept {
  while (info) {
    fi_info* next = info->next;
    free(info->src_addr);
    free(info->dest_addr);
    free(info->tx_attr);
    free(info->rx_attr);
    if (info->ep_attr) {
      free(info->ep_attr->auth_key);
      free(info->ep_attr);
    }
    if (info->domain_attr) {
      free(info->domain_attr->auth_key);
      free(info->domain_attr->name);
      free(info->domain_attr);
    }
    if (info->fabric_attr) {
      free(info->fabric_attr->name);
      free(info->fabric_attr->prov_name);
      free(info->fabric_attr);
    }
    if (info->nic) close_nic(info->nic);
    free(info);
    info = next;
  }
}

}  // namespace pollfab::core
