#include "platform/solana/keypair.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "platform/solana/testing/vectors.h"

namespace gpunex::platform::solana {
namespace {

using testing::Hex;
using testing::ToHex;

class KeypairFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "solana_keys_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string Path(const std::string& name) {
    files_.push_back(dir_ + "/" + name);
    return files_.back();
  }
  // Writes `text` to a new file of `mode`.
  std::string File(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string path = Path(name);
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  static std::string CliText(std::span<const uint8_t> bytes) {
    std::string s = "[";
    for (size_t i = 0; i < bytes.size(); ++i) s += (i ? "," : "") + std::to_string(bytes[i]);
    return s + "]";
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST(Keypair, FromSeedMatchesWeb3) {
  for (int i = 0; i < 3; ++i) {
    auto seed = testing::Seed(i);
    Keypair kp = KeypairFromSeed(seed);
    EXPECT_EQ(ToHex(kp.secret), testing::kKeys[i].secret_hex);
    EXPECT_EQ(ToBase58(kp.public_key), testing::kKeys[i].public_b58);
  }
}

TEST(Keypair, SignsAndVerifies) {
  Keypair kp = GenerateKeypair();
  std::vector<uint8_t> msg = {1, 2, 3};
  Signature sig = Sign(kp, msg);
  EXPECT_TRUE(Verify(kp.public_key, msg, sig));
  msg[0] = 9;
  EXPECT_FALSE(Verify(kp.public_key, msg, sig));
  EXPECT_FALSE(Verify(GenerateKeypair().public_key, std::vector<uint8_t>{1, 2, 3}, sig));
}

TEST_F(KeypairFile, WritesAndLoadsTheCliFormat) {
  Keypair kp = GenerateKeypair();
  std::string path = Path("id.json");
  ASSERT_TRUE(WriteKeypairFile(path, kp).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, CliText(kp.secret));
  auto loaded = LoadKeypairFile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->secret, kp.secret);
  EXPECT_EQ(loaded->public_key, kp.public_key);
  // Never overwritten.
  Status again = WriteKeypairFile(path, GenerateKeypair());
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(LoadKeypairFile(path)->secret, kp.secret);
}

TEST_F(KeypairFile, LoadsWhatTheCliWrites) {
  // solana-keygen writes no spaces; other tools pretty-print. Both load; 0400 too.
  auto secret = Hex(testing::kKeys[0].secret_hex);
  std::string spaced = " [\n  " + CliText(secret).substr(1);
  for (size_t i = 0; i < spaced.size(); ++i) {
    if (spaced[i] == ',') spaced.insert(++i, " ");
  }
  for (const auto& [name, text, mode] :
       {std::tuple{"compact.json", CliText(secret), 0600}, {"spaced.json", spaced + "\n", 0400}}) {
    auto kp = LoadKeypairFile(File(name, text, static_cast<mode_t>(mode)));
    ASSERT_TRUE(kp.ok()) << name << ": " << kp.status().ToString();
    EXPECT_EQ(ToBase58(kp->public_key), testing::kKeys[0].public_b58);
  }
}

TEST_F(KeypairFile, RefusesFilesOthersCanRead) {
  auto secret = Hex(testing::kKeys[0].secret_hex);
  for (mode_t mode : {0644, 0640, 0604, 0660, 0700, 0666}) {
    std::string path = File("open" + std::to_string(mode) + ".json", CliText(secret), mode);
    auto kp = LoadKeypairFile(path);
    ASSERT_FALSE(kp.ok()) << mode;
    EXPECT_EQ(kp.status().code(), StatusCode::kFailedPrecondition);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(kp.status().message().find(octal), std::string::npos) << kp.status().message();
    EXPECT_NE(kp.status().message().find(path), std::string::npos);
  }
}

TEST_F(KeypairFile, RefusesMalformedFilesWithoutQuotingThem) {
  auto secret = Hex(testing::kKeys[0].secret_hex);
  std::string good = CliText(secret);
  std::string sixty_three = good.substr(0, good.rfind(',')) + "]";
  std::string sixty_five = good.substr(0, good.size() - 1) + ",7]";
  std::string big = good;
  big.replace(1, good.find(',') - 1, "256");
  std::string negative = good;
  negative.replace(1, good.find(',') - 1, "-1");
  std::string fraction = good;
  fraction.replace(1, good.find(',') - 1, "1.5");
  std::string quoted = good;
  quoted.replace(1, good.find(',') - 1, "\"1\"");
  std::string cases[] = {"",
                         "{}",
                         "[]",
                         sixty_three,
                         sixty_five,
                         big,
                         negative,
                         fraction,
                         quoted,
                         good + "x",
                         good + ",",
                         "[1,,2]",
                         good.substr(0, 40),
                         std::string(5000, ' ')};
  int i = 0;
  for (const std::string& text : cases) {
    std::string path = File("bad" + std::to_string(i++) + ".json", text);
    auto kp = LoadKeypairFile(path);
    ASSERT_FALSE(kp.ok()) << text;
    EXPECT_EQ(kp.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(kp.status().message().find(path), std::string::npos);
    // The secret's first bytes (1,2,3,...) never appear.
    EXPECT_EQ(kp.status().message().find("1,2,3"), std::string::npos) << kp.status().message();
    EXPECT_EQ(kp.status().message().find(testing::kKeys[0].secret_hex), std::string::npos);
  }
}

TEST_F(KeypairFile, RefusesAPublicHalfThatIsNotTheSeeds) {
  auto secret = Hex(testing::kKeys[0].secret_hex);
  secret[40] ^= 1;
  auto kp = LoadKeypairFile(File("wrong.json", CliText(secret)));
  ASSERT_FALSE(kp.ok());
  EXPECT_EQ(kp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kp.status().message().find("not the public key"), std::string::npos);
}

TEST_F(KeypairFile, MissingFilesAndDirectories) {
  auto missing = LoadKeypairFile(dir_ + "/nope.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
  ::chmod(dir_.c_str(), 0700);
  auto dir = LoadKeypairFile(dir_);
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);
  Status no_dir = WriteKeypairFile(dir_ + "/missing/id.json", GenerateKeypair());
  EXPECT_EQ(no_dir.code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpunex::platform::solana
