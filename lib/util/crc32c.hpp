// CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected = 0x82F63B78), as used by iSCSI
// (RFC 3720 appendix B.4), SCTP (RFC 4960) and RoCEv2's ICRC family of checks.
//
// crc32c(data, len, seed) returns the CRC of `len` bytes at `data`, continuing from `seed`
// (0 for a fresh CRC; pass a previous result to extend it over more bytes). Uses the SSE4.2
// CRC32 instruction when the CPU has it (checked once at start-up), else a table
// (slicing-by-8). Pure function: thread-safe, no allocation, no syscalls.
// Check value: crc32c("123456789", 9) == 0xE3069283.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pollfab::util {

uint32_t crc32c(const void* data, size_t len, uint32_t seed = 0) noexcept;
// The portable table implementation (tests compare it with the hardware path).
uint32_t crc32c_sw(const void* data, size_t len, uint32_t seed = 0) noexcept;
// True if crc32c() uses the CPU instruction.
bool crc32c_hw() noexcept;

}  // namespace pollfab::util
