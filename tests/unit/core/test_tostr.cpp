// Tests for pollfab::core::tostr_r / tostr (fi_tostr_r / fi_tostr).
// Every expected string was produced by Debian's libfabric 1.17 fi_tostr_r (via dlopen, outside
// this tree) on the same inputs: this file, run against the reference, passes all tests except
// ThreadLocalBuffer (a deliberate pollfab difference, see there).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "lib/core/tostr.hpp"

namespace pc = pollfab::core;

namespace {

// Formats into a large buffer and returns the text.
template <class T>
std::string str(const T& v, fi_type t) {
  static char buf[16384];
  char* r = pc::tostr_r(buf, sizeof buf, &v, t);
  return r ? std::string(r) : std::string("<null>");
}

// Formats into exactly `len` bytes of a larger, poisoned buffer; fails if anything past len
// was written.
template <class T>
std::string str_n(const T& v, fi_type t, size_t len) {
  char buf[512];
  std::memset(buf, 'Z', sizeof buf);
  char* r = pc::tostr_r(buf, len, &v, t);
  for (size_t i = len; i < sizeof buf; ++i) EXPECT_EQ('Z', buf[i]) << "wrote past len " << len;
  return r ? std::string(r) : std::string("<null>");
}

// The src_addr line of an fi_info dump.
std::string src_addr_line(uint32_t format, const void* addr) {
  fi_info info{};
  info.addr_format = format;
  info.src_addr = const_cast<void*>(addr);
  std::string s = str(info, FI_TYPE_INFO);
  auto b = s.find("    src_addr:");
  return s.substr(b, s.find('\n', b) - b);
}

}  // namespace

TEST(Tostr, NullArgumentsReturnNull) {
  char buf[16];
  uint64_t caps = FI_MSG;
  EXPECT_EQ(nullptr, pc::tostr_r(nullptr, sizeof buf, &caps, FI_TYPE_CAPS));
  EXPECT_EQ(nullptr, pc::tostr_r(buf, sizeof buf, nullptr, FI_TYPE_CAPS));
  EXPECT_EQ(nullptr, pc::tostr_r(buf, 0, &caps, FI_TYPE_CAPS));
  EXPECT_EQ(nullptr, pc::tostr(nullptr, FI_TYPE_INFO));
  EXPECT_EQ(buf, pc::tostr_r(buf, sizeof buf, &caps, FI_TYPE_CAPS));
}

TEST(Tostr, Caps) {
  EXPECT_EQ("FI_MSG, FI_RMA", str(uint64_t{FI_MSG | FI_RMA}, FI_TYPE_CAPS));
  EXPECT_EQ("", str(uint64_t{0}, FI_TYPE_CAPS));
  // Printing order is libfabric's, not bit order (FI_HMEM is bit 47 but printed last).
  EXPECT_EQ(
      "FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_MULTICAST, FI_COLLECTIVE, FI_READ, FI_WRITE, "
      "FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, FI_REMOTE_CQ_DATA, "
      "FI_TRIGGER, FI_FENCE, FI_VARIABLE_MSG, FI_RMA_PMEM, FI_SOURCE_ERR, FI_LOCAL_COMM, "
      "FI_REMOTE_COMM, FI_SHARED_AV, FI_RMA_EVENT, FI_SOURCE, FI_NAMED_RX_CTX, FI_DIRECTED_RECV, "
      "FI_HMEM",
      str(~uint64_t{0}, FI_TYPE_CAPS));
}

TEST(Tostr, OtherFlagSets) {
  EXPECT_EQ(
      "FI_MULTICAST, FI_MULTI_RECV, FI_REMOTE_CQ_DATA, FI_MORE, FI_PEEK, FI_TRIGGER, FI_FENCE, "
      "FI_COMPLETION, FI_INJECT, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE, "
      "FI_MATCH_COMPLETE, FI_AFFINITY, FI_CLAIM, FI_DISCARD",
      str(~uint64_t{0}, FI_TYPE_OP_FLAGS));
  EXPECT_EQ("FI_INJECT, FI_DELIVERY_COMPLETE",
            str(uint64_t{FI_DELIVERY_COMPLETE | FI_INJECT}, FI_TYPE_OP_FLAGS));
  EXPECT_EQ(
      "FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_WAS, "
      "FI_ORDER_SAR, FI_ORDER_SAW, FI_ORDER_SAS, FI_ORDER_RMA_RAR, FI_ORDER_RMA_RAW, "
      "FI_ORDER_RMA_WAR, FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW, "
      "FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW",
      str(~uint64_t{0}, FI_TYPE_MSG_ORDER));
  EXPECT_EQ("", str(uint64_t{FI_ORDER_NONE}, FI_TYPE_MSG_ORDER));  // no FI_ORDER_NONE here
  EXPECT_EQ(
      "FI_CONTEXT, FI_MSG_PREFIX, FI_ASYNC_IOV, FI_RX_CQ_DATA, FI_LOCAL_MR, FI_NOTIFY_FLAGS_ONLY, "
      "FI_RESTRICTED_COMP, FI_CONTEXT2, FI_BUFFERED_RECV",
      str(~uint64_t{0}, FI_TYPE_MODE));
  EXPECT_EQ(
      "FI_SEND, FI_RECV, FI_RMA, FI_ATOMIC, FI_MSG, FI_TAGGED, FI_READ, FI_WRITE, FI_REMOTE_READ, "
      "FI_REMOTE_WRITE, FI_REMOTE_CQ_DATA, FI_MULTI_RECV, FI_MORE, FI_CLAIM",
      str(~uint64_t{0}, FI_TYPE_CQ_EVENT_FLAGS));
  EXPECT_EQ("FI_RECV, FI_MSG", str(uint64_t{FI_MSG | FI_RECV}, FI_TYPE_CQ_EVENT_FLAGS));
  // mr_mode is read as an int.
  EXPECT_EQ(
      "FI_MR_BASIC, FI_MR_SCALABLE, FI_MR_LOCAL, FI_MR_RAW, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, "
      "FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT, FI_MR_ENDPOINT, FI_MR_HMEM, "
      "FI_MR_COLLECTIVE",
      str(-1, FI_TYPE_MR_MODE));
  EXPECT_EQ("FI_MR_LOCAL, FI_MR_VIRT_ADDR", str(FI_MR_LOCAL | FI_MR_VIRT_ADDR, FI_TYPE_MR_MODE));
}

TEST(Tostr, EndpointAndAddressEnums) {
  EXPECT_EQ("FI_EP_RDM", str(int{FI_EP_RDM}, FI_TYPE_EP_TYPE));
  EXPECT_EQ("FI_EP_SOCK_DGRAM", str(int{FI_EP_SOCK_DGRAM}, FI_TYPE_EP_TYPE));
  EXPECT_EQ("Unknown", str(6, FI_TYPE_EP_TYPE));
  EXPECT_EQ("Unknown", str(-1, FI_TYPE_EP_TYPE));
  // Only the low 32 bits are read (as an int).
  EXPECT_EQ("FI_EP_MSG", str((uint64_t{1} << 32) | FI_EP_MSG, FI_TYPE_EP_TYPE));

  EXPECT_EQ("FI_FORMAT_UNSPEC", str(uint32_t{FI_FORMAT_UNSPEC}, FI_TYPE_ADDR_FORMAT));
  EXPECT_EQ("FI_SOCKADDR_IN", str(uint32_t{FI_SOCKADDR_IN}, FI_TYPE_ADDR_FORMAT));
  EXPECT_EQ("FI_ADDR_CXI", str(uint32_t{FI_ADDR_CXI}, FI_TYPE_ADDR_FORMAT));
  EXPECT_EQ("Unknown", str(uint32_t{16}, FI_TYPE_ADDR_FORMAT));
  EXPECT_EQ("Provider specific", str(uint32_t{FI_PROV_SPECIFIC | 1}, FI_TYPE_ADDR_FORMAT));

  EXPECT_EQ("FI_PROTO_RXM", str(uint32_t{FI_PROTO_RXM}, FI_TYPE_PROTOCOL));
  EXPECT_EQ("FI_PROTO_XNET", str(uint32_t{FI_PROTO_XNET}, FI_TYPE_PROTOCOL));
  EXPECT_EQ("Unknown", str(uint32_t{FI_PROTO_MXM}, FI_TYPE_PROTOCOL));
  EXPECT_EQ("Unknown", str(uint32_t{FI_PROTO_MRAIL}, FI_TYPE_PROTOCOL));
  EXPECT_EQ("Provider specific", str(uint32_t{FI_PROV_SPECIFIC}, FI_TYPE_PROTOCOL));
}

TEST(Tostr, DomainEnums) {
  EXPECT_EQ("FI_THREAD_COMPLETION", str(int{FI_THREAD_COMPLETION}, FI_TYPE_THREADING));
  EXPECT_EQ("Unknown", str(6, FI_TYPE_THREADING));
  EXPECT_EQ("FI_PROGRESS_MANUAL", str(int{FI_PROGRESS_MANUAL}, FI_TYPE_PROGRESS));
  EXPECT_EQ("Unknown", str(3, FI_TYPE_PROGRESS));
  EXPECT_EQ("FI_AV_TABLE", str(int{FI_AV_TABLE}, FI_TYPE_AV_TYPE));
  EXPECT_EQ("FI_HMEM_SYNAPSEAI", str(int{FI_HMEM_SYNAPSEAI}, FI_TYPE_HMEM_IFACE));
  EXPECT_EQ("Unknown", str(6, FI_TYPE_HMEM_IFACE));
  EXPECT_EQ("FI_CQ_FORMAT_TAGGED", str(int{FI_CQ_FORMAT_TAGGED}, FI_TYPE_CQ_FORMAT));
  EXPECT_EQ("FI_JOIN_COMPLETE", str(int{FI_JOIN_COMPLETE}, FI_TYPE_EQ_EVENT));
  EXPECT_EQ("Unknown", str(7, FI_TYPE_EQ_EVENT));
  EXPECT_EQ("FI_OP_CNTR_ADD", str(int{FI_OP_CNTR_ADD}, FI_TYPE_OP_TYPE));
  EXPECT_EQ("FI_GATHER", str(int{FI_GATHER}, FI_TYPE_COLLECTIVE_OP));
  EXPECT_EQ("Unknown", str(9, FI_TYPE_COLLECTIVE_OP));
}

TEST(Tostr, AtomicEnums) {
  EXPECT_EQ("FI_INT8", str(int{FI_INT8}, FI_TYPE_ATOMIC_TYPE));
  EXPECT_EQ("FI_LONG_DOUBLE_COMPLEX", str(int{FI_LONG_DOUBLE_COMPLEX}, FI_TYPE_ATOMIC_TYPE));
  EXPECT_EQ("FI_UINT128", str(int{FI_UINT128}, FI_TYPE_ATOMIC_TYPE));
  EXPECT_EQ("Unknown", str(16, FI_TYPE_ATOMIC_TYPE));
  EXPECT_EQ("FI_MIN", str(int{FI_MIN}, FI_TYPE_ATOMIC_OP));
  EXPECT_EQ("FI_MSWAP", str(int{FI_MSWAP}, FI_TYPE_ATOMIC_OP));
  EXPECT_EQ("Unknown", str(19, FI_TYPE_ATOMIC_OP));
}

TEST(Tostr, LogVersionAndUnknownType) {
  EXPECT_EQ("warn", str(0, FI_TYPE_LOG_LEVEL));
  EXPECT_EQ("debug", str(3, FI_TYPE_LOG_LEVEL));
  EXPECT_EQ("Unknown", str(4, FI_TYPE_LOG_LEVEL));
  EXPECT_EQ("Unknown", str(-1, FI_TYPE_LOG_LEVEL));
  EXPECT_EQ("core", str(0, FI_TYPE_LOG_SUBSYS));
  EXPECT_EQ("ep_ctrl", str(3, FI_TYPE_LOG_SUBSYS));
  EXPECT_EQ("cntr", str(9, FI_TYPE_LOG_SUBSYS));
  EXPECT_EQ("Unknown", str(10, FI_TYPE_LOG_SUBSYS));
  EXPECT_EQ("1.17.0", str(0, FI_TYPE_VERSION));
  EXPECT_EQ("Unknown type", str(0, static_cast<fi_type>(FI_TYPE_LOG_SUBSYS + 1)));
  EXPECT_EQ("Unknown type", str(0, static_cast<fi_type>(-1)));
}

TEST(Tostr, TxRxAttrs) {
  fi_tx_attr tx{};
  tx.caps = FI_MSG | FI_TAGGED | FI_SEND;
  tx.mode = FI_CONTEXT;
  tx.op_flags = FI_COMPLETION | FI_TRANSMIT_COMPLETE;
  tx.msg_order = FI_ORDER_SAS | FI_ORDER_RMA_WAW;
  tx.comp_order = FI_ORDER_STRICT | FI_ORDER_DATA;
  tx.inject_size = 64;
  tx.size = 1024;
  tx.iov_limit = 4;
  tx.rma_iov_limit = 1;
  tx.tclass = FI_TC_LOW_LATENCY;
  EXPECT_EQ(R"(fi_tx_attr:
    caps: [ FI_MSG, FI_TAGGED, FI_SEND ]
    mode: [ FI_CONTEXT ]
    op_flags: [ FI_COMPLETION, FI_TRANSMIT_COMPLETE ]
    msg_order: [ FI_ORDER_SAS, FI_ORDER_RMA_WAW ]
    comp_order: [ FI_ORDER_STRICT, FI_ORDER_DATA ]
    inject_size: 64
    size: 1024
    iov_limit: 4
    rma_iov_limit: 1
    tclass: 0x201
)",
            str(tx, FI_TYPE_TX_ATTR));

  // comp_order: FI_ORDER_NONE / FI_ORDER_STRICT only as a whole, plus FI_ORDER_DATA.
  auto comp = [&](uint64_t v) {
    tx.comp_order = v;
    std::string s = str(tx, FI_TYPE_TX_ATTR);
    auto b = s.find("comp_order: ");
    return s.substr(b, s.find('\n', b) - b);
  };
  EXPECT_EQ("comp_order: [ FI_ORDER_NONE ]", comp(0));
  EXPECT_EQ("comp_order: [ FI_ORDER_NONE, FI_ORDER_DATA ]", comp(FI_ORDER_DATA));
  EXPECT_EQ("comp_order: [  ]", comp(FI_ORDER_SAS));
  EXPECT_EQ("comp_order: [ FI_ORDER_DATA ]", comp(FI_ORDER_SAS | FI_ORDER_DATA));

  fi_rx_attr rx{};
  rx.caps = FI_MSG | FI_RECV | FI_MULTI_RECV;
  rx.mode = FI_RX_CQ_DATA;
  rx.op_flags = FI_MULTI_RECV;
  rx.size = 2048;
  rx.iov_limit = 8;
  EXPECT_EQ(R"(fi_rx_attr:
    caps: [ FI_MSG, FI_RECV, FI_MULTI_RECV ]
    mode: [ FI_RX_CQ_DATA ]
    op_flags: [ FI_MULTI_RECV ]
    msg_order: [  ]
    comp_order: [ FI_ORDER_NONE ]
    total_buffered_recv: 0
    size: 2048
    iov_limit: 8
)",
            str(rx, FI_TYPE_RX_ATTR));
}

TEST(Tostr, EpDomainFabricAttrs) {
  fi_ep_attr ep{};
  ep.type = FI_EP_RDM;
  ep.protocol = FI_PROTO_RXM;
  ep.protocol_version = 1;
  ep.max_msg_size = SIZE_MAX;
  ep.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;
  ep.tx_ctx_cnt = FI_SHARED_CONTEXT;
  ep.rx_ctx_cnt = 1;
  ep.max_order_raw_size = 128;
  EXPECT_EQ(R"(fi_ep_attr:
    type: FI_EP_RDM
    protocol: FI_PROTO_RXM
    protocol_version: 1
    max_msg_size: 18446744073709551615
    msg_prefix_size: 0
    max_order_raw_size: 128
    max_order_war_size: 0
    max_order_waw_size: 0
    mem_tag_format: 0xaaaaaaaaaaaaaaaa
    tx_ctx_cnt: FI_SHARED_CONTEXT
    rx_ctx_cnt: 1
    auth_key_size: 0
)",
            str(ep, FI_TYPE_EP_ATTR));

  fi_domain_attr d{};
  d.domain = reinterpret_cast<fid_domain*>(uintptr_t{0x7f00deadbeef});  // prints low 32 bits
  d.name = nullptr;
  d.threading = FI_THREAD_DOMAIN;
  d.control_progress = FI_PROGRESS_AUTO;
  d.data_progress = FI_PROGRESS_MANUAL;
  d.resource_mgmt = FI_RM_ENABLED;
  d.av_type = FI_AV_TABLE;
  d.mr_mode = FI_MR_LOCAL | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  d.mr_key_size = 8;
  d.cq_data_size = 8;
  d.cq_cnt = 256;
  d.ep_cnt = 128;
  d.tx_ctx_cnt = d.rx_ctx_cnt = d.max_ep_tx_ctx = d.max_ep_rx_ctx = d.mr_iov_limit = 1;
  d.caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  d.mr_cnt = 65536;
  EXPECT_EQ(R"(fi_domain_attr:
    domain: 0xdeadbeef
    name: (null)
    threading: FI_THREAD_DOMAIN
    control_progress: FI_PROGRESS_AUTO
    data_progress: FI_PROGRESS_MANUAL
    resource_mgmt: FI_RM_ENABLED
    av_type: FI_AV_TABLE
    mr_mode: [ FI_MR_LOCAL, FI_MR_PROV_KEY, FI_MR_ENDPOINT ]
    mr_key_size: 8
    cq_data_size: 8
    cq_cnt: 256
    ep_cnt: 128
    tx_ctx_cnt: 1
    rx_ctx_cnt: 1
    max_ep_tx_ctx: 1
    max_ep_rx_ctx: 1
    max_ep_stx_ctx: 0
    max_ep_srx_ctx: 0
    cntr_cnt: 0
    mr_iov_limit: 1
    caps: [ FI_LOCAL_COMM, FI_REMOTE_COMM ]
    mode: [  ]
    auth_key_size: 0
    max_err_data: 0
    mr_cnt: 65536
    tclass: 0x0
)",
            str(d, FI_TYPE_DOMAIN_ATTR));

  fi_fabric_attr fa{};
  fa.name = const_cast<char*>("192.0.2.0/24");
  fa.prov_name = const_cast<char*>("tcp;ofi_rxm");
  fa.prov_version = FI_VERSION(117, 0);
  fa.api_version = FI_VERSION(1, 17);
  EXPECT_EQ(R"(fi_fabric_attr:
    name: 192.0.2.0/24
    prov_name: tcp;ofi_rxm
    prov_version: 117.0
    api_version: 1.17
)",
            str(fa, FI_TYPE_FABRIC_ATTR));
}

TEST(Tostr, InfoDump) {
  fi_info empty{};
  EXPECT_EQ(R"(fi_info:
    caps: [  ]
    mode: [  ]
    addr_format: FI_FORMAT_UNSPEC
    src_addrlen: 0
    dest_addrlen: 0
    src_addr: (null)
    dest_addr: (null)
    handle: (nil)
    fi_tx_attr: (null)
    fi_rx_attr: (null)
    fi_ep_attr: (null)
    fi_domain_attr: (null)
    fi_fabric_attr: (null)
    nic: (nil)
)",
            str(empty, FI_TYPE_INFO));

  // Shaped like the reference's tcp;ofi_rxm answer: nested attrs are indented by 4 more spaces.
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
  fi_tx_attr tx{};
  tx.caps = FI_MSG;
  fi_domain_attr dom{};
  dom.name = const_cast<char*>("eth0");
  dom.caps = FI_LOCAL_COMM;
  fi_info info{};
  info.caps = FI_MSG | FI_RMA | FI_TAGGED | FI_READ | FI_WRITE | FI_RECV | FI_SEND |
              FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM;
  info.addr_format = FI_SOCKADDR_IN;
  info.src_addrlen = sizeof sin;
  info.src_addr = &sin;
  info.tx_attr = &tx;
  info.domain_attr = &dom;
  std::string s = str(info, FI_TYPE_INFO);
  EXPECT_EQ(R"(fi_info:
    caps: [ FI_MSG, FI_RMA, FI_TAGGED, FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, FI_LOCAL_COMM, FI_REMOTE_COMM ]
    mode: [  ]
    addr_format: FI_SOCKADDR_IN
    src_addrlen: 16
    dest_addrlen: 0
    src_addr: fi_sockaddr_in://192.0.2.2:0
    dest_addr: (null)
    handle: (nil)
    fi_tx_attr:
        caps: [ FI_MSG ]
        mode: [  ]
        op_flags: [  ]
        msg_order: [  ]
        comp_order: [ FI_ORDER_NONE ]
        inject_size: 0
)",
            s.substr(0, s.find("        size: 0\n")));
  EXPECT_NE(std::string::npos, s.find("    fi_rx_attr: (null)\n    fi_ep_attr: (null)\n"
                                      "    fi_domain_attr:\n        domain: 0x0\n"
                                      "        name: eth0\n"));
  EXPECT_NE(std::string::npos, s.find("        caps: [ FI_LOCAL_COMM ]\n"));
  EXPECT_NE(std::string::npos, s.find("        tclass: 0x0\n    fi_fabric_attr: (null)\n"
                                      "    nic: (nil)\n"));
  EXPECT_EQ('\n', s.back());
}

TEST(Tostr, Addresses) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(7471);
  inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
  sockaddr_in6 s6{};
  s6.sin6_family = AF_INET6;
  s6.sin6_port = htons(4791);
  inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr);
  EXPECT_EQ("    src_addr: fi_sockaddr_in://192.0.2.2:7471", src_addr_line(FI_SOCKADDR_IN, &sin));
  EXPECT_EQ("    src_addr: fi_sockaddr_in://192.0.2.2:7471", src_addr_line(FI_SOCKADDR, &sin));
  EXPECT_EQ("    src_addr: fi_sockaddr_in6://[2001:db8::7]:4791",
            src_addr_line(FI_SOCKADDR_IN6, &s6));
  EXPECT_EQ("    src_addr: fi_sockaddr_in6://[2001:db8::7]:4791", src_addr_line(FI_SOCKADDR, &s6));
  EXPECT_EQ("    src_addr: fi_sockaddr_in://10.0.0.1:7471",
            src_addr_line(FI_ADDR_STR, "fi_sockaddr_in://10.0.0.1:7471"));

  unsigned char raw[48];
  for (int i = 0; i < 48; ++i) raw[i] = static_cast<unsigned char>(0x10 + i);
  // Formats libfabric cannot show print nothing after the key (note the trailing space).
  EXPECT_EQ("    src_addr: ", src_addr_line(FI_FORMAT_UNSPEC, raw));
  EXPECT_EQ("    src_addr: ", src_addr_line(FI_SOCKADDR, raw));  // family 0x1110
  EXPECT_EQ("    src_addr: ", src_addr_line(FI_PROV_SPECIFIC | 3, raw));
  EXPECT_EQ(
      "    src_addr: fi_sockaddr_ib://[1819:1a1b:1c1d:1e1f:2021:2223:2425:2627]"
      ":0x1213:0xc2d:0x3f",
      src_addr_line(FI_SOCKADDR_IB, raw));
  EXPECT_EQ("    src_addr: fi_addr_psmx2://1716151413121110:1f1e1d1c1b1a1918",
            src_addr_line(FI_ADDR_PSMX2, raw));
  EXPECT_EQ(
      "    src_addr: fi_addr_ib_ud://1011:1213:1415:1617:1819:1a1b:1c1d:1e1f"
      ":23222120/2524/2726/2a",
      src_addr_line(FI_ADDR_IB_UD, raw));
  EXPECT_EQ("    src_addr: fi_addr_efa://[1011:1213:1415:1617:1819:1a1b:1c1d:1e1f]:8480:656811300",
            src_addr_line(FI_ADDR_EFA, raw));
  EXPECT_EQ(
      "    src_addr: fi_addr_psmx3://1716151413121110:1f1e1d1c1b1a1918:2726252423222120"
      ":2f2e2d2c2b2a2928",
      src_addr_line(FI_ADDR_PSMX3, raw));
  EXPECT_EQ("    src_addr: fi_addr_opx://1716151413121110", src_addr_line(FI_ADDR_OPX, raw));
  EXPECT_EQ("    src_addr: fi_addr_cxi://0x13121110", src_addr_line(FI_ADDR_CXI, raw));
  EXPECT_EQ("    src_addr: fi_addr_gni://1716151413121110", src_addr_line(FI_ADDR_GNI, raw));
}

TEST(Tostr, TruncationKeepsTwoBytesSpare) {
  uint64_t caps = FI_MSG | FI_RMA | FI_TAGGED;
  EXPECT_EQ("", str_n(caps, FI_TYPE_CAPS, 1));
  EXPECT_EQ("", str_n(caps, FI_TYPE_CAPS, 2));
  EXPECT_EQ("F", str_n(caps, FI_TYPE_CAPS, 3));
  EXPECT_EQ("FI_MSG,", str_n(caps, FI_TYPE_CAPS, 9));
  EXPECT_EQ("FI_MSG", str_n(caps, FI_TYPE_CAPS, 10));  // "FI_MSG, " then the comma is dropped
  EXPECT_EQ("FI_MSG, F", str_n(caps, FI_TYPE_CAPS, 11));
  EXPECT_EQ("FI_EP_RD", str_n(int{FI_EP_RDM}, FI_TYPE_EP_TYPE, 10));
  EXPECT_EQ("FI_EP_RDM", str_n(int{FI_EP_RDM}, FI_TYPE_EP_TYPE, 11));
  EXPECT_EQ("1.17.", str_n(0, FI_TYPE_VERSION, 7));
  fi_fabric_attr fa{};
  fa.name = const_cast<char*>("fab");
  EXPECT_EQ("fi_fabric_attr:\n    name: fab\n", str_n(fa, FI_TYPE_FABRIC_ATTR, 32));
}

TEST(Tostr, TruncatedAddressMayUseOneMoreByte) {
  fi_info info{};
  info.addr_format = FI_ADDR_STR;
  info.src_addr = const_cast<char*>("fi_sockaddr_in://10.0.0.1:7471");
  // Text stops at len - 2 ("...dest_ad"); the address then adds one character ("f").
  EXPECT_EQ(R"(fi_info:
    caps: [  ]
    mode: [  ]
    addr_format: FI_ADDR_STR
    src_addrlen: 0
    dest_adf)",
            str_n(info, FI_TYPE_INFO, 100));
  EXPECT_EQ(R"(fi_info:
    caps: [  ]
    mode: [  ]
    addr_format: FI_ADDR_STR
    src_addrlen: 0
    dest_addrlen: 0
 f)",
            str_n(info, FI_TYPE_INFO, 110));
}

namespace {
int append_tostr(const fid* f, char* buf, size_t len) {
  size_t used = strnlen(buf, len);
  snprintf(buf + used, len - used, "object of class %zu\n", f->fclass);
  return 0;
}
size_t g_seen_len;
int record_tostr(const fid*, char* buf, size_t len) {
  g_seen_len = len;
  std::strncat(buf, "X\n", len);
  return 0;
}
}  // namespace

TEST(Tostr, FidUsesObjectTostr) {
  fi_ops ops{};
  ops.size = sizeof ops;
  fid f{};
  f.fclass = FI_CLASS_EP;
  f.ops = &ops;
  char expect[64];
  snprintf(expect, sizeof expect, "fid: %p\n", static_cast<void*>(&f));
  EXPECT_EQ(expect, str(f, FI_TYPE_FID));  // no tostr op
  ops.tostr = append_tostr;
  EXPECT_EQ("object of class " + std::to_string(size_t{FI_CLASS_EP}) + "\n", str(f, FI_TYPE_FID));
  ops.size = offsetof(fi_ops, tostr);  // ops too old to have tostr
  EXPECT_EQ(expect, str(f, FI_TYPE_FID));
  f.ops = nullptr;
  EXPECT_EQ(expect, str(f, FI_TYPE_FID));

  // fi_info handle/nic: the op gets the whole buffer and the space left after the text so far.
  ops.size = sizeof ops;
  ops.tostr = record_tostr;
  f.ops = &ops;
  fid_nic nic{};
  nic.fid.ops = &ops;
  fi_info info{};
  info.handle = &f;
  info.nic = &nic;
  char buf[1000];
  ASSERT_NE(nullptr, pc::tostr_r(buf, sizeof buf, &info, FI_TYPE_INFO));
  std::string s = buf;
  EXPECT_NE(std::string::npos, s.find("    dest_addr: (null)\nX\n    fi_tx_attr: (null)\n"));
  EXPECT_NE(std::string::npos, s.find("    fi_fabric_attr: (null)\nX\n"));
  EXPECT_EQ(sizeof buf - (s.size() - 2), g_seen_len);
}

// pollfab-specific: libfabric 1.17's fi_tostr shares one buffer among all threads; ours is per
// thread (same text, but no cross-thread clobbering). The size limit is the reference's.
TEST(Tostr, ThreadLocalBuffer) {
  uint64_t caps = FI_MSG;
  char* mine = pc::tostr(&caps, FI_TYPE_CAPS);
  EXPECT_STREQ("FI_MSG", mine);
  char* other = nullptr;
  std::thread t([&] {
    uint64_t c = FI_RMA;
    other = pc::tostr(&c, FI_TYPE_CAPS);
    EXPECT_STREQ("FI_RMA", other);
  });
  t.join();
  EXPECT_NE(mine, other);
  EXPECT_STREQ("FI_MSG", mine);

  // 8192-byte buffer: at most 8190 characters.
  std::string huge(20000, 'b');
  fi_fabric_attr fa{};
  fa.name = huge.data();
  EXPECT_EQ(8190u, std::strlen(pc::tostr(&fa, FI_TYPE_FABRIC_ATTR)));
}
