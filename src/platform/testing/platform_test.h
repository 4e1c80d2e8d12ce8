// PlatformTest: the fixture of the domain folders' tests. Parameterised over the store
// backends ("sqlite", and "postgresql" when GPUNEX_TEST_PG_URL names a server: a test on a
// backend that is not there skips), it gives each test a throw-away database with every
// folder's schema (schema.h), a FaultInjectingDatabase around it, a FakeClock, and cheap
// password hashing for the accounts tests create.
//
//   class RentalsTest : public platform::testing::PlatformTest {
//     void SetUp() override {
//       PlatformTest::SetUp();
//       if (IsSkipped() || HasFatalFailure()) return;
//       ...
//     }
//   };
//   GPUNEX_INSTANTIATE_BACKENDS(RentalsTest);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/testing/fake_clock.h"
#include "platform/accounts/accounts.h"
#include "platform/store/testing/fault_injection.h"
#include "platform/store/testing/test_database.h"

namespace gpunex::platform::testing {

class PlatformTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // The database as it is, and wrapped in the fault injector (what code under test
  // should be given when a test injects faults).
  store::Database& db() { return test_db_->db(); }
  store::testing::FaultInjectingDatabase& faulty() { return *faulty_; }
  store::testing::TestDatabase& test_db() { return *test_db_; }

  // Accounts options with the clock and the cheapest Argon2id libsodium allows.
  accounts::AccountsOptions FastAccountsOptions();

  // The one integer / text cell a query answers (COUNT(*), a state): its one column of its
  // one row (Row::Only); a test failure and -1 / "" unless it answers exactly one row.
  int64_t Number(const std::string& sql, const std::vector<store::Value>& params = {});
  std::string Text(const std::string& sql, const std::vector<store::Value>& params = {});
  // The one column of every row, "NULL" for a null.
  std::vector<std::string> Texts(const std::string& sql,
                                 const std::vector<store::Value>& params = {});

  // The principal of an existing user, as a request from 192.0.2.7 would carry it.
  accounts::Principal As(const std::string& user_id);

  gpunex::testing::FakeClock clock_;

 private:
  std::unique_ptr<store::testing::TestDatabase> test_db_;
  std::unique_ptr<store::testing::FaultInjectingDatabase> faulty_;
};

// "sqlite" / "postgresql" as the test name suffix.
std::string BackendName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace gpunex::platform::testing

#define GPUNEX_INSTANTIATE_BACKENDS(suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(                                                                     \
      Backends, suite, ::testing::ValuesIn(::gpunex::platform::store::testing::TestBackends()), \
      ::gpunex::platform::testing::BackendName)
