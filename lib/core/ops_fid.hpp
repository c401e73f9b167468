// fi_ops, the table every fid has (fi_close(3), fi_control(3)), built from the class T that
// implements the object by the mechanism of lib/core/ops.hpp. Members (absent: -FI_ENOSYS):
//     int close();  int bind(fid* bfid, uint64_t flags);  int control(int command, void* arg);
//     int ops_open(const char* name, uint64_t flags, void** ops, void* context);
//     int tostr(char* buf, size_t len) const;
// fi_ops_set is always -FI_ENOSYS. Object::init_fid<T>() installs ops_fid<T>.
#pragma once
#include <rdma/fabric.h>

#include "lib/core/ops.hpp"

namespace pollfab::core {

// ---- fi_ops (every fid) ----------------------------------------------------------------------

template <class T>
struct FidSlots {
  using O = fi_ops;
  static constexpr decltype(O::bind) bind() {
    if constexpr (requires(T& t, fid* b) { t.bind(b, uint64_t{}); })
      return [](fid* f, fid* bfid, uint64_t flags) -> int {
        if (!f || !bfid) return -FI_EINVAL;
        return guarded([&] { return self<T>(f)->bind(bfid, flags); });
      };
    else
      return enosys<decltype(O::bind)>;
  }
  static constexpr decltype(O::control) control() {
    if constexpr (requires(T& t, void* a) { t.control(0, a); })
      return [](fid* f, int command, void* arg) -> int {
        if (!f) return -FI_EINVAL;
        return guarded([&] { return self<T>(f)->control(command, arg); });
      };
    else
      return enosys<decltype(O::control)>;
  }
  static constexpr decltype(O::ops_open) ops_open() {
    if constexpr (requires(T& t, void** o) { t.ops_open("", uint64_t{}, o, nullptr); })
      return [](fid* f, const char* name, uint64_t flags, void** ops, void* ctx) -> int {
        if (!f || !name || !ops) return -FI_EINVAL;
        return guarded([&] { return self<T>(f)->ops_open(name, flags, ops, ctx); });
      };
    else
      return enosys<decltype(O::ops_open)>;
  }
  static constexpr decltype(O::tostr) tostr() {
    if constexpr (requires(const T& t, char* b) { t.tostr(b, size_t{}); })
      return [](const fid* f, char* buf, size_t len) -> int {
        return guarded([&] { return self<const T>(f)->tostr(buf, len); });
      };
    else
      return enosys<decltype(O::tostr)>;
  }
};

template <class T>
inline fi_ops ops_fid = {
    .size = sizeof(fi_ops),
    .close = [](fid* f) -> int {
      if (!f) return -FI_EINVAL;
      return guarded([&] { return self<T>(f)->close(); });
    },
    .bind = FidSlots<T>::bind(),
    .control = FidSlots<T>::control(),
    .ops_open = FidSlots<T>::ops_open(),
    .tostr = FidSlots<T>::tostr(),
    .ops_set = enosys<decltype(fi_ops::ops_set)>,
};

}  // namespace pollfab::core
