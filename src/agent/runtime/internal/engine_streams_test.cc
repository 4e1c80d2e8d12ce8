#include "agent/runtime/internal/engine_streams.h"

#include <gtest/gtest.h>

#include <random>

namespace gpunex::agent::internal {
namespace {

using Stream = LogFrame::Stream;

std::string Frame(int stream, std::string_view payload) {
  std::string f(8, '\0');
  f[0] = static_cast<char>(stream);
  uint32_t n = static_cast<uint32_t>(payload.size());
  f[4] = static_cast<char>(n >> 24);
  f[5] = static_cast<char>(n >> 16);
  f[6] = static_cast<char>(n >> 8);
  f[7] = static_cast<char>(n);
  return f + std::string(payload);
}

// Feeds `data` in pieces of random sizes (1 byte included).
template <typename F>
Status FeedInPieces(std::string_view data, unsigned seed, F feed) {
  std::mt19937 rng(seed);
  while (!data.empty()) {
    size_t n = std::min<size_t>(data.size(), 1 + rng() % 37);
    GPUNEX_RETURN_IF_ERROR(feed(data.substr(0, n)));
    data.remove_prefix(n);
  }
  return Status::Ok();
}

TEST(FrameDemuxer, ReassemblesFramesSplitAnywhere) {
  std::string big(70'000, 'x');
  std::string stream = Frame(1, "out\n") + Frame(2, "err\n") + Frame(1, "") + Frame(1, big) +
                       Frame(0, "in") + Frame(3, "sys");
  for (unsigned seed = 0; seed < 20; ++seed) {
    FrameDemuxer demux;
    std::vector<LogFrame> frames;
    Status st = FeedInPieces(stream, seed, [&](std::string_view piece) {
      return demux.Feed(piece, [&](Stream s, std::string_view p, bool first) {
        if (first) frames.push_back(LogFrame{s, ""});
        EXPECT_FALSE(frames.empty());
        EXPECT_EQ(frames.back().stream, s);
        frames.back().data += p;
        return Status::Ok();
      });
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(frames.size(), 5u);  // the empty frame is skipped
    EXPECT_EQ(frames[0].data, "out\n");
    EXPECT_EQ(frames[1].stream, Stream::kStderr);
    EXPECT_EQ(frames[1].data, "err\n");
    EXPECT_EQ(frames[2].data, big);
    EXPECT_EQ(frames[3].stream, Stream::kStdout);
    EXPECT_EQ(frames[4].stream, Stream::kStderr);
  }
}

TEST(FrameDemuxer, RefusesARawTtyStream) {
  FrameDemuxer demux;
  Status st =
      demux.Feed("hello world\n", [](Stream, std::string_view, bool) { return Status::Ok(); });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("TTY"), std::string::npos);
}

TEST(FrameDemuxer, StopsAtTheSinksError) {
  FrameDemuxer demux;
  Status st = demux.Feed(Frame(1, "a") + Frame(1, "b"),
                         [](Stream, std::string_view, bool) { return Internal("stop"); });
  EXPECT_EQ(st.message(), "stop");
}

TEST(ProgressStream, ForwardsProgressAndKeepsTheFirstError) {
  std::vector<std::string> progress;
  ProgressStream ps([&](const std::string& p) { progress.push_back(p); });
  std::string text =
      "{\"status\":\"Pulling from team/model\",\"id\":\"v1\"}\nnot "
      "json\n\n{\"status\":\"Downloading\",\"id\":\"abc\",\"progress\":\"[==> ] "
      "1MB/2MB\"}\r\n{\"errorDetail\":{\"message\":\"manifest unknown\"},\"error\":\"manifest "
      "unknown\"}\n{\"error\":\"second\"}\n{\"stream\":\"Loaded image: x:1\\n\"}";
  ASSERT_TRUE(FeedInPieces(text, 7, [&](std::string_view p) { return ps.Feed(p); }).ok());
  ASSERT_TRUE(ps.Finish().ok());
  ASSERT_TRUE(ps.error().has_value());
  EXPECT_EQ(*ps.error(), "manifest unknown");
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[0], "v1: Pulling from team/model");
  EXPECT_EQ(progress[1], "abc: Downloading [==> ] 1MB/2MB");
  EXPECT_EQ(progress[2], "Loaded image: x:1");
}

TEST(ProgressStream, BoundsLineLength) {
  ProgressStream ps(nullptr);
  Status st = ps.Feed(std::string(kMaxStreamLineBytes + 1, 'x'));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
}

// A log as the engine stores it: (stream, timestamp, payload), in file order.
struct Entry {
  int stream;
  std::string stamp;
  std::string payload;
};

std::string Stamped(const std::vector<Entry>& log, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i)
    out += Frame(log[i].stream, log[i].stamp + " " + log[i].payload);
  return out;
}

// Follows the log's first `followed` entries, then recovers the rest from its last
// `window` entries; returns everything delivered.
std::string FollowThenRecover(const std::vector<Entry>& log, size_t followed, size_t window) {
  std::string out;
  std::function<void(const LogFrame&)> deliver = [&](const LogFrame& f) { out += f.data; };
  StampedFrames follow(&deliver);
  FrameDemuxer d1;
  EXPECT_TRUE(FeedInPieces(Stamped(log, 0, followed), 3, [&](std::string_view p) {
                return d1.Feed(p, [&](Stream s, std::string_view x, bool first) {
                  return follow.Piece(s, x, first);
                });
              }).ok());
  follow.Finish();
  StampedFrames tail(nullptr);
  FrameDemuxer d2;
  size_t from = log.size() > window ? log.size() - window : 0;
  EXPECT_TRUE(
      d2.Feed(Stamped(log, from, log.size()), [&](Stream s, std::string_view x, bool first) {
          return tail.Piece(s, x, first);
        }).ok());
  tail.Finish();
  size_t overlap = DeliveredOverlap(tail.frames(), follow.recent());
  for (size_t i = overlap; i < tail.frames().size(); ++i) deliver(tail.frames()[i].second);
  return out;
}

TEST(StampedFrames, RecoversWhatAFollowStreamMissed) {
  // Partial lines share the timestamp of their first part, so the last entry (the rest
  // of a line flushed at exit) is older than the one before it.
  std::vector<Entry> log;
  for (int i = 0; i < 600; ++i) {
    char ts[64];
    std::snprintf(ts, sizeof ts, "2026-11-29T16:00:%02d.%09dZ", i / 100, i);
    log.push_back({1 + i % 2, ts, "line " + std::to_string(i) + "\n"});
  }
  log.push_back({1, "2026-11-29T16:00:09.000000000Z", "part1 "});
  log.push_back({2, "2026-11-29T16:00:09.500000000Z", "done\n"});
  log.push_back({1, "2026-11-29T16:00:09.000000000Z", "part2"});
  std::string all;
  for (const auto& e : log) all += e.payload;

  // Whatever the follow stream missed, within the window.
  const size_t window = StampedFrames::kFollowOverlap;
  for (size_t missed : {size_t{0}, size_t{1}, size_t{3}, size_t{100}, window - 1}) {
    EXPECT_TRUE(FollowThenRecover(log, log.size() - missed, window) == all) << "missed " << missed;
  }
  // A short log: the window holds all of it.
  std::vector<Entry> short_log(log.end() - 5, log.end());
  std::string short_all;
  for (const auto& e : short_log) short_all += e.payload;
  for (size_t followed = 0; followed <= short_log.size(); ++followed) {
    EXPECT_EQ(FollowThenRecover(short_log, followed, window), short_all) << followed;
  }
}

TEST(StampedFrames, AGapWiderThanTheWindowDoesNotAlign) {
  std::vector<std::pair<FrameKey, LogFrame>> window;
  std::deque<FrameKey> delivered;
  for (int i = 0; i < 10; ++i) {
    FrameKey k;
    k.stamp = "2026-11-29T16:00:00." + std::to_string(100000000 + i) + "Z";
    k.Add("x");
    if (i < 5) {
      delivered.push_back(k);
    } else {
      window.push_back({k, LogFrame{}});
    }
  }
  EXPECT_EQ(DeliveredOverlap(window, delivered), 0u);
  EXPECT_EQ(DeliveredOverlap({}, delivered), 0u);
}

TEST(StampedFrames, RefusesFramesWithoutTimestamps) {
  std::function<void(const LogFrame&)> ignore = [](const LogFrame&) {};
  StampedFrames frames(&ignore);
  EXPECT_EQ(frames.Piece(Stream::kStdout, std::string(100, 'x'), true).code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace gpunex::agent::internal
