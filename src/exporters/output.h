// Output files for exporters: buffered writes into an AtomicFile (a
// temporary beside the target, renamed into place on Commit), so a reader
// never sees a partial file; a failed or abandoned export leaves nothing.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "common/atomic_file.h"
#include "common/status.h"

namespace lookback::exporters {

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // abandons (removes the temporary file) unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // An error names the path.
  Status Open(const std::string& path);
  void Write(std::string_view bytes);
  void Write(const void* data, size_t n);
  // Flush and rename (no fsync: an export can be made again from its dump).
  // The error is the first of any write.
  Status Commit();
  void Abandon();
  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  FILE* f_ = nullptr;
  AtomicFile file_;
  std::string path_;
  int error_ = 0;
};

}  // namespace lookback::exporters
