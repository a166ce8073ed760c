// A wrapped ring decodes completely: the records of every window a snapshot
// keeps, for ring sizes from 4 KiB to 64 MiB, every wrap offset of a small
// ring, and key patterns that stay in one region, alternate between two or
// three, cycle through more regions than there are base slots, or idle for
// an hour between records. Driven through the real fast path (RecordReading) and
// snapshot (SnapshotRing), decoded by the reader's decoder (DecodeRecords).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <set>
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
    r_->epoch_tsc = ~uint64_t{0};
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
enum class Pattern { kOneRegion, kTwoRegions, kThreeRegions, kSixRegions, kHourIdle, kPhases };
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
    case Pattern::kPhases:  // mostly one region, another each 3000 calls (the hot slot moves), a third now and then
      region = (i / 6000) % 2 == 0 ? 0 : 1;
      if ((i / 2) % 7 == 3) region = 2 + (i / 14000) % 4;  // and, now and then, the other four in turn (evictions)
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
    rt::RecordReading(ring.get(), e.exit, e.key, e.tsc);
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
  if (c.pattern != Pattern::kSixRegions && c.pattern != Pattern::kPhases) {
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
    case Pattern::kPhases: return "Phases";
  }
  return "?";
}

std::vector<SizeCase> AllSizes() {
  std::vector<SizeCase> out;
  for (uint64_t bytes : {uint64_t{4} << 10, uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{64} << 20}) {
    for (Pattern p : {Pattern::kOneRegion, Pattern::kTwoRegions, Pattern::kThreeRegions, Pattern::kSixRegions,
                      Pattern::kHourIdle, Pattern::kPhases}) {
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
                    Pattern::kHourIdle, Pattern::kPhases}) {
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

// The hot slot (Ring::hot_base) is the region most of a thread's latest
// records came from: a thread that moves to another region has it there by
// the next sync, and a region whose base was evicted is never the hot one.
TEST(RingHotSlot, FollowsTheRegionTheThreadMovedToByTheNextSync) {
  TestRing ring(64 << 10);
  rt::Ring* r = ring.get();
  const uint64_t sync = format::SyncInterval(ring.capacity());
  uint64_t tsc = 1000;
  auto calls = [&](uint64_t region, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      rt::RecordReading(r, false, kRegions[region] + 16 * (i % 5), tsc += 40);
      rt::RecordReading(r, true, kRegions[region] + 16 * (i % 5), tsc += 40);
    }
  };
  auto hot_is = [&](uint64_t region) { return r->hot_base == (kRegions[region] >> 32) << 32; };
  calls(0, 10);
  EXPECT_TRUE(hot_is(0));
  calls(1, 10);  // a new base: announced, yet region 0 stays hot until a sync says otherwise
  EXPECT_TRUE(hot_is(0));
  calls(1, sync);  // a sync passed while in region 1
  EXPECT_TRUE(hot_is(1));
  // Six regions in turn evict every base: the hot one always holds its slot's base.
  for (uint64_t round = 0; round < 3 * sync; ++round) {
    calls(round % 6, 1);
    bool matches_a_slot = false;
    for (unsigned s = 0; s < format::kBaseSlots; ++s) {
      if (r->base[s] != rt::kNoBase && uint64_t{r->base[s]} << 32 == r->hot_base &&
          r->hot_tag[0] == format::EventTag(false, s) && r->hot_tag[1] == format::EventTag(true, s)) {
        matches_a_slot = true;
      }
    }
    ASSERT_TRUE(matches_a_slot) << "after call " << round;
  }
}

}  // namespace
}  // namespace lookback::testing

namespace lookback::testing {
namespace {

// ---- fast clock (FORMAT.md, "Fast clock") ------------------------------------

// A fast-clock ring as the runtime sets one up, dense from the start, whose
// on-CPU word the test clears by hand where the kernel would.
struct FastRing {
  TestRing ring;
  uint64_t on_cpu = 1;
  explicit FastRing(uint32_t group = 8, uint64_t bytes = 64 << 10) : ring(bytes) {
    rt::Ring* r = ring.get();
    r->on_cpu = &on_cpu;
    r->fast_mask = group - 1;
    r->clock_mask = group - 1;
    r->sparse_ticks = ~uint32_t{0};  // stays dense whatever the gaps
  }
  std::vector<uint64_t> Records() const {
    const rt::Ring* r = const_cast<TestRing&>(ring).get();
    return std::vector<uint64_t>(r->slots, r->slots + r->pos);
  }
};

model::ClockMode Fast(uint64_t end_tsc, double ticks_per_ns = 0) {
  model::ClockMode m;
  m.fast = true;
  m.ticks_per_ns = ticks_per_ns;
  m.end_tsc = end_tsc;
  return m;
}

std::vector<model::Event> DecodeAll(const std::vector<uint64_t>& recs, const model::ClockMode& mode,
                                    model::DecodeStats* st = nullptr) {
  std::vector<model::Event> out;
  const model::DecodeStats s = model::DecodeRecords(recs.size(), format::kLayout, mode, [&](uint64_t i) { return recs[i]; },
                                                    [&](const model::Event& e) { out.push_back(e); });
  if (st != nullptr) *st = s;
  return out;
}

TEST(FastClockWriter, ReadsTheClockOncePerGroupAndWritesTheOthersUntimed) {
  FastRing f;
  for (int i = 0; i < 64; ++i) rt::RecordNow(f.ring.get(), i & 1, 0x55d0c0de0000ull + 16 * (i % 5));
  model::DecodeStats st;
  const auto events = DecodeAll(f.Records(), Fast(__rdtsc()), &st);
  ASSERT_EQ(events.size(), 64u);
  std::set<uint64_t> readings;
  for (const auto& e : events) readings.insert(e.lo);
  // The first record (a sync, on the slow path) and one per group of 8
  // positions; the sync's control records shift the groups by one.
  EXPECT_LE(readings.size(), 64u / 8 + 2);
  EXPECT_GE(readings.size(), 64u / 8);
  EXPECT_GE(st.untimed, 64u - readings.size() - 1);
  uint64_t untimed_records = 0;
  for (uint64_t r : f.Records()) untimed_records += format::IsUntimed(r);
  EXPECT_EQ(untimed_records, st.untimed) << "every record without a reading is an UNTIMED_ENTRY/EXIT";
}

// Untimed records are stored through the lap's base (Ring::lap), not the
// mask: lap after lap of a small ring, each slot must hold the record of the
// newest position that maps to it, never one meant for another lap's slot.
TEST(FastClockWriter, UntimedRecordsLandInTheirOwnSlotLapAfterLap) {
  for (uint32_t group : {2u, 8u, 64u}) {
    SCOPED_TRACE("group " + std::to_string(group));
    FastRing f(group, 4096);  // 512 slots
    rt::Ring* r = f.ring.get();
    auto key_at = [](uint64_t pos) { return 0x55d0c0de0000ull + 16 * (pos % 997); };
    const uint64_t n = 512 * 7 + 37;
    while (r->pos < n) rt::RecordNow(r, (r->pos & 1) != 0, key_at(r->pos));
    uint64_t untimed = 0;
    for (uint64_t slot = 0; slot < f.ring.capacity(); ++slot) {
      const uint64_t pos = (r->pos - 1) - ((r->pos - 1 - slot) & r->mask);  // newest position of this slot
      const uint64_t rec = r->slots[slot];
      if (!format::IsUntimed(rec)) continue;
      ++untimed;
      // The slow path's control records shift the pattern, so each record is
      // checked against its own position's key and kind.
      EXPECT_EQ(rec, format::MakeUntimed((pos & 1) != 0, key_at(pos))) << "slot " << slot << ", position " << pos;
    }
    EXPECT_GT(untimed, f.ring.capacity() * (group - 1) / group - f.ring.capacity() / 8) << "mostly untimed";
  }
}

TEST(FastClockWriter, ADescheduleForcesAReadingThatSaysHowLongTheThreadWasOffCpu) {
  FastRing f;
  const uint64_t key = 0x55d0c0de0000ull;
  // A first forced reading notes the clocks the next one is measured from
  // (the runtime does this when a ring turns dense).
  rt::RecordNow(f.ring.get(), false, key);
  f.on_cpu = 0;
  rt::RecordNow(f.ring.get(), true, key);
  for (int i = 0; i < 19; ++i) rt::RecordNow(f.ring.get(), i & 1, key);  // ends mid-group
  const uint64_t before = f.ring.get()->pos;
  f.on_cpu = 0;  // what the kernel does when the thread is descheduled
  usleep(30000);
  rt::RecordNow(f.ring.get(), true, key);
  EXPECT_NE(f.on_cpu, 0u) << "re-armed";
  const auto recs = f.Records();
  ASSERT_GE(recs.size(), before + 2);
  const uint64_t off = recs[recs.size() - 2];
  ASSERT_FALSE(format::IsEvent(off));
  ASSERT_EQ(format::ControlKindOf(off), static_cast<uint8_t>(format::ControlKind::kOffCpu));
  // usleep's 30 ms were off CPU; the slack and the clocks' granularity keep
  // the claim below the truth, never above.
  EXPECT_GE(format::ControlPayload(off), 20'000'000u);
  EXPECT_LE(format::ControlPayload(off), 1'000'000'000u);  // a loaded machine may oversleep, not by seconds
  for (size_t i = 0; i + 2 < recs.size(); ++i) {
    EXPECT_FALSE(!format::IsEvent(recs[i]) && format::ControlKindOf(recs[i]) == 5) << "only one OFFCPU: the first "
                                                                                       "forced reading had no baseline";
  }
  const auto events = DecodeAll(recs, Fast(__rdtsc(), 2.0));
  ASSERT_EQ(events.size(), 22u);
  EXPECT_EQ(events.back().lo, events.back().hi) << "the forced record is a reading";
  EXPECT_GT(events.back().lo, events[events.size() - 2].lo);
}

// Synthetic rings: EPOCH 0 and one base, then records: 0/1 an entry/exit
// read at `tsc`, 2 OFFCPU (`tsc` ns), 3 RESUME, 4/5 an untimed entry/exit.
std::vector<uint64_t> Synthetic(std::initializer_list<std::pair<uint64_t, int>> events) {
  std::vector<uint64_t> recs = {format::MakeEpoch(0, 0), format::MakeFnBase(0, 0x55d0, 0, false, 1)};
  for (const auto& [tsc, what] : events) {
    if (what == 2) {
      recs.push_back(format::MakeOffCpu(tsc));  // tsc: ns off CPU
    } else if (what == 3) {
      recs.push_back(format::MakeControl(format::ControlKind::kResume, 0));
    } else if (what >= 4) {
      recs.push_back(format::MakeUntimed(what == 5, 0x55d0c0de0000ull));
    } else {
      recs.push_back(format::MakeEvent(what == 1, 0, tsc, 0x55d0c0de0000ull));
    }
  }
  return recs;
}

TEST(FastClockDecoder, UntimedEventsLieBetweenTheReadingsAroundThemInOrder) {
  const auto recs = Synthetic({{1000, 0}, {0, 4}, {0, 5}, {0, 5}, {5000, 0}});
  const auto ev = DecodeAll(recs, Fast(9000));
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].lo, 1000u);
  EXPECT_EQ(ev[0].hi, 1000u) << "after the announcements: the slow path's reading";
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(ev[i].lo, 1000u);
    EXPECT_EQ(ev[i].hi, 5000u);
    EXPECT_GT(ev[i].tsc, ev[i - 1].tsc);
    EXPECT_LT(ev[i].tsc, 5000u);
  }
  EXPECT_EQ(ev[4].lo, 5000u);
  EXPECT_EQ(ev[4].hi, 5000u);
  EXPECT_EQ(ev[4].tsc, 5000u);
}

TEST(FastClockDecoder, UntimedEventsBeforeAWindowsFirstReadingAreNotDecodable) {
  // A wrapped ring's window cut in the middle of a group: the reading before
  // its first untimed events was overwritten, so nothing bounds them below.
  const uint64_t key = 0x55d0c0de0000ull;
  const std::vector<uint64_t> window = {format::MakeUntimed(false, key), format::MakeUntimed(false, key),
                                        format::MakeEpoch(0, 0), format::MakeFnBase(0, 0x55d0, 0x55d0, true, 1),
                                        format::MakeEvent(true, 0, 5000, key), format::MakeUntimed(true, key),
                                        format::MakeEvent(true, 0, 6000, key)};
  model::DecodeStats st;
  const auto ev = DecodeAll(window, Fast(9000), &st);
  EXPECT_EQ(st.undecodable_prefix, 2u);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].lo, 5000u);
  EXPECT_EQ(ev[0].hi, 5000u);
  EXPECT_EQ(ev[1].lo, 5000u);
  EXPECT_EQ(ev[1].hi, 6000u);
  EXPECT_EQ(ev[1].key, key) << "an untimed record carries its whole key";
}

TEST(FastClockDecoder, TimeOffCpuTightensTheBoundOfTheEventsBeforeIt) {
  // 1 tick per ns: 100000 ns off CPU before the reading at 200000.
  const auto recs = Synthetic({{1000, 0}, {0, 4}, {100000, 2}, {200000, 1}});
  model::DecodeStats st;
  const auto ev = DecodeAll(recs, Fast(300000, 1.0), &st);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].hi, 100000u);
  EXPECT_LE(ev[1].tsc, 100000u);
  EXPECT_EQ(st.off_cpu, 1u);
  // Without a calibration the record is not applied: the bound stays wide.
  const auto wide = DecodeAll(recs, Fast(300000, 0));
  EXPECT_EQ(wide[1].hi, 200000u);
}

TEST(FastClockDecoder, EventsAfterTheLastReadingAreBoundedByTheThreadsEnd) {
  const auto recs = Synthetic({{1000, 0}, {1100, 0}, {1200, 0}, {0, 5}, {0, 5}});
  const auto ev = DecodeAll(recs, Fast(1000000));
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[4].hi, 1000000u);
  // Placed at the pace of the last stretch (100 ticks per event), not
  // spread over the whole million ticks up to the snapshot.
  EXPECT_LT(ev[4].tsc, 2000u);
}

TEST(FastClockDecoder, MarkersKeepTheirPlaceAmongHeldEvents) {
  // The EVENT after a RESUME is a reading (the runtime sends it down the slow path).
  const auto recs = Synthetic({{1000, 0}, {0, 4}, {0, 4}, {0, 3}, {1500, 1}, {0, 5}, {2000, 1}});
  const auto ev = DecodeAll(recs, Fast(3000));
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[2].hi, 1500u);
  EXPECT_EQ(ev[3].kind, model::EventKind::kResume);
  EXPECT_EQ(ev[4].kind, model::EventKind::kExit);
  EXPECT_EQ(ev[4].hi, 1500u);
  EXPECT_EQ(ev[5].hi, 2000u);
}

TEST(FastClockDecoder, ExactRingsKeepExactTimes) {
  const auto recs = Synthetic({{1000, 0}, {1000, 0}, {5000, 1}});
  std::vector<model::Event> ev;
  model::DecodeRecords(recs.size(), format::kLayout, [&](uint64_t i) { return recs[i]; },
                       [&](const model::Event& e) { ev.push_back(e); });
  ASSERT_EQ(ev.size(), 3u);
  for (const auto& e : ev) {
    EXPECT_EQ(e.lo, e.tsc);
    EXPECT_EQ(e.hi, e.tsc);
  }
}

TEST(FastClockDecoder, ADamagedRingWithoutReadingsIsReleasedInBoundedBatches) {
  std::vector<uint64_t> recs = {format::MakeEpoch(0, 0), format::MakeFnBase(0, 0x55d0, 0, false, 1),
                                format::MakeEvent(false, 0, 777, 0x55d0c0de0000ull)};
  for (int i = 1; i < 10000; ++i) recs.push_back(format::MakeUntimed(i & 1, 0x55d0c0de0000ull));
  uint64_t seen = 0, widest = 0;
  model::DecodeRecords(recs.size(), format::kLayout, Fast(5000), [&](uint64_t i) { return recs[i]; },
                       [&](const model::Event& e) {
                         ++seen;
                         widest = std::max(widest, e.hi - e.lo);
                       });
  EXPECT_EQ(seen, 10000u);
  EXPECT_EQ(widest, 5000u - 777u) << "bounded by the thread's end, never claimed exact";
}

}  // namespace
}  // namespace lookback::testing
