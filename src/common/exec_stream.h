#ifndef GPUNEX_COMMON_EXEC_STREAM_H_
#define GPUNEX_COMMON_EXEC_STREAM_H_

// What an exec stream of the data channel carries (StreamTarget::Kind::kExec;
// docs/agent-protocol.md, "Exec streams"): frames of a channel byte, a 4-byte big-endian
// length and that many bytes, both ways. The channels are Kubernetes' (its
// v5.channel.k8s.io exec protocol), so gpunexd passes a customer's WebSocket messages on
// as they are, with a length in front:
//   0 stdin (to the agent): bytes for the command's stdin;
//   1 stdout, 2 stderr (from the agent): what the command wrote (a terminal's output is
//     all stdout);
//   3 status (from the agent, last): {"exit_code":N} once the command has ended, or
//     {"error":"..."} when it could not run;
//   4 resize (to the agent): {"Width":columns,"Height":rows} for the terminal;
//   255 close (to the agent): one byte, the channel that is done: 0 closes stdin.
//
// Thread-safety: values and pure functions; an ExecFrameReader belongs to one reader.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex {

enum class ExecChannel : uint8_t {
  kStdin = 0,
  kStdout = 1,
  kStderr = 2,
  kStatus = 3,
  kResize = 4,
  kClose = 255,
};

inline constexpr size_t kExecFrameHeaderBytes = 5;
// A frame's payload at most (a status, a resize or a piece of a stream).
inline constexpr size_t kMaxExecFrameBytes = 1 << 20;

struct ExecFrame {
  ExecChannel channel = ExecChannel::kStdout;
  std::string payload;
  bool operator==(const ExecFrame&) const = default;
};

// The frame's bytes. REQUIRES: payload.size() <= kMaxExecFrameBytes.
std::string EncodeExecFrame(ExecChannel channel, std::string_view payload);

// Whether `b` is a channel byte of the protocol.
bool IsExecChannel(uint8_t b);

// Cuts a byte stream into frames.
class ExecFrameReader {
 public:
  // Takes more of the stream.
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame, nullopt until one has arrived; kInvalidArgument for an unknown
  // channel or a length over kMaxExecFrameBytes (the stream is broken: end it).
  StatusOr<std::optional<ExecFrame>> Next();
  // Bytes fed and not yet taken as frames.
  size_t buffered() const { return buffer_.size() - at_; }

 private:
  std::string buffer_;
  size_t at_ = 0;  // of buffer_, where the next frame starts
};

// A terminal size of a resize frame: {"Width":columns,"Height":rows}, each 1 to 10000;
// kInvalidArgument saying what is wrong.
struct TerminalSize {
  uint16_t columns = 0;
  uint16_t rows = 0;
};
StatusOr<TerminalSize> ParseTerminalSize(std::string_view payload);

}  // namespace gpunex

#endif  // GPUNEX_COMMON_EXEC_STREAM_H_
