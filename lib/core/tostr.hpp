// fi_tostr(3) / fi_tostr_r(3): human-readable (YAML-like) text for OFI structures, enums and
// flag sets, byte-for-byte identical to libfabric 1.17 (src/fi_tostr.c with ofi_straddr from
// src/common.c), including its truncation rules:
//   - every piece of text is appended as by ofi_strncatf(buf, len, ...): the text never grows
//     past len - 2 characters (one byte less than snprintf would allow);
//   - a printed address (fi_info src_addr/dest_addr) may fill up to len - 1 characters;
//   - flag lists drop a trailing ", " after each list, even when the list was truncated.
// Sizes (len) are in bytes and include the terminating NUL.
//
// Object handles (FI_TYPE_FID, fi_info::handle, fi_info::nic) are printed by the object's own
// fi_ops::tostr when it has one, called as libfabric does: tostr(fid, buf, len - strlen(buf)),
// i.e. with the start of the whole buffer and the space left; otherwise as "<label><%p>\n".
//
// Thread-safety: tostr_r is reentrant (it touches only buf and reads data). tostr writes into a
// buffer private to the calling thread; its result stays valid until that thread's next tostr.
#pragma once
#include <rdma/fabric.h>

#include <cstddef>

namespace pollfab::core {

// fi_tostr_r(3): formats `data` of type `datatype` into buf (NUL-terminated, truncated to len).
// Returns buf, or nullptr if buf/data is null or len is 0. Never throws.
// Unknown datatypes give "Unknown type"; unknown enum values give "Unknown" (addr_format and
// protocol values with FI_PROV_SPECIFIC set give "Provider specific").
char* tostr_r(char* buf, size_t len, const void* data, enum fi_type datatype) noexcept;

// fi_tostr(3): same into a thread-local 8192-byte buffer (at most 8190 characters of text).
// (libfabric 1.17 uses one process-wide buffer; the text is the same, only races differ.)
char* tostr(const void* data, enum fi_type datatype) noexcept;

// Printer for FI_FORMAT_UNSPEC addresses (fi_info src_addr/dest_addr), which libfabric leaves
// blank: in this library every such address is a pollfab provider's binary name, and its
// provider layer registers one (writes at most cap - 1 characters and a NUL into buf; returns
// the characters written, 0 for bytes it does not recognise). Set once, before use.
using UnspecAddrPrinter = size_t (*)(const void* addr, char* buf, size_t cap) noexcept;
void set_unspec_addr_printer(UnspecAddrPrinter p) noexcept;

}  // namespace pollfab::core
