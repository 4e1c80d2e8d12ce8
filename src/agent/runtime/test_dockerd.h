// Test support: a private Docker engine for one test suite, started and stopped with
// testdata/dockerd.sh in a fresh directory under /tmp, in a network namespace of its own.
// Tests skip (with the reason) when it cannot start: not root, no dockerd, no kernel
// support.
//
// Thread-safety: not thread-safe; one per suite, from SetUpTestSuite to TearDownTestSuite.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "agent/runtime/docker_client.h"

namespace gpunex::agent::testing {

// The busybox image every suite imports (no registry involved).
inline constexpr char kBusyboxImage[] = "gpunex-test/busybox:1";

class TestDockerd {
 public:
  // Starts an engine; nullptr with `*error` set when it cannot. `network` is how it
  // isolates workloads (dockerd.sh: "isolated", "docker" or "open"; "" = its default,
  // isolated).
  static std::unique_ptr<TestDockerd> Start(std::string* error, const std::string& network = "");
  // Stops the engine and removes its directory.
  ~TestDockerd();

  TestDockerd(const TestDockerd&) = delete;
  TestDockerd& operator=(const TestDockerd&) = delete;

  const std::string& socket() const { return socket_; }
  const std::string& dir() const { return dir_; }

  // Runs `docker <args>` against this engine (args are passed to the shell as written);
  // returns the exit status, with stdout and stderr in `*output` when given.
  int Cli(const std::string& args, std::string* output = nullptr) const;
  // Imports kBusyboxImage (or `ref`); false with the script's output in `*error`.
  bool ImportBusybox(std::string* error, const std::string& ref = kBusyboxImage) const;

 private:
  TestDockerd(std::string dir, std::string socket)
      : dir_(std::move(dir)), socket_(std::move(socket)) {}

  std::string dir_;
  std::string socket_;
};

// Runs `command` with /bin/sh; returns its exit status and its stdout and stderr.
int RunShell(const std::string& command, std::string* output);

// A test suite with one private engine (with kBusyboxImage imported) and a client for it,
// shared by the suite's tests; tests skip with the reason when dockerd cannot start here.
// `Suite` is the deriving fixture, so that each suite has its own engine.
template <typename Suite>
class DockerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = TestDockerd::Start(&skip_reason_).release();
    if (!engine_) return;
    if (!engine_->ImportBusybox(&import_error_)) return;
    client_ = DockerEngineClient(engine_->socket()).release();
  }
  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override {
    if (!engine_) GTEST_SKIP() << "dockerd could not start here: " << skip_reason_;
    ASSERT_NE(client_, nullptr) << "importing the busybox image failed: " << import_error_;
  }

  static inline TestDockerd* engine_ = nullptr;
  static inline DockerClient* client_ = nullptr;
  static inline std::string skip_reason_;
  static inline std::string import_error_;
};

}  // namespace gpunex::agent::testing
