// `lookback convert --to speedscope` on dumps of real programs, read back with
// a small JSON reader and checked the way speedscope's importer would: one
// evented profile per thread, frames shared, every open closed in LIFO order,
// "at" never going backwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "export_fixture.h"

namespace lookback::testing {
namespace {

// ---- a minimal JSON reader (objects, arrays, strings, numbers, literals) ----

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string str;
  std::vector<Json> items;         // kArray elements, or kObject values
  std::vector<std::string> keys;   // kObject keys, in file order, keys[i] names items[i]

  // The member named `key`, or a null value.
  const Json& operator[](const std::string& key) const;
};

const Json& Json::operator[](const std::string& key) const {
  static const Json kMissing;
  for (size_t i = 0; i < keys.size() && i < items.size(); ++i)
    if (keys[i] == key) return items[i];
  return kMissing;
}

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  // Returns false (and error()) on malformed input or trailing garbage.
  bool Parse(Json* out) {
    if (!Value(out, 0)) return false;
    Space();
    if (p_ != s_.size()) return Fail("trailing characters");
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at offset " + std::to_string(p_);
    return false;
  }
  void Space() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t')) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(p_, w.size(), w) != 0) return Fail("bad literal");
    p_ += w.size();
    return true;
  }
  bool Value(Json* v, int depth) {
    if (depth > 64) return Fail("too deep");
    Space();
    if (p_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[p_];
    if (c == '{') {
      ++p_;
      v->kind = Json::kObject;
      if (Eat('}')) return true;
      do {
        Space();
        std::string key;
        if (!String(&key)) return false;
        if (!Eat(':')) return Fail("expected ':'");
        v->keys.push_back(std::move(key));
        v->items.emplace_back();
        if (!Value(&v->items.back(), depth + 1)) return false;
      } while (Eat(','));
      return Eat('}') || Fail("expected '}'");
    }
    if (c == '[') {
      ++p_;
      v->kind = Json::kArray;
      if (Eat(']')) return true;
      do {
        v->items.emplace_back();
        if (!Value(&v->items.back(), depth + 1)) return false;
      } while (Eat(','));
      return Eat(']') || Fail("expected ']'");
    }
    if (c == '"') {
      v->kind = Json::kString;
      return String(&v->str);
    }
    if (c == 't' || c == 'f') {
      v->kind = Json::kBool;
      v->boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return Literal("null");
    const char* begin = s_.c_str() + p_;
    char* end = nullptr;
    v->kind = Json::kNumber;
    v->number = std::strtod(begin, &end);
    if (end == begin) return Fail("bad value");
    p_ += static_cast<size_t>(end - begin);
    return true;
  }
  bool String(std::string* out) {
    if (p_ >= s_.size() || s_[p_] != '"') return Fail("expected string");
    ++p_;
    while (p_ < s_.size() && s_[p_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[p_++]);
      if (c < 0x20) return Fail("control character in string");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (p_ >= s_.size()) break;
      const char e = s_[p_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (p_ + 4 > s_.size()) return Fail("short \\u escape");
          const unsigned cp = static_cast<unsigned>(std::stoul(s_.substr(p_, 4), nullptr, 16));
          p_ += 4;
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
          } else {  // no surrogate pairs: the exporter never writes them
            out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
          }
          break;
        }
        default: return Fail("bad escape");
      }
    }
    if (p_ >= s_.size()) return Fail("unterminated string");
    ++p_;
    return true;
  }

  const std::string& s_;
  size_t p_ = 0;
  std::string error_;
};

// ---- the checks ----

struct Converted {
  std::string dump;
  Json file;
  std::vector<std::string> frames;  // shared.frames[i].name
};

// Records `lifecycle-gcc ARGS`, converts to speedscope, parses the result.
Converted RecordAndConvert(const std::string& test, const std::vector<std::string>& args) {
  Converted c;
  c.dump = RecordLifecycle(test, args);
  if (c.dump.empty()) return c;
  const std::string out = FreshDir(test + "-out") + "/profile.speedscope.json";
  RunResult r = Convert(c.dump, "speedscope", out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ReadFile(out);
  JsonParser parser(text);
  EXPECT_TRUE(parser.Parse(&c.file)) << parser.error();
  for (const Json& f : c.file["shared"]["frames"].items) c.frames.push_back(f["name"].str);
  return c;
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Whether a frame is function `fn`: the name alone, or demangled with parameters.
bool IsFunction(const std::string& frame, const std::string& fn) { return frame == fn || StartsWith(frame, fn + "("); }

// Index of the first frame of function `fn`, or -1.
int FrameIndex(const Converted& c, const std::string& fn) {
  for (size_t i = 0; i < c.frames.size(); ++i)
    if (IsFunction(c.frames[i], fn)) return static_cast<int>(i);
  return -1;
}

int CountFrames(const Converted& c, const std::string& fn) {
  return static_cast<int>(
      std::count_if(c.frames.begin(), c.frames.end(), [&](const std::string& f) { return IsFunction(f, fn); }));
}

const Json* ProfileNamed(const Converted& c, const std::string& name) {
  for (const Json& p : c.file["profiles"].items)
    if (p["name"].str == name) return &p;
  return nullptr;
}

// What speedscope's importer insists on for one evented profile; returns the
// number of slices (O/C pairs) and calls `on_open(frame, stack below it)`.
template <typename OnOpen>
size_t CheckProfile(const Converted& c, const Json& p, OnOpen on_open) {
  EXPECT_EQ(p["type"].str, "evented");
  EXPECT_EQ(p["unit"].str, "nanoseconds");
  const double start = p["startValue"].number, end = p["endValue"].number;
  EXPECT_LE(start, end) << p["name"].str;
  std::vector<int> stack;
  double last = start;
  size_t slices = 0;
  for (const Json& ev : p["events"].items) {
    const int frame = static_cast<int>(ev["frame"].number);
    const double at = ev["at"].number;
    EXPECT_GE(frame, 0);
    EXPECT_LT(frame, static_cast<int>(c.frames.size()));
    EXPECT_GE(at, last) << "time went backwards in " << p["name"].str;
    EXPECT_LE(at, end) << p["name"].str;
    last = at;
    if (ev["type"].str == "O") {
      on_open(frame, stack);
      stack.push_back(frame);
    } else {
      EXPECT_EQ(ev["type"].str, "C");
      EXPECT_FALSE(stack.empty()) << "close without open in " << p["name"].str;
      if (stack.empty()) continue;
      EXPECT_EQ(stack.back(), frame) << "close out of LIFO order in " << p["name"].str;
      stack.pop_back();
      ++slices;
    }
  }
  EXPECT_TRUE(stack.empty()) << stack.size() << " frames left open in " << p["name"].str;
  return slices;
}

TEST(SpeedscopeExporter, ExceptionsGiveBalancedNestedFramesInOneProfilePerThread) {
  Converted c = RecordAndConvert("speedscope-exceptions", {"exceptions"});
  ASSERT_FALSE(c.dump.empty());
  const format::Dump d = MustOpen(c.dump);

  EXPECT_EQ(c.file["$schema"].str, "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(c.file["exporter"].str, "lookback");
  EXPECT_EQ(c.file["activeProfileIndex"].number, 0);
  EXPECT_TRUE(StartsWith(c.file["name"].str, d.process.name)) << c.file["name"].str;

  // One profile per thread of the dump, named "<name> (<tid>)".
  ASSERT_EQ(c.file["profiles"].items.size(), d.threads.size());
  for (const auto& t : d.threads)
    EXPECT_NE(ProfileNamed(c, t.name + " (" + std::to_string(t.tid) + ")"), nullptr) << t.name << " " << t.tid;

  // Frames are listed once each (by key; two keys may share a name, e.g. a
  // destructor's D0 and D1 variants).
  for (const char* fn : {"outer", "middle", "thrower", "after_exceptions"})
    EXPECT_EQ(CountFrames(c, fn), 1) << fn;
  const int outer = FrameIndex(c, "outer"), middle = FrameIndex(c, "middle"), thrower = FrameIndex(c, "thrower"),
            after = FrameIndex(c, "after_exceptions");
  ASSERT_GE(outer, 0);
  ASSERT_GE(middle, 0);
  ASSERT_GE(thrower, 0);
  ASSERT_GE(after, 0);

  std::map<int, int> opens;
  int thrower_nested = 0;
  size_t slices = 0;
  for (const Json& p : c.file["profiles"].items) {
    slices += CheckProfile(c, p, [&](int frame, const std::vector<int>& stack) {
      ++opens[frame];
      // Each throw happens in thrower <- middle <- outer, whatever the unwinding did.
      if (frame == thrower && stack.size() >= 2 && stack[stack.size() - 1] == middle &&
          stack[stack.size() - 2] == outer)
        ++thrower_nested;
      // after_exceptions runs once the three exceptions are gone: none of their frames is open.
      if (frame == after) {
        for (int f : stack) EXPECT_TRUE(f != outer && f != middle && f != thrower);
      }
    });
  }
  EXPECT_GT(slices, 0u);
  EXPECT_EQ(opens[outer], 3);
  EXPECT_EQ(opens[middle], 3);
  EXPECT_EQ(opens[thrower], 3);
  EXPECT_EQ(thrower_nested, 3);
  EXPECT_EQ(opens[after], 1);
}

TEST(SpeedscopeExporter, ShortThreadsEachGetAProfileAndShareFrames) {
  Converted c = RecordAndConvert("speedscope-short-threads", {"short-threads", "3"});
  ASSERT_FALSE(c.dump.empty());
  const format::Dump d = MustOpen(c.dump);

  ASSERT_EQ(c.file["profiles"].items.size(), d.threads.size());
  for (const Json& p : c.file["profiles"].items) CheckProfile(c, p, [](int, const std::vector<int>&) {});

  // The three threads run the same code: the same frames, listed once in
  // "shared" (thread_body, mid_work, leaf_work are one frame each).
  const int body = FrameIndex(c, "thread_body");
  ASSERT_GE(body, 0);
  for (const char* fn : {"thread_body", "mid_work", "leaf_work"})
    EXPECT_EQ(CountFrames(c, fn), 1) << fn;
  std::vector<std::set<int>> used;
  for (int i = 0; i < 3; ++i) {
    const format::ThreadInfo* t = FindThread(d, "short-" + std::to_string(i));
    ASSERT_NE(t, nullptr) << i;
    const Json* p = ProfileNamed(c, "short-" + std::to_string(i) + " (" + std::to_string(t->tid) + ")");
    ASSERT_NE(p, nullptr) << i;
    std::set<int> frames;
    int bodies = 0;
    CheckProfile(c, *p, [&](int frame, const std::vector<int>&) {
      frames.insert(frame);
      bodies += frame == body;
    });
    EXPECT_EQ(bodies, 1) << i;
    used.push_back(frames);
  }
  EXPECT_EQ(used[0], used[1]);
  EXPECT_EQ(used[0], used[2]);
}

TEST(SpeedscopeExporter, UnwritableOutputFailsAndLeavesNothing) {
  const std::string dump = RecordLifecycle("speedscope-unwritable", {"exceptions"});
  ASSERT_FALSE(dump.empty());
  const std::string dir = FreshDir("speedscope-unwritable-out");
  RunResult r = Convert(dump, "speedscope", dir + "/missing/profile.json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(ListFiles(dir).empty());
}

}  // namespace
}  // namespace lookback::testing
