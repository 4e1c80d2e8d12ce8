// Test support: a private Docker engine for one test suite, started and stopped with
// testdata/dockerd.sh in a fresh directory under /tmp. Tests skip (with the reason) when
// it cannot start: not root, no dockerd, no kernel support.
//
// Thread-safety: not thread-safe; one per suite, from SetUpTestSuite to TearDownTestSuite.
#pragma once

#include <memory>
#include <string>

namespace gpunex::agent::testing {

// The busybox image every suite imports (no registry involved).
inline constexpr char kBusyboxImage[] = "gpunex-test/busybox:1";

class TestDockerd {
 public:
  // Starts an engine; nullptr with `*error` set when it cannot.
  static std::unique_ptr<TestDockerd> Start(std::string* error);
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

}  // namespace gpunex::agent::testing
