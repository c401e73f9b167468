// fi_getinfo(3) matching (lib/core/getinfo.cpp) against a fake provider, including error paths.
#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <cstdlib>
#include <cstring>

#include "lib/core/getinfo.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/provider.hpp"

using namespace pollfab::core;

namespace {

class FakeProvider final : public Provider {
 public:
  explicit FakeProvider(const char* name, uint64_t mode = 0) : name_(name), mode_(mode) {}
  const char* name() const noexcept override { return name_; }
  int candidates(uint32_t, const char*, const char*, uint64_t, const fi_info*,
                 std::vector<fi_info*>& out) override {
    for (fi_ep_type t : {FI_EP_RDM, FI_EP_DGRAM}) {
      fi_info* i = allocinfo();
      i->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | FI_SOURCE_ERR | FI_REMOTE_COMM;
      i->mode = mode_;
      i->addr_format = FI_FORMAT_UNSPEC;
      i->tx_attr->caps = FI_MSG | FI_TAGGED | FI_SEND;
      i->tx_attr->msg_order = FI_ORDER_SAS;
      i->tx_attr->inject_size = 64;
      i->tx_attr->size = 128;
      i->tx_attr->iov_limit = 4;
      i->rx_attr->caps = FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE | FI_SOURCE_ERR;
      i->rx_attr->msg_order = FI_ORDER_SAS;
      i->rx_attr->size = 128;
      i->rx_attr->iov_limit = 4;
      i->ep_attr->type = t;
      i->ep_attr->max_msg_size = t == FI_EP_RDM ? 1 << 30 : 1400;
      i->ep_attr->tx_ctx_cnt = i->ep_attr->rx_ctx_cnt = 1;
      i->domain_attr->name = strdup("fake0");
      i->domain_attr->threading = FI_THREAD_DOMAIN;
      i->domain_attr->control_progress = FI_PROGRESS_AUTO;
      i->domain_attr->data_progress = FI_PROGRESS_MANUAL;
      i->domain_attr->av_type = FI_AV_UNSPEC;
      i->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
      i->domain_attr->cq_data_size = 8;
      i->domain_attr->caps = FI_REMOTE_COMM;
      i->fabric_attr->name = strdup("fake");
      i->fabric_attr->prov_name = strdup(name_);
      i->fabric_attr->prov_version = version();
      out.push_back(i);
    }
    return 0;
  }
  int fabric(fi_fabric_attr*, fid_fabric**, void*) override { return -FI_ENOSYS; }

 private:
  const char* name_;
  uint64_t mode_;
};

FakeProvider g_plain("fakeprov");
FakeProvider g_needs_ctx("ctxprov", FI_CONTEXT);

class GetinfoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_provider(&g_plain);
    register_provider(&g_needs_ctx);
  }
  void SetUp() override {
    unsetenv("FI_PROVIDER");
    hints_ = allocinfo();
  }
  void TearDown() override {
    freeinfo(hints_);
    freeinfo(info_);
  }
  int get(uint32_t version = FI_VERSION(1, 17), uint64_t flags = 0, bool with_hints = true) {
    freeinfo(info_);
    info_ = nullptr;
    return getinfo(version, nullptr, nullptr, flags, with_hints ? hints_ : nullptr, &info_);
  }
  int count() const {
    int n = 0;
    for (fi_info* i = info_; i; i = i->next) ++n;
    return n;
  }
  void only(const char* prov) { hints_->fabric_attr->prov_name = strdup(prov); }
  fi_info* hints_ = nullptr;
  fi_info* info_ = nullptr;
};

}  // namespace

TEST_F(GetinfoTest, ArgumentAndVersionErrors) {
  EXPECT_EQ(getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, nullptr), -FI_EINVAL);
  EXPECT_EQ(get(FI_VERSION(1, 18)), -FI_ENOSYS);
  EXPECT_EQ(get(FI_VERSION(2, 0)), -FI_ENOSYS);
  EXPECT_EQ(info_, nullptr);
}

TEST_F(GetinfoTest, NoHintsReturnsEverythingWithApiVersion) {
  ASSERT_EQ(get(FI_VERSION(1, 9), 0, false), 0);
  EXPECT_EQ(count(), 4);  // 2 providers x (RDM, DGRAM), best first in registry order
  EXPECT_STREQ(info_->fabric_attr->prov_name, "fakeprov");
  EXPECT_EQ(info_->ep_attr->type, FI_EP_RDM);
  EXPECT_EQ(info_->fabric_attr->api_version, FI_VERSION(1, 9));
  EXPECT_TRUE(info_->caps & FI_TAGGED);
}

TEST_F(GetinfoTest, EndpointTypeMismatchIsNoData) {
  hints_->ep_attr->type = FI_EP_MSG;
  EXPECT_EQ(get(), -FI_ENODATA);
  hints_->ep_attr->type = FI_EP_DGRAM;
  only("fakeprov");
  ASSERT_EQ(get(), 0);
  EXPECT_EQ(count(), 1);
  EXPECT_EQ(info_->ep_attr->type, FI_EP_DGRAM);
}

// Secondary caps are added unasked but for the opt-in (FI_SOURCE_ERR: it changes completions)
// and the costly (FI_SOURCE: a lookup a receive), which hints naming caps get only by asking.
TEST_F(GetinfoTest, PrimaryCapsOnlyIfHintedSecondaryAddedButOptInAndCostlyOnesOnlyIfAsked) {
  hints_->caps = FI_MSG;
  only("fakeprov");
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_MSG);
  EXPECT_FALSE(info_->caps & FI_TAGGED);       // never FI_TAGGED for an FI_MSG request
  EXPECT_TRUE(info_->caps & FI_REMOTE_COMM);   // secondary
  EXPECT_FALSE(info_->caps & FI_SOURCE);       // costly
  EXPECT_FALSE(info_->rx_attr->caps & FI_SOURCE);
  EXPECT_FALSE(info_->caps & FI_SOURCE_ERR);   // opt-in
  EXPECT_FALSE(info_->rx_attr->caps & FI_SOURCE_ERR);
  hints_->caps = FI_MSG | FI_SOURCE;
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_SOURCE);
  EXPECT_TRUE(info_->rx_attr->caps & FI_SOURCE);
  EXPECT_FALSE(info_->caps & FI_SOURCE_ERR);
  hints_->caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_SOURCE_ERR);
  EXPECT_TRUE(info_->rx_attr->caps & FI_SOURCE_ERR);
  hints_->caps = FI_MSG | FI_SOURCE_ERR;  // fi_getinfo(3): it must be paired with FI_SOURCE
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_SOURCE_ERR);
  EXPECT_TRUE(info_->caps & FI_SOURCE);
  EXPECT_TRUE(info_->rx_attr->caps & FI_SOURCE);
  hints_->caps = FI_MSG;  // asked in rx_attr only: the info's caps (what the endpoint acts on) agree
  hints_->rx_attr->caps = FI_MSG | FI_RECV | FI_SOURCE;
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_SOURCE);
  EXPECT_TRUE(info_->rx_attr->caps & FI_SOURCE);
  hints_->rx_attr->caps = 0;
  fi_rx_attr* rx = hints_->rx_attr;  // no rx_attr hints: the rx caps leave out what the info does
  hints_->rx_attr = nullptr;
  ASSERT_EQ(get(), 0);
  hints_->rx_attr = rx;
  EXPECT_FALSE(info_->caps & FI_SOURCE);
  EXPECT_FALSE(info_->rx_attr->caps & FI_SOURCE);
  EXPECT_FALSE(info_->rx_attr->caps & FI_SOURCE_ERR);
  EXPECT_TRUE(info_->rx_attr->caps & FI_MSG);
  hints_->caps = 0;  // no caps named: every cap offered, FI_SOURCE among them, but the opt-in
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_TAGGED);
  EXPECT_TRUE(info_->caps & FI_SOURCE);
  EXPECT_FALSE(info_->caps & FI_SOURCE_ERR);
  hints_->rx_attr->caps = FI_MSG | FI_RECV | FI_SOURCE_ERR;  // the opt-in, asked in rx_attr only
  ASSERT_EQ(get(), 0);
  EXPECT_TRUE(info_->caps & FI_SOURCE_ERR);
  EXPECT_TRUE(info_->caps & FI_SOURCE);
  EXPECT_TRUE(info_->rx_attr->caps & FI_SOURCE_ERR);
  hints_->caps = FI_RMA;                  // not offered
  EXPECT_EQ(get(), -FI_ENODATA);
}

TEST_F(GetinfoTest, ProviderNeedingModeBitIsSkipped) {
  hints_->mode = 0;
  ASSERT_EQ(get(), 0);
  for (fi_info* i = info_; i; i = i->next) EXPECT_STRNE(i->fabric_attr->prov_name, "ctxprov");
  hints_->mode = FI_CONTEXT | FI_CONTEXT2;
  ASSERT_EQ(get(), 0);
  EXPECT_EQ(count(), 4);
}

TEST_F(GetinfoTest, MrModeRulesApi15) {
  only("fakeprov");
  hints_->domain_attr->mr_mode = 0;
  ASSERT_EQ(get(FI_VERSION(1, 5)), 0);
  EXPECT_EQ(info_->domain_attr->mr_mode, 0);
  hints_->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
  ASSERT_EQ(get(FI_VERSION(1, 17)), 0);
  EXPECT_EQ(info_->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_ALLOCATED);
  hints_->domain_attr->mr_mode = FI_MR_BASIC;
  ASSERT_EQ(get(FI_VERSION(1, 4)), 0);
  EXPECT_EQ(info_->domain_attr->mr_mode, FI_MR_BASIC);
}

TEST_F(GetinfoTest, OverridesThreadingAvTypeAndProgress) {
  only("fakeprov");
  hints_->domain_attr->threading = FI_THREAD_SAFE;
  hints_->domain_attr->av_type = FI_AV_MAP;
  ASSERT_EQ(get(), 0);
  EXPECT_EQ(info_->domain_attr->threading, FI_THREAD_SAFE);
  EXPECT_EQ(info_->domain_attr->av_type, FI_AV_MAP);
  hints_->domain_attr->data_progress = FI_PROGRESS_AUTO;  // provider is manual only
  EXPECT_EQ(get(), -FI_ENODATA);
  hints_->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints_->domain_attr->control_progress = FI_PROGRESS_MANUAL;  // AUTO serves MANUAL
  EXPECT_EQ(get(), 0);
}

TEST_F(GetinfoTest, LimitsAboveTheProviderAreNoData) {
  only("fakeprov");
  hints_->tx_attr->inject_size = 65;
  EXPECT_EQ(get(), -FI_ENODATA);
  hints_->tx_attr->inject_size = 64;
  hints_->domain_attr->cq_data_size = 16;
  EXPECT_EQ(get(), -FI_ENODATA);
  hints_->domain_attr->cq_data_size = 4;
  hints_->ep_attr->max_msg_size = 2000;
  ASSERT_EQ(get(), 0);
  EXPECT_EQ(count(), 1);  // DGRAM (1400) is out, RDM stays
  hints_->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
  EXPECT_EQ(get(), -FI_ENODATA);
  hints_->rx_attr->msg_order = FI_ORDER_SAS;
  hints_->addr_format = FI_SOCKADDR_IN;
  EXPECT_EQ(get(), -FI_ENODATA);
}

TEST_F(GetinfoTest, NamesAndProviderFilters) {
  hints_->domain_attr->name = strdup("nope");
  EXPECT_EQ(get(), -FI_ENODATA);
  free(hints_->domain_attr->name);
  hints_->domain_attr->name = strdup("fake0");
  ASSERT_EQ(get(), 0);
  setenv("FI_PROVIDER", "^fakeprov", 1);
  hints_->mode = FI_CONTEXT;
  ASSERT_EQ(get(), 0);
  for (fi_info* i = info_; i; i = i->next) EXPECT_STREQ(i->fabric_attr->prov_name, "ctxprov");
  setenv("FI_PROVIDER", "fakeprov", 1);
  ASSERT_EQ(get(), 0);
  for (fi_info* i = info_; i; i = i->next) EXPECT_STREQ(i->fabric_attr->prov_name, "fakeprov");
  setenv("FI_PROVIDER", "nosuch", 1);
  EXPECT_EQ(get(), -FI_ENODATA);
  unsetenv("FI_PROVIDER");
  EXPECT_TRUE(provider_allowed("a,fakeprov", "fakeprov"));
  EXPECT_FALSE(provider_allowed("^a,fakeprov", "fakeprov"));
  EXPECT_TRUE(provider_allowed(nullptr, "x"));
}

TEST_F(GetinfoTest, ProvAttrOnly) {
  ASSERT_EQ(get(FI_VERSION(1, 17), FI_PROV_ATTR_ONLY), 0);
  EXPECT_EQ(count(), 2);
  EXPECT_STREQ(info_->fabric_attr->prov_name, "fakeprov");
  EXPECT_EQ(info_->fabric_attr->prov_version, FI_VERSION(117, 0));
}
