// Tests for fi_info allocation, duplication and release (pollfab::core::allocinfo / dupinfo /
// dupinfo_list / freeinfo). Run under valgrind to check that nothing leaks and that memory
// built by an "application" with calloc/strdup is released with the matching free().
#include "lib/core/info_alloc.hpp"

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>

namespace pc = pollfab::core;

namespace {

template <class T>
bool all_zero(const T* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = 0; i < sizeof(T); ++i)
    if (b[i]) return false;
  return true;
}

// What an application does: calloc the structs, strdup the strings, malloc the buffers.
fi_info* app_build_hints(const char* prov, const char* fabric, const char* domain) {
  auto* h = static_cast<fi_info*>(calloc(1, sizeof(fi_info)));
  h->caps = FI_MSG | FI_RMA;
  h->mode = FI_CONTEXT;
  h->addr_format = FI_SOCKADDR_IN;
  auto* sin = static_cast<sockaddr_in*>(calloc(1, sizeof(sockaddr_in)));
  sin->sin_family = AF_INET;
  sin->sin_port = htons(4242);
  h->src_addr = sin;
  h->src_addrlen = sizeof(*sin);
  h->dest_addr = malloc(3);
  memcpy(h->dest_addr, "abc", 3);
  h->dest_addrlen = 3;
  h->handle = reinterpret_cast<fid_t>(0x1234);
  h->tx_attr = static_cast<fi_tx_attr*>(calloc(1, sizeof(fi_tx_attr)));
  h->tx_attr->size = 128;
  h->tx_attr->inject_size = 64;
  h->rx_attr = static_cast<fi_rx_attr*>(calloc(1, sizeof(fi_rx_attr)));
  h->rx_attr->size = 256;
  h->ep_attr = static_cast<fi_ep_attr*>(calloc(1, sizeof(fi_ep_attr)));
  h->ep_attr->type = FI_EP_RDM;
  h->ep_attr->auth_key = static_cast<uint8_t*>(malloc(4));
  memcpy(h->ep_attr->auth_key, "\x01\x02\x03\x04", 4);
  h->ep_attr->auth_key_size = 4;
  h->domain_attr = static_cast<fi_domain_attr*>(calloc(1, sizeof(fi_domain_attr)));
  h->domain_attr->name = domain ? strdup(domain) : nullptr;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR;
  h->domain_attr->domain = reinterpret_cast<fid_domain*>(0x5678);  // not owned
  h->domain_attr->auth_key = static_cast<uint8_t*>(malloc(2));
  memcpy(h->domain_attr->auth_key, "\xaa\xbb", 2);
  h->domain_attr->auth_key_size = 2;
  h->fabric_attr = static_cast<fi_fabric_attr*>(calloc(1, sizeof(fi_fabric_attr)));
  h->fabric_attr->prov_name = prov ? strdup(prov) : nullptr;
  h->fabric_attr->name = fabric ? strdup(fabric) : nullptr;
  h->fabric_attr->prov_version = FI_VERSION(1, 2);
  return h;
}

int g_nic_closes = 0;
int fake_nic_close(fid_t) {
  ++g_nic_closes;
  return 0;
}

}  // namespace

TEST(AllocInfo, AllAttributesPresentAndZeroed) {
  for (fi_info* info : {pc::allocinfo(), pc::dupinfo(nullptr)}) {
    ASSERT_NE(nullptr, info);
    EXPECT_EQ(nullptr, info->next);
    EXPECT_EQ(0u, info->caps);
    EXPECT_EQ(nullptr, info->src_addr);
    EXPECT_EQ(nullptr, info->dest_addr);
    EXPECT_EQ(nullptr, info->nic);
    ASSERT_NE(nullptr, info->tx_attr);
    ASSERT_NE(nullptr, info->rx_attr);
    ASSERT_NE(nullptr, info->ep_attr);
    ASSERT_NE(nullptr, info->domain_attr);
    ASSERT_NE(nullptr, info->fabric_attr);
    EXPECT_TRUE(all_zero(info->tx_attr));
    EXPECT_TRUE(all_zero(info->rx_attr));
    EXPECT_TRUE(all_zero(info->ep_attr));
    EXPECT_TRUE(all_zero(info->domain_attr));
    EXPECT_TRUE(all_zero(info->fabric_attr));
    pc::freeinfo(info);
  }
}

TEST(DupInfo, DeepCopiesEverythingOwned) {
  fi_info* src = app_build_hints("tcp", "192.168.1.0/24", "eth0");
  fi_info* d = pc::dupinfo(src);
  ASSERT_NE(nullptr, d);

  EXPECT_EQ(src->caps, d->caps);
  EXPECT_EQ(src->mode, d->mode);
  EXPECT_EQ(src->addr_format, d->addr_format);
  EXPECT_EQ(src->handle, d->handle);
  EXPECT_EQ(nullptr, d->next);
  EXPECT_EQ(nullptr, d->nic);

  ASSERT_EQ(src->src_addrlen, d->src_addrlen);
  ASSERT_NE(src->src_addr, d->src_addr);
  EXPECT_EQ(0, memcmp(src->src_addr, d->src_addr, d->src_addrlen));
  ASSERT_EQ(3u, d->dest_addrlen);
  ASSERT_NE(src->dest_addr, d->dest_addr);
  EXPECT_EQ(0, memcmp("abc", d->dest_addr, 3));

  ASSERT_NE(src->tx_attr, d->tx_attr);
  EXPECT_EQ(0, memcmp(src->tx_attr, d->tx_attr, sizeof(fi_tx_attr)));
  ASSERT_NE(src->rx_attr, d->rx_attr);
  EXPECT_EQ(0, memcmp(src->rx_attr, d->rx_attr, sizeof(fi_rx_attr)));

  ASSERT_NE(src->ep_attr, d->ep_attr);
  EXPECT_EQ(FI_EP_RDM, d->ep_attr->type);
  ASSERT_EQ(4u, d->ep_attr->auth_key_size);
  ASSERT_NE(src->ep_attr->auth_key, d->ep_attr->auth_key);
  EXPECT_EQ(0, memcmp("\x01\x02\x03\x04", d->ep_attr->auth_key, 4));

  ASSERT_NE(src->domain_attr, d->domain_attr);
  EXPECT_EQ(src->domain_attr->mr_mode, d->domain_attr->mr_mode);
  EXPECT_EQ(src->domain_attr->domain, d->domain_attr->domain);  // plain value
  ASSERT_NE(src->domain_attr->name, d->domain_attr->name);
  EXPECT_STREQ("eth0", d->domain_attr->name);
  ASSERT_NE(src->domain_attr->auth_key, d->domain_attr->auth_key);
  EXPECT_EQ(0, memcmp("\xaa\xbb", d->domain_attr->auth_key, 2));

  ASSERT_NE(src->fabric_attr, d->fabric_attr);
  EXPECT_STREQ("tcp", d->fabric_attr->prov_name);
  EXPECT_NE(src->fabric_attr->prov_name, d->fabric_attr->prov_name);
  EXPECT_STREQ("192.168.1.0/24", d->fabric_attr->name);
  EXPECT_NE(src->fabric_attr->name, d->fabric_attr->name);
  EXPECT_EQ(FI_VERSION(1, 2), d->fabric_attr->prov_version);

  // The copy is independent of the source.
  pc::freeinfo(src);
  EXPECT_STREQ("tcp", d->fabric_attr->prov_name);
  EXPECT_EQ(0, memcmp("abc", d->dest_addr, 3));
  pc::freeinfo(d);
}

TEST(DupInfo, NullMembersStayNull) {
  auto* src = static_cast<fi_info*>(calloc(1, sizeof(fi_info)));  // no attrs at all
  src->caps = FI_TAGGED;
  src->src_addrlen = 16;  // length without a buffer: stays absent
  fi_info* d = pc::dupinfo(src);
  ASSERT_NE(nullptr, d);
  EXPECT_EQ(FI_TAGGED, d->caps);
  EXPECT_EQ(nullptr, d->src_addr);
  EXPECT_EQ(16u, d->src_addrlen);
  EXPECT_EQ(nullptr, d->tx_attr);
  EXPECT_EQ(nullptr, d->rx_attr);
  EXPECT_EQ(nullptr, d->ep_attr);
  EXPECT_EQ(nullptr, d->domain_attr);
  EXPECT_EQ(nullptr, d->fabric_attr);
  pc::freeinfo(d);
  pc::freeinfo(src);

  // Attribute structs present, but without names or keys.
  fi_info* a = pc::allocinfo();
  fi_info* b = pc::dupinfo(a);
  ASSERT_NE(nullptr, b);
  EXPECT_EQ(nullptr, b->domain_attr->name);
  EXPECT_EQ(nullptr, b->domain_attr->auth_key);
  EXPECT_EQ(nullptr, b->ep_attr->auth_key);
  EXPECT_EQ(nullptr, b->fabric_attr->name);
  EXPECT_EQ(nullptr, b->fabric_attr->prov_name);
  pc::freeinfo(a);
  pc::freeinfo(b);
}

TEST(DupInfo, ZeroLengthBuffersStayPresent) {
  fi_info* src = pc::allocinfo();
  src->src_addr = malloc(1);
  src->src_addrlen = 0;
  src->ep_attr->auth_key = static_cast<uint8_t*>(malloc(1));
  src->ep_attr->auth_key_size = 0;
  fi_info* d = pc::dupinfo(src);
  ASSERT_NE(nullptr, d);
  EXPECT_NE(nullptr, d->src_addr);
  EXPECT_NE(src->src_addr, d->src_addr);
  EXPECT_EQ(0u, d->src_addrlen);
  EXPECT_NE(nullptr, d->ep_attr->auth_key);
  pc::freeinfo(src);
  pc::freeinfo(d);
}

TEST(DupInfo, OnlyTheFirstEntryIsCopied) {
  fi_info* a = app_build_hints("tcp", nullptr, nullptr);
  a->next = app_build_hints("udp", nullptr, nullptr);
  fi_info* d = pc::dupinfo(a);
  ASSERT_NE(nullptr, d);
  EXPECT_EQ(nullptr, d->next);
  EXPECT_STREQ("tcp", d->fabric_attr->prov_name);
  pc::freeinfo(d);
  pc::freeinfo(a);  // frees both entries
}

TEST(DupInfoList, CopiesWholeListInOrder) {
  EXPECT_EQ(nullptr, pc::dupinfo_list(nullptr));
  const char* names[] = {"a", "b", "c"};
  fi_info* head = nullptr;
  fi_info** tail = &head;
  for (const char* n : names) {
    *tail = app_build_hints(n, n, n);
    tail = &(*tail)->next;
  }
  fi_info* d = pc::dupinfo_list(head);
  int i = 0;
  for (fi_info* p = d; p; p = p->next, ++i) {
    ASSERT_LT(i, 3);
    EXPECT_STREQ(names[i], p->fabric_attr->prov_name);
  }
  EXPECT_EQ(3, i);
  pc::freeinfo(head);
  pc::freeinfo(d);
}

TEST(FreeInfo, NullIsNoop) { pc::freeinfo(nullptr); }

TEST(FreeInfo, AppBuiltHintsWithPartialAttrs) {
  // Typical application hints: calloc'd info, some attrs, strdup'd prov_name.
  auto* h = static_cast<fi_info*>(calloc(1, sizeof(fi_info)));
  h->fabric_attr = static_cast<fi_fabric_attr*>(calloc(1, sizeof(fi_fabric_attr)));
  h->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
  h->ep_attr = static_cast<fi_ep_attr*>(calloc(1, sizeof(fi_ep_attr)));
  h->ep_attr->type = FI_EP_MSG;
  pc::freeinfo(h);  // valgrind: no leak, no mismatched free
}

TEST(FreeInfo, ClosesNicButDuplicatesDropIt) {
  fi_ops ops{};
  ops.size = sizeof(fi_ops);
  ops.close = fake_nic_close;
  fid_nic nic{};
  nic.fid.fclass = FI_CLASS_NIC;
  nic.fid.ops = &ops;

  fi_info* info = pc::allocinfo();
  info->nic = &nic;
  fi_info* d = pc::dupinfo(info);
  ASSERT_NE(nullptr, d);
  EXPECT_EQ(nullptr, d->nic);

  g_nic_closes = 0;
  pc::freeinfo(d);
  EXPECT_EQ(0, g_nic_closes);
  pc::freeinfo(info);
  EXPECT_EQ(1, g_nic_closes);
}

TEST(FreeInfo, NicWithoutUsableCloseIsSkipped) {
  g_nic_closes = 0;
  fi_ops small{};
  small.size = offsetof(fi_ops, close);  // too small to contain close
  small.close = fake_nic_close;
  fid_nic nic1{};
  nic1.fid.ops = &small;
  fid_nic nic2{};
  nic2.fid.ops = nullptr;
  fi_ops noclose{};
  noclose.size = sizeof(fi_ops);
  fid_nic nic3{};
  nic3.fid.ops = &noclose;

  for (fid_nic* n : {&nic1, &nic2, &nic3}) {
    fi_info* info = pc::allocinfo();
    info->nic = n;
    pc::freeinfo(info);
  }
  EXPECT_EQ(0, g_nic_closes);
}

TEST(FreeInfo, ManyRoundTrips) {
  fi_info* src = app_build_hints("tcp", "fab", "dom");
  for (int i = 0; i < 1000; ++i) {
    fi_info* d = pc::dupinfo(src);
    ASSERT_NE(nullptr, d);
    fi_info* d2 = pc::dupinfo(d);
    ASSERT_NE(nullptr, d2);
    pc::freeinfo(d);
    EXPECT_STREQ("dom", d2->domain_attr->name);
    pc::freeinfo(d2);
  }
  pc::freeinfo(src);
}
