#include "lib/core/domain.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "lib/core/cntr.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/mr.hpp"
#include "lib/core/ops_domain.hpp"
#include "lib/core/ops_fid.hpp"
#include "lib/core/poll_set.hpp"

namespace pollfab::core {
namespace {
// True if [addr, addr + len) is mapped memory: msync(MS_ASYNC) is ENOMEM for unmapped pages and
// has no other effect since Linux 2.6.19.
bool mapped(const void* addr, size_t len) {
  if (!len) return true;
  if (!addr) return false;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  if (end < start) return false;  // wraps
  return msync(reinterpret_cast<void*>(start), end - start, MS_ASYNC) == 0;
}

bool prov_key(const fi_info* info) {
  return info && info->domain_attr && mr_mode_prov_key(info->domain_attr->mr_mode);
}
}  // namespace

Domain::Domain(Fabric* fabric, const fi_info* info, void* context)
    : fabric_(fabric), mrs_(prov_key(info)) {
  info_ = dupinfo(info);
  if (!info_) throw std::bad_alloc();
  lock_.enable(info_->domain_attr && info_->domain_attr->threading == FI_THREAD_SAFE);
  init_fid(box_, FI_CLASS_DOMAIN, context, &ops_fid<Domain>);
  install_domain_ops<Domain>(box_.fid);
  fabric_->ref();
}

Domain::~Domain() { freeinfo(info_); }

uint32_t Domain::api_version() const noexcept { return fabric_->api_version(); }

int Domain::close() {
  if (refs()) return -FI_EBUSY;
  teardown();
  fabric_->unref();
  delete this;
  return 0;
}

int Domain::av_open(fi_av_attr* attr, fid_av** av, void* context) {
  if (int r = Av::validate(attr)) return r;
  auto* a = new Av(this, address_format(), attr, context);
  *av = a->fid();
  return 0;
}

int Domain::cq_open(fi_cq_attr* attr, fid_cq** cq, void* context) {
  if (int r = Cq::validate(attr)) return r;
  auto* c = new Cq(this, reads_progress(), *attr, api_version(), thread_safe(), context);
  c->set_prov_errno_text(prov_errno_text());
  *cq = c->fid();
  return 0;
}

int Domain::cntr_open(fi_cntr_attr* attr, fid_cntr** cntr, void* context) {
  if (int r = Cntr::validate(attr)) return r;
  auto* c = new Cntr(this, reads_progress(), attr, context);
  *cntr = c->fid();
  return 0;
}

int Domain::poll_open(fi_poll_attr* attr, fid_poll** pollset) {
  if (int r = PollSet::validate(attr)) return r;
  auto* p = new PollSet(this, nullptr);
  *pollset = p->fid();
  return 0;
}

int Domain::mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset,
                   uint64_t key, uint64_t flags, fid_mr** mr, void* context) {
  if (count == 0 || count > 4) return -FI_EINVAL;
  if (flags) return -FI_EBADFLAGS;
  const uint64_t kAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                           FI_REMOTE_WRITE | FI_COLLECTIVE;
  if (access & ~kAccess) return -FI_EINVAL;
  for (size_t i = 0; i < count; ++i)
    if (!mapped(iov[i].iov_base, iov[i].iov_len)) return -FI_EFAULT;
  // The data path looks keys up under lock_ without the map's mutex: change the map under it.
  util::Guard<util::MaybeLock> g(lock());
  if (int r = mrs_.reserve(key, key)) return r;
  Mr* m;
  try {
    m = new Mr(this, iov, count, access, offset, key, context);
  } catch (...) {
    mrs_.remove(key);
    throw;
  }
  mrs_.set(key, m);
  *mr = m->fid();
  return 0;
}

}  // namespace pollfab::core
