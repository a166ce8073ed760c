// The CLI's subcommands: each file cmd_<name>.cc defines one Setup function
// that declares its options on `sub` and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace lookback::cli {

using Runner = std::function<int()>;
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

// Exit codes, decided here only.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the work failed (bad dump, no process, I/O)
inline constexpr int kExitUsage = 2;  // the command line was wrong
inline constexpr int kExitPartial = 3;  // sql/export: some dumps were unreadable and skipped, the rest written

// "lookback: <message>" on stderr.
void Fail(const std::string& message);

}  // namespace lookback::cli
