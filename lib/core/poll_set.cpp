#include "lib/core/poll_set.hpp"

#include <algorithm>

#include "lib/core/cntr.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/ops.hpp"
#include "lib/core/ops_fid.hpp"

namespace pollfab::core {
namespace {

int poll_slot(fid_poll* f, void** context, int count) {
  if (!f || (!context && count > 0)) return -FI_EINVAL;
  return self<PollSet>(f)->poll(context, count);
}
int add_slot(fid_poll* f, struct fid* member, uint64_t flags) {
  if (!f) return -FI_EINVAL;
  return guarded([&] { return self<PollSet>(f)->add(member, flags); });
}
int del_slot(fid_poll* f, struct fid* member, uint64_t flags) {
  if (!f) return -FI_EINVAL;
  return self<PollSet>(f)->del(member, flags);
}

fi_ops_poll g_ops_poll = {sizeof(fi_ops_poll), &poll_slot, &add_slot, &del_slot};

}  // namespace

int PollSet::validate(const fi_poll_attr* attr) noexcept {
  return attr && attr->flags ? -FI_EINVAL : 0;
}

PollSet::PollSet(Object* owner, void* context) : owner_(owner) {
  init_fid(box_, FI_CLASS_POLL, context, &ops_fid<PollSet>);
  box_.fid.ops = &g_ops_poll;
  owner_->ref();
}

int PollSet::close() {
  if (refs()) return -FI_EBUSY;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const Member& m : members_) Object::from(m.fid)->unref();
    members_.clear();
  }
  owner_->unref();
  delete this;
  return 0;
}

int PollSet::add(struct fid* member, uint64_t flags) {
  if (!member || flags) return -FI_EINVAL;
  Member m{member, nullptr, nullptr};
  switch (member->fclass) {
    case FI_CLASS_CQ: m.cq = Object::as<Cq>(member); break;
    case FI_CLASS_CNTR: m.cntr = Object::as<Cntr>(member); break;
    default: return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> g(mu_);
  for (const Member& x : members_)
    if (x.fid == member) return -FI_EALREADY;
  members_.push_back(m);
  Object::from(member)->ref();
  return 0;
}

int PollSet::del(struct fid* member, uint64_t flags) noexcept {
  if (!member || flags) return -FI_EINVAL;
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find_if(members_.begin(), members_.end(),
                         [&](const Member& m) { return m.fid == member; });
  if (it == members_.end()) return -FI_ENOENT;
  Object::from(member)->unref();
  members_.erase(it);
  return 0;
}

int PollSet::poll(void** context, int count) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  auto source = [](const Member& m) -> Progressable* {
    return m.cq ? m.cq->progress_source() : m.cntr->progress_source();
  };
  for_each_source(members_, source, [](Progressable* p) { p->progress(); });
  int n = 0;
  for (const Member& m : members_) {
    if (n >= count) break;
    if (m.cq ? m.cq->has_entries() : m.cntr->take_change()) context[n++] = m.fid->context;
  }
  return n;
}

}  // namespace pollfab::core
