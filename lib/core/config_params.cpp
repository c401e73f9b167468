#include "lib/core/config_params.hpp"

#include <cctype>
#include <cstring>
#include <string>

#include "lib/config/loader.hpp"
#include "lib/config/schema.hpp"
#include "lib/core/params.hpp"

namespace pollfab::core {

void define_config_params(const char* prov) {
  const size_t prefix_len = strlen("FI_") + strlen(prov) + 1;  // "FI_<PROV>_"
  for (const config::KeyInfo& k : config::schema()) {
    if (!config::applies_to(prov, k)) continue;
    std::string param = config::env_name(prov, k).substr(prefix_len);
    for (char& c : param) c = static_cast<char>(tolower(c));
    fi_param_type type = k.type == config::Type::Bool  ? FI_PARAM_BOOL
                         : k.type == config::Type::Int ? FI_PARAM_SIZE_T
                                                       : FI_PARAM_STRING;
    std::string help = std::string(k.help) + (k.unit && *k.unit ? std::string(" (") + k.unit + ")" : "") +
                       " [config " + k.section + "." + k.key + ", default " + k.default_text + "]";
    param_define(prov, param.c_str(), type, help.c_str());
  }
}

}  // namespace pollfab::core
