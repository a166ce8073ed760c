// lookback command-line entry point: an explicit table of subcommands.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "format/format.h"
#include "runtime/ring_abi.h"

namespace lookback::cli {

void Warn(const std::string& message) { fprintf(stderr, "lookback: %s\n", message.c_str()); }

int ExitCode(const Outcome& outcome) {
  switch (outcome.kind()) {
    case Outcome::Kind::kOk: return 0;
    case Outcome::Kind::kError: return 1;
    case Outcome::Kind::kUsage: return 2;
    case Outcome::Kind::kPartial: return 3;
    case Outcome::Kind::kProgram: return outcome.program_status();
  }
  return 1;
}

namespace {
struct Command {
  const char* name;
  const char* help;
  SetupFn setup;
};
const Command kCommands[] = {
    {"record", "Run a program with the recorder preloaded; dumps land in --dir", SetupRecord},
    {"dump", "Ask a running traced process to write a dump now", SetupDump},
    {"attach", "Trace a running JVM that was started without lookback", SetupAttach},
    {"detach", "Give an attached JVM its original classes back", SetupDetach},
    {"info", "Show what a dump holds: process, threads, clock, where each thread was", SetupInfo},
    {"events", "Print a dump's decoded entry/exit events, one per line", SetupEvents},
    {"import", "Turn Android traces (ART .trace, Nanoscope) into dumps every command reads", SetupImport},
    {"convert", "Convert a dump to Perfetto, Nanoscope, Chrome JSON, speedscope, folded stacks or ART", SetupConvert},
    {"verify", "Check a dump: report every problem with its offset, decode what can be decoded", SetupVerify},
    {"report", "Per-function calls, inclusive and self time: where the time went", SetupReport},
    {"chains", "The longest call chains and the critical path of the slowest frame", SetupChains},
    {"diff", "Functions whose self and inclusive time changed most between two dumps", SetupDiff},
    {"match", "Find known-bad call chains described in a signature file", SetupMatch},
    {"sql", "Export dumps' threads, functions and calls to one SQLite database", SetupSql},
    {"export", "Append dumps to a Parquet dataset (Hive-partitioned) for DuckDB, Spark, Trino, ClickHouse", SetupExport},
};
}  // namespace

}  // namespace lookback::cli

int main(int argc, char** argv) {
  using namespace lookback::cli;
  CLI::App app{"lookback: always-on method tracing, dumped just in time", "lookback"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "lookback 0.1.0 (dump format " + std::to_string(lookback::format::kDumpVersion) +
                                        ", ring ABI " + std::to_string(LOOKBACK_RING_ABI) + ")");
  Runner runner;
  // Only the command asked for is set up (with all its options) when argv[1]
  // names one: `lookback record` starts every traced program, and setting
  // up the other fourteen took about a millisecond of that. Anything else
  // (--help, a bare `lookback`, a misspelt command) sets up all of them, so
  // that help lists every command and a wrong name gets CLI11's message.
  const Command* only = nullptr;
  for (const auto& c : kCommands) {
    if (argc > 1 && std::string(argv[1]) == c.name) only = &c;
  }
  for (const auto& c : kCommands) {
    if (only != nullptr && only != &c) continue;
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    Runner r = c.setup(sub);
    sub->callback([r, &runner] { runner = r; });
  }
  // `lookback record [opts] -- prog args`: CLI11 would give everything after
  // "--" to the top-level app; record's prefix mode already stops at the
  // program's name, so the separator is dropped here.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);  // CLI11 takes them reversed
  if (argc > 1 && std::string(argv[1]) == "record") {
    for (auto it = args.rbegin(); it != args.rend(); ++it) {
      if (*it == "--") {
        args.erase(std::next(it).base());
        break;
      }
    }
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ExitCode(app.exit(e) == 0 ? Outcome::Ok() : Outcome::Usage());
  }
  if (!runner) {  // bare `lookback`: what it can do, as uftrace prints its usage
    fprintf(stderr, "%s", app.help().c_str());
    return ExitCode(Outcome::Usage());
  }
  const Outcome outcome = runner();
  if (!outcome.message().empty()) Warn(outcome.message());
  return ExitCode(outcome);
}
