#include "lib/core/fid.hpp"

namespace pollfab::core {
namespace {

int tr_close(struct fid* f) {
  if (!f) return -FI_EINVAL;
  return guarded([&] { return Object::from(f)->close(); });
}
int tr_bind(struct fid* f, struct fid* bfid, uint64_t flags) {
  if (!f || !bfid) return -FI_EINVAL;
  return guarded([&] { return Object::from(f)->bind(bfid, flags); });
}
int tr_control(struct fid* f, int command, void* arg) {
  if (!f) return -FI_EINVAL;
  return guarded([&] { return Object::from(f)->control(command, arg); });
}
int tr_ops_open(struct fid* f, const char* name, uint64_t flags, void** ops, void* context) {
  if (!f || !name || !ops) return -FI_EINVAL;
  return guarded([&] { return Object::from(f)->ops_open(name, flags, ops, context); });
}
int tr_tostr(const struct fid* f, char* buf, size_t len) { return -FI_ENOSYS; }
int tr_ops_set(struct fid* f, const char* name, uint64_t flags, void* ops, void* context) {
  return -FI_ENOSYS;
}

fi_ops g_ops = {
    .size = sizeof(fi_ops),
    .close = tr_close,
    .bind = tr_bind,
    .control = tr_control,
    .ops_open = tr_ops_open,
    .tostr = tr_tostr,
    .ops_set = tr_ops_set,
};

}  // namespace

fi_ops* Object::generic_ops() noexcept { return &g_ops; }

}  // namespace pollfab::core
