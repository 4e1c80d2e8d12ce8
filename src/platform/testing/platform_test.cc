#include "platform/testing/platform_test.h"

#include "platform/schema.h"

namespace gpunex::platform::testing {

void PlatformTest::SetUp() {
  auto t = store::testing::TestDatabase::OpenMigrated(GetParam(), schema::AllMigrations());
  if (t.status().code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << t.status().message();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  test_db_ = std::move(*t);
  faulty_ = std::make_unique<store::testing::FaultInjectingDatabase>(test_db_->db());
}

accounts::AccountsOptions PlatformTest::FastAccountsOptions() {
  accounts::AccountsOptions o;
  o.argon2_opslimit = 1;
  o.argon2_memlimit_bytes = 8192;
  o.clock = &clock_;
  return o;
}

int64_t PlatformTest::Number(const std::string& sql, const std::vector<store::Value>& params) {
  auto rows = test_db_->Query(sql, params);
  EXPECT_TRUE(rows.ok() && rows->size() == 1) << sql << ": " << rows.status().ToString();
  return rows.ok() && rows->size() == 1 ? rows->front().Only().Int() : -1;
}

std::string PlatformTest::Text(const std::string& sql, const std::vector<store::Value>& params) {
  auto rows = test_db_->Query(sql, params);
  EXPECT_TRUE(rows.ok() && rows->size() == 1) << sql << ": " << rows.status().ToString();
  return rows.ok() && rows->size() == 1 ? rows->front().Only().Str() : "";
}

std::vector<std::string> PlatformTest::Texts(const std::string& sql,
                                             const std::vector<store::Value>& params) {
  auto rows = test_db_->Query(sql, params);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status().ToString();
  std::vector<std::string> out;
  if (rows.ok()) {
    for (const auto& r : *rows) out.push_back(r.Only().IsNull() ? "NULL" : r.Only().Str());
  }
  return out;
}

accounts::Principal PlatformTest::As(const std::string& user_id) {
  accounts::Principal p;
  Status st = db().Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(p.user, accounts::LoadUser(tx, user_id));
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  p.ip = "192.0.2.7";
  return p;
}

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace gpunex::platform::testing
