#include "format/dump_builder.h"

#include "format/sections.h"

#include <algorithm>

#include "format/encode.h"
#include "format/sections.h"

namespace lookback::format {
namespace {

void AppendSection(std::string* out, SectionType type, std::string payload, uint32_t* count) {
  const uint64_t size = payload.size();
  PadTo8(&payload);
  out->append(SectionHeader(type, size));
  out->append(payload);
  ++*count;
}

// The thread's events as ring records: an EPOCH whenever tsc >> kTscLowBits
// changes, a FN_BASE whenever a key's upper bits are in no slot (slots taken
// round robin, as the runtime does).
std::vector<uint64_t> EncodeRecords(const std::vector<BuiltEvent>& events) {
  std::vector<uint64_t> out;
  out.reserve(events.size() + 8);
  constexpr uint64_t kNone = ~uint64_t{0};
  uint64_t epoch = kNone;
  uint64_t base[kBaseSlots] = {kNone, kNone, kNone, kNone};
  unsigned in_use = 0, next_slot = 0;
  for (const BuiltEvent& e : events) {
    const uint64_t ep = e.tsc >> kTscLowBits;
    if (ep != epoch) {
      out.push_back(MakeEpoch(ep, epoch == kNone ? 0 : ep - epoch));
      epoch = ep;
    }
    const uint64_t b = (e.key >> 32) & kKeyBaseMask;
    unsigned slot = kBaseSlots;
    for (unsigned s = 0; s < kBaseSlots; ++s) {
      if (base[s] == b) slot = s;
    }
    if (slot == kBaseSlots) {
      slot = next_slot;
      next_slot = (next_slot + 1) % kBaseSlots;
      in_use |= 1u << slot;
      out.push_back(MakeFnBase(slot, b, base[slot] == kNone ? 0 : base[slot], base[slot] != kNone, in_use));
      base[slot] = b;
    }
    out.push_back(MakeEvent(e.exit, slot, e.tsc, e.key));
  }
  return out;
}

}  // namespace

std::string EncodeDump(const BuiltDump& d) {
  uint64_t last_tsc = 0;
  for (const auto& t : d.threads) {
    if (!t.events.empty()) last_tsc = std::max(last_tsc, t.events.back().tsc);
    last_tsc = std::max(last_tsc, t.end_tsc);
  }
  const uint64_t dump_tsc = d.dump_tsc != 0 ? d.dump_tsc : last_tsc;
  auto mono = [&](uint64_t tsc) {
    const uint64_t ticks = tsc >= d.ref_tsc ? tsc - d.ref_tsc : 0;
    return d.ref_monotonic_ns + static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * d.ns / d.ticks);
  };

  std::string out(kFileHeaderSize, '\0');
  uint32_t sections = 0;
  {
    ProcessInfo p;
    p.pid = d.pid;
    p.dump_seq = 1;
    p.dump_tsc = dump_tsc;
    p.dump_realtime_ns = d.ref_realtime_ns + (mono(dump_tsc) - d.ref_monotonic_ns);
    p.dump_monotonic_ns = mono(dump_tsc);
    p.name = d.process_name;
    p.exe = d.exe;
    p.reason = d.reason;
    AppendSection(&out, SectionType::kProcess, EncodeProcess(p), &sections);
  }
  {
    ClockInfo k;
    k.ticks = d.ticks;
    k.ns = d.ns;
    k.ref_tsc = d.ref_tsc;
    k.ref_monotonic_ns = d.ref_monotonic_ns;
    k.ref_realtime_ns = d.ref_realtime_ns;
    k.tsc_low_bits = kTscLowBits;
    AppendSection(&out, SectionType::kClock, EncodeClock(k), &sections);
  }
  AppendSection(&out, SectionType::kModules, EncodeModules({}), &sections);  // no native code: no modules
  if (!d.names.empty()) {
    const std::vector<std::pair<uint64_t, std::string>> names(d.names.begin(), d.names.end());
    AppendSection(&out, SectionType::kNames, EncodeNames(names), &sections);
  }
  for (const BuiltThread& t : d.threads) {
    const std::vector<uint64_t> records = EncodeRecords(t.events);
    uint64_t capacity = 64;
    while (capacity < records.size()) capacity *= 2;
    const uint64_t first_tsc = t.events.empty() ? dump_tsc : t.events.front().tsc;
    uint64_t end_tsc = t.end_tsc != 0 ? t.end_tsc : (t.events.empty() ? dump_tsc : t.events.back().tsc);
    ThreadInfo info;
    info.tid = t.tid;
    info.flags = kThreadExited | (t.main ? kThreadMain : 0u);
    info.capacity = capacity;
    info.record_count = records.size();
    info.start_tsc = first_tsc;
    info.exit_tsc = end_tsc;
    info.snapshot_tsc = dump_tsc;
    info.name = t.name;
    std::string p = EncodeThread(info);
    for (uint64_t r : records) PutU64(&p, r);
    AppendSection(&out, SectionType::kThread, std::move(p), &sections);
    if (!t.cpu.empty()) {
      const std::vector<std::pair<uint64_t, uint64_t>> readings(t.cpu.begin(), t.cpu.end());
      AppendSection(&out, SectionType::kCpu, EncodeCpu(t.tid, 0, readings), &sections);  // readings come with events
    }
  }
  if (!d.metadata.empty()) {
    const std::vector<std::pair<std::string, std::string>> entries(d.metadata.begin(), d.metadata.end());
    AppendSection(&out, SectionType::kMetadata, EncodeMetadata(entries), &sections);
  }
  const std::string h = EncodeFileHeader(kMinReaderVersion, sections, out.size(), /*features=*/0);  // not x86 TSC ticks
  out.replace(0, kFileHeaderSize, h);
  return out;
}

}  // namespace lookback::format
