// gpunex-gpubench: measures one GPU and prints one JSON object on stdout (docs/gpubench.md).
// Exit status: 0 measured, 2 a sanity check failed, 1 any other error (with
// {"error": ...} on stdout).
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "gpubench/bench.h"
#include "gpubench/cli.h"
#include "gpubench/report.h"
#include "gpubench/telemetry.h"

namespace {

constexpr int kExitMeasured = 0;
constexpr int kExitError = 1;
constexpr int kExitSanity = 2;

int Fail(const std::string& message) {
  std::fprintf(stderr, "gpunex-gpubench: %s\n", message.c_str());
  std::printf("%s\n", gpunex::gpubench::ErrorJson(message).c_str());
  return kExitError;
}

int Run(int argc, char** argv) {
  using namespace gpunex::gpubench;
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto options = ParseOptions(args);
  if (!options.ok()) {
    std::fputs(Usage().c_str(), stderr);
    return Fail(options.status().message());
  }
  if (options->help) {
    std::fputs(Usage().c_str(), stdout);
    return kExitMeasured;
  }
  if (options->version) {
    std::printf("gpunex-gpubench %s\n", std::string(kFormatVersion).c_str());
    return kExitMeasured;
  }
  std::unique_ptr<Telemetry> telemetry = OpenTelemetry();
  auto report = RunBenchmark(*options, MakePlan(*options), *telemetry);
  if (!report.ok()) return Fail(report.status().message());
  std::printf("%s\n", ReportJson(*report).c_str());
  std::fflush(stdout);
  if (!report->sanity_failures.empty()) {
    std::fprintf(stderr, "gpunex-gpubench: %zu sanity check(s) failed\n",
                 report->sanity_failures.size());
    return kExitSanity;
  }
  return kExitMeasured;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    return Fail(std::string("unexpected error: ") + e.what());
  }
}
