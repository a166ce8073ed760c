#include "exporters/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lookback::exporters {

OutputFile::~OutputFile() { Abandon(); }

Status OutputFile::Open(const std::string& path) {
  path_ = path;
  error_ = 0;
  buf_.clear();
  buf_.reserve(kChunk + kChunk / 4);  // a format appends a little past kChunk before it drains
  if (Status s = file_.Create(path); !s.ok()) return s;
  fd_ = file_.fd();
  return Status::Ok();
}

void OutputFile::WriteOut() {
  // Not open (Open failed), or failed before: drop the bytes, keep the error.
  if (fd_ < 0 || error_ != 0) {
    buf_.clear();
    return;
  }
  const char* p = buf_.data();
  size_t left = buf_.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  buf_.clear();
}

Status OutputFile::Commit() {
  if (fd_ < 0) return Status::Error("no output file open");
  WriteOut();
  fd_ = -1;  // Commit closes it
  if (error_ != 0) {
    file_.Abandon();
    return Status::Error("cannot write '" + path_ + "': " + strerror(error_));
  }
  return file_.Commit();
}

void OutputFile::Abandon() {
  fd_ = -1;
  buf_.clear();
  file_.Abandon();
}

}  // namespace lookback::exporters
