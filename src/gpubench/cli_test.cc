#include "gpubench/cli.h"

#include <gtest/gtest.h>

#include <array>

namespace gpunex::gpubench {
namespace {

StatusOr<Options> Parse(std::vector<std::string_view> args) { return ParseOptions(args); }

TEST(ParseOptions, DefaultsToDeviceZeroAndTheDefaultPlan) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->device, -1);
  EXPECT_EQ(o->uuid, "");
  EXPECT_EQ(o->catalog_id, "");
  EXPECT_EQ(o->sustain_s, -1);
  EXPECT_FALSE(o->quick);
}

TEST(ParseOptions, ReadsEveryOptionInBothForms) {
  auto o =
      Parse({"--device", "3", "--catalog-id=h200-sxm-141gb", "--sustain-s", "12.5", "--quick"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->device, 3);
  EXPECT_EQ(o->catalog_id, "h200-sxm-141gb");
  EXPECT_DOUBLE_EQ(o->sustain_s, 12.5);
  EXPECT_TRUE(o->quick);

  o = Parse({"--uuid=GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5", "--sustain-s=0"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->uuid, "GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5");
  EXPECT_EQ(o->sustain_s, 0);
}

TEST(ParseOptions, RejectsWhatItCannotUse) {
  for (const auto& args : std::vector<std::vector<std::string_view>>{
           {"--device"},
           {"--device", "-1"},
           {"--device", "x"},
           {"--device", "0", "--uuid", "GPU-1234"},
           {"--uuid", "MIG-1234"},
           {"--uuid", "GPU-zz"},
           {"--sustain-s", "3601"},
           {"--sustain-s", "-1"},
           {"--sustain-s", "nan"},
           {"--catalog-id"},
           {"--quick=yes"},
           {"--frobnicate"},
       }) {
    auto o = Parse(args);
    EXPECT_FALSE(o.ok()) << args[0];
    if (!o.ok()) {
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseOptions, HelpAndVersion) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  EXPECT_NE(Usage().find("--sustain-s"), std::string::npos);
}

TEST(MakePlan, FullRunSustainsSixtySecondsAndTimesEachFigureForLongEnough) {
  Options o;
  Plan p = MakePlan(o);
  EXPECT_EQ(p.sustain_s, 60);
  EXPECT_EQ(p.interval_s, 1);
  EXPECT_EQ(p.sample_ms, 500);
  EXPECT_GE(p.target_ms, 200);
  EXPECT_EQ(p.memory_buffer_cap, uint64_t{1} << 30);
  EXPECT_NE(std::find(p.gemm_sizes.begin(), p.gemm_sizes.end(), 8192), p.gemm_sizes.end());
  EXPECT_GE(p.gemm_algos, 3);

  o.sustain_s = 0;
  EXPECT_EQ(MakePlan(o).sustain_s, 0);
}

TEST(MakePlan, QuickShortensEverythingButHonoursAGivenSustainTime) {
  Options o;
  o.quick = true;
  Plan p = MakePlan(o);
  EXPECT_EQ(p.sustain_s, 5);
  EXPECT_DOUBLE_EQ(p.interval_s, 0.5);  // ten intervals
  EXPECT_LT(p.target_ms, MakePlan(Options{}).target_ms);
  EXPECT_LT(p.memory_buffer_cap, MakePlan(Options{}).memory_buffer_cap);
  o.sustain_s = 20;
  EXPECT_EQ(MakePlan(o).sustain_s, 20);
  EXPECT_EQ(MakePlan(o).interval_s, 1);
}

TEST(GpuUuid, FormatsLikeNvmlAndComparesLoosely) {
  const std::array<unsigned char, 16> bytes = {0x8c, 0x2b, 0x6f, 0x1e, 0x0a, 0x1b, 0x2c, 0x3d,
                                               0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5};
  const std::string uuid = FormatGpuUuid(bytes);
  EXPECT_EQ(uuid, "GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5");
  EXPECT_TRUE(SameGpuUuid(uuid, "gpu-8C2B6F1E-0A1B-2C3D-4E5F-60718293A4B5"));
  EXPECT_TRUE(SameGpuUuid(uuid, "8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b5"));
  EXPECT_FALSE(SameGpuUuid(uuid, "GPU-8c2b6f1e-0a1b-2c3d-4e5f-60718293a4b6"));
}

}  // namespace
}  // namespace gpunex::gpubench
