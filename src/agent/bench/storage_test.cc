#include "agent/bench/storage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/bench/internal/storage_hooks.h"

namespace gpunex::agent::bench {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with what is left in it.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = ::testing::TempDir()) {
    std::string tmpl = (fs::path(parent) / "gpunex-storage-test-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  bool Empty() const { return fs::is_empty(path_); }

 private:
  std::string path_;
};

// Small and short, so the tests take about a second each.
StorageOptions Quick(const std::string& dir) {
  StorageOptions o;
  o.dir = dir;
  o.file_bytes = 8 << 20;
  o.seconds_per_phase = 0.3;
  o.queue_depth = 8;
  o.keep_free_bytes = 0;
  return o;
}

// Whether the file system at `dir` lets a file be opened with O_DIRECT.
bool AcceptsODirect(const std::string& dir) {
  const std::string path = dir + "/probe";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
  if (fd >= 0) close(fd);
  unlink(path.c_str());
  return fd >= 0;
}

void ExpectFigures(const StorageResult& r) {
  EXPECT_GT(r.seq_write_mb_s, 0);
  EXPECT_GT(r.seq_read_mb_s, 0);
  EXPECT_GT(r.rand_read_iops, 0);
  // Buffered reads of a file this small come from the page cache, often completed within
  // the submitting call: their latency may round to nothing.
  if (r.direct_io) {
    EXPECT_GT(r.rand_read_p50_us, 0);
  } else {
    EXPECT_GE(r.rand_read_p50_us, 0);
  }
  EXPECT_GE(r.rand_read_p99_us, r.rand_read_p50_us);
}

TEST(StorageBenchmark, MeasuresEveryPhaseAndLeavesNothingBehind) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto r = RunStorageBenchmark(Quick(dir.path()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectFigures(*r);
  EXPECT_EQ(r->file_bytes, 8 << 20);
  EXPECT_EQ(r->direct_io, AcceptsODirect(dir.path()));
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, OnTmpfs) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  TempDir dir("/dev/shm");
  ASSERT_FALSE(dir.path().empty());
  auto r = RunStorageBenchmark(Quick(dir.path()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectFigures(*r);
  // tmpfs accepts O_DIRECT from Linux 6.6 on; either way the flag says what happened.
  EXPECT_EQ(r->direct_io, AcceptsODirect(dir.path()));
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, FallsBackToBufferedIoAndSaysSo) {
  TempDir dir;
  internal::StorageHooks hooks;
  hooks.refuse_direct_io = true;
  auto r = internal::RunStorageBenchmarkWithHooks(Quick(dir.path()), hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectFigures(*r);
  EXPECT_FALSE(r->direct_io);
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, FallsBackToThreadsWithoutIoUringAndSaysSo) {
  TempDir dir;
  internal::StorageHooks hooks;
  hooks.refuse_io_uring = true;
  auto r = internal::RunStorageBenchmarkWithHooks(Quick(dir.path()), hooks);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectFigures(*r);
  EXPECT_FALSE(r->io_uring);
  EXPECT_TRUE(dir.Empty());
}

// Storage that deduplicates must not be flattered: no two 4 KiB sectors of the written
// file are alike, within one run or across two.
TEST(StorageBenchmark, WritesNoTwoSectorsAlike) {
  TempDir dir;
  std::set<std::string> sectors;
  int64_t total = 0;
  internal::StorageHooks hooks;
  hooks.refuse_direct_io = true;  // buffered reads of the file need no aligned buffer
  hooks.after_write = [&](int fd, int64_t bytes) {
    std::vector<char> buf(4096);
    for (int64_t at = 0; at < bytes; at += 4096) {
      ASSERT_EQ(pread(fd, buf.data(), buf.size(), at), 4096) << "at " << at;
      sectors.emplace(buf.data(), buf.size());
      ++total;
    }
  };
  for (int run = 0; run < 2; ++run) {
    auto r = internal::RunStorageBenchmarkWithHooks(Quick(dir.path()), hooks);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_EQ(total, 2 * (8 << 20) / 4096);
  EXPECT_EQ(static_cast<int64_t>(sectors.size()), total);
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, RefusesToFillTheDisk) {
  TempDir dir;
  StorageOptions o = Quick(dir.path());
  o.keep_free_bytes = std::numeric_limits<int64_t>::max() / 4;
  auto r = RunStorageBenchmark(o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("to keep"), std::string::npos);
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, TimeLimitShortensTheFile) {
  TempDir dir;
  StorageOptions o = Quick(dir.path());
  o.file_bytes = 1LL << 30;
  o.seconds_per_phase = 0.01;
  auto r = RunStorageBenchmark(o);
  if (!r.ok() && r.status().code() == StatusCode::kFailedPrecondition)
    GTEST_SKIP() << "less than 1 GiB free";
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(r->file_bytes, 1LL << 30);
  EXPECT_GT(r->file_bytes, 0);
  EXPECT_EQ(r->file_bytes % (1 << 20), 0);
  ExpectFigures(*r);
  EXPECT_TRUE(dir.Empty());
}

TEST(StorageBenchmark, RejectsBadOptions) {
  TempDir dir;
  StorageOptions o = Quick(dir.path());
  o.queue_depth = 0;
  EXPECT_EQ(RunStorageBenchmark(o).status().code(), StatusCode::kInvalidArgument);
  o = Quick(dir.path());
  o.seconds_per_phase = 0;
  EXPECT_EQ(RunStorageBenchmark(o).status().code(), StatusCode::kInvalidArgument);
  o = Quick(dir.path());
  o.file_bytes = 4096;
  auto r = RunStorageBenchmark(o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().fields().count("file_bytes"), 1u);
  o = Quick(dir.path() + "/missing");
  EXPECT_EQ(RunStorageBenchmark(o).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(dir.Empty());
}

}  // namespace
}  // namespace gpunex::agent::bench
