#include "lib/core/domain.hpp"

#include "lib/core/cntr.hpp"
#include "lib/core/cq.hpp"
#include "lib/core/fabric.hpp"
#include "lib/core/info_alloc.hpp"
#include "lib/core/mr.hpp"

namespace pollfab::core {
namespace {

Domain* self(fid_domain* d) { return Object::as<Domain>(d); }

int tr_av_open(fid_domain* d, fi_av_attr* attr, fid_av** av, void* ctx) {
  if (!d || !attr || !av) return -FI_EINVAL;
  return guarded([&] { return self(d)->av_open(attr, av, ctx); });
}
int tr_cq_open(fid_domain* d, fi_cq_attr* attr, fid_cq** cq, void* ctx) {
  if (!d || !attr || !cq) return -FI_EINVAL;
  return guarded([&] { return self(d)->cq_open(attr, cq, ctx); });
}
int tr_endpoint2(fid_domain* d, fi_info* info, fid_ep** ep, uint64_t flags, void* ctx) {
  if (!d || !info || !ep) return -FI_EINVAL;
  return guarded([&] { return self(d)->open_endpoint(info, ep, flags, ctx); });
}
int tr_endpoint(fid_domain* d, fi_info* info, fid_ep** ep, void* ctx) {
  return tr_endpoint2(d, info, ep, 0, ctx);
}
int tr_cntr_open(fid_domain* d, fi_cntr_attr* attr, fid_cntr** c, void* ctx) {
  if (!d || !c) return -FI_EINVAL;
  return guarded([&] { return self(d)->cntr_open(attr, c, ctx); });
}

fi_ops_domain g_domain_ops = {
    .size = sizeof(fi_ops_domain),
    .av_open = tr_av_open,
    .cq_open = tr_cq_open,
    .endpoint = tr_endpoint,
    .scalable_ep = PF_ENOSYS(fi_ops_domain, scalable_ep),
    .cntr_open = tr_cntr_open,
    .poll_open = PF_ENOSYS(fi_ops_domain, poll_open),
    .stx_ctx = PF_ENOSYS(fi_ops_domain, stx_ctx),
    .srx_ctx = PF_ENOSYS(fi_ops_domain, srx_ctx),
    .query_atomic = PF_ENOSYS(fi_ops_domain, query_atomic),
    .query_collective = PF_ENOSYS(fi_ops_domain, query_collective),
    .endpoint2 = tr_endpoint2,
};

int tr_regv(struct fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
  if (!f || !mr || (!iov && count)) return -FI_EINVAL;
  return guarded([&] {
    return Object::as<Domain>(f)->mr_reg(iov, count, access, offset, key, flags, mr, ctx);
  });
}
int tr_reg(struct fid* f, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
  iovec iov{const_cast<void*>(buf), len};
  return tr_regv(f, &iov, 1, access, offset, key, flags, mr, ctx);
}
int tr_regattr(struct fid* f, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr) {
  if (!attr) return -FI_EINVAL;
  if (attr->iface != FI_HMEM_SYSTEM) return -FI_ENOSYS;
  return tr_regv(f, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
                 attr->requested_key, flags, mr, attr->context);
}

fi_ops_mr g_mr_ops = {
    .size = sizeof(fi_ops_mr),
    .reg = tr_reg,
    .regv = tr_regv,
    .regattr = tr_regattr,
};

}  // namespace

Domain::Domain(Fabric* fabric, const fi_info* info, void* context) : fabric_(fabric) {
  info_ = dupinfo(info);
  if (!info_) throw std::bad_alloc();
  lock_.enable(info_->domain_attr && info_->domain_attr->threading == FI_THREAD_SAFE);
  init_fid(box_, FI_CLASS_DOMAIN, context);
  box_.fid.ops = &g_domain_ops;
  box_.fid.mr = &g_mr_ops;
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
  auto* c = new Cq(this, this, *attr, api_version(), thread_safe(), context);
  *cq = c->fid();
  return 0;
}

int Domain::cntr_open(fi_cntr_attr* attr, fid_cntr** cntr, void* context) {
  if (int r = Cntr::validate(attr)) return r;
  auto* c = new Cntr(this, this, attr, context);
  *cntr = c->fid();
  return 0;
}

int Domain::mr_reg(const iovec* iov, size_t count, uint64_t access, uint64_t offset,
                   uint64_t key, uint64_t flags, fid_mr** mr, void* context) {
  if (count == 0 || count > 4) return -FI_EINVAL;
  if (flags) return -FI_EBADFLAGS;
  const uint64_t kAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                           FI_REMOTE_WRITE | FI_COLLECTIVE;
  if (access & ~kAccess) return -FI_EINVAL;
  const bool prov_key = info_->domain_attr && (info_->domain_attr->mr_mode & FI_MR_PROV_KEY);
  std::lock_guard<std::mutex> g(mr_mu_);
  if (prov_key) {
    while (mrs_.count(next_key_)) ++next_key_;
    key = next_key_++;
  } else if (mrs_.count(key)) {
    return -FI_ENOKEY;
  }
  auto* m = new Mr(this, iov, count, access, offset, key, context);
  mrs_.emplace(key, m);
  *mr = m->fid();
  return 0;
}

void Domain::mr_remove(Mr* mr) noexcept {
  std::lock_guard<std::mutex> g(mr_mu_);
  mrs_.erase(mr->key());
}

Mr* Domain::mr_find(uint64_t key) noexcept {
  std::lock_guard<std::mutex> g(mr_mu_);
  auto it = mrs_.find(key);
  return it == mrs_.end() ? nullptr : it->second;
}

Mr::Mr(Domain* dom, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
       uint64_t key, void* context)
    : dom_(dom), iov_(iov, iov + count), access_(access), offset_(offset) {
  init_fid(box_, FI_CLASS_MR, context);
  box_.fid.mem_desc = this;
  box_.fid.key = key;
  dom_->ref();
}

int Mr::close() {
  if (refs()) return -FI_EBUSY;
  dom_->mr_remove(this);
  dom_->unref();
  delete this;
  return 0;
}

bool Mr::contains(const void* addr, size_t len) const noexcept {
  auto a = reinterpret_cast<uintptr_t>(addr);
  for (const iovec& v : iov_) {
    auto b = reinterpret_cast<uintptr_t>(v.iov_base);
    if (a >= b && a + len <= b + v.iov_len) return true;
  }
  return false;
}

}  // namespace pollfab::core
