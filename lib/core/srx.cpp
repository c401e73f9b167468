#include "lib/core/srx.hpp"

#include "lib/core/ops_fid.hpp"

namespace pollfab::core {

SrxBase::SrxBase(Domain* dom, const fi_rx_attr& attr, void* context) : dom_(dom), attr_(attr) {
  init_fid(box_, FI_CLASS_SRX_CTX, context, &ops_fid<SrxBase>);
  dom_->ref();
}

SrxBase::~SrxBase() { dom_->unref(); }

int SrxBase::close() {
  if (refs()) return -FI_EBUSY;
  teardown();
  delete this;
  return 0;
}

}  // namespace pollfab::core
