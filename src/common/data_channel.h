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
struct StreamTarget {
  enum class Kind { kPort, kFiles };
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

  bool operator==(const StreamTarget&) const = default;
};

inline constexpr size_t kMaxFilesPath = 4096;

// Whether `path` may name a path in a container: absolute, at most kMaxFilesPath bytes, no
// NUL or control characters, no "." or ".." segment; "" when it may, else why not.
std::string FilesPathProblem(std::string_view path);

// {"kind":"port","workload_id":"...","port":8080} or {"kind":"files","workload_id":"...",
// "op":"get"|"put","path":"/...","chunked":false,"length":N}: an open frame's payload.
std::string EncodeStreamTarget(const StreamTarget& target);
// An open frame's payload as its target; kInvalidArgument naming what is wrong (an
// unknown kind included: a newer platform's kind is refused, not misread).
StatusOr<StreamTarget> ParseStreamTarget(std::string_view payload);

}  // namespace gpunex

#endif  // GPUNEX_COMMON_DATA_CHANNEL_H_
