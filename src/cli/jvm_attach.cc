// The client side of HotSpot's attach mechanism (Linux):
//   1. the JVM listens on /tmp/.java_pid<pid> once its attach listener runs;
//      to start it, create .attach_pid<pid> in the JVM's working directory
//      (or /tmp) and send SIGQUIT, then wait for the socket;
//   2. connect, and send the protocol version "1", the command "load" and
//      its three arguments (library, "true": the path is absolute, options),
//      each ending in a NUL byte;
//   3. the JVM answers the command's status on the first line ("0": it ran),
//      then, for load, "return code: N" (N: what Agent_OnAttach returned) or
//      a message.
// SIGQUIT would kill a process that is not a JVM, so the target is checked
// first: it must have libjvm.so mapped.
#include "cli/jvm_attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "cli/record_options.h"

namespace lookback::cli {
namespace {

bool IsJvm(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/libjvm.so") != std::string::npos) return true;
  }
  return false;
}

bool IsSocket(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

uint64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

bool WriteAll(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = write(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string FindJvmAgent() {
  const std::string runtime = FindRuntime();
  if (runtime.empty()) return {};
  const std::string agent = runtime.substr(0, runtime.rfind('/') + 1) + "liblookback-jvm.so";
  return access(agent.c_str(), R_OK) == 0 ? agent : std::string();
}

Result<int> LoadAgent(pid_t pid, const std::string& agent, const std::string& options, int timeout_s) {
  if (kill(pid, 0) != 0) {
    return Error{"no process " + std::to_string(pid) + " (" + strerror(errno) + ")"};
  }
  if (!IsJvm(pid)) {
    return Error{"process " + std::to_string(pid) + " is not a JVM (no libjvm.so mapped)"};
  }
  // The socket lives in the JVM's /tmp, seen through its root (containers).
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  const std::string sock = root + "/tmp/.java_pid" + std::to_string(pid);
  if (!IsSocket(sock)) {
    std::string trigger = "/proc/" + std::to_string(pid) + "/cwd/.attach_pid" + std::to_string(pid);
    int fd = open(trigger.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
      trigger = root + "/tmp/.attach_pid" + std::to_string(pid);
      fd = open(trigger.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
      return Error{"cannot create the attach trigger file (" + std::string(strerror(errno)) + ")"};
    }
    close(fd);
    kill(pid, SIGQUIT);
    const uint64_t deadline = NowMs() + 10000;
    for (int delay = 10; !IsSocket(sock) && NowMs() < deadline; delay = std::min(delay * 2, 200)) usleep(delay * 1000);
    unlink(trigger.c_str());
    if (!IsSocket(sock)) {
      return Error{"the JVM did not start its attach listener (started with -XX:+DisableAttachMechanism, or "
                  "another user's JVM?)"};
    }
  }
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (s < 0 || sock.size() >= sizeof addr.sun_path) {
    if (s >= 0) close(s);
    return Error{"cannot open a socket"};
  }
  memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(s);
    return Error{"cannot connect to the JVM's attach listener (" + std::string(strerror(errno)) + ")"};
  }
  std::string request;
  for (const std::string& part : {std::string("1"), std::string("load"), agent, std::string("true"), options}) {
    request += part;
    request.push_back('\0');
  }
  if (!WriteAll(s, request)) {
    close(s);
    return Error{"the JVM closed the attach connection"};
  }
  std::string reply;
  const uint64_t deadline = NowMs() + static_cast<uint64_t>(timeout_s) * 1000;
  for (;;) {
    const uint64_t now = NowMs();
    if (now >= deadline) break;
    pollfd p{s, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(deadline - now)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(s, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  close(s);
  if (NowMs() >= deadline && reply.find('\n') == std::string::npos) {
    return Error{"the JVM did not answer within " + std::to_string(timeout_s) + " s"};
  }
  const size_t nl = reply.find('\n');
  const std::string status = reply.substr(0, nl);
  const std::string rest = nl == std::string::npos ? "" : reply.substr(nl + 1);
  if (status != "0") return Error{"the JVM refused the load command: " + (rest.empty() ? status : rest)};
  const std::string prefix = "return code: ";
  if (rest.rfind(prefix, 0) == 0) return atoi(rest.c_str() + prefix.size());
  if (!rest.empty() && (rest[0] == '-' || (rest[0] >= '0' && rest[0] <= '9')))
    return atoi(rest.c_str());  // older JDKs: the number alone
  if (!rest.empty()) {
    std::string msg = rest;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return Error{"the JVM could not load the agent: " + msg};
  }
  return 0;
}

std::string AgentResultText(int code) {
  switch (code) {
    case 2: return "the agent refused its options";
    case 3: return "the agent could not load liblookback.so (see the JVM's stderr)";
    case 4: return "the JVM gave the agent no JVMTI environment or capability it needs (see the JVM's stderr)";
    case 5: return "lookback is not attached to that JVM";
    default: return "the agent failed (code " + std::to_string(code) + ")";
  }
}

}  // namespace lookback::cli
