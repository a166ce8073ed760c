#include "exporters/output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lookback::exporters {

OutputFile::~OutputFile() { Abandon(); }

std::string OutputFile::Open(const std::string& path) {
  path_ = path;
  error_ = 0;
  if (std::string err = file_.Create(path); !err.empty()) return err;
  f_ = fdopen(file_.ReleaseFd(), "wb");
  if (f_ == nullptr) return "cannot write '" + file_.temp_path() + "': " + strerror(errno);
  setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  return "";
}

void OutputFile::Write(const void* data, size_t n) {
  if (f_ == nullptr || error_ != 0 || n == 0) return;
  if (fwrite(data, 1, n, f_) != n) error_ = errno ? errno : EIO;
}

void OutputFile::Write(std::string_view bytes) { Write(bytes.data(), bytes.size()); }

std::string OutputFile::Commit() {
  if (f_ == nullptr) return "no output file open";
  if (error_ == 0 && fflush(f_) != 0) error_ = errno;
  if (fclose(f_) != 0 && error_ == 0) error_ = errno;
  f_ = nullptr;
  if (error_ != 0) {
    file_.Abandon();
    return "cannot write '" + path_ + "': " + strerror(error_);
  }
  return file_.Commit();
}

void OutputFile::Abandon() {
  if (f_ != nullptr) fclose(f_);
  f_ = nullptr;
  file_.Abandon();
}

std::string MakeDirectory(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      path = dir.substr(0, i);
      if (!path.empty() && mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        return "cannot create directory '" + path + "': " + strerror(errno);
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  return "";
}

}  // namespace lookback::exporters
