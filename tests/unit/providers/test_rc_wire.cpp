// verbs RC helpers (providers/verbs/rc_wire.hpp): CM data framing (what rdma_cm delivers may be
// longer than what was sent, zero-padded, or come from a peer that is not pollfab) and the
// work-completion status -> FI_E* mapping fi_cq_readerr reports. Pure functions: no device.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <string>
#include <vector>

#include "providers/verbs/rc_wire.hpp"

namespace pollfab::providers::verbs {
namespace {

TEST(RcCmData, FramedDataSurvivesThePaddingRdmaCmAdds) {
  uint8_t priv[kCmPrivateBytes] = {};  // the CM message's field: zero-padded past our bytes
  const size_t n = cm_data_frame("hello", 5, priv);
  ASSERT_EQ(n, kCmHeaderBytes + 5);
  const uint8_t* data = nullptr;
  ASSERT_EQ(cm_data_parse(priv, sizeof priv, &data), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(data), 5), "hello");
}

TEST(RcCmData, NoDataAndTheLimit) {
  uint8_t priv[kCmPrivateBytes] = {};
  EXPECT_EQ(cm_data_frame(nullptr, 0, priv), kCmHeaderBytes);
  const uint8_t* data = reinterpret_cast<const uint8_t*>(1);
  EXPECT_EQ(cm_data_parse(priv, sizeof priv, &data), 0u);
  EXPECT_EQ(data, nullptr);
  std::vector<uint8_t> big(kRcMaxCmData + 1, 7);
  EXPECT_EQ(cm_data_frame(big.data(), big.size(), priv), 0u);  // refused
  EXPECT_EQ(cm_data_frame(big.data(), kRcMaxCmData, priv), kCmPrivateBytes);
  ASSERT_EQ(cm_data_parse(priv, sizeof priv, &data), kRcMaxCmData);
  EXPECT_EQ(data[kRcMaxCmData - 1], 7);
}

TEST(RcCmData, ForeignOrTruncatedPrivateDataGivesNoData) {
  const uint8_t* data = nullptr;
  uint8_t foreign[8] = {0x01, 3, 'a', 'b', 'c'};  // not pollfab's header
  EXPECT_EQ(cm_data_parse(foreign, sizeof foreign, &data), 0u);
  uint8_t cut[4] = {kCmMagic, 10, 'a', 'b'};  // claims more than arrived
  EXPECT_EQ(cm_data_parse(cut, sizeof cut, &data), 0u);
  EXPECT_EQ(cm_data_parse(nullptr, 0, &data), 0u);
  EXPECT_EQ(cm_data_parse(cut, 1, &data), 0u);
}

TEST(RcWcStatus, MapsToTheCodesApplicationsHandle) {
  EXPECT_EQ(wc_status_errno(IBV_WC_SUCCESS), 0);
  EXPECT_EQ(wc_status_errno(IBV_WC_LOC_LEN_ERR), FI_ETRUNC);
  EXPECT_EQ(wc_status_errno(IBV_WC_WR_FLUSH_ERR), FI_ECANCELED);
  EXPECT_EQ(wc_status_errno(IBV_WC_REM_ACCESS_ERR), FI_EACCES);
  EXPECT_EQ(wc_status_errno(IBV_WC_LOC_PROT_ERR), FI_EACCES);
  EXPECT_EQ(wc_status_errno(IBV_WC_RNR_RETRY_EXC_ERR), FI_ENORX);
  EXPECT_EQ(wc_status_errno(IBV_WC_RETRY_EXC_ERR), FI_ETIMEDOUT);
  EXPECT_EQ(wc_status_errno(IBV_WC_REM_INV_REQ_ERR), FI_EINVAL);
  EXPECT_EQ(wc_status_errno(IBV_WC_GENERAL_ERR), FI_EIO);
  EXPECT_EQ(wc_status_errno(12345), FI_EIO);
  EXPECT_NE(std::string(wc_status_text(IBV_WC_WR_FLUSH_ERR)).find("Flush"), std::string::npos);
}

TEST(RcDeviceAtomic, SixtyFourBitFetchAddAndCompareSwapOnly) {
  EXPECT_EQ(device_atomic(0, FI_UINT64, FI_SUM), DeviceAtomic::FetchAdd);
  EXPECT_EQ(device_atomic(1, FI_INT64, FI_SUM), DeviceAtomic::FetchAdd);
  EXPECT_EQ(device_atomic(1, FI_UINT64, FI_ATOMIC_READ), DeviceAtomic::FetchAdd);
  EXPECT_EQ(device_atomic(2, FI_UINT64, FI_CSWAP), DeviceAtomic::CmpSwap);
  EXPECT_EQ(device_atomic(0, FI_UINT64, FI_ATOMIC_READ), DeviceAtomic::None);  // not a write
  EXPECT_EQ(device_atomic(2, FI_UINT64, FI_SUM), DeviceAtomic::None);
  EXPECT_EQ(device_atomic(0, FI_UINT32, FI_SUM), DeviceAtomic::None);
  EXPECT_EQ(device_atomic(1, FI_DOUBLE, FI_SUM), DeviceAtomic::None);
  EXPECT_EQ(device_atomic(0, FI_UINT64, FI_MIN), DeviceAtomic::None);
  EXPECT_EQ(device_atomic(0, FI_UINT64, FI_ATOMIC_WRITE), DeviceAtomic::None);
  EXPECT_EQ(device_atomic(2, FI_UINT64, FI_CSWAP_LE), DeviceAtomic::None);
}

}  // namespace
}  // namespace pollfab::providers::verbs
