#include "platform/accounts/password_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace gpunex::platform::accounts {
namespace {

using std::chrono::milliseconds;

TEST(PasswordGate, WithNoRoomToWaitASecondIsRefusedAtOnce) {
  PasswordGate gate(1, 0, milliseconds(2000));
  auto first = gate.Enter();
  ASSERT_TRUE(first.ok());
  const auto start = std::chrono::steady_clock::now();
  auto second = gate.Enter();
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000)) << "without waiting";
}

TEST(PasswordGate, AWaiterGetsThePlaceTheFirstLeaves) {
  PasswordGate gate(1, 1, milliseconds(5000));
  std::atomic<bool> second_in{false};
  std::thread waiter;
  {
    auto first = gate.Enter();
    ASSERT_TRUE(first.ok());
    waiter = std::thread([&] { second_in = gate.Enter().ok(); });
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_FALSE(second_in) << "it waits while the first holds the place";
  }
  waiter.join();
  EXPECT_TRUE(second_in);
  EXPECT_TRUE(gate.Enter().ok()) << "and gave it back";
}

TEST(PasswordGate, AWaiterGivesUpAfterMaxWait) {
  PasswordGate gate(1, 4, milliseconds(50));
  auto held = gate.Enter();
  ASSERT_TRUE(held.ok());
  const auto start = std::chrono::steady_clock::now();
  auto late = gate.Enter();
  EXPECT_EQ(late.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));
}

TEST(PasswordGate, NeverMoreThanItsPlacesAtOnce) {
  PasswordGate gate(2, 100, milliseconds(5000));
  std::atomic<int> inside{0}, most{0}, done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      auto pass = gate.Enter();
      if (!pass.ok()) return;
      const int now = ++inside;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(milliseconds(10));
      --inside;
      ++done;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(done, 8);
  EXPECT_LE(most, 2);
}

}  // namespace
}  // namespace gpunex::platform::accounts
