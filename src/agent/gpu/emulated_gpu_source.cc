// EmulatedGpuSource: GPUs invented from the reference catalog, for machines without GPUs.
//
// Identity comes from the seed (UUIDs are a hash of seed and index), figures from the
// catalog and the board table below, and telemetry is that of an idle GPU: no
// utilisation, no memory in use, no throttling, a temperature drifting between 35 and
// 45 C and a power draw near the board's idle watts. Readings are a pure function of
// the seed, the GPU index and the clock's time, so tests can predict them.
#include <charconv>
#include <chrono>
#include <cmath>
#include <numbers>
#include <set>
#include <string>
#include <utility>

#include "agent/gpu/gpu_source.h"
#include "common/gpu_catalog.h"
#include "common/ids.h"

namespace gpunex::agent {
namespace {

constexpr int kMaxGpus = 64;

// What the catalog lacks: datasheet board power (TDP), a typical idle draw and idle SM
// clock as nvidia-smi shows them, and the PCIe generation of the board.
struct BoardFigures {
  std::string_view catalog_id;
  int power_limit_w;
  double idle_w;
  int idle_sm_mhz;
  int pcie_gen;
};

constexpr BoardFigures kBoards[] = {
    {"h100-sxm-80gb", 700, 70, 345, 5},  {"h100-pcie-80gb", 350, 48, 345, 5},
    {"h200-sxm-141gb", 700, 75, 345, 5}, {"a100-sxm-80gb", 400, 60, 210, 4},
    {"a100-sxm-40gb", 400, 55, 210, 4},  {"a100-pcie-80gb", 300, 45, 210, 4},
    {"a100-pcie-40gb", 250, 38, 210, 4}, {"l40s-48gb", 350, 35, 210, 4},
    {"l4-24gb", 72, 16, 210, 4},         {"rtx4090-24gb", 450, 22, 210, 4},
    {"rtxa6000-48gb", 300, 24, 210, 4},
};
// For a model added to the catalog but not yet here.
constexpr BoardFigures kDefaultBoard = {"", 300, 30, 210, 4};

const BoardFigures& BoardFor(std::string_view catalog_id) {
  for (const auto& b : kBoards) {
    if (b.catalog_id == catalog_id) return b;
  }
  return kDefaultBoard;
}

// SplitMix64: a cheap, well-mixed, portable hash step.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform value in [-1, 1) from `x`.
double Signed(uint64_t x) { return static_cast<double>(Mix(x) >> 11) * 0x1.0p-52 - 1.0; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string KnownModels() {
  std::string ids;
  for (const auto& m : BuiltinGpuCatalog()) {
    if (!ids.empty()) ids += ", ";
    ids += m.id;
  }
  return ids;
}

struct SpecEntry {
  const GpuModel* model;
  int count;
};

StatusOr<std::vector<SpecEntry>> ParseSpec(std::string_view spec) {
  std::vector<SpecEntry> entries;
  std::set<std::string_view> seen;
  int total = 0;
  if (Trim(spec).empty()) return InvalidArgument("GPU spec is empty; e.g. \"l4-24gb:2\"");
  while (true) {
    size_t comma = spec.find(',');
    std::string_view part = Trim(spec.substr(0, comma));
    std::string quoted = "\"" + std::string(part) + "\"";
    if (part.empty()) return InvalidArgument("GPU spec has an empty entry");

    size_t colon = part.find(':');
    std::string_view id = Trim(part.substr(0, colon));
    const GpuModel* model = FindGpuModel(id);
    if (model == nullptr) {
      return InvalidArgument("GPU spec entry " + quoted + ": unknown model \"" + std::string(id) +
                             "\"; known: " + KnownModels());
    }
    int count = 1;
    if (colon != std::string_view::npos) {
      std::string_view n = Trim(part.substr(colon + 1));
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
      if (n.empty() || ec != std::errc() || end != n.data() + n.size() || count < 1 ||
          count > kMaxGpus) {
        return InvalidArgument("GPU spec entry " + quoted + ": the count must be 1.." +
                               std::to_string(kMaxGpus));
      }
    }
    if (!seen.insert(model->id).second) {
      return InvalidArgument("GPU spec entry " + quoted + ": " + model->id + " is listed twice");
    }
    total += count;
    if (total > kMaxGpus) {
      return InvalidArgument("GPU spec entry " + quoted + ": more than " +
                             std::to_string(kMaxGpus) + " GPUs in all");
    }
    entries.push_back({model, count});
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return entries;
}

struct EmulatedGpu {
  GpuInfo info;
  const BoardFigures* board;
  uint64_t noise_seed;  // from the seed and index, for the telemetry
};

class EmulatedSource final : public GpuSource {
 public:
  EmulatedSource(std::vector<EmulatedGpu> gpus, double perf_factor, const Clock& clock)
      : gpus_(std::move(gpus)), perf_factor_(perf_factor), clock_(clock) {}

  std::string Kind() const override { return "emulated"; }
  bool Emulated() const override { return true; }
  double PerfFactor() const override { return perf_factor_; }

  StatusOr<std::vector<GpuInfo>> Inventory() override {
    std::vector<GpuInfo> out;
    for (const auto& g : gpus_) out.push_back(g.info);
    return out;
  }

  StatusOr<std::vector<GpuTelemetry>> Sample() override {
    const double t = std::chrono::duration<double>(clock_.Now().time_since_epoch()).count();
    const auto second = static_cast<uint64_t>(std::floor(t));
    constexpr double kTwoPi = 2 * std::numbers::pi;
    std::vector<GpuTelemetry> out;
    for (const auto& g : gpus_) {
      const double phase = static_cast<double>(g.noise_seed % 3600) / 3600 * kTwoPi;
      const uint64_t tick = Mix(g.noise_seed ^ second);
      GpuTelemetry s;
      s.uuid = g.info.uuid;
      s.utilization_pct = 0;
      s.memory_used_mb = 0;
      // A 15-minute swing of +-3.5 C around 40 C, with up to half a degree of noise.
      double temp = 40 + 3.5 * std::sin(kTwoPi * t / 900 + phase) + 0.5 * Signed(tick);
      s.temperature_c = static_cast<int>(std::lround(temp));
      // A 10-minute swing of +-6% around idle watts, with up to 2% of noise; mW steps.
      double watts = g.board->idle_w *
                     (1 + 0.06 * std::sin(kTwoPi * t / 600 + phase) + 0.02 * Signed(tick + 1));
      s.power_w = std::round(watts * 1000) / 1000;
      s.sm_clock_mhz = g.board->idle_sm_mhz;
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  const std::vector<EmulatedGpu> gpus_;  // immutable, hence thread-safe
  const double perf_factor_;
  const Clock& clock_;
};

}  // namespace

StatusOr<std::unique_ptr<GpuSource>> EmulatedGpuSource(std::string_view spec, double perf_factor,
                                                       std::string_view seed, const Clock& clock) {
  if (!(perf_factor > 0 && perf_factor <= 2)) {
    return InvalidArgument("emulated perf_factor " + std::to_string(perf_factor) +
                           " is out of range: it must be in (0, 2]");
  }
  if (seed.empty()) {
    return InvalidArgument("emulated GPUs need a seed (the machine's stable identity)");
  }
  GPUNEX_ASSIGN_OR_RETURN(std::vector<SpecEntry> entries, ParseSpec(spec));

  std::vector<EmulatedGpu> gpus;
  for (const auto& e : entries) {
    const BoardFigures& board = BoardFor(e.model->id);
    for (int n = 0; n < e.count; ++n) {
      const int index = static_cast<int>(gpus.size());
      // 64 hex digits: 32 for the UUID, 16 for the telemetry noise.
      const std::string h = Sha256Hex(std::string(seed) + "/gpu/" + std::to_string(index));
      EmulatedGpu g;
      g.info.index = index;
      g.info.uuid = "GPU-emu-" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) +
                    "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
      g.info.name = e.model->nvml_name + " (emulated)";
      g.info.catalog_id = e.model->id;
      g.info.vram_mb = int64_t{e.model->vram_gb} * 1024;
      g.info.driver_version = "emulated";
      g.info.cuda_driver_version = "emulated";
      g.info.pcie_gen_max = g.info.pcie_gen_current = board.pcie_gen;
      g.info.pcie_width_max = g.info.pcie_width_current = 16;
      g.info.power_limit_w = board.power_limit_w;
      g.info.emulated = true;
      g.board = &board;
      std::from_chars(h.data() + 32, h.data() + 48, g.noise_seed, 16);
      gpus.push_back(std::move(g));
    }
  }
  return std::unique_ptr<GpuSource>(
      std::make_unique<EmulatedSource>(std::move(gpus), perf_factor, clock));
}

}  // namespace gpunex::agent
