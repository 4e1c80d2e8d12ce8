#include "platform/module/module.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpunex::platform {
namespace {

struct Recorder {
  Recorder(std::string name, std::vector<std::string>* log) : name(std::move(name)), log(log) {}
  ~Recorder() { log->push_back(name); }
  std::string name;
  std::vector<std::string>* log;
};
struct First : Recorder {
  using Recorder::Recorder;
};
struct Second : Recorder {
  using Recorder::Recorder;
};

TEST(ServicesTest, FindsByTypeAndDestroysInReverseOrder) {
  std::vector<std::string> destroyed;
  {
    Services s;
    EXPECT_EQ(s.Find<First>(), nullptr);
    First& first = s.Own(std::make_unique<First>("first", &destroyed));
    s.Own(std::make_unique<Second>("second", &destroyed));
    EXPECT_EQ(s.Find<First>(), &first);
    EXPECT_EQ(s.Get<Second>().name, "second");
    int borrowed = 7;
    s.Provide(borrowed);
    EXPECT_EQ(&s.Get<int>(), &borrowed);
    EXPECT_TRUE(destroyed.empty());
  }
  EXPECT_EQ(destroyed, (std::vector<std::string>{"second", "first"}));
}

TEST(ServicesDeathTest, AMissingServiceStopsNamingItsType) {
  Services s;
  EXPECT_DEATH(s.Get<First>(), "no module offers the service .*First");
}

TEST(ModuleTest, MigrationsAndSectionsFollowTheListsOrder) {
  auto part = [](int version, std::string owner) {
    store::Migration m;
    m.version = version;
    m.owner = std::move(owner);
    return m;
  };
  std::vector<Module> modules(3);
  modules[0].name = "a";
  modules[0].migrations = [&] { return std::vector<store::Migration>{part(1, "a"), part(2, "a")}; };
  modules[1].name = "b";  // no tables
  modules[1].config = ConfigSection{.name = "b", .parse = nullptr, .example = "[b]\n"};
  modules[2].name = "c";
  modules[2].migrations = [&] { return std::vector<store::Migration>{part(1, "c")}; };
  std::vector<std::string> owners;
  for (const store::Migration& m : MigrationsOf(modules))
    owners.push_back(m.owner + std::to_string(m.version));
  EXPECT_EQ(owners, (std::vector<std::string>{"a1", "a2", "c1"}));
  std::vector<ConfigSection> sections = ConfigSectionsOf(modules);
  ASSERT_EQ(sections.size(), 1u);
  EXPECT_EQ(sections[0].name, "b");
}

}  // namespace
}  // namespace gpunex::platform
