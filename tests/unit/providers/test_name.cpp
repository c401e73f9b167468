// Endpoint names of the packet providers (providers/packet/name.hpp): the verbs kind with its
// UD QP number, next to the dpdk and udp kinds it must not disturb.
#include <gtest/gtest.h>

#include <cstring>

#include "providers/packet/name.hpp"

using pollfab::providers::packet::kNameBytes;
using pollfab::providers::packet::Name;
using pollfab::providers::packet::NameKind;

namespace {

Name verbs_name(uint32_t qpn) {
  Name n;
  n.kind = NameKind::Verbs;
  n.ipv4 = 0xC6120001;  // 198.18.0.1
  n.udp_port = 4000;
  n.ep_id = 3;
  n.set_qpn(qpn);
  return n;
}

}  // namespace

TEST(VerbsName, BinaryRoundTripKeepsTheQpNumber) {
  uint8_t b[kNameBytes];
  verbs_name(0xabcdef).encode(b);
  Name back;
  ASSERT_TRUE(Name::decode(b, sizeof b, NameKind::Verbs, back));
  EXPECT_EQ(back.qpn(), 0xabcdefu);
  EXPECT_EQ(back.ipv4, 0xC6120001u);
  EXPECT_EQ(back.udp_port, 4000);
  EXPECT_EQ(back.ep_id, 3);
  // A verbs name is not a udp or dpdk name.
  EXPECT_FALSE(Name::decode(b, sizeof b, NameKind::Udp, back));
  EXPECT_FALSE(Name::decode(b, sizeof b, NameKind::Dpdk, back));
}

TEST(VerbsName, TextRoundTrip) {
  const Name n = verbs_name(17);
  EXPECT_EQ(n.str(), "fi_verbs://q17/198.18.0.1:4000/3");
  Name back;
  ASSERT_TRUE(Name::parse(n.str(), NameKind::Verbs, back));
  EXPECT_EQ(back.qpn(), 17u);
  EXPECT_EQ(back.peer(), n.peer());
  // Without a QP number: resolved later by service ID resolution.
  ASSERT_TRUE(Name::parse("fi_verbs://198.18.0.1:4000", NameKind::Verbs, back));
  EXPECT_EQ(back.qpn(), 0u);
  EXPECT_EQ(back.str(), "fi_verbs://198.18.0.1:4000/1");
}

TEST(VerbsName, MalformedTextIsRefused) {
  Name n;
  EXPECT_FALSE(Name::parse("fi_verbs://q16777216/198.18.0.1:4000", NameKind::Verbs, n));  // > 24 bits
  EXPECT_FALSE(Name::parse("fi_verbs://qx/198.18.0.1:4000", NameKind::Verbs, n));
  EXPECT_FALSE(Name::parse("fi_verbs://02:00:00:00:00:01/198.18.0.1:4000", NameKind::Verbs, n));
  EXPECT_FALSE(Name::parse("fi_udp://198.18.0.1:4000", NameKind::Verbs, n));
}

// The transport knows a verbs peer by GID address and QP number: what a received datagram shows
// (no service), so the service stays out of the host address.
TEST(VerbsName, HostAddressLeavesTheServiceOut) {
  Name a = verbs_name(17), b = verbs_name(17);
  b.udp_port = 0;
  EXPECT_EQ(a.host(), b.host());
  EXPECT_FALSE(verbs_name(17).host() == verbs_name(18).host());
  // udp keeps its port in the host address.
  Name u;
  u.kind = NameKind::Udp;
  u.ipv4 = 0x7f000001;
  u.udp_port = 1;
  Name v = u;
  v.udp_port = 2;
  EXPECT_FALSE(u.host() == v.host());
}

// The AV's reverse lookups compare identities: a verbs name given with its service and the same
// endpoint seen as a packet's sender (no service) are one peer; different QPs are not.
TEST(VerbsName, IdentityLeavesTheServiceOutOnceTheQpIsKnown) {
  using pollfab::providers::packet::NameFormat;
  const NameFormat fmt(NameKind::Verbs);
  uint8_t a[kNameBytes], b[kNameBytes], c[kNameBytes];
  verbs_name(17).encode(a);
  Name seen = verbs_name(17);
  seen.udp_port = 0;
  seen.encode(b);
  verbs_name(18).encode(c);
  EXPECT_EQ(fmt.identity(a), fmt.identity(b));
  EXPECT_NE(fmt.identity(a), fmt.identity(c));
  // Unresolved names (no QP number) keep their service: it is all that tells them apart.
  verbs_name(0).encode(a);
  Name other = verbs_name(0);
  other.udp_port = 4001;
  other.encode(b);
  EXPECT_NE(fmt.identity(a), fmt.identity(b));
  // udp names are identified by every byte.
  const NameFormat ufmt(NameKind::Udp);
  Name u;
  u.kind = NameKind::Udp;
  u.ipv4 = 0x7f000001;
  u.udp_port = 1;
  u.encode(a);
  u.udp_port = 2;
  u.encode(b);
  EXPECT_NE(ufmt.identity(a), ufmt.identity(b));
}
