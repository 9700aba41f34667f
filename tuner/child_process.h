// File: tuner/child_process.h
// A child process the tuner talks to over one socketpair connected to its stdin and stdout:
// write a line, read a line with a deadline, kill it (SIGKILL) and reap it. The parent must be able
// to abandon a worker stuck in a kernel at any moment, so nothing here blocks without a timeout,
// and writing to a dead child is an error status, never SIGPIPE (send with MSG_NOSIGNAL).
// Spawning uses posix_spawn (no code runs between fork and exec), so it is safe from a threaded
// parent; every descriptor is close-on-exec, so sibling workers never inherit each other's sockets.
//
//   TUNEJIT_ASSIGN_OR_RETURN(ChildProcess child,
//                            ChildProcess::Spawn({.argv = {"/proc/self/exe", "tune-worker"}}));
//   TUNEJIT_RETURN_IF_ERROR(child.WriteLine(request));
//   absl::StatusOr<std::string> line = child.ReadLine(/*timeout_seconds=*/10);
//   // DeadlineExceeded: still running (kill it); Unavailable: it closed the socket or died.
#ifndef TUNEJIT_TUNER_CHILD_PROCESS_H_
#define TUNEJIT_TUNER_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunejit {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the executable path
  std::vector<std::string> env;   // extra "KEY=VALUE" entries on top of this process's environment
};

class ChildProcess {
 public:
  static absl::StatusOr<ChildProcess> Spawn(const SpawnOptions& options);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kills and reaps a child still running

  pid_t pid() const { return pid_; }
  // Sends `line` + '\n'. Unavailable when the child is gone.
  absl::Status WriteLine(std::string_view line);
  // The next line (without '\n'). DeadlineExceeded after `timeout_seconds` without a whole line;
  // Unavailable at end of stream (the message says how the child ended, e.g. "killed by signal
  // 11").
  absl::StatusOr<std::string> ReadLine(double timeout_seconds);
  // SIGKILL and reap; idempotent. Returns how it ended ("killed by signal 9", "exited with 0").
  std::string Kill();
  // Waits up to `timeout_seconds` for the child to exit on its own, then kills it.
  std::string WaitOrKill(double timeout_seconds);

 private:
  ChildProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  void Close();
  std::string Reap(bool block);  // "" while still running (block == false)

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;  // bytes read past the last returned line
  std::string ended_;   // how the child ended, once reaped
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_CHILD_PROCESS_H_
