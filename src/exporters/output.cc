#include "exporters/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lookback::exporters {

OutputFile::~OutputFile() { Abandon(); }

Status OutputFile::Open(const std::string& path) {
  path_ = path;
  error_ = 0;
  if (Status s = file_.Create(path); !s.ok()) return s;
  f_ = fdopen(file_.ReleaseFd(), "wb");
  if (f_ == nullptr) return Status::Error("cannot write '" + file_.temp_path() + "': " + strerror(errno));
  setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  return Status::Ok();
}

void OutputFile::Write(const void* data, size_t n) {
  if (f_ == nullptr || error_ != 0 || n == 0) return;
  if (fwrite(data, 1, n, f_) != n) error_ = errno ? errno : EIO;
}

void OutputFile::Write(std::string_view bytes) { Write(bytes.data(), bytes.size()); }

Status OutputFile::Commit() {
  if (f_ == nullptr) return Status::Error("no output file open");
  if (error_ == 0 && fflush(f_) != 0) error_ = errno;
  if (fclose(f_) != 0 && error_ == 0) error_ = errno;
  f_ = nullptr;
  if (error_ != 0) {
    file_.Abandon();
    return Status::Error("cannot write '" + path_ + "': " + strerror(error_));
  }
  return file_.Commit();
}

void OutputFile::Abandon() {
  if (f_ != nullptr) fclose(f_);
  f_ = nullptr;
  file_.Abandon();
}

}  // namespace lookback::exporters
