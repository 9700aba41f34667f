#include "tuner/child_process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace tunejit {
namespace {

std::string Describe(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return absl::StrCat("killed by signal ", sig,
                        name != nullptr ? absl::StrCat(" (", name, ")") : "");
  }
  return "ended";
}

// This process's environment with `extra` added (an extra KEY replaces the inherited one).
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& x : extra) {
      const size_t eq = x.find('=');
      if (eq != std::string::npos &&
          entry.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1)) {
        replaced = true;
      }
    }
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  absl::Cleanup close_child_end = [&] { ::close(fds[1]); };
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  absl::Cleanup destroy = [&] { posix_spawn_file_actions_destroy(&actions); };
  // dup2 clears close-on-exec on the copies, so only stdin/stdout reach the child.
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = MergedEnvironment(options.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    ::close(fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", options.argv[0], ": ", std::strerror(rc)));
  }
  return ChildProcess(pid, fds[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)),
      ended_(std::move(other.ended_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
    ended_ = std::move(other.ended_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { Kill(); }

void ChildProcess::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string ChildProcess::Reap(bool block) {
  if (pid_ < 0) return ended_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return "";  // still running
  ended_ = r == pid_ ? Describe(status) : "ended (not waitable)";
  pid_ = -1;
  return ended_;
}

std::string ChildProcess::Kill() {
  Close();
  if (pid_ < 0) return ended_;
  ::kill(pid_, SIGKILL);
  return Reap(/*block=*/true);
}

std::string ChildProcess::WaitOrKill(double timeout_seconds) {
  Close();  // a child blocked reading its stdin sees end of file
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  while (pid_ >= 0 && std::chrono::steady_clock::now() < deadline) {
    if (!Reap(/*block=*/false).empty()) return ended_;
    ::usleep(10000);
  }
  return Kill();
}

absl::Status ChildProcess::WriteLine(std::string_view line) {
  if (fd_ < 0) return absl::UnavailableError("worker is not running");
  std::string data(line);
  data.push_back('\n');
  size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL: a dead reader is EPIPE here, not a SIGPIPE that would end the tuner.
    ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::UnavailableError(absl::StrCat("worker: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ChildProcess::ReadLine(double timeout_seconds) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  while (true) {
    if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (fd_ < 0) return absl::UnavailableError("worker is not running");
    // Rounded up: the deadline is a promise to wait at least this long.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("no answer within ", timeout_seconds, " s"));
    }
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (ready <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    // End of stream: the child closed its end, normally because it exited.
    Close();
    std::string how = WaitOrKill(2.0);
    return absl::UnavailableError(absl::StrCat("worker ", how));
  }
}

}  // namespace tunejit
