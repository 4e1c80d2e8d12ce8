#include "agent/runtime/test_dockerd.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>

#ifndef GPUNEX_RUNTIME_TESTDATA_DIR
#error "GPUNEX_RUNTIME_TESTDATA_DIR must name src/agent/runtime/testdata"
#endif

namespace gpunex::agent::testing {
namespace {

std::string Script() { return std::string(GPUNEX_RUNTIME_TESTDATA_DIR) + "/dockerd.sh"; }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int RunShell(const std::string& command, std::string* output) {
  std::string cmd = command + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::string out;
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (output) *output = std::move(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::unique_ptr<TestDockerd> TestDockerd::Start(std::string* error, const std::string& network) {
  char tmpl[] = "/tmp/gpunex-dockerd.XXXXXX";
  if (!mkdtemp(tmpl)) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  std::string dir = tmpl;
  std::string out;
  int rc =
      RunShell("GPUNEX_TEST_DOCKERD_NETWORK='" + network + "' " + Script() + " start " + dir, &out);
  out = Trim(out);
  if (rc != 0) {
    *error = out.empty() ? "dockerd.sh start failed" : out;
    std::string ignored;
    RunShell(Script() + " stop " + dir, &ignored);
    return nullptr;
  }
  // The socket path is the last line printed.
  std::string socket = out.substr(out.rfind('\n') + 1);
  return std::unique_ptr<TestDockerd>(new TestDockerd(dir, socket));
}

TestDockerd::~TestDockerd() {
  std::string out;
  if (RunShell(Script() + " stop " + dir_, &out) != 0) {
    std::fprintf(stderr, "dockerd.sh stop %s failed: %s\n", dir_.c_str(), out.c_str());
  }
}

int TestDockerd::Cli(const std::string& args, std::string* output) const {
  return RunShell("docker -H unix://" + socket_ + " " + args, output);
}

bool TestDockerd::ImportBusybox(std::string* error, const std::string& ref) const {
  return RunShell(Script() + " import-busybox " + dir_ + " " + ref, error) == 0;
}

}  // namespace gpunex::agent::testing
