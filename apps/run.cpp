// `pollfab run [--config FILE] -- CMD [ARGS]`: runs an unmodified libfabric application on
// pollfab's drop-in libfabric.so.1. A bad config file is refused before CMD starts.
#include <cstdio>
#include <cstdlib>

#include "apps/common/proc.hpp"
#include "apps/run.hpp"
#include "lib/config/loader.hpp"

namespace pollfab::apps {

int run_main(const RunArgs& a) {
  if (a.cmd.empty()) {
    fprintf(stderr, "pollfab run: no command (pollfab run [--config FILE] -- CMD [ARGS])\n");
    return 2;
  }
  if (!a.config.empty()) setenv("POLLFAB_CONFIG", a.config.c_str(), 1);
  for (const char* prov : {"dpdk", "udp", "verbs"}) {
    config::LoadResult lr = config::load(prov);
    if (!lr.config) {
      fprintf(stderr, "pollfab run: configuration refused: %s\n", lr.error.c_str());
      return 1;
    }
  }
  prepend_ld_library_path(dropin_libdir());
  return exec_cmd(a.cmd);
}

}  // namespace pollfab::apps
