#include "abi/providers.hpp"

#include <mutex>

#include "lib/core/params.hpp"
#include "lib/core/provider.hpp"
#include "pollfab_build_config.h"
#include "providers/registry.hpp"

namespace pollfab::abi {

void ensure_providers() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      for (core::Provider* p : providers::all()) core::register_provider(p);
      core::set_params_init_hook([] {
        for (core::Provider* p : core::providers()) p->define_params();
      });
    } catch (...) {
    }
  });
}

}  // namespace pollfab::abi
