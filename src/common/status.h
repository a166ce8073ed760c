// The reader side's one error convention (shared/style.md, "errors as
// values at boundaries"; Perfetto's base::Status is the model):
//   - an operation that makes nothing returns Status: ok, or a message that
//     says what failed and names the file, flag or input it failed on;
//   - one that makes a value returns Result<T> (result.h), whose Error also
//     carries the byte offset where an untrusted input was found wrong.
// Both are [[nodiscard]]: an error is handled or passed on, never dropped by
// accident. Exceptions are not used; the CLI turns an error into an exit
// code in one place (cli/commands.h, CliError).
//
// The runtime, inside traced processes, keeps its own small outcome structs
// (DumpOutcome): it must not allocate on some of its paths.
#pragma once

#include <string>
#include <utility>

namespace lookback {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.message_ = message.empty() ? "unknown error" : std::move(message);
    return s;
  }
  bool ok() const { return message_.empty(); }
  const std::string& message() const { return message_; }  // "" when ok

 private:
  std::string message_;
};

}  // namespace lookback
