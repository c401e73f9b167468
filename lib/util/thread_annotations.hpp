// Clang's thread-safety analysis attributes (-Wthread-safety; clang.llvm.org/docs/
// ThreadSafetyAnalysis.html), empty for other compilers. scripts/thread-safety.sh runs the
// analysis over the library with clang; the project itself builds with g++.
// PF_CAPABILITY marks a lock type; PF_GUARDED_BY(l) a member only touched holding l;
// PF_REQUIRES(l) a function its callers call holding l; PF_ACQUIRE/PF_RELEASE/PF_TRY_ACQUIRE
// the lock's own operations; PF_SCOPED_CAPABILITY an RAII guard.
#pragma once

#if defined(__clang__)
#define PF_TSA(x) __attribute__((x))
#else
#define PF_TSA(x)
#endif

#define PF_CAPABILITY(name) PF_TSA(capability(name))
#define PF_SCOPED_CAPABILITY PF_TSA(scoped_lockable)
#define PF_GUARDED_BY(l) PF_TSA(guarded_by(l))
#define PF_PT_GUARDED_BY(l) PF_TSA(pt_guarded_by(l))
#define PF_REQUIRES(...) PF_TSA(requires_capability(__VA_ARGS__))
#define PF_ACQUIRE(...) PF_TSA(acquire_capability(__VA_ARGS__))
#define PF_RELEASE(...) PF_TSA(release_capability(__VA_ARGS__))
#define PF_TRY_ACQUIRE(...) PF_TSA(try_acquire_capability(__VA_ARGS__))
#define PF_EXCLUDES(...) PF_TSA(locks_excluded(__VA_ARGS__))
#define PF_RETURN_CAPABILITY(l) PF_TSA(lock_returned(l))
#define PF_NO_THREAD_SAFETY_ANALYSIS PF_TSA(no_thread_safety_analysis)
