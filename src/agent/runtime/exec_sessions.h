// ExecSessions: commands that customers run in their workloads' running containers
// (issue 26; docs/agent-protocol.md, "Exec streams"), each bridged to a stream of the
// data channel. The engine runs the command (DockerClient::CreateExec, StartExec); a
// thread per session moves exec frames (common/exec_stream.h) between the stream's socket
// and the engine's raw stream: stdin and terminal sizes in, stdout and stderr out (a
// terminal's output is all stdout), then the exit code, after which the stream ends.
//
// Bounded: at most max_sessions at once, and at most kBufferBytes waiting each way in a
// session (it stops reading the side that sends faster, whose flow control then holds it).
//
// Thread-safety: Start and active may be called from any thread; the destructor ends
// every session (the engine's stream and the platform's socket are closed: the command
// reads end of file) and waits for their threads.
#pragma once

#include <atomic>
#include <list>
#include <string>
#include <thread>

#include "agent/runtime/docker_client.h"
#include "common/data_channel.h"
#include "common/event_fd.h"
#include "common/status.h"
#include "common/thread_annotations.h"

namespace gpunex::agent {

class ExecSessions {
 public:
  static constexpr size_t kBufferBytes = 256 * 1024;

  explicit ExecSessions(DockerClient& docker, int max_sessions = 64);
  ~ExecSessions();
  ExecSessions(const ExecSessions&) = delete;
  ExecSessions& operator=(const ExecSessions&) = delete;

  // Runs `target` (kind kExec) in `container_id` and returns the platform's end of a
  // socket pair (non-blocking; the caller closes it), on which exec frames go both ways.
  // kResourceExhausted at max_sessions; the engine's refusal otherwise (kNotFound: no
  // such container; kFailedPrecondition: it does not run).
  StatusOr<int> Start(const std::string& container_id, const StreamTarget& target) EXCLUDES(mu_);

  // Sessions whose thread has not ended.
  int active() const { return active_.load(); }

 private:
  struct Session;
  void Run(Session& s);
  void Reap() REQUIRES(mu_);

  DockerClient& docker_;
  const int max_sessions_;
  const EventFd stop_;  // the destructor ends every session
  std::atomic<int> active_{0};
  Mutex mu_;
  std::list<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> threads_
      GUARDED_BY(mu_);  // with whether each has ended
};

}  // namespace gpunex::agent
