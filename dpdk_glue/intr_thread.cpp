#include "dpdk_glue/intr_thread.hpp"

#include <rte_alarm.h>
#include <rte_interrupts.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "lib/util/log.hpp"

namespace pollfab::dpdk_glue {
namespace {

struct Call {
  const std::function<void()>* fn;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

void on_alarm(void* arg) {
  auto* c = static_cast<Call*>(arg);
  (*c->fn)();
  std::lock_guard<std::mutex> g(c->mu);
  c->done = true;
  c->cv.notify_all();  // under the lock: the waiter may free *c as soon as it sees done
}

}  // namespace

bool run_on_intr_thread(const std::function<void()>& fn, uint32_t timeout_ms) noexcept {
  if (rte_thread_is_intr()) {
    fn();
    return true;
  }
  Call c;
  c.fn = &fn;
  if (rte_eal_alarm_set(1, &on_alarm, &c) != 0) {
    fn();
    return false;
  }
  {
    std::unique_lock<std::mutex> lk(c.mu);
    if (c.cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] { return c.done; }))
      return true;
  }
  // Not run in time. Cancelling either removes the alarm (it never runs: run fn here) or, if
  // the callback is running now, waits for it to finish; either way c is free to go after.
  if (rte_eal_alarm_cancel(&on_alarm, &c) > 0) {
    PF_LOG("dpdk", Warn, Domain, "EAL interrupt thread busy for {} ms; port control runs here",
           timeout_ms);
    fn();
    return false;
  }
  return true;
}

}  // namespace pollfab::dpdk_glue
