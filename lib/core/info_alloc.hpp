// struct fi_info lifetime: fi_allocinfo / fi_dupinfo / fi_freeinfo (libfabric 1.17 src/fabric.c
// semantics). The ABI shim exports the C symbols and forwards here.
//
// Memory rule: every fi_info, attribute struct, address, name and auth key is allocated with
// libc malloc/calloc/strdup and released with free(), never new/delete. Applications build
// hints with calloc/strdup and hand them to freeinfo(), and free lists they got from us with
// fi_freeinfo(); both directions must agree on the allocator.
//
// Ownership of one fi_info (what freeinfo releases and dupinfo deep-copies):
//   src_addr (src_addrlen bytes), dest_addr (dest_addrlen bytes), tx_attr, rx_attr,
//   ep_attr + ep_attr->auth_key (auth_key_size bytes),
//   domain_attr + domain_attr->name + domain_attr->auth_key (auth_key_size bytes),
//   fabric_attr + fabric_attr->name + fabric_attr->prov_name, and the nic object (closed).
// Not owned (copied as plain values): handle, domain_attr->domain, fabric_attr->fabric.
//
// Thread-safety: all functions are MT-safe for distinct objects; the caller must not free
// or modify an fi_info that another thread is duplicating. Nothing throws.
#pragma once
#include <rdma/fabric.h>

namespace pollfab::core {

// fi_allocinfo(3): a zeroed fi_info whose five attribute structs (tx, rx, ep, domain, fabric)
// are calloc'd and zeroed; next, addresses, names and nic are null.
// Returns nullptr (nothing leaked) if memory runs out.
fi_info* allocinfo() noexcept;

// fi_dupinfo(3): nullptr -> allocinfo(). Otherwise a deep copy of the single entry *info
// (see "Ownership" above); attribute structs that are null in info stay null in the copy.
// The copy's next is nullptr and its handle equals info->handle. nic: the copy's is the one
// info->nic makes on fi_control(FI_DUP) (lib/core/nic.hpp; as libfabric), or nullptr when the
// nic answers -FI_ENOSYS; another error fails the copy. An address or key with a null pointer stays null whatever its
// length; a non-null one of length 0 becomes a non-null 1-byte allocation (so it is still
// distinguishable from "absent", as the reference's malloc(0)).
// Returns nullptr (freeing any partial copy) if memory runs out.
fi_info* dupinfo(const fi_info* info) noexcept;

// Deep-copies a whole list (info, info->next, ...) preserving order; nullptr -> nullptr.
// Returns nullptr (freeing the partial list) if memory runs out; so a null result for a
// non-null list means -FI_ENOMEM.
fi_info* dupinfo_list(const fi_info* info) noexcept;

// fi_freeinfo(3): frees every entry of the list starting at info (following next) and all
// owned memory listed above. A non-null nic is closed with its fid's close op (when
// FI_CHECK_OP allows, like the reference) rather than freed. nullptr is a no-op.
void freeinfo(fi_info* info) noexcept;

}  // namespace pollfab::core
