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

// What a stream of the data channel reaches: a port of a workload's container. The agent
// opens it only when the workload runs on its machine and declared that port
// (StartWorkload::ports), and reaches it on that container's own loopback.
struct StreamTarget {
  std::string workload_id;  // protocol::IsWorkloadId
  uint16_t port = 0;        // 1 to 65535

  bool operator==(const StreamTarget&) const = default;
};

// {"kind":"port","workload_id":"...","port":8080}: an open frame's payload.
std::string EncodeStreamTarget(const StreamTarget& target);
// An open frame's payload as its target; kInvalidArgument naming what is wrong (an
// unknown kind included: a newer platform's kind is refused, not misread).
StatusOr<StreamTarget> ParseStreamTarget(std::string_view payload);

}  // namespace gpunex

#endif  // GPUNEX_COMMON_DATA_CHANNEL_H_
