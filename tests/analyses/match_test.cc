// Signatures (`lookback match`): the file format and its line-numbered
// errors, the name patterns, the chain semantics on hand-fed streams, and the
// planted "sleep after a binder call" chain of tests/programs/timing.cc found
// exactly where it is.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../integration/harness.h"
#include "analyses/signatures.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

using analyses::ParseSignatures;
using analyses::SignatureMatcher;

constexpr int64_t kMs = 1000000;

std::string TestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "-" + info->name();
}

std::string SourceFile(const std::string& rel) { return std::string(LOOKBACK_SOURCE_DIR) + "/" + rel; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ---- names and durations -------------------------------------------------------

TEST(MatchNames, GlobsSpanTheWholeName) {
  using analyses::GlobMatch;
  EXPECT_TRUE(GlobMatch("on_click", "on_click"));
  EXPECT_FALSE(GlobMatch("on_click", "on_click2"));
  EXPECT_TRUE(GlobMatch("*_parse", "slow_parse"));
  EXPECT_TRUE(GlobMatch("*parse*", "fast_parse"));
  EXPECT_TRUE(GlobMatch("?ast_parse", "fast_parse"));
  EXPECT_TRUE(GlobMatch("[fs]*_parse", "slow_parse"));
  EXPECT_FALSE(GlobMatch("[!fs]*_parse", "slow_parse"));
  EXPECT_TRUE(GlobMatch("[a-g]ast*", "fast_parse"));
  EXPECT_TRUE(GlobMatch("a*b*c", "axxbyyc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "axxbyy"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_FALSE(GlobMatch("?", ""));
}

TEST(MatchNames, DemangledNamesMatchInFullWithoutParametersOrShort) {
  using analyses::NameMatches;
  using analyses::ShortName;
  using analyses::WithoutParameters;
  const std::string n = "ns::Foo<int>::bar(std::vector<int, std::allocator<int> > const&) const";
  EXPECT_EQ(WithoutParameters(n), "ns::Foo<int>::bar");
  EXPECT_EQ(ShortName(n), "bar");
  EXPECT_EQ(ShortName("(anonymous namespace)::Helper::run()"), "run");
  EXPECT_EQ(WithoutParameters("(anonymous namespace)::Helper::run()"), "(anonymous namespace)::Helper::run");
  EXPECT_EQ(ShortName("std::vector<int>::emplace_back<int&>(int&)"), "emplace_back");
  EXPECT_EQ(ShortName("ns::Foo::operator()(int)"), "operator()");
  EXPECT_EQ(ShortName("ns::operator<<(std::ostream&, X const&)"), "operator<<");
  EXPECT_EQ(ShortName("plain_c_function"), "plain_c_function");
  EXPECT_EQ(ShortName("libfoo.so+0x1234"), "libfoo.so+0x1234");
  EXPECT_EQ(WithoutParameters("f() [clone .cold]"), "f");
  // Template functions carry their return type.
  const std::string t = "unsigned long (anonymous namespace)::Level<9>(int)";
  EXPECT_EQ(WithoutParameters(t), "(anonymous namespace)::Level<9>");
  EXPECT_EQ(analyses::LastComponent(t), "Level<9>");
  EXPECT_EQ(ShortName(t), "Level");
  EXPECT_EQ(WithoutParameters("ns::Foo::operator new(unsigned long)"), "ns::Foo::operator new");
  EXPECT_TRUE(NameMatches("Level<9>", t));
  EXPECT_TRUE(NameMatches("Level", t));
  EXPECT_TRUE(NameMatches("Level<[1-3]>", "unsigned long (anonymous namespace)::Level<2>(int)"));
  EXPECT_TRUE(NameMatches("(anonymous namespace)::Level<*>", t));
  EXPECT_FALSE(NameMatches("Level<8>", t));
  EXPECT_TRUE(NameMatches("bar", n));
  EXPECT_TRUE(NameMatches("*::bar", n));
  EXPECT_TRUE(NameMatches("ns::Foo<int>::bar", n));
  EXPECT_TRUE(NameMatches("*bar(std::vector*", n));
  EXPECT_FALSE(NameMatches("Foo::bar", n));
  EXPECT_FALSE(NameMatches("ba", n));
}

TEST(MatchNames, DurationsNeedAUnit) {
  int64_t ns = 0;
  EXPECT_TRUE(analyses::ParseDuration("10ms", &ns).ok());
  EXPECT_EQ(ns, 10 * kMs);
  EXPECT_TRUE(analyses::ParseDuration("1.5s", &ns).ok());
  EXPECT_EQ(ns, 1500 * kMs);
  EXPECT_TRUE(analyses::ParseDuration("250us", &ns).ok());
  EXPECT_EQ(ns, 250000);
  EXPECT_TRUE(analyses::ParseDuration("800 ns", &ns).ok());
  EXPECT_EQ(ns, 800);
  EXPECT_FALSE(analyses::ParseDuration("10", &ns).ok());
  EXPECT_FALSE(analyses::ParseDuration("-1ms", &ns).ok());
  EXPECT_FALSE(analyses::ParseDuration("fast", &ns).ok());
}

// ---- the file format -----------------------------------------------------------

TEST(MatchFile, ParsesBlocksKeysAndComments) {
  const auto f = ParseSignatures(
      "# leading comment\n"
      "\n"
      "name: sleep-after-binder   # trailing comment\n"
      "  description: blocks on reply#2  # not this\n"
      "  chain: on_click >> binder_call > wait_reply\n"
      "  min: 10ms\n"
      "\n"
      "Name: templated\n"
      "chain: std::vector<int, std::allocator<int> >::push_back > *alloc*\n"
      "min-top: 1.5s\n"
      "min-last: 20us\n",
      "t.sig");
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f.value().size(), 2u);
  const auto& a = f.value()[0];
  EXPECT_EQ(a.name, "sleep-after-binder");
  EXPECT_EQ(a.description, "blocks on reply#2");
  EXPECT_EQ(a.line, 3);
  ASSERT_EQ(a.chain.size(), 3u);
  EXPECT_EQ(a.chain[0].pattern, "on_click");
  EXPECT_EQ(a.chain[1].pattern, "binder_call");
  EXPECT_FALSE(a.chain[1].direct);
  EXPECT_EQ(a.chain[2].pattern, "wait_reply");
  EXPECT_TRUE(a.chain[2].direct);
  EXPECT_EQ(a.min_last_ns, 10 * kMs);
  EXPECT_EQ(a.min_top_ns, 0);
  EXPECT_EQ(analyses::ChainText(a), "on_click >> binder_call > wait_reply");
  const auto& b = f.value()[1];
  ASSERT_EQ(b.chain.size(), 2u);
  EXPECT_EQ(b.chain[0].pattern, "std::vector<int, std::allocator<int> >::push_back");
  EXPECT_EQ(b.min_top_ns, 1500 * kMs);
  EXPECT_EQ(b.min_last_ns, 20000);
}

TEST(MatchFile, ErrorsNameTheFileAndLine) {
  const struct {
    const char* text;
    const char* error;
  } cases[] = {
      {"name: a\nchain: x\nmni: 3ms\n", "bad.sig:3: unknown key 'mni'"},
      {"name: a\n\n# c\nchain: x >>\n", "bad.sig:4: missing pattern after '>>'"},
      {"name: a\nchain: x > > y\n", "bad.sig:2: missing pattern after '>'"},
      {"name: a\nchain: >> y\n", "bad.sig:2: the chain starts with an operator"},
      {"name: a\nchain: x >>y\n", "bad.sig:2: 'x >>y': write '>' and '>>' with blanks on both sides"},
      {"name: a\nchain: x\nmin: 10 parsecs\n", "bad.sig:3: bad duration '10 parsecs'"},
      {"name: a\nchain: x\nmin: 10\n", "bad.sig:3: bad duration '10'"},
      {"chain: x\n", "bad.sig:1: 'chain:' before any 'name:'"},
      {"name: a\nmin: 1ms\n\nname: b\nchain: y\n", "bad.sig:1: signature 'a' has no 'chain:'"},
      {"name: a\nchain: x\nname: b\nchain: y\n\nname: b\n", "bad.sig:6: signature 'b' is defined twice"},
      {"name: a\nchain: x\nchain: y\n", "bad.sig:3: 'chain:' given twice for signature 'a'"},
      {"name: a\nchain: x[ab\n", "bad.sig:2: unclosed '[' in pattern 'x[ab'"},
      {"name: a\nchain on_click\n", "bad.sig:2: expected 'key: value'"},
      {"name:\n", "bad.sig:1: empty signature name"},
      {"# only comments\n\n", "bad.sig:2: no signature in the file"},
      {"", "bad.sig:1: no signature in the file"},
  };
  for (const auto& c : cases) {
    const auto f = ParseSignatures(c.text, "bad.sig");
    ASSERT_FALSE(f.ok()) << "for:\n" << c.text;
    EXPECT_EQ(f.error().message.rfind(c.error, 0), 0u) << "for:\n" << c.text << "got: " << f.error().message;
  }
}

TEST(MatchFile, ShippedAndDocumentedExamplesParse) {
  for (const char* name : {"timing.sig", "android.sig"}) {
    const auto f = analyses::LoadSignatures(SourceFile("tests/data/signatures/") + name);
    ASSERT_TRUE(f.ok()) << name << ": " << f.error().message;
    EXPECT_GE(f.value().size(), 4u) << name;
  }
  // Every ```sig block of docs/analyses.md's "lookback match" section.
  const std::string doc = Slurp(SourceFile("docs/analyses.md"));
  const size_t section = doc.find("\n## lookback match");
  ASSERT_NE(section, std::string::npos);
  const size_t next = doc.find("\n## ", section + 1);
  const std::string text = doc.substr(section, next == std::string::npos ? std::string::npos : next - section);
  int blocks = 0;
  for (size_t at = 0; (at = text.find("```sig\n", at)) != std::string::npos;) {
    at += 7;
    const size_t end = text.find("```", at);
    ASSERT_NE(end, std::string::npos);
    const auto f = ParseSignatures(text.substr(at, end - at), "docs");
    ASSERT_TRUE(f.ok()) << f.error().message;
    ++blocks;
    at = end + 3;
  }
  EXPECT_GE(blocks, 1);
  EXPECT_EQ(analyses::LoadSignatures("/nonexistent/x.sig").error().message.rfind("/nonexistent/x.sig: cannot read", 0), 0u);
}

// ---- chain semantics on hand-fed streams -----------------------------------------
// Without a symbolizer, function k is named "0xk".

struct Feed {
  explicit Feed(const std::string& sig_text) {
    auto f = ParseSignatures(sig_text, "t.sig");
    if (!f.ok()) {  // go on with no signature: the test fails on what it then finds
      ADD_FAILURE() << f.error().message;
      f = std::vector<analyses::Signature>{};
    }
    m = std::make_unique<SignatureMatcher>(std::move(f.value()));
    EXPECT_TRUE((m->Begin(ctx)).ok());
    format::ThreadInfo t;
    t.tid = 7;
    m->BeginThread(t);
  }
  // "a(b c(d))" style: Call(key, start, end) in nesting order is awkward;
  // use explicit Enter/Exit instead.
  void In(uint64_t key, int64_t ts) { m->Enter(key, ts, depth++, 0); }
  void Out(uint64_t key, int64_t ts, uint8_t flags = 0) { m->Exit(key, ts, --depth, flags); }
  const analyses::SignatureStats& Stats(size_t i) {
    if (!ended) {
      m->EndThread({});
      EXPECT_TRUE((m->End()).ok());
      ended = true;
    }
    return m->stats()[i];
  }
  model::ExportContext ctx;
  std::unique_ptr<SignatureMatcher> m;
  uint32_t depth = 0;
  bool ended = false;
};

TEST(MatchStream, DirectChildNeedsTheParentDescendantAnyAncestor) {
  Feed f("name: direct\nchain: 0xa > 0xb\n\nname: any\nchain: 0xa >> 0xb\n");
  f.In(0xa, 0);
  f.In(0xc, 1);
  f.In(0xb, 2);
  f.Out(0xb, 5);  // a > c > b: only ">>"
  f.Out(0xc, 6);
  f.In(0xb, 7);
  f.Out(0xb, 17);  // a > b: both
  f.Out(0xa, 20);
  f.In(0xb, 30);
  f.Out(0xb, 40);  // b alone: neither
  EXPECT_EQ(f.Stats(0).matches, 1u);
  EXPECT_EQ(f.Stats(0).total_ns, 10);
  EXPECT_EQ(f.Stats(1).matches, 2u);
  EXPECT_EQ(f.Stats(1).total_ns, 13);
  EXPECT_EQ(f.Stats(1).max_ns, 10);
  EXPECT_EQ(f.Stats(1).worst.stack, (std::vector<std::string>{"0xa", "0xb"}));
  EXPECT_EQ(f.Stats(1).worst.tid, 7u);
}

TEST(MatchStream, RecursionCountsEachLastFrameOnceFromTheOutermostFirst) {
  Feed f("name: r\nchain: 0xa >> 0xb\n");
  f.In(0xa, 0);
  f.In(0xa, 1);
  f.In(0xa, 2);
  f.In(0xb, 3);
  f.Out(0xb, 4);
  f.Out(0xa, 5);
  f.Out(0xa, 6);
  f.Out(0xa, 7);
  EXPECT_EQ(f.Stats(0).matches, 1u);
  EXPECT_EQ(f.Stats(0).worst.stack, (std::vector<std::string>{"0xa", "0xa", "0xa", "0xb"}));
}

TEST(MatchStream, LongerChainsFollowEveryStep) {
  Feed f("name: three\nchain: 0x1 >> 0x2 > 0x3\n");
  f.In(0x1, 0);
  f.In(0x3, 1);  // 3 without 2 above
  f.Out(0x3, 2);
  f.In(0x2, 3);
  f.In(0x4, 4);
  f.In(0x3, 5);  // 2 > 4 > 3: not direct
  f.Out(0x3, 6);
  f.Out(0x4, 7);
  f.In(0x3, 8);  // 1 >> 2 > 3
  f.Out(0x3, 9);
  f.Out(0x2, 10);
  f.Out(0x1, 11);
  f.In(0x2, 12);  // no 1 above
  f.In(0x3, 13);
  f.Out(0x3, 14);
  f.Out(0x2, 15);
  EXPECT_EQ(f.Stats(0).matches, 1u);
  EXPECT_EQ(f.Stats(0).worst.ts_ns, 8);
}

TEST(MatchStream, MinFiltersTheLastFrameAndMinTopTheFirst) {
  Feed f(
      "name: last\nchain: 0xa >> 0xb\nmin: 10ns\n\n"
      "name: top50\nchain: 0xa >> 0xb\nmin-top: 50ns\n\n"
      "name: top200\nchain: 0xa >> 0xb\nmin-top: 200ns\n\n"
      "name: single\nchain: 0xb\nmin-top: 10ns\n");
  f.In(0xa, 0);    // outer a: 100 ns
  f.In(0xa, 10);   // inner a: 10 ns, too short alone for top50
  f.In(0xb, 12);
  f.Out(0xb, 17);  // b: 5 ns
  f.Out(0xa, 20);
  f.In(0xb, 30);
  f.Out(0xb, 45);  // b: 15 ns
  f.Out(0xa, 100);
  EXPECT_EQ(f.Stats(0).matches, 1u);  // only the 15 ns b
  EXPECT_EQ(f.Stats(0).total_ns, 15);
  EXPECT_EQ(f.Stats(1).matches, 2u);  // the outer a lasts 100 ns
  EXPECT_EQ(f.Stats(1).total_ns, 20);
  EXPECT_EQ(f.Stats(2).matches, 0u);
  EXPECT_EQ(f.Stats(3).matches, 1u);  // single step: the frame is its own top
  EXPECT_EQ(f.Stats(3).max_ns, 15);
}

TEST(MatchStream, OpenFramesAreMeasuredToTheEndAndCounted) {
  Feed f("name: n\nchain: 0xa > 0xb\n");
  f.In(0xa, 0);
  f.In(0xb, 10);
  f.Out(0xb, 50, model::kSliceOpen);
  f.Out(0xa, 50, model::kSliceOpen);
  EXPECT_EQ(f.Stats(0).matches, 1u);
  EXPECT_EQ(f.Stats(0).open, 1u);
  EXPECT_EQ(f.Stats(0).max_ns, 40);
}

// ---- the timing program ----------------------------------------------------------

std::string RecordTiming() {
  const std::string dir = FreshDir("match-" + TestName());
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", Program("timing")}, {}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto dumps = Dumps(dir + "/dumps");
  EXPECT_EQ(dumps.size(), 1u) << r.err;
  return dumps.size() == 1 ? dumps[0] : std::string();
}

std::vector<analyses::SignatureStats> MatchDump(const std::string& dump, const std::string& sig_text) {
  auto f = ParseSignatures(sig_text, "t.sig");
  if (!f.ok()) {  // go on with no signature: the test fails on what it then finds
    ADD_FAILURE() << f.error().message;
    f = std::vector<analyses::Signature>{};
  }
  format::Dump d = MustOpen(dump);
  symbolize::Symbolizer sym(d);
  SignatureMatcher m(std::move(f.value()));
  model::WalkResult res = model::Walk(d, sym, {}, m);
  EXPECT_TRUE(res.status.ok());
  return m.stats();
}

TEST(MatchTiming, FindsThePlantedBinderChainTwiceAndNothingElse) {
  const std::string dump = RecordTiming();
  ASSERT_FALSE(dump.empty());
  const auto st = MatchDump(dump, Slurp(SourceFile("tests/data/signatures/timing.sig")));
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].matches, 2u);  // sleep-after-binder
  EXPECT_EQ(st[0].open, 0u);
  EXPECT_GE(st[0].max_ns, 20 * kMs);
  EXPECT_LE(st[0].max_ns, 200 * kMs);  // sleeps end late on a loaded machine
  EXPECT_GE(st[0].total_ns, 40 * kMs);
  EXPECT_LE(st[0].total_ns, 400 * kMs);
  EXPECT_EQ(st[0].worst.stack, (std::vector<std::string>{"on_click", "binder_call", "wait_reply"}));
  EXPECT_EQ(st[0].worst.thread, "timing");
  for (size_t i = 1; i < st.size(); ++i) EXPECT_EQ(st[i].matches, 0u) << "signature " << i;
}

TEST(MatchTiming, RelationsGlobsAndThresholdsOnARealDump) {
  const std::string dump = RecordTiming();
  ASSERT_FALSE(dump.empty());
  const auto st = MatchDump(dump,
                            "name: direct-skips-a-level\nchain: on_click > wait_reply\n"
                            "name: any-depth\nchain: on_click >> wait_reply\n"
                            "name: idle\nchain: idle_tick > wait_reply\n"
                            "name: parses-in-render\nchain: render > *_parse\n"
                            "name: slow-parse\nchain: handle_request >> slow_parse\nmin: 25ms\n"
                            "name: keep-15ms\nchain: on_click >> binder_call > wait_reply\nmin: 15ms\n"
                            "name: drop-1s\nchain: on_click >> binder_call > wait_reply\nmin: 1s\n"
                            "name: top-keep\nchain: on_click >> wait_reply\nmin-top: 15ms\n"
                            "name: top-drop\nchain: on_click >> wait_reply\nmin-top: 200ms\n"
                            "name: whole-program\nchain: main >> idle_tick\n");
  ASSERT_EQ(st.size(), 10u);
  EXPECT_EQ(st[0].matches, 0u);
  EXPECT_EQ(st[1].matches, 2u);
  EXPECT_EQ(st[2].matches, 0u);
  EXPECT_EQ(st[3].matches, 18u);  // 3 slow_parse + 15 fast_parse
  EXPECT_EQ(st[4].matches, 3u);
  EXPECT_GE(st[4].total_ns, 90 * kMs);
  EXPECT_LE(st[4].total_ns, 400 * kMs);
  EXPECT_EQ(st[5].matches, 2u);
  EXPECT_EQ(st[6].matches, 0u);
  EXPECT_EQ(st[7].matches, 2u);
  EXPECT_EQ(st[8].matches, 0u);
  EXPECT_EQ(st[9].matches, 50u);
}

TEST(MatchCli, PrintsTableAndJsonAndRejectsBadFiles) {
  const std::string dump = RecordTiming();
  ASSERT_FALSE(dump.empty());
  const std::string sig = SourceFile("tests/data/signatures/timing.sig");
  RunResult r = RunProgram({Cli(), "match", dump, "--signatures", sig});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sleep-after-binder        2 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on_click > binder_call > wait_reply"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wait-in-idle-tick         0 "), std::string::npos) << r.out;

  r = RunProgram({Cli(), "match", dump, "-s", sig, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("{\"name\":\"sleep-after-binder\",\"chain\":\"on_click >> binder_call > wait_reply\""),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"matches\":2,\"open\":0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"stack\":[\"on_click\",\"binder_call\",\"wait_reply\"]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"name\":\"wait-in-idle-tick\",\"chain\":\"idle_tick > wait_reply\",\"min_ns\":0,"
                       "\"min_top_ns\":0,\"matches\":0"),
            std::string::npos)
      << r.out;

  // --thread by name keeps the main thread; an unknown one is an error.
  r = RunProgram({Cli(), "match", dump, "-s", sig, "--thread", "timing"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunProgram({Cli(), "match", dump, "-s", sig, "--thread", "nope"});
  EXPECT_EQ(r.exit_code, 1);

  const std::string dir = FreshDir("match-bad-" + TestName());
  const std::string bad = dir + "/bad.sig";
  std::ofstream(bad) << "# broken\nname: x\nchain: on_click >>\n";
  r = RunProgram({Cli(), "match", dump, "-s", bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lookback: " + bad + ":3: missing pattern after '>>'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = RunProgram({Cli(), "match", dump, "-s", dir + "/missing.sig"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.sig: cannot read"), std::string::npos) << r.err;
  r = RunProgram({Cli(), "match", dump, "-s", sig, "--format", "xml"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace lookback::testing
