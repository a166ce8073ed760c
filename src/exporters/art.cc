// Android method trace, version 3 (the .trace files of
// Debug.startMethodTracing, read by Android Studio, Perfetto's trace processor
// and dmtracedump). A text key, then binary records:
//
//   *version\n3\ndata-file-overflow=false\nclock=dual\nelapsed-time-usec=N\n
//   num-method-calls=N\nclock-call-overhead-nsec=0\nvm=art\npid=N\n
//   *threads\n<id>\t<name>\n...
//   *methods\n0x<method id>\t<class>\t<name>\t<signature>\t<source file>[\t<line>]\n...
//   *end\n
//   header, 32 bytes, little-endian: u32 magic 'SLOW' (0x574f4c53), u16 version 3,
//     u16 offset of the first record (32), u64 start time (µs, CLOCK_REALTIME),
//     u16 record size (14), zeros up to 32
//   records, 14 bytes: u16 thread id, u32 method id | action (0 enter, 1 exit,
//     2 unroll: left by an exception), u32 thread-CPU µs, u32 wall µs
//
// Clocks: the wall column is µs since the first exported event
// (ctx.origin_ns), which the header's start time places on CLOCK_REALTIME.
// The thread-CPU column is, as ART writes it, the thread's CPU time since its
// first record, µs: from the dump's CPU readings (CPU or SAMPLES section,
// model::CpuTimeline, off-CPU time placed in the thread's silences), so that
// Android Studio's thread time and `lookback import` see the waiting. A
// thread without readings (dumps of runtimes before format 6) gets its wall
// time there, as if it never waited. `clock=dual` (not `wall`) keeps the
// 14-byte records every reader of version 3 handles. 32 bits of µs cover 71
// minutes; later times saturate.
//
// Method ids are (index << 2), index from 1, one per function key: the low
// two bits carry the action. Frames whose exit never came (kSliceUnwound) end
// with action 2, as ART writes for frames an exception unwinds; frames still
// running at the dump end with a plain exit.
//
// Thread ids are 16 bits. A thread keeps its tid when it fits and no earlier
// thread took it; otherwise it gets the smallest free id and its name in
// *threads says "(tid N)".
//
// C++ names become ART's class/name/signature: for
// "ns::Widget<int>::draw(int, char const*) const", class "ns::Widget<int>",
// name "draw", signature "(int, char const*) const". A function outside any
// scope (extern "C", or unqualified) gets its module's file name as class, so
// viewers that print Class.method read "prog.main". A return type (printed for
// template functions) is dropped; a name without parameters (C functions)
// gets "()". Unresolved keys keep "module+0xoffset" as name. Source file and
// line come from debug info when present, otherwise the module's file name.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "exporters/exporters.h"
#include "exporters/java_names.h"
#include "exporters/output.h"
#include "model/cpu_time.h"
#include "symbolize/symbolizer.h"

namespace lookback::exporters {
namespace {

constexpr uint32_t kMagic = 0x574f4c53;  // "SLOW" little-endian
constexpr uint16_t kVersion = 3;
constexpr uint16_t kHeaderSize = 32;
constexpr uint16_t kRecordSize = 14;
constexpr uint32_t kActionEnter = 0, kActionExit = 1, kActionUnroll = 2;
constexpr int kActionBits = 2;

void Put16(std::string* out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void Put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void Put64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Tabs and line breaks separate fields and lines in the text key.
std::string Field(std::string s, const char* if_empty) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s.empty() ? std::string(if_empty) : s;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsOpening(char c) { return c == '(' || c == '<' || c == '[' || c == '{'; }
bool IsClosing(char c) { return c == ')' || c == '>' || c == ']' || c == '}'; }
bool IsIdentifier(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

struct CppName {
  std::string scope, name, signature;
};

// Splits a demangled name (see the file comment). Heuristic, never fails:
// whatever it cannot take apart stays in `name`.
CppName SplitCppName(const std::string& full) {
  CppName r;
  std::string head = full;
  // The parameter list: the parenthesised group closed by the last ')',
  // followed only by qualifiers (const, volatile, &, &&, noexcept).
  const size_t close = full.rfind(')');
  if (close != std::string::npos && full.find_first_of("()<>", close + 1) == std::string::npos) {
    int depth = 0;
    size_t open = std::string::npos;
    for (size_t i = close + 1; i-- > 0;) {
      if (full[i] == ')') ++depth;
      if (full[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    if (open != std::string::npos && open > 0) {
      r.signature = full.substr(open);
      head = full.substr(0, open);
    }
  }
  if (r.signature.empty()) r.signature = "()";

  // An operator's name holds symbols the scan below would misread.
  size_t name_at = std::string::npos;
  for (size_t at = head.rfind("operator"); at != std::string::npos; at = at == 0 ? std::string::npos : head.rfind("operator", at - 1)) {
    const size_t after = at + 8;
    if ((at == 0 || head[at - 1] == ':' || head[at - 1] == ' ') && (after == head.size() || !IsIdentifier(head[after]))) {
      name_at = at;
      break;
    }
  }
  // Otherwise: the name starts after the last "::" or space outside brackets
  // (a space there ends a return type).
  size_t scope_end = std::string::npos;  // where "::" before the name starts
  if (name_at == std::string::npos) {
    int depth = 0;
    name_at = 0;
    for (size_t i = head.size(); i-- > 0;) {
      const char c = head[i];
      if (IsClosing(c)) {
        ++depth;
      } else if (IsOpening(c)) {
        if (depth > 0) --depth;
      } else if (depth == 0 && c == ':' && i > 0 && head[i - 1] == ':') {
        name_at = i + 1;
        scope_end = i - 1;
        break;
      } else if (depth == 0 && c == ' ') {
        name_at = i + 1;
        break;
      }
    }
  } else if (name_at >= 2 && head.compare(name_at - 2, 2, "::") == 0) {
    scope_end = name_at - 2;
  }
  r.name = head.substr(name_at);
  if (scope_end != std::string::npos) {
    // Drop a return type in front of the scope: the last space outside brackets.
    std::string scope = head.substr(0, scope_end);
    int depth = 0;
    for (size_t i = scope.size(); i-- > 0;) {
      const char c = scope[i];
      if (IsClosing(c)) ++depth;
      else if (IsOpening(c) && depth > 0) --depth;
      else if (depth == 0 && c == ' ') {
        scope = scope.substr(i + 1);
        break;
      }
    }
    r.scope = scope;
  }
  return r;
}

// "com.example.Outer$Inner" -> "Outer.java": javac's convention (the dump has
// no SourceFile attribute).
std::string JavaSourceFile(const std::string& cls) {
  std::string simple = cls.substr(cls.rfind('.') + 1);
  simple = simple.substr(0, simple.find('$'));
  return simple.empty() ? "" : simple + ".java";
}

class ArtSink : public model::TraceSink {
 public:
  explicit ArtSink(ExportOptions o) : o_(std::move(o)) {}
  ~ArtSink() override {
    if (records_ != nullptr) fclose(records_);
  }

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    PlanThreadIds();
    if (Status s = file_.Open(o_.out); !s.ok()) return s;
    // The key must precede the records and lists every method, known only at
    // the end: the records wait in an anonymous temporary file.
    records_ = tmpfile();
    if (records_ == nullptr) return Status::Error(fmt::format("cannot create a temporary file for '{}': {}", o_.out, strerror(errno)));
    return Status::Ok();
  }

  void BeginThread(const format::ThreadInfo& t) override {
    const size_t index = static_cast<size_t>(&t - ctx_->dump->threads.data());
    thread_id_ = index < thread_ids_.size() ? thread_ids_[index] : 0;
    std::string name = Field(t.name, "thread");
    if (thread_id_ != t.tid) name += fmt::format(" (tid {})", t.tid);
    threads_ += fmt::format("{}\t{}\n", thread_id_, name);
    last_us_ = 0;
    cpu_ = model::CpuTimeline::ForWalkedThread(*ctx_, t);
    cpu_first_ = true;
    last_cpu_us_ = 0;
  }

  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t) override { Record(MethodId(key) | kActionEnter, ts); }

  void Exit(uint64_t key, int64_t ts, uint32_t, uint8_t flags) override {
    Record(MethodId(key) | ((flags & model::kSliceUnwound) ? kActionUnroll : kActionExit), ts);
  }

  void EndThread(const model::ThreadSummary&) override {}

  Status End() override {
    if (records_ == nullptr) return Status::Error(fmt::format("'{}': nothing to write (the export did not begin)", o_.out));
    FlushRecords();
    if (records_error_ != 0) return Status::Error(fmt::format("cannot write the records of '{}': {}", o_.out, strerror(records_error_)));

    const format::ProcessInfo& p = ctx_->dump->process;
    std::string key = fmt::format(
        "*version\n{}\ndata-file-overflow=false\nclock=dual\nelapsed-time-usec={}\nnum-method-calls={}\n"
        "clock-call-overhead-nsec=0\nvm=art\npid={}\n*threads\n",
        kVersion, elapsed_us_, record_count_, p.pid);
    key += threads_;
    key += "*methods\n";
    for (size_t i = 0; i < methods_.size(); ++i) AppendMethod(&key, (i + 1) << kActionBits, methods_[i]);
    key += "*end\n";
    file_.Write(key);

    // Start time: the realtime clock at ctx.origin_ns, from the dump's pair of
    // realtime/monotonic readings (0 when the dump has none).
    uint64_t start_us = 0;
    const int64_t back = ctx_->dump_ns - ctx_->origin_ns;
    if (p.dump_realtime_ns != 0 && back >= 0 && static_cast<uint64_t>(back) <= p.dump_realtime_ns)
      start_us = (p.dump_realtime_ns - static_cast<uint64_t>(back)) / 1000;
    std::string header;
    Put32(&header, kMagic);
    Put16(&header, kVersion);
    Put16(&header, kHeaderSize);
    Put64(&header, start_us);
    Put16(&header, kRecordSize);
    header.resize(kHeaderSize, '\0');
    file_.Write(header);

    rewind(records_);
    std::vector<char> chunk(1 << 16);
    size_t n = 0;
    while ((n = fread(chunk.data(), 1, chunk.size(), records_)) > 0) file_.Write(chunk.data(), n);
    if (ferror(records_)) return Status::Error(fmt::format("cannot read back the records of '{}': {}", o_.out, strerror(errno)));
    return file_.Commit();
  }

 private:
  // Thread ids in the file, by index in ctx.dump->threads (see the file comment).
  void PlanThreadIds() {
    const auto& threads = ctx_->dump->threads;
    thread_ids_.assign(threads.size(), 0);
    std::set<uint32_t> used;
    for (size_t i = 0; i < threads.size(); ++i) {
      const uint32_t tid = threads[i].tid;
      if (tid != 0 && tid <= 0xffff && used.insert(tid).second) thread_ids_[i] = static_cast<uint16_t>(tid);
    }
    uint32_t next = 1;
    for (size_t i = 0; i < threads.size(); ++i) {
      if (thread_ids_[i] != 0) continue;
      while (used.count(next) != 0) ++next;
      // More than 65535 threads: ids wrap and repeat, the key keeps the tids.
      thread_ids_[i] = static_cast<uint16_t>(next <= 0xffff ? next : 1 + next % 0xffff);
      used.insert(next);
    }
  }

  uint32_t MethodId(uint64_t key) {
    auto [it, added] = method_index_.try_emplace(key, static_cast<uint32_t>(methods_.size() + 1));
    if (added) methods_.push_back(key);
    return it->second << kActionBits;
  }

  void AppendMethod(std::string* out, uint64_t id, uint64_t key) {
    const symbolize::Symbol* sym = ctx_->symbols ? &ctx_->symbols->Lookup(key) : nullptr;
    const std::string module = sym ? BaseName(sym->module) : std::string();
    CppName n;
    JavaMethodName java;
    if ((key & format::kKeyMethodTag) != 0 && SplitJavaMethod(KeyName(*ctx_, key), &java)) {
      // A JVM method (the agent names it in PrettyMethod style): ART's own
      // columns, class, name and descriptor, as Android Studio reads them.
      fmt::format_to(std::back_inserter(*out), "{:#x}\t{}\t{}\t{}\t{}\n", id, java.cls, java.name, java.descriptor,
                     Field(JavaSourceFile(java.cls), "?"));
      return;
    }
    if (sym && sym->resolved) {
      n = SplitCppName(sym->name);
    } else {
      n.name = KeyName(*ctx_, key);
      n.signature = "()";
    }
    if (n.scope.empty()) n.scope = module;
    std::string file = sym && !sym->file.empty() ? BaseName(sym->file) : module;
    fmt::format_to(std::back_inserter(*out), "{:#x}\t{}\t{}\t{}\t{}", id, Field(n.scope, "?"), Field(n.name, "?"),
                   Field(n.signature, "()"), Field(file, "?"));
    if (sym && !sym->file.empty() && sym->line > 0) fmt::format_to(std::back_inserter(*out), "\t{}", sym->line);
    out->push_back('\n');
  }

  void Record(uint32_t method_action, int64_t ts) {
    const int64_t rel = std::max<int64_t>(0, ts - ctx_->origin_ns) / 1000;
    const uint32_t us = static_cast<uint32_t>(std::min<int64_t>(rel, 0xffffffff));
    last_us_ = std::max(last_us_, us);  // non-decreasing, even if the TSC stepped back
    elapsed_us_ = std::max(elapsed_us_, last_us_);
    Put16(&buf_, thread_id_);
    Put32(&buf_, method_action);
    Put32(&buf_, ThreadCpuUs(ts));
    Put32(&buf_, last_us_);
    ++record_count_;
    if (buf_.size() >= (1u << 16)) FlushRecords();
  }

  // The thread's CPU µs since its first record (the file comment), never
  // decreasing, and never more than the wall time since then.
  uint32_t ThreadCpuUs(int64_t ts) {
    if (cpu_first_) first_us_ = last_us_;
    if (!cpu_.known()) return last_us_;
    const double cpu = cpu_.CpuAt(ts);
    if (cpu_first_) cpu_base_ = cpu;
    cpu_first_ = false;
    const double us = std::max(0.0, (cpu - cpu_base_) / 1000.0);
    const uint32_t bound = last_us_ - first_us_;
    last_cpu_us_ = std::max(last_cpu_us_, static_cast<uint32_t>(std::min(us, static_cast<double>(bound))));
    return last_cpu_us_;
  }

  void FlushRecords() {
    if (records_ != nullptr && records_error_ == 0 && !buf_.empty() &&
        fwrite(buf_.data(), 1, buf_.size(), records_) != buf_.size())
      records_error_ = errno ? errno : EIO;
    buf_.clear();
  }

  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  OutputFile file_;
  FILE* records_ = nullptr;
  int records_error_ = 0;
  std::string buf_, threads_;
  std::vector<uint16_t> thread_ids_;
  uint16_t thread_id_ = 0;
  uint32_t last_us_ = 0, elapsed_us_ = 0;
  model::CpuTimeline cpu_;  // the current thread's CPU time (file comment)
  bool cpu_first_ = true;   // no record of the current thread yet
  double cpu_base_ = 0;     // its CPU ns at its first record
  uint32_t first_us_ = 0, last_cpu_us_ = 0;
  uint64_t record_count_ = 0;
  std::unordered_map<uint64_t, uint32_t> method_index_;  // key -> index (from 1)
  std::vector<uint64_t> methods_;                        // index-1 -> key
};

}  // namespace

std::unique_ptr<model::TraceSink> MakeArtSink(const ExportOptions& o) { return std::make_unique<ArtSink>(o); }

}  // namespace lookback::exporters
