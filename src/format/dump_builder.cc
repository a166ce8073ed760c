#include "format/dump_builder.h"

#include <algorithm>

#include "format/encode.h"

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
    std::string p;
    PutU32(&p, d.pid);
    PutU32(&p, 0);
    PutU32(&p, 1);
    PutU32(&p, 0);
    PutU64(&p, dump_tsc);
    PutU64(&p, d.ref_realtime_ns + (mono(dump_tsc) - d.ref_monotonic_ns));
    PutU64(&p, mono(dump_tsc));
    PutString(&p, d.process_name);
    PutString(&p, d.exe);
    PutString(&p, "");
    PutString(&p, d.reason);
    AppendSection(&out, SectionType::kProcess, std::move(p), &sections);
  }
  {
    std::string p;
    PutU64(&p, d.ticks);
    PutU64(&p, d.ns);
    PutU64(&p, d.ref_tsc);
    PutU64(&p, d.ref_monotonic_ns);
    PutU64(&p, d.ref_realtime_ns);
    PutU32(&p, kTscLowBits);
    PutU32(&p, 0);
    AppendSection(&out, SectionType::kClock, std::move(p), &sections);
  }
  {
    std::string p;
    PutU32(&p, 0);  // no native code: no modules
    AppendSection(&out, SectionType::kModules, std::move(p), &sections);
  }
  if (!d.names.empty()) {
    std::string p;
    PutU32(&p, static_cast<uint32_t>(d.names.size()));
    for (const auto& [key, name] : d.names) {
      PutU64(&p, key);
      PutString(&p, name);
    }
    AppendSection(&out, SectionType::kNames, std::move(p), &sections);
  }
  for (const BuiltThread& t : d.threads) {
    const std::vector<uint64_t> records = EncodeRecords(t.events);
    uint64_t capacity = 64;
    while (capacity < records.size()) capacity *= 2;
    const uint64_t first_tsc = t.events.empty() ? dump_tsc : t.events.front().tsc;
    uint64_t end_tsc = t.end_tsc != 0 ? t.end_tsc : (t.events.empty() ? dump_tsc : t.events.back().tsc);
    std::string p;
    PutU32(&p, t.tid);
    PutU32(&p, kThreadExited | (t.main ? kThreadMain : 0u));
    PutU64(&p, capacity);
    PutU64(&p, 0);
    PutU64(&p, records.size());
    PutU64(&p, 0);
    PutU64(&p, first_tsc);
    PutU64(&p, end_tsc);
    PutU64(&p, dump_tsc);
    PutString(&p, t.name);
    PadTo8(&p);
    for (uint64_t r : records) PutU64(&p, r);
    AppendSection(&out, SectionType::kThread, std::move(p), &sections);
    if (!t.cpu.empty()) {
      std::string c;
      PutU32(&c, t.tid);
      PutU32(&c, 0);
      PutU64(&c, 0);  // readings come with events, not on a schedule
      PutU32(&c, static_cast<uint32_t>(t.cpu.size()));
      PutU32(&c, 0);
      for (const auto& [tsc, cpu_ns] : t.cpu) {
        PutU64(&c, tsc);
        PutU64(&c, cpu_ns);
      }
      AppendSection(&out, SectionType::kCpu, std::move(c), &sections);
    }
  }
  if (!d.metadata.empty()) {
    std::string p;
    PutU32(&p, static_cast<uint32_t>(d.metadata.size()));
    for (const auto& [k, v] : d.metadata) {
      PutString(&p, k);
      PutString(&p, v);
    }
    AppendSection(&out, SectionType::kMetadata, std::move(p), &sections);
  }

  std::string h;
  h.append(kMagic, 8);
  PutU16(&h, kDumpVersion);
  PutU16(&h, kMinReaderVersion);
  PutU32(&h, kFileHeaderSize);
  PutU64(&h, 0);  // timestamps are not x86 TSC ticks
  PutU32(&h, sections);
  PutU32(&h, 0);
  PutU64(&h, out.size());
  h.resize(kFileHeaderSize, '\0');
  out.replace(0, kFileHeaderSize, h);
  return out;
}

}  // namespace lookback::format
