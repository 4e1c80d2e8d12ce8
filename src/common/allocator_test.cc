#include "common/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <vector>

namespace gpunex {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

TEST(Allocator, FreedFramesStayForTheNextOnes) {
  if (kSanitizerAllocator) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's";
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  // Frames of 64 KiB, allocated and freed in turn as the data channel does: once the
  // settings hold, the heap keeps what was freed (up to kKeptFreeBytes) instead of giving
  // it back, so the next frames reuse it.
  auto churn = [] {
    std::vector<std::unique_ptr<char[]>> frames;
    for (int i = 0; i < 48; ++i) {
      frames.push_back(std::make_unique<char[]>(64 << 10));
      frames.back()[0] = 1;
    }
  };
  churn();
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.keepcost, size_t{1} << 20) << "the freed frames were given back";
  EXPECT_LE(after.keepcost, static_cast<size_t>(kKeptFreeBytes));
}

}  // namespace
}  // namespace gpunex
