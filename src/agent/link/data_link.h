// DataLink: the agent's end of its data channel (issue 25; docs/agent-protocol.md, "The
// data channel"): a second WebSocket to the platform, GET /api/v1/agent/data, carrying
// mux frames (common/mux.h), apart from the control channel. The platform opens streams
// on it, each naming a declared port of a workload here (common/data_channel.h); the link
// asks its dialer for a socket to that port (WorkloadRunner::DialPort: inside the
// container's own network namespace) and then copies bytes both ways until either side
// ends. A stream the dialer refuses is refused with the reason.
//
// Bounded everywhere: the platform's bytes for a stream stay in the mux session (within
// the stream's window) until its socket takes them, written from there without a copy of
// the link's own; a socket is read only when the mux took what was read before; frames go
// to the WebSocket only while less than max_queued waits there.
//
// Threading: Serve() runs the link on the calling thread, a poll loop over the streams'
// sockets and an eventfd that the WebSocket client signals (WebSocketClient::NotifyOn);
// dials run on threads of their own (a connect may take seconds). Stop() may be called
// from any thread.
#ifndef GPUNEX_AGENT_LINK_DATA_LINK_H_
#define GPUNEX_AGENT_LINK_DATA_LINK_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/data_channel.h"
#include "common/mux.h"
#include "common/net/websocket_client.h"
#include "common/status.h"

namespace gpunex::agent {

// A connected, non-blocking socket to the target, or why not: kPermissionDenied (refused:
// not a declared port), kNotFound (no such workload here), kUnavailable (nothing answered).
using StreamDialer = std::function<StatusOr<int>(const StreamTarget& target)>;

struct DataLinkOptions {
  mux::Options mux;
  // Bytes and frames the link lets wait in the WebSocket's send queue (which refuses more
  // than 4 MiB or 1024 messages).
  size_t max_queued = 1 << 20;
  size_t max_queued_messages = 256;
};

class DataLink {
 public:
  DataLink(StreamDialer dialer, DataLinkOptions options = {});
  ~DataLink();
  DataLink(const DataLink&) = delete;
  DataLink& operator=(const DataLink&) = delete;

  // Serves the data channel on `client` (connected with WebSocketClientOptions::binary)
  // until the connection ends (the error says why), the platform breaks the protocol, or
  // Stop(). Every stream's socket is closed when it returns.
  Status Serve(net::WebSocketClient& client);
  // Makes Serve() return soon.
  void Stop();

  // Streams open now (for tests and logs).
  int open_streams() const { return open_streams_.load(); }

 private:
  class Loop;
  const StreamDialer dialer_;
  const DataLinkOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_streams_{0};
  int wake_fd_ = -1;  // an eventfd: Stop(), the client and finished dials wake the loop
};

}  // namespace gpunex::agent

#endif  // GPUNEX_AGENT_LINK_DATA_LINK_H_
