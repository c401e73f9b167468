// PollSet: a poll set (fi_poll(3) fi_poll_open, fi_poll_add, fi_poll_del, fi_poll, fi_close)
// over a domain's CQs and counters.
//   fi_poll(set, context, count) drives the progress of every domain with a member (under
//     FI_PROGRESS_MANUAL; automatic progress needs none), then writes the fid context of each
//     member with news, at most count of them, and returns how many: a CQ that holds entries
//     or errors; a counter whose value or error count changed since the last fi_poll,
//     fi_cntr_add or fi_cntr_set (its checkpoint, shared by every set it is in). 0: none.
//     -FI_EINVAL for a null set, or a null context with count > 0.
//   fi_poll_add: a CQ or counter (other classes, a null fid, flags: -FI_EINVAL; already a
//     member: -FI_EALREADY). The member stays referenced (its fi_close is -FI_EBUSY) until
//     fi_poll_del (not a member: -FI_ENOENT) or the set's fi_close.
// fi_poll_open: attr may be null; attr->flags must be 0 (-FI_EINVAL).
// Thread-safety: MT-safe (a mutex guards the member list; fi_poll holds it while polling).
#pragma once
#include <rdma/fi_domain.h>

#include <mutex>
#include <vector>

#include "lib/core/fid.hpp"

namespace pollfab::core {

class Cq;
class Cntr;

class PollSet final : public Object {
 public:
  static int validate(const fi_poll_attr* attr) noexcept;
  // owner: the domain, referenced while the set lives.
  PollSet(Object* owner, void* context);
  fid_poll* fid() noexcept { return &box_.fid; }
  int close() override;

  int add(struct fid* member, uint64_t flags);
  int del(struct fid* member, uint64_t flags) noexcept;
  int poll(void** context, int count) noexcept;

 private:
  struct Member {
    struct fid* fid;
    Cq* cq;      // one of cq, cntr
    Cntr* cntr;
  };

  FidBox<fid_poll> box_;
  Object* owner_;
  std::mutex mu_;
  std::vector<Member> members_;
};

}  // namespace pollfab::core
