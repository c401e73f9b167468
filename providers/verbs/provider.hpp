// The verbs provider: RDMA devices through rdma-core (libibverbs, librdmacm). One domain per
// active device port (e.g. rxe0). FI_EP_RDM and FI_EP_DGRAM run pollfab's transport over a UD
// queue pair (providers/verbs/ud_io.hpp; the design and why: docs/architecture-notes.md,
// "verbs RDM"). Built when libibverbs and librdmacm are found (meson -Dverbs=auto|enabled|
// disabled). Only providers/verbs includes infiniband/*.h and rdma/rdma_cma.h.
#pragma once
#include "lib/core/provider.hpp"

namespace pollfab::providers::verbs {
core::Provider* provider();
}
