// The JVM rewriter on real class files: small javac outputs from the seed
// corpus (unit tests, corrupt input), then whole programs compiled by the build,
// rewritten, and run by `java -Xverify:all` with a probe that checks every
// event against the real stack; then all of java.base (booted from a patched
// module) and large third-party jars, each class linked under -Xverify:all.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "frontends/jvm/bytecode.h"
#include "frontends/jvm/classfile.h"
#include "frontends/jvm/rewriter.h"

namespace fs = std::filesystem;
using namespace lookback::jvm;

namespace {

std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const fs::path& p, const std::vector<uint8_t>& b) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs a shell command; returns its exit status and stdout (stderr goes to stdout too).
std::pair<int, std::string> Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WEXITSTATUS(st), out};
}

std::vector<fs::path> ClassFiles(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".class") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

fs::path TmpDir(const std::string& name) {
  fs::path d = fs::path(LOOKBACK_TEST_TMP) / "jvm" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct Stats {
  size_t classes = 0, changed = 0, errors = 0, traced = 0, rename_hooked = 0;
  std::map<SkipReason, size_t> skipped;
  std::vector<std::string> error_messages;
  std::vector<std::string> malformed;  // class.method: detail
  std::string Summary() const {
    std::ostringstream o;
    o << classes << " classes (" << changed << " rewritten, " << errors << " not rewritten), " << traced
      << " methods traced, skipped:";
    for (auto [r, n] : skipped) o << " " << SkipReasonName(r) << "=" << n;
    return o.str();
  }
};

// Rewrites every class under `in` into `out` (unchanged classes are copied),
// assigning ids from first_id on and writing "id class method descriptor"
// lines to `ids` when given.
Stats RewriteTree(const fs::path& in, const fs::path& out, const std::string& owner, uint32_t first_id,
                  const fs::path& ids = {}) {
  Stats st;
  std::ofstream ids_out;
  if (!ids.empty()) ids_out.open(ids);
  uint32_t next = first_id;
  RewriteRequest req;
  req.probe.owner = owner;
  req.rename_hook = true;
  req.assign_id = [&](std::string_view c, std::string_view m, std::string_view d) -> std::optional<uint32_t> {
    if (ids_out.is_open()) ids_out << next << " " << c << " " << m << " " << d << "\n";
    return next++;
  };
  for (const auto& p : ClassFiles(in)) {
    auto bytes = ReadBytes(p);
    auto r = RewriteClass(bytes.data(), bytes.size(), req);
    ++st.classes;
    if (!r.error.empty()) {
      ++st.errors;
      st.error_messages.push_back(p.string() + ": " + r.error);
    }
    if (r.changed) ++st.changed;
    if (r.rename_hooked) ++st.rename_hooked;
    st.traced += r.traced.size();
    for (const auto& s : r.skipped) {
      ++st.skipped[s.reason];
      if (s.reason == SkipReason::kMalformed) st.malformed.push_back(r.class_name + "." + s.name + ": " + s.detail);
    }
    WriteBytes(out / fs::relative(p, in), r.changed ? r.bytes : bytes);
  }
  return st;
}

std::vector<fs::path> CorpusFiles() { return ClassFiles(fs::path(LOOKBACK_SOURCE_DIR) / "tests/data/classfile-corpus"); }

RewriteRequest CountingRequest(uint32_t first = 1) {
  RewriteRequest req;
  auto next = std::make_shared<uint32_t>(first);
  req.assign_id = [next](std::string_view, std::string_view, std::string_view) -> std::optional<uint32_t> {
    return (*next)++;
  };
  return req;
}

bool HaveJava() { return std::string(LOOKBACK_JVM_CLASSES).size() > 0 && fs::exists(LOOKBACK_JVM_CLASSES); }

// ---- corpus-based unit tests -------------------------------------------------

TEST(JvmRewriter, CorpusIsPresent) { ASSERT_GE(CorpusFiles().size(), 3u); }

TEST(JvmRewriter, RewrittenClassParsesAgainWithMembersAndClassAttributesUnchanged) {
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    auto r = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
    ASSERT_TRUE(r.error.empty()) << p << ": " << r.error;
    if (!r.changed) continue;
    auto before = ClassFile::Parse(bytes);
    auto after = ClassFile::Parse(r.bytes);
    ASSERT_TRUE(after.ok()) << after.error().ToString();
    EXPECT_EQ(before.value().methods.size(), after.value().methods.size());
    EXPECT_EQ(before.value().fields.size(), after.value().fields.size());
    ASSERT_EQ(before.value().attributes.size(), after.value().attributes.size());
    for (size_t i = 0; i < before.value().attributes.size(); ++i)
      EXPECT_EQ(before.value().attributes[i].info, after.value().attributes[i].info);
    // The original constant pool is a prefix of the new one.
    EXPECT_GT(after.value().cp.count(), before.value().cp.count());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.begin() + 8, r.bytes.begin()));  // magic, version
  }
}

// Inputs that once crashed the parser or the rewriter (found by the fuzzer,
// tests/data/classfile-regressions/README.md): an error or a class that
// parses again, never a crash, with the fuzzer's request.
TEST(JvmRewriter, FuzzerRegressionsGiveAnErrorOrAClassThatParses) {
  const auto files = ClassFiles(fs::path(LOOKBACK_SOURCE_DIR) / "tests/data/classfile-regressions");
  ASSERT_FALSE(files.empty());
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    auto bytes = ReadBytes(p);
    RewriteRequest req = CountingRequest(32760);
    req.rename_hook = true;
    auto r = RewriteClass(bytes.data(), bytes.size(), req);
    if (r.changed) {
      EXPECT_TRUE(ClassFile::Parse(r.bytes).ok());
    }
  }
}

// A method descriptor's return type is V or one field descriptor: an empty
// one is malformed (FieldDescriptorLength's 0 for "malformed" equals an
// empty string's length, which let "(II)" through).
TEST(JvmBytecode, MethodDescriptorsWithoutAWholeReturnTypeAreMalformed) {
  for (const char* bad : {"(II)", "()", "(I", "(I)L;", "(I)[", "()VV", "(V)V", "(L)V", "I)V"}) {
    EXPECT_FALSE(ParseMethodDescriptor(bad).has_value()) << bad;
  }
  for (const char* good : {"()V", "(II)I", "([Ljava/lang/String;)V", "(JD)[[B", "(Lx;)Lx;"}) {
    EXPECT_TRUE(ParseMethodDescriptor(good).has_value()) << good;
  }
}

TEST(JvmRewriter, EveryTruncationIsAnErrorAndNeverACrash) {
  size_t cases = 0;
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto r = RewriteClass(bytes.data(), n, CountingRequest());
      EXPECT_FALSE(r.error.empty()) << p << " truncated to " << n;
      EXPECT_FALSE(r.changed);
      ++cases;
    }
  }
  std::printf("truncations tried: %zu\n", cases);
}

TEST(JvmRewriter, BitFlipsGiveAnErrorOrAClassThatParses) {
  std::mt19937 rng(1234);
  size_t errors = 0, rewritten = 0, malformed_methods = 0;
  for (const auto& p : CorpusFiles()) {
    const auto orig = ReadBytes(p);
    for (int i = 0; i < 3000; ++i) {
      auto bytes = orig;
      for (int k = 0; k < 1 + i % 3; ++k) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      auto r = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
      if (!r.error.empty()) ++errors;
      for (const auto& s : r.skipped) malformed_methods += s.reason == SkipReason::kMalformed;
      if (r.changed) {
        ++rewritten;
        EXPECT_TRUE(ClassFile::Parse(r.bytes).ok());
      }
    }
  }
  std::printf("bit flips: %zu class errors, %zu rewritten, %zu methods skipped as malformed\n", errors, rewritten,
              malformed_methods);
  EXPECT_GT(errors, 0u);
  EXPECT_GT(rewritten, 0u);
}

TEST(JvmRewriter, SkipsNativeAbstractBridgeMethodsAndTheProbeClass) {
  std::map<SkipReason, size_t> reasons;
  size_t traced = 0;
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    auto r = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
    for (const auto& s : r.skipped) ++reasons[s.reason];
    traced += r.traced.size();
    // The probe owner's own methods are never traced.
    RewriteRequest self = CountingRequest();
    self.probe.owner = r.class_name;
    auto s = RewriteClass(bytes.data(), bytes.size(), self);
    EXPECT_FALSE(s.changed);
    EXPECT_TRUE(s.traced.empty());
  }
  EXPECT_GT(traced, 0u);
  EXPECT_GT(reasons[SkipReason::kNative], 0u);
  EXPECT_GT(reasons[SkipReason::kAbstract], 0u);
  EXPECT_GT(reasons[SkipReason::kBridgeOrSynthetic], 0u);
}

TEST(JvmRewriter, ExcludedMethodsAreLeftAloneAndIdsAreAskedInClassfileOrder) {
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    std::vector<std::string> asked;
    RewriteRequest req;
    req.assign_id = [&](std::string_view, std::string_view m, std::string_view d) -> std::optional<uint32_t> {
      asked.push_back(std::string(m) + std::string(d));
      return std::nullopt;
    };
    auto r = RewriteClass(bytes.data(), bytes.size(), req);
    EXPECT_FALSE(r.changed);
    size_t excluded = 0;
    for (const auto& s : r.skipped) excluded += s.reason == SkipReason::kExcluded;
    EXPECT_EQ(excluded, asked.size());
    // Same order as the methods in the class file.
    auto cf = ClassFile::Parse(bytes);
    ASSERT_TRUE(cf.ok());
    size_t k = 0;
    for (const auto& m : cf.value().methods) {
      std::string key = std::string(*cf.value().cp.Utf8(m.name_index)) + std::string(*cf.value().cp.Utf8(m.descriptor_index));
      if (k < asked.size() && asked[k] == key) ++k;
    }
    EXPECT_EQ(k, asked.size());
  }
}

// skip_inlined: the methods AlwaysInlined() takes are left unprobed (kInlined, no id
// asked for them), the others are traced as without it; outside `selected` they are
// kExcluded instead.
TEST(JvmRewriter, SkipInlinedLeavesExactlyTheAlwaysInlinedMethodsUnprobed) {
  size_t inlined_total = 0;
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    const RewriteResult all = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
    RewriteRequest req = CountingRequest();
    req.skip_inlined = true;
    const RewriteResult some = RewriteClass(bytes.data(), bytes.size(), req);
    ASSERT_TRUE(some.error.empty()) << some.error;
    std::set<std::string> traced_all, traced_some, inlined;
    for (const auto& t : all.traced) traced_all.insert(t.name + t.descriptor);
    for (const auto& t : some.traced) traced_some.insert(t.name + t.descriptor);
    for (const auto& s : some.skipped) {
      if (s.reason == SkipReason::kInlined) inlined.insert(s.name + s.descriptor);
    }
    for (const auto& m : inlined) EXPECT_TRUE(traced_all.count(m)) << m << ": skipped, but not traceable anyway";
    std::set<std::string> both = traced_some;
    both.insert(inlined.begin(), inlined.end());
    EXPECT_EQ(both, traced_all) << p;
    EXPECT_EQ(traced_some.size() + inlined.size(), traced_all.size());
    // Each one checked against the rule on its original code.
    auto cf = ClassFile::Parse(bytes);
    ASSERT_TRUE(cf.ok());
    for (const auto& m : cf.value().methods) {
      const std::string name(*cf.value().cp.Utf8(m.name_index)), key = name + std::string(*cf.value().cp.Utf8(m.descriptor_index));
      if (!traced_all.count(key)) continue;
      for (const auto& a : m.attributes) {
        if (cf.value().AttributeName(a) != "Code") continue;
        auto c = CodeAttribute::Parse(a.info);
        ASSERT_TRUE(c.ok());
        EXPECT_EQ(inlined.count(key) == 1,
                  AlwaysInlined(name, m.access_flags, c.value().code, c.value().exceptions.size(), cf.value().cp))
            << key;
      }
    }
    inlined_total += inlined.size();
    // Outside the agent's globs: excluded, not inlined.
    req.selected = [](std::string_view, std::string_view) { return false; };
    const RewriteResult none = RewriteClass(bytes.data(), bytes.size(), req);
    for (const auto& s : none.skipped) EXPECT_NE(s.reason, SkipReason::kInlined);
  }
  EXPECT_GT(inlined_total, 0u);
}

// shed (the overhead budget, the agent's shed.cc): a shed method keeps its original code
// byte for byte (no entry or exit probe, no catch-all handler), is counted kShed and is not
// asked for an id; every other method is traced as without it.
TEST(JvmRewriter, ShedMethodsKeepTheirOriginalCodeAndGetNoId) {
  size_t shed_total = 0;
  for (const auto& p : CorpusFiles()) {
    auto bytes = ReadBytes(p);
    const RewriteResult all = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
    ASSERT_TRUE(all.error.empty()) << all.error;
    // Every other traced method is shed.
    std::set<std::string> want_shed, want_traced;
    for (size_t i = 0; i < all.traced.size(); ++i) {
      (i % 2 ? want_traced : want_shed).insert(all.traced[i].name + all.traced[i].descriptor);
    }
    RewriteRequest req;
    std::set<std::string> asked;
    uint32_t next = 1;
    req.assign_id = [&](std::string_view, std::string_view m, std::string_view d) -> std::optional<uint32_t> {
      asked.insert(std::string(m) + std::string(d));
      return next++;
    };
    req.shed = [&](std::string_view c, std::string_view m, std::string_view d) {
      EXPECT_EQ(c, all.class_name);
      return want_shed.count(std::string(m) + std::string(d)) == 1;
    };
    const RewriteResult r = RewriteClass(bytes.data(), bytes.size(), req);
    ASSERT_TRUE(r.error.empty()) << r.error;
    std::set<std::string> traced, shed;
    for (const auto& t : r.traced) traced.insert(t.name + t.descriptor);
    for (const auto& s : r.skipped) {
      if (s.reason == SkipReason::kShed) shed.insert(s.name + s.descriptor);
    }
    EXPECT_EQ(traced, want_traced) << p;
    EXPECT_EQ(shed, want_shed) << p;
    for (const auto& m : shed) EXPECT_FALSE(asked.count(m)) << m << ": shed, yet asked for an id";
    if (!r.changed) {
      EXPECT_TRUE(want_traced.empty());
      continue;
    }
    // The shed methods' Code attributes are the original ones (the constant pool only grows).
    auto before = ClassFile::Parse(bytes);
    auto after = ClassFile::Parse(r.bytes);
    ASSERT_TRUE(before.ok() && after.ok());
    auto codes = [](const ClassFile& cf) {
      std::map<std::string, std::vector<uint8_t>> out;
      for (const auto& m : cf.methods) {
        const std::string key = std::string(*cf.cp.Utf8(m.name_index)) + std::string(*cf.cp.Utf8(m.descriptor_index));
        for (const auto& a : m.attributes) {
          if (cf.AttributeName(a) == "Code") out[key] = a.info;
        }
      }
      return out;
    };
    auto original = codes(before.value()), rewritten = codes(after.value());
    for (const auto& m : shed) EXPECT_EQ(rewritten[m], original[m]) << p << " " << m;
    for (const auto& m : traced) EXPECT_NE(rewritten[m], original[m]) << p << " " << m;
    shed_total += shed.size();
  }
  EXPECT_GT(shed_total, 0u);
}

// A constant pool near its 65,535 entries: a method is traced, or skipped as
// too large with "constant pool full"; never called malformed (when a stack
// map frame's Throwable constant found no room, it was).
TEST(JvmRewriter, AFullConstantPoolIsSaidSoAndNeverCalledMalformed) {
  constexpr size_t kMostFree = 16;  // the probes need a few entries, the frames' Throwable two more
  size_t full = 0, classes = 0;
  for (const auto& p : CorpusFiles()) {
    const auto bytes = ReadBytes(p);
    auto parsed = ClassFile::Parse(bytes);
    if (!parsed.ok()) continue;
    if (RewriteClass(bytes.data(), bytes.size(), CountingRequest()).traced.empty()) continue;
    if (++classes > 2) break;  // (each padded class costs 17 rewrites of 64 Ki constants)
    ClassFile base = parsed.value();
    size_t pad = 0;
    while (base.cp.count() + kMostFree < 65535) base.cp.AddUtf8("lookback-padding-" + std::to_string(pad++));
    for (size_t free = kMostFree;; --free) {
      ClassFile cf = base;
      for (size_t i = free; i < kMostFree; ++i) cf.cp.AddUtf8("lookback-padding-" + std::to_string(pad + i));
      ASSERT_EQ(cf.cp.count() + free, 65535u);
      const auto padded = cf.Write();
      const auto r = RewriteClass(padded.data(), padded.size(), CountingRequest());
      for (const auto& m : r.skipped) {
        EXPECT_NE(m.reason, SkipReason::kMalformed) << p << ", " << free << " entries free: " << m.name << m.descriptor
                                                    << ": " << m.detail;
        full += m.reason == SkipReason::kTooLarge && m.detail == "constant pool full";
      }
      if (free == 0) break;
    }
  }
  EXPECT_GT(full, 0u);
}

TEST(JvmRewriter, IdsAboveTheSipushRangeComeFromIntegerConstants) {
  auto bytes = ReadBytes(CorpusFiles().front());
  auto r = RewriteClass(bytes.data(), bytes.size(), CountingRequest(100000));
  ASSERT_TRUE(r.changed) << r.error;
  auto cf = ClassFile::Parse(r.bytes);
  ASSERT_TRUE(cf.ok());
  std::set<uint32_t> ints;
  for (size_t i = 1; i < cf.value().cp.count(); ++i)
    if (auto* e = cf.value().cp.Get(static_cast<uint16_t>(i)); e && e->tag == kCpInteger) ints.insert(e->value);
  for (const auto& t : r.traced) EXPECT_TRUE(ints.count(t.id)) << t.name;
}

// The class without its StackMapTables, at `version` (0: its own).
std::vector<uint8_t> WithoutStackMapTables(const std::vector<uint8_t>& bytes, uint16_t version) {
  auto cf = ClassFile::Parse(bytes);
  EXPECT_TRUE(cf.ok());
  if (!cf.ok()) return {};
  ClassFile& c = cf.value();
  if (version != 0) c.major_version = version;
  for (auto& m : c.methods) {
    for (auto& a : m.attributes) {
      if (c.AttributeName(a) != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      EXPECT_TRUE(code.ok());
      auto& attrs = code.value().attributes;
      attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                                 [&](const Attribute& x) { return c.AttributeName(x) == "StackMapTable"; }),
                  attrs.end());
      a.info.clear();
      EXPECT_FALSE(code.value().Write(a.info).has_value());
    }
  }
  return c.Write();
}

// A class file as javac 1.5 wrote it: version 49, no StackMapTable.
std::vector<uint8_t> AsVersion49(const std::vector<uint8_t>& bytes) { return WithoutStackMapTables(bytes, 49); }

size_t StackMapTables(const std::vector<uint8_t>& bytes) {
  auto cf = ClassFile::Parse(bytes);
  size_t n = 0;
  for (const auto& m : cf.value().methods) {
    for (const auto& a : m.attributes) {
      if (cf.value().AttributeName(a) != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      if (!code.ok()) continue;
      const std::vector<Attribute> attrs = code.value().attributes;
      for (const auto& x : attrs) n += cf.value().AttributeName(x) == "StackMapTable";
    }
  }
  return n;
}

TEST(JvmRewriter, OldClassFilesGetProbesAndNoStackMapTable) {
  for (const auto& p : CorpusFiles()) {
    const auto old = AsVersion49(ReadBytes(p));
    ASSERT_EQ(StackMapTables(old), 0u);
    auto r = RewriteClass(old.data(), old.size(), CountingRequest());
    ASSERT_TRUE(r.error.empty()) << p << ": " << r.error;
    if (r.traced.empty()) continue;
    ASSERT_TRUE(r.changed);
    EXPECT_EQ(StackMapTables(r.bytes), 0u) << p;  // type inference needs none; a wrong one would be worse
    EXPECT_EQ(ClassFile::Parse(r.bytes).value().major_version, 49);
  }
}

// HotSpot keeps no StackMapTable of a class it did not verify (the boot
// loader's: java.base and the JDK's other boot modules), so the bytes a
// retransform of one hands the class hook have none, at version 61: the
// budget's and startup=defer's retransforms see such classes. Every method
// that is traced with its frames must be traced without them, constructors
// whose super(...) arguments hold a conditional among them
// (java.io.FileNotFoundException(String, String) was left unprobed as
// "malformed": after the conditional's goto no frame said what was on the
// stack at the super() call).
TEST(JvmRewriter, ClassesWithoutStackMapTablesAtTheirOwnVersionAreTracedAlike) {
  std::vector<fs::path> files = ClassFiles(LOOKBACK_JVM_CLASSES);
  for (const fs::path& p : CorpusFiles()) files.push_back(p);
  size_t ctors = 0;
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    const std::vector<uint8_t> bytes = ReadBytes(p);
    const std::vector<uint8_t> bare = WithoutStackMapTables(bytes, 0);
    const RewriteResult with = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
    const RewriteResult without = RewriteClass(bare.data(), bare.size(), CountingRequest());
    ASSERT_TRUE(with.error.empty()) << with.error;
    ASSERT_TRUE(without.error.empty()) << without.error;
    std::set<std::string> traced_with, traced_without;
    for (const auto& t : with.traced) traced_with.insert(t.name + t.descriptor);
    for (const auto& t : without.traced) traced_without.insert(t.name + t.descriptor);
    EXPECT_EQ(traced_without, traced_with);
    for (const auto& s : without.skipped) EXPECT_NE(s.reason, SkipReason::kMalformed) << s.name << ": " << s.detail;
    if (p.filename() == "Ctors$Sub.class") ctors += traced_without.count("<init>(I)V");
  }
  EXPECT_GT(ctors, 0u) << "no Ctors class with the conditional in its super(...) arguments was rewritten";
}

TEST(JvmBytecode, InvertsEveryConditionalBranch) {
  for (uint8_t op = kOpIfeq; op <= kOpIfAcmpne; ++op) {
    EXPECT_NE(InvertBranch(op), op);
    EXPECT_EQ(InvertBranch(InvertBranch(op)), op);
  }
  EXPECT_EQ(InvertBranch(kOpIfeq), kOpIfne);
  EXPECT_EQ(InvertBranch(kOpIflt), kOpIfge);
  EXPECT_EQ(InvertBranch(kOpIfIcmpgt), kOpIfIcmple);
  EXPECT_EQ(InvertBranch(kOpIfAcmpeq), kOpIfAcmpne);
  EXPECT_EQ(InvertBranch(kOpIfnull), kOpIfnonnull);
}

// Every opcode of JVMS 6.5 (table of JVMS chapter 7): its name in the Opcode
// enum, its number and its length in bytes with operands (from the formats of
// JVMS 6.5; 0 for the variable-length tableswitch, lookupswitch and wide).
struct SpecOpcode {
  uint8_t named;  // the enum's value
  uint8_t number;
  const char* mnemonic;
  int length;
};
constexpr SpecOpcode kSpecOpcodes[] = {
      {kOpNop, 0x00, "nop", 1}, {kOpAconstNull, 0x01, "aconst_null", 1}, {kOpIconstM1, 0x02, "iconst_m1", 1},
      {kOpIconst0, 0x03, "iconst_0", 1}, {kOpIconst1, 0x04, "iconst_1", 1}, {kOpIconst2, 0x05, "iconst_2", 1},
      {kOpIconst3, 0x06, "iconst_3", 1}, {kOpIconst4, 0x07, "iconst_4", 1}, {kOpIconst5, 0x08, "iconst_5", 1},
      {kOpLconst0, 0x09, "lconst_0", 1}, {kOpLconst1, 0x0a, "lconst_1", 1}, {kOpFconst0, 0x0b, "fconst_0", 1},
      {kOpFconst1, 0x0c, "fconst_1", 1}, {kOpFconst2, 0x0d, "fconst_2", 1}, {kOpDconst0, 0x0e, "dconst_0", 1},
      {kOpDconst1, 0x0f, "dconst_1", 1}, {kOpBipush, 0x10, "bipush", 2}, {kOpSipush, 0x11, "sipush", 3},
      {kOpLdc, 0x12, "ldc", 2}, {kOpLdcW, 0x13, "ldc_w", 3}, {kOpLdc2W, 0x14, "ldc2_w", 3},
      {kOpIload, 0x15, "iload", 2}, {kOpLload, 0x16, "lload", 2}, {kOpFload, 0x17, "fload", 2},
      {kOpDload, 0x18, "dload", 2}, {kOpAload, 0x19, "aload", 2}, {kOpIload0, 0x1a, "iload_0", 1},
      {kOpIload1, 0x1b, "iload_1", 1}, {kOpIload2, 0x1c, "iload_2", 1}, {kOpIload3, 0x1d, "iload_3", 1},
      {kOpLload0, 0x1e, "lload_0", 1}, {kOpLload1, 0x1f, "lload_1", 1}, {kOpLload2, 0x20, "lload_2", 1},
      {kOpLload3, 0x21, "lload_3", 1}, {kOpFload0, 0x22, "fload_0", 1}, {kOpFload1, 0x23, "fload_1", 1},
      {kOpFload2, 0x24, "fload_2", 1}, {kOpFload3, 0x25, "fload_3", 1}, {kOpDload0, 0x26, "dload_0", 1},
      {kOpDload1, 0x27, "dload_1", 1}, {kOpDload2, 0x28, "dload_2", 1}, {kOpDload3, 0x29, "dload_3", 1},
      {kOpAload0, 0x2a, "aload_0", 1}, {kOpAload1, 0x2b, "aload_1", 1}, {kOpAload2, 0x2c, "aload_2", 1},
      {kOpAload3, 0x2d, "aload_3", 1}, {kOpIaload, 0x2e, "iaload", 1}, {kOpLaload, 0x2f, "laload", 1},
      {kOpFaload, 0x30, "faload", 1}, {kOpDaload, 0x31, "daload", 1}, {kOpAaload, 0x32, "aaload", 1},
      {kOpBaload, 0x33, "baload", 1}, {kOpCaload, 0x34, "caload", 1}, {kOpSaload, 0x35, "saload", 1},
      {kOpIstore, 0x36, "istore", 2}, {kOpLstore, 0x37, "lstore", 2}, {kOpFstore, 0x38, "fstore", 2},
      {kOpDstore, 0x39, "dstore", 2}, {kOpAstore, 0x3a, "astore", 2}, {kOpIstore0, 0x3b, "istore_0", 1},
      {kOpIstore1, 0x3c, "istore_1", 1}, {kOpIstore2, 0x3d, "istore_2", 1}, {kOpIstore3, 0x3e, "istore_3", 1},
      {kOpLstore0, 0x3f, "lstore_0", 1}, {kOpLstore1, 0x40, "lstore_1", 1}, {kOpLstore2, 0x41, "lstore_2", 1},
      {kOpLstore3, 0x42, "lstore_3", 1}, {kOpFstore0, 0x43, "fstore_0", 1}, {kOpFstore1, 0x44, "fstore_1", 1},
      {kOpFstore2, 0x45, "fstore_2", 1}, {kOpFstore3, 0x46, "fstore_3", 1}, {kOpDstore0, 0x47, "dstore_0", 1},
      {kOpDstore1, 0x48, "dstore_1", 1}, {kOpDstore2, 0x49, "dstore_2", 1}, {kOpDstore3, 0x4a, "dstore_3", 1},
      {kOpAstore0, 0x4b, "astore_0", 1}, {kOpAstore1, 0x4c, "astore_1", 1}, {kOpAstore2, 0x4d, "astore_2", 1},
      {kOpAstore3, 0x4e, "astore_3", 1}, {kOpIastore, 0x4f, "iastore", 1}, {kOpLastore, 0x50, "lastore", 1},
      {kOpFastore, 0x51, "fastore", 1}, {kOpDastore, 0x52, "dastore", 1}, {kOpAastore, 0x53, "aastore", 1},
      {kOpBastore, 0x54, "bastore", 1}, {kOpCastore, 0x55, "castore", 1}, {kOpSastore, 0x56, "sastore", 1},
      {kOpPop, 0x57, "pop", 1}, {kOpPop2, 0x58, "pop2", 1}, {kOpDup, 0x59, "dup", 1}, {kOpDupX1, 0x5a, "dup_x1", 1},
      {kOpDupX2, 0x5b, "dup_x2", 1}, {kOpDup2, 0x5c, "dup2", 1}, {kOpDup2X1, 0x5d, "dup2_x1", 1},
      {kOpDup2X2, 0x5e, "dup2_x2", 1}, {kOpSwap, 0x5f, "swap", 1}, {kOpIadd, 0x60, "iadd", 1},
      {kOpLadd, 0x61, "ladd", 1}, {kOpFadd, 0x62, "fadd", 1}, {kOpDadd, 0x63, "dadd", 1}, {kOpIsub, 0x64, "isub", 1},
      {kOpLsub, 0x65, "lsub", 1}, {kOpFsub, 0x66, "fsub", 1}, {kOpDsub, 0x67, "dsub", 1}, {kOpImul, 0x68, "imul", 1},
      {kOpLmul, 0x69, "lmul", 1}, {kOpFmul, 0x6a, "fmul", 1}, {kOpDmul, 0x6b, "dmul", 1}, {kOpIdiv, 0x6c, "idiv", 1},
      {kOpLdiv, 0x6d, "ldiv", 1}, {kOpFdiv, 0x6e, "fdiv", 1}, {kOpDdiv, 0x6f, "ddiv", 1}, {kOpIrem, 0x70, "irem", 1},
      {kOpLrem, 0x71, "lrem", 1}, {kOpFrem, 0x72, "frem", 1}, {kOpDrem, 0x73, "drem", 1}, {kOpIneg, 0x74, "ineg", 1},
      {kOpLneg, 0x75, "lneg", 1}, {kOpFneg, 0x76, "fneg", 1}, {kOpDneg, 0x77, "dneg", 1}, {kOpIshl, 0x78, "ishl", 1},
      {kOpLshl, 0x79, "lshl", 1}, {kOpIshr, 0x7a, "ishr", 1}, {kOpLshr, 0x7b, "lshr", 1}, {kOpIushr, 0x7c, "iushr", 1},
      {kOpLushr, 0x7d, "lushr", 1}, {kOpIand, 0x7e, "iand", 1}, {kOpLand, 0x7f, "land", 1}, {kOpIor, 0x80, "ior", 1},
      {kOpLor, 0x81, "lor", 1}, {kOpIxor, 0x82, "ixor", 1}, {kOpLxor, 0x83, "lxor", 1}, {kOpIinc, 0x84, "iinc", 3},
      {kOpI2l, 0x85, "i2l", 1}, {kOpI2f, 0x86, "i2f", 1}, {kOpI2d, 0x87, "i2d", 1}, {kOpL2i, 0x88, "l2i", 1},
      {kOpL2f, 0x89, "l2f", 1}, {kOpL2d, 0x8a, "l2d", 1}, {kOpF2i, 0x8b, "f2i", 1}, {kOpF2l, 0x8c, "f2l", 1},
      {kOpF2d, 0x8d, "f2d", 1}, {kOpD2i, 0x8e, "d2i", 1}, {kOpD2l, 0x8f, "d2l", 1}, {kOpD2f, 0x90, "d2f", 1},
      {kOpI2b, 0x91, "i2b", 1}, {kOpI2c, 0x92, "i2c", 1}, {kOpI2s, 0x93, "i2s", 1}, {kOpLcmp, 0x94, "lcmp", 1},
      {kOpFcmpl, 0x95, "fcmpl", 1}, {kOpFcmpg, 0x96, "fcmpg", 1}, {kOpDcmpl, 0x97, "dcmpl", 1},
      {kOpDcmpg, 0x98, "dcmpg", 1}, {kOpIfeq, 0x99, "ifeq", 3}, {kOpIfne, 0x9a, "ifne", 3}, {kOpIflt, 0x9b, "iflt", 3},
      {kOpIfge, 0x9c, "ifge", 3}, {kOpIfgt, 0x9d, "ifgt", 3}, {kOpIfle, 0x9e, "ifle", 3},
      {kOpIfIcmpeq, 0x9f, "if_icmpeq", 3}, {kOpIfIcmpne, 0xa0, "if_icmpne", 3}, {kOpIfIcmplt, 0xa1, "if_icmplt", 3},
      {kOpIfIcmpge, 0xa2, "if_icmpge", 3}, {kOpIfIcmpgt, 0xa3, "if_icmpgt", 3}, {kOpIfIcmple, 0xa4, "if_icmple", 3},
      {kOpIfAcmpeq, 0xa5, "if_acmpeq", 3}, {kOpIfAcmpne, 0xa6, "if_acmpne", 3}, {kOpGoto, 0xa7, "goto", 3},
      {kOpJsr, 0xa8, "jsr", 3}, {kOpRet, 0xa9, "ret", 2}, {kOpTableswitch, 0xaa, "tableswitch", 0},
      {kOpLookupswitch, 0xab, "lookupswitch", 0}, {kOpIreturn, 0xac, "ireturn", 1}, {kOpLreturn, 0xad, "lreturn", 1},
      {kOpFreturn, 0xae, "freturn", 1}, {kOpDreturn, 0xaf, "dreturn", 1}, {kOpAreturn, 0xb0, "areturn", 1},
      {kOpReturn, 0xb1, "return", 1}, {kOpGetstatic, 0xb2, "getstatic", 3}, {kOpPutstatic, 0xb3, "putstatic", 3},
      {kOpGetfield, 0xb4, "getfield", 3}, {kOpPutfield, 0xb5, "putfield", 3},
      {kOpInvokevirtual, 0xb6, "invokevirtual", 3}, {kOpInvokespecial, 0xb7, "invokespecial", 3},
      {kOpInvokestatic, 0xb8, "invokestatic", 3}, {kOpInvokeinterface, 0xb9, "invokeinterface", 5},
      {kOpInvokedynamic, 0xba, "invokedynamic", 5}, {kOpNew, 0xbb, "new", 3}, {kOpNewarray, 0xbc, "newarray", 2},
      {kOpAnewarray, 0xbd, "anewarray", 3}, {kOpArraylength, 0xbe, "arraylength", 1}, {kOpAthrow, 0xbf, "athrow", 1},
      {kOpCheckcast, 0xc0, "checkcast", 3}, {kOpInstanceof, 0xc1, "instanceof", 3},
      {kOpMonitorenter, 0xc2, "monitorenter", 1}, {kOpMonitorexit, 0xc3, "monitorexit", 1}, {kOpWide, 0xc4, "wide", 0},
      {kOpMultianewarray, 0xc5, "multianewarray", 4}, {kOpIfnull, 0xc6, "ifnull", 3},
      {kOpIfnonnull, 0xc7, "ifnonnull", 3}, {kOpGotoW, 0xc8, "goto_w", 5}, {kOpJsrW, 0xc9, "jsr_w", 5},
};

TEST(JvmBytecode, OpcodeNamesHaveTheNumbersOfTheSpec) {
  static_assert(kOpNop == 0x00 && kOpIconst0 == 0x03 && kOpLdc2W == 0x14 && kOpAload == 0x19);
  static_assert(kOpIload0 == 0x1a && kOpAload3 == 0x2d && kOpIstore0 == 0x3b && kOpSastore == 0x56);
  static_assert(kOpIadd == 0x60 && kOpIinc == 0x84 && kOpI2l == 0x85 && kOpIfeq == 0x99 && kOpIfAcmpne == 0xa6);
  static_assert(kOpReturn == 0xb1 && kOpGetstatic == 0xb2 && kOpInvokedynamic == 0xba && kOpWide == 0xc4);
  static_assert(kOpMultianewarray == 0xc5 && kOpJsrW == 0xc9);
  ASSERT_EQ(std::size(kSpecOpcodes), 0xcau);  // 0x00 nop .. 0xc9 jsr_w, none left out
  for (size_t i = 0; i < std::size(kSpecOpcodes); ++i) {
    const SpecOpcode& o = kSpecOpcodes[i];
    EXPECT_EQ(size_t{o.number}, i) << o.mnemonic;  // the table itself is complete and in order
    EXPECT_EQ(o.named, o.number) << o.mnemonic;
  }
}

TEST(JvmBytecode, InstructionLengthsAreThoseOfTheSpec) {
  for (const SpecOpcode& o : kSpecOpcodes) {
    EXPECT_EQ(FixedLength(o.number), o.length) << o.mnemonic;
    if (o.length == 0) continue;
    // Decoding agrees: exactly one instruction of that length; one byte short runs past the end.
    std::vector<uint8_t> code(static_cast<size_t>(o.length), 0);
    code[0] = o.number;
    auto insns = DecodeInstructions(code);
    ASSERT_TRUE(insns.ok()) << o.mnemonic << ": " << insns.error().ToString();
    ASSERT_EQ(insns.value().size(), 1u) << o.mnemonic;
    EXPECT_EQ(insns.value()[0].length, static_cast<uint32_t>(o.length)) << o.mnemonic;
    code.pop_back();
    EXPECT_EQ(DecodeInstructions(code).ok(), o.length == 1) << o.mnemonic;
  }
  for (int op = 0xca; op <= 0xff; ++op) {  // breakpoint, unassigned, impdep1/2: not instructions
    EXPECT_EQ(FixedLength(static_cast<uint8_t>(op)), 0) << op;
    EXPECT_FALSE(DecodeInstructions(std::vector<uint8_t>{static_cast<uint8_t>(op)}).ok()) << op;
  }
  // wide: an index of two bytes for the loads, stores and ret; iinc also a two-byte constant.
  for (uint8_t op : {kOpIload, kOpLload, kOpFload, kOpDload, kOpAload, kOpIstore, kOpLstore, kOpFstore, kOpDstore,
                     kOpAstore, kOpRet}) {
    auto insns = DecodeInstructions(std::vector<uint8_t>{kOpWide, op, 1, 0});
    ASSERT_TRUE(insns.ok()) << int{op};
    EXPECT_EQ(insns.value()[0].length, 4u) << int{op};
    EXPECT_EQ(insns.value()[0].wide_op, op);
  }
  auto iinc = DecodeInstructions(std::vector<uint8_t>{kOpWide, kOpIinc, 1, 0, 0, 1});
  ASSERT_TRUE(iinc.ok());
  EXPECT_EQ(iinc.value()[0].length, 6u);
  EXPECT_FALSE(DecodeInstructions(std::vector<uint8_t>{kOpWide, kOpNop, 0, 0}).ok());
  EXPECT_FALSE(DecodeInstructions(std::vector<uint8_t>{kOpWide, kOpIload0, 0, 0}).ok());
  // tableswitch at 0: 3 bytes of padding, default, low 0, high 1, two offsets: 1 + 3 + 12 + 8 bytes.
  std::vector<uint8_t> table(24, 0);
  table[0] = kOpTableswitch;
  table[15] = 1;  // high
  auto ts = DecodeInstructions(table);
  ASSERT_TRUE(ts.ok()) << ts.error().ToString();
  EXPECT_EQ(ts.value()[0].length, 24u);
  // lookupswitch at 1 (after a nop): 2 bytes of padding, default, npairs 1, one pair: 1 + 2 + 8 + 8 bytes.
  std::vector<uint8_t> lookup(20, 0);
  lookup[0] = kOpNop;
  lookup[1] = kOpLookupswitch;
  lookup[11] = 1;  // npairs
  auto ls = DecodeInstructions(lookup);
  ASSERT_TRUE(ls.ok()) << ls.error().ToString();
  ASSERT_EQ(ls.value().size(), 2u);
  EXPECT_EQ(ls.value()[1].length, 19u);
}

// The always-inlined rule (rewriter.h AlwaysInlined, docs/jvm.md), on hand-made code:
// small, no handler, no call, no loop, no monitor, no athrow, no dynamic constant.
TEST(JvmRewriter, AlwaysInlinedRuleTakesTinyLeavesWithoutLoopsOnly) {
  // #1 Integer 5, #2 Dynamic (bootstrap 0, #3), #3 NameAndType (#4, #4), #4 Utf8 "I"
  const std::vector<uint8_t> pool = {0, 5, kCpInteger, 0, 0, 0, 5, kCpDynamic, 0, 0, 0, 3,
                                     kCpNameAndType, 0, 4, 0, 4, kCpUtf8, 0, 1, 'I'};
  ByteReader r(pool);
  auto cp_or = ConstantPool::Parse(r);
  ASSERT_TRUE(cp_or.ok()) << cp_or.error().ToString();
  const ConstantPool& cp = cp_or.value();
  auto inlined = [&](std::vector<uint8_t> code, uint16_t flags = 0, std::string_view name = "m", size_t handlers = 0) {
    return AlwaysInlined(name, flags, code, handlers, cp);
  };
  const std::vector<uint8_t> getter = {kOpAload0, kOpGetfield, 0, 1, kOpIreturn};
  EXPECT_TRUE(inlined(getter));
  EXPECT_TRUE(inlined({kOpReturn}));
  // iload_0; ifeq +5; iconst_1; ireturn; iconst_0; ireturn: a forward branch
  EXPECT_TRUE(inlined({kOpIload0, kOpIfeq, 0, 5, kOpIconst1, kOpIreturn, kOpIconst0, kOpIreturn}));
  std::vector<uint8_t> size35(34, kOpNop), size36(35, kOpNop);
  size35.push_back(kOpReturn);
  size36.push_back(kOpReturn);
  EXPECT_TRUE(inlined(size35));
  EXPECT_FALSE(inlined(size36));
  EXPECT_TRUE(inlined({kOpLdc, 1, kOpIreturn}));         // Integer
  EXPECT_FALSE(inlined({kOpLdc, 2, kOpIreturn}));        // Dynamic: a bootstrap call
  EXPECT_FALSE(inlined({kOpLdcW, 0, 2, kOpIreturn}));    // Dynamic
  EXPECT_FALSE(inlined({kOpLdc2W, 0, 2, kOpIreturn}));   // Dynamic
  EXPECT_FALSE(inlined({kOpNop, kOpGoto, 0xff, 0xff}));  // a loop (backward goto)
  EXPECT_FALSE(inlined({kOpGoto, 0, 0}));              // a jump to itself
  EXPECT_FALSE(inlined({kOpInvokestatic, 0, 1, kOpReturn}));
  EXPECT_FALSE(inlined({kOpAload0, kOpInvokevirtual, 0, 1, kOpReturn}));
  EXPECT_FALSE(inlined({kOpAload0, kOpInvokespecial, 0, 1, kOpReturn}));
  EXPECT_FALSE(inlined({kOpAload0, kOpInvokeinterface, 0, 1, 1, 0, kOpReturn}));
  EXPECT_FALSE(inlined({kOpInvokedynamic, 0, 1, 0, 0, kOpPop, kOpReturn}));
  EXPECT_FALSE(inlined({kOpAload0, kOpMonitorenter, kOpAload0, kOpMonitorexit, kOpReturn}));
  EXPECT_FALSE(inlined({kOpAload0, kOpAthrow}));
  EXPECT_FALSE(inlined({kOpJsr, 0, 4, kOpReturn, kOpAstore0, kOpRet, 0}));
  EXPECT_FALSE(inlined({kOpWide, kOpRet, 0, 0}));
  EXPECT_FALSE(inlined(getter, kAccSynchronized));
  EXPECT_FALSE(inlined(getter, kAccNative));
  EXPECT_FALSE(inlined(getter, kAccAbstract));
  EXPECT_FALSE(inlined(getter, 0, "<init>"));
  EXPECT_FALSE(inlined({kOpReturn}, kAccStatic, "<clinit>"));
  EXPECT_FALSE(inlined(getter, 0, "m", 1));  // an exception handler
  EXPECT_FALSE(inlined({}));
  EXPECT_FALSE(inlined({0xff}));  // impdep2, reserved: not an instruction
}

// ---- real programs ----------------------------------------------------------

TEST(JvmPrograms, RewrittenProgramsBehaveTheSameAndProbesNestExactly) {
  if (!HaveJava()) GTEST_SKIP() << "no javac/java";
  fs::path tmp = TmpDir("programs");
  fs::path out = tmp / "classes";
  // Ids from 32700 on: the first ones fit sipush, the rest need ldc_w.
  Stats st = RewriteTree(LOOKBACK_JVM_CLASSES, out, "lbtest/Probe", 32700, tmp / "ids.txt");
  std::printf("test programs: %s\n", st.Summary().c_str());
  for (const auto& m : st.malformed) ADD_FAILURE() << "skipped as malformed: " << m;
  EXPECT_EQ(st.errors, 0u);
  EXPECT_GT(st.traced, 32767u - 32700u) << "some ids must need ldc_w";
  // huge() is the one method too large once rewritten.
  EXPECT_EQ(st.skipped[SkipReason::kTooLarge], 1u);
  EXPECT_GE(st.skipped[SkipReason::kBridgeOrSynthetic], 1u);

  auto [rc0, expected] = Shell(std::string(LOOKBACK_JAVA) + " -cp " + LOOKBACK_JVM_CLASSES + " lbtest.Main");
  ASSERT_EQ(rc0, 0) << expected;
  std::string props = " -Dlbtest.ids=" + (tmp / "ids.txt").string() + " -Dlbtest.log=" + (tmp / "probe.log").string() +
                      " -Dlbtest.gt=" + (tmp / "gt.txt").string();
  auto [rc1, got] = Shell(std::string(LOOKBACK_JAVA) + " -Xverify:all -XX:-UseSharedSpaces" + props + " -cp " +
                        out.string() + " lbtest.Main");
  ASSERT_EQ(rc1, 0) << got;
  EXPECT_EQ(got, expected);

  auto log = Lines(ReadText(tmp / "probe.log"));
  ASSERT_FALSE(log.empty());
  // The probe compared every event with StackWalker's view of the stack.
  EXPECT_EQ(log.back().find("errors 0"), log.back().size() - 8) << log.back();
  size_t enters = 0, exits = 0;
  std::map<std::string, size_t> per_method;
  std::vector<std::string> unwound;
  for (const auto& l : log) {
    if (l.rfind("MISMATCH", 0) == 0) ADD_FAILURE() << l;
    if (l.rfind("UNWOUND ", 0) == 0) unwound.push_back(l.substr(8));
    if (l.rfind("> ", 0) == 0) ++enters, ++per_method[l.substr(2)];
    if (l.rfind("< ", 0) == 0) ++exits;
  }
  // Every exception leaving a method records its exit, except one thrown
  // inside a constructor's super()/this() call (no handler may cover it):
  // Ctors.run's Picky(500) (one frame) and Picky(5L) (two, outer first).
  EXPECT_EQ(unwound, (std::vector<std::string>{"lbtest/Ctors$Picky.<init>(I)V", "lbtest/Ctors$Picky.<init>(J)V",
                                               "lbtest/Ctors$Picky.<init>(I)V"}));
  EXPECT_EQ(enters, exits + unwound.size());
  std::printf("probe events: %zu enters, %zu exits, %zu distinct methods seen\n", enters, exits, per_method.size());
  for (const char* m : {"lbtest/StaticInit$Holder.<clinit>()V", "lbtest/Ctors$Sub.<init>(I)V", "lbtest/Ctors$Picky.<init>(J)V",
                        "lbtest/Recursion.fib(I)I", "lbtest/BigMethod.big(II)I", "lbtest/BigMethod.fat(I)I", "lbtest/BigMethod.many(I)I",
                        "lbtest/Defaults$Shape.describe()Ljava/lang/String;", "lbtest/Sync.inc(I)I"})
    EXPECT_GT(per_method[m], 0u) << m;
  EXPECT_EQ(per_method["lbtest/Recursion.fib(I)I"], 465u);  // calls of fib(12)

  // The probe log, restricted to the methods that log their own entry and
  // exit (GT), equals the program's own record, exceptional exits included.
  auto gt = Lines(ReadText(tmp / "gt.txt"));
  ASSERT_FALSE(gt.empty());
  std::set<std::string> gt_methods;
  for (const auto& l : gt) gt_methods.insert(l.substr(2));
  std::vector<std::string> filtered;
  for (const auto& l : log)
    if ((l.rfind("> ", 0) == 0 || l.rfind("< ", 0) == 0) && gt_methods.count(l.substr(2))) filtered.push_back(l);
  EXPECT_EQ(filtered, gt);
  std::printf("ground truth: %zu events, equal to the probe log's\n", gt.size());
}

// Each exit hands the probe its own entry's decision (the local the entry
// probe stored, rewriter.h), so nesting stays exact when decisions change
// while frames run, as when the overhead budget sheds a method: the test
// probe declines one enter in 3, whatever the method, and checks each exit's
// `entered` against its frame's decision on a shadow stack that StackWalker
// checks at every event. Under -Xverify:all, since every frame gains the
// local. (Before, the exit read the guard again, and a frame running when
// its method was shed lost its exit.)
TEST(JvmPrograms, EachExitFollowsItsEntrysDecisionWhileDecisionsChange) {
  if (!HaveJava()) GTEST_SKIP() << "no javac/java";
  fs::path tmp = TmpDir("decline");
  fs::path out = tmp / "classes";
  Stats st = RewriteTree(LOOKBACK_JVM_CLASSES, out, "lbtest/Probe", 1, tmp / "ids.txt");
  EXPECT_EQ(st.errors, 0u);
  for (const auto& m : st.malformed) ADD_FAILURE() << "skipped as malformed: " << m;
  auto [rc0, expected] = Shell(std::string(LOOKBACK_JAVA) + " -cp " + LOOKBACK_JVM_CLASSES + " lbtest.Main");
  ASSERT_EQ(rc0, 0) << expected;
  std::string props = " -Dlbtest.decline=3 -Dlbtest.ids=" + (tmp / "ids.txt").string() +
                      " -Dlbtest.log=" + (tmp / "probe.log").string() + " -Dlbtest.gt=" + (tmp / "gt.txt").string();
  auto [rc1, got] = Shell(std::string(LOOKBACK_JAVA) + " -Xverify:all -XX:-UseSharedSpaces" + props + " -cp " +
                          out.string() + " lbtest.Main");
  ASSERT_EQ(rc1, 0) << got;
  EXPECT_EQ(got, expected);
  auto log = Lines(ReadText(tmp / "probe.log"));
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log.back().find("errors 0"), log.back().size() - 8) << log.back();
  for (const auto& l : log)
    if (l.rfind("MISMATCH", 0) == 0) ADD_FAILURE() << l;
  const std::string& declined = log[log.size() - 2];
  ASSERT_EQ(declined.rfind("declined ", 0), 0u) << declined;
  EXPECT_GT(std::stoul(declined.substr(9)), 100u) << declined;
}

// Old class files (version 49: verified by type inference, no frames) run
// the same when rewritten, under -Xverify:all, and their probes nest exactly
// (the probe checks each event against StackWalker), exceptions included.
TEST(JvmPrograms, OldClassFilesRewrittenBehaveTheSameAndProbesNestExactly) {
  if (!HaveJava()) GTEST_SKIP() << "no javac/java";
  fs::path tmp = TmpDir("old");
  for (const auto& p : ClassFiles(LOOKBACK_JVM_OLD_CLASSES)) {
    WriteBytes(tmp / "old" / fs::relative(p, LOOKBACK_JVM_OLD_CLASSES), AsVersion49(ReadBytes(p)));
  }
  Stats st = RewriteTree(tmp / "old", tmp / "rewritten", "lbtest/Probe", 1, tmp / "ids.txt");
  std::printf("version 49 classes: %s\n", st.Summary().c_str());
  for (const auto& m : st.malformed) ADD_FAILURE() << "skipped as malformed: " << m;
  EXPECT_EQ(st.errors, 0u);
  EXPECT_GE(st.traced, 8u);
  const std::string java = std::string(LOOKBACK_JAVA) + " -Xverify:all -XX:-UseSharedSpaces";
  auto [rc0, expected] = Shell(java + " -cp " + (tmp / "old").string() + " lbold.Old");
  ASSERT_EQ(rc0, 0) << expected;
  ASSERT_NE(expected.find("old sum"), std::string::npos) << expected;
  auto [rc1, got] = Shell(java + " -Dlbtest.ids=" + (tmp / "ids.txt").string() + " -Dlbtest.log=" +
                          (tmp / "probe.log").string() + " -Dlbtest.gt=" + (tmp / "gt.txt").string() + " -cp " +
                          (tmp / "rewritten").string() + ":" + LOOKBACK_JVM_CLASSES + " lbold.Old");
  ASSERT_EQ(rc1, 0) << got;
  EXPECT_EQ(got, expected);
  auto log = Lines(ReadText(tmp / "probe.log"));
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().find("errors 0"), log.back().size() - 8) << log.back();
  size_t enters = 0, exits = 0, fib = 0;
  for (const auto& l : log) {
    if (l.rfind("MISMATCH", 0) == 0) ADD_FAILURE() << l;
    if (l.rfind("> ", 0) == 0) ++enters, fib += l == "> lbold/Old.fib(I)I";
    if (l.rfind("< ", 0) == 0) ++exits;
  }
  EXPECT_EQ(fib, 465u);  // calls of fib(12)
  // Every exit, Derived(-1)'s included (it throws while computing super()'s
  // argument: the pre-super catch-all, verified by type inference here).
  EXPECT_EQ(exits, enters);
}

// Negative control for the verification harness: a rewritten class whose
// handler frame is dropped must be reported by LinkAll, so "0 verify errors"
// below means something.
TEST(JvmPrograms, LinkAllReportsARewrittenClassWithoutItsHandlerFrame) {
  if (!HaveJava()) GTEST_SKIP() << "no javac/java";
  fs::path tmp = TmpDir("negative");
  auto bytes = ReadBytes(fs::path(LOOKBACK_JVM_CLASSES) / "lbtest/Recursion.class");
  auto r = RewriteClass(bytes.data(), bytes.size(), CountingRequest());
  ASSERT_TRUE(r.changed) << r.error;
  auto cf = ClassFile::Parse(r.bytes);
  ASSERT_TRUE(cf.ok());
  bool broke = false;
  for (auto& m : cf.value().methods) {
    if (cf.value().cp.Utf8(m.name_index) != "fib") continue;
    for (auto& a : m.attributes) {
      if (cf.value().AttributeName(a) != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      ASSERT_TRUE(code.ok());
      for (auto& ca : code.value().attributes) {
        if (cf.value().AttributeName(ca) != "StackMapTable") continue;
        // Keep the original frames, drop the last (the catch-all handler's).
        auto initial = InitialLocals("lbtest/Recursion", "fib", *ParseMethodDescriptor("(I)I"), true);
        auto frames = DecodeStackMapTable(ca.info, cf.value().cp, initial);
        ASSERT_TRUE(frames.ok());
        ASSERT_EQ(frames.value().back().stack.size(), 1u);
        EXPECT_EQ(frames.value().back().stack[0].name, "java/lang/Throwable");
        frames.value().pop_back();
        ca.info.clear();
        ASSERT_FALSE(EncodeStackMapTable(frames.value(), initial, cf.value().cp, ca.info));
        broke = true;
      }
      a.info.clear();
      ASSERT_FALSE(code.value().Write(a.info));
    }
  }
  ASSERT_TRUE(broke);
  WriteBytes(tmp / "classes/lbtest/Recursion.class", cf.value().Write());
  { std::ofstream(tmp / "list.txt") << "lbtest.Recursion\n"; }
  auto [rc, out] = Shell(std::string(LOOKBACK_JAVA) + " -Xverify:all -cp " + LOOKBACK_JVM_CLASSES + " lbtest.LinkAll " +
                         (tmp / "list.txt").string() + " " + (tmp / "classes").string());
  EXPECT_NE(out.find("VERIFY lbtest.Recursion"), std::string::npos) << out;
}

TEST(JvmPrograms, ThirdPartyJarsPassVerificationWhenRewritten) {
  if (!HaveJava()) GTEST_SKIP() << "no javac/java";
  struct Jar {
    std::string path, deps;
  };
  std::vector<Jar> jars = {
      {"/usr/share/java/guava.jar",
       "/usr/share/java/failureaccess.jar /usr/share/java/jsr305.jar /usr/share/java/error_prone_annotations.jar"},
      {"/usr/share/java/commons-lang3.jar", ""},
  };
  size_t checked = 0;
  for (const auto& jar : jars) {
    if (!fs::exists(jar.path)) {
      std::printf("%s missing (scripts/install-deps.sh installs it)\n", jar.path.c_str());
      continue;
    }
    std::string name = fs::path(jar.path).stem().string();
    fs::path tmp = TmpDir(name);
    fs::path in = tmp / "in", out = tmp / "out";
    fs::create_directories(in);
    auto [rc, msg] = Shell("cd " + in.string() + " && " + LOOKBACK_JAR + " xf " + jar.path);
    ASSERT_EQ(rc, 0) << msg;
    fs::remove_all(in / "META-INF" / "versions");  // multi-release variants: not on this loader's path
    Stats st = RewriteTree(in, out, "lbtest/Probe", 1);
    std::printf("%s: %s\n", name.c_str(), st.Summary().c_str());
    for (const auto& e : st.error_messages) std::printf("  not rewritten: %s\n", e.c_str());
    for (const auto& m : st.malformed) ADD_FAILURE() << "skipped as malformed: " << m;
    EXPECT_EQ(st.errors, 0u);
    EXPECT_GT(st.traced, 1000u);
    // Every class by name, linked under -Xverify:all, original and rewritten.
    std::ofstream list(tmp / "classes.txt");
    for (const auto& p : ClassFiles(in)) {
      std::string rel = fs::relative(p, in).replace_extension().string();
      if (rel.find("META-INF") == 0 || rel.ends_with("module-info") || rel.ends_with("package-info")) continue;
      std::replace(rel.begin(), rel.end(), '/', '.');
      list << rel << "\n";
    }
    list.close();
    std::string deps;
    for (std::istringstream ds(jar.deps); ds >> name;)
      if (fs::exists(name)) deps += " " + name;
    std::string cmd = std::string(LOOKBACK_JAVA) + " -Xverify:all -XX:-UseSharedSpaces -cp " + LOOKBACK_JVM_CLASSES +
                      " lbtest.LinkAll " + (tmp / "classes.txt").string() + " ";
    auto [rc0, base] = Shell(cmd + in.string() + deps);
    auto [rc1, got] = Shell(cmd + out.string() + deps);
    ASSERT_EQ(rc0, 0) << base;
    ASSERT_EQ(rc1, 0) << got;
    auto base_lines = Lines(base), got_lines = Lines(got);
    std::printf("  original:  %s\n  rewritten: %s\n", base_lines.back().c_str(), got_lines.back().c_str());
    for (const auto& l : got_lines)
      if (l.rfind("VERIFY", 0) == 0) ADD_FAILURE() << l;
    EXPECT_EQ(got_lines.back(), base_lines.back());
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(JvmPrograms, AllOfJavaBaseRewritesAndBootsUnderXverifyAll) {
  if (!HaveJava() || std::string(LOOKBACK_JIMAGE).empty()) GTEST_SKIP() << "no JDK";
  fs::path tmp = TmpDir("javabase");
  fs::path modules = fs::path(LOOKBACK_JAVA).parent_path() / ".." / "lib" / "modules";
  if (!fs::exists(modules)) modules = "/usr/lib/jvm/java-17-openjdk-amd64/lib/modules";
  auto [rc, msg] = Shell(std::string(LOOKBACK_JIMAGE) + " extract --dir " + (tmp / "img").string() +
                       " --include regex:/java.base/.* " + fs::canonical(modules).string());
  ASSERT_EQ(rc, 0) << msg;
  fs::path in = tmp / "img" / "java.base", out = tmp / "patch";
  Stats st = RewriteTree(in, out, "java/lang/LookbackProbe", 1);
  std::printf("java.base: %s\n", st.Summary().c_str());
  for (const auto& e : st.error_messages) std::printf("  not rewritten: %s\n", e.c_str());
  for (const auto& m : st.malformed) ADD_FAILURE() << "skipped as malformed: " << m;
  EXPECT_EQ(st.errors, 0u);
  EXPECT_GT(st.changed, 5000u);
  EXPECT_GT(st.skipped[SkipReason::kIntrinsicCandidate], 100u);
  EXPECT_EQ(st.rename_hooked, 1u);  // java.lang.Thread.setName, verified below with the rest
  fs::copy(fs::path(LOOKBACK_JVM_BASE_PROBE) / "java", out / "java", fs::copy_options::recursive |
                                                                          fs::copy_options::overwrite_existing);
  fs::remove(out / "module-info.class");
  std::ofstream list(tmp / "classes.txt");
  for (const auto& p : ClassFiles(in)) {
    std::string rel = fs::relative(p, in).replace_extension().string();
    if (rel.ends_with("module-info")) continue;
    std::replace(rel.begin(), rel.end(), '/', '.');
    list << rel << "\n";
  }
  list.close();
  // Every java.base class loaded from the patch and linked by the boot loader
  // under -Xverify:all; the JVM itself boots and runs on rewritten java.base.
  std::string cmd = std::string(LOOKBACK_JAVA) + " -Xverify:all -XX:-UseSharedSpaces -cp " + LOOKBACK_JVM_CLASSES +
                    " lbtest.LinkAll " + (tmp / "classes.txt").string() + " boot";
  auto [rc0, base] = Shell(std::string(LOOKBACK_JAVA) + " --patch-module java.base=" + LOOKBACK_JVM_BASE_PROBE +
                         cmd.substr(std::string(LOOKBACK_JAVA).size()));
  auto [rc1, got] = Shell(std::string(LOOKBACK_JAVA) + " --patch-module java.base=" + out.string() +
                        cmd.substr(std::string(LOOKBACK_JAVA).size()));
  ASSERT_EQ(rc0, 0) << base;
  ASSERT_EQ(rc1, 0) << got;
  auto base_lines = Lines(base), got_lines = Lines(got);
  std::printf("  original:  %s\n  rewritten: %s\n", base_lines.back().c_str(), got_lines.back().c_str());
  for (const auto& l : got_lines)
    if (l.rfind("VERIFY", 0) == 0) ADD_FAILURE() << l;
  // Same classes link; and the probes ran.
  EXPECT_EQ(got_lines.back().substr(0, got_lines.back().find(" probe-")),
            base_lines.back().substr(0, base_lines.back().find(" probe-")));
  // The probes ran, balanced: what is entered and not yet exited is the few
  // frames active (on all threads) while LinkAll reads the counts.
  long long enters = 0, exits = 0;
  ASSERT_EQ(std::sscanf(got_lines.back().c_str() + got_lines.back().find("probe-"), "probe-enters %lld probe-exits %lld",
                        &enters, &exits),
            2);
  EXPECT_GT(enters, 1000000);
  EXPECT_GE(enters, exits);
  EXPECT_LT(enters - exits, 200);
}

}  // namespace
