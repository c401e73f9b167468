// fi_tostr struct printers (libfabric 1.17 src/fi_tostr.c) and address text (ofi_straddr in
// src/common.c). Line layout, field order and number formats follow the reference exactly.
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>

#include "lib/core/tostr.hpp"
#include "lib/core/tostr_detail.hpp"

namespace pollfab::core::tostr_detail {

std::atomic<UnspecAddrPrinter> unspec_printer{nullptr};

namespace {

// Unaligned loads: libfabric dereferences typed pointers into the address bytes.
template <class T>
T load(const void* p, size_t offset) noexcept {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(p) + offset, sizeof v);
  return v;
}

uint64_t be64(uint64_t v) noexcept { return be64toh(v); }  // ntohll

// "<prefix><TAB><key>": the start of most attribute lines.
void key(Out& o, std::string_view prefix, std::string_view k) noexcept {
  o.put(prefix);
  o.put(kTab);
  o.put(k);
}

void line_u(Out& o, std::string_view prefix, std::string_view k, uint64_t v) noexcept {
  key(o, prefix, k);
  o.put_u(v);
  o.put("\n");
}

// "<prefix><TAB><k>[ <flags> ]\n"
template <class Fn>
void line_list(Out& o, std::string_view prefix, std::string_view k, Fn&& fn) noexcept {
  key(o, prefix, k);
  o.put("[ ");
  fn();
  o.put(" ]\n");
}

// "<prefix><TAB><k><enum>\n"
template <class Fn>
void line_enum(Out& o, std::string_view prefix, std::string_view k, Fn&& fn) noexcept {
  key(o, prefix, k);
  fn();
  o.put("\n");
}

// "<prefix><name>: (null)\n" for a missing struct; true if attr was null.
bool null_struct(Out& o, const void* attr, std::string_view prefix,
                 std::string_view name) noexcept {
  o.put(prefix);
  o.put(name);
  o.put(attr ? ":\n" : ": (null)\n");
  return attr == nullptr;
}

// ofi_straddr: text for one address, written as snprintf into the rest of the buffer (may fill
// it to cap - 1). Formats libfabric cannot print (FI_FORMAT_UNSPEC, unknown or provider
// specific formats, FI_SOCKADDR of another family, failed inet_ntop) print nothing.
void put_straddr(Out& o, uint32_t format, const void* addr) noexcept {
  constexpr unsigned kFull = 1;
  char str[INET6_ADDRSTRLEN + 8];
  auto text = [&](std::string_view s) { o.put_full(s); };
  auto hex = [&](uint64_t v, int width = 0) { o.put_hex(v, width, kFull); };
  auto dec = [&](uint64_t v) { o.put_u(v, kFull); };
  auto ntop6 = [&](size_t offset) {
    std::memset(str, 0, sizeof str);
    return inet_ntop(AF_INET6, static_cast<const unsigned char*>(addr) + offset, str,
                     INET6_ADDRSTRLEN) != nullptr;
  };

  if (format == FI_SOCKADDR) {
    sa_family_t family = load<sa_family_t>(addr, offsetof(sockaddr, sa_family));
    if (family == AF_INET)
      format = FI_SOCKADDR_IN;
    else if (family == AF_INET6)
      format = FI_SOCKADDR_IN6;
    else
      return;
  }

  switch (format) {
    case FI_SOCKADDR_IN: {
      // inet_ntop uses the address's own family, as the reference does.
      sa_family_t family = load<sa_family_t>(addr, offsetof(sockaddr_in, sin_family));
      const void* a = static_cast<const unsigned char*>(addr) + offsetof(sockaddr_in, sin_addr);
      if (!inet_ntop(family, a, str, sizeof str)) return;
      text("fi_sockaddr_in://");
      text(str);
      text(":");
      dec(ntohs(load<uint16_t>(addr, offsetof(sockaddr_in, sin_port))));
      break;
    }
    case FI_SOCKADDR_IN6: {
      sa_family_t family = load<sa_family_t>(addr, offsetof(sockaddr_in6, sin6_family));
      const void* a = static_cast<const unsigned char*>(addr) + offsetof(sockaddr_in6, sin6_addr);
      if (!inet_ntop(family, a, str, sizeof str)) return;
      text("fi_sockaddr_in6://[");
      text(str);
      text("]:");
      dec(ntohs(load<uint16_t>(addr, offsetof(sockaddr_in6, sin6_port))));
      break;
    }
    case FI_ADDR_EFA:  // GID, then uint16 QPN at byte 16 and uint32 QKey at byte 20
      if (!ntop6(0)) return;
      text("fi_addr_efa://[");
      text(str);
      text("]:");
      dec(load<uint16_t>(addr, 16));
      text(":");
      dec(load<uint32_t>(addr, 20));
      break;
    case FI_SOCKADDR_IB:  // struct ofi_sockaddr_ib: pkey @2, GID @8, sid @24, scope_id @40
      if (!ntop6(8)) return;
      text("fi_sockaddr_ib://[");
      text(str);
      text("]:0x");
      hex(ntohs(load<uint16_t>(addr, 2)));
      text(":0x");
      hex(static_cast<uint16_t>(be64(load<uint64_t>(addr, 24)) >> 16) & 0xfff);
      text(":0x");
      hex(static_cast<uint8_t>(be64(load<uint64_t>(addr, 40))) & 0xff);
      break;
    case FI_ADDR_PSMX:
    case FI_ADDR_GNI:
      text(format == FI_ADDR_PSMX ? "fi_addr_psmx://" : "fi_addr_gni://");
      hex(load<uint64_t>(addr, 0));
      break;
    case FI_ADDR_PSMX2:
    case FI_ADDR_PSMX3: {
      int words = format == FI_ADDR_PSMX2 ? 2 : 4;
      text(format == FI_ADDR_PSMX2 ? "fi_addr_psmx2://" : "fi_addr_psmx3://");
      for (int i = 0; i < words; ++i) {
        if (i) text(":");
        hex(load<uint64_t>(addr, 8 * static_cast<size_t>(i)));
      }
      break;
    }
    case FI_ADDR_BGQ:
    case FI_ADDR_MLX:  // the address's own location, as "%p"
      text(format == FI_ADDR_BGQ ? "fi_addr_bgq://" : "fi_addr_mlx://");
      o.put_ptr(addr, kFull);
      break;
    case FI_ADDR_OPX:
      text("fi_addr_opx://");
      hex(load<uint64_t>(addr, 0), 16);
      break;
    case FI_ADDR_IB_UD:  // GID, QPN (u32 @16) / LID (u16 @20) / P_Key (u16 @22) / SL (u8 @26)
      if (!ntop6(0)) return;
      text("fi_addr_ib_ud://");
      text(str);
      text(":");
      hex(load<uint32_t>(addr, 16));
      text("/");
      hex(load<uint16_t>(addr, 20));
      text("/");
      hex(load<uint16_t>(addr, 22));
      text("/");
      hex(load<uint8_t>(addr, 26));
      break;
    case FI_ADDR_STR: {
      // Only as much of the string as can be shown is read (the text is the same).
      size_t room = o.cap() - o.size();
      text({static_cast<const char*>(addr), strnlen(static_cast<const char*>(addr), room)});
      break;
    }
    case FI_ADDR_CXI:
      text("fi_addr_cxi://0x");
      hex(load<uint32_t>(addr, 0), 8);
      break;
    default: break;
  }
}


void put_addr(Out& o, uint32_t format, const void* addr) noexcept {
  if (!addr) {
    o.put("(null)");
    return;
  }
  UnspecAddrPrinter p = unspec_printer.load(std::memory_order_acquire);
  if (format == FI_FORMAT_UNSPEC && p) {
    char buf[128];
    size_t n = p(addr, buf, sizeof buf);
    o.put_full(std::string_view(buf, n));
    return;
  }
  put_straddr(o, format, addr);
}

}  // namespace

void put_fid(Out& o, std::string_view label, const struct fid* fid) noexcept {
  if (!fid || !FI_CHECK_OP(fid->ops, struct fi_ops, tostr)) {
    o.put(label);
    o.put_ptr(fid);
    o.put("\n");
    return;
  }
  // As libfabric: the object's tostr gets the whole buffer and the space that is left.
  o.resync();
  fid->ops->tostr(fid, o.data(), o.cap() - o.size());
  o.resync();
}

void put_tx_attr(Out& o, const struct fi_tx_attr* attr, std::string_view prefix) noexcept {
  if (null_struct(o, attr, prefix, "fi_tx_attr")) return;
  line_list(o, prefix, "caps: ", [&] { put_caps(o, attr->caps); });
  line_list(o, prefix, "mode: ", [&] { put_mode(o, attr->mode); });
  line_list(o, prefix, "op_flags: ", [&] { put_op_flags(o, attr->op_flags); });
  line_list(o, prefix, "msg_order: ", [&] { put_msg_order(o, attr->msg_order); });
  line_list(o, prefix, "comp_order: ", [&] { put_comp_order(o, attr->comp_order); });
  line_u(o, prefix, "inject_size: ", attr->inject_size);
  line_u(o, prefix, "size: ", attr->size);
  line_u(o, prefix, "iov_limit: ", attr->iov_limit);
  line_u(o, prefix, "rma_iov_limit: ", attr->rma_iov_limit);
  key(o, prefix, "tclass: 0x");
  o.put_hex(attr->tclass);
  o.put("\n");
}

void put_rx_attr(Out& o, const struct fi_rx_attr* attr, std::string_view prefix) noexcept {
  if (null_struct(o, attr, prefix, "fi_rx_attr")) return;
  line_list(o, prefix, "caps: ", [&] { put_caps(o, attr->caps); });
  line_list(o, prefix, "mode: ", [&] { put_mode(o, attr->mode); });
  line_list(o, prefix, "op_flags: ", [&] { put_op_flags(o, attr->op_flags); });
  line_list(o, prefix, "msg_order: ", [&] { put_msg_order(o, attr->msg_order); });
  line_list(o, prefix, "comp_order: ", [&] { put_comp_order(o, attr->comp_order); });
  line_u(o, prefix, "total_buffered_recv: ", attr->total_buffered_recv);
  line_u(o, prefix, "size: ", attr->size);
  line_u(o, prefix, "iov_limit: ", attr->iov_limit);
}

void put_ep_attr(Out& o, const struct fi_ep_attr* attr, std::string_view prefix) noexcept {
  if (null_struct(o, attr, prefix, "fi_ep_attr")) return;
  line_enum(o, prefix, "type: ", [&] { put_ep_type(o, attr->type); });
  line_enum(o, prefix, "protocol: ", [&] { put_protocol(o, attr->protocol); });
  key(o, prefix, "protocol_version: ");
  o.put_i(static_cast<int32_t>(attr->protocol_version));  // printed with %d
  o.put("\n");
  line_u(o, prefix, "max_msg_size: ", attr->max_msg_size);
  line_u(o, prefix, "msg_prefix_size: ", attr->msg_prefix_size);
  line_u(o, prefix, "max_order_raw_size: ", attr->max_order_raw_size);
  line_u(o, prefix, "max_order_war_size: ", attr->max_order_war_size);
  line_u(o, prefix, "max_order_waw_size: ", attr->max_order_waw_size);
  key(o, prefix, "mem_tag_format: 0x");
  o.put_hex(attr->mem_tag_format, 16);
  o.put("\n");
  auto ctx_cnt = [&](std::string_view k, size_t cnt) {
    key(o, prefix, k);
    if (cnt == FI_SHARED_CONTEXT)
      o.put("FI_SHARED_CONTEXT");
    else
      o.put_u(cnt);
    o.put("\n");
  };
  ctx_cnt("tx_ctx_cnt: ", attr->tx_ctx_cnt);
  ctx_cnt("rx_ctx_cnt: ", attr->rx_ctx_cnt);
  line_u(o, prefix, "auth_key_size: ", attr->auth_key_size);
}

void put_domain_attr(Out& o, const struct fi_domain_attr* attr, std::string_view prefix) noexcept {
  if (null_struct(o, attr, prefix, "fi_domain_attr")) return;
  // "0x%x" of the pointer: only its low 32 bits are printed.
  key(o, prefix, "domain: 0x");
  o.put_hex(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(attr->domain)));
  o.put("\n");
  key(o, prefix, "name: ");
  o.put(attr->name ? std::string_view(attr->name) : std::string_view("(null)"));
  o.put("\n");
  line_enum(o, prefix, "threading: ", [&] { put_threading(o, attr->threading); });
  line_enum(o, prefix, "control_progress: ", [&] { put_progress(o, attr->control_progress); });
  line_enum(o, prefix, "data_progress: ", [&] { put_progress(o, attr->data_progress); });
  line_enum(o, prefix, "resource_mgmt: ", [&] { put_resource_mgmt(o, attr->resource_mgmt); });
  line_enum(o, prefix, "av_type: ", [&] { put_av_type(o, attr->av_type); });
  line_list(o, prefix, "mr_mode: ", [&] { put_mr_mode(o, attr->mr_mode); });
  line_u(o, prefix, "mr_key_size: ", attr->mr_key_size);
  line_u(o, prefix, "cq_data_size: ", attr->cq_data_size);
  line_u(o, prefix, "cq_cnt: ", attr->cq_cnt);
  line_u(o, prefix, "ep_cnt: ", attr->ep_cnt);
  line_u(o, prefix, "tx_ctx_cnt: ", attr->tx_ctx_cnt);
  line_u(o, prefix, "rx_ctx_cnt: ", attr->rx_ctx_cnt);
  line_u(o, prefix, "max_ep_tx_ctx: ", attr->max_ep_tx_ctx);
  line_u(o, prefix, "max_ep_rx_ctx: ", attr->max_ep_rx_ctx);
  line_u(o, prefix, "max_ep_stx_ctx: ", attr->max_ep_stx_ctx);
  line_u(o, prefix, "max_ep_srx_ctx: ", attr->max_ep_srx_ctx);
  line_u(o, prefix, "cntr_cnt: ", attr->cntr_cnt);
  line_u(o, prefix, "mr_iov_limit: ", attr->mr_iov_limit);
  line_list(o, prefix, "caps: ", [&] { put_caps(o, attr->caps); });
  line_list(o, prefix, "mode: ", [&] { put_mode(o, attr->mode); });
  line_u(o, prefix, "auth_key_size: ", attr->auth_key_size);
  line_u(o, prefix, "max_err_data: ", attr->max_err_data);
  line_u(o, prefix, "mr_cnt: ", attr->mr_cnt);
  key(o, prefix, "tclass: 0x");
  o.put_hex(attr->tclass);
  o.put("\n");
}

void put_fabric_attr(Out& o, const struct fi_fabric_attr* attr, std::string_view prefix) noexcept {
  if (null_struct(o, attr, prefix, "fi_fabric_attr")) return;
  auto str = [](const char* s) { return s ? std::string_view(s) : std::string_view("(null)"); };
  auto version = [&](std::string_view k, uint32_t v) {
    key(o, prefix, k);
    o.put_u(FI_MAJOR(v));
    o.put(".");
    o.put_u(FI_MINOR(v));
    o.put("\n");
  };
  key(o, prefix, "name: ");
  o.put(str(attr->name));
  o.put("\n");
  key(o, prefix, "prov_name: ");
  o.put(str(attr->prov_name));
  o.put("\n");
  version("prov_version: ", attr->prov_version);
  version("api_version: ", attr->api_version);
}

void put_info(Out& o, const struct fi_info* info) noexcept {
  o.put("fi_info:\n");
  line_list(o, "", "caps: ", [&] { put_caps(o, info->caps); });
  line_list(o, "", "mode: ", [&] { put_mode(o, info->mode); });
  line_enum(o, "", "addr_format: ", [&] { put_addr_format(o, info->addr_format); });
  line_u(o, "", "src_addrlen: ", info->src_addrlen);
  line_u(o, "", "dest_addrlen: ", info->dest_addrlen);
  line_enum(o, "", "src_addr: ", [&] { put_addr(o, info->addr_format, info->src_addr); });
  line_enum(o, "", "dest_addr: ", [&] { put_addr(o, info->addr_format, info->dest_addr); });
  put_fid(o, "    handle: ", info->handle);
  put_tx_attr(o, info->tx_attr, kTab);
  put_rx_attr(o, info->rx_attr, kTab);
  put_ep_attr(o, info->ep_attr, kTab);
  put_domain_attr(o, info->domain_attr, kTab);
  put_fabric_attr(o, info->fabric_attr, kTab);
  put_fid(o, "    nic: ", info->nic ? &info->nic->fid : nullptr);
}

}  // namespace pollfab::core::tostr_detail

namespace pollfab::core {

void set_unspec_addr_printer(UnspecAddrPrinter p) noexcept {
  tostr_detail::unspec_printer.store(p, std::memory_order_release);
}

}  // namespace pollfab::core
