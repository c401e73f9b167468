#include "providers/verbs/rc_wire.hpp"

#include <infiniband/verbs.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <cstring>

namespace pollfab::providers::verbs {

size_t cm_data_frame(const void* data, size_t len, uint8_t* out) noexcept {
  if (len > kRcMaxCmData) return 0;
  out[0] = kCmMagic;
  out[1] = static_cast<uint8_t>(len);
  if (len) std::memcpy(out + kCmHeaderBytes, data, len);
  return kCmHeaderBytes + len;
}

size_t cm_data_parse(const void* priv, size_t len, const uint8_t** data) noexcept {
  *data = nullptr;
  const auto* p = static_cast<const uint8_t*>(priv);
  if (!p || len < kCmHeaderBytes || p[0] != kCmMagic) return 0;
  const size_t n = p[1];
  if (n == 0 || n > len - kCmHeaderBytes || n > kRcMaxCmData) return 0;
  *data = p + kCmHeaderBytes;
  return n;
}

DeviceAtomic device_atomic(int kind, int dt, int op) noexcept {
  if (dt != FI_INT64 && dt != FI_UINT64) return DeviceAtomic::None;
  switch (kind) {
    case 0: return op == FI_SUM ? DeviceAtomic::FetchAdd : DeviceAtomic::None;
    case 1: return op == FI_SUM || op == FI_ATOMIC_READ ? DeviceAtomic::FetchAdd : DeviceAtomic::None;
    case 2: return op == FI_CSWAP ? DeviceAtomic::CmpSwap : DeviceAtomic::None;
    default: return DeviceAtomic::None;
  }
}

int wc_status_errno(int status) noexcept {
  switch (status) {
    case IBV_WC_SUCCESS: return 0;
    case IBV_WC_LOC_LEN_ERR: return FI_ETRUNC;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_REM_ACCESS_ERR: return FI_EACCES;
    case IBV_WC_WR_FLUSH_ERR: return FI_ECANCELED;
    case IBV_WC_REM_INV_REQ_ERR: return FI_EINVAL;
    case IBV_WC_REM_OP_ERR: return FI_EREMOTEIO;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR: return FI_ETIMEDOUT;
    case IBV_WC_RNR_RETRY_EXC_ERR: return FI_ENORX;
    case IBV_WC_REM_ABORT_ERR: return FI_ECONNABORTED;
    default: return FI_EIO;
  }
}

const char* wc_status_text(int status) noexcept {
  return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
}

}  // namespace pollfab::providers::verbs
