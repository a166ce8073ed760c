// lookback dump PID: ask a running traced process for a dump over its
// control socket ("\0lookback-<pid>", see src/runtime/control.cc).
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "runtime/control_protocol.h"
#include "runtime/config.h"

namespace lookback::cli {
namespace {

struct DumpOptions {
  int pid = 0;
  std::string reason = "lookback dump";
  double timeout_s = 60;
  std::string signal;
  bool timings = false;
};

Outcome Run(const DumpOptions& o) {
  if (o.pid <= 0) return Outcome::Usage("PID must be a positive process id");
  if (!o.signal.empty()) {
    int sig = 0;
    if (!rt::ParseSignal(o.signal, &sig) || sig == 0) return Outcome::Usage("--signal '" + o.signal + "' is not a signal");
    if (kill(o.pid, sig) != 0) return Outcome::Error("cannot signal process " + std::to_string(o.pid) + ": " + strerror(errno));
    fprintf(stderr, "lookback: sent %s to %d; the dump appears in its dump directory\n", strsignal(sig), o.pid);
    return Outcome::Ok();
  }
  for (char c : o.reason) {
    if (c == '\n') return Outcome::Usage("--reason must be one line");
  }
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Outcome::Error(std::string("socket: ") + strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = control::SocketName(static_cast<uint32_t>(o.pid));
  memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return Outcome::Error("process " + std::to_string(o.pid) +
                " has no lookback control socket: it is not running, not traced (built with "
                "-finstrument-functions and run under lookback record or linked with liblookback), "
                "or has not reached its first traced function yet");
  }
  const std::string req = std::string(o.timings ? control::kTimedDump : control::kDump) + " " + o.reason + "\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return Outcome::Error(std::string("cannot send the request: ") + strerror(errno));
  }
  std::string reply;
  char buf[512];
  const int timeout_ms = static_cast<int>(o.timeout_s * 1000);
  // One line, or two with --timings ("OK <path>", "TIMING ..."); the
  // process closes the connection after its answer.
  auto complete = [&] {
    const size_t nl = reply.find('\n');
    if (nl == std::string::npos) return false;
    return !o.timings || reply.rfind(control::kOk, 0) != 0 || reply.find('\n', nl + 1) != std::string::npos;
  };
  while (!complete()) {
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n == 0) {
      close(fd);
      return Outcome::Error("no answer from process " + std::to_string(o.pid) + " within " + std::to_string(o.timeout_s) + " s");
    }
    const ssize_t r = n > 0 ? read(fd, buf, sizeof buf) : -1;
    if (r <= 0) break;
    reply.append(buf, static_cast<size_t>(r));
  }
  close(fd);
  if (reply.rfind(control::kOk, 0) == 0) {
    const size_t nl = reply.find('\n');
    printf("%s\n", reply.substr(3, nl - 3).c_str());
    if (o.timings) {
      const std::string rest = reply.substr(nl + 1);
      if (rest.rfind(control::kTiming, 0) != 0) return Outcome::Error("process " + std::to_string(o.pid) + " sent no timings");
      // What the process cannot see: time spent waiting in its socket's
      // backlog while it wrote an earlier dump.
      timespec t1;
      clock_gettime(CLOCK_MONOTONIC, &t1);
      const long long waited = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
      std::string line = rest.substr(control::kTiming.size());
      while (!line.empty() && line.back() == '\n') line.pop_back();
      fprintf(stderr, "timings: %s answered_ns=%lld\n", line.c_str(), waited);
    }
    return Outcome::Ok();
  }
  if (o.timings && reply == control::kUnknownRequest)
    return Outcome::Error("process " + std::to_string(o.pid) + " runs an older lookback that cannot report timings: drop --timings");
  if (reply.rfind(control::kErr, 0) == 0) return Outcome::Error("process " + std::to_string(o.pid) + ": " + reply.substr(4, reply.size() - 5));
  return Outcome::Error("process " + std::to_string(o.pid) + " closed the connection without an answer");
}

}  // namespace

Runner SetupDump(CLI::App* sub) {
  auto o = std::make_shared<DumpOptions>();
  sub->add_option("pid", o->pid, "Process id of the traced program")->required();
  sub->add_option("--reason", o->reason, "Why: stored in the dump")->capture_default_str();
  sub->add_option("--timeout", o->timeout_s, "Seconds to wait for the dump to be written")->capture_default_str();
  sub->add_option("--signal", o->signal, "Send this signal instead of using the control socket");
  sub->add_flag("--timings", o->timings,
                "Also print on stderr, as key=value fields in ns, how long each phase of the dump took (queued, "
                "prepare, snapshot, encode, write, fsync, rename, total), its CPU time, and how long this "
                "command waited for the answer (docs/cli.md)");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
