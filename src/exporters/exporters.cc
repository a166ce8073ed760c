#include "exporters/exporters.h"

#include <fmt/format.h>

#include "symbolize/symbolizer.h"

namespace lookback::exporters {

const std::vector<ExporterInfo>& Exporters() {
  static const std::vector<ExporterInfo> kTable = {
      {"perfetto", "Perfetto protobuf trace (open in ui.perfetto.dev)", false, MakePerfettoSink},
      {"nanoscope", "Nanoscope text traces, one file per thread, in a directory", true, MakeNanoscopeSink},
      {"chrome", "Chrome Trace Event JSON (chrome://tracing, Perfetto)", false, MakeChromeSink},
      {"speedscope", "speedscope evented JSON, one profile per thread", false, MakeSpeedscopeSink},
      {"folded", "folded stacks weighted by self time (flamegraph.pl, inferno)", false, MakeFoldedSink},
      {"art", "Android method trace, version 3 (Android Studio, Perfetto)", false, MakeArtSink},
  };
  return kTable;
}

const ExporterInfo* FindExporter(const std::string& name) {
  for (const auto& e : Exporters()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

const std::string& KeyName(const model::ExportContext& ctx, uint64_t key) {
  if (ctx.symbols != nullptr) return ctx.symbols->Name(key);  // cached per key
  static thread_local std::string hex;
  hex = "0x" + fmt::format("{:x}", key);
  return hex;
}

}  // namespace lookback::exporters
