// The metering formulas (LED-2, LED-4) over odd rates, one second to a year, 1–8 GPUs and
// both tiers' commissions: owed, fee and the provider's part equal the formulas exactly,
// fee + provider = owed, and charging tick by tick adds up to the total at the end.
#include "platform/billing/metering.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpunex::platform::billing {
namespace {

__extension__ typedef __int128 Int128;

// The formulas, in 128-bit integers, written out again here on purpose.
int64_t Owed(int64_t rate, int64_t gpus, int64_t s) {
  return static_cast<int64_t>(static_cast<Int128>(rate) * gpus * s / 3600);
}
int64_t Fee(int64_t owed, int64_t bps) {
  return static_cast<int64_t>(static_cast<Int128>(owed) * bps / 10000);
}

TEST(Metering, MatchesTheFormulasExactly) {
  const int64_t kYear = 365 * 24 * 3600;
  for (int64_t rate : {int64_t{1}, int64_t{7}, int64_t{450'000}, int64_t{999'999'999}}) {
    for (int64_t gpus = 1; gpus <= 8; ++gpus) {
      for (int64_t s : {int64_t{0}, int64_t{1}, int64_t{59}, int64_t{3599}, int64_t{3600},
                        int64_t{86'401}, kYear}) {
        for (int64_t bps : {int64_t{2000}, int64_t{1500}}) {
          auto m = Meter(Usdc::Micros(rate), gpus, s, bps);
          ASSERT_TRUE(m.ok()) << m.status().ToString();
          const int64_t owed = Owed(rate, gpus, s);
          EXPECT_EQ(m->owed.micros(), owed) << rate << " " << gpus << " " << s;
          EXPECT_EQ(m->fee.micros(), Fee(owed, bps));
          EXPECT_EQ(m->provider.micros(), owed - Fee(owed, bps));
          EXPECT_EQ(m->fee.micros() + m->provider.micros(), m->owed.micros());
        }
      }
    }
  }
}

TEST(Metering, KnownFigures) {
  // 1 micro-USDC per GPU-hour: nothing until the hour is full.
  EXPECT_EQ(Meter(Usdc::Micros(1), 1, 3599, 2000)->owed.micros(), 0);
  EXPECT_EQ(Meter(Usdc::Micros(1), 1, 3600, 2000)->owed.micros(), 1);
  EXPECT_EQ(Meter(Usdc::Micros(1), 1, 3600, 2000)->fee.micros(), 0);  // floor(0.2)
  // 999,999,999 per GPU-hour, 8 GPUs, a year: 70,079,999,929,920 micro-USDC.
  auto big = Meter(Usdc::Micros(999'999'999), 8, 365 * 24 * 3600, 1500);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->owed.micros(), int64_t{70'079'999'929'920});
  EXPECT_EQ(big->fee.micros(), int64_t{10'511'999'989'488});
  // 0.45 USDC per GPU-hour, 2 GPUs, 1 s: floor(900000 / 3600) = 250.
  EXPECT_EQ(Meter(Usdc::Micros(450'000), 2, 1, 2000)->owed.micros(), 250);
}

TEST(Metering, TicksAddUpToTheTotalWithoutDrift) {
  for (int64_t rate : {int64_t{1}, int64_t{333'333}, int64_t{999'999'999}}) {
    for (int64_t gpus : {1, 3, 8}) {
      int64_t charged = 0, fee = 0, provider = 0;
      int64_t prev_fee = 0, prev_provider = 0;
      for (int64_t s = 0; s <= 7200; s += 7) {
        auto m = Meter(Usdc::Micros(rate), gpus, s, 2000);
        ASSERT_TRUE(m.ok());
        ASSERT_GE(m->fee.micros(), prev_fee);  // every difference is a positive transfer
        ASSERT_GE(m->provider.micros(), prev_provider);
        fee += m->fee.micros() - prev_fee;
        provider += m->provider.micros() - prev_provider;
        charged = fee + provider;
        prev_fee = m->fee.micros();
        prev_provider = m->provider.micros();
        ASSERT_EQ(charged, Owed(rate, gpus, s));
      }
    }
  }
}

TEST(Metering, RefusesWhatIsOutOfRange) {
  EXPECT_EQ(Meter(Usdc::Micros(1), 1, -1, 2000).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Meter(Usdc::Micros(1), 1, 1, 10001).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Meter(Usdc::Micros(-1), 1, 1, 2000).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Meter(Usdc::Micros(std::numeric_limits<int64_t>::max()), 8, int64_t{1} << 40, 2000)
                .status()
                .code(),
            StatusCode::kOutOfRange);
}

TEST(Metering, SecondsPaidForIsTheLastCoveredSecond) {
  for (int64_t rate : {int64_t{1}, int64_t{7}, int64_t{450'000}, int64_t{999'999'999}}) {
    for (int64_t gpus : {1, 2, 8}) {
      for (int64_t limit : {int64_t{0}, int64_t{1}, int64_t{249}, int64_t{250}, int64_t{900'000},
                            int64_t{1'000'000'007}}) {
        const int64_t s = SecondsPaidFor(Usdc::Micros(rate), gpus, Usdc::Micros(limit));
        EXPECT_LE(Owed(rate, gpus, s), limit);
        EXPECT_GT(Owed(rate, gpus, s + 1), limit) << rate << " " << gpus << " " << limit;
      }
    }
  }
  EXPECT_EQ(SecondsPaidFor(Usdc::Micros(450'000), 2, Usdc::Micros(900'000)), 3600);
  EXPECT_EQ(SecondsPaidFor(Usdc::Zero(), 1, Usdc::Zero()), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace gpunex::platform::billing
