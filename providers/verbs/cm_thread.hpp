// CmThread: an rdma_cm event channel and the thread that serves it: one per verbs fabric for
// its RC objects (passive endpoints and FI_EP_MSG endpoints over RC queue pairs;
// docs/architecture-notes.md item 18), and one per service ID resolution listener (sidr.hpp).
// core::Eq never drives progress, so connection events (a request, established, rejected,
// disconnected, unreachable) must reach the application's EQ without its calls: this thread
// sleeps in poll(2) on the channel and a stop eventfd, hands each event to the CmHandler its
// id names (id->context; a connection request goes to its listener's), then acknowledges it.
//
// Rules for handlers (what keeps close safe): on_cm_event runs on the thread, must copy what it
// keeps from the event (private data dies at the ack), may write EQs and atomics and call
// non-blocking rdma_* calls on its own ids, and never takes a lock that anyone holds across
// rdma_destroy_id (which waits for the acks of the id's delivered events).
// Thread-safety: channel() and the handlers' ids may be used from any thread.
#pragma once
#include <memory>
#include <string>
#include <thread>

struct rdma_event_channel;
struct rdma_cm_event;
struct rdma_cm_id;

namespace pollfab::providers::verbs {

class CmHandler {
 public:
  virtual ~CmHandler() = default;
  // One event of an id whose context is this handler (see the rules above).
  virtual void on_cm_event(rdma_cm_event& ev) noexcept = 0;
};

class CmThread {
 public:
  // The channel (non-blocking) and its thread; nullptr with err set on failure.
  // name: the thread's name (15 characters shown).
  static std::shared_ptr<CmThread> start(std::string& err, const char* name = "pollfab-rc-cm");
  ~CmThread();  // stops the thread; every id on the channel must be destroyed first
  CmThread(const CmThread&) = delete;
  CmThread& operator=(const CmThread&) = delete;
  rdma_event_channel* channel() const noexcept { return channel_; }

 private:
  CmThread() = default;
  void run(const char* name) noexcept;
  rdma_event_channel* channel_ = nullptr;
  int stop_fd_ = -1;
  std::thread thread_;
};

}  // namespace pollfab::providers::verbs
