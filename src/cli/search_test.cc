#include "cli/search.h"

#include <gtest/gtest.h>

namespace gpunex::cli {
namespace {

TEST(WhereTest, TermsBecomeTheSearchQuery) {
  auto q = WhereToQuery("reliability>=90 price<=0.5  gpu=rtx-4090,a100-80gb gpus>=2 verified=true");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const Query want = {{"min_reliability", "90"},
                      {"max_price_micro", "500000"},
                      {"gpu_model", "rtx-4090,a100-80gb"},
                      {"min_gpus", "2"},
                      {"verified_only", "true"}};
  EXPECT_EQ(*q, want);
  EXPECT_EQ(QueryString(want),
            "?min_reliability=90&max_price_micro=500000&gpu_model=rtx-4090%2Ca100-80gb&min_gpus=2&"
            "verified_only=true");
  EXPECT_TRUE(WhereToQuery("").ok());
  EXPECT_EQ(*WhereToQuery("region==eu-west"), (Query{{"region", "eu-west"}}));
}

TEST(WhereTest, WhatIsNotUnderstoodIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"speed>=3", "\"speed\" is not a key"},
      {"price>=0.5", "price takes <="},
      {"reliability<=90", "reliability takes >="},
      {"price<=abc", "--where price"},
      {"gpus>=", "has no value"},
      {"reliability", "is not key<op>value"},
      {">=5", "is not key<op>value"},
      {"verified=maybe", "verified is true or false"},
  };
  for (const auto& [expr, message] : cases) {
    auto q = WhereToQuery(expr);
    ASSERT_FALSE(q.ok()) << expr;
    EXPECT_NE(q.status().message().find(message), std::string::npos)
        << expr << ": " << q.status().message();
  }
}

TEST(SkyPilotTest, EachOfferGivesARowPerPowerOfTwoOfItsFreeGpus) {
  const json::value offers = *ParseJson(
      R"([{"id":"ofr_a","gpu_name":"RTX 4090","gpus_available":3,"cpu_cores_per_gpu":8,
           "ram_gb_per_gpu":31.5,"price_micro":450000,"region":"eu-west"},
          {"id":"ofr_b","gpu_name":"H100","gpus_available":0,"cpu_cores_per_gpu":16,
           "ram_gb_per_gpu":128,"price_micro":2000000,"region":"us-east"}])");
  const json::array rows = SkyPilotRows(offers.as_array());
  ASSERT_EQ(rows.size(), 2u);  // 1x and 2x; 4x is more than 3 free; none of ofr_b
  EXPECT_EQ(rows[1], *ParseJson(R"({"InstanceType":"ofr_a_2x","AcceleratorName":"RTX 4090",
      "AcceleratorCount":2,"vCPUs":16,"MemoryGiB":63.0,"Price":"0.9","Region":"eu-west"})"));
  EXPECT_EQ(RenderList(rows, SkyPilotColumns(), Format::kCsv),
            "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region\r\n"
            "ofr_a_1x,RTX 4090,1,8,31.5,0.45,eu-west\r\n"
            "ofr_a_2x,RTX 4090,2,16,63,0.9,eu-west\r\n");
}

}  // namespace
}  // namespace gpunex::cli
