#include "platform/sshkeys/ssh_keys.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "platform/accounts/accounts.h"
#include "platform/sshkeys/ssh_key.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::sshkeys {
namespace {

struct Vector {
  std::string line, fingerprint;
  int bits = 0;
};

// testdata/keys.txt: keys made by ssh-keygen, each with what `ssh-keygen -l` printed
// for it ("<key line>|<bits> <fingerprint>").
std::vector<Vector> OpenSshVectors() {
  std::ifstream in(std::string(GPUNEX_SSHKEYS_TESTDATA) + "/keys.txt");
  std::vector<Vector> out;
  for (std::string l; std::getline(in, l);) {
    const size_t bar = l.find('|');
    const size_t sp = l.find(' ', bar);
    out.push_back({l.substr(0, bar), l.substr(sp + 1), std::stoi(l.substr(bar + 1, sp - bar))});
  }
  return out;
}

std::string Field(const Status& st) {
  return st.fields().empty() ? "" : st.fields().begin()->first;
}
std::string Message(const Status& st) {
  return st.fields().empty() ? st.message() : st.fields().begin()->second;
}

TEST(ParsePublicKeyTest, AgreesWithOpenSshOnEveryKindItAccepts) {
  const std::vector<Vector> vectors = OpenSshVectors();
  ASSERT_EQ(vectors.size(), 7u);
  int accepted = 0;
  for (const Vector& v : vectors) {
    auto key = ParsePublicKey(v.line, "public_key");
    if (v.bits == 1024) {
      ASSERT_FALSE(key.ok()) << v.line;
      EXPECT_EQ(Field(key.status()), "public_key");
      EXPECT_NE(Message(key.status()).find("RSA key of 1024 bits"), std::string::npos)
          << Message(key.status());
      continue;
    }
    ASSERT_TRUE(key.ok()) << v.line << ": " << key.status().ToString();
    EXPECT_EQ(key->fingerprint, v.fingerprint) << v.line;
    EXPECT_EQ(key->bits, v.bits) << v.line;
    EXPECT_EQ(key->Line() + " " + key->comment, v.line);
    ++accepted;
  }
  EXPECT_EQ(accepted, 6);
}

TEST(ParsePublicKeyTest, ToleratesWhatCopyingAddsAndDropsTheComment) {
  const Vector v = OpenSshVectors()[0];  // ed25519
  auto key = ParsePublicKey("  " + v.line + "\r\n", "public_key");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->type, "ssh-ed25519");
  EXPECT_EQ(key->comment, "user@ed25519");
  EXPECT_EQ(key->Line(), v.line.substr(0, v.line.rfind(' ')));
  auto bare = ParsePublicKey(key->Line(), "public_key");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->comment, "");
  EXPECT_EQ(bare->fingerprint, key->fingerprint);
}

TEST(ParsePublicKeyTest, RefusesWhatIsNotAnAcceptedPublicKeyNamingTheField) {
  const Vector ed = OpenSshVectors()[0];
  const std::string ed_blob = ed.line.substr(12, ed.line.rfind(' ') - 12);
  const Vector rsa = OpenSshVectors()[4];
  const std::string rsa_blob = rsa.line.substr(8, rsa.line.rfind(' ') - 8);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "is required"},
      {"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...", "is a private key"},
      {"ssh-dss AAAAB3NzaC1kc3MAAACBAP", "DSA"},
      {"ssh-ed25519", "must be an OpenSSH public key"},
      {"ssh-foo AAAA", "must be an ssh-ed25519"},
      {"ssh-ed25519 !!!notbase64", "bad base64"},
      {"ssh-rsa " + ed_blob, "says ssh-rsa but holds a ssh-ed25519 key"},
      {"ssh-ed25519 " + ed_blob.substr(0, ed_blob.size() - 8), "not a well-formed"},
      {"ssh-ed25519 " + rsa_blob, "holds a ssh-rsa key"},
      {ed.line + "\nssh-ed25519 " + ed_blob, "one key on one line"},
      {"ssh-ed25519 " + ed_blob + " bell\x07", "control characters"},
      {"ssh-ed25519 " + std::string(kMaxPublicKeyChars, 'A'), "at most"},
  };
  for (const auto& [line, words] : bad) {
    auto key = ParsePublicKey(line, "keys[2]");
    ASSERT_FALSE(key.ok()) << line;
    EXPECT_EQ(key.status().code(), StatusCode::kValidationFailed) << line;
    EXPECT_EQ(Field(key.status()), "keys[2]") << line;
    EXPECT_NE(Message(key.status()).find(words), std::string::npos)
        << line << ": " << Message(key.status());
  }
}

class SshKeysTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    accounts_ = std::make_unique<accounts::Accounts>(db(), FastAccountsOptions());
    for (const char* who : {"ann", "bob"}) {
      auto u = accounts_->SignUp({std::string(who) + "@example.com", "a-long-password", who},
                                 "192.0.2.9");
      ASSERT_TRUE(u.ok()) << u.status().ToString();
      users_.push_back(u->id);
    }
    keys_ = std::make_unique<SshKeys>(db(), SshKeysOptions{.max_per_account = 3, .clock = &clock_});
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  std::vector<std::string> users_;
  std::unique_ptr<SshKeys> keys_;
};

TEST_P(SshKeysTest, AddListRemove) {
  const std::vector<Vector> v = OpenSshVectors();
  auto a = keys_->Add(users_[0], "", v[0].line);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->name, "user@ed25519");  // the comment, without a name
  EXPECT_TRUE(a->id.starts_with("ssh_"));
  clock_.Advance(std::chrono::seconds(1));
  auto b = keys_->Add(users_[0], "  work laptop ", v[4].line);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->name, "work laptop");
  EXPECT_EQ(b->bits, 2048);
  auto list = keys_->List(users_[0]);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].fingerprint, v[0].fingerprint);
  EXPECT_EQ((*list)[1].public_key, b->public_key);
  EXPECT_TRUE(keys_->List(users_[1])->empty());

  // Someone else's key is not found, and stays.
  EXPECT_EQ(keys_->Remove(users_[1], a->id).code(), StatusCode::kNotFound);
  ASSERT_TRUE(keys_->Remove(users_[0], a->id).ok());
  EXPECT_EQ(keys_->Remove(users_[0], a->id).code(), StatusCode::kNotFound);
  EXPECT_EQ(keys_->List(users_[0])->size(), 1u);
}

TEST_P(SshKeysTest, AKeyIsOnOneAccountOnly) {
  const std::vector<Vector> v = OpenSshVectors();
  ASSERT_TRUE(keys_->Add(users_[0], "mine", v[1].line).ok());
  auto again = keys_->Add(users_[0], "again", v[1].line);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("on your account already, as \"mine\""),
            std::string::npos);
  // The same key without its comment is the same key.
  auto other = keys_->Add(users_[1], "", v[1].line.substr(0, v[1].line.rfind(' ')));
  EXPECT_EQ(other.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(other.status().message().find("another account"), std::string::npos);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ssh_keys"), 1);
}

TEST_P(SshKeysTest, AnAccountHoldsAtMostTheLimit) {
  const std::vector<Vector> v = OpenSshVectors();
  for (int i : {0, 1, 2}) ASSERT_TRUE(keys_->Add(users_[0], "", v[i].line).ok());
  auto fourth = keys_->Add(users_[0], "", v[3].line);
  EXPECT_EQ(fourth.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fourth.status().message().find("at most 3 SSH keys"), std::string::npos);
  EXPECT_TRUE(keys_->Add(users_[1], "", v[3].line).ok());
}

// A rental container's PUBLIC_KEY: the account's keys, oldest first, one per line, as
// many as fit.
TEST_P(SshKeysTest, PublicKeyEnvHoldsTheAccountsKeysOnePerLineWithinTheLimit) {
  const std::vector<Vector> v = OpenSshVectors();
  auto env = [&](const std::string& user, size_t max_chars) {
    std::string out;
    EXPECT_TRUE(db().Read([&](store::Tx& tx) -> Status {
                      GPUNEX_ASSIGN_OR_RETURN(out, PublicKeyEnv(tx, user, max_chars));
                      return Status::Ok();
                    })
                    .ok());
    return out;
  };
  EXPECT_EQ(env(users_[0], 32768), "");
  auto a = keys_->Add(users_[0], "", v[0].line);
  clock_.Advance(std::chrono::seconds(1));
  auto b = keys_->Add(users_[0], "", v[4].line);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(env(users_[0], 32768), a->public_key + "\n" + b->public_key);
  // Without room for the second, the first alone; without room for any, none.
  EXPECT_EQ(env(users_[0], a->public_key.size() + b->public_key.size()), a->public_key);
  EXPECT_EQ(env(users_[0], a->public_key.size() - 1), "");
  EXPECT_EQ(env(users_[1], 32768), "");  // another account's keys are not its
  // The line without the comment, as an authorized_keys line.
  EXPECT_EQ(a->public_key, v[0].line.substr(0, v[0].line.rfind(' ')));
}

TEST_P(SshKeysTest, BadInputChangesNothingAndNamesEveryField) {
  auto bad = keys_->Add(users_[0], std::string(kMaxNameChars + 1, 'n'), "ssh-rsa AAAA");
  ASSERT_EQ(bad.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(bad.status().fields().size(), 2u) << bad.status().ToString();
  EXPECT_TRUE(bad.status().fields().contains("name"));
  EXPECT_TRUE(bad.status().fields().contains("public_key"));
  auto control = keys_->Add(users_[0], "tab\there", OpenSshVectors()[0].line);
  EXPECT_EQ(Field(control.status()), "name");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM ssh_keys"), 0);
}

GPUNEX_INSTANTIATE_BACKENDS(SshKeysTest);

}  // namespace
}  // namespace gpunex::platform::sshkeys
