// Internal to tostr.cpp / tostr_attrs.cpp: the bounded text appender and the printers they share.
// Not part of pollfab's interface; see lib/core/tostr.hpp for the behaviour being reproduced.
#pragma once
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace pollfab::core::tostr_detail {

// Appends text into a caller's NUL-terminated buffer of `cap` bytes (cap >= 1), emulating
// libfabric's ofi_strncatf: text appended by put() never makes the string longer than cap - 2.
// Single-threaded use only (one Out per call).
class Out {
 public:
  Out(char* buf, size_t cap) noexcept : buf_(buf), cap_(cap) { buf_[0] = '\0'; }

  char* data() const noexcept { return buf_; }
  size_t cap() const noexcept { return cap_; }
  size_t size() const noexcept { return len_; }

  // ofi_strncatf: keeps the text within cap - 2 characters.
  void put(std::string_view s) noexcept { append(s, 2); }
  // snprintf into the rest of the buffer (ofi_straddr): keeps the text within cap - 1.
  void put_full(std::string_view s) noexcept { append(s, 1); }

  // printf "%zu" / "%u" (reserve: 2 as put, 1 as put_full).
  void put_u(uint64_t v, unsigned reserve = 2) noexcept {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    append({tmp, static_cast<size_t>(r.ptr - tmp)}, reserve);
  }
  // printf "%d".
  void put_i(int64_t v) noexcept {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    put({tmp, static_cast<size_t>(r.ptr - tmp)});
  }
  // printf "%x" / "%0<width>lx" (lowercase, no "0x").
  void put_hex(uint64_t v, int width = 0, unsigned reserve = 2) noexcept {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v, 16);
    auto n = static_cast<int>(r.ptr - tmp);
    for (int i = n; i < width; ++i) append("0", reserve);
    append({tmp, static_cast<size_t>(n)}, reserve);
  }
  // glibc printf "%p": "(nil)" or "0x" followed by lowercase hex.
  void put_ptr(const void* p, unsigned reserve = 2) noexcept {
    if (!p) {
      append("(nil)", reserve);
      return;
    }
    append("0x", reserve);
    put_hex(reinterpret_cast<uintptr_t>(p), 0, reserve);
  }

  // ofi_remove_comma: drops a trailing ", " from the whole string.
  void remove_comma() noexcept {
    if (len_ >= 2 && buf_[len_ - 2] == ',' && buf_[len_ - 1] == ' ') {
      len_ -= 2;
      buf_[len_] = '\0';
    }
  }

  // Re-reads the length after someone else (a fid's tostr) wrote into the buffer.
  void resync() noexcept { len_ = strnlen(buf_, cap_); }

 private:
  void append(std::string_view s, unsigned reserve) noexcept {
    if (len_ + reserve >= cap_) return;  // no room (also covers a full, unterminated buffer)
    size_t n = cap_ - reserve - len_;
    if (s.size() < n) n = s.size();
    std::memcpy(buf_ + len_, s.data(), n);
    len_ += n;
    buf_[len_] = '\0';
  }

  char* buf_;
  size_t cap_;
  size_t len_ = 0;
};

inline constexpr std::string_view kTab = "    ";

// Enum and flag printers (tostr.cpp). Each appends exactly what libfabric 1.17 appends.
void put_caps(Out& o, uint64_t caps) noexcept;
void put_mode(Out& o, uint64_t mode) noexcept;
void put_op_flags(Out& o, uint64_t flags) noexcept;
void put_msg_order(Out& o, uint64_t flags) noexcept;
void put_comp_order(Out& o, uint64_t flags) noexcept;
void put_mr_mode(Out& o, int mr_mode) noexcept;
void put_ep_type(Out& o, int v) noexcept;
void put_addr_format(Out& o, uint32_t v) noexcept;
void put_protocol(Out& o, uint32_t v) noexcept;
void put_threading(Out& o, int v) noexcept;
void put_progress(Out& o, int v) noexcept;
void put_resource_mgmt(Out& o, int v) noexcept;
void put_av_type(Out& o, int v) noexcept;

// Struct printers (tostr_attrs.cpp). `prefix` is prepended to every line.
void put_fid(Out& o, std::string_view label, const struct fid* fid) noexcept;
void put_tx_attr(Out& o, const struct fi_tx_attr* attr, std::string_view prefix) noexcept;
void put_rx_attr(Out& o, const struct fi_rx_attr* attr, std::string_view prefix) noexcept;
void put_ep_attr(Out& o, const struct fi_ep_attr* attr, std::string_view prefix) noexcept;
void put_domain_attr(Out& o, const struct fi_domain_attr* attr, std::string_view prefix) noexcept;
void put_fabric_attr(Out& o, const struct fi_fabric_attr* attr, std::string_view prefix) noexcept;
void put_info(Out& o, const struct fi_info* info) noexcept;

}  // namespace pollfab::core::tostr_detail
