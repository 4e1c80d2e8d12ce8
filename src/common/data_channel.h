#ifndef GPUNEX_COMMON_DATA_CHANNEL_H_
#define GPUNEX_COMMON_DATA_CHANNEL_H_

// The agent's data channel (issue 25; docs/agent-protocol.md, "The data channel"): the
// second WebSocket an agent keeps open, GET kDataChannelPath?machine_id=..., with the same
// agent token as the control channel. Its messages are binary mux frames (common/mux.h);
// gpunexd opens the streams, and each open names what it reaches: a StreamTarget.
//
// Thread-safety: values and pure functions.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex {

inline constexpr std::string_view kDataChannelPath = "/api/v1/agent/data";

// What a stream of the data channel reaches: a port of a workload's container, or its
// files. The agent opens a port only when the workload runs on its machine and declared
// it (StartWorkload::ports), and reaches it on that container's own loopback. Files are
// the Docker Engine's archive of a path in the running container: the stream carries an
// HTTP/1.1 exchange with the engine whose request line and header the agent writes itself
// (GET or PUT /containers/{its container}/archive?path=...); gpunexd sends only a PUT's
// body, framed as `length` or `chunked` say, and reads the engine's answer.
//
// An exec runs `command` in the workload's running container through the engine's exec
// API; the stream then carries exec frames (common/exec_stream.h) both ways: stdin and
// terminal sizes to the agent, stdout, stderr and the exit status back.
struct StreamTarget {
  enum class Kind { kPort, kFiles, kExec };
  std::string workload_id;  // protocol::IsWorkloadId
  uint16_t port = 0;        // kPort: 1 to 65535
  Kind kind = Kind::kPort;

  // kFiles: an absolute path in the container (at most kMaxFilesPath bytes), and whether
  // a tar goes in (PUT: unpacked into that directory) or out (GET: that path as a tar).
  std::string path = "";
  bool put = false;
  // A PUT's body: chunked, or exactly `length` bytes.
  bool chunked = false;
  uint64_t length = 0;

  // kExec: the argument list (ExecCommandProblem says what may be run), whether it gets a
  // terminal, and whether its stdin is open (else it reads end of file at once).
  std::vector<std::string> command = {};
  bool tty = false;
  bool open_stdin = true;

  bool operator==(const StreamTarget&) const = default;
};

inline constexpr size_t kMaxFilesPath = 4096;
inline constexpr size_t kMaxExecArgs = 256;
// An exec's arguments together, as JSON strings, so that its open frame fits the mux's
// limit (mux::kMaxTargetBytes).
inline constexpr size_t kMaxExecCommandBytes = 3072;

// Whether `command` may be an exec's: 1 to kMaxExecArgs arguments, the first not empty,
// each valid UTF-8 with no control characters but tab, newline and carriage return, at
// most kMaxExecCommandBytes in all (as JSON); "" when it may, else why not.
std::string ExecCommandProblem(const std::vector<std::string>& command);

// Whether `path` may name a path in a container: absolute, at most kMaxFilesPath bytes, no
// NUL or control characters, no "." or ".." segment; "" when it may, else why not.
std::string FilesPathProblem(std::string_view path);

// {"kind":"port","workload_id":"...","port":8080}, {"kind":"files","workload_id":"...",
// "op":"get"|"put","path":"/...","chunked":false,"length":N} or {"kind":"exec",
// "workload_id":"...","command":["sh","-c","..."],"tty":false,"stdin":true}: an open
// frame's payload.
std::string EncodeStreamTarget(const StreamTarget& target);
// An open frame's payload as its target; kInvalidArgument naming what is wrong (an
// unknown kind included: a newer platform's kind is refused, not misread).
StatusOr<StreamTarget> ParseStreamTarget(std::string_view payload);

}  // namespace gpunex

#endif  // GPUNEX_COMMON_DATA_CHANNEL_H_
