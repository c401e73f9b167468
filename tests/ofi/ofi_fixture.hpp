// A small libfabric application for the OFI API tests: one RDM endpoint (or several) on the
// provider named by PF_TEST_PROV (default "udp"), opened through the public C API of pollfab's
// drop-in libfabric.so.1 (these tests link it, never the reference library), with a CQ per
// endpoint (FI_CQ_FORMAT_TAGGED), an AV (FI_AV_MAP unless asked otherwise) and manual progress.
// Helpers wait for completions with a bounded loop (no sleeps, no unbounded spins).
#pragma once
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pollfab::ofitest {

inline const char* test_provider() {
  const char* p = std::getenv("PF_TEST_PROV");
  return p && *p ? p : "udp";
}

struct InfoDeleter {
  void operator()(fi_info* i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// fi_getinfo(node, service, flags) for the test provider: endpoint type, caps and address
// format hinted (mode FI_CONTEXT). Returns fi_getinfo's code; the infos in out (or null).
inline int getinfo_for(fi_ep_type type, uint64_t caps, const char* node, const char* service,
                       uint64_t flags, uint32_t addr_format, InfoPtr& out) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = type;
  hints->caps = caps;
  hints->mode = FI_CONTEXT;
  hints->addr_format = addr_format;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
  fi_freeinfo(hints);
  out.reset(rc == 0 ? info : nullptr);
  return rc;
}

// fi_getinfo for the test provider with these caps (and the hints the callers add).
inline InfoPtr get_info(uint64_t caps, fi_av_type av_type = FI_AV_MAP,
                        fi_threading threading = FI_THREAD_DOMAIN, int mr_mode = 0,
                        uint32_t addr_format = FI_FORMAT_UNSPEC,
                        fi_progress progress = FI_PROGRESS_UNSPEC) {
  fi_info* hints = fi_allocinfo();
  hints->domain_attr->data_progress = progress;
  hints->addr_format = addr_format;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = caps;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->av_type = av_type;
  hints->domain_attr->threading = threading;
  hints->domain_attr->mr_mode = mr_mode;
  hints->fabric_attr->prov_name = strdup(test_provider());
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  EXPECT_EQ(rc, 0) << fi_strerror(-rc);
  return InfoPtr(rc == 0 ? info : nullptr);
}

// One endpoint with its own CQ (tx and rx), bound to a shared AV.
struct Ep {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  std::vector<uint8_t> name;
  fi_addr_t self = FI_ADDR_NOTAVAIL;  // this endpoint in the shared AV

  void close() {
    if (ep) fi_close(&ep->fid);
    if (cq) fi_close(&cq->fid);
    ep = nullptr;
    cq = nullptr;
  }
};

class Ofi {
 public:
  // Opens fabric, domain and AV for caps; endpoints come from add_ep().
  explicit Ofi(uint64_t caps, fi_av_type av_type = FI_AV_MAP,
               fi_threading threading = FI_THREAD_DOMAIN, int mr_mode = 0,
               uint32_t addr_format = FI_FORMAT_UNSPEC)
      : info_(get_info(caps, av_type, threading, mr_mode, addr_format)) {
    if (!info_) return;
    EXPECT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric_, info_.get(), &domain_, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = av_type;
    EXPECT_EQ(fi_av_open(domain_, &av_attr, &av_, nullptr), 0);
  }
  // Closes the endpoints (before the counters they are bound to can close).
  void close_eps() {
    for (auto& e : eps_) e->close();
  }
  ~Ofi() {
    close_eps();
    if (av_) fi_close(&av_->fid);
    if (domain_) fi_close(&domain_->fid);
    if (fabric_) fi_close(&fabric_->fid);
  }
  bool ok() const { return info_ && av_; }
  fi_info* info() const { return info_.get(); }
  fid_domain* domain() const { return domain_; }
  fid_av* av() const { return av_; }

  // A new enabled endpoint; cq_flags are added to FI_TRANSMIT|FI_RECV for the CQ binding
  // (e.g. FI_SELECTIVE_COMPLETION); before_enable binds more (counters); its CQ has `format`.
  // Its own name is inserted in the AV (Ep::self).
  Ep& add_ep(uint64_t cq_flags = 0, const std::function<void(fid_ep*)>& before_enable = {},
             fi_cq_format format = FI_CQ_FORMAT_TAGGED) {
    auto e = std::make_unique<Ep>();
    fi_cq_attr cq_attr{};
    cq_attr.format = format;
    cq_attr.size = 1024;
    EXPECT_EQ(fi_cq_open(domain_, &cq_attr, &e->cq, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain_, info_.get(), &e->ep, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(e->ep, &av_->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV | cq_flags), 0);
    if (before_enable) before_enable(e->ep);
    EXPECT_EQ(fi_enable(e->ep), 0);
    size_t len = 64;
    e->name.resize(len);
    EXPECT_EQ(fi_getname(&e->ep->fid, e->name.data(), &len), 0);
    e->name.resize(len);
    // FI_ADDR_STR: fi_av_insert takes an array of strings (fi_av(3)).
    const char* text = reinterpret_cast<const char*>(e->name.data());
    const void* addr = info_->addr_format == FI_ADDR_STR ? static_cast<const void*>(&text)
                                                         : static_cast<const void*>(e->name.data());
    EXPECT_EQ(fi_av_insert(av_, addr, 1, &e->self, 0, nullptr), 1);
    eps_.push_back(std::move(e));
    return *eps_.back();
  }

  // Reads one completion from cq (driving progress), up to timeout. Returns 1 (entry in out),
  // -FI_EAVAIL (error in err), or -FI_EAGAIN on timeout.
  static int wait(fid_cq* cq, fi_cq_tagged_entry& out, fi_cq_err_entry* err = nullptr,
                  fi_addr_t* src = nullptr, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    do {
      ssize_t n = src ? fi_cq_readfrom(cq, &out, 1, src) : fi_cq_read(cq, &out, 1);
      if (n == 1) return 1;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry e{};
        EXPECT_EQ(fi_cq_readerr(cq, &e, 0), 1);
        if (err) *err = e;
        return -FI_EAVAIL;
      }
      if (n != -FI_EAGAIN) {
        ADD_FAILURE() << "fi_cq_read: " << fi_strerror(int(-n));
        return int(n);
      }
    } while (std::chrono::steady_clock::now() < end);
    return -FI_EAGAIN;
  }
  // Drives progress for a while and returns true if cq stays empty.
  static bool quiet(fid_cq* cq, std::chrono::milliseconds how_long = std::chrono::milliseconds(50)) {
    fi_cq_tagged_entry e;
    return wait(cq, e, nullptr, nullptr, how_long) == -FI_EAGAIN;
  }

 private:
  InfoPtr info_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  std::vector<std::unique_ptr<Ep>> eps_;
};

}  // namespace pollfab::ofitest
