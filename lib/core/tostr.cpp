// fi_tostr / fi_tostr_r: dispatch plus the enum and flag-set printers (libfabric 1.17
// src/fi_tostr.c). Struct printers live in tostr_attrs.cpp.
#include "lib/core/tostr.hpp"

#include <rdma/fi_collective.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>

#include <cstring>
#include <span>

#include "lib/core/tostr_detail.hpp"

namespace pollfab::core {
namespace tostr_detail {
namespace {

struct Flag {
  uint64_t bit;
  std::string_view name;
};
struct Name {
  int64_t value;
  std::string_view name;
};

// Entries spell the OFI symbol once, so the printed name always matches the header's value.
#define PF_SYM(sym) \
  { static_cast<decltype(Flag::bit)>(sym), #sym }
#define PF_ENUM(sym) \
  { static_cast<int64_t>(sym), #sym }

// Flag tables are in libfabric's printing order (not bit order).
constexpr Flag kCaps[] = {
    PF_SYM(FI_MSG),          PF_SYM(FI_RMA),
    PF_SYM(FI_TAGGED),       PF_SYM(FI_ATOMIC),
    PF_SYM(FI_MULTICAST),    PF_SYM(FI_COLLECTIVE),
    PF_SYM(FI_READ),         PF_SYM(FI_WRITE),
    PF_SYM(FI_RECV),         PF_SYM(FI_SEND),
    PF_SYM(FI_REMOTE_READ),  PF_SYM(FI_REMOTE_WRITE),
    PF_SYM(FI_MULTI_RECV),   PF_SYM(FI_REMOTE_CQ_DATA),
    PF_SYM(FI_TRIGGER),      PF_SYM(FI_FENCE),
    PF_SYM(FI_VARIABLE_MSG), PF_SYM(FI_RMA_PMEM),
    PF_SYM(FI_SOURCE_ERR),   PF_SYM(FI_LOCAL_COMM),
    PF_SYM(FI_REMOTE_COMM),  PF_SYM(FI_SHARED_AV),
    PF_SYM(FI_RMA_EVENT),    PF_SYM(FI_SOURCE),
    PF_SYM(FI_NAMED_RX_CTX), PF_SYM(FI_DIRECTED_RECV),
    PF_SYM(FI_HMEM),
};

constexpr Flag kOpFlags[] = {
    PF_SYM(FI_MULTICAST),
    PF_SYM(FI_MULTI_RECV),
    PF_SYM(FI_REMOTE_CQ_DATA),
    PF_SYM(FI_MORE),
    PF_SYM(FI_PEEK),
    PF_SYM(FI_TRIGGER),
    PF_SYM(FI_FENCE),
    PF_SYM(FI_COMPLETION),
    PF_SYM(FI_INJECT),
    PF_SYM(FI_INJECT_COMPLETE),
    PF_SYM(FI_TRANSMIT_COMPLETE),
    PF_SYM(FI_DELIVERY_COMPLETE),
    PF_SYM(FI_MATCH_COMPLETE),
    PF_SYM(FI_AFFINITY),
    PF_SYM(FI_CLAIM),
    PF_SYM(FI_DISCARD),
};

constexpr Flag kMsgOrder[] = {
    PF_SYM(FI_ORDER_RAR),        PF_SYM(FI_ORDER_RAW),        PF_SYM(FI_ORDER_RAS),
    PF_SYM(FI_ORDER_WAR),        PF_SYM(FI_ORDER_WAW),        PF_SYM(FI_ORDER_WAS),
    PF_SYM(FI_ORDER_SAR),        PF_SYM(FI_ORDER_SAW),        PF_SYM(FI_ORDER_SAS),
    PF_SYM(FI_ORDER_RMA_RAR),    PF_SYM(FI_ORDER_RMA_RAW),    PF_SYM(FI_ORDER_RMA_WAR),
    PF_SYM(FI_ORDER_RMA_WAW),    PF_SYM(FI_ORDER_ATOMIC_RAR), PF_SYM(FI_ORDER_ATOMIC_RAW),
    PF_SYM(FI_ORDER_ATOMIC_WAR), PF_SYM(FI_ORDER_ATOMIC_WAW),
};

constexpr Flag kMode[] = {
    PF_SYM(FI_CONTEXT),         PF_SYM(FI_MSG_PREFIX), PF_SYM(FI_ASYNC_IOV),
    PF_SYM(FI_RX_CQ_DATA),      PF_SYM(FI_LOCAL_MR),   PF_SYM(FI_NOTIFY_FLAGS_ONLY),
    PF_SYM(FI_RESTRICTED_COMP), PF_SYM(FI_CONTEXT2),   PF_SYM(FI_BUFFERED_RECV),
};

constexpr Flag kMrMode[] = {
    PF_SYM(FI_MR_BASIC),    PF_SYM(FI_MR_SCALABLE),   PF_SYM(FI_MR_LOCAL),
    PF_SYM(FI_MR_RAW),      PF_SYM(FI_MR_VIRT_ADDR),  PF_SYM(FI_MR_ALLOCATED),
    PF_SYM(FI_MR_PROV_KEY), PF_SYM(FI_MR_MMU_NOTIFY), PF_SYM(FI_MR_RMA_EVENT),
    PF_SYM(FI_MR_ENDPOINT), PF_SYM(FI_MR_HMEM),       PF_SYM(FI_MR_COLLECTIVE),
};

constexpr Flag kCqEventFlags[] = {
    PF_SYM(FI_SEND),
    PF_SYM(FI_RECV),
    PF_SYM(FI_RMA),
    PF_SYM(FI_ATOMIC),
    PF_SYM(FI_MSG),
    PF_SYM(FI_TAGGED),
    PF_SYM(FI_READ),
    PF_SYM(FI_WRITE),
    PF_SYM(FI_REMOTE_READ),
    PF_SYM(FI_REMOTE_WRITE),
    PF_SYM(FI_REMOTE_CQ_DATA),
    PF_SYM(FI_MULTI_RECV),
    PF_SYM(FI_MORE),
    PF_SYM(FI_CLAIM),
};

constexpr Name kEpTypes[] = {
    PF_ENUM(FI_EP_UNSPEC), PF_ENUM(FI_EP_MSG),         PF_ENUM(FI_EP_DGRAM),
    PF_ENUM(FI_EP_RDM),    PF_ENUM(FI_EP_SOCK_STREAM), PF_ENUM(FI_EP_SOCK_DGRAM),
};

constexpr Name kAddrFormats[] = {
    PF_ENUM(FI_FORMAT_UNSPEC), PF_ENUM(FI_SOCKADDR),    PF_ENUM(FI_SOCKADDR_IN),
    PF_ENUM(FI_SOCKADDR_IN6),  PF_ENUM(FI_SOCKADDR_IB), PF_ENUM(FI_ADDR_PSMX),
    PF_ENUM(FI_ADDR_PSMX2),    PF_ENUM(FI_ADDR_GNI),    PF_ENUM(FI_ADDR_BGQ),
    PF_ENUM(FI_ADDR_MLX),      PF_ENUM(FI_ADDR_STR),    PF_ENUM(FI_ADDR_IB_UD),
    PF_ENUM(FI_ADDR_EFA),      PF_ENUM(FI_ADDR_PSMX3),  PF_ENUM(FI_ADDR_OPX),
    PF_ENUM(FI_ADDR_CXI),
};

// FI_PROTO_MXM and FI_PROTO_MRAIL are absent, as in 1.17: they print "Unknown".
constexpr Name kProtocols[] = {
    PF_ENUM(FI_PROTO_UNSPEC),    PF_ENUM(FI_PROTO_RDMA_CM_IB_RC), PF_ENUM(FI_PROTO_IWARP),
    PF_ENUM(FI_PROTO_IB_UD),     PF_ENUM(FI_PROTO_PSMX),          PF_ENUM(FI_PROTO_PSMX2),
    PF_ENUM(FI_PROTO_UDP),       PF_ENUM(FI_PROTO_SOCK_TCP),      PF_ENUM(FI_PROTO_IB_RDM),
    PF_ENUM(FI_PROTO_IWARP_RDM), PF_ENUM(FI_PROTO_GNI),           PF_ENUM(FI_PROTO_RXM),
    PF_ENUM(FI_PROTO_RXD),       PF_ENUM(FI_PROTO_MLX),           PF_ENUM(FI_PROTO_NETWORKDIRECT),
    PF_ENUM(FI_PROTO_SHM),       PF_ENUM(FI_PROTO_RSTREAM),       PF_ENUM(FI_PROTO_RDMA_CM_IB_XRC),
    PF_ENUM(FI_PROTO_EFA),       PF_ENUM(FI_PROTO_PSMX3),         PF_ENUM(FI_PROTO_RXM_TCP),
    PF_ENUM(FI_PROTO_OPX),       PF_ENUM(FI_PROTO_CXI),           PF_ENUM(FI_PROTO_XNET),
};

constexpr Name kThreading[] = {
    PF_ENUM(FI_THREAD_UNSPEC), PF_ENUM(FI_THREAD_SAFE),       PF_ENUM(FI_THREAD_FID),
    PF_ENUM(FI_THREAD_DOMAIN), PF_ENUM(FI_THREAD_COMPLETION), PF_ENUM(FI_THREAD_ENDPOINT),
};

constexpr Name kProgress[] = {
    PF_ENUM(FI_PROGRESS_UNSPEC),
    PF_ENUM(FI_PROGRESS_AUTO),
    PF_ENUM(FI_PROGRESS_MANUAL),
};

constexpr Name kResourceMgmt[] = {
    PF_ENUM(FI_RM_UNSPEC),
    PF_ENUM(FI_RM_DISABLED),
    PF_ENUM(FI_RM_ENABLED),
};

constexpr Name kAvTypes[] = {
    PF_ENUM(FI_AV_UNSPEC),
    PF_ENUM(FI_AV_MAP),
    PF_ENUM(FI_AV_TABLE),
};

constexpr Name kAtomicTypes[] = {
    PF_ENUM(FI_INT8),          PF_ENUM(FI_UINT8),
    PF_ENUM(FI_INT16),         PF_ENUM(FI_UINT16),
    PF_ENUM(FI_INT32),         PF_ENUM(FI_UINT32),
    PF_ENUM(FI_INT64),         PF_ENUM(FI_UINT64),
    PF_ENUM(FI_FLOAT),         PF_ENUM(FI_DOUBLE),
    PF_ENUM(FI_FLOAT_COMPLEX), PF_ENUM(FI_DOUBLE_COMPLEX),
    PF_ENUM(FI_LONG_DOUBLE),   PF_ENUM(FI_LONG_DOUBLE_COMPLEX),
    PF_ENUM(FI_INT128),        PF_ENUM(FI_UINT128),
};

constexpr Name kAtomicOps[] = {
    PF_ENUM(FI_MIN),      PF_ENUM(FI_MAX),      PF_ENUM(FI_SUM),         PF_ENUM(FI_PROD),
    PF_ENUM(FI_LOR),      PF_ENUM(FI_LAND),     PF_ENUM(FI_BOR),         PF_ENUM(FI_BAND),
    PF_ENUM(FI_LXOR),     PF_ENUM(FI_BXOR),     PF_ENUM(FI_ATOMIC_READ), PF_ENUM(FI_ATOMIC_WRITE),
    PF_ENUM(FI_CSWAP),    PF_ENUM(FI_CSWAP_NE), PF_ENUM(FI_CSWAP_LE),    PF_ENUM(FI_CSWAP_LT),
    PF_ENUM(FI_CSWAP_GE), PF_ENUM(FI_CSWAP_GT), PF_ENUM(FI_MSWAP),
};

constexpr Name kEqEvents[] = {
    PF_ENUM(FI_NOTIFY),        PF_ENUM(FI_CONNREQ),     PF_ENUM(FI_CONNECTED),
    PF_ENUM(FI_SHUTDOWN),      PF_ENUM(FI_MR_COMPLETE), PF_ENUM(FI_AV_COMPLETE),
    PF_ENUM(FI_JOIN_COMPLETE),
};

constexpr Name kOpTypes[] = {
    PF_ENUM(FI_OP_RECV),     PF_ENUM(FI_OP_SEND),         PF_ENUM(FI_OP_TRECV),
    PF_ENUM(FI_OP_TSEND),    PF_ENUM(FI_OP_READ),         PF_ENUM(FI_OP_WRITE),
    PF_ENUM(FI_OP_ATOMIC),   PF_ENUM(FI_OP_FETCH_ATOMIC), PF_ENUM(FI_OP_COMPARE_ATOMIC),
    PF_ENUM(FI_OP_CNTR_SET), PF_ENUM(FI_OP_CNTR_ADD),
};

constexpr Name kCollectiveOps[] = {
    PF_ENUM(FI_BARRIER),   PF_ENUM(FI_BROADCAST), PF_ENUM(FI_ALLTOALL),
    PF_ENUM(FI_ALLREDUCE), PF_ENUM(FI_ALLGATHER), PF_ENUM(FI_REDUCE_SCATTER),
    PF_ENUM(FI_REDUCE),    PF_ENUM(FI_SCATTER),   PF_ENUM(FI_GATHER),
};

constexpr Name kHmemIfaces[] = {
    PF_ENUM(FI_HMEM_SYSTEM), PF_ENUM(FI_HMEM_CUDA),   PF_ENUM(FI_HMEM_ROCR),
    PF_ENUM(FI_HMEM_ZE),     PF_ENUM(FI_HMEM_NEURON), PF_ENUM(FI_HMEM_SYNAPSEAI),
};

constexpr Name kCqFormats[] = {
    PF_ENUM(FI_CQ_FORMAT_UNSPEC), PF_ENUM(FI_CQ_FORMAT_CONTEXT), PF_ENUM(FI_CQ_FORMAT_MSG),
    PF_ENUM(FI_CQ_FORMAT_DATA),   PF_ENUM(FI_CQ_FORMAT_TAGGED),
};

#undef PF_SYM
#undef PF_ENUM

// enum fi_log_level / fi_log_subsys (rdma/providers/fi_log.h) print by their short names.
constexpr std::string_view kLogLevels[] = {"warn", "trace", "info", "debug"};
constexpr std::string_view kLogSubsys[] = {"core", "fabric", "domain", "ep_ctrl", "ep_data",
                                           "av",   "cq",     "eq",     "mr",      "cntr"};

void put_flags(Out& o, uint64_t v, std::span<const Flag> table) noexcept {
  for (const Flag& f : table) {
    if (v & f.bit) {
      o.put(f.name);
      o.put(", ");
    }
  }
  o.remove_comma();
}

// Returns false (printing nothing) when v is not in the table.
bool put_name(Out& o, int64_t v, std::span<const Name> table) noexcept {
  for (const Name& n : table) {
    if (n.value == v) {
      o.put(n.name);
      return true;
    }
  }
  return false;
}

void put_enum(Out& o, int64_t v, std::span<const Name> table) noexcept {
  if (!put_name(o, v, table)) o.put("Unknown");
}

// addr_format and protocol: unknown values with FI_PROV_SPECIFIC set are "Provider specific".
void put_enum_prov(Out& o, uint32_t v, std::span<const Name> table) noexcept {
  if (!put_name(o, v, table)) o.put((v & FI_PROV_SPECIFIC) ? "Provider specific" : "Unknown");
}

// Indexes a name table; out-of-range values (negative included) print "Unknown".
void put_indexed(Out& o, int v, std::span<const std::string_view> names) noexcept {
  if (v >= 0 && static_cast<size_t>(v) < names.size())
    o.put(names[static_cast<size_t>(v)]);
  else
    o.put("Unknown");
}

}  // namespace

void put_caps(Out& o, uint64_t caps) noexcept { put_flags(o, caps, kCaps); }
void put_mode(Out& o, uint64_t mode) noexcept { put_flags(o, mode, kMode); }
void put_op_flags(Out& o, uint64_t flags) noexcept { put_flags(o, flags, kOpFlags); }
void put_msg_order(Out& o, uint64_t flags) noexcept { put_flags(o, flags, kMsgOrder); }
void put_mr_mode(Out& o, int mr_mode) noexcept {
  put_flags(o, static_cast<uint64_t>(static_cast<unsigned>(mr_mode)), kMrMode);
}

void put_comp_order(Out& o, uint64_t flags) noexcept {
  if ((flags & FI_ORDER_STRICT) == FI_ORDER_NONE)
    o.put("FI_ORDER_NONE, ");
  else if ((flags & FI_ORDER_STRICT) == FI_ORDER_STRICT)
    o.put("FI_ORDER_STRICT, ");
  if (flags & FI_ORDER_DATA) o.put("FI_ORDER_DATA, ");
  o.remove_comma();
}

void put_ep_type(Out& o, int v) noexcept { put_enum(o, v, kEpTypes); }
void put_addr_format(Out& o, uint32_t v) noexcept { put_enum_prov(o, v, kAddrFormats); }
void put_protocol(Out& o, uint32_t v) noexcept { put_enum_prov(o, v, kProtocols); }
void put_threading(Out& o, int v) noexcept { put_enum(o, v, kThreading); }
void put_progress(Out& o, int v) noexcept { put_enum(o, v, kProgress); }
void put_resource_mgmt(Out& o, int v) noexcept { put_enum(o, v, kResourceMgmt); }
void put_av_type(Out& o, int v) noexcept { put_enum(o, v, kAvTypes); }

}  // namespace tostr_detail

char* tostr_r(char* buf, size_t len, const void* data, enum fi_type datatype) noexcept {
  using namespace tostr_detail;
  if (!data || !buf || !len) return nullptr;

  // libfabric reads scalars through uint64_t*, uint32_t* or int* views of data; each case reads
  // only its own width.
  auto u64 = [data] {
    uint64_t v;
    std::memcpy(&v, data, sizeof v);
    return v;
  };
  auto u32 = [data] {
    uint32_t v;
    std::memcpy(&v, data, sizeof v);
    return v;
  };
  auto i32 = [data] {
    int v;
    std::memcpy(&v, data, sizeof v);
    return v;
  };

  Out o(buf, len);
  switch (datatype) {
    case FI_TYPE_INFO: put_info(o, static_cast<const fi_info*>(data)); break;
    case FI_TYPE_EP_TYPE: put_ep_type(o, i32()); break;
    case FI_TYPE_CAPS: put_caps(o, u64()); break;
    case FI_TYPE_OP_FLAGS: put_op_flags(o, u64()); break;
    case FI_TYPE_ADDR_FORMAT: put_addr_format(o, u32()); break;
    case FI_TYPE_TX_ATTR: put_tx_attr(o, static_cast<const fi_tx_attr*>(data), ""); break;
    case FI_TYPE_RX_ATTR: put_rx_attr(o, static_cast<const fi_rx_attr*>(data), ""); break;
    case FI_TYPE_EP_ATTR: put_ep_attr(o, static_cast<const fi_ep_attr*>(data), ""); break;
    case FI_TYPE_DOMAIN_ATTR:
      put_domain_attr(o, static_cast<const fi_domain_attr*>(data), "");
      break;
    case FI_TYPE_FABRIC_ATTR:
      put_fabric_attr(o, static_cast<const fi_fabric_attr*>(data), "");
      break;
    case FI_TYPE_THREADING: put_threading(o, i32()); break;
    case FI_TYPE_PROGRESS: put_progress(o, i32()); break;
    case FI_TYPE_PROTOCOL: put_protocol(o, u32()); break;
    case FI_TYPE_MSG_ORDER: put_msg_order(o, u64()); break;
    case FI_TYPE_MODE: put_mode(o, u64()); break;
    case FI_TYPE_AV_TYPE: put_av_type(o, i32()); break;
    case FI_TYPE_ATOMIC_TYPE: put_enum(o, i32(), kAtomicTypes); break;
    case FI_TYPE_ATOMIC_OP: put_enum(o, i32(), kAtomicOps); break;
    // VERSION and BUILD_ID of the reference build: "1.17.0" and an empty build id.
    case FI_TYPE_VERSION: o.put("1.17.0"); break;
    case FI_TYPE_EQ_EVENT: put_enum(o, i32(), kEqEvents); break;
    case FI_TYPE_CQ_EVENT_FLAGS: put_flags(o, u64(), kCqEventFlags); break;
    case FI_TYPE_MR_MODE: put_mr_mode(o, i32()); break;  // an int, not a uint64_t
    case FI_TYPE_OP_TYPE: put_enum(o, i32(), kOpTypes); break;
    case FI_TYPE_FID: put_fid(o, "fid: ", static_cast<const fid*>(data)); break;
    case FI_TYPE_COLLECTIVE_OP: put_enum(o, i32(), kCollectiveOps); break;
    case FI_TYPE_HMEM_IFACE: put_enum(o, i32(), kHmemIfaces); break;
    case FI_TYPE_CQ_FORMAT: put_enum(o, i32(), kCqFormats); break;
    case FI_TYPE_LOG_LEVEL: put_indexed(o, i32(), kLogLevels); break;
    case FI_TYPE_LOG_SUBSYS: put_indexed(o, i32(), kLogSubsys); break;
    default: o.put("Unknown type"); break;
  }
  return buf;
}

char* tostr(const void* data, enum fi_type datatype) noexcept {
  constexpr size_t kBufSize = 8192;  // OFI_BUFSIZ
  thread_local char buf[kBufSize];
  return tostr_r(buf, kBufSize, data, datatype);
}

}  // namespace pollfab::core
