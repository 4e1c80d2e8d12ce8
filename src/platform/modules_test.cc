#include "platform/modules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "platform/benchmarks/benchmarks.h"
#include "platform/fleet/fleet.h"
#include "platform/payouts/payouts.h"
#include "platform/rentals/rentals_module.h"

namespace gpunex::platform {
namespace {

TEST(ModulesTest, EachModuleIsListedOnceAndOwnsItsMigrations) {
  std::set<std::string> names;
  for (const Module& m : Modules()) {
    EXPECT_TRUE(names.insert(m.name).second) << m.name << " is listed twice";
    if (!m.migrations) continue;
    for (const store::Migration& part : m.migrations()) {
      EXPECT_EQ(part.owner, m.name) << "migration " << part.version << " " << part.name;
    }
  }
}

// Each module's configuration table is documented in the example configuration, as the
// module writes it, and the example loads with every module's table.
TEST(ModulesTest, TheExampleConfigurationDocumentsEveryModulesTable) {
  const std::string path = std::string(GPUNEX_SOURCE_DIR) + "/deploy/gpunexd.example.toml";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  for (const ConfigSection& section : ConfigSectionsOf(Modules())) {
    EXPECT_NE(text.str().find(section.example), std::string::npos)
        << "deploy/gpunexd.example.toml lacks the [" << section.name << "] table as "
        << section.name << "'s module writes it:\n"
        << section.example;
  }
  auto c = LoadConfig(
      path, [](const std::string&) { return std::optional<std::string>(); },
      ConfigSectionsOf(Modules()));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // As documented.
  const auto& benchmarks = c->Section<benchmarks::BenchmarksOptions>("benchmarks");
  EXPECT_TRUE(benchmarks.enabled);
  EXPECT_EQ(benchmarks.interval_s, 7 * 24 * 3600);
  EXPECT_DOUBLE_EQ(benchmarks.thresholds.memory, 0.70);
  EXPECT_EQ(c->Section<rentals::RentalsSettings>("rentals").jobs.max_queued_per_customer, 100);
  EXPECT_FALSE(c->Section<fleet::FleetOptions>("fleet").images.allow_private_registries);
}

// The modules' tables as gpunexd loads them: values, checks and errors naming the key.
class ModuleTables : public ::testing::Test {
 protected:
  StatusOr<Config> Load(const std::string& text, std::map<std::string, std::string> env = {}) {
    const auto path = std::filesystem::path(::testing::TempDir()) /
                      ("gpunex_modules_" + std::to_string(++files_) + ".toml");
    std::ofstream(path) << text;
    return LoadConfig(
        path.string(),
        [env](const std::string& k) -> std::optional<std::string> {
          auto it = env.find(k);
          return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
        },
        ConfigSectionsOf(Modules()));
  }
  // The one field the load of `text` failed on.
  std::string Refused(const std::string& text, std::map<std::string, std::string> env = {}) {
    auto c = Load(text, std::move(env));
    if (c.ok()) return "(loaded)";
    return c.status().fields().empty() ? c.status().ToString() : c.status().fields().begin()->first;
  }
  int files_ = 0;
};

TEST_F(ModuleTables, PrivateRegistriesAreTheOperatorsToAllow) {
  auto c = Load("[fleet]\nallow_private_registries = true\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->Section<fleet::FleetOptions>("fleet").images.allow_private_registries);
  EXPECT_EQ(Refused("[fleet]\nallow_private_registries = \"yes\"\n"),
            "fleet.allow_private_registries");
  EXPECT_EQ(Refused("[fleet]\nheartbeat_interval_s = 30\noffline_after_s = 30\n"),
            "fleet.offline_after_s");
}

TEST_F(ModuleTables, TheJobQueueBoundIsParsedAndChecked) {
  auto c = Load("[rentals]\nmax_queued_jobs_per_customer = 7\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->Section<rentals::RentalsSettings>("rentals").jobs.max_queued_per_customer, 7);
  for (const char* bad : {"0", "-1", "10001", "\"100\"", "1.5"}) {
    EXPECT_EQ(Refused(std::string("[rentals]\nmax_queued_jobs_per_customer = ") + bad + "\n"),
              "rentals.max_queued_jobs_per_customer")
        << bad;
  }
  EXPECT_EQ(Refused("[rentals]\nearnings_hold_s = 600\nearly_fault_refund_s = 600\n"),
            "rentals.early_fault_refund_s");
}

TEST_F(ModuleTables, BenchmarkThresholdsAndPerModelOverrides) {
  auto c = Load(R"(
[benchmarks]
enabled = false
interval_s = 60
[benchmarks.thresholds]
memory = 0.8
[benchmarks.models."l4-24gb"]
fp32 = 0.5
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto& o = c->Section<benchmarks::BenchmarksOptions>("benchmarks");
  EXPECT_FALSE(o.enabled);
  EXPECT_EQ(o.interval_s, 60);
  EXPECT_DOUBLE_EQ(o.thresholds.memory, 0.8);
  EXPECT_DOUBLE_EQ(o.by_model.at("l4-24gb").fp32, 0.5);
  EXPECT_DOUBLE_EQ(o.by_model.at("l4-24gb").memory, 0.8);  // the general override carries
  EXPECT_EQ(Refused("[benchmarks.thresholds]\nmemory = \"high\"\n"),
            "benchmarks.thresholds.memory");
  EXPECT_EQ(Refused("[benchmarks]\nintervall_s = 5\n"), "benchmarks.intervall_s");
  EXPECT_EQ(Refused("[benchmarks.models]\nl4 = 1\n"), "benchmarks.models.l4");
}

TEST_F(ModuleTables, MoneyTablesAreCheckedTogether) {
  EXPECT_EQ(Refused("[payouts]\nsepa_min_micro = 5\nsepa_fee_micro = 5\n"),
            "payouts.sepa_fee_micro");
  EXPECT_EQ(Refused("[payouts]\neur_rate = \"-1\"\n"), "payouts.eur_rate");
  EXPECT_EQ(Refused("[topups]\nmin_micro = 20\nmax_micro = 10\n"), "topups.min_micro");
  EXPECT_EQ(Refused("[topups]\nttl_s = 7200\nwatch_s = 3600\n"), "topups.watch_s");
  EXPECT_EQ(Refused("", {{"GPUNEX_SOLANA_COMMITMENT", "final"}}), "solana.commitment");
  EXPECT_EQ(Refused("[solana]\nrpc_url = \"http://127.0.0.1:1\"\n"), "solana");
  auto c = Load("[payouts]\nsolana_min_micro = 2000000\n",
                {{"GPUNEX_PAYOUT_FILES_DIR", "/srv/payout-files"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto& o = c->Section<payouts::PayoutsOptions>("payouts");
  EXPECT_EQ(o.solana.minimum, Usdc::Micros(2'000'000));
  EXPECT_EQ(o.files_dir, "/srv/payout-files");
}

}  // namespace
}  // namespace gpunex::platform
