#include "agent/runtime/exec_sessions.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "agent/runtime/internal/engine_streams.h"
#include "common/exec_stream.h"
#include "common/json.h"
#include "common/log.h"

namespace gpunex::agent {

struct ExecSessions::Session {
  std::string exec_id;
  bool tty = false;
  int platform = -1;  // this side's end of the socket pair
  int engine = -1;    // the engine's raw stream
};

ExecSessions::ExecSessions(DockerClient& docker, int max_sessions)
    : docker_(docker), max_sessions_(max_sessions) {}

ExecSessions::~ExecSessions() {
  stop_.Signal();
  std::list<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> threads;
  {
    MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (auto& [thread, ended] : threads) thread.join();
}

void ExecSessions::Reap() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->second->load()) {
      it->first.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

StatusOr<int> ExecSessions::Start(const std::string& container_id, const StreamTarget& target) {
  if (target.kind != StreamTarget::Kind::kExec || !ExecCommandProblem(target.command).empty()) {
    return InvalidArgument("not an exec target");
  }
  {
    MutexLock lock(&mu_);
    Reap();
    if (active_.load() >= max_sessions_) {
      return ResourceExhausted("this machine runs " + std::to_string(max_sessions_) +
                               " exec sessions already");
    }
  }
  GPUNEX_ASSIGN_OR_RETURN(std::string exec_id, docker_.CreateExec(container_id, target.command,
                                                                  target.tty, target.open_stdin));
  GPUNEX_ASSIGN_OR_RETURN(int engine, docker_.StartExec(exec_id, target.tty));
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    const int err = errno;
    close(engine);
    return Internal(std::string("socketpair: ") + std::strerror(err));
  }
  auto ended = std::make_shared<std::atomic<bool>>(false);
  ++active_;
  MutexLock lock(&mu_);
  threads_.emplace_back(
      std::thread([this, ended, s = Session{exec_id, target.tty, pair[1], engine}]() mutable {
        Run(s);
        close(s.platform);
        close(s.engine);
        --active_;
        ended->store(true);
      }),
      ended);
  return pair[0];
}

namespace {

// Writes what `fd` takes of `*pending` now; false when the socket failed.
bool WriteSome(int fd, std::string* pending) {
  while (!pending->empty()) {
    const ssize_t n = send(fd, pending->data(), pending->size(), MSG_NOSIGNAL);
    if (n > 0) {
      pending->erase(0, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return true;
    } else {
      return false;
    }
  }
  return true;
}

// The status frame's JSON once the command has ended: {"exit_code":N}, or {"error":...}
// when the engine cannot say.
std::string ExitStatus(DockerClient& docker, const std::string& exec_id) {
  // The engine may see the end of the stream a moment before the process's exit.
  for (int attempt = 0; attempt < 100; ++attempt) {
    StatusOr<ExecState> state = docker.InspectExec(exec_id);
    if (!state.ok()) return ToJsonText(json::object{{"error", state.status().message()}});
    if (!state->running) return ToJsonText(json::object{{"exit_code", state->exit_code}});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ToJsonText(json::object{{"error", "the command's stream ended while it still runs"}});
}

}  // namespace

void ExecSessions::Run(Session& s) {
  ExecFrameReader from_platform;
  internal::FrameDemuxer demux;
  std::string to_engine, to_platform;
  bool stdin_closed = false, engine_shut = false, engine_eof = false, status_queued = false;
  auto buffer = std::make_unique<char[]>(kBufferBytes / 4);
  const size_t chunk = kBufferBytes / 4;
  auto end = [&](const std::string& why) {
    LogInfo("agent.exec.ended", {{"exec_id", s.exec_id}, {"why", why}});
  };
  for (;;) {
    pollfd fds[3] = {{stop_.fd(), POLLIN, 0}, {s.platform, 0, 0}, {s.engine, 0, 0}};
    if (to_engine.size() < kBufferBytes) fds[1].events |= POLLIN;
    if (!to_platform.empty()) fds[1].events |= POLLOUT;
    if (!engine_eof && to_platform.size() < kBufferBytes) fds[2].events |= POLLIN;
    if (!to_engine.empty() && !engine_shut) fds[2].events |= POLLOUT;
    if (engine_eof) fds[2].fd = -1;
    if (poll(fds, 3, 1000) < 0 && errno != EINTR) return end("poll failed");
    if (fds[0].revents != 0) return end("the agent is stopping");

    // The platform's frames: stdin, terminal sizes, the close of stdin.
    if ((fds[1].events & POLLIN) && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = recv(s.platform, buffer.get(), chunk, 0);
      if (n == 0) return end("the platform closed the stream");
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return end("the platform's socket failed");
      }
      if (n > 0) from_platform.Feed(std::string_view(buffer.get(), static_cast<size_t>(n)));
      for (;;) {
        auto frame = from_platform.Next();
        if (!frame.ok()) return end(frame.status().message());
        if (!frame->has_value()) break;
        ExecFrame& f = **frame;
        switch (f.channel) {
          case ExecChannel::kStdin:
            if (!stdin_closed) to_engine += f.payload;
            break;
          case ExecChannel::kResize:
            if (s.tty) {
              if (auto size = ParseTerminalSize(f.payload); size.ok()) {
                if (Status st = docker_.ResizeExec(s.exec_id, size->rows, size->columns);
                    !st.ok()) {
                  LogInfo("agent.exec.resize_failed",
                          {{"exec_id", s.exec_id}, {"error", st.message()}});
                }
              }
            }
            break;
          case ExecChannel::kClose:
            if (f.payload == std::string(1, '\0')) stdin_closed = true;
            break;
          default:
            return end("the platform sent a frame of an output channel");
        }
      }
    }
    // Stdin into the engine; its end once the platform closed it and all of it is in.
    if (!engine_shut && !WriteSome(s.engine, &to_engine)) {
      engine_shut = true;  // the command stopped reading: what it did not take is dropped
      to_engine.clear();
    }
    if (stdin_closed && to_engine.empty() && !engine_shut) {
      shutdown(s.engine, SHUT_WR);
      engine_shut = true;
    }
    // The command's output, as frames.
    if ((fds[2].events & POLLIN) && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = recv(s.engine, buffer.get(), chunk, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        engine_eof = true;
      } else if (n > 0) {
        const std::string_view got(buffer.get(), static_cast<size_t>(n));
        if (s.tty) {
          to_platform += EncodeExecFrame(ExecChannel::kStdout, got);
        } else {
          Status st = demux.Feed(got, [&](LogFrame::Stream stream, std::string_view piece, bool) {
            to_platform += EncodeExecFrame(
                stream == LogFrame::Stream::kStderr ? ExecChannel::kStderr : ExecChannel::kStdout,
                piece);
            return Status::Ok();
          });
          if (!st.ok()) return end("the engine's stream: " + st.message());
        }
      }
    }
    if (engine_eof && !status_queued) {
      to_platform += EncodeExecFrame(ExecChannel::kStatus, ExitStatus(docker_, s.exec_id));
      status_queued = true;
    }
    if (!WriteSome(s.platform, &to_platform)) return end("the platform's socket failed");
    if (status_queued && to_platform.empty()) return end("the command ended");
  }
}

}  // namespace gpunex::agent
