// The fi_info nic (lib/core/nic.hpp): what an application sees through fi_dupinfo, fi_freeinfo
// and fi_tostr. The expected text is the layout Debian's libfabric 1.17 prints for the verbs
// provider's rxe0 in the soft-RoCE guest (fi_info -p verbs -v), with this test's values.
#include "lib/core/nic.hpp"

#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <string>

#include "lib/core/info_alloc.hpp"
#include "lib/core/tostr.hpp"

namespace pc = pollfab::core;

namespace {

pc::NicDesc rxe() {
  pc::NicDesc d;
  d.name = "rxe0";
  d.device_id = "0x0000";
  d.device_version = "0";
  d.vendor_id = "0xffffff";
  d.firmware = "0.0.0";
  d.address = "::ffff:198.18.0.1";
  d.mtu = 1024;
  d.speed = 10000000000ull;
  d.state = FI_LINK_UP;
  d.network_type = "Ethernet";
  return d;
}

const char* kRxeText =
    "    nic:\n"
    "        fi_device_attr:\n"
    "            name: rxe0\n"
    "            device_id: 0x0000\n"
    "            device_version: 0\n"
    "            vendor_id: 0xffffff\n"
    "            driver: (null)\n"
    "            firmware: 0.0.0\n"
    "        fi_bus_attr:\n"
    "            bus_type: FI_BUS_UNKNOWN\n"
    "        fi_link_attr:\n"
    "            address: ::ffff:198.18.0.1\n"
    "            mtu: 1024\n"
    "            speed: 10000000000\n"
    "            state: FI_LINK_UP\n"
    "            network_type: Ethernet\n";

TEST(Nic, AttributesAreThere) {
  fid_nic* n = pc::make_nic(rxe());
  ASSERT_NE(nullptr, n);
  EXPECT_EQ(FI_CLASS_NIC, n->fid.fclass);
  ASSERT_NE(nullptr, n->device_attr);
  EXPECT_STREQ("rxe0", n->device_attr->name);
  EXPECT_EQ(nullptr, n->device_attr->driver);  // empty = absent
  ASSERT_NE(nullptr, n->bus_attr);
  EXPECT_EQ(FI_BUS_UNKNOWN, n->bus_attr->bus_type);
  ASSERT_NE(nullptr, n->link_attr);
  EXPECT_EQ(1024u, n->link_attr->mtu);
  EXPECT_EQ(10000000000ull, n->link_attr->speed);
  EXPECT_EQ(FI_LINK_UP, n->link_attr->state);
  EXPECT_STREQ("Ethernet", n->link_attr->network_type);
  EXPECT_EQ(0, fi_close(&n->fid));
}

TEST(Nic, DupinfoCopiesItAndFreeinfoReleasesBoth) {
  fi_info* info = pc::allocinfo();
  ASSERT_NE(nullptr, info);
  info->nic = pc::make_nic(rxe());
  fi_info* dup = pc::dupinfo(info);
  ASSERT_NE(nullptr, dup);
  ASSERT_NE(nullptr, dup->nic);
  EXPECT_NE(info->nic, dup->nic);
  EXPECT_NE(info->nic->link_attr, dup->nic->link_attr);
  EXPECT_NE(info->nic->device_attr->name, dup->nic->device_attr->name);
  pc::freeinfo(info);  // the copy stands alone (valgrind/ASan: no leak, no use after free)
  EXPECT_STREQ("rxe0", dup->nic->device_attr->name);
  EXPECT_EQ(1024u, dup->nic->link_attr->mtu);
  pc::freeinfo(dup);
}

TEST(Nic, OtherControlCommandsAreNotSupported) {
  fid_nic* n = pc::make_nic(rxe());
  ASSERT_NE(nullptr, n);
  EXPECT_EQ(-FI_ENOSYS, n->fid.ops->control(&n->fid, FI_GETWAIT, nullptr));
  EXPECT_EQ(-FI_EINVAL, n->fid.ops->control(&n->fid, FI_DUP, nullptr));
  fi_close(&n->fid);
}

TEST(Nic, TostrPrintsLibfabricsLayout) {
  fi_info* info = pc::allocinfo();
  info->nic = pc::make_nic(rxe());
  const std::string text = pc::tostr(info, FI_TYPE_INFO);
  const size_t at = text.find("    nic:\n");
  ASSERT_NE(std::string::npos, at) << text;
  EXPECT_EQ(kRxeText, text.substr(at));
  pc::freeinfo(info);
}

TEST(Nic, TostrTruncatesToTheSpaceLeft) {
  fid_nic* n = pc::make_nic(rxe());
  char buf[24] = "abc";
  ASSERT_EQ(0, n->fid.ops->tostr(&n->fid, buf, sizeof buf - 3));
  EXPECT_EQ(std::string("abc") + std::string(kRxeText).substr(0, sizeof buf - 4), buf);
  fi_close(&n->fid);
}

TEST(Nic, PciBusIsPrinted) {
  pc::NicDesc d = rxe();
  d.bus_type = FI_BUS_PCI;
  d.pci = {0, 0x3b, 0, 1};
  fid_nic* n = pc::make_nic(d);
  char buf[2048] = "";
  ASSERT_EQ(0, n->fid.ops->tostr(&n->fid, buf, sizeof buf));
  EXPECT_NE(nullptr, strstr(buf, "            bus_type: FI_BUS_PCI\n"
                                 "            fi_pci_attr:\n"
                                 "                domain_id: 0\n"
                                 "                bus_id: 59\n"
                                 "                device_id: 0\n"
                                 "                function_id: 1\n"))
      << buf;
  fi_close(&n->fid);
}

}  // namespace
