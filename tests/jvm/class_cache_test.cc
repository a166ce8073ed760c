// The JVM agent's cache of rewritten classes (src/frontends/jvm/class_cache.h):
// a cached rewrite replayed with other ids is byte for byte the rewrite those
// ids would have given; entries and packs that are torn, foreign or corrupt
// are misses, never code; packs written by one run are read by the next.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "frontends/jvm/class_cache.h"
#include "frontends/jvm/rewriter.h"

namespace fs = std::filesystem;
using namespace lookback::jvm;

namespace {

std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The seed corpus and the classes the build compiled for the JVM tests.
std::vector<std::vector<uint8_t>> Classes() {
  std::vector<std::vector<uint8_t>> out;
  for (const fs::path& dir : {fs::path(LOOKBACK_SOURCE_DIR) / "tests/data/classfile-corpus", fs::path(LOOKBACK_JVM_CLASSES)}) {
    std::error_code ec;
    if (dir.empty() || !fs::exists(dir, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().extension() == ".class") out.push_back(ReadBytes(it->path()));
    }
  }
  return out;
}

// The agent's request, with ids from `first` on.
RewriteRequest Request(uint32_t first, bool sites) {
  RewriteRequest req;
  req.rename_hook = true;
  req.skip_inlined = true;
  req.want_id_sites = sites;
  auto next = std::make_shared<uint32_t>(first);
  req.assign_id = [next](std::string_view, std::string_view, std::string_view) -> std::optional<uint32_t> {
    return (*next)++;
  };
  return req;
}

fs::path FreshDir(const std::string& name) {
  const fs::path d = fs::path(LOOKBACK_TEST_TMP) / ("class-cache-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

std::set<std::string> Files(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

}  // namespace

TEST(ClassCache, AReplayedEntryIsTheRewriteItsNewIdsWouldHaveGiven) {
  const auto classes = Classes();
  ASSERT_GE(classes.size(), 5u);
  size_t replayed = 0;
  for (const auto& bytes : classes) {
    const RewriteResult first = RewriteClass(bytes.data(), bytes.size(), Request(100, true));
    const std::optional<CacheEntry> e = EntryOf(first);
    ASSERT_TRUE(e.has_value()) << first.class_name << ": " << first.error;
    const CacheKey key = ClassCacheKey("test", bytes);
    const std::optional<CacheEntry> back = ParseEntry(key, SerializeEntry(key, *e));
    ASSERT_TRUE(back.has_value()) << first.class_name;
    const std::optional<RewriteResult> again = Replay(*back, 20000);
    ASSERT_TRUE(again.has_value()) << first.class_name;
    // What the rewriter gives the same class when its ids start at 20000.
    const RewriteResult fresh = RewriteClass(bytes.data(), bytes.size(), Request(20000, false));
    EXPECT_EQ(again->changed, fresh.changed);
    EXPECT_EQ(again->bytes, fresh.bytes) << first.class_name << ": the replayed class differs from its rewrite";
    EXPECT_EQ(again->class_name, fresh.class_name);
    EXPECT_EQ(again->rename_hooked, fresh.rename_hooked);
    ASSERT_EQ(again->traced.size(), fresh.traced.size());
    for (size_t i = 0; i < fresh.traced.size(); ++i) {
      EXPECT_EQ(again->traced[i].name, fresh.traced[i].name);
      EXPECT_EQ(again->traced[i].descriptor, fresh.traced[i].descriptor);
      EXPECT_EQ(again->traced[i].id, fresh.traced[i].id);
      EXPECT_EQ(again->traced[i].access_flags, fresh.traced[i].access_flags);
    }
    ASSERT_EQ(again->skipped.size(), fresh.skipped.size());
    for (size_t i = 0; i < fresh.skipped.size(); ++i) {
      EXPECT_EQ(again->skipped[i].reason, fresh.skipped[i].reason);
      EXPECT_EQ(again->skipped[i].name, fresh.skipped[i].name);
    }
    replayed += again->changed;
  }
  EXPECT_GE(replayed, 5u);
}

TEST(ClassCache, IdsPastSipushAreNotCachedOrReplayed) {
  const auto classes = Classes();
  for (const auto& bytes : classes) {
    const RewriteResult r = RewriteClass(bytes.data(), bytes.size(), Request(40000, true));
    if (!r.changed || r.traced.empty()) continue;
    EXPECT_FALSE(EntryOf(r).has_value()) << r.class_name << ": ids from an Integer constant have no site to patch";
    const std::optional<CacheEntry> e = EntryOf(RewriteClass(bytes.data(), bytes.size(), Request(1, true)));
    ASSERT_TRUE(e.has_value());
    EXPECT_FALSE(Replay(*e, 32768 - static_cast<uint32_t>(e->traced.size()) + 1).has_value());
    EXPECT_TRUE(Replay(*e, 32768 - static_cast<uint32_t>(e->traced.size())).has_value());
    return;
  }
  FAIL() << "no class with traced methods";
}

TEST(ClassCache, ACorruptTruncatedOrForeignEntryIsAMiss) {
  const auto classes = Classes();
  const auto& bytes = classes.front();
  const std::optional<CacheEntry> e = EntryOf(RewriteClass(bytes.data(), bytes.size(), Request(1, true)));
  ASSERT_TRUE(e.has_value());
  const CacheKey key = ClassCacheKey("test", bytes);
  const std::vector<uint8_t> good = SerializeEntry(key, *e);
  ASSERT_TRUE(ParseEntry(key, good).has_value());
  EXPECT_FALSE(ParseEntry(ClassCacheKey("other options", bytes), good).has_value()) << "another key";
  for (size_t n = 0; n < good.size(); n += std::max<size_t>(1, good.size() / 97)) {
    EXPECT_FALSE(ParseEntry(key, std::span<const uint8_t>(good.data(), n)).has_value()) << "truncated to " << n;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    std::vector<uint8_t> bad = good;
    bad[rng() % bad.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    EXPECT_FALSE(ParseEntry(key, bad).has_value()) << "a flipped byte";
  }
}

TEST(ClassCache, APackWrittenByOneRunIsReadByTheNextAndATornOneIsIgnored) {
  const fs::path dir = FreshDir("pack");
  const auto classes = Classes();
  std::vector<std::pair<CacheKey, CacheEntry>> stored;
  {
    ClassCache c(dir.string(), 64u << 20);
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(c.entries(), 0u);
    for (const auto& bytes : classes) {
      const std::optional<CacheEntry> e = EntryOf(RewriteClass(bytes.data(), bytes.size(), Request(1, true)));
      const CacheKey key = ClassCacheKey("test", bytes);
      ASSERT_TRUE(e && c.Store(key, *e));
      stored.emplace_back(key, *e);
    }
    EXPECT_FALSE(ClassCache(dir.string(), 64u << 20).Load(stored.front().first).has_value())
        << "a pack is seen only once it is finished";
    ASSERT_TRUE(c.Finish());
  }
  ASSERT_EQ(Files(dir).size(), 1u);
  const fs::path pack = dir / *Files(dir).begin();
  {
    ClassCache c(dir.string(), 64u << 20);
    EXPECT_EQ(c.packs(), 1u);
    std::set<std::string> keys;  // (two identical classes share a key)
    for (const auto& [k, e] : stored) keys.insert(k.Hex());
    EXPECT_EQ(c.entries(), keys.size());
    for (const auto& [key, e] : stored) {
      const std::optional<CacheEntry> got = c.Load(key);
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(got->bytes, e.bytes);
      EXPECT_EQ(got->class_name, e.class_name);
    }
  }
  // A torn pack (a disk that lost its end) is not read at all.
  fs::resize_file(pack, fs::file_size(pack) - 1);
  ClassCache torn(dir.string(), 64u << 20);
  EXPECT_TRUE(torn.ok());
  EXPECT_EQ(torn.entries(), 0u);
  EXPECT_EQ(torn.packs(), 0u);
  fs::remove_all(dir);
}

// The agent's writer runs at the lowest priority; on a machine whose cores
// are busy it can sit preempted in the middle of an entry for longer than a
// JVM takes to exit. Finish must not wait for it: it publishes the entries
// written by then, leaves the one under way out of the index, and that
// entry's late write harms nothing. (The agent used to wait up to 200 ms for
// the writer's lock at exit and then gave up: under load no pack was ever
// published, and every run parsed every class again.)
TEST(ClassCache, FinishPublishesWithoutWaitingForAWriteUnderWay) {
  const fs::path dir = FreshDir("writer-preempted");
  const auto classes = Classes();
  ASSERT_GE(classes.size(), 3u);
  std::vector<std::pair<CacheKey, CacheEntry>> entries;
  for (size_t i = 0; i < 3; ++i) {
    std::optional<CacheEntry> e = EntryOf(RewriteClass(classes[i].data(), classes[i].size(), Request(1, true)));
    ASSERT_TRUE(e.has_value());
    entries.emplace_back(ClassCacheKey("preempted" + std::to_string(i), classes[i]), *e);
  }
  struct Gate {
    std::promise<void> entered, release;
    std::shared_future<void> released = release.get_future().share();
  } gate;
  {
    ClassCache c(dir.string(), 64u << 20);
    ASSERT_TRUE(c.ok()) << c.error();
    ASSERT_TRUE(c.Store(entries[0].first, entries[0].second));
    c.before_entry_write_arg = &gate;
    c.before_entry_write_for_testing = [](void* arg) {
      auto* g = static_cast<Gate*>(arg);
      g->entered.set_value();
      g->released.wait();
    };
    bool late_stored = true;
    std::thread writer([&] { late_stored = c.Store(entries[1].first, entries[1].second); });
    gate.entered.get_future().wait();  // the writer has its place and is "preempted"
    c.before_entry_write_for_testing = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.Finish()) << "published although a write is under way";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    EXPECT_FALSE(c.Store(entries[2].first, entries[2].second)) << "nothing is stored after Finish";
    gate.release.set_value();
    writer.join();
    EXPECT_FALSE(late_stored) << "an entry written after Finish is not in the pack";
  }
  ASSERT_EQ(Files(dir).size(), 1u) << "one pack, no temporary left";
  ClassCache next(dir.string(), 64u << 20);
  EXPECT_EQ(next.packs(), 1u);
  EXPECT_EQ(next.entries(), 1u);
  const std::optional<CacheEntry> got = next.Load(entries[0].first);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->bytes, entries[0].second.bytes);
  EXPECT_FALSE(next.Load(entries[1].first).has_value());
  EXPECT_FALSE(next.Load(entries[2].first).has_value());
  fs::remove_all(dir);
}

TEST(ClassCache, TheOldestPacksGoPastSixteenOrPastTheByteLimit) {
  const fs::path dir = FreshDir("drop");
  const auto classes = Classes();
  auto run = [&](int n, uint64_t limit) {  // one JVM: a pack of a few classes, then the trim
    ClassCache c(dir.string(), limit);
    for (size_t i = static_cast<size_t>(n) % classes.size(), k = 0; k < 3; ++k, i = (i + 1) % classes.size()) {
      const auto& bytes = classes[i];
      const std::optional<CacheEntry> e = EntryOf(RewriteClass(bytes.data(), bytes.size(), Request(1, true)));
      EXPECT_TRUE(e && c.Store(ClassCacheKey(std::to_string(n), bytes), *e));
    }
    EXPECT_TRUE(c.Finish());
    return c.DropOldest();
  };
  for (int n = 0; n < 16; ++n) EXPECT_EQ(run(n, 64u << 20), 0u) << "16 packs at most, none removed yet";
  EXPECT_EQ(run(16, 64u << 20), 1u) << "the 17th run removes the oldest pack";
  EXPECT_EQ(Files(dir).size(), 16u);
  {
    ClassCache c(dir.string(), 64u << 20);
    EXPECT_FALSE(c.Load(ClassCacheKey("0", classes[0])).has_value()) << "the oldest run's entries are gone";
    EXPECT_TRUE(c.Load(ClassCacheKey("16", classes[16 % classes.size()])).has_value());
    EXPECT_EQ(c.entries(), 48u);
  }
  // Over the byte limit: the newest pack stays, the oldest go.
  uint64_t one = 0;
  for (const auto& f : Files(dir)) one = std::max<uint64_t>(one, fs::file_size(dir / f));
  EXPECT_GE(run(17, one * 3), 1u) << "over the byte limit: the oldest packs go";
  uint64_t total = 0;
  for (const auto& f : Files(dir)) total += fs::file_size(dir / f);
  EXPECT_LE(total, one * 3);
  EXPECT_GE(Files(dir).size(), 3u);
  EXPECT_TRUE(ClassCache(dir.string(), 64u << 20).Load(ClassCacheKey("17", classes[17 % classes.size()])).has_value());
  // Packs are only unlinked: a JVM that mapped them still reads them.
  ClassCache reader(dir.string(), 64u << 20);
  const size_t before = reader.entries();
  EXPECT_GE(run(18, one), 3u);
  EXPECT_EQ(reader.entries(), before);
  EXPECT_TRUE(reader.Load(ClassCacheKey("17", classes[17 % classes.size()])).has_value());
  fs::remove_all(dir);
}

TEST(ClassCache, ADirectoryOthersCanWriteToIsRefused) {
  const fs::path dir = FreshDir("perms");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  ClassCache c(dir.string(), 1u << 20);
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.error().find("others may write"), std::string::npos) << c.error();
  fs::remove_all(dir);
}
