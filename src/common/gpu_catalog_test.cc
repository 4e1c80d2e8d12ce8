#include "common/gpu_catalog.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

TEST(GpuCatalog, BuiltinMatchesReferenceTable) {
  const auto& c = BuiltinGpuCatalog();
  ASSERT_GE(c.size(), 11u);
  const GpuModel* a100 = FindGpuModel("a100-sxm-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->vram_gb, 80);
  EXPECT_DOUBLE_EQ(a100->fp16_tensor_tflops, 312.0);
  EXPECT_DOUBLE_EQ(a100->mem_bw_gbps, 2039);
  EXPECT_EQ(a100->default_price, Usdc::Micros(1'200'000));
  EXPECT_EQ(FindGpuModel("nope"), nullptr);
}

TEST(GpuCatalog, MatchesNvmlNamesLoosely) {
  EXPECT_EQ(MatchNvmlName("NVIDIA H100 80GB HBM3", 80), "h100-sxm-80gb");
  EXPECT_EQ(MatchNvmlName("nvidia a100-sxm4-80gb", 80), "a100-sxm-80gb");
  EXPECT_EQ(MatchNvmlName("NVIDIA GeForce RTX 4090", 24), "rtx4090-24gb");
  EXPECT_EQ(MatchNvmlName("Tesla T4", 16), std::nullopt);
}

TEST(GpuCatalog, RejectsMalformedCsv) {
  EXPECT_THROW(ParseGpuCatalogCsv("header\nx,y,1\n"), std::runtime_error);
  EXPECT_THROW(ParseGpuCatalogCsv("header\na,b,8,x,1,1,1,1,1.0\n"), std::runtime_error);
}

}  // namespace
}  // namespace gpunex
