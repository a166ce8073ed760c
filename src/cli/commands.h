// The CLI's subcommands: each file cmd_<name>.cc defines one Setup function
// that declares its options on `sub` and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace lookback::cli {

// How a subcommand ended: the CLI's error convention. main prints the
// message as "lookback: MESSAGE" and turns the kind into the exit code, in
// one place (ExitCode in main.cc):
//   kOk 0, kError 1 (the work failed: a bad dump, no process, I/O),
//   kUsage 2 (the command line was wrong), kPartial 3 (sql/export: some dumps
//   were unreadable and skipped, the rest written), kProgram (record: the
//   traced program's own exit status, passed through).
// An empty message means nothing more to say (already said, or success).
class [[nodiscard]] Outcome {
 public:
  enum class Kind : uint8_t { kOk, kError, kUsage, kPartial, kProgram };
  Outcome() = default;
  static Outcome Ok() { return {}; }
  static Outcome Error(std::string message = "") { return {Kind::kError, std::move(message), 0}; }
  static Outcome Usage(std::string message = "") { return {Kind::kUsage, std::move(message), 0}; }
  static Outcome Partial(std::string message) { return {Kind::kPartial, std::move(message), 0}; }
  static Outcome Program(int exit_status) { return {Kind::kProgram, "", exit_status}; }
  static Outcome Of(const Status& s) { return s.ok() ? Ok() : Error(s.message()); }  // a failed Status: kError

  bool ok() const { return kind_ == Kind::kOk; }
  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  int program_status() const { return program_status_; }

 private:
  Outcome(Kind kind, std::string message, int program_status)
      : kind_(kind), message_(std::move(message)), program_status_(program_status) {}
  Kind kind_ = Kind::kOk;
  std::string message_;
  int program_status_ = 0;
};

using Runner = std::function<Outcome()>;
using SetupFn = Runner (*)(CLI::App* sub);

Runner SetupRecord(CLI::App* sub);
Runner SetupDump(CLI::App* sub);
Runner SetupInfo(CLI::App* sub);
Runner SetupEvents(CLI::App* sub);
Runner SetupConvert(CLI::App* sub);
Runner SetupVerify(CLI::App* sub);
Runner SetupReport(CLI::App* sub);
Runner SetupChains(CLI::App* sub);
Runner SetupDiff(CLI::App* sub);
Runner SetupMatch(CLI::App* sub);
Runner SetupSql(CLI::App* sub);
Runner SetupAttach(CLI::App* sub);
Runner SetupDetach(CLI::App* sub);
Runner SetupExport(CLI::App* sub);
Runner SetupImport(CLI::App* sub);

// The exit code of an outcome: the one mapping.
int ExitCode(const Outcome& outcome);

// "lookback: <message>" on stderr, for what does not end the command (a dump
// skipped, a warning); what ends it is an Outcome.
void Warn(const std::string& message);

}  // namespace lookback::cli
