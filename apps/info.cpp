// `pollfab info`: providers and versions (fi_getinfo FI_PROV_ATTR_ONLY), the effective config
// of each provider (file + FI_<PROV>_* overrides), and the FI_* parameters (fi_getparams).
// `pollfab info --stats`: see apps/stats.cpp.
#include <rdma/fabric.h>

#include <cstdio>

#include "apps/info.hpp"
#include "lib/config/loader.hpp"

namespace pollfab::apps {

int info_main(const InfoArgs& a) {
  if (a.stats) return stats_main(a);
  if (a.json || !a.pids.empty()) {
    fprintf(stderr, "pollfab info: --json and PID go with --stats\n");
    return 2;
  }
  if (!a.config.empty()) setenv("POLLFAB_CONFIG", a.config.c_str(), 1);
  fi_info* list = nullptr;
  fi_info* hints = fi_allocinfo();
  int r = fi_getinfo(fi_version(), nullptr, nullptr, FI_PROV_ATTR_ONLY, hints, &list);
  fi_freeinfo(hints);
  printf("pollfab %s, libfabric API %u.%u\n", POLLFAB_VERSION_STR, FI_MAJOR(fi_version()),
         FI_MINOR(fi_version()));
  printf("providers:\n");
  if (r == 0) {
    for (fi_info* i = list; i; i = i->next)
      printf("  %s %u.%u\n", i->fabric_attr->prov_name, FI_MAJOR(i->fabric_attr->prov_version),
             FI_MINOR(i->fabric_attr->prov_version));
    fi_freeinfo(list);
  } else {
    printf("  (none: %s)\n", fi_strerror(-r));
  }
  int rc = 0;
  for (const char* prov : {"dpdk", "udp", "verbs"}) {
    config::LoadResult lr = config::load(prov);
    printf("\n# effective configuration of provider %s\n", prov);
    if (!lr.config) {
      printf("# refused: %s\n", lr.error.c_str());
      rc = 1;
      continue;
    }
    printf("# source: %s\n%s", lr.config->source.c_str(), config::to_toml(*lr.config).c_str());
  }
  fi_param* params = nullptr;
  int n = 0;
  if (fi_getparams(&params, &n) == 0) {
    printf("\n# parameters (environment variables)\n");
    for (int i = 0; i < n; ++i)
      printf("%s%s%s\n", params[i].name, params[i].value ? "=" : "", params[i].value ? params[i].value : "");
    fi_freeparams(params);
  }
  return rc;
}

}  // namespace pollfab::apps
