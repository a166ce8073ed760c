#include "common/directories.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace lookback {

Status MakeDirectories(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string path = dir.substr(0, i);
    if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::Error("cannot create directory '" + path + "': " + strerror(errno));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return Status::Error("'" + dir + "' is not a directory");
  return Status::Ok();
}

}  // namespace lookback
