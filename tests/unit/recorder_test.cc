// The recorder's encoding, driven through the real fast path with a fake
// clock (RecordReading), dumped by the real writer and read back by the reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "format/format.h"
#include "runtime/runtime.h"
#include "runtime/triggers.h"
#include "test_util.h"
#include "../scratch_dir.h"

namespace lookback::testing {
namespace {

constexpr uint64_t kTscHz = 2600000000ull;  // this machine's TSC, for realistic gaps
constexpr uint64_t kExe = 0x55d0c0de1000ull;

TEST(Recorder, RebuildsTimestampsAcrossTruncationWrap) {
  // Every gap crosses at least one 2^30-tick epoch; one call lasts 2^33 ticks
  // (3.3 s), longer than Hubble's 32-bit truncation could represent.
  const uint64_t t0 = 0x123456789abull;
  const std::vector<Ev> evs = {
      {false, kExe + 0x10, t0},
      {false, kExe + 0x20, t0 + (1ull << 30) + 12345},
      {true, kExe + 0x20, t0 + (1ull << 30) + 12345 + (1ull << 33)},
      {false, kExe + 0x30, t0 + (3ull << 32) + 7},
      {true, kExe + 0x30, t0 + (3ull << 32) + 8},
      {true, kExe + 0x10, t0 + (5ull << 32) + 1},
  };
  const uint32_t tid = OnFreshThread([&] {
    for (const auto& e : evs) Emit(e);
  });
  EXPECT_EQ(DecodedEvents(DumpNow(), tid), evs);
}

TEST(Recorder, RebuildsTimestampsAfterAnHourIdle) {
  const uint64_t t0 = 0x7777777777ull;
  const uint64_t hour = 3600 * kTscHz;
  const std::vector<Ev> evs = {
      {false, kExe + 0x10, t0},       {false, kExe + 0x20, t0 + 100}, {true, kExe + 0x20, t0 + 100 + hour},
      {true, kExe + 0x10, t0 + 101 + hour}, {false, kExe + 0x30, t0 + 2 * hour}, {true, kExe + 0x30, t0 + 2 * hour + 5},
  };
  const uint32_t tid = OnFreshThread([&] {
    for (const auto& e : evs) Emit(e);
  });
  EXPECT_EQ(DecodedEvents(DumpNow(), tid), evs);
}

TEST(Recorder, KeepsKeysWhoseUpperBitsChange) {
  // Executable, shared library, and managed-runtime method ids interleaved:
  // every change of the key's upper bits costs one FN_BASE record.
  const uint64_t lib = 0x7f3a12340000ull;
  const uint64_t method = LB_METHOD_KEY(42);
  const std::vector<Ev> evs = {
      {false, kExe + 1, 1000}, {false, lib + 2, 1001}, {false, method, 1002}, {true, method, 1003},
      {true, lib + 2, 1004},   {false, kExe + 5, 1005}, {true, kExe + 5, 1006}, {true, kExe + 1, 1007},
  };
  const uint32_t tid = OnFreshThread([&] {
    for (const auto& e : evs) Emit(e);
  });
  EXPECT_EQ(DecodedEvents(DumpNow(), tid), evs);
}

TEST(Recorder, DropsOldestWhenRingIsFull) {
  // LOOKBACK_BUFFER_SIZE=4096 in this test's environment: 512 slots.
  std::vector<Ev> evs;
  for (uint64_t i = 0; i < 20000; ++i) evs.push_back({(i & 1) != 0, kExe + 16 * (i / 2 % 37), 5000000 + i * 40000});
  const uint32_t tid = OnFreshThread([&] {
    for (const auto& e : evs) Emit(e);
  });
  model::DecodeStats st;
  const std::vector<Ev> got = DecodedEvents(DumpNow(), tid, &st);
  ASSERT_GE(got.size(), 400u);  // 512 slots minus EPOCH/FN_BASE announcements
  ASSERT_LE(got.size(), 512u);
  EXPECT_EQ(st.undecodable_prefix, 0u);
  const std::vector<Ev> newest(evs.end() - static_cast<ptrdiff_t>(got.size()), evs.end());
  EXPECT_EQ(got, newest);
}

// A timestamp of 0 is a timestamp like any other (a caller's own clock may
// start there): the slow path, which reads the TSC itself for callers that
// did not, must not take it for "read it for me".
TEST(Recorder, KeepsATimestampOfZero) {
  const uint32_t tid = OnFreshThread([&] {
    Emit({false, kExe, 0});
    Emit({true, kExe, 16});
  });
  EXPECT_EQ(DecodedEvents(DumpNow(), tid), (std::vector<Ev>{{false, kExe, 0}, {true, kExe, 16}}));
}

TEST(Recorder, DropsKeysAboveTheKeySpace) {
  const uint32_t before = rt::R().stats.invalid_keys.load();
  const uint32_t tid = OnFreshThread([&] {
    Emit({false, kExe, 10});
    Emit({false, format::kKeyLimit + 5, 11});
    Emit({true, kExe, 12});
  });
  EXPECT_EQ(DecodedEvents(DumpNow(), tid), (std::vector<Ev>{{false, kExe, 10}, {true, kExe, 12}}));
  EXPECT_EQ(rt::R().stats.invalid_keys.load(), before + 1);
}

// The hot path compares a key's upper half with the base slots and takes
// only keys below 2^56 (an empty slot holds all ones, which a key of
// 0xffffffff_xxxxxxxx would match); keys from the public API are checked
// where they come in, whatever their upper half.
TEST(Recorder, ApiDropsKeysAboveTheKeySpaceEvenWhenTheyLookLikeAnEmptySlot) {
  const uint32_t before = rt::R().stats.invalid_keys.load();
  std::vector<uint64_t> keys;
  const uint32_t tid = OnFreshThread([&] {
    lb_enter(kExe);
    lb_enter(0xffffffff00001234ull);  // upper half == kNoBase
    lb_exit(0xffffffff00001234ull);
    lb_enter(format::kKeyLimit + 5);
    lb_exit(kExe);
  });
  for (const Ev& e : DecodedEvents(DumpNow(), tid)) keys.push_back(e.key);
  EXPECT_EQ(keys, (std::vector<uint64_t>{kExe, kExe}));
  EXPECT_EQ(rt::R().stats.invalid_keys.load(), before + 3);
}

TEST(Recorder, MarksResumeAfterThreadDisable) {
  std::string path;
  const uint32_t tid = OnFreshThread([&] {
    Emit({false, kExe, 10});
    lb_thread_disable();
    EXPECT_FALSE(lb_thread_is_tracing());
    Emit({true, kExe, 11});  // dropped: tracing is off
    lb_thread_enable();
    EXPECT_TRUE(lb_thread_is_tracing());
    Emit({false, kExe + 8, 12});
  });
  auto d = format::Dump::Open(DumpNow());
  ASSERT_TRUE(d.ok());
  int resumes = 0, events = 0;
  for (const auto& t : d.value().threads) {
    if (t.tid != tid) continue;
    model::DecodeThread(d.value(), t, [&](const model::Event& e) {
      resumes += e.kind == model::EventKind::kResume;
      events += e.kind != model::EventKind::kResume;
    });
  }
  EXPECT_EQ(resumes, 1);
  EXPECT_EQ(events, 2);
}

// The writer keeps going while SnapshotRing copies: every snapshot must be a
// contiguous run of what was written (no torn, stale or half-written slot).
TEST(Recorder, SnapshotsWhileWritingHaveNoTornRecords) {
  std::atomic<rt::Ring*> ring{nullptr};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    Emit({false, kExe, 0});
    ring.store(lb_tls_ring);
    for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) Emit({(i & 1) != 0, kExe + (i % 1000), 16 * i});
  });
  while (ring.load() == nullptr) std::this_thread::yield();
  std::vector<uint64_t> snap;
  uint64_t checked = 0;
  for (int k = 0; k < 2000; ++k) {
    rt::SnapshotRing(*ring.load(), &snap);
    uint64_t prev_tsc_low = ~uint64_t{0}, prev_key = 0;
    for (uint64_t r : snap) {
      if (!format::IsEvent(r)) continue;
      const uint64_t tl = format::EventTscLow(r), key = format::EventKeyLow(r);
      if (prev_tsc_low != ~uint64_t{0}) {
        ASSERT_EQ(tl, (prev_tsc_low + 16) & format::kTscLowMask) << "snapshot " << k;
        ASSERT_EQ(key, ((prev_key - (kExe & 0xffffffff) + 1) % 1000) + (kExe & 0xffffffff)) << "snapshot " << k;
        ++checked;
      }
      prev_tsc_low = tl;
      prev_key = key;
    }
  }
  stop = true;
  writer.join();
  EXPECT_GT(checked, 100000u);
}

// The copy re-reads the writer's position after every chunk; with no writer
// it keeps the whole window except the entries a publication in progress
// could be rewriting, in order, across chunk and wrap boundaries.
TEST(Snapshot, CopyOfAQuietLogKeepsAllButTheMarginInOrder) {
  constexpr uint64_t kCap = 1 << 16;  // eight copy chunks
  for (const uint64_t pos : {uint64_t{1000}, kCap, 3 * kCap + 123}) {
    std::vector<uint64_t> slots(kCap), dst(kCap, ~uint64_t{0});
    for (uint64_t i = pos > kCap ? pos - kCap : 0; i < pos; ++i) slots[i & (kCap - 1)] = i;
    bool overrun = false;
    const rt::RingWindow w = rt::CopyPublishedInto(&pos, slots.data(), kCap, 1, 7, dst.data(), &overrun);
    const uint64_t first = pos + 7 > kCap ? pos + 7 - kCap : 0;
    EXPECT_EQ(w.first, first) << pos;
    EXPECT_EQ(w.count, pos - first) << pos;
    EXPECT_EQ(overrun, first > (pos > kCap ? pos - kCap : 0)) << pos;
    for (uint64_t j = 0; j < w.count; ++j) ASSERT_EQ(dst[w.offset + j], w.first + j) << pos << " entry " << j;
  }
  // Entries of several u64 (samples): the same, entry by entry.
  constexpr uint64_t kEntries = 16, kWidth = 3;
  const uint64_t pos = 40;
  std::vector<uint64_t> slots(kEntries * kWidth), dst(kEntries * kWidth);
  for (uint64_t i = pos - kEntries; i < pos; ++i)
    for (uint64_t f = 0; f < kWidth; ++f) slots[(i % kEntries) * kWidth + f] = i * 10 + f;
  bool overrun = false;
  const rt::RingWindow w = rt::CopyPublishedInto(&pos, slots.data(), kEntries, kWidth, 1, dst.data(), &overrun);
  EXPECT_EQ(w.first, pos - kEntries + 1);
  EXPECT_EQ(w.count, kEntries - 1);
  for (uint64_t j = 0; j < w.count; ++j)
    for (uint64_t f = 0; f < kWidth; ++f) ASSERT_EQ(dst[(w.offset + j) * kWidth + f], (w.first + j) * 10 + f);
}

// File systems stamp files with a coarse clock (one tick of ~4 ms here),
// and a small dump takes less: retention must then keep <name>-<pid>-10
// over <name>-<pid>-9, comparing the numbers as numbers.
TEST(RetentionOrder, EqualTimestampsKeepTheHigherDumpNumbers) {
  const std::string dir = testing::ScratchDir("retention-order");
  const timespec same[2] = {{1700000000, 0}, {1700000000, 0}};
  for (int n : {8, 9, 10, 11}) {
    const std::string p = dir + "/prog-42-" + std::to_string(n) + ".lbk";
    FILE* f = fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("x", f);
    fclose(f);
    ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), same, 0), 0);
  }
  rt::EnsureInitialised();
  const uint32_t saved = rt::R().config.max_dumps;
  rt::R().config.max_dumps = 2;
  {
    std::lock_guard<std::mutex> lock(rt::ControlMutex());
    rt::EnforceRetention(dir, dir + "/prog-42-11.lbk");
  }
  rt::R().config.max_dumps = saved;
  std::vector<std::string> left;
  for (int n : {8, 9, 10, 11}) {
    if (access((dir + "/prog-42-" + std::to_string(n) + ".lbk").c_str(), F_OK) == 0) left.push_back(std::to_string(n));
  }
  EXPECT_EQ(left, (std::vector<std::string>{"10", "11"}));
  for (int n : {10, 11}) unlink((dir + "/prog-42-" + std::to_string(n) + ".lbk").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace lookback::testing
