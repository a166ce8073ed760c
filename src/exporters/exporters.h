// The exporters: one file per output format, each a model::TraceSink.
// `lookback convert --to NAME` picks one from the table in exporters.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/walk.h"

namespace lookback::exporters {

struct ExportOptions {
  std::string out;  // output file, or directory for formats that write one file per thread
};

using MakeSinkFn = std::unique_ptr<model::TraceSink> (*)(const ExportOptions&);

struct ExporterInfo {
  const char* name;         // --to NAME
  const char* description;  // one line for --help
  bool writes_directory;    // true: `out` is a directory (one file per thread)
  MakeSinkFn make;
};

// The explicit table of formats.
const std::vector<ExporterInfo>& Exporters();
const ExporterInfo* FindExporter(const std::string& name);

// Display name of a key: demangled function name, or module+0xoffset.
const std::string& KeyName(const model::ExportContext& ctx, uint64_t key);

std::unique_ptr<model::TraceSink> MakePerfettoSink(const ExportOptions& o);
std::unique_ptr<model::TraceSink> MakeNanoscopeSink(const ExportOptions& o);
std::unique_ptr<model::TraceSink> MakeChromeSink(const ExportOptions& o);
std::unique_ptr<model::TraceSink> MakeSpeedscopeSink(const ExportOptions& o);
std::unique_ptr<model::TraceSink> MakeFoldedSink(const ExportOptions& o);
std::unique_ptr<model::TraceSink> MakeArtSink(const ExportOptions& o);

}  // namespace lookback::exporters
