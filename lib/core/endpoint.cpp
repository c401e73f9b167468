#include "lib/core/endpoint.hpp"

#include "lib/core/ops_fid.hpp"

namespace pollfab::core {

EndpointBase::EndpointBase(Domain* dom, const fi_info* info, void* context) : dom_(dom) {
  type_ = info->ep_attr ? info->ep_attr->type : FI_EP_UNSPEC;
  caps_ = info->caps;
  // FI_SOURCE_ERR acts only with FI_SOURCE (fi_getinfo(3): "must be paired with FI_SOURCE";
  // fi_getinfo brings the one with the other, an info written by hand may not): the
  // completion paths then test FI_SOURCE_ERR alone.
  if (!(caps_ & FI_SOURCE)) caps_ &= ~FI_SOURCE_ERR;
  if (info->tx_attr) {
    tx_op_flags_ = info->tx_attr->op_flags;
    msg_order_ = info->tx_attr->msg_order;
  }
  if (info->rx_attr) rx_op_flags_ = info->rx_attr->op_flags;
  init_fid(box_, FI_CLASS_EP, context, &ops_fid<EndpointBase>);
  dom_->ref();
}

// Releases run in the destructor, so a derived constructor that throws (after this base was
// built) still gives back the domain reference.
EndpointBase::~EndpointBase() {
  for (Object* o : std::initializer_list<Object*>{tx_cq_, rx_cq_, send_cntr_, recv_cntr_,
                                                   read_cntr_, write_cntr_, rread_cntr_,
                                                   rwrite_cntr_, av_, eq_, srx_})
    if (o) o->unref();
  dom_->unref();
}

int EndpointBase::close() {
  if (refs()) return -FI_EBUSY;
  teardown();
  delete this;
  return 0;
}

int EndpointBase::bind(struct fid* bfid, uint64_t flags) {
  if (enabled_) return -FI_EINVAL;
  switch (bfid->fclass) {
    case FI_CLASS_CQ: {
      if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) return -FI_EBADFLAGS;
      if (!(flags & (FI_TRANSMIT | FI_RECV))) return -FI_EINVAL;
      Cq* cq = Object::as<Cq>(bfid);
      if (cq->owner() != dom_) return -FI_EINVAL;  // another domain's CQ
      if ((flags & FI_TRANSMIT) && tx_cq_) return -FI_EINVAL;
      if ((flags & FI_RECV) && rx_cq_) return -FI_EINVAL;
      if (flags & FI_TRANSMIT) {
        tx_cq_ = cq;
        cq->ref();
        tx_selective_ = flags & FI_SELECTIVE_COMPLETION;
      }
      if (flags & FI_RECV) {
        rx_cq_ = cq;
        cq->ref();
        rx_selective_ = flags & FI_SELECTIVE_COMPLETION;
      }
      return 0;
    }
    case FI_CLASS_CNTR: {
      const uint64_t kAll = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
      if (!flags || (flags & ~kAll)) return -FI_EBADFLAGS;
      Cntr* c = Object::as<Cntr>(bfid);
      if (c->owner() != dom_) return -FI_EINVAL;
      struct { uint64_t flag; Cntr** slot; } slots[] = {
          {FI_SEND, &send_cntr_}, {FI_RECV, &recv_cntr_}, {FI_READ, &read_cntr_},
          {FI_WRITE, &write_cntr_}, {FI_REMOTE_READ, &rread_cntr_},
          {FI_REMOTE_WRITE, &rwrite_cntr_}};
      for (auto& s : slots)
        if ((flags & s.flag) && *s.slot) return -FI_EINVAL;
      for (auto& s : slots)
        if (flags & s.flag) {
          *s.slot = c;
          c->ref();
        }
      return 0;
    }
    case FI_CLASS_AV: {
      if (flags) return -FI_EBADFLAGS;
      if (av_) return -FI_EINVAL;
      if (Object::as<Av>(bfid)->owner() != dom_) return -FI_EINVAL;
      av_ = Object::as<Av>(bfid);
      av_->ref();
      return 0;
    }
    case FI_CLASS_EQ: {
      if (eq_) return -FI_EINVAL;
      eq_ = Object::as<Eq>(bfid);
      eq_->ref();
      return 0;
    }
    case FI_CLASS_SRX_CTX: {
      if (flags) return -FI_EBADFLAGS;
      auto* srx = Object::as<SrxBase>(bfid);
      if (srx->domain() != dom_ || srx_) return -FI_EINVAL;
      if (!accepts_srx()) return -FI_EOPNOTSUPP;
      srx_ = srx;
      srx_->ref();
      return 0;
    }
    default:
      return -FI_EINVAL;
  }
}

int EndpointBase::control(int command, void* arg) {
  switch (command) {
    case FI_ENABLE: {
      if (enabled_) return 0;
      if (type_ != FI_EP_MSG && !av_) return -FI_ENOAV;
      if (!tx_cq_ && !send_cntr_) return -FI_ENOCQ;
      if (!rx_cq_ && !recv_cntr_) return -FI_ENOCQ;
      int r = enable();
      if (r == 0) enabled_ = true;
      return r;
    }
    case FI_GETOPSFLAG: {
      if (!arg) return -FI_EINVAL;
      auto* f = static_cast<uint64_t*>(arg);
      if (*f & FI_TRANSMIT) *f = tx_op_flags_ | FI_TRANSMIT;
      else if (*f & FI_RECV) *f = rx_op_flags_ | FI_RECV;
      else return -FI_EINVAL;
      return 0;
    }
    case FI_SETOPSFLAG: {
      if (!arg) return -FI_EINVAL;
      uint64_t f = *static_cast<uint64_t*>(arg);
      if (f & FI_TRANSMIT) tx_op_flags_ = f & ~FI_TRANSMIT;
      else if (f & FI_RECV) rx_op_flags_ = f & ~FI_RECV;
      else return -FI_EINVAL;
      return 0;
    }
    default:
      return -FI_ENOSYS;
  }
}

}  // namespace pollfab::core
