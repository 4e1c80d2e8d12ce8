#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>

#include "agent/gpu/gpu_source.h"
#include "common/testing/fake_clock.h"

namespace gpunex::agent {
namespace {

using gpunex::testing::FakeClock;
constexpr Timestamp kStart = FromUnixMicros(int64_t{1'795'000'000} * 1'000'000);

std::unique_ptr<GpuSource> MustCreate(std::string_view spec, std::string_view seed = "mk_1",
                                      const Clock& clock = SystemClock()) {
  auto source = EmulatedGpuSource(spec, 0.9, seed, clock);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return source.ok() ? std::move(source).value() : nullptr;
}

TEST(EmulatedGpuSource, InventoryFromCatalog) {
  auto source = MustCreate("h100-sxm-80gb:2, l4-24gb");
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->Kind(), "emulated");
  EXPECT_TRUE(source->Emulated());
  EXPECT_DOUBLE_EQ(source->PerfFactor(), 0.9);

  auto gpus = source->Inventory();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 3u);
  const std::regex uuid("GPU-emu-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  std::set<std::string> uuids;
  for (int i = 0; i < 3; ++i) {
    const GpuInfo& g = (*gpus)[i];
    EXPECT_EQ(g.index, i);
    EXPECT_TRUE(std::regex_match(g.uuid, uuid)) << g.uuid;
    uuids.insert(g.uuid);
    EXPECT_TRUE(g.emulated);
    EXPECT_EQ(g.driver_version, "emulated");
    EXPECT_GT(g.power_limit_w, 0);
    EXPECT_EQ(g.pcie_width_max, 16);
  }
  EXPECT_EQ(uuids.size(), 3u);
  EXPECT_EQ((*gpus)[0].name, "NVIDIA H100 80GB HBM3 (emulated)");
  EXPECT_EQ((*gpus)[0].catalog_id, "h100-sxm-80gb");
  EXPECT_EQ((*gpus)[0].vram_mb, 80 * 1024);
  EXPECT_EQ((*gpus)[0].pcie_gen_max, 5);
  EXPECT_EQ((*gpus)[0].power_limit_w, 700);
  EXPECT_EQ((*gpus)[2].name, "NVIDIA L4 (emulated)");
  EXPECT_EQ((*gpus)[2].catalog_id, "l4-24gb");
  EXPECT_EQ((*gpus)[2].vram_mb, 24 * 1024);
  EXPECT_EQ(ToJson((*gpus)[2]).at("emulated"), true);
}

TEST(EmulatedGpuSource, SameSeedSameUuids) {
  auto a = MustCreate("l4-24gb:2", "mk_alpha")->Inventory().value();
  auto b = MustCreate("l4-24gb:2", "mk_alpha")->Inventory().value();
  auto c = MustCreate("l4-24gb:2", "mk_beta")->Inventory().value();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].uuid, b[0].uuid);
  EXPECT_EQ(a[1].uuid, b[1].uuid);
  EXPECT_NE(a[0].uuid, c[0].uuid);
  EXPECT_NE(a[1].uuid, c[1].uuid);
}

TEST(EmulatedGpuSource, RejectsBadSpecsNamingThePart) {
  struct Case {
    std::string spec;
    std::string expect_in_message;
  };
  const Case cases[] = {
      {"", "empty"},
      {"   ", "empty"},
      {"h100-sxm-80gb:2,", "empty entry"},
      {",l4-24gb", "empty entry"},
      {"b200:1", "unknown model \"b200\""},
      {"l4-24gb:0", "\"l4-24gb:0\": the count must be 1..64"},
      {"l4-24gb:65", "\"l4-24gb:65\""},
      {"l4-24gb:-1", "\"l4-24gb:-1\""},
      {"l4-24gb:two", "\"l4-24gb:two\""},
      {"l4-24gb:2x", "\"l4-24gb:2x\""},
      {"l4-24gb:", "\"l4-24gb:\""},
      {"l4-24gb:1:2", "\"l4-24gb:1:2\""},
      {"l4-24gb:1,l4-24gb:2", "listed twice"},
      {"l4-24gb:40,h100-sxm-80gb:25", "more than 64 GPUs"},
  };
  for (const auto& c : cases) {
    auto source = EmulatedGpuSource(c.spec, 1.0, "mk_1");
    ASSERT_FALSE(source.ok()) << c.spec;
    EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(source.status().message().find(c.expect_in_message), std::string::npos)
        << c.spec << " -> " << source.status().message();
  }
  EXPECT_TRUE(EmulatedGpuSource("l4-24gb:32,h100-sxm-80gb:32", 1.0, "mk_1").ok());
}

TEST(EmulatedGpuSource, RejectsPerfFactorOutOfRangeAndEmptySeed) {
  for (double f : {0.0, -1.0, 2.01, std::nan("")}) {
    auto source = EmulatedGpuSource("l4-24gb", f, "mk_1");
    ASSERT_FALSE(source.ok()) << f;
    EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(source.status().message().find("perf_factor"), std::string::npos);
  }
  EXPECT_TRUE(EmulatedGpuSource("l4-24gb", 2.0, "mk_1").ok());
  EXPECT_TRUE(EmulatedGpuSource("l4-24gb", 0.01, "mk_1").ok());
  EXPECT_EQ(EmulatedGpuSource("l4-24gb", 1.0, "").status().code(), StatusCode::kInvalidArgument);
}

TEST(EmulatedGpuSource, TelemetryIsIdleDeterministicAndVaries) {
  FakeClock clock(kStart);
  auto source = MustCreate("h100-sxm-80gb:1,l4-24gb:1", "mk_1", clock);
  ASSERT_NE(source, nullptr);
  auto inventory = source->Inventory().value();

  auto first = source->Sample().value();
  auto again = source->Sample().value();
  ASSERT_EQ(first.size(), 2u);
  std::set<int> temps;
  std::set<double> watts;
  for (int minute = 0; minute < 24 * 60; ++minute) {
    clock.Advance(kOneMinute);
    auto sample = source->Sample().value();
    for (size_t i = 0; i < sample.size(); ++i) {
      const GpuTelemetry& t = sample[i];
      EXPECT_EQ(t.uuid, inventory[i].uuid);
      EXPECT_EQ(t.utilization_pct, 0);
      EXPECT_EQ(t.memory_used_mb, 0);
      EXPECT_GE(t.temperature_c, 35);
      EXPECT_LE(t.temperature_c, 45);
      EXPECT_EQ(t.throttle_reasons, 0u);
      EXPECT_TRUE(t.throttle_names.empty());
      EXPECT_GT(t.sm_clock_mhz, 0);
      if (i == 0) {
        EXPECT_GT(t.power_w, 55);  // H100 SXM idles near 70 W
        EXPECT_LT(t.power_w, 85);
        temps.insert(t.temperature_c);
        watts.insert(t.power_w);
      } else {
        EXPECT_GT(t.power_w, 12);  // L4 idles near 16 W
        EXPECT_LT(t.power_w, 20);
      }
    }
  }
  EXPECT_GE(temps.size(), 5u);
  EXPECT_GE(watts.size(), 100u);

  // The same time gives the same readings.
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(ToJson(first[i]), ToJson(again[i]));
  }
  clock.Advance(-kOneDay);
  auto replay = source->Sample().value();
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(ToJson(first[i]), ToJson(replay[i]));
}

TEST(EmulatedGpuSource, SafeFromSeveralThreads) {
  auto source = MustCreate("l4-24gb:8");
  ASSERT_NE(source, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int n = 0; n < 200; ++n) {
        EXPECT_EQ(source->Sample()->size(), 8u);
        EXPECT_EQ(source->Inventory()->size(), 8u);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace gpunex::agent
