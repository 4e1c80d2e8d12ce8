#include "platform/config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace gpunex::platform {
namespace {

EnvGetter Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteFile(const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("gpunex_cfg_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               std::to_string(std::hash<std::string>{}(text)) + ".toml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(Config, DefaultsWithoutFile) {
  auto c = LoadConfig("", Env({}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen, "127.0.0.1:8080");
  EXPECT_EQ(c->public_url, "http://127.0.0.1:8080");
  EXPECT_FALSE(c->allow_emulated_gpus);
}

// A module's own table: read by the module (defaults without one), checked for unknown
// keys, errors named "table.key".
struct WidgetOptions {
  int64_t per_account = 5;
  std::string greeting = "hi";
};

ConfigSection WidgetSection() {
  return ConfigSection{.name = "widgets",
                       .parse = [](ConfigTable& t, const EnvGetter& env) -> StatusOr<std::any> {
                         WidgetOptions o;
                         GPUNEX_RETURN_IF_ERROR(t.Int("per_account", &o.per_account, 1, 50));
                         GPUNEX_RETURN_IF_ERROR(t.Str("greeting", &o.greeting));
                         if (auto v = env("GPUNEX_WIDGETS_GREETING")) o.greeting = *v;
                         return std::any(o);
                       },
                       .example = "[widgets]\n# per_account = 5\n"};
}

TEST(Config, ModulesReadTheirOwnTables) {
  auto defaults = LoadConfig("", Env({}), {WidgetSection()});
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->Section<WidgetOptions>("widgets").per_account, 5);

  auto set = LoadConfig(WriteFile("[widgets]\nper_account = 7\n"),
                        Env({{"GPUNEX_WIDGETS_GREETING", "hello"}}), {WidgetSection()});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->Section<WidgetOptions>("widgets").per_account, 7);
  EXPECT_EQ(set->Section<WidgetOptions>("widgets").greeting, "hello");

  auto out_of_range =
      LoadConfig(WriteFile("[widgets]\nper_account = 70\n"), Env({}), {WidgetSection()});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().fields().begin()->first, "widgets.per_account");

  auto unknown = LoadConfig(WriteFile("[widgets]\nper_acount = 7\n"), Env({}), {WidgetSection()});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().fields().begin()->first, "widgets.per_acount");

  // Without the module, its table is unknown.
  auto no_module = LoadConfig(WriteFile("[widgets]\nper_account = 7\n"), Env({}));
  ASSERT_FALSE(no_module.ok());
  EXPECT_EQ(no_module.status().fields().begin()->first, "widgets");
}

// Sub-tables of a module's table, and tables of numbers.
TEST(Config, NestedTablesAreReadByKey) {
  std::map<std::string, double> read;
  auto section = [&read] {
    return ConfigSection{.name = "gauges",
                         .parse = [&read](ConfigTable& t, const EnvGetter&) -> StatusOr<std::any> {
                           GPUNEX_ASSIGN_OR_RETURN(ConfigTable limits, t.Table("limits"));
                           EXPECT_EQ(limits.path(), "gauges.limits");
                           for (const std::string& k : limits.Keys()) {
                             GPUNEX_RETURN_IF_ERROR(limits.Number(k, &read[k]));
                           }
                           return std::any(0);
                         }};
  };
  auto ok = LoadConfig(WriteFile("[gauges.limits]\nlow = 1\nhigh = 2.5\n"), Env({}), {section()});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(read, (std::map<std::string, double>{{"low", 1.0}, {"high", 2.5}}));
  auto word = LoadConfig(WriteFile("[gauges.limits]\nlow = \"one\"\n"), Env({}), {section()});
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.status().fields().begin()->first, "gauges.limits.low");
  auto flat = LoadConfig(WriteFile("[gauges]\nlimits = 3\n"), Env({}), {section()});
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.status().fields().begin()->first, "gauges.limits");
}

TEST(Config, FileThenEnvironment) {
  std::string path = WriteFile(R"(
listen = "0.0.0.0:9000"
public_url = "https://gpu.example.com/"
[review]
holidays = ["2026-12-25"]
)");
  auto c = LoadConfig(
      path, Env({{"GPUNEX_LISTEN", "127.0.0.1:7000"}, {"GPUNEX_ALLOW_EMULATED_GPUS", "true"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:7000");
  EXPECT_EQ(c->public_url, "https://gpu.example.com");
  EXPECT_TRUE(c->CookieSecure());
  EXPECT_TRUE(c->allow_emulated_gpus);
  EXPECT_EQ(c->holidays.size(), 1u);
}

TEST(Config, ErrorsNameTheSetting) {
  auto typo = LoadConfig(WriteFile("listn = \"x:1\"\n"), Env({}));
  ASSERT_FALSE(typo.ok());
  EXPECT_TRUE(typo.status().fields().count("listn"));
  auto range = LoadConfig(WriteFile("[http]\nio_threads = 0\n"), Env({}));
  ASSERT_FALSE(range.ok());
  EXPECT_TRUE(range.status().fields().count("http.io_threads"));
  range = LoadConfig(WriteFile("[http]\nmessage_threads = 0\n"), Env({}));
  ASSERT_FALSE(range.ok());
  EXPECT_TRUE(range.status().fields().count("http.message_threads"));
  auto threads = LoadConfig(WriteFile("[http]\nmessage_threads = 6\n"), Env({}));
  ASSERT_TRUE(threads.ok()) << threads.status().ToString();
  EXPECT_EQ(threads->message_threads, 6);
  auto env = LoadConfig("", Env({{"GPUNEX_ALLOW_EMULATED_GPUS", "yes"}}));
  ASSERT_FALSE(env.ok());
  EXPECT_TRUE(env.status().fields().count("GPUNEX_ALLOW_EMULATED_GPUS"));
  EXPECT_FALSE(LoadConfig(WriteFile("this is not toml"), Env({})).ok());
}

}  // namespace
}  // namespace gpunex::platform
