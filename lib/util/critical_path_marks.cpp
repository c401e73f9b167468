#include "lib/util/critical_path_marks.hpp"

#include <cstdlib>
#include <cstring>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PF_HAVE_CALLGRIND 1
#endif

namespace pollfab::util {

CriticalPathMarks::CriticalPathMarks() noexcept {
#ifdef PF_HAVE_CALLGRIND
  const char* v = std::getenv("PF_CRITICAL_PATH_MARKS");
  enabled_ = v && std::strcmp(v, "1") == 0 && RUNNING_ON_VALGRIND;
#endif
}

void CriticalPathMarks::toggle() noexcept {
  on_ = !on_;
#ifdef PF_HAVE_CALLGRIND
  CALLGRIND_TOGGLE_COLLECT;
#endif
}

}  // namespace pollfab::util
