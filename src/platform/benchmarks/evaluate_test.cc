// The pure steps of applying a benchmark result: Evaluate (figures, score and thresholds
// per GPU, the run's state, the verdicts and what changed for the listing) and the
// notices it leads to. No store, no clock.
#include "platform/benchmarks/evaluate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string_view>

#include "platform/benchmarks/notices.h"

namespace gpunex::platform::benchmarks {
namespace {

using listing::BenchmarkVerdict;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// An L4 (reference 30.3 / 30.3 / 121 / 121 / 60 TFLOPS, 300 GB/s) measured at `factor` of
// its reference, its memory at `mem_factor`.
GpuFigures L4Figures(double factor = 0.9, double mem_factor = 0.9) {
  const GpuModel& l4 = *FindGpuModel("l4-24gb");
  GpuFigures f;
  f.fp32_tflops = l4.fp32_tflops * factor;
  f.fp16_tflops = l4.fp16_tflops * factor;
  f.fp16_tensor_tflops = f.bf16_tensor_tflops = l4.fp16_tensor_tflops * factor;
  f.tf32_tensor_tflops = l4.tf32_tensor_tflops * factor;
  f.mem_read_gbps = f.mem_write_gbps = f.mem_copy_gbps = f.mem_triad_gbps =
      l4.mem_bw_gbps * mem_factor;
  f.sustained_seconds = 60;
  f.sustained_mean_tflops = 100;
  f.sustained_min_over_median = 0.98;
  f.pcie_width = 16;
  f.pcie_gen = 4;
  return f;
}

GpuUnderTest L4Gpu(int index, BenchmarkVerdict previous = BenchmarkVerdict::kPassed) {
  GpuUnderTest g;
  g.gpu_id = "gpu_" + std::to_string(index);
  g.uuid = "GPU-0000000" + std::to_string(index) + "-1111-2222-3333-444444444444";
  g.catalog_id = "l4-24gb";
  g.label = "NVIDIA L4 (GPU " + std::to_string(index) + ")";
  g.pcie_width_max = 16;
  g.model = *FindGpuModel("l4-24gb");
  g.previous = previous;
  return g;
}

protocol::BenchmarkResult::Gpu Measured(const GpuUnderTest& g, const GpuFigures& f) {
  return {g.uuid, true, "", protocol::ToJson(f)};
}

const NetworkFigures kGoodNetwork{1.0, 3.0, 900.0, 800.0};
const StorageFigures kGoodStorage{1500.0, 1200.0, 90000.0, 90.0, 400.0, true};

// A result that measured every GPU of `gpus` with `f`, with good machine figures.
protocol::BenchmarkResult AllMeasured(const std::vector<GpuUnderTest>& gpus, const GpuFigures& f) {
  protocol::BenchmarkResult r;
  r.benchmark_id = "bmk_1";
  for (const auto& g : gpus) r.gpus.push_back(Measured(g, f));
  r.network = kGoodNetwork;
  r.storage = kGoodStorage;
  return r;
}

std::vector<std::string> Metrics(const std::vector<Failure>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs) out.push_back(f.metric);
  return out;
}

// Whether `s` is well-formed UTF-8 (no truncated or stray sequences).
bool IsUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80             ? 1
                       : (c & 0xE0) == 0xC0 ? 2
                       : (c & 0xF0) == 0xE0 ? 3
                       : (c & 0xF8) == 0xF0 ? 4
                                            : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(Evaluate, APassingRunScoresEveryGpuAndKeepsTheMachineFigures) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1)};
  GpuFigures f = L4Figures();
  f.emulated = true;
  const Evaluation e = Evaluate(AllMeasured(gpus, f), /*machine_phases=*/true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "passed");
  EXPECT_EQ(e.run_error, std::nullopt);
  EXPECT_TRUE(e.emulated) << "the figures say the GPU is emulated";
  EXPECT_EQ(e.network, kGoodNetwork);
  EXPECT_EQ(e.storage, kGoodStorage);
  EXPECT_THAT(e.machine_failures, IsEmpty());
  ASSERT_EQ(e.gpus.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const GpuOutcome& o = e.gpus[i];
    EXPECT_EQ(o.gpu_id, gpus[i].gpu_id);
    EXPECT_EQ(Name(o.state), "passed");
    EXPECT_EQ(o.figures, f);
    ASSERT_TRUE(o.score.has_value());
    EXPECT_DOUBLE_EQ(*o.score, PerformanceScore(f));
    EXPECT_THAT(o.failures, IsEmpty());
    EXPECT_EQ(o.error, std::nullopt);
    EXPECT_EQ(o.facts.verdict, BenchmarkVerdict::kPassed);
    EXPECT_EQ(o.facts.note, "");
    EXPECT_FALSE(o.facts.benchmarking);
  }
  // Both were listed before: nothing changed for the provider.
  EXPECT_THAT(e.delisted, IsEmpty());
  EXPECT_THAT(e.relisted, IsEmpty());
  EXPECT_THAT(e.first_listed, IsEmpty());
  EXPECT_THAT(ListingNotices(e, "rig"), IsEmpty());
}

TEST(Evaluate, AGpuBelowAThresholdFailsWithTheFailureNamed) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1)};
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  const GpuFigures slow = L4Figures(0.9, /*mem_factor=*/0.5);  // triad 150 < 0.70 · 300
  r.gpus[1] = Measured(gpus[1], slow);
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "failed");
  EXPECT_EQ(e.run_error, std::nullopt) << "every GPU was measured";
  ASSERT_EQ(e.gpus.size(), 2u);
  EXPECT_EQ(Name(e.gpus[0].state), "passed");
  const GpuOutcome& o = e.gpus[1];
  EXPECT_EQ(Name(o.state), "failed");
  EXPECT_THAT(Metrics(o.failures), ElementsAre("memory_triad_gbps"));
  EXPECT_NEAR(o.failures[0].required, 210.0, 1e-9);
  // A failed GPU still has its score: the customer-facing figure of what it reached.
  ASSERT_TRUE(o.score.has_value());
  EXPECT_DOUBLE_EQ(*o.score, PerformanceScore(slow));
  EXPECT_EQ(o.facts.verdict, BenchmarkVerdict::kFailed);
  EXPECT_EQ(o.facts.note, "benchmark: memory_triad_gbps 150 < 210 required");
  EXPECT_THAT(e.delisted, ElementsAre("NVIDIA L4 (GPU 1)"));
  EXPECT_THAT(e.delist_details, HasSubstr("NVIDIA L4 (GPU 1):"));
  EXPECT_THAT(e.delist_details,
              HasSubstr("memory_triad_gbps 150 < 210 required. Memory bandwidth is low"));
  EXPECT_THAT(e.delist_details, ::testing::Not(HasSubstr("GPU 0")));
}

// An agent that answers with figures no GPU of its model reaches (1000 × the reference,
// as a probe did): the GPU fails as implausible, is delisted, and gets no score.
TEST(Evaluate, FiguresAboveWhatTheModelCanReachFailAsImplausible) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1)};
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  r.gpus[1] = Measured(gpus[1], L4Figures(1000, 1000));
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "failed");
  EXPECT_EQ(Name(e.gpus[0].state), "passed");
  const GpuOutcome& o = e.gpus[1];
  EXPECT_EQ(Name(o.state), "failed");
  EXPECT_THAT(Metrics(o.failures),
              ElementsAre("implausible.fp32_tflops", "implausible.fp16_tflops",
                          "implausible.fp16_tensor_tflops", "implausible.bf16_tensor_tflops",
                          "implausible.tf32_tensor_tflops", "implausible.memory_triad_gbps"));
  EXPECT_EQ(o.score, std::nullopt) << "no score from figures that are not believed";
  EXPECT_EQ(o.facts.verdict, BenchmarkVerdict::kFailed);
  EXPECT_THAT(o.facts.note, StartsWith("benchmark: fp32_tflops 30300 > 39.4 plausible"));
  EXPECT_THAT(e.delisted, ElementsAre("NVIDIA L4 (GPU 1)"));
  EXPECT_THAT(e.delist_details, HasSubstr("not believed"));
  // Just under the ceiling (1.3 × the reference) is believed; just over is not.
  r.gpus[1] = Measured(gpus[1], L4Figures(1.29, 1.29));
  EXPECT_EQ(Name(Evaluate(r, true, gpus, Thresholds{}).gpus[1].state), "passed");
  r.gpus[1] = Measured(gpus[1], L4Figures(0.9, 1.31));
  EXPECT_THAT(Metrics(Evaluate(r, true, gpus, Thresholds{}).gpus[1].failures),
              ElementsAre("implausible.memory_triad_gbps"));
}

TEST(Evaluate, TheThresholdsOfEachGpuAndItsLinkWidthApply) {
  std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1), L4Gpu(2)};
  gpus[0].thresholds.memory = 0.4;  // an operator's override for this model
  gpus[1].model.reset();            // "other": no reference figures
  gpus[1].catalog_id = "other";
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures(0.9, 0.5));
  GpuFigures narrow = L4Figures();
  narrow.pcie_width = 8;
  r.gpus[2] = Measured(gpus[2], narrow);
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.gpus[0].state), "passed") << "150 GB/s ≥ 0.4 · 300";
  EXPECT_EQ(Name(e.gpus[1].state), "passed")
      << "a model without reference figures is not held to them";
  EXPECT_EQ(Name(e.gpus[2].state), "failed");
  EXPECT_THAT(Metrics(e.gpus[2].failures), ElementsAre("pcie_width"));
  EXPECT_EQ(e.gpus[2].facts.note, "benchmark: PCIe link x8 of x16");
}

TEST(Evaluate, MachineFailuresCountAgainstEveryGpuOfTheRun) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1, BenchmarkVerdict::kAwaitingFirst)};
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  r.network->download_mbit_s = 10;  // < 100
  r.storage->rand_read_iops = 100;  // < 2000
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "failed");
  EXPECT_THAT(Metrics(e.machine_failures),
              ElementsAre("network.download_mbit_s", "storage.rand_read_iops"));
  EXPECT_EQ(e.network, r.network);
  EXPECT_EQ(e.storage, r.storage);
  for (const GpuOutcome& o : e.gpus) {
    EXPECT_EQ(Name(o.state), "failed") << o.gpu_id;
    EXPECT_THAT(Metrics(o.failures),
                ElementsAre("network.download_mbit_s", "storage.rand_read_iops"));
    EXPECT_EQ(o.facts.verdict, BenchmarkVerdict::kFailed);
    EXPECT_THAT(o.facts.note,
                StartsWith("benchmark: network.download_mbit_s 10.0 < 100 required; "));
  }
  // The GPU awaiting its first benchmark is delisted too (it was never listed, but the
  // provider learns why it will not be).
  EXPECT_THAT(e.delisted, ElementsAre("NVIDIA L4 (GPU 0)", "NVIDIA L4 (GPU 1)"));
  EXPECT_THAT(e.delist_details, HasSubstr("put it on a local NVMe SSD"));

  // The thresholds for the machine are the caller's, not the GPU's.
  Thresholds lenient;
  lenient.download_mbit_s = 5;
  lenient.rand_read_iops = 50;
  EXPECT_EQ(Name(Evaluate(r, true, gpus, lenient).run_state), "passed");
}

TEST(Evaluate, WithoutMachinePhasesTheMachineFiguresAreIgnored) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0)};
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  r.network->download_mbit_s = 1;
  r.storage_error = "disk full";
  const Evaluation e = Evaluate(r, /*machine_phases=*/false, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "passed");
  EXPECT_EQ(e.network, std::nullopt);
  EXPECT_EQ(e.storage, std::nullopt);
  EXPECT_THAT(e.machine_failures, IsEmpty());
  EXPECT_EQ(e.run_error, std::nullopt);
}

TEST(Evaluate, MachinePhaseErrorsAreNotedWithoutFailingTheGpus) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0)};
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  r.network.reset();
  r.network_error = "upload refused";
  r.storage.reset();
  r.storage_error = "O_DIRECT failed";
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "passed");
  EXPECT_EQ(e.run_error, "network: upload refused; storage: O_DIRECT failed");
  EXPECT_EQ(e.network, std::nullopt);
  EXPECT_EQ(e.storage, std::nullopt);
  EXPECT_EQ(e.gpus[0].facts.verdict, BenchmarkVerdict::kPassed);
}

TEST(Evaluate, AGpuThatWasNotMeasuredGetsAnErrorAndNoVerdict) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0, BenchmarkVerdict::kFailed), L4Gpu(1), L4Gpu(2),
                                          L4Gpu(3, BenchmarkVerdict::kAwaitingFirst)};
  protocol::BenchmarkResult r;
  r.benchmark_id = "bmk_1";
  // GPU 0: missing from the result.
  r.gpus.push_back({gpus[1].uuid, false, "CUDA error 999", std::nullopt});
  r.gpus.push_back({gpus[2].uuid, true, "", std::nullopt});  // ok, but no figures
  json::object bad = protocol::ToJson(L4Figures());
  bad["compute"].as_object()["bf16_tensor_tflops"] = -1.0;
  r.gpus.push_back({gpus[3].uuid, true, "", bad});
  r.network = kGoodNetwork;
  r.storage = kGoodStorage;
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_EQ(Name(e.run_state), "error");
  EXPECT_EQ(e.run_error, "4 GPU(s) not measured");
  ASSERT_EQ(e.gpus.size(), 4u);
  EXPECT_EQ(e.gpus[0].error, "the agent reported no result for this GPU");
  EXPECT_EQ(e.gpus[1].error, "the benchmark could not run: CUDA error 999");
  EXPECT_EQ(e.gpus[2].error, "the benchmark could not run: no figures");
  ASSERT_TRUE(e.gpus[3].error.has_value());
  EXPECT_THAT(*e.gpus[3].error, StartsWith("malformed figures: "));
  EXPECT_THAT(*e.gpus[3].error, HasSubstr("bf16_tensor_tflops"));
  for (const GpuOutcome& o : e.gpus) {
    EXPECT_EQ(Name(o.state), "error") << o.gpu_id;
    EXPECT_EQ(o.score, std::nullopt) << o.gpu_id;
    EXPECT_EQ(o.figures, std::nullopt) << o.gpu_id;
    EXPECT_THAT(o.failures, IsEmpty()) << o.gpu_id;
    EXPECT_EQ(o.facts.verdict, std::nullopt) << o.gpu_id << ": the listing stays as it was";
  }
  EXPECT_THAT(e.delisted, IsEmpty());
  EXPECT_THAT(e.relisted, IsEmpty());
  EXPECT_THAT(e.first_listed, IsEmpty());
}

TEST(Evaluate, TheRunPassesOnlyWhenEveryGpuPassedAndErrsOnlyWhenNoneWasMeasured) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1)};
  const GpuFigures good = L4Figures(), slow = L4Figures(0.3);
  const protocol::BenchmarkResult::Gpu missing{gpus[1].uuid, false, "no GPU", std::nullopt};
  struct Case {
    std::vector<protocol::BenchmarkResult::Gpu> results;
    std::string state;
    std::optional<std::string> error;
  };
  const std::vector<Case> cases = {
      {{Measured(gpus[0], good), Measured(gpus[1], good)}, "passed", std::nullopt},
      {{Measured(gpus[0], good), Measured(gpus[1], slow)}, "failed", std::nullopt},
      {{Measured(gpus[0], good), missing}, "failed", "1 GPU(s) not measured"},
      {{Measured(gpus[0], slow), missing}, "failed", "1 GPU(s) not measured"},
      {{missing}, "error", "2 GPU(s) not measured"},
  };
  for (const Case& c : cases) {
    protocol::BenchmarkResult r;
    r.gpus = c.results;
    const Evaluation e = Evaluate(r, false, gpus, Thresholds{});
    EXPECT_EQ(Name(e.run_state), c.state) << c.results.size() << " results, expected " << c.state;
    EXPECT_EQ(e.run_error, c.error) << c.state;
  }
}

TEST(Evaluate, ListingChangesFollowTheVerdictBefore) {
  const std::vector<GpuUnderTest> gpus = {
      L4Gpu(0, BenchmarkVerdict::kPassed),         // passes again: nothing to say
      L4Gpu(1, BenchmarkVerdict::kFailed),         // passes: listed again
      L4Gpu(2, BenchmarkVerdict::kAwaitingFirst),  // passes: listed for the first time
      L4Gpu(3, BenchmarkVerdict::kFailed),         // fails again: not delisted twice
      L4Gpu(4, BenchmarkVerdict::kPassed),         // fails: delisted
      L4Gpu(5, BenchmarkVerdict::kAwaitingFirst),  // fails: delisted
  };
  protocol::BenchmarkResult r = AllMeasured(gpus, L4Figures());
  const GpuFigures slow = L4Figures(0.3);
  for (int i : {3, 4, 5}) r.gpus[i] = Measured(gpus[i], slow);
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  EXPECT_THAT(e.relisted, ElementsAre("NVIDIA L4 (GPU 1)"));
  EXPECT_THAT(e.first_listed, ElementsAre("NVIDIA L4 (GPU 2)"));
  EXPECT_THAT(e.delisted, ElementsAre("NVIDIA L4 (GPU 4)", "NVIDIA L4 (GPU 5)"));
  EXPECT_THAT(e.delist_details, ::testing::Not(HasSubstr("GPU 3)")));
  // The GPU that failed again still gets its new verdict and note.
  EXPECT_EQ(e.gpus[3].facts.verdict, BenchmarkVerdict::kFailed);
  EXPECT_THAT(e.gpus[3].facts.note, StartsWith("benchmark: fp32_tflops "));
}

TEST(Truncate, CutsLongTextsOnACharacterBoundary) {
  EXPECT_EQ(Truncate(""), "");
  EXPECT_EQ(Truncate("short"), "short");
  const std::string exact(kMaxReasonLength, 'x');
  EXPECT_EQ(Truncate(exact), exact);
  EXPECT_EQ(Truncate(exact + "y"), exact + "…");

  // A character of 1 to 4 bytes after a prefix that puts the cut at each byte inside it:
  // the longest prefix of whole characters is kept, then "…".
  for (const std::string ch : {"é", "€", "𝄞"}) {
    for (size_t pad = 0; pad < ch.size(); ++pad) {
      std::string s(pad, 'a');
      while (s.size() <= kMaxReasonLength + 8) s += ch;
      const std::string t = Truncate(s);
      ASSERT_TRUE(t.ends_with("…")) << ch << " pad " << pad;
      const std::string kept = t.substr(0, t.size() - std::string("…").size());
      EXPECT_TRUE(IsUtf8(kept)) << ch << " pad " << pad;
      EXPECT_TRUE(s.starts_with(kept)) << ch << " pad " << pad;
      EXPECT_LE(kept.size(), kMaxReasonLength) << ch << " pad " << pad;
      EXPECT_GT(kept.size() + ch.size(), kMaxReasonLength)
          << ch << " pad " << pad << ": a whole character that fits was dropped";
    }
  }
}

TEST(Evaluate, LongErrorsAreTruncated) {
  const std::vector<GpuUnderTest> gpus = {L4Gpu(0), L4Gpu(1)};
  protocol::BenchmarkResult r;
  std::string long_error;
  while (long_error.size() < 3 * kMaxReasonLength) long_error += "défaillance ";
  r.gpus.push_back({gpus[0].uuid, false, long_error, std::nullopt});
  r.gpus.push_back(Measured(gpus[1], L4Figures()));
  r.network_error = long_error;
  const Evaluation e = Evaluate(r, true, gpus, Thresholds{});
  ASSERT_TRUE(e.gpus[0].error.has_value());
  EXPECT_EQ(*e.gpus[0].error, Truncate("the benchmark could not run: " + long_error));
  EXPECT_LT(e.gpus[0].error->size(), long_error.size());
  EXPECT_TRUE(IsUtf8(*e.gpus[0].error));
  ASSERT_TRUE(e.run_error.has_value());
  EXPECT_THAT(*e.run_error, StartsWith("network: défaillance"));
  EXPECT_TRUE(e.run_error->ends_with("…")) << "the GPU count after the long note is cut off";
  EXPECT_LE(e.run_error->size(), kMaxReasonLength + std::string("…").size());
  EXPECT_TRUE(IsUtf8(*e.run_error));
}

// --- notices

Evaluation Changes(std::vector<std::string> delisted, std::vector<std::string> relisted,
                   std::vector<std::string> first_listed) {
  Evaluation e;
  e.delisted = std::move(delisted);
  e.relisted = std::move(relisted);
  e.first_listed = std::move(first_listed);
  if (!e.delisted.empty())
    e.delist_details = "\nNVIDIA L4 (GPU 1):\n  - memory_triad_gbps 150 < 210 required.\n";
  return e;
}

TEST(Notices, OnePerKindOfChangeWithEmailForDelistingAndRelisting) {
  EXPECT_THAT(ListingNotices(Changes({}, {}, {}), "rig"), IsEmpty());

  const auto all = ListingNotices(Changes({"NVIDIA L4 (GPU 1)", "NVIDIA L4 (GPU 2)"},
                                          {"NVIDIA L4 (GPU 3)"}, {"NVIDIA L4 (GPU 0)"}),
                                  "rig-7");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].kind, "benchmark.delisted");
  EXPECT_EQ(all[0].title, "GPU delisted on rig-7 after its benchmark");
  EXPECT_TRUE(all[0].email);
  EXPECT_THAT(all[0].text, HasSubstr("NVIDIA L4 (GPU 1), NVIDIA L4 (GPU 2)."));
  EXPECT_THAT(all[0].text, HasSubstr("memory_triad_gbps 150 < 210 required"));
  EXPECT_THAT(all[0].text, HasSubstr("ask for a re-run"));
  EXPECT_EQ(all[1].kind, "benchmark.relisted");
  EXPECT_EQ(all[1].title, "GPU listed again on rig-7");
  EXPECT_TRUE(all[1].email);
  EXPECT_THAT(all[1].text, HasSubstr("offered to customers again: NVIDIA L4 (GPU 3)."));
  EXPECT_EQ(all[2].kind, "benchmark.listed");
  EXPECT_EQ(all[2].title, "GPU listed on rig-7");
  EXPECT_FALSE(all[2].email) << "a first listing is told on the dashboard only";
  EXPECT_THAT(all[2].text,
              HasSubstr("passed their first benchmark and are now offered to customers: NVIDIA L4 "
                        "(GPU 0)."));

  const auto relisted = ListingNotices(Changes({}, {"NVIDIA L4 (GPU 3)"}, {}), "rig-7");
  ASSERT_EQ(relisted.size(), 1u);
  EXPECT_EQ(relisted[0].kind, "benchmark.relisted");
}

TEST(Notices, EmailsGreetTheProviderAndLinkTheBenchmarkTab) {
  const Notice n{"benchmark.relisted", "GPU listed again on rig", "These GPUs ...", true};
  // The subject carries fixed words only, never the machine name its provider typed.
  EXPECT_EQ(NoticeEmailSubject(n), "gpunex: a GPU is listed again");
  const std::string body =
      NoticeEmailBody(n, "Ana", "https://gpunex.example/#/provider/benchmark?machine=m1");
  EXPECT_THAT(body, StartsWith("Hello Ana,\n\nThese GPUs ..."));
  EXPECT_THAT(body, HasSubstr("Benchmark tab of your Provider Dashboard: "
                              "https://gpunex.example/#/provider/benchmark?machine=m1"));
  EXPECT_THAT(NoticeEmailBody(n, "", "x"), StartsWith("Hello there,\n\n"));
}

// running → passed | failed | error, and nothing leaves an end.
TEST(BenchmarkStates, ARunEndsOnceFromRunning) {
  using enum BenchmarkState;
  static_assert(BenchmarkMayGo(kRunning, kPassed));
  static_assert(BenchmarkMayGo(kRunning, kFailed));
  static_assert(BenchmarkMayGo(kRunning, kError));
  static_assert(!BenchmarkMayGo(kRunning, kRunning));
  static_assert(!BenchmarkMayGo(kPassed, kFailed));
  static_assert(!BenchmarkMayGo(kError, kRunning));
  static_assert(!BenchmarkMayGo(kFailed, kFailed));
}

// The one table of names of the states and the reasons: each reads back as itself, with
// the names the API and the database have always used.
TEST(BenchmarkStates, EachStateAndReasonHasOneNameThatReadsBack) {
  for (BenchmarkState s : {BenchmarkState::kRunning, BenchmarkState::kPassed,
                           BenchmarkState::kFailed, BenchmarkState::kError}) {
    EXPECT_EQ(kBenchmarkStateNames.Parse(Name(s)), s) << Name(s);
  }
  std::set<std::string_view> names;
  for (const auto& [reason, name] : kBenchmarkReasonNames.entries) {
    EXPECT_EQ(Name(reason), name);
    EXPECT_EQ(kBenchmarkReasonNames.Parse(name), reason) << name;
    names.insert(name);
  }
  EXPECT_EQ(names, (std::set<std::string_view>{"spot_check", "periodic", "retry", "new_gpu",
                                               "hardware_change", "first_connect", "requested"}));
  EXPECT_THROW(kBenchmarkStateNames.ParseStored("Passed"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::benchmarks
