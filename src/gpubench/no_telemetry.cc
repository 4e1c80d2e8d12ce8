// OpenTelemetry() for the standalone build (bench/gpubench_vs_torch.sh on a machine
// without the project's libraries): no NVML, so the NVML-derived figures are 0.
#include "gpubench/telemetry.h"

namespace gpunex::gpubench {
namespace {

class NoTelemetry final : public Telemetry {
 public:
  std::string Kind() const override { return "none"; }
  StatusOr<GpuFacts> Facts(std::string_view) override { return Missing(); }
  StatusOr<TelemetrySample> Sample(std::string_view) override { return Missing(); }

 private:
  static Status Missing() {
    return Unavailable("this build of gpunex-gpubench has no NVML support (standalone build)");
  }
};

}  // namespace

std::unique_ptr<Telemetry> OpenTelemetry() { return std::make_unique<NoTelemetry>(); }

}  // namespace gpunex::gpubench
