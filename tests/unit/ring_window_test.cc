// A wrapped ring decodes completely: the records of every window a snapshot
// keeps, for ring sizes from 4 KiB to 64 MiB, every wrap offset of a small
// ring, and key patterns that stay in one region, alternate between two or
// three, cycle through more regions than there are base slots, or idle for
// an hour between records. Driven through the real fast path (RecordAt) and
// snapshot (SnapshotRing), decoded by the reader's decoder (DecodeRecords).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/format.h"
#include "lookback/lookback.h"
#include "model/decoder.h"
#include "runtime/hot_path.h"
#include "runtime/runtime.h"

namespace lookback::testing {
namespace {

constexpr uint64_t kTscHz = 2600000000ull;
constexpr uint64_t kHour = 3600 * kTscHz;

// A ring set up as the runtime sets one up, in memory of the test's own (not
// registered: no dump ever sees it).
class TestRing {
 public:
  explicit TestRing(uint64_t bytes) : capacity_(bytes / 8) {
    map_bytes_ = 4096 + bytes;
    mem_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    r_ = new (mem_) rt::Ring;
    r_->pos = 0;
    r_->next_sync = 0;
    r_->epoch = ~uint64_t{0};
    for (uint32_t& b : r_->base) b = rt::kNoBase;
    r_->victim = 0;
    r_->mask = capacity_ - 1;
    r_->slots = reinterpret_cast<uint64_t*>(static_cast<char*>(mem_) + 4096);
    r_->capacity = capacity_;
  }
  ~TestRing() { munmap(mem_, map_bytes_); }
  rt::Ring* get() { return r_; }
  uint64_t capacity() const { return capacity_; }

 private:
  uint64_t capacity_, map_bytes_;
  void* mem_;
  rt::Ring* r_;
};

struct Ev {
  bool exit;
  uint64_t key, tsc;
  bool operator==(const Ev&) const = default;
};

std::string Show(const Ev& e) {
  char buf[96];
  snprintf(buf, sizeof buf, "%s %#lx @%#lx", e.exit ? "exit" : "enter", static_cast<unsigned long>(e.key),
           static_cast<unsigned long>(e.tsc));
  return buf;
}

// Key patterns, each a function of the event's index so that a window of any
// length can be checked without storing what was written.
enum class Pattern { kOneRegion, kTwoRegions, kThreeRegions, kSixRegions, kHourIdle };
constexpr uint64_t kRegions[] = {0x55d0c0de0000ull, 0x7f3a12340000ull, LB_METHOD_KEY(0), 0x7ffd00000000ull,
                                 0x0000004000a0ull, 0x7e0100000000ull};

Ev Generate(Pattern p, uint64_t i) {
  const bool exit = (i & 1) != 0;
  const uint64_t fn = (i / 2) % 61;
  uint64_t region = 0, tsc = 1000000 + i * 40;  // 40 ticks apart: an epoch (2^28) every 6.7 M events
  switch (p) {
    case Pattern::kOneRegion: region = 0; break;
    case Pattern::kTwoRegions: region = (i / 2) % 2; break;          // alternates at every call
    case Pattern::kThreeRegions: region = (i / 2) % 3; break;
    case Pattern::kSixRegions: region = (i / 2) % 6; break;          // more regions than base slots
    case Pattern::kHourIdle:
      region = (i / 2) % 2;
      tsc = 1000000 + i * 40 + (i / 64) * kHour;                      // an hour's idling every 32 calls
      break;
  }
  return {exit, kRegions[region] + 16 * fn, tsc};
}

struct Outcome {
  uint64_t written_events = 0, ring_records = 0, window_records = 0, decoded = 0;
  model::DecodeStats stats;
  std::string mismatch;  // first difference from what was written, if any
};

// Writes `events` events of pattern `p` into a fresh ring, snapshots it and
// decodes the snapshot; checks every decoded event against what was written.
Outcome WriteSnapshotDecode(uint64_t ring_bytes, Pattern p, uint64_t events) {
  TestRing ring(ring_bytes);
  for (uint64_t i = 0; i < events; ++i) {
    const Ev e = Generate(p, i);
    rt::RecordAt(ring.get(), e.exit, e.key, e.tsc);
  }
  Outcome o;
  o.written_events = events;
  o.ring_records = ring.get()->pos;
  std::vector<uint64_t> window;
  rt::SnapshotRing(*ring.get(), &window);
  o.window_records = window.size();
  std::vector<Ev> got;
  o.stats = model::DecodeRecords(
      window.size(), format::kLayout, [&](uint64_t i) { return window[i]; },
      [&](const model::Event& e) { got.push_back({e.kind == model::EventKind::kExit, e.key, e.tsc}); });
  o.decoded = got.size();
  // The window is the newest records: its events are the last ones written.
  const uint64_t first = events - got.size();
  for (uint64_t j = 0; j < got.size() && o.mismatch.empty(); ++j) {
    const Ev want = Generate(p, first + j);
    if (!(got[j] == want)) o.mismatch = "event " + std::to_string(first + j) + ": got " + Show(got[j]) + ", wrote " + Show(want);
  }
  return o;
}

// The window of a snapshot without a concurrent writer: all but the
// kMaxSlotsPerPublish records the protocol treats as maybe being rewritten.
uint64_t ExpectedWindow(uint64_t capacity, uint64_t records) {
  return records > capacity - format::kMaxSlotsPerPublish ? capacity - format::kMaxSlotsPerPublish : records;
}

// Control records a window can hold besides events: a sync (EPOCH and up to
// four FN_BASE) per sync interval, plus FN_BASE records for evictions.
void ExpectEveryEventDecodes(const Outcome& o, uint64_t capacity, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(o.window_records, ExpectedWindow(capacity, o.ring_records));
  EXPECT_EQ(o.stats.undecodable_prefix, 0u);
  EXPECT_EQ(o.stats.unknown_records, 0u);
  EXPECT_EQ(o.stats.backwards, 0u);
  EXPECT_EQ(o.mismatch, "");
  EXPECT_EQ(o.decoded, o.stats.events);
}

struct SizeCase {
  uint64_t bytes;
  Pattern pattern;
};

class RingWindow : public ::testing::TestWithParam<SizeCase> {};

TEST_P(RingWindow, EveryRecordOfAWrappedRingDecodes) {
  const SizeCase c = GetParam();
  const uint64_t capacity = c.bytes / 8;
  // Wrapped about two and a half times, at an odd offset.
  const uint64_t events = capacity * 2 + capacity / 2 + 13;
  const Outcome o = WriteSnapshotDecode(c.bytes, c.pattern, events);
  ExpectEveryEventDecodes(o, capacity, "ring " + std::to_string(c.bytes) + " bytes");
  if (c.pattern != Pattern::kSixRegions) {
    // One record per event, plus a sync every SyncInterval records, plus
    // (HourIdle) one EPOCH record after each hour's idling, every 64 events.
    const double per_event = static_cast<double>(o.ring_records) / static_cast<double>(events);
    const double idle = c.pattern == Pattern::kHourIdle ? 1.0 / 64 : 0.0;
    EXPECT_LT(per_event, 1.0 + idle + 6.0 / static_cast<double>(format::SyncInterval(capacity))) << "records per event";
  }
}

std::string PatternName(Pattern p) {
  switch (p) {
    case Pattern::kOneRegion: return "OneRegion";
    case Pattern::kTwoRegions: return "TwoRegions";
    case Pattern::kThreeRegions: return "ThreeRegions";
    case Pattern::kSixRegions: return "SixRegions";
    case Pattern::kHourIdle: return "HourIdle";
  }
  return "?";
}

std::vector<SizeCase> AllSizes() {
  std::vector<SizeCase> out;
  for (uint64_t bytes : {uint64_t{4} << 10, uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{64} << 20}) {
    for (Pattern p : {Pattern::kOneRegion, Pattern::kTwoRegions, Pattern::kThreeRegions, Pattern::kSixRegions,
                      Pattern::kHourIdle}) {
      if (bytes == (uint64_t{64} << 20) && p != Pattern::kTwoRegions && p != Pattern::kOneRegion) continue;  // time
      out.push_back({bytes, p});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingWindow, ::testing::ValuesIn(AllSizes()),
                         [](const ::testing::TestParamInfo<SizeCase>& info) {
                           return std::to_string(info.param.bytes >> 10) + "KiB_" + PatternName(info.param.pattern);
                         });

// Every wrap offset of a 4 KiB ring (512 slots), for each pattern: the
// snapshot is taken after 1 .. 3 * 512 events.
TEST(RingWindowOffsets, EveryWrapOffsetDecodes) {
  const uint64_t bytes = 4096, capacity = bytes / 8;
  for (Pattern p : {Pattern::kOneRegion, Pattern::kTwoRegions, Pattern::kThreeRegions, Pattern::kSixRegions,
                    Pattern::kHourIdle}) {
    for (uint64_t events = 1; events <= 3 * capacity; ++events) {
      const Outcome o = WriteSnapshotDecode(bytes, p, events);
      ExpectEveryEventDecodes(o, capacity, PatternName(p) + " after " + std::to_string(events) + " events");
      if (HasFailure()) return;
    }
  }
}

// The alternating program of the issue: the decoded window of a 1 MiB ring
// holds as many events as records (bar the syncs), not the half that a
// FN_BASE per event would leave.
TEST(RingWindowOffsets, AlternatingRegionsWriteOneRecordPerEvent) {
  const uint64_t bytes = uint64_t{1} << 20, capacity = bytes / 8;
  const Outcome o = WriteSnapshotDecode(bytes, Pattern::kTwoRegions, 5 * capacity);
  // Beyond one record per event: a sync (EPOCH + two FN_BASE) per 4096
  // records, and the first announcement of each region.
  EXPECT_LE(o.ring_records - 5 * capacity, (o.ring_records / format::kMaxSyncInterval + 1) * 3 + 2);
  EXPECT_GT(o.decoded, o.window_records * 99 / 100);
}

}  // namespace
}  // namespace lookback::testing
