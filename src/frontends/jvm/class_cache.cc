#include "frontends/jvm/class_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <tuple>
#include <unordered_map>

#define XXH_INLINE_ALL  // the header's own static inline functions: no symbol of libxxhash's is exported from the agent
#include <xxhash.h>

#include "frontends/jvm/bytecode.h"
#include "frontends/jvm/classfile.h"

namespace lookback::jvm {
namespace {

constexpr uint32_t kMagic = 0x4c424a43;  // "LBJC"
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 4 + 4 + 16 + 4 + 8;

void PutStr(std::vector<uint8_t>& out, std::string_view s) {
  PutU4(out, static_cast<uint32_t>(s.size()));
  PutBytes(out, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

bool GetStr(ByteReader& r, std::string* s) {
  const uint32_t n = r.U4();
  const auto b = r.Bytes(n);
  if (!r.ok()) return false;
  s->assign(reinterpret_cast<const char*>(b.data()), b.size());
  return true;
}

void PutU8(std::vector<uint8_t>& out, uint64_t v) {
  PutU4(out, static_cast<uint32_t>(v >> 32));
  PutU4(out, static_cast<uint32_t>(v));
}

uint64_t GetU8(ByteReader& r) {
  const uint64_t hi = r.U4();
  return hi << 32 | r.U4();
}

}  // namespace

std::string CacheKey::Hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[static_cast<size_t>(i)] = kDigits[(hi >> (60 - 4 * i)) & 0xf];
    s[static_cast<size_t>(16 + i)] = kDigits[(lo >> (60 - 4 * i)) & 0xf];
  }
  return s;
}

CacheKey ClassCacheKey(std::string_view fingerprint, std::span<const uint8_t> class_bytes) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t n = fingerprint.size();
  XXH3_128bits_update(&state, &n, sizeof n);  // the fingerprint's end is unambiguous
  XXH3_128bits_update(&state, fingerprint.data(), fingerprint.size());
  XXH3_128bits_update(&state, class_bytes.data(), class_bytes.size());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return CacheKey{h.low64, h.high64};
}

std::optional<CacheEntry> EntryOf(const RewriteResult& r) {
  if (!r.error.empty() || (r.changed && !r.ids_patchable)) return std::nullopt;
  CacheEntry e;
  e.changed = r.changed;
  e.rename_hooked = r.rename_hooked;
  e.class_name = r.class_name;
  e.skipped = r.skipped;
  if (!r.changed) return e;
  e.bytes = r.bytes;
  e.id_sites = r.id_sites;
  e.traced.reserve(r.traced.size());
  for (const TracedMethod& m : r.traced) e.traced.push_back({m.name, m.descriptor, m.access_flags});
  return e;
}

std::optional<RewriteResult> Replay(CacheEntry entry, uint32_t first_id) {
  RewriteResult r;
  r.changed = entry.changed;
  r.rename_hooked = entry.rename_hooked;
  r.class_name = std::move(entry.class_name);
  r.skipped = std::move(entry.skipped);
  if (!entry.changed) return r;
  if (entry.traced.size() > 32767 || first_id == 0 || first_id + entry.traced.size() > 32768) return std::nullopt;
  r.bytes = std::move(entry.bytes);
  r.traced.reserve(entry.traced.size());
  for (size_t i = 0; i < entry.traced.size(); ++i) {
    CachedMethod& m = entry.traced[i];
    r.traced.push_back({std::move(m.name), std::move(m.descriptor), first_id + static_cast<uint32_t>(i), m.access_flags});
  }
  for (const IdSite& s : entry.id_sites) {
    if (s.method >= r.traced.size() || s.offset + 3 > r.bytes.size() || r.bytes[s.offset] != kOpSipush) return std::nullopt;
    const uint32_t id = r.traced[s.method].id;
    r.bytes[s.offset + 1] = static_cast<uint8_t>(id >> 8);
    r.bytes[s.offset + 2] = static_cast<uint8_t>(id);
  }
  return r;
}

std::vector<uint8_t> SerializeEntry(const CacheKey& key, const CacheEntry& e) {
  std::vector<uint8_t> p;
  PutU1(p, static_cast<uint8_t>((e.changed ? 1 : 0) | (e.rename_hooked ? 2 : 0)));
  PutStr(p, e.class_name);
  PutU4(p, static_cast<uint32_t>(e.bytes.size()));
  PutBytes(p, e.bytes);
  PutU4(p, static_cast<uint32_t>(e.traced.size()));
  for (const CachedMethod& m : e.traced) {
    PutStr(p, m.name);
    PutStr(p, m.descriptor);
    PutU2(p, m.access_flags);
  }
  PutU4(p, static_cast<uint32_t>(e.id_sites.size()));
  for (const IdSite& s : e.id_sites) {
    PutU4(p, s.offset);
    PutU4(p, s.method);
  }
  PutU4(p, static_cast<uint32_t>(e.skipped.size()));
  for (const SkippedMethod& s : e.skipped) {
    PutU1(p, static_cast<uint8_t>(s.reason));
    PutStr(p, s.name);
    PutStr(p, s.descriptor);
    PutStr(p, s.detail);
  }
  return FramePayload(key, p);
}

std::vector<uint8_t> FramePayload(const CacheKey& key, std::span<const uint8_t> p) {
  std::vector<uint8_t> out;
  out.reserve(kHeader + p.size());
  PutU4(out, kMagic);
  PutU4(out, kVersion);
  PutU8(out, key.hi);
  PutU8(out, key.lo);
  PutU4(out, static_cast<uint32_t>(p.size()));
  PutU8(out, XXH3_64bits(p.data(), p.size()));
  PutBytes(out, p);
  return out;
}

std::optional<CacheEntry> ParseEntry(const CacheKey& key, std::span<const uint8_t> file) {
  ByteReader h(file);
  if (h.U4() != kMagic || h.U4() != kVersion) return std::nullopt;
  const uint64_t hi = GetU8(h), lo = GetU8(h);
  const uint32_t size = h.U4();
  const uint64_t sum = GetU8(h);
  if (!h.ok() || hi != key.hi || lo != key.lo || h.remaining() != size) return std::nullopt;
  const std::span<const uint8_t> payload = file.subspan(kHeader);
  if (XXH3_64bits(payload.data(), payload.size()) != sum) return std::nullopt;
  ByteReader r(payload);
  CacheEntry e;
  const uint8_t flags = r.U1();
  e.changed = (flags & 1) != 0;
  e.rename_hooked = (flags & 2) != 0;
  if (flags > 3 || !GetStr(r, &e.class_name)) return std::nullopt;
  const auto bytes = r.Bytes(r.U4());
  if (!r.ok()) return std::nullopt;
  e.bytes.assign(bytes.begin(), bytes.end());
  // Counts are checked against what is left before anything is reserved:
  // each element takes at least that many bytes.
  const uint32_t n_traced = r.U4();
  if (!r.ok() || n_traced > r.remaining() / 10) return std::nullopt;
  e.traced.resize(n_traced);
  for (CachedMethod& m : e.traced) {
    if (!GetStr(r, &m.name) || !GetStr(r, &m.descriptor)) return std::nullopt;
    m.access_flags = r.U2();
  }
  const uint32_t n_sites = r.U4();
  if (!r.ok() || n_sites > r.remaining() / 8) return std::nullopt;
  e.id_sites.resize(n_sites);
  for (IdSite& s : e.id_sites) {
    s.offset = r.U4();
    s.method = r.U4();
    if (s.method >= n_traced || uint64_t{s.offset} + 3 > e.bytes.size()) return std::nullopt;
  }
  const uint32_t n_skipped = r.U4();
  if (!r.ok() || n_skipped > r.remaining() / 13) return std::nullopt;
  e.skipped.resize(n_skipped);
  for (SkippedMethod& s : e.skipped) {
    const uint8_t reason = r.U1();
    if (reason >= kSkipReasonCount) return std::nullopt;
    s.reason = static_cast<SkipReason>(reason);
    if (!GetStr(r, &s.name) || !GetStr(r, &s.descriptor) || !GetStr(r, &s.detail)) return std::nullopt;
  }
  if (!r.ok() || r.remaining() != 0) return std::nullopt;
  if (!e.changed && (!e.bytes.empty() || !e.traced.empty() || !e.id_sites.empty())) return std::nullopt;
  return e;
}

// ---- the directory ----------------------------------------------------------

namespace {

constexpr uint32_t kPackMagic = 0x4c424a50;  // "LBJP"
constexpr uint32_t kPackVersion = 1;
constexpr size_t kPackHeader = 8;
constexpr size_t kIndexEntry = 8 + 8 + 8 + 4;
constexpr size_t kFooter = 8 + 4 + 8 + 4;
constexpr size_t kMaxPacks = 16;

uint64_t Be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}
uint32_t Be32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

bool IsPackName(const char* name) {
  const size_t n = strlen(name);
  return n > 5 && name[0] != '.' && strcmp(name + n - 5, ".pack") == 0;
}

}  // namespace

std::string UserCacheDir(std::string_view leaf) {
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/lookback/" + std::string(leaf);
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/lookback/" + std::string(leaf);
  return {};
}

std::string PrivateDir(const std::string& dir) {
  if (dir.empty()) return "no directory";
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return "cannot create " + part + ": " + strerror(errno);
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) return dir + " is not the user's own, or others may write to it";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "cannot write to " + dir + ": " + strerror(errno);
  return {};
}

ClassCache::ClassCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  // Private to the user: entries become code in their JVMs.
  error_ = PrivateDir(dir_);
  if (!error_.empty()) return;
  // Packs, newest first (their names start with the time they were written);
  // temporaries an hour old belong to JVMs that died while writing them.
  std::vector<std::string> packs;
  if (DIR* d = opendir(dir_.c_str())) {
    const time_t now = time(nullptr);
    while (dirent* e = readdir(d)) {
      const std::string path = dir_ + "/" + e->d_name;
      if (IsPackName(e->d_name)) {
        packs.push_back(e->d_name);
      } else if (strncmp(e->d_name, ".tmp.", 5) == 0) {
        struct stat t {};
        if (lstat(path.c_str(), &t) == 0 && now - t.st_mtim.tv_sec > 3600) unlink(path.c_str());
      }
    }
    closedir(d);
  }
  std::sort(packs.rbegin(), packs.rend());
  for (const std::string& p : packs) MapPack(dir_ + "/" + p);
  ok_ = true;
}

ClassCache::~ClassCache() {
  if (fd_ >= 0) {  // never finished: its pack goes (no write can be under way when it is destroyed)
    close(fd_);
    unlink(temp_.c_str());
  }
  for (const Map& m : maps_) munmap(const_cast<uint8_t*>(m.data), m.size);
}

void ClassCache::MapPack(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  void* p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= kPackHeader + kFooter) {
    p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (p == MAP_FAILED) return;
  const auto* data = static_cast<const uint8_t*>(p);
  const size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* foot = data + size - kFooter;
  const uint64_t index_at = Be64(foot);
  const uint32_t count = Be32(foot + 8);
  const uint64_t sum = Be64(foot + 12);
  const bool valid = Be32(data) == kPackMagic && Be32(data + 4) == kPackVersion && Be32(foot + 20) == kPackMagic &&
                     index_at >= kPackHeader && index_at <= size - kFooter &&
                     (size - kFooter - index_at) == uint64_t{count} * kIndexEntry &&
                     XXH3_64bits(data + index_at, uint64_t{count} * kIndexEntry) == sum;
  if (!valid) {
    munmap(p, size);
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* e = data + index_at + uint64_t{i} * kIndexEntry;
    const CacheKey key{Be64(e + 8), Be64(e)};
    const uint64_t off = Be64(e + 16);
    const uint32_t len = Be32(e + 24);
    if (off < kPackHeader || off > index_at || len > index_at - off) continue;
    index_.emplace(key, Slot{data + off, len});  // a newer pack's copy stays
  }
  maps_.push_back({data, size, path});
}

std::optional<CacheEntry> ClassCache::Load(const CacheKey& key) const {
  if (!ok_) return std::nullopt;
  const auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return ParseEntry(key, std::span<const uint8_t>(it->second.data, it->second.size));
}

bool ClassCache::WriteAt(int fd, const uint8_t* data, size_t n, uint64_t offset) {
  size_t put = 0;
  while (put < n) {
    const ssize_t w = pwrite(fd, data + put, n - put, static_cast<off_t>(offset + put));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    put += static_cast<size_t>(w);
  }
  return true;
}

// The run's pack is written by two threads at most (the agent's writer, and
// at exit the exiting thread, which writes what is still queued and then
// the index). Each entry gets its place under the lock and is written after
// it, so that Finish never waits for a write: the writer runs at the lowest
// priority, and on a busy machine it could sit preempted in the middle of an
// entry for longer than a JVM may take to exit. An entry still being written
// when Finish runs is left out of the index (its bytes land in a part of the
// pack nobody reads).
bool ClassCache::Store(const CacheKey& key, const CacheEntry& entry) {
  if (!ok_) return false;
  const std::vector<uint8_t> bytes = SerializeEntry(key, entry);
  int fd = -1;
  uint64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(pack_mutex_);
    if (failed_ || finished_) return false;
    if (fd_ < 0) {
      static std::atomic<uint64_t> count{0};
      temp_ = dir_ + "/.tmp." + std::to_string(getpid()) + "." + std::to_string(syscall(SYS_gettid)) + "." +
              std::to_string(count.fetch_add(1, std::memory_order_relaxed)) + ".pack";
      fd_ = open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      std::vector<uint8_t> head;
      PutU4(head, kPackMagic);
      PutU4(head, kPackVersion);
      if (fd_ < 0 || !WriteAt(fd_, head.data(), head.size(), 0)) {
        Fail();
        return false;
      }
      offset_ = head.size();
    }
    if (offset_ + bytes.size() > max_bytes_) {  // over the limit: this run stores nothing
      Fail();
      return false;
    }
    fd = fd_;
    at = offset_;
    offset_ += bytes.size();
    ++in_flight_;
  }
  if (before_entry_write_for_testing != nullptr) before_entry_write_for_testing(before_entry_write_arg);
  const bool ok = WriteAt(fd, bytes.data(), bytes.size(), at);
  std::lock_guard<std::mutex> lock(pack_mutex_);
  // The last write under way closes a descriptor that Finish or Fail let go of.
  if (--in_flight_ == 0 && fd_ != fd) close(fd);
  if (!ok) {  // a full disk: this run stores nothing
    if (!finished_) Fail();
    return false;
  }
  if (finished_) return false;  // too late for the index
  written_.push_back({key, at, static_cast<uint32_t>(bytes.size())});
  return true;
}

// Under pack_mutex_: no pack from this run (a write failed, or it is too big).
void ClassCache::Fail() {
  if (failed_) return;
  failed_ = true;
  written_.clear();
  if (!temp_.empty()) unlink(temp_.c_str());
  if (fd_ >= 0 && in_flight_ == 0) close(fd_);  // else the last write under way closes it
  fd_ = -1;
}

bool ClassCache::Finish() {
  std::lock_guard<std::mutex> lock(pack_mutex_);
  if (finished_ || failed_ || fd_ < 0) return false;
  finished_ = true;
  std::vector<uint8_t> tail;
  tail.reserve(written_.size() * kIndexEntry + kFooter);
  for (const Written& w : written_) {
    PutU8(tail, w.key.hi);
    PutU8(tail, w.key.lo);
    PutU8(tail, w.offset);
    PutU4(tail, w.length);
  }
  const uint64_t sum = XXH3_64bits(tail.data(), tail.size());
  PutU8(tail, offset_);
  PutU4(tail, static_cast<uint32_t>(written_.size()));
  PutU8(tail, sum);
  PutU4(tail, kPackMagic);
  // The index goes after every place handed out, written or not.
  const bool ok = WriteAt(fd_, tail.data(), tail.size(), offset_);
  // A write still under way keeps the descriptor (closed now, its number
  // could go to another file before that write lands); the last one closes it.
  if (in_flight_ == 0) close(fd_);
  fd_ = -1;
  // The name sorts by time, newest last, and is this process's own.
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  char name[64];
  snprintf(name, sizeof name, "/%010lld%09ld-%d.pack", static_cast<long long>(now.tv_sec), now.tv_nsec, getpid());
  if (!ok || written_.empty() || rename(temp_.c_str(), (dir_ + name).c_str()) != 0) {
    unlink(temp_.c_str());
    return false;
  }
  written_.clear();
  published_ = dir_ + name;
  return true;
}

size_t ClassCache::DropOldest() {
  if (!ok_) return 0;
  // The packs this JVM mapped at start (newest first), and the one it wrote.
  struct Pack {
    std::string path;
    uint64_t bytes;
  };
  std::vector<Pack> packs;
  uint64_t total = 0;
  if (!published_.empty()) {
    struct stat st {};
    if (stat(published_.c_str(), &st) == 0) {
      packs.push_back({published_, static_cast<uint64_t>(st.st_size)});
      total += static_cast<uint64_t>(st.st_size);
    }
  }
  for (const Map& m : maps_) {
    packs.push_back({m.path, m.size});
    total += m.size;
  }
  size_t removed = 0;
  while (packs.size() > 1 && (packs.size() > kMaxPacks || total > max_bytes_)) {
    if (unlink(packs.back().path.c_str()) == 0 || errno == ENOENT) ++removed;  // (another JVM's trim may have been first)
    total -= packs.back().bytes;
    packs.pop_back();
  }
  return removed;
}

}  // namespace lookback::jvm
