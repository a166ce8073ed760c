// CpuTimeline (model/cpu_time.h): a thread's CPU time between readings, and
// the off-CPU time placed in the trace's silences.
#include <gtest/gtest.h>

#include "model/waiting.h"
#include "model/cpu_time.h"

namespace lookback::testing {
namespace {

TEST(CpuTimeline, InterpolatesEvenlyBetweenReadings) {
  model::CpuTimeline t({{0, 0}, {100, 50}, {200, 50}});
  ASSERT_TRUE(t.known());
  EXPECT_EQ(t.OnCpu(0, 100), 50);
  EXPECT_EQ(t.OnCpu(100, 200), 0);
  EXPECT_EQ(t.OnCpu(50, 150), 25);
  EXPECT_EQ(t.OnCpu(150, 120), 0);  // backwards: nothing
  // Outside the readings: the nearest interval's rate.
  EXPECT_EQ(t.OnCpu(200, 300), 0);
  EXPECT_EQ(t.OnCpu(-100, 0), 50);
  // Times out of order still answer (the cursor goes back).
  EXPECT_EQ(t.OnCpu(10, 20), 5);
}

TEST(CpuTimeline, WithoutReadingsEverythingIsOnCpu) {
  model::CpuTimeline none;
  EXPECT_FALSE(none.known());
  EXPECT_EQ(none.OnCpu(10, 110), 100);
  model::CpuTimeline one({{0, 7}});
  EXPECT_FALSE(one.known());
  EXPECT_EQ(one.OnCpu(0, 40), 40);
}

TEST(CpuTimeline, OffCpuTimeGoesToTheLongestSilencesFirst) {
  // 100 ns with 50 on CPU; silences of 60 (20..80) and 10 (85..95).
  model::CpuTimeline t({{0, 0}, {100, 50}});
  t.Refine({{20, 80}, {85, 95}});
  EXPECT_EQ(t.OnCpu(0, 20), 20);   // busy
  EXPECT_EQ(t.OnCpu(20, 80), 10);  // the long silence holds all 50 of the wait
  EXPECT_EQ(t.OnCpu(80, 100), 20);
  EXPECT_EQ(t.OnCpu(0, 100), 50);  // the readings stay as read
}

TEST(CpuTimeline, WhatSilencesCannotHoldIsSpreadOverTheRest) {
  // 100 ns with 10 on CPU, one silence of 40: it takes 40, the other 50 of
  // waiting spread over the remaining 60 ns.
  model::CpuTimeline t({{0, 0}, {100, 10}});
  t.Refine({{30, 70}});
  EXPECT_EQ(t.OnCpu(30, 70), 0);
  EXPECT_EQ(t.OnCpu(0, 30), 5);
  EXPECT_EQ(t.OnCpu(70, 100), 5);
  EXPECT_EQ(t.OnCpu(0, 100), 10);
}

TEST(CpuTimeline, ASilenceAcrossReadingsIsSplitBetweenThem) {
  model::CpuTimeline t({{0, 0}, {100, 50}, {200, 150}, {300, 160}});
  t.Refine({{50, 250}});
  EXPECT_EQ(t.OnCpu(0, 50), 50);       // busy until the silence
  EXPECT_EQ(t.OnCpu(50, 100), 0);      // the first interval's 50 of waiting
  EXPECT_EQ(t.OnCpu(100, 200), 100);   // on CPU throughout: nothing to place
  EXPECT_EQ(t.OnCpu(250, 300), 10);    // the silence took 50 of its 90 of waiting; the rest spread after it
  EXPECT_EQ(t.OnCpu(200, 250), 0);
  EXPECT_EQ(t.OnCpu(0, 300), 160);
}

TEST(WaitFunctions, KnowsTheBlockingCallsOfTheJvmAndTheCLibraryAndTakesMore) {
  format::Dump d;
  d.metadata[format::metadata::kStallIdle] = "idle_*,pump";
  model::WaitFunctions w(d, {"my::wait"});
  EXPECT_TRUE(w.IsWait("java.lang.ref.Reference java.lang.ref.ReferenceQueue.remove(long)"));
  EXPECT_TRUE(w.IsWait("void java.lang.Object.wait(long)"));
  EXPECT_TRUE(w.IsWait("void jdk.internal.misc.Unsafe.park(boolean, long)"));
  EXPECT_TRUE(w.IsWait("void java.lang.Thread.sleep(long)"));
  EXPECT_TRUE(w.IsWait("epoll_wait"));
  EXPECT_TRUE(w.IsWait("idle_loop(int)"));
  EXPECT_TRUE(w.IsWait("pump"));
  EXPECT_TRUE(w.IsWait("my::wait(int)"));
  EXPECT_FALSE(w.IsWait("void WorkAndWait.crunch(long)"));
  EXPECT_FALSE(w.IsWait("crunch"));
  EXPECT_TRUE(model::IsHousekeepingThread("Reference Handler"));
  EXPECT_TRUE(model::IsHousekeepingThread("C2 CompilerThread0"));
  EXPECT_FALSE(model::IsHousekeepingThread("worker"));
  EXPECT_FALSE(model::IsJvmDump(d));
  d.metadata["note.jvm"] = "x";
  EXPECT_TRUE(model::IsJvmDump(d));
}

}  // namespace
}  // namespace lookback::testing
