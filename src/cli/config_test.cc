#include "cli/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace gpunex::cli {
namespace {

Env FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpunex_cli_config_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    path_ = (dir_ / "gpunex" / "config.toml").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(ConfigTest, FlagsBeatTheEnvironmentWhichBeatsTheProfile) {
  ConfigFile file;
  file.profiles["default"] = {"https://saved.example", "gpx_k_saved0001"};
  const Env env =
      FakeEnv({{"GPUNEX_URL", "https://env.example/"}, {"GPUNEX_API_KEY", "gpx_k_env0002"}});

  auto s = Resolve({}, FakeEnv({}), file, path_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->url, "https://saved.example");
  EXPECT_EQ(s->api_key, "gpx_k_saved0001");
  EXPECT_EQ(s->api_key_source, Source::kProfile);

  s = Resolve({}, env, file, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->url, "https://env.example");  // the trailing slash goes
  EXPECT_EQ(s->api_key, "gpx_k_env0002");
  EXPECT_EQ(s->url_source, Source::kEnvironment);

  s = Resolve({"http://flag.example", "gpx_k_flag0003", ""}, env, file, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->url, "http://flag.example");
  EXPECT_EQ(s->api_key, "gpx_k_flag0003");
  EXPECT_EQ(s->api_key_source, Source::kFlag);
}

TEST_F(ConfigTest, TheProfileComesFromTheFlagTheEnvironmentOrTheFile) {
  ConfigFile file;
  file.profile = "work";
  file.profiles["work"] = {"https://work.example", "gpx_k_work"};
  file.profiles["home"] = {"https://home.example", "gpx_k_home"};
  auto s = Resolve({}, FakeEnv({}), file, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->profile, "work");
  EXPECT_EQ(s->url, "https://work.example");
  s = Resolve({}, FakeEnv({{"GPUNEX_PROFILE", "home"}}), file, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->api_key, "gpx_k_home");
  s = Resolve({"", "", "work"}, FakeEnv({{"GPUNEX_PROFILE", "home"}}), file, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->api_key, "gpx_k_work");
}

TEST_F(ConfigTest, ANamedProfileThatIsNotThereIsAnErrorNotAnotherPlatform) {
  ConfigFile file;
  file.profiles["default"] = {"https://saved.example", "gpx_k_saved"};
  auto s = Resolve({"", "", "prod"}, FakeEnv({}), file, path_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no profile \"prod\""), std::string::npos);
  // Without a file at all, the unnamed default profile is the built-in URL and no key.
  s = Resolve({}, FakeEnv({}), ConfigFile{}, path_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->url, kDefaultUrl);
  EXPECT_EQ(s->api_key, "");
}

TEST_F(ConfigTest, AUrlMustBeHttpOrHttps) {
  auto s = Resolve({"ftp://x", "", ""}, FakeEnv({}), ConfigFile{}, path_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("http://"), std::string::npos);
}

TEST_F(ConfigTest, SavedProfilesArePrivateAndKeepTheOthers) {
  ASSERT_TRUE(SaveProfile(path_, "default", {"https://a.example", "gpx_k_aaaa"}).ok());
  ASSERT_TRUE(SaveProfile(path_, "lab", {"http://127.0.0.1:9", "gpx_k_bbbb"}).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto file = LoadConfig(path_);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->profile, "default");  // the first one saved stays the default
  ASSERT_EQ(file->profiles.size(), 2u);
  EXPECT_EQ(file->profiles.at("default").api_key, "gpx_k_aaaa");
  EXPECT_EQ(file->profiles.at("lab").url, "http://127.0.0.1:9");
  // Saved again: replaced in place.
  ASSERT_TRUE(SaveProfile(path_, "lab", {"http://127.0.0.1:10", "gpx_k_cccc"}).ok());
  file = LoadConfig(path_);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->profiles.at("lab").api_key, "gpx_k_cccc");
  EXPECT_EQ(file->profiles.at("default").api_key, "gpx_k_aaaa");
}

TEST_F(ConfigTest, AMalformedFileIsNamed) {
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  std::ofstream(path_) << "[profiles.default]\nurl = 3\n";
  auto file = LoadConfig(path_);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("profiles.default.url must be a string"),
            std::string::npos);
  std::ofstream(path_) << "colour = \"red\"\n";
  file = LoadConfig(path_);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("colour is not a known key"), std::string::npos);
  std::ofstream(path_) << "profile = \n";
  EXPECT_FALSE(LoadConfig(path_).ok());
}

TEST_F(ConfigTest, TheFileLivesUnderXdgConfigHomeOrHome) {
  EXPECT_EQ(*ConfigPath(FakeEnv({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}})),
            "/x/gpunex/config.toml");
  EXPECT_EQ(*ConfigPath(FakeEnv({{"HOME", "/h"}})), "/h/.config/gpunex/config.toml");
  EXPECT_FALSE(ConfigPath(FakeEnv({})).ok());
}

TEST(KeyHintTest, ShowsTheLastFourCharactersOnly) {
  EXPECT_EQ(KeyHint("gpx_k_0123456789abcdef"), "…cdef");
  EXPECT_EQ(KeyHint(""), "(none)");
  EXPECT_EQ(KeyHint("abc"), "…abc");
}

}  // namespace
}  // namespace gpunex::cli
