// The control socket's protocol, shared by its two ends: the runtime's control
// thread (runtime/control.cc) and `lookback dump` (cli/cmd_dump.cc).
//
// A UNIX stream socket in the abstract namespace, "\0lookback-<pid>"; only
// peers with the process's uid (or root) are served. One line each way:
//   -> "DUMP <reason>\n"        <- "OK <path>\n" | "ERR <message>\n"
//   -> "TIMED-DUMP <reason>\n"  <- "OK <path>\nTIMING key=value ...\n" | "ERR <message>\n"
//   -> "PING\n"                 <- "OK <pid> <process name>\n"
// An unknown request gets "ERR unknown request\n" (an older runtime answers
// TIMED-DUMP so).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lookback::control {

inline constexpr std::string_view kSocketPrefix = "lookback-";
inline constexpr std::string_view kDump = "DUMP";
inline constexpr std::string_view kTimedDump = "TIMED-DUMP";
inline constexpr std::string_view kPing = "PING";
inline constexpr std::string_view kOk = "OK ";
inline constexpr std::string_view kErr = "ERR ";
inline constexpr std::string_view kTiming = "TIMING ";
inline constexpr std::string_view kUnknownRequest = "ERR unknown request\n";

// The abstract socket's name (without the leading NUL) for process `pid`.
inline std::string SocketName(uint32_t pid) { return std::string(kSocketPrefix) + std::to_string(pid); }

}  // namespace lookback::control
