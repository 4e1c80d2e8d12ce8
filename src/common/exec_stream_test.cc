#include "common/exec_stream.h"

#include <gtest/gtest.h>

#include <random>

namespace gpunex {
namespace {

TEST(ExecFrame, EncodesChannelLengthAndBytes) {
  EXPECT_EQ(EncodeExecFrame(ExecChannel::kStdout, "hi"), std::string("\x01\x00\x00\x00\x02hi", 7));
  EXPECT_EQ(EncodeExecFrame(ExecChannel::kClose, std::string(1, '\0')),
            std::string("\xff\x00\x00\x00\x01\x00", 6));
}

TEST(ExecFrameReader, CutsAStreamFedInAnyPieces) {
  std::vector<ExecFrame> frames = {{ExecChannel::kStdin, "echo hi\n"},
                                   {ExecChannel::kResize, R"({"Width":80,"Height":24})"},
                                   {ExecChannel::kStdout, ""},
                                   {ExecChannel::kStderr, std::string(70000, 'e')},
                                   {ExecChannel::kStatus, R"({"exit_code":3})"},
                                   {ExecChannel::kClose, std::string(1, '\0')}};
  std::string stream;
  for (const auto& f : frames) stream += EncodeExecFrame(f.channel, f.payload);
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    ExecFrameReader reader;
    std::vector<ExecFrame> got;
    for (size_t at = 0; at < stream.size();) {
      const size_t n = std::min<size_t>(stream.size() - at, 1 + rng() % 9000);
      reader.Feed(std::string_view(stream).substr(at, n));
      at += n;
      for (;;) {
        auto next = reader.Next();
        ASSERT_TRUE(next.ok()) << next.status().ToString();
        if (!next->has_value()) break;
        got.push_back(**next);
      }
    }
    EXPECT_EQ(got, frames);
    EXPECT_EQ(reader.buffered(), 0u);
  }
}

TEST(ExecFrameReader, RefusesUnknownChannelsAndHugeFrames) {
  ExecFrameReader unknown;
  unknown.Feed(std::string("\x07\x00\x00\x00\x00", 5));
  EXPECT_EQ(unknown.Next().status().code(), StatusCode::kInvalidArgument);
  ExecFrameReader huge;
  huge.Feed(std::string("\x00\x7f\xff\xff\xff", 5));
  auto next = huge.Next();
  EXPECT_EQ(next.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(next.status().message().find("at most"), std::string::npos);
}

TEST(TerminalSize, ReadsKubernetesResizeMessages) {
  auto size = ParseTerminalSize(R"({"Width":132,"Height":43})");
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(size->columns, 132);
  EXPECT_EQ(size->rows, 43);
  for (const char* bad : {"", "[]", R"({"Width":0,"Height":5})", R"({"Width":80})",
                          R"({"Width":"80","Height":24})", R"({"Width":80,"Height":99999})"}) {
    EXPECT_FALSE(ParseTerminalSize(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpunex
