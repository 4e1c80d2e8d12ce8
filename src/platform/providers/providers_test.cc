// Providers on both backends: the provider record and role, and agent tokens from issue
// to rotation and revocation, as the agent channel authenticates them.
#include "platform/providers/providers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/ids.h"
#include "common/testing/enum_names.h"
#include "platform/accounts/accounts.h"
#include "platform/providers/providers_store.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::providers {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class ProvidersTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    accounts_ = std::make_unique<accounts::Accounts>(faulty(), FastAccountsOptions());
    providers_ = std::make_unique<Providers>(faulty(), ProvidersOptions{&clock_});
    auto admin = accounts_->CreateAdmin("root@example.com", "0123456789", "Root");
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_id_ = admin->id;
  }

  accounts::Principal SignUp(const std::string& email) {
    auto u = accounts_->SignUp({email, "0123456789", "Someone"}, "");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    accounts::Principal p;
    if (u.ok()) p.user = *u;
    return p;
  }

  Status Approve(const std::string& user_id, Tier tier = Tier::kCommunity) {
    return faulty().Transact([&](store::Tx& tx) {
      return UpsertProvider(tx, clock_.Now(), user_id, tier, "app_" + user_id, admin_id_);
    });
  }

  // A user approved as a provider, with the role loaded as a session would load it.
  accounts::Principal NewProvider(const std::string& email) {
    accounts::Principal p = SignUp(email);
    EXPECT_TRUE(Approve(p.user.id).ok());
    Status st = faulty().Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(p.user, accounts::LoadUser(tx, p.user.id));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return p;
  }

  NewAgentToken Create(const accounts::Principal& p, const std::string& name = "") {
    auto t = providers_->CreateToken(p, name);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : NewAgentToken{};
  }

  store::Rows Query(const std::string& sql, const std::vector<store::Value>& params = {}) {
    auto rows = test_db().Query(sql, params);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : store::Rows{};
  }

  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<Providers> providers_;
  std::string admin_id_;
};

TEST_P(ProvidersTest, UpsertProviderCreatesTheRecordAndGrantsTheRole) {
  accounts::Principal p = SignUp("ana@example.com");
  EXPECT_EQ(providers_->Get(p).status().code(), StatusCode::kPermissionDenied);
  const Timestamp approved_at = clock_.Now();
  ASSERT_TRUE(Approve(p.user.id).ok());
  auto got = providers_->Get(p);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->user_id, p.user.id);
  EXPECT_EQ(got->tier, Tier::kCommunity);
  EXPECT_EQ(Name(got->status), "active");
  EXPECT_EQ(got->application_id, "app_" + p.user.id);
  EXPECT_EQ(got->approved_at, approved_at);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM user_roles WHERE user_id = ? AND role = 'provider'",
                   {p.user.id}),
            1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers WHERE user_id = ? AND approved_by = ?",
                   {p.user.id, admin_id_}),
            1);
  Status st = faulty().Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, p.user.id));
    EXPECT_TRUE(u.HasRole(accounts::kRoleProvider));
    EXPECT_TRUE(u.HasRole(accounts::kRoleCustomer));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();

  // A second approval updates the record and keeps one role.
  clock_.Advance(kOneHour);
  ASSERT_TRUE(Approve(p.user.id, Tier::kEnterprise).ok());
  got = providers_->Get(p);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->tier, Tier::kEnterprise);
  EXPECT_EQ(got->approved_at, clock_.Now());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM providers"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM user_roles WHERE user_id = ? AND role = 'provider'",
                   {p.user.id}),
            1);
}

TEST_P(ProvidersTest, ATokenIsShownOnceAndStoredOnlyAsItsHash) {
  accounts::Principal p = NewProvider("ana@example.com");
  NewAgentToken t = Create(p, "rack 3");
  EXPECT_THAT(t.secret, StartsWith("gpx_a_"));
  EXPECT_GT(t.secret.size(), 40u);
  EXPECT_EQ(t.token.name, "rack 3");
  EXPECT_EQ(t.token.prefix, t.secret.substr(0, 12));
  EXPECT_EQ(t.token.created_at, clock_.Now());
  EXPECT_EQ(t.token.last_used_at, std::nullopt);
  EXPECT_EQ(t.token.revoked_at, std::nullopt);
  EXPECT_EQ(Create(p).token.name, "agent") << "an empty name";

  auto rows =
      Query("SELECT id, provider_id, name, token_hash, token_prefix FROM agent_tokens WHERE id = ?",
            {t.token.id});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["provider_id"].Str(), p.user.id);
  EXPECT_EQ(rows[0]["token_hash"].Str(), Sha256Hex(t.secret));
  for (const std::string& column : rows[0].names()) {
    EXPECT_THAT(rows[0][column].Str(), ::testing::Not(HasSubstr(t.secret))) << column;
  }
  // Neither is the secret in the audit log.
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM audit_events WHERE action = 'agent_token.created' AND subject = ?",
          {t.token.id}),
      1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE detail LIKE ? OR subject LIKE ?",
                   {"%" + t.secret + "%", "%" + t.secret + "%"}),
            0);

  auto id = providers_->AuthenticateAgent(t.secret);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->provider_id, p.user.id);
  EXPECT_EQ(id->token_id, t.token.id);
}

TEST_P(ProvidersTest, TokenNamesAreBoundedAndOnlyProvidersHaveTokens) {
  accounts::Principal p = NewProvider("ana@example.com");
  auto long_name = providers_->CreateToken(p, std::string(kMaxTokenName + 1, 'n'));
  EXPECT_EQ(long_name.status().code(), StatusCode::kValidationFailed);
  EXPECT_EQ(long_name.status().fields().count("name"), 1u);
  EXPECT_TRUE(providers_->CreateToken(p, std::string(kMaxTokenName, 'n')).ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);

  accounts::Principal customer = SignUp("cy@example.com");
  EXPECT_EQ(providers_->CreateToken(customer, "x").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(providers_->ListTokens(customer).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(providers_->RevokeToken(customer, "atk_x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(providers_->RotateToken(customer, "atk_x").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);
}

TEST_P(ProvidersTest, AtMostAHundredActiveTokens) {
  accounts::Principal p = NewProvider("ana@example.com");
  std::vector<NewAgentToken> tokens;
  for (int i = 0; i < 100; ++i) tokens.push_back(Create(p, "t" + std::to_string(i)));
  auto one_more = providers_->CreateToken(p, "extra");
  EXPECT_EQ(one_more.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(one_more.status().message(), HasSubstr("at most 100"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 100);
  // Rotating one keeps the number of active tokens: it is allowed at the limit.
  auto rotated = providers_->RotateToken(p, tokens[0].token.id);
  ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens WHERE revoked_at IS NULL"), 100);
  // A revoked token frees its place.
  ASSERT_TRUE(providers_->RevokeToken(p, tokens[1].token.id).ok());
  EXPECT_TRUE(providers_->CreateToken(p, "extra").ok());
  EXPECT_EQ(providers_->CreateToken(p, "extra 2").status().code(), StatusCode::kFailedPrecondition);
  // The limit is per provider.
  accounts::Principal q = NewProvider("bo@example.com");
  EXPECT_TRUE(providers_->CreateToken(q, "").ok());
}

TEST_P(ProvidersTest, ListTokensShowsTheCallersOwnOldestFirst) {
  accounts::Principal p = NewProvider("ana@example.com");
  accounts::Principal q = NewProvider("bo@example.com");
  EXPECT_TRUE(providers_->ListTokens(p)->empty());
  NewAgentToken a = Create(p, "a");
  clock_.Advance(kOneSecond);
  NewAgentToken b = Create(p, "b");
  Create(q, "theirs");
  ASSERT_TRUE(providers_->RevokeToken(p, a.token.id).ok());
  auto list = providers_->ListTokens(p);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u) << "revoked tokens stay listed; others' are not";
  EXPECT_EQ((*list)[0].id, a.token.id);
  EXPECT_EQ((*list)[0].revoked_at, clock_.Now());
  EXPECT_EQ((*list)[1].id, b.token.id);
  EXPECT_EQ((*list)[1].name, "b");
  EXPECT_EQ((*list)[1].prefix, b.token.prefix);
  EXPECT_EQ((*list)[1].created_at, b.token.created_at);
  EXPECT_EQ((*list)[1].revoked_at, std::nullopt);
}

TEST_P(ProvidersTest, RevokeTokenEndsItForTheOwnerOnly) {
  accounts::Principal p = NewProvider("ana@example.com");
  accounts::Principal q = NewProvider("bo@example.com");
  NewAgentToken mine = Create(p);
  NewAgentToken theirs = Create(q);
  EXPECT_EQ(providers_->RevokeToken(p, theirs.token.id).code(), StatusCode::kNotFound);
  EXPECT_TRUE(providers_->AuthenticateAgent(theirs.secret).ok()) << "another's token is untouched";
  EXPECT_EQ(providers_->RevokeToken(p, "atk_unknown").code(), StatusCode::kNotFound);

  clock_.Advance(kOneMinute);
  ASSERT_TRUE(providers_->RevokeToken(p, mine.token.id).ok());
  EXPECT_EQ(providers_->AuthenticateAgent(mine.secret).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens WHERE id = ? AND revoked_at = ?",
                   {mine.token.id, ToUnixMicros(clock_.Now())}),
            1);
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM audit_events WHERE action = 'agent_token.revoked' AND subject = ?",
          {mine.token.id}),
      1);
  // Once revoked it is gone for good.
  clock_.Advance(kOneMinute);
  EXPECT_EQ(providers_->RevokeToken(p, mine.token.id).code(), StatusCode::kNotFound);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens WHERE id = ? AND revoked_at = ?",
                   {mine.token.id, ToUnixMicros(clock_.Now() - kOneMinute)}),
            1)
      << "the first revocation time stays";
}

TEST_P(ProvidersTest, RotateTokenReplacesItWithOneOfTheSameName) {
  accounts::Principal p = NewProvider("ana@example.com");
  accounts::Principal q = NewProvider("bo@example.com");
  NewAgentToken old = Create(p, "rack 3");
  NewAgentToken theirs = Create(q);
  EXPECT_EQ(providers_->RotateToken(p, theirs.token.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(providers_->RotateToken(p, "atk_unknown").status().code(), StatusCode::kNotFound);

  clock_.Advance(kOneMinute);
  auto fresh = providers_->RotateToken(p, old.token.id);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_NE(fresh->token.id, old.token.id);
  EXPECT_NE(fresh->secret, old.secret);
  EXPECT_EQ(fresh->token.name, "rack 3");
  EXPECT_EQ(fresh->token.created_at, clock_.Now());
  EXPECT_EQ(providers_->AuthenticateAgent(old.secret).status().code(),
            StatusCode::kUnauthenticated);
  auto id = providers_->AuthenticateAgent(fresh->secret);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->token_id, fresh->token.id);
  auto list = providers_->ListTokens(p);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, old.token.id);
  EXPECT_EQ((*list)[0].revoked_at, clock_.Now());
  EXPECT_EQ((*list)[0].replaced_by, fresh->token.id);
  EXPECT_EQ((*list)[1].replaced_by, std::nullopt);
  EXPECT_EQ(
      Number(
          "SELECT COUNT(*) FROM audit_events WHERE action = 'agent_token.rotated' AND subject = ?",
          {old.token.id}),
      1);
  // A revoked token cannot be rotated again.
  EXPECT_EQ(providers_->RotateToken(p, old.token.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens WHERE provider_id = ?", {p.user.id}), 2);
}

// What every instance of a cluster reads each second to end its own connections of a
// revoked token (providers_module.cc): revocations and rotations from a time on.
TEST_P(ProvidersTest, TokensRevokedSinceATimeAreTheRevokedAndRotatedOnesFromThen) {
  accounts::Principal p = NewProvider("ana@example.com");
  Create(p, "kept");  // never revoked: never listed
  NewAgentToken early = Create(p, "early");
  NewAgentToken revoked = Create(p, "revoked");
  NewAgentToken rotated = Create(p, "rotated");
  ASSERT_TRUE(providers_->RevokeToken(p, early.token.id).ok());
  clock_.Advance(kOneMinute);
  const Timestamp from = clock_.Now();
  ASSERT_TRUE(providers_->RevokeToken(p, revoked.token.id).ok());
  clock_.Advance(kOneMinute);
  auto fresh = providers_->RotateToken(p, rotated.token.id);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto since = [&](Timestamp t) {
    std::vector<std::string> ids;
    Status st = faulty().Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(ids, ProvidersStore(tx).TokensRevokedSince(t));
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  std::vector<std::string> want = {revoked.token.id, rotated.token.id};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(since(from), want);
  EXPECT_EQ(since(clock_.Now()), std::vector<std::string>{rotated.token.id});
  EXPECT_EQ(since(clock_.Now() + Seconds(1)), std::vector<std::string>{});
  EXPECT_EQ(since(from - kOneMinute).size(), 3u);
}

TEST_P(ProvidersTest, ARotationThatFailsHalfwayChangesNothing) {
  accounts::Principal p = NewProvider("ana@example.com");
  NewAgentToken old = Create(p, "rack 3");
  // The new token is written, then revoking the old one fails: the whole rotation rolls back.
  faulty().FailStatement("UPDATE agent_tokens SET revoked_at",
                         Unavailable("injected: the database went away"));
  auto failed = providers_->RotateToken(p, old.token.id);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(faulty().injected(), 1);
  EXPECT_EQ(faulty().Count("INSERT INTO agent_tokens"), 2)
      << "the new token was written before the failure";
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 1);
  EXPECT_EQ(
      Number("SELECT COUNT(*) FROM agent_tokens WHERE revoked_at IS NULL AND replaced_by IS NULL"),
      1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action IN ('agent_token.rotated', "
                   "'agent_token.created') AND subject <> ?",
                   {old.token.id}),
            0);
  EXPECT_TRUE(providers_->AuthenticateAgent(old.secret).ok());

  // A conflict on the same statement retries the whole transaction: rotated once.
  faulty().FailStatement("UPDATE agent_tokens SET revoked_at", Aborted("injected conflict"));
  auto rotated = providers_->RotateToken(p, old.token.id);
  ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens"), 2);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM agent_tokens WHERE replaced_by = ?", {rotated->token.id}),
            1);
  EXPECT_TRUE(providers_->AuthenticateAgent(rotated->secret).ok());
  EXPECT_FALSE(providers_->AuthenticateAgent(old.secret).ok());
}

TEST_P(ProvidersTest, AuthenticateAgentRefusesWhatIsNotALiveTokenOfAnActiveProvider) {
  accounts::Principal p = NewProvider("ana@example.com");
  NewAgentToken t = Create(p);
  for (const std::string& bad :
       {std::string(""), std::string("gpx_a_unknown"), std::string("gpx_s_") + t.secret.substr(6),
        t.secret + std::string(200, 'x'), t.secret.substr(0, t.secret.size() - 1)}) {
    auto r = providers_->AuthenticateAgent(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << bad;
  }
  ASSERT_TRUE(providers_->AuthenticateAgent(t.secret).ok());
  // A provider that is no longer active (suspended by an admin) is refused with every token.
  ASSERT_TRUE(test_db()
                  .Exec("UPDATE providers SET status = 'suspended' WHERE user_id = ?", {p.user.id})
                  .ok());
  EXPECT_EQ(providers_->AuthenticateAgent(t.secret).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(providers_->Get(p)->status, ProviderStatus::kSuspended);
  ASSERT_TRUE(
      test_db().Exec("UPDATE providers SET status = 'active' WHERE user_id = ?", {p.user.id}).ok());
  EXPECT_TRUE(providers_->AuthenticateAgent(t.secret).ok());
  // An API key or session token is not an agent token.
  auto key = accounts_->CreateApiKey(p, "ci", {"read"});
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(providers_->AuthenticateAgent(key->secret).status().code(),
            StatusCode::kUnauthenticated);
}

TEST_P(ProvidersTest, TouchAgentTokenRecordsTheLastUse) {
  accounts::Principal p = NewProvider("ana@example.com");
  NewAgentToken t = Create(p);
  Create(p, "other");
  clock_.Advance(kOneHour);
  ASSERT_TRUE(providers_->TouchAgentToken(t.token.id).ok());
  auto list = providers_->ListTokens(p);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].last_used_at, clock_.Now());
  EXPECT_EQ((*list)[1].last_used_at, std::nullopt);
  clock_.Advance(kOneHour);
  ASSERT_TRUE(providers_->TouchAgentToken(t.token.id).ok());
  const Timestamp touched = clock_.Now();
  EXPECT_EQ((*providers_->ListTokens(p))[0].last_used_at, touched);
  // To the minute: the machines that share a token and connect together write it once.
  clock_.Advance(std::chrono::seconds(59));
  ASSERT_TRUE(providers_->TouchAgentToken(t.token.id).ok());
  EXPECT_EQ((*providers_->ListTokens(p))[0].last_used_at, touched);
  clock_.Advance(std::chrono::seconds(2));
  ASSERT_TRUE(providers_->TouchAgentToken(t.token.id).ok());
  EXPECT_EQ((*providers_->ListTokens(p))[0].last_used_at, clock_.Now());
}

TEST(ProviderStatusTest, EachStatusHasOneNameThatReadsBack) {
  gpunex::testing::ExpectEachNameReadsBack(kProviderStatusNames, ProviderStatus::kSuspended);
}

TEST(InstallCommand, PipesTheInstallerWithTheToken) {
  EXPECT_EQ(InstallCommand("https://gpunex.example", "gpx_a_abc"),
            "curl -fsSL https://gpunex.example/agent/install.sh | GPUNEX_TOKEN=gpx_a_abc bash");
}

GPUNEX_INSTANTIATE_BACKENDS(ProvidersTest);

}  // namespace
}  // namespace gpunex::platform::providers
