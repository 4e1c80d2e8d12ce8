// Parsers for the Docker engine's streaming responses, apart from the HTTP plumbing so
// that they can be tested byte by byte: JSON progress streams (pull, load) and the
// multiplexed log stream, with or without timestamps.
//
// Thread-safety: each object belongs to one stream, read by one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/runtime/docker_client.h"
#include "common/status.h"

namespace gpunex::agent::internal {

// The longest line of a JSON progress stream.
inline constexpr size_t kMaxStreamLineBytes = 1u << 20;

// Splits a stream into '\n'-terminated lines, bounded in length.
class LineSplitter {
 public:
  // Calls `on_line` for every complete, non-empty line in `data` (with what was buffered
  // before); stops at its first error. kResourceExhausted when a line grows past
  // kMaxStreamLineBytes.
  Status Feed(std::string_view data, const std::function<Status(std::string_view)>& on_line);
  // The unterminated rest.
  const std::string& pending() const { return pending_; }

 private:
  std::string pending_;
};

// Reads the engine's JSON progress stream (pull, load): forwards progress text to
// `progress` (when given) and remembers the first error line ({"error": ...} or
// {"errorDetail": {"message": ...}}). Lines that are not JSON objects are skipped.
class ProgressStream {
 public:
  explicit ProgressStream(std::function<void(const std::string&)> progress)
      : progress_(std::move(progress)) {}

  Status Feed(std::string_view data);
  // Call when the stream has ended: reads an unterminated last line.
  Status Finish();
  // The first error the stream reported.
  const std::optional<std::string>& error() const { return error_; }

 private:
  Status Line(std::string_view line);

  std::function<void(const std::string&)> progress_;
  LineSplitter lines_;
  std::optional<std::string> error_;
};

// Splits the engine's multiplexed stream: frames of an 8-byte header {stream, 0, 0, 0,
// big-endian uint32 size} and `size` bytes. Delivers payload bytes as they arrive, so a
// frame may come in several pieces; `first` marks the first piece of a frame. Empty
// frames are skipped. Stream 0 (stdin) counts as stdout and 3 (the engine's own errors)
// as stderr.
class FrameDemuxer {
 public:
  using Sink = std::function<Status(LogFrame::Stream, std::string_view piece, bool first)>;

  // Stops at the sink's first error; kInternal when a header names no stream (the
  // container has a TTY, so its output is not multiplexed).
  Status Feed(std::string_view data, const Sink& on_data);

 private:
  unsigned char header_[8] = {};
  size_t header_len_ = 0;
  uint32_t remaining_ = 0;
  bool first_ = false;
  LogFrame::Stream stream_ = LogFrame::Stream::kStdout;
};

// The identity of one log frame, to recognise it in a second read: the engine's
// timestamp, the stream, and the payload's size and FNV-1a hash.
struct FrameKey {
  std::string stamp;
  LogFrame::Stream stream = LogFrame::Stream::kStdout;
  size_t size = 0;
  uint64_t hash = 14695981039346656037ull;

  void Add(std::string_view data);
  bool operator==(const FrameKey&) const = default;
};

// Frames read with timestamps=1: strips the "<timestamp> " the engine puts before each
// frame's payload and either delivers the payload as it arrives (remembering the keys of
// the last kFollowOverlap frames) or collects whole frames.
class StampedFrames {
 public:
  // How many frames at the end of a follow stream can be recovered; see FollowLogs.
  static constexpr size_t kFollowOverlap = 256;

  // Delivers to `*on_frame`, which must outlive this; with nullptr, collects into frames().
  explicit StampedFrames(const std::function<void(const LogFrame&)>* on_frame)
      : on_frame_(on_frame) {}

  // A FrameDemuxer sink. kInternal when a frame does not start with a timestamp.
  Status Piece(LogFrame::Stream s, std::string_view piece, bool first);
  // Call when the stream has ended.
  void Finish() { EndFrame(); }

  // Delivering: the keys of the last frames delivered, oldest first.
  const std::deque<FrameKey>& recent() const { return recent_; }
  // Collecting: every frame, with its key.
  const std::vector<std::pair<FrameKey, LogFrame>>& frames() const { return collected_; }

 private:
  void EndFrame();

  const std::function<void(const LogFrame&)>* on_frame_;
  bool in_stamp_ = false;
  FrameKey current_;
  std::deque<FrameKey> recent_;
  std::vector<std::pair<FrameKey, LogFrame>> collected_;
};

// How many frames at the start of `window` (the log's last frames, from a second read)
// are the last frames of `delivered`: the largest n such that window[0, n) equals the
// last n of `delivered`; 0 when none.
size_t DeliveredOverlap(const std::vector<std::pair<FrameKey, LogFrame>>& window,
                        const std::deque<FrameKey>& delivered);

}  // namespace gpunex::agent::internal
