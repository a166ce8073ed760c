#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace lookback {

std::string AtomicFile::TempPathFor(const std::string& target) {
  const size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? target : target.substr(slash + 1);
  return dir + "." + name + "." + std::to_string(getpid()) + ".tmp";
}

AtomicFile::~AtomicFile() { Abandon(); }

Status AtomicFile::Create(const std::string& target, mode_t mode) {
  Abandon();
  target_ = target;
  temp_ = TempPathFor(target);
  unlink(temp_.c_str());  // a leftover of a crashed process of this pid
  fd_ = open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd_ < 0) return Status::Error("cannot create '" + temp_ + "': " + strerror(errno));
  owned_ = true;
  return Status::Ok();
}

int AtomicFile::ReleaseFd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Status AtomicFile::Commit() {
  if (!owned_) return Status::Error("no file to commit for '" + target_ + "'");
  int error = 0;
  if (fd_ >= 0 && close(fd_) != 0) error = errno;
  fd_ = -1;
  if (error == 0 && rename(temp_.c_str(), target_.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(temp_.c_str());
    owned_ = false;
    return Status::Error("cannot write '" + target_ + "': " + strerror(error));
  }
  owned_ = false;
  return Status::Ok();
}

void AtomicFile::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (owned_) unlink(temp_.c_str());
  owned_ = false;
}

}  // namespace lookback
