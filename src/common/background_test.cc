#include "common/background.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpunex {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

// Waits (a few seconds at most) until `done` holds.
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return done();
}

TEST(BackgroundTest, EachTaskRunsAPassAtStartAndThenAfterEachPause) {
  std::atomic<int> fast{0}, slow{0};
  Background background;  // after what its tasks use: it stops first
  background.Add({.name = "fast", .every = milliseconds(5), .pass = [&] {
                    ++fast;
                    return Status::Ok();
                  }});
  background.Add({.name = "slow", .every = hours(1), .pass = [&] {
                    ++slow;
                    return Status::Ok();
                  }});
  EXPECT_EQ(background.names(), (std::vector<std::string>{"fast", "slow"}));
  background.Start();
  EXPECT_TRUE(Eventually([&] { return fast >= 5; }));
  background.Stop();
  EXPECT_EQ(slow, 1) << "one pass at start, the next an hour later";
  const int after_stop = fast;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(fast, after_stop) << "no pass after Stop";
}

TEST(BackgroundTest, WakeEndsThePauseAndIsRememberedDuringAPass) {
  std::atomic<int> passes{0};
  std::atomic<bool> hold{false};
  Background background;  // after what its tasks use: it stops first
  TaskHandle task = background.Add({.name = "woken", .every = hours(1), .pass = [&] {
                                      ++passes;
                                      while (hold) std::this_thread::sleep_for(milliseconds(1));
                                      return Status::Ok();
                                    }});
  background.Start();
  ASSERT_TRUE(Eventually([&] { return passes == 1; }));
  task.Wake();
  ASSERT_TRUE(Eventually([&] { return passes == 2; }));
  // Woken in the middle of a pass: the next one follows at once.
  hold = true;
  task.Wake();
  ASSERT_TRUE(Eventually([&] { return passes == 3; }));
  task.Wake();
  hold = false;
  EXPECT_TRUE(Eventually([&] { return passes == 4; }));
  background.Stop();
  EXPECT_EQ(passes, 4);
}

TEST(BackgroundTest, StopsInTheReverseOrderAfterTheCurrentPassThenAfterStop) {
  std::mutex mu;
  std::vector<std::string> seen;
  auto note = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(what);
  };
  TaskHandle first, second;
  Background background;  // after what its tasks use: it stops first
  first = background.Add(
      {.name = "first",
       .every = hours(1),
       .pass = [] { return Status::Ok(); },
       .after_stop = [&] { note("first stopped, running " + std::to_string(first.running())); }});
  second = background.Add(
      {.name = "second",
       .every = hours(1),
       .pass = [] { return Status::Ok(); },
       .after_stop =
           [&] { note("second stopped, stopping " + std::to_string(second.stopping())); }});
  EXPECT_FALSE(first.running());
  background.Start();
  EXPECT_TRUE(first.running());
  EXPECT_TRUE(second.running());
  EXPECT_FALSE(first.stopping());
  background.Stop();
  EXPECT_EQ(seen,
            (std::vector<std::string>{"second stopped, stopping 1", "first stopped, running 0"}));
  EXPECT_FALSE(second.running());
}

TEST(BackgroundTest, AFailingPassIsLoggedAndTheTaskGoesOn) {
  std::atomic<int> passes{0};
  Background background;  // after what its tasks use: it stops first
  background.Add({.name = "flaky", .every = milliseconds(1), .pass = [&] {
                    return ++passes % 2 ? Unavailable("down") : Status::Ok();
                  }});
  background.Start();
  EXPECT_TRUE(Eventually([&] { return passes >= 4; }));
  background.Stop();
}

TEST(BackgroundTest, StartsAgainAfterStop) {
  std::atomic<int> passes{0};
  Background background;  // after what its tasks use: it stops first
  background.Add({.name = "again", .every = hours(1), .pass = [&] {
                    ++passes;
                    return Status::Ok();
                  }});
  background.Start();
  ASSERT_TRUE(Eventually([&] { return passes == 1; }));
  background.Stop();
  background.Start();
  EXPECT_TRUE(Eventually([&] { return passes == 2; }));
  // The destructor stops it.
}

TEST(BackgroundTest, RunOnceRunsAPassOnTheCallingThreadWhileNotStarted) {
  std::thread::id ran_on;
  Background background;  // after what its tasks use: it stops first
  background.Add({.name = "stepped", .every = hours(1), .pass = [&] {
                    ran_on = std::this_thread::get_id();
                    return InvalidArgument("its own status");
                  }});
  Status st = background.RunOnce("stepped");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "its own status");
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(background.RunOnce("unknown").code(), StatusCode::kNotFound);
  background.Start();
  EXPECT_EQ(background.RunOnce("stepped").code(), StatusCode::kFailedPrecondition);
  background.Stop();
}

TEST(BackgroundTest, AnEmptyHandleDoesNothing) {
  TaskHandle none;
  none.Wake();
  EXPECT_FALSE(none.running());
  EXPECT_FALSE(none.stopping());
}

}  // namespace
}  // namespace gpunex
