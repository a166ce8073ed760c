// A file written under a temporary name beside its target and renamed into
// place when complete: a reader never sees a partial file, and a write that
// fails or is abandoned leaves nothing behind. The one way lookback's
// reader-side tools (exporters, `sql`, the Parquet export) replace a file.
//
// The temporary is DIR/.NAME.PID.tmp: hidden (query engines skip dot files,
// so a dataset being written never shows a half file) and this process's own
// (two exports into one directory, from machines sharing it, never write
// through each other's temporaries). It is created with O_EXCL after
// removing a leftover of a crashed process of the same pid, so it is never
// a file someone else is writing. No fsync: what these write is derived from
// a dump and can be made again.
//
// (The runtime's dumps, written inside the traced process, are published
// with link() instead, which never replaces a file: runtime/dump_writer.cc.)
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace lookback {

class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();  // abandons (removes the temporary) unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Creates the temporary for `target`; an error names it.
  // fd() is then open for writing.
  Status Create(const std::string& target, mode_t mode = 0644);
  int fd() const { return fd_; }
  // Gives up the fd (the caller closes it, e.g. through fdopen's FILE).
  int ReleaseFd();
  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }

  // Closes the fd if still held and renames the temporary into place.
  // An error names the target; on an error the temporary is
  // removed.
  Status Commit();
  // Removes the temporary (nothing happens once committed).
  void Abandon();

  // DIR/.NAME.PID.tmp for `target`.
  static std::string TempPathFor(const std::string& target);

 private:
  std::string target_, temp_;
  int fd_ = -1;
  bool owned_ = false;  // the temporary is ours to remove or rename
};

}  // namespace lookback
