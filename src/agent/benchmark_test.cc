#include "agent/benchmark.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace gpunex::agent {
namespace {

TEST(EmulatedBenchmark, ReferenceFiguresTimesTheFactorLabelledEmulated) {
  GpuInfo g;
  g.index = 1;
  g.uuid = "GPU-emu-1";
  g.name = "NVIDIA L4";
  g.catalog_id = "l4-24gb";
  g.pcie_width_max = 16;
  auto r = EmulatedGpubenchResult(g, 0.5, 60);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->at("emulated").as_bool());
  EXPECT_DOUBLE_EQ(r->at("compute").at("bf16_tensor_tflops").to_number<double>(), 60.5);
  EXPECT_DOUBLE_EQ(r->at("memory").at("triad_gbps").to_number<double>(), 150.0);
  EXPECT_EQ(r->at("device").at("pcie_width").as_int64(), 16);
  g.catalog_id = "";
  EXPECT_EQ(EmulatedGpubenchResult(g, 1, 60).status().code(), StatusCode::kNotFound);
}

TEST(EmulatedBenchmark, Percentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  auto [p50, p99] = Percentiles50And99(v);
  EXPECT_EQ(p50, 50);
  EXPECT_EQ(p99, 99);
  EXPECT_EQ(Percentiles50And99({}).first, 0);
  EXPECT_EQ(Percentiles50And99({7}).second, 7);
}

GpuInfo RealGpu() {
  GpuInfo g;
  g.index = 2;
  g.uuid = "GPU-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
  g.name = "NVIDIA L4";
  g.catalog_id = "l4-24gb";
  return g;
}

TEST(GpubenchWorkload, RunsGpubenchOnThatGpuAlone) {
  auto w = GpubenchWorkload("bmk_01JD3ABC", RealGpu(), 30, "gpunex/gpubench:0.1.0");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->workload_id, "bench-bmk_01JD3ABC-2");
  EXPECT_EQ(w->image, "gpunex/gpubench:0.1.0");
  EXPECT_EQ(w->command, (std::vector<std::string>{"--uuid", RealGpu().uuid, "--sustain-s", "30"}));
  EXPECT_EQ(w->gpu_uuids, std::vector<std::string>{RealGpu().uuid});
  EXPECT_EQ(w->timeout_s, 630);
  // A long benchmark id keeps its end, which makes it unique.
  auto long_id = GpubenchWorkload(std::string(80, 'b') + "x", RealGpu(), 30, "gpunex/gpubench");
  ASSERT_TRUE(long_id.ok()) << long_id.status().ToString();
  EXPECT_EQ(long_id->workload_id.size(), protocol::kMaxWorkloadIdLength);
  EXPECT_TRUE(long_id->workload_id.ends_with("bx-2"));
  // The image comes from the agent's configuration: checked like a platform's.
  auto bad = GpubenchWorkload("bmk_1", RealGpu(), 30, "Not An Image");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().fields().contains("image")) << bad.status().ToString();
}

TEST(BenchmarkResultParts, ErrorTextIsSafeAndBounded) {
  EXPECT_EQ(BenchmarkErrorText(NotFound("no GPU")), NotFound("no GPU").ToString());
  std::string text =
      BenchmarkErrorText(Internal("bad\x01"
                                  "byte\nnext line"));
  EXPECT_THAT(text, ::testing::HasSubstr("next line"));
  EXPECT_TRUE(IsCleanText(text, true)) << text;
  // Cut at a character boundary: "é" is two bytes.
  std::string long_text;
  while (long_text.size() < 2 * protocol::kMaxBenchmarkErrorLength) long_text += "é";
  text = BenchmarkErrorText(Internal(long_text));
  EXPECT_LE(text.size(), protocol::kMaxBenchmarkErrorLength);
  EXPECT_GE(text.size(), protocol::kMaxBenchmarkErrorLength - 1);
  EXPECT_TRUE(IsCleanText(text, true));
}

TEST(BenchmarkResultParts, MakeTheResultThePlatformParses) {
  protocol::BenchmarkResult r;
  r.benchmark_id = "bmk_1";
  auto figures = EmulatedGpubenchResult(RealGpu(), 1.0, 60);
  ASSERT_TRUE(figures.ok());
  r.gpus.push_back(GpuResult("GPU-a", figures));
  r.gpus.push_back(GpuResult("GPU-b", NotFound("the GPU is not on this machine now")));
  bench::NetworkResult net;
  net.download_mbit_s = 900;
  net.upload_mbit_s = 400.5;
  r.network = NetworkFigures({30, 10, 20}, net);
  bench::StorageResult disk;
  disk.seq_read_mb_s = 2000;
  disk.seq_write_mb_s = 1000;
  disk.rand_read_iops = 90000;
  disk.rand_read_p50_us = 80;
  disk.rand_read_p99_us = 300;
  disk.direct_io = false;
  r.storage = StorageFigures(disk);

  EXPECT_TRUE(r.gpus[0].ok);
  EXPECT_EQ(*r.gpus[0].result, *figures);
  EXPECT_FALSE(r.gpus[1].ok);
  EXPECT_THAT(r.gpus[1].error, ::testing::HasSubstr("not on this machine"));
  EXPECT_EQ(r.network->rtt_p50_ms, 20);
  EXPECT_EQ(r.network->rtt_p99_ms, 30);
  EXPECT_EQ(r.network->upload_mbit_s, 400.5);
  EXPECT_EQ(r.storage->rand_read_iops, 90000);
  EXPECT_FALSE(r.storage->direct_io);

  // On the wire: what the platform parses (common/agent_protocol.h).
  auto text = ToJsonText(protocol::ToJson(r));
  auto v = ParseJson(text);
  ASSERT_TRUE(v.ok());
  auto back = protocol::ParseBenchmarkResult(v->get_object());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gpus[1].error, r.gpus[1].error);
  EXPECT_TRUE(back->network == r.network);
  EXPECT_TRUE(back->storage == r.storage);
}

// A machine's GPUs as given.
class FakeGpus final : public GpuSource {
 public:
  FakeGpus(std::vector<GpuInfo> gpus, bool emulated)
      : gpus_(std::move(gpus)), emulated_(emulated) {}
  std::string Kind() const override { return "fake"; }
  bool Emulated() const override { return emulated_; }
  double PerfFactor() const override { return 0.5; }
  StatusOr<std::vector<GpuInfo>> Inventory() override { return gpus_; }
  StatusOr<std::vector<GpuTelemetry>> Sample() override { return std::vector<GpuTelemetry>{}; }

 private:
  std::vector<GpuInfo> gpus_;
  bool emulated_;
};

// Steps that answer as told and count their calls.
struct FakeSteps {
  StatusOr<json::object> gpubench = json::object{{"tool", "gpunex-gpubench"}};
  StatusOr<std::vector<double>> round_trips = std::vector<double>{30, 10, 20};
  StatusOr<bench::NetworkResult> throughput = bench::NetworkResult{900, 400, 1, 1};
  std::vector<Status> throughput_first;  // answered, in order, before `throughput`
  StatusOr<bench::StorageResult> storage = bench::StorageResult{1000, 2000, 90000, 80, 300};
  std::vector<std::string> calls;

  BenchmarkSteps Steps() {
    BenchmarkSteps s;
    s.gpubench = [this](const GpuInfo& gpu, int64_t sustain_s) {
      calls.push_back("gpubench " + gpu.uuid + " " + std::to_string(sustain_s));
      return gpubench;
    };
    s.round_trips = [this](int64_t n) {
      calls.push_back("round_trips " + std::to_string(n));
      return round_trips;
    };
    s.throughput = [this](int64_t bytes) {
      calls.push_back("throughput " + std::to_string(bytes));
      if (!throughput_first.empty()) {
        Status first = throughput_first.front();
        throughput_first.erase(throughput_first.begin());
        return StatusOr<bench::NetworkResult>(first);
      }
      return throughput;
    };
    s.storage = [this](int64_t file_bytes, double seconds) {
      calls.push_back("storage " + std::to_string(file_bytes) + " " + std::to_string(seconds));
      return storage;
    };
    return s;
  }
};

protocol::RunBenchmark Request(std::vector<std::string> uuids, bool machine_phases) {
  protocol::RunBenchmark r;
  r.benchmark_id = "bmk_1";
  for (auto& u : uuids) r.gpus.push_back({u, "l4-24gb"});
  r.machine_phases = machine_phases;
  r.sustain_s = 30;
  r.storage_file_mb = 64;
  r.storage_seconds = 1.5;
  r.network_mb = 8;
  r.pings = 5;
  return r;
}

TEST(RunBenchmark, MeasuresEachGpuThenTheMachine) {
  FakeGpus gpus({RealGpu()}, false);
  FakeSteps steps;
  auto r = RunBenchmark(Request({"GPU-gone", RealGpu().uuid}, true), gpus, steps.Steps());
  EXPECT_EQ(steps.calls,
            (std::vector<std::string>{"gpubench " + RealGpu().uuid + " 30", "round_trips 5",
                                      "throughput 8388608", "storage 67108864 1.500000"}));
  EXPECT_EQ(r.benchmark_id, "bmk_1");
  EXPECT_FALSE(r.emulated);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].uuid, "GPU-gone");
  EXPECT_FALSE(r.gpus[0].ok);
  EXPECT_THAT(r.gpus[0].error, ::testing::HasSubstr("not on this machine"));
  EXPECT_TRUE(r.gpus[1].ok);
  EXPECT_EQ(r.gpus[1].result, *steps.gpubench);
  ASSERT_TRUE(r.network.has_value());
  EXPECT_EQ(r.network->rtt_p50_ms, 20);
  EXPECT_EQ(r.network->rtt_p99_ms, 30);
  EXPECT_EQ(r.network->download_mbit_s, 900);
  ASSERT_TRUE(r.storage.has_value());
  EXPECT_EQ(r.storage->seq_write_mb_s, 1000);
  EXPECT_EQ(r.storage->seq_read_mb_s, 2000);
  EXPECT_EQ(r.network_error, "");
  EXPECT_EQ(r.storage_error, "");
  auto v = ParseJson(ToJsonText(protocol::ToJson(r)));
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(protocol::ParseBenchmarkResult(v->get_object()).ok());
}

TEST(RunBenchmark, EmulatedGpusAnswerAtOnce) {
  GpuInfo g = RealGpu();
  g.uuid = "GPU-emu-0d6f2a4e-1b2c-4d5e-8f90-a1b2c3d4e5f6";
  g.emulated = true;
  FakeGpus gpus({g}, true);
  FakeSteps steps;
  auto r = RunBenchmark(Request({g.uuid}, false), gpus, steps.Steps());
  EXPECT_TRUE(steps.calls.empty());  // no container, and no machine phases
  EXPECT_TRUE(r.emulated);
  ASSERT_EQ(r.gpus.size(), 1u);
  ASSERT_TRUE(r.gpus[0].ok) << r.gpus[0].error;
  EXPECT_EQ(*r.gpus[0].result, *EmulatedGpubenchResult(g, 0.5, 30));
  EXPECT_FALSE(r.network || r.storage);
  EXPECT_EQ(r.network_error + r.storage_error, "");
}

TEST(RunBenchmark, RecordsWhatCouldNotBeMeasured) {
  FakeGpus gpus({RealGpu()}, false);
  FakeSteps steps;
  steps.gpubench = Internal("gpunex-gpubench did not finish");
  steps.round_trips = Unavailable("the platform channel is down");
  steps.storage = FailedPrecondition("the disk would get too full");
  auto r = RunBenchmark(Request({RealGpu().uuid}, true), gpus, steps.Steps());
  // No throughput without the channel; the network phase is tried twice.
  EXPECT_THAT(steps.calls,
              ::testing::ElementsAre("gpubench " + RealGpu().uuid + " 30", "round_trips 5",
                                     "round_trips 5", "storage 67108864 1.500000"));
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_FALSE(r.gpus[0].ok);
  EXPECT_FALSE(r.gpus[0].result.has_value());
  EXPECT_THAT(r.gpus[0].error, ::testing::HasSubstr("did not finish"));
  EXPECT_FALSE(r.network.has_value());
  EXPECT_THAT(r.network_error, ::testing::HasSubstr("channel is down"));
  EXPECT_FALSE(r.storage.has_value());
  EXPECT_THAT(r.storage_error, ::testing::HasSubstr("too full"));

  steps = FakeSteps();
  steps.throughput = Unauthenticated("the agent token is revoked");
  r = RunBenchmark(Request({}, true), gpus, steps.Steps());
  EXPECT_THAT(r.network_error, ::testing::HasSubstr("revoked"));
  EXPECT_TRUE(r.storage.has_value());
}

TEST(RunBenchmark, TakesTheNetworkPhaseOnceMoreAfterAFailure) {
  FakeGpus gpus({RealGpu()}, false);
  FakeSteps steps;
  steps.throughput_first = {Unavailable("the upload stalled")};
  auto r = RunBenchmark(Request({}, true), gpus, steps.Steps());
  ASSERT_TRUE(r.network.has_value());
  EXPECT_EQ(r.network_error, "");
  EXPECT_THAT(steps.calls,
              ::testing::ElementsAre("round_trips 5", "throughput 8388608", "round_trips 5",
                                     "throughput 8388608", "storage 67108864 1.500000"));

  // Twice failed: reported, not tried a third time.
  steps = FakeSteps();
  steps.throughput_first = {Unavailable("the upload stalled"),
                            Unavailable("the upload stalled again")};
  r = RunBenchmark(Request({}, true), gpus, steps.Steps());
  EXPECT_FALSE(r.network.has_value());
  EXPECT_THAT(r.network_error, ::testing::HasSubstr("stalled again"));
  EXPECT_EQ(std::count(steps.calls.begin(), steps.calls.end(), "throughput 8388608"), 2);
}

}  // namespace
}  // namespace gpunex::agent
