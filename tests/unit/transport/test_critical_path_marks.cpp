// util::CriticalPathMarks in its real-clock mode (PF_CRITICAL_PATH_MARKS=tsc): what
// scripts/bench-turnaround.sh reads is the line each marking thread prints at its exit, and the
// count in it must be the turnarounds, no more (a tx mark with none started ends nothing, an
// empty rx burst starts nothing). Checks of what is counted and printed, not of any time.
// (Lives with the transport's clock tests: lib/util has no test binary of its own.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "lib/util/critical_path_marks.hpp"
#include "lib/util/tsc.hpp"

namespace {

using pollfab::util::CriticalPathMarks;

// Runs body in a thread of its own (the marks print when their thread exits) with the variable
// set to value (nullptr: unset); returns what the thread wrote to stderr.
template <class Body>
std::string run_marked(const char* value, Body body) {
  if (value) setenv("PF_CRITICAL_PATH_MARKS", value, 1);
  else unsetenv("PF_CRITICAL_PATH_MARKS");
  testing::internal::CaptureStderr();
  std::thread([&] {
    CriticalPathMarks m;  // reads the variable
    body(m);
  }).join();
  unsetenv("PF_CRITICAL_PATH_MARKS");
  return testing::internal::GetCapturedStderr();
}

TEST(CriticalPathMarks, TscModeCountsEachTurnaroundOnceAndPrintsAtThreadExit) {
  if (!pollfab::util::tsc_calibration()) GTEST_SKIP() << "no usable TSC on this machine";
  const std::string out = run_marked("tsc", [](CriticalPathMarks& m) {
    m.after_tx();   // nothing started: ends nothing
    m.after_rx(0);  // an empty burst starts nothing
    m.after_tx();
    m.after_rx(3);  // a turnaround starts at the first burst with packets
    m.after_rx(1);  // and runs on through later bursts (a restart would not change the count)
    m.after_tx();   // ends at the next tx burst
    m.after_tx();
    m.after_rx(1);
    m.after_tx();
  });
  EXPECT_NE(out.find("critical-path tsc: 2 turnarounds p10="), std::string::npos) << out;
  EXPECT_NE(out.find(" p50="), std::string::npos) << out;
  EXPECT_NE(out.find(" ns\n"), std::string::npos) << out;
}

TEST(CriticalPathMarks, AThreadThatNeverCompletesATurnaroundPrintsNothing) {
  const std::string out = run_marked("tsc", [](CriticalPathMarks& m) { m.after_rx(1); });
  EXPECT_EQ(out, "");
}

// The tsc line only: the callgrind mode ("1", here outside valgrind) prints nothing anyway.
TEST(CriticalPathMarks, WithoutTheTscValueNoLineIsPrinted) {
  auto turnaround = [](CriticalPathMarks& m) {
    m.after_rx(1);
    m.after_tx();
  };
  EXPECT_EQ(run_marked(nullptr, turnaround), "");
  EXPECT_EQ(run_marked("1", turnaround), "");    // the callgrind mode, not under valgrind
  EXPECT_EQ(run_marked("yes", turnaround), "");  // not a mode
}

}  // namespace
