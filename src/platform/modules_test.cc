#include "platform/modules.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

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
  EXPECT_TRUE(c->benchmarks_enabled);
  EXPECT_EQ(c->benchmark_interval_s, 7 * 24 * 3600);
  EXPECT_DOUBLE_EQ(c->benchmark_thresholds.at("memory"), 0.70);
  EXPECT_EQ(c->benchmark_thresholds.size(), 14u);
  EXPECT_EQ(c->rentals_max_queued_jobs_per_customer, 100);
  EXPECT_FALSE(c->allow_private_registries);
}

}  // namespace
}  // namespace gpunex::platform
