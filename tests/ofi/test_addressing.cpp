// Addressing by node and service (fi_getinfo(3), fi_av(3), docs/addressing.md): every info has
// a src_addr; node/service name the destination, or with FI_SOURCE (or a service alone) the
// source; FI_ADDR_STR and FI_SOCKADDR_IN as address formats of the domain (fi_getname,
// fi_av_insert, fi_av_lookup, fi_av_straddr); fi_av_insertsvc and fi_av_insertsym; the error
// paths (unknown host, non-local source, bad service, unsupported format, malformed strings).
// dpdk only: the static neighbour table and an ARP resolution that nobody answers.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "tests/ofi/ofi_fixture.hpp"

namespace pollfab::ofitest {
namespace {

constexpr uint64_t kCaps = FI_MSG | FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM;

std::string scheme() { return std::string("fi_") + test_provider() + "://"; }

// fi_getinfo for the test provider (RDM) with node/service/flags in this address format.
int getinfo(const char* node, const char* service, uint64_t flags, uint32_t fmt, InfoPtr& out) {
  return getinfo_for(FI_EP_RDM, kCaps, node, service, flags, fmt, out);
}

std::string str_of(const void* addr) { return addr ? static_cast<const char*>(addr) : "(null)"; }

// The local IPv4 address the provider's config gives (from a plain info's src_addr).
std::string local_ip() {
  InfoPtr i;
  EXPECT_EQ(getinfo(nullptr, nullptr, 0, FI_ADDR_STR, i), 0);
  if (!i) return {};
  std::string s = str_of(i->src_addr);  // fi_<prov>://[MAC/]IP:PORT/EP
  s = s.substr(s.find("://") + 3);
  if (size_t slash = s.find('/'); slash != std::string::npos && s.find(':') < slash &&
                                  s.substr(0, slash).find('.') == std::string::npos)
    s = s.substr(slash + 1);  // a MAC first
  return s.substr(0, s.find(':'));
}

TEST(OfiAddressing, EveryInfoHasASourceAddress) {
  InfoPtr i;
  ASSERT_EQ(getinfo(nullptr, nullptr, 0, FI_FORMAT_UNSPEC, i), 0);
  for (fi_info* p = i.get(); p; p = p->next) {
    EXPECT_NE(p->src_addr, nullptr);
    EXPECT_GT(p->src_addrlen, 0u);
    EXPECT_EQ(p->dest_addr, nullptr);
  }
  char buf[1024];
  std::string text = fi_tostr_r(buf, sizeof buf, i.get(), FI_TYPE_INFO);
  EXPECT_NE(text.find("src_addr: " + scheme()), std::string::npos) << text;
}

TEST(OfiAddressing, NodeAndServiceNameTheDestination) {
  const std::string ip = local_ip();
  ASSERT_FALSE(ip.empty());
  InfoPtr i;
  ASSERT_EQ(getinfo(ip.c_str(), "4000", 0, FI_ADDR_STR, i), 0);
  EXPECT_EQ(i->addr_format, uint32_t(FI_ADDR_STR));
  EXPECT_EQ(str_of(i->dest_addr), scheme() + ip + ":4000/1");
  EXPECT_NE(i->src_addr, nullptr);
  // The same as a sockaddr_in.
  ASSERT_EQ(getinfo(ip.c_str(), "4001", 0, FI_SOCKADDR_IN, i), 0);
  ASSERT_EQ(i->dest_addrlen, sizeof(sockaddr_in));
  sockaddr_in sin;
  std::memcpy(&sin, i->dest_addr, sizeof sin);
  EXPECT_EQ(sin.sin_family, AF_INET);
  EXPECT_EQ(ntohs(sin.sin_port), 4001);
  char text[INET_ADDRSTRLEN];
  EXPECT_EQ(std::string(inet_ntop(AF_INET, &sin.sin_addr, text, sizeof text)), ip);
  // A host name resolves like the address (localhost -> 127.0.0.1, always in the netns).
  ASSERT_EQ(getinfo("localhost", "4002", 0, FI_ADDR_STR, i), 0);
  EXPECT_EQ(str_of(i->dest_addr), scheme() + "127.0.0.1:4002/1");
  // An FI_ADDR_STR node with service null names the endpoint too.
  const std::string named = scheme() + ip + ":4003/7";
  ASSERT_EQ(getinfo(named.c_str(), nullptr, 0, FI_ADDR_STR, i), 0);
  EXPECT_EQ(str_of(i->dest_addr), named);
}

TEST(OfiAddressing, SourceByNodeWithFiSourceOrByServiceAlone) {
  const std::string ip = local_ip();
  InfoPtr i;
  ASSERT_EQ(getinfo(ip.c_str(), "4100", FI_SOURCE, FI_ADDR_STR, i), 0);
  EXPECT_EQ(i->dest_addr, nullptr);
  EXPECT_NE(str_of(i->src_addr).find(ip + ":4100/"), std::string::npos) << str_of(i->src_addr);
  ASSERT_EQ(getinfo(nullptr, "4101", 0, FI_ADDR_STR, i), 0);
  EXPECT_EQ(i->dest_addr, nullptr);
  EXPECT_NE(str_of(i->src_addr).find(":4101/"), std::string::npos) << str_of(i->src_addr);
}

TEST(OfiAddressing, BadNodesServicesAndFormatsAreNoData) {
  const std::string ip = local_ip();
  InfoPtr i;
  EXPECT_EQ(getinfo("no-such-host.invalid", "4000", 0, FI_FORMAT_UNSPEC, i), -FI_ENODATA);
  EXPECT_EQ(getinfo("198.18.255.254", "4000", FI_SOURCE, FI_FORMAT_UNSPEC, i), -FI_ENODATA);
  for (const char* svc : {"0", "70000", "http", "-1", ""})
    EXPECT_EQ(getinfo(ip.c_str(), svc, 0, FI_FORMAT_UNSPEC, i), -FI_ENODATA) << svc;
  EXPECT_EQ(getinfo(nullptr, nullptr, 0, FI_SOCKADDR_IN6, i), -FI_ENODATA);
  EXPECT_EQ(getinfo("fi_sockets://1.2.3.4:5", nullptr, 0, FI_ADDR_STR, i), -FI_ENODATA);
}

TEST(OfiAddressing, StringAddressesRoundTripAndCarryMessages) {
  Ofi f(kCaps, FI_AV_TABLE, FI_THREAD_DOMAIN, 0, FI_ADDR_STR);
  ASSERT_TRUE(f.ok());
  Ep& a = f.add_ep();
  Ep& b = f.add_ep();
  const std::string name(reinterpret_cast<const char*>(b.name.data()));
  EXPECT_EQ(name.rfind(scheme(), 0), 0u) << name;
  EXPECT_EQ(b.name.size(), name.size() + 1);  // with its NUL
  char buf[128];
  size_t len = sizeof buf;
  ASSERT_EQ(fi_av_lookup(f.av(), b.self, buf, &len), 0);
  EXPECT_EQ(std::string(buf), name);
  len = sizeof buf;
  EXPECT_EQ(std::string(fi_av_straddr(f.av(), name.c_str(), buf, &len)), name);
  // A buffer too small: the size needed, nothing written past it.
  len = 4;
  ASSERT_EQ(fi_getname(&b.ep->fid, buf, &len), -FI_ETOOSMALL);
  EXPECT_EQ(len, name.size() + 1);
  char in[8] = {};
  fi_context rc, sc;
  ASSERT_EQ(fi_recv(b.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &rc), 0);
  ASSERT_EQ(fi_send(a.ep, "string", 6, nullptr, b.self, &sc), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(b.cq, e), 1);
  EXPECT_EQ(std::string(in, 6), "string");
  // Malformed strings are refused one by one.
  const char* bad[] = {"fi_nope://1.2.3.4:5", "garbage", name.c_str()};
  fi_addr_t out[3];
  int errs[3];
  EXPECT_EQ(fi_av_insert(f.av(), bad, 3, out, FI_SYNC_ERR, errs), 1);
  EXPECT_EQ(out[0], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(errs[0], -FI_EINVAL);
  EXPECT_EQ(out[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(out[2], b.self);
}

TEST(OfiAddressing, SockaddrNamesTheFirstEndpointOfAService) {
  Ofi f(kCaps, FI_AV_TABLE, FI_THREAD_DOMAIN, 0, FI_SOCKADDR_IN);
  ASSERT_TRUE(f.ok());
  Ep& first = f.add_ep();  // endpoint id 1: what address:service reaches
  Ep& other = f.add_ep();
  ASSERT_EQ(first.name.size(), sizeof(sockaddr_in));
  sockaddr_in sin;
  std::memcpy(&sin, first.name.data(), sizeof sin);
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
  EXPECT_EQ(std::string(ip), local_ip());
  const std::string svc = std::to_string(ntohs(sin.sin_port));
  fi_addr_t by_svc = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(f.av(), ip, svc.c_str(), &by_svc, 0, nullptr), 1);
  EXPECT_EQ(by_svc, first.self);  // the same name as its sockaddr
  char in[8] = {};
  fi_context rc, sc;
  ASSERT_EQ(fi_recv(first.ep, in, sizeof in, nullptr, FI_ADDR_UNSPEC, &rc), 0);
  ASSERT_EQ(fi_send(other.ep, "svc", 3, nullptr, by_svc, &sc), 0);
  fi_cq_tagged_entry e;
  ASSERT_EQ(Ofi::wait(first.cq, e), 1);
  EXPECT_EQ(std::string(in, 3), "svc");
}

TEST(OfiAddressing, InsertSymCountsNodesAndServices) {
  if (std::string(test_provider()) == "dpdk")
    GTEST_SKIP() << "needs MACs for 2 nodes; the dpdk run covers fi_av_insertsym in "
                    "NeighbourTableAndArpTimeout";
  if (std::string(test_provider()) == "verbs")
    GTEST_SKIP() << "needs QP numbers of 6 services on 2 nodes (resolved by rdma_cm)";
  Ofi f(kCaps, FI_AV_TABLE, FI_THREAD_DOMAIN, 0, FI_ADDR_STR);
  ASSERT_TRUE(f.ok());
  fi_addr_t out[6];
  ASSERT_EQ(fi_av_insertsym(f.av(), "127.0.0.1", 2, "5000", 3, out, 0, nullptr), 6);
  const char* want[] = {"127.0.0.1:5000/1", "127.0.0.1:5001/1", "127.0.0.1:5002/1",
                        "127.0.0.2:5000/1", "127.0.0.2:5001/1", "127.0.0.2:5002/1"};
  for (int k = 0; k < 6; ++k) {
    char buf[128];
    size_t len = sizeof buf;
    ASSERT_EQ(fi_av_lookup(f.av(), out[k], buf, &len), 0);
    EXPECT_EQ(std::string(buf), scheme() + want[k]);
  }
  // Bad arguments.
  EXPECT_EQ(fi_av_insertsym(f.av(), "127.0.0.1", 1, "65535", 2, out, 0, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_av_insertsym(f.av(), "127.0.0.1", 0, "5000", 1, out, 0, nullptr), -FI_EINVAL);
  int err = 0;
  EXPECT_EQ(fi_av_insertsvc(f.av(), "127.0.0.1", "nope", out, FI_SYNC_ERR, &err), 0);
  EXPECT_EQ(out[0], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(err, -FI_EINVAL);
  EXPECT_EQ(fi_av_insertsvc(f.av(), "no-such-host.invalid", "5000", out, FI_SYNC_ERR, &err), 0);
  EXPECT_EQ(err, -FI_ENODATA);
}

// dpdk: a name without a MAC is completed by the static neighbour table (dpdk.neighbours), else
// by ARP; an address nobody answers fails with FI_EHOSTUNREACH after dpdk.arp_timeout_ms.
TEST(OfiAddressing, NeighbourTableAndArpTimeout) {
  if (std::string(test_provider()) != "dpdk") GTEST_SKIP() << "ARP is the dpdk provider's";
  setenv("FI_DPDK_NEIGHBOURS", "198.18.0.77 02:00:00:00:00:77", 1);
  setenv("FI_DPDK_ARP_TIMEOUT_MS", "300", 1);
  {
    Ofi f(kCaps, FI_AV_TABLE, FI_THREAD_DOMAIN, 0, FI_ADDR_STR);
    ASSERT_TRUE(f.ok());
    fi_addr_t a[2];
    ASSERT_EQ(fi_av_insertsym(f.av(), "198.18.0.77", 1, "4000", 2, a, 0, nullptr), 2);
    char buf[128];
    size_t len = sizeof buf;
    ASSERT_EQ(fi_av_lookup(f.av(), a[1], buf, &len), 0);
    EXPECT_EQ(std::string(buf), "fi_dpdk://02:00:00:00:00:77/198.18.0.77:4001/1");
    // Nobody has 198.18.0.99: resolution gives up.
    int err = 0;
    fi_addr_t none = 0;
    EXPECT_EQ(fi_av_insertsvc(f.av(), "198.18.0.99", "4000", &none, FI_SYNC_ERR, &err), 0);
    EXPECT_EQ(none, FI_ADDR_NOTAVAIL);
    EXPECT_EQ(err, -FI_EHOSTUNREACH);
    // This port's own address resolves to its own MAC (no ARP).
    Ep& e = f.add_ep();
    const std::string mine(reinterpret_cast<const char*>(e.name.data()));
    const std::string ip = local_ip();
    fi_addr_t self = FI_ADDR_NOTAVAIL;
    std::string svc = mine.substr(mine.rfind(':') + 1);
    svc = svc.substr(0, svc.find('/'));
    ASSERT_EQ(fi_av_insertsvc(f.av(), ip.c_str(), svc.c_str(), &self, 0, nullptr), 1);
    EXPECT_EQ(self, e.self);
  }
  unsetenv("FI_DPDK_NEIGHBOURS");
  unsetenv("FI_DPDK_ARP_TIMEOUT_MS");
}

}  // namespace
}  // namespace pollfab::ofitest
