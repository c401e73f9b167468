// What RC connections put on the wire beside the data, and what their completions mean to OFI:
//   - CM data framing: rdma_cm may deliver more private data than the peer sent (the CM
//     message's fixed-size field, zero-padded), so pollfab prefixes it with a two-byte header
//     {kCmMagic, length}. fi_cm(3)'s FI_OPT_CM_DATA_SIZE is the REQ limit less the header.
//   - Work completion status -> FI_E* code (fi_cq(3) err), after libfabric's verbs provider;
//     the status itself goes to prov_errno and its text (ibv_wc_status_str) to fi_cq_strerror.
// Thread-safety: pure functions.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pollfab::providers::verbs {

constexpr uint8_t kCmMagic = 0x50;          // 'P'
constexpr size_t kCmHeaderBytes = 2;
// rdma_cm private data limits over IB/RoCE (RDMA_PS_TCP): connect 56, accept 196, reject 148
// bytes (the CM messages' fields less rdma_cm's own header); FI_OPT_CM_DATA_SIZE is the least.
constexpr size_t kCmPrivateBytes = 56;
constexpr size_t kRcMaxCmData = kCmPrivateBytes - kCmHeaderBytes;
// Largest message of an RC endpoint (max_msg_size), bytes: RC allows 2^31.
constexpr uint64_t kRcMaxMsg = uint64_t{1} << 30;

// Frames len bytes of data into out (kCmHeaderBytes + len bytes of room). Returns the framed
// length, or 0 if len > kRcMaxCmData.
size_t cm_data_frame(const void* data, size_t len, uint8_t* out) noexcept;
// The CM data inside private data as received (len bytes, possibly padded): sets *data and
// returns its length; 0 (and *data null) if there is none or the header is not pollfab's.
size_t cm_data_parse(const void* priv, size_t len, const uint8_t** data) noexcept;

// Which device atomic serves an fi_atomic(3) call (kind: 0 fi_atomic, 1 fi_fetch_atomic,
// 2 fi_compare_atomic) on datatype dt (enum fi_datatype) with op (enum fi_op): RDMA atomics
// are 64-bit fetch-and-add and compare-and-swap, so FI_SUM (all kinds but compare),
// FI_ATOMIC_READ (fetch: add 0) and FI_CSWAP (compare) on FI_INT64 / FI_UINT64; everything
// else is None (refused: fi_query_atomic and fi_atomicvalid say -FI_EOPNOTSUPP).
enum class DeviceAtomic : uint8_t { None, FetchAdd, CmpSwap };
DeviceAtomic device_atomic(int kind, int dt, int op) noexcept;

// A work completion's status (enum ibv_wc_status) as a positive FI_E* code (0 for success).
int wc_status_errno(int status) noexcept;
// Its text (ibv_wc_status_str), for fi_cq_strerror of a prov_errno that holds a status.
const char* wc_status_text(int status) noexcept;

}  // namespace pollfab::providers::verbs
