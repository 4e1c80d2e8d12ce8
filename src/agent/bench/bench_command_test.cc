#include "agent/bench/bench_command.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/json.h"

namespace gpunex::agent::bench {
namespace {

namespace fs = std::filesystem;

TEST(BenchCommand, StorageJson) {
  std::string dir = (fs::path(::testing::TempDir()) / "gpunex-bench-cmd-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ostringstream out, err;
  int rc = RunBenchCommand({"storage", "--dir", dir, "--file-mb", "4", "--seconds", "0.2",
                            "--queue-depth", "4", "--keep-free-mb", "0", "--json"},
                           out, err);
  EXPECT_EQ(rc, 0) << err.str();
  auto v = ParseJson(out.str());
  ASSERT_TRUE(v.ok()) << out.str();
  const json::object& o = v->as_object();
  for (const char* key :
       {"seq_write_mb_s", "seq_read_mb_s", "rand_read_iops", "rand_read_p50_us", "rand_read_p99_us",
        "file_bytes", "direct_io", "io_uring", "queue_depth"}) {
    EXPECT_TRUE(o.contains(key)) << key;
  }
  EXPECT_EQ(o.at("file_bytes").to_number<int64_t>(), 4 << 20);
  EXPECT_EQ(o.at("queue_depth").to_number<int>(), 4);
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(BenchCommand, StorageText) {
  std::string dir = (fs::path(::testing::TempDir()) / "gpunex-bench-cmd-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ostringstream out, err;
  int rc = RunBenchCommand(
      {"storage", "--dir", dir, "--file-mb", "2", "--seconds", "0.1", "--keep-free-mb", "0"}, out,
      err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_NE(out.str().find("MB/s"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("IOPS"), std::string::npos) << out.str();
  fs::remove_all(dir);
}

TEST(BenchCommand, UsageErrorsAre2) {
  std::ostringstream out, err;
  EXPECT_EQ(RunBenchCommand({}, out, err), 2);
  EXPECT_EQ(RunBenchCommand({"storage"}, out, err), 2);  // --dir is required
  EXPECT_EQ(RunBenchCommand({"network", "--url", "ftp://x", "--token", "gpx_a_x"}, out, err), 2);
  EXPECT_EQ(RunBenchCommand({"storage", "--help"}, out, err), 0);
}

TEST(BenchCommand, FailureIs1) {
  std::ostringstream out, err;
  EXPECT_EQ(
      RunBenchCommand({"network", "--url", "http://127.0.0.1:1", "--token", "gpx_a_x"}, out, err),
      1);
  EXPECT_NE(err.str().find("network"), std::string::npos);
}

}  // namespace
}  // namespace gpunex::agent::bench
