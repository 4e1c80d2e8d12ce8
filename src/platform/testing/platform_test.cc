#include "platform/testing/platform_test.h"

#include "platform/schema.h"

namespace gpunex::platform::testing {

void PlatformTest::SetUp() {
  auto t = store::testing::TestDatabase::Open(GetParam());
  if (t.status().code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << t.status().message();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  test_db_ = std::move(*t);
  ASSERT_TRUE(test_db_->Migrate(schema::AllMigrations()).ok());
  faulty_ = std::make_unique<store::testing::FaultInjectingDatabase>(test_db_->db());
}

accounts::AccountsOptions PlatformTest::FastAccountsOptions() {
  accounts::AccountsOptions o;
  o.argon2_opslimit = 1;
  o.argon2_memlimit_bytes = 8192;
  o.clock = &clock_;
  return o;
}

int64_t PlatformTest::Count(const std::string& sql, const std::vector<store::Value>& params) {
  auto rows = test_db_->Query(sql, params);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status().ToString();
  return rows.ok() && !rows->empty() ? rows->at(0).Int(0) : -1;
}

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace gpunex::platform::testing
