#include "common/data_channel.h"

#include <gtest/gtest.h>

#include "common/mux.h"

namespace gpunex {
namespace {

TEST(StreamTarget, RoundTrips) {
  StreamTarget t{"wkl_01M953QKHX2WV91S3HKEK5PC5K", 8080};
  const std::string text = EncodeStreamTarget(t);
  EXPECT_EQ(text,
            "{\"kind\":\"port\",\"workload_id\":\"wkl_01M953QKHX2WV91S3HKEK5PC5K\",\"port\":8080}");
  auto back = ParseStreamTarget(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
}

TEST(StreamTarget, FilesRoundTripWithTheirFraming) {
  StreamTarget get{.workload_id = "wkl_01M953QKHX2WV91S3HKEK5PC5K",
                   .kind = StreamTarget::Kind::kFiles,
                   .path = "/scratch/out"};
  EXPECT_EQ(EncodeStreamTarget(get),
            "{\"kind\":\"files\",\"workload_id\":\"wkl_01M953QKHX2WV91S3HKEK5PC5K\",\"op\":\"get\","
            "\"path\":\"/scratch/out\"}");
  auto back = ParseStreamTarget(EncodeStreamTarget(get));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, get);
  StreamTarget put = get;
  put.put = true;
  put.length = 10240;
  back = ParseStreamTarget(EncodeStreamTarget(put));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, put);
  put.length = 0;
  put.chunked = true;
  back = ParseStreamTarget(EncodeStreamTarget(put));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, put);
}

TEST(StreamTarget, ExecRoundTripsWithItsArguments) {
  StreamTarget exec{.workload_id = "wkl_01M953QKHX2WV91S3HKEK5PC5K",
                    .kind = StreamTarget::Kind::kExec,
                    .command = {"sh", "-c", "echo \"hi\"\nexit 3"},
                    .tty = true,
                    .open_stdin = false};
  EXPECT_EQ(
      EncodeStreamTarget(exec),
      "{\"kind\":\"exec\",\"workload_id\":\"wkl_01M953QKHX2WV91S3HKEK5PC5K\","
      "\"command\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\\nexit 3\"],\"tty\":true,\"stdin\":false}");
  auto back = ParseStreamTarget(EncodeStreamTarget(exec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, exec);
  // tty and stdin may be left out: no terminal, stdin open.
  back = ParseStreamTarget(
      "{\"kind\":\"exec\",\"workload_id\":\"wkl_01M953QKHX2WV91S3HKEK5PC5K\",\"command\":[\"cat\"]}");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->tty);
  EXPECT_TRUE(back->open_stdin);
}

TEST(ExecCommandProblem, TakesArgumentListsThatFitAnOpenFrame) {
  EXPECT_EQ(ExecCommandProblem({"ls"}), "");
  EXPECT_EQ(ExecCommandProblem({"sh", "-c", "a\tb\nc", ""}), "");
  EXPECT_EQ(ExecCommandProblem(std::vector<std::string>(kMaxExecArgs, "x")), "");
  EXPECT_NE(ExecCommandProblem({}), "");
  EXPECT_NE(ExecCommandProblem({""}), "");
  EXPECT_NE(ExecCommandProblem(std::vector<std::string>(kMaxExecArgs + 1, "x")), "");
  EXPECT_NE(ExecCommandProblem({"sh", std::string("a\0b", 3)}), "");
  EXPECT_NE(ExecCommandProblem({"sh", "\x1b[2J"}), "");
  EXPECT_NE(ExecCommandProblem({"sh", "\xff"}), "");
  EXPECT_NE(ExecCommandProblem({"echo", std::string(kMaxExecCommandBytes, 'a')}), "");
  // The largest command fits the mux's open frame.
  StreamTarget t{.workload_id = "wkl_01M953QKHX2WV91S3HKEK5PC5K",
                 .kind = StreamTarget::Kind::kExec,
                 .command = {"echo", std::string(kMaxExecCommandBytes - 10, 'a')}};
  ASSERT_EQ(ExecCommandProblem(t.command), "");
  EXPECT_LE(EncodeStreamTarget(t).size(), mux::kMaxTargetBytes);
}

TEST(FilesPathProblem, TakesAbsolutePathsWithoutDotSegments) {
  for (const char* ok : {"/", "/scratch", "/scratch/a b/c.txt", "/a/.hidden", "/a/b/"}) {
    EXPECT_EQ(FilesPathProblem(ok), "") << ok;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "scratch", "./a", "/a/./b", "/a/..", "/a\nb",
                                std::string("/a\0b", 4), "/" + std::string(5000, 'a')}) {
    EXPECT_NE(FilesPathProblem(bad), "") << bad;
  }
}

TEST(StreamTarget, RefusesWhatItDoesNotKnow) {
  const std::string id = "wkl_01M953QKHX2WV91S3HKEK5PC5K";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {"{\"kind\":\"file\",\"workload_id\":\"" + id + "\",\"port\":1}", "kind"},
      {"{\"kind\":\"files\",\"workload_id\":\"" + id + "\",\"op\":\"get\",\"path\":\"etc\"}",
       "absolute"},
      {"{\"kind\":\"files\",\"workload_id\":\"" + id + "\",\"op\":\"get\",\"path\":\"/a/../b\"}",
       ".. segments"},
      {"{\"kind\":\"files\",\"workload_id\":\"" + id + "\",\"op\":\"rm\",\"path\":\"/a\"}", "op"},
      {"{\"kind\":\"files\",\"workload_id\":\"" + id + "\",\"path\":\"/a\"}", "op"},
      {"{\"kind\":\"files\",\"workload_id\":\"" + id +
           "\",\"op\":\"get\",\"path\":\"/a\",\"port\":22}",
       "port"},
      {"{\"workload_id\":\"" + id + "\",\"port\":1}", "kind"},
      {"{\"kind\":\"port\",\"workload_id\":\"../etc\",\"port\":1}", "workload_id"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":0}", "port"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":65536}", "port"},
      {"{\"kind\":\"port\",\"workload_id\":\"" + id + "\",\"port\":22,\"host\":\"10.0.0.1\"}",
       "host"},
      {std::string(5000, ' '), "too long"},
  };
  for (const auto& [text, why] : bad) {
    auto got = ParseStreamTarget(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos)
        << text << ": " << got.status().message();
  }
}

}  // namespace
}  // namespace gpunex
