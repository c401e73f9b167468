// Registers every config key a provider reads (lib/config schema) as an fi_param,
// FI_<PROV>_<SECTION>_<KEY>, with its help, unit and default, so fi_getparams(3) and
// `fi_info -e` list them. Any provider calls it from Provider::define_params().
// Thread-safety: as core::param_define (MT-safe). Throws std::bad_alloc.
#pragma once

namespace pollfab::core {

void define_config_params(const char* prov);

}  // namespace pollfab::core
