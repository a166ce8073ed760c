// Output files for exporters: the one buffer between a format and the disk.
// A format appends to buffer() and calls Drain() now and then; the buffer
// is written out (write(2), no stdio below it) once it holds kChunk bytes,
// and whatever is left when Commit() runs. The file is an AtomicFile (a
// temporary beside the target, renamed into place on Commit), so a reader
// never sees a partial file, and a failed or abandoned export leaves
// nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/atomic_file.h"
#include "common/status.h"

namespace lookback::exporters {

class OutputFile {
 public:
  // Written out at this size: big enough that a write costs nothing per
  // event, small enough to stay in the cache while a format fills it.
  static constexpr size_t kChunk = size_t{1} << 16;

  OutputFile() = default;
  ~OutputFile();  // abandons (removes the temporary file) unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // An error names the path.
  Status Open(const std::string& path);
  // What a format appends to.
  std::string& buffer() { return buf_; }
  // Writes the buffer out once it holds kChunk bytes.
  void Drain() {
    if (buf_.size() >= kChunk) WriteOut();
  }
  void Write(std::string_view bytes) {
    buf_.append(bytes);
    Drain();
  }
  void Write(const void* data, size_t n) { Write(std::string_view(static_cast<const char*>(data), n)); }
  // Writes the rest and renames (no fsync: an export can be made again from
  // its dump). The error is the first of any write.
  Status Commit();
  void Abandon();
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  void WriteOut();

  AtomicFile file_;
  int fd_ = -1;  // file_'s, while open
  std::string buf_, path_;
  int error_ = 0;  // the first write's errno
};

}  // namespace lookback::exporters
