// The JVM agent's cache of rewritten classes (docs/jvm.md, "Start-up"): the
// class hook's output for a class, kept on disk so that the next JVM that
// loads the same bytes with the same options skips the parse and the rewrite.
// The hook is most of what tracing adds to a JVM's start-up (H2's first
// output: 175 ms of 320).
//
// Key: XXH3-128 of the agent's fingerprint (its build id and every option the
// rewrite depends on) and the class's bytes. An entry holds the rewritten
// bytes with the ids of the run that wrote it, where those ids sit (one
// `sipush` per probe: RewriteResult::id_sites), and what the hook reports of
// the class (traced and skipped methods). A run that finds it gives the
// methods ids of its own and patches the sites: only classes whose ids all
// fit sipush (the first 32767 methods of a run) are stored and used.
//
// On disk: pack files (below), each renamed into place whole, so concurrent
// JVMs see a whole pack or none. An entry is untrusted input (another
// version, a torn disk, a hand edit): ParseEntry checks every field and a
// checksum, and a bad entry is a miss. DropOldest keeps the directory under a size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frontends/jvm/rewriter.h"

namespace lookback::jvm {

// The agent's directories under the user's cache ($XDG_CACHE_HOME/lookback/LEAF,
// else ~/.cache/lookback/LEAF); empty when neither is set to an absolute path.
std::string UserCacheDir(std::string_view leaf);
// Makes `dir` (mkdir -p, 0700) and checks that it is the user's own and that
// nobody else may write to it: what the agent keeps there decides what a JVM
// runs (the class cache) or traces (the shed memory). Empty, or why not.
std::string PrivateDir(const std::string& dir);

struct CacheKey {
  uint64_t lo = 0, hi = 0;
  std::string Hex() const;
};
CacheKey ClassCacheKey(std::string_view fingerprint, std::span<const uint8_t> class_bytes);

struct CachedMethod {
  std::string name, descriptor;
  uint16_t access_flags = 0;
};

// What the hook needs of a rewrite to redo it without the rewriter.
struct CacheEntry {
  bool changed = false;  // false: the class stays as it is (no bytes, no methods)
  bool rename_hooked = false;
  std::string class_name;
  std::vector<uint8_t> bytes;
  std::vector<CachedMethod> traced;
  std::vector<IdSite> id_sites;
  std::vector<SkippedMethod> skipped;
};

// The entry of a finished rewrite, or nullopt when it cannot be cached (an
// error, or ids that are not all sipush sites).
std::optional<CacheEntry> EntryOf(const RewriteResult& r);
// The rewrite with ids first_id, first_id + 1, ... given to entry.traced in
// order; nullopt when a site is not a sipush or an id would not fit one.
// Takes the entry by value: the hook moves the one it loaded into the result.
std::optional<RewriteResult> Replay(CacheEntry entry, uint32_t first_id);

std::vector<uint8_t> SerializeEntry(const CacheKey& key, const CacheEntry& entry);
// The header (format, key, size, checksum) and `payload`: SerializeEntry's last step (and the fuzzer's).
std::vector<uint8_t> FramePayload(const CacheKey& key, std::span<const uint8_t> payload);
// Checks the format, the key and the checksum; nullopt for anything else.
std::optional<CacheEntry> ParseEntry(const CacheKey& key, std::span<const uint8_t> file);

// The directory: pack files, each the entries one JVM wrote, with an index.
//   pack   "LBJP" u32, version u32, entries (SerializeEntry's bytes, each
//          checked again by ParseEntry when used), then the index: per entry
//          key (hi, lo u64), offset u64, length u32; then the footer: index
//          offset u64, entry count u32, XXH3-64 of the index u64, "LBJP" u32.
// A JVM maps every pack at start (Open) and looks keys up in memory; what it
// rewrites itself goes to a pack of its own, written as it goes (Store, on a
// thread of the agent's) under a temporary name and renamed into place at
// VMDeath (Finish), so a JVM that dies leaves no pack, only a temporary that
// a later Open removes. One file per run, not per class: a file per class
// cost the kernel 250 us of inode work each on this machine.
class ClassCache {
 public:
  // `dir` is created (0700) when missing and its packs are mapped; an
  // unusable directory leaves the cache off (ok() false), with the reason in error().
  ClassCache(std::string dir, uint64_t max_bytes);
  ~ClassCache();
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }
  size_t entries() const { return index_.size(); }
  size_t packs() const { return maps_.size(); }
  // Thread-safe after construction: the index is not changed by Store.
  std::optional<CacheEntry> Load(const CacheKey& key) const;
  // Appends to this run's pack; thread-safe (the agent's writer, and at exit
  // the exiting thread). False when the entry is not in the pack: a write
  // failed or the pack would pass max_bytes (then the run stores nothing),
  // or Finish came first.
  bool Store(const CacheKey& key, const CacheEntry& entry);
  // Publishes this run's pack (when it holds entries), with the entries
  // whose writes are done; it never waits for one under way. Returns
  // whether a pack was put in place. Stores after it are refused.
  bool Finish();
  // After Finish: while there are more than 16 packs, or they hold more than
  // max_bytes, removes the oldest (a run that misses their entries writes
  // them again into its own pack, the newest). Only unlinks: a JVM that
  // merged packs instead was killed at exit before it was done when short,
  // and its own pack was lost with it. Returns the packs removed.
  size_t DropOldest();

  // Tests only: called by Store between giving an entry its place and
  // writing it, without the lock (a writer preempted there, for as long as
  // the hook takes).
  void (*before_entry_write_for_testing)(void* arg) = nullptr;
  void* before_entry_write_arg = nullptr;

 private:
  struct Map {
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::string path;
  };
  struct Slot {
    const uint8_t* data;
    uint32_t size;
  };
  struct KeyHash {
    size_t operator()(const CacheKey& k) const { return static_cast<size_t>(k.lo); }
  };
  struct KeyEq {
    bool operator()(const CacheKey& a, const CacheKey& b) const { return a.lo == b.lo && a.hi == b.hi; }
  };
  struct Written {
    CacheKey key;
    uint64_t offset;
    uint32_t length;
  };
  void MapPack(const std::string& path);
  static bool WriteAt(int fd, const uint8_t* data, size_t n, uint64_t offset);
  void Fail();
  std::string dir_;
  uint64_t max_bytes_;
  bool ok_ = false;
  std::string error_;
  std::vector<Map> maps_;  // newest first
  std::unordered_map<CacheKey, Slot, KeyHash, KeyEq> index_;
  // This run's pack, while it is written: all under pack_mutex_ (held for
  // bookkeeping only, never during an entry's write).
  std::mutex pack_mutex_;
  int fd_ = -1;
  std::string temp_;
  uint64_t offset_ = 0;          // the next entry's place
  int in_flight_ = 0;            // entries placed whose write has not returned
  bool failed_ = false, finished_ = false;
  std::vector<Written> written_;  // entries written, in the index at Finish
  std::string published_;  // the pack Finish put in place
};

}  // namespace lookback::jvm
