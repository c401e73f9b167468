#include "lib/core/provider.hpp"

#include <cstring>

namespace pollfab::core {
namespace {
std::vector<Provider*>& registry() {
  static std::vector<Provider*> r;
  return r;
}
}  // namespace

fi_provider* Provider::fi_prov() noexcept {
  if (!prov_.name) {
    prov_.version = version();
    prov_.fi_version = kApiVersion;
    prov_.name = name();
  }
  return &prov_;
}

void register_provider(Provider* p) {
  for (Provider* q : registry())
    if (q == p) return;
  registry().push_back(p);
}

const std::vector<Provider*>& providers() noexcept { return registry(); }

Provider* find_provider(const char* name) noexcept {
  if (!name) return nullptr;
  for (Provider* p : registry())
    if (strcmp(p->name(), name) == 0) return p;
  return nullptr;
}

}  // namespace pollfab::core
