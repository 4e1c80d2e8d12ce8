#include "platform/benchmarks/evaluate.h"

#include <algorithm>
#include <map>

namespace gpunex::platform::benchmarks {
namespace {

constexpr char kDelistPrefix[] = "benchmark: ";

}  // namespace

std::string Truncate(std::string s) {
  if (s.size() > kMaxReasonLength) {
    // Cut before the character that the limit splits: back up while the first byte cut
    // off continues a character.
    size_t cut = kMaxReasonLength;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
    s += "…";
  }
  return s;
}

Evaluation Evaluate(const protocol::BenchmarkResult& result, bool machine_phases,
                    const std::vector<GpuUnderTest>& gpus, const Thresholds& machine_thresholds) {
  Evaluation e;
  e.emulated = result.emulated;
  // Machine-level figures first: their failures count against every GPU in the run.
  std::vector<std::string> notes;
  if (machine_phases) {
    if (result.network) {
      e.network = *result.network;
      auto f = CheckNetwork(*result.network, machine_thresholds);
      e.machine_failures.insert(e.machine_failures.end(), f.begin(), f.end());
    } else if (!result.network_error.empty()) {
      notes.push_back("network: " + result.network_error);
    }
    if (result.storage) {
      e.storage = *result.storage;
      auto f = CheckStorage(*result.storage, machine_thresholds);
      e.machine_failures.insert(e.machine_failures.end(), f.begin(), f.end());
    } else if (!result.storage_error.empty()) {
      notes.push_back("storage: " + result.storage_error);
    }
  }
  std::map<std::string, const protocol::BenchmarkResult::Gpu*> by_uuid;
  for (const auto& g : result.gpus) by_uuid[g.uuid] = &g;

  int passed = 0, failed = 0, errored = 0;
  for (const GpuUnderTest& g : gpus) {
    GpuOutcome out;
    out.gpu_id = g.gpu_id;
    auto error = [&](std::string why) {
      ++errored;
      out.state = BenchmarkState::kError;
      out.error = Truncate(std::move(why));
    };
    auto it = by_uuid.find(g.uuid);
    if (it == by_uuid.end()) {
      error("the agent reported no result for this GPU");
    } else if (!it->second->ok || !it->second->result) {
      error("the benchmark could not run: " +
            (it->second->error.empty() ? std::string("no figures") : it->second->error));
    } else if (auto figures = protocol::ParseGpubenchFigures(*it->second->result, "result");
               !figures.ok()) {
      error("malformed figures: " + figures.status().ToString());
    } else {
      e.emulated = e.emulated || figures->emulated;
      out.failures =
          CheckGpu(*figures, g.model ? &*g.model : nullptr, g.pcie_width_max, g.thresholds);
      out.failures.insert(out.failures.end(), e.machine_failures.begin(), e.machine_failures.end());
      // Figures no GPU of the model can reach give no score: nobody is shown it.
      const bool believed = std::none_of(out.failures.begin(), out.failures.end(), IsImplausible);
      if (believed) out.score = PerformanceScore(*figures);
      out.figures = std::move(*figures);
      const bool pass = out.failures.empty();
      pass ? ++passed : ++failed;
      out.state = pass ? BenchmarkState::kPassed : BenchmarkState::kFailed;
      out.facts.verdict =
          pass ? listing::BenchmarkVerdict::kPassed : listing::BenchmarkVerdict::kFailed;
      if (!pass) out.facts.note = Truncate(kDelistPrefix + Describe(out.failures));
      if (!pass && g.previous != listing::BenchmarkVerdict::kFailed) {
        e.delisted.push_back(g.label);
        e.delist_details += "\n" + g.label + ":\n";
        for (const auto& f : out.failures)
          e.delist_details += "  - " + Describe({f}) + ". " + f.guidance + "\n";
      }
      if (pass && g.previous == listing::BenchmarkVerdict::kFailed) e.relisted.push_back(g.label);
      if (pass && g.previous == listing::BenchmarkVerdict::kAwaitingFirst)
        e.first_listed.push_back(g.label);
    }
    e.gpus.push_back(std::move(out));
  }
  e.run_state = errored == static_cast<int>(gpus.size()) ? BenchmarkState::kError
                : (failed || errored)                    ? BenchmarkState::kFailed
                                                         : BenchmarkState::kPassed;
  std::string text;
  for (const auto& n : notes) text += (text.empty() ? "" : "; ") + n;
  if (errored)
    text +=
        std::string(text.empty() ? "" : "; ") + std::to_string(errored) + " GPU(s) not measured";
  if (!text.empty()) e.run_error = Truncate(text);
  return e;
}

}  // namespace gpunex::platform::benchmarks
