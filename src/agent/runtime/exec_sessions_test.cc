// ExecSessions against a real, private dockerd (test_dockerd.h): commands run in a
// running busybox container through the exec frames a data channel stream carries.
#include "agent/runtime/exec_sessions.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "agent/runtime/test_dockerd.h"
#include "common/exec_stream.h"

namespace gpunex::agent {
namespace {

using Clock = std::chrono::steady_clock;
using testing::kBusyboxImage;

class ExecSessionsTest : public testing::DockerSuite<ExecSessionsTest> {
 protected:
  void SetUp() override {
    DockerSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (container_.empty()) {
      json::object config{{"Image", kBusyboxImage},
                          {"Cmd", json::array{"sleep", "600"}},
                          {"Labels", json::object{{"io.gpunex.test", "exec"}}},
                          {"HostConfig", json::object{{"NetworkMode", "none"}, {"Init", true}}}};
      auto id = client_->CreateContainer("exec-target", config);
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ASSERT_TRUE(client_->StartContainer(*id).ok());
      container_ = *id;
    }
  }

  // What came back on `fd` until the status frame (or the end, or 30 s): the bytes of
  // each output channel, and the status.
  struct Output {
    std::map<ExecChannel, std::string> bytes;
    std::string status;
    bool ended = false;  // the socket reached its end after the status
  };
  static Output Collect(int fd, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    Output out;
    ExecFrameReader reader;
    const auto until = Clock::now() + timeout;
    char buf[65536];
    while (Clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0) {
        out.ended = true;
        break;
      }
      if (n < 0) continue;
      reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
      for (;;) {
        auto f = reader.Next();
        EXPECT_TRUE(f.ok()) << f.status().ToString();
        if (!f.ok() || !f->has_value()) break;
        if ((*f)->channel == ExecChannel::kStatus) {
          out.status = (*f)->payload;
        } else {
          out.bytes[(*f)->channel] += (*f)->payload;
        }
      }
    }
    return out;
  }

  static void Send(int fd, ExecChannel channel, std::string_view payload) {
    const std::string frame = EncodeExecFrame(channel, payload);
    for (size_t at = 0; at < frame.size();) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 1000);
      const ssize_t n = send(fd, frame.data() + at, frame.size() - at, MSG_NOSIGNAL);
      ASSERT_TRUE(n > 0 || errno == EAGAIN) << std::strerror(errno);
      if (n > 0) at += static_cast<size_t>(n);
    }
  }

  StreamTarget Exec(std::vector<std::string> command, bool tty = false) {
    return StreamTarget{.workload_id = "wkl_01M953QKHX2WV91S3HKEK5PC5K",
                        .kind = StreamTarget::Kind::kExec,
                        .command = std::move(command),
                        .tty = tty};
  }

  // Waits (up to 10 s) until no session's thread runs.
  static void WaitIdle(const ExecSessions& execs) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (execs.active() > 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  static inline std::string container_;
};

TEST_F(ExecSessionsTest, SeparatesStdoutFromStderrAndReportsTheExitCode) {
  ExecSessions execs(*client_);
  auto fd = execs.Start(container_, Exec({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  Output out = Collect(*fd);
  close(*fd);
  EXPECT_EQ(out.bytes[ExecChannel::kStdout], "out\n");
  EXPECT_EQ(out.bytes[ExecChannel::kStderr], "err\n");
  EXPECT_EQ(out.status, R"({"exit_code":3})");
  EXPECT_TRUE(out.ended);
}

TEST_F(ExecSessionsTest, StdinGoesThroughCatAndItsCloseEndsTheCommand) {
  ExecSessions execs(*client_);
  auto fd = execs.Start(container_, Exec({"sh", "-c", "cat; echo done >&2"}));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  std::string sent;
  for (int i = 0; i < 200; ++i) sent += "line " + std::to_string(i) + " of what goes in\n";
  Send(*fd, ExecChannel::kStdin, sent.substr(0, 1000));
  Send(*fd, ExecChannel::kStdin, sent.substr(1000));
  Send(*fd, ExecChannel::kClose, std::string(1, '\0'));
  Output out = Collect(*fd);
  close(*fd);
  EXPECT_EQ(out.bytes[ExecChannel::kStdout], sent);
  EXPECT_EQ(out.bytes[ExecChannel::kStderr], "done\n");
  EXPECT_EQ(out.status, R"({"exit_code":0})");
}

TEST_F(ExecSessionsTest, ATerminalFollowsItsSize) {
  ExecSessions execs(*client_);
  auto fd = execs.Start(container_, Exec({"sh", "-c", "sleep 1; stty size"}, /*tty=*/true));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  Send(*fd, ExecChannel::kResize, R"({"Width":101,"Height":33})");
  Output out = Collect(*fd);
  close(*fd);
  EXPECT_EQ(out.bytes[ExecChannel::kStdout], "33 101\r\n");  // a terminal's line ending
  EXPECT_EQ(out.bytes.count(ExecChannel::kStderr), 0u);
  EXPECT_EQ(out.status, R"({"exit_code":0})");
}

TEST_F(ExecSessionsTest, RefusalsSayWhy) {
  ExecSessions execs(*client_, /*max_sessions=*/1);
  auto missing = execs.Start("no-such-container", Exec({"true"}));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  // A program that is not there: the engine starts the exec, and says so on stdout and
  // with the OCI runtime's exit code.
  auto absent = execs.Start(container_, Exec({"/no/such/program"}));
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  Output out = Collect(*absent);
  close(*absent);
  EXPECT_EQ(out.status, R"({"exit_code":126})");
  EXPECT_NE(out.bytes[ExecChannel::kStdout].find("no such file"), std::string::npos)
      << out.bytes[ExecChannel::kStdout];
  WaitIdle(execs);
  // One session at a time here: a second waits for none, it is refused.
  auto first = execs.Start(container_, Exec({"sleep", "30"}));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = execs.Start(container_, Exec({"true"}));
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  // Closing the platform's end ends the session (the command reads end of file).
  close(*first);
  WaitIdle(execs);
  EXPECT_EQ(execs.active(), 0);
}

}  // namespace
}  // namespace gpunex::agent
