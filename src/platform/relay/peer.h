// Streams across the instances of a cluster (issue 28; docs/operations.md, "Streams across
// instances"). An agent keeps its data channel on one gpunexd; a customer's port, exec,
// files or SSH session may arrive at another. That one opens the stream through the
// instance holding the channel: over one WebSocket to it (kPeerPath), which speaks the data
// channel's mux protocol (common/mux.h) with this instance as the opener, as toward an
// agent, except that each open names the machine as well as the target (EncodePeerOpen).
// The holding instance opens each such stream on the machine's channel (Relay::OpenHere)
// and passes the bytes, their ends and their credit through.
//
// The opening instance meters the stream's traffic to its rental and resets it when the
// rental ends, as for its own agents; the holding instance neither meters nor routes it on.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/data_channel.h"
#include "common/status.h"
#include "platform/http/websocket.h"
#include "platform/relay/relay.h"

namespace gpunex::platform::relay {

// The holding instance's WebSocket route; the Authorization header names the calling
// instance and its secret (cluster_store.h).
inline constexpr std::string_view kPeerPath = "/api/v1/cluster/streams";

// A peer open's payload: the machine's id, a newline, then the target as the agent reads it
// (EncodeStreamTarget).
std::string EncodePeerOpen(std::string_view machine_id, const StreamTarget& target);
struct PeerOpen {
  std::string machine_id;
  StreamTarget target;
};
// kInvalidArgument saying what is wrong.
StatusOr<PeerOpen> ParsePeerOpen(std::string_view payload);

// The opening instance's end of a peer connection: the WebSocket dialled to `route`, as the
// connection a data channel runs on. Its thread delivers what arrives to the session given
// to Start; the link ends when the connection closes.
class PeerLink final : public http::WebSocketConnection,
                       public std::enable_shared_from_this<PeerLink> {
 public:
  // Dials `route` (within 5 s): kUnavailable when the instance cannot be reached,
  // kUnauthenticated when it refuses this one's credentials.
  static StatusOr<std::shared_ptr<PeerLink>> Connect(const PeerRoute& route);
  ~PeerLink() override;

  // Starts the thread that calls `session`. Once only.
  void Start(std::shared_ptr<http::WebSocketSession> session);
  // Waits up to `timeout` for the thread to end (after Close); whether it has.
  bool WaitEnded(std::chrono::milliseconds timeout);

  bool Send(std::string text) override;
  bool SendBinary(std::string bytes) override;
  size_t QueuedBytes() const override;
  bool Writable() const override;
  void NotifyWhenWritable() override;
  void PauseReading(bool) override {}
  void Close(int code, std::string reason) override;
  std::string RemoteAddr() const override;
  void SetSubprotocol(std::string) override {}
  std::string Subprotocol() const override { return ""; }

  struct State;

 private:
  explicit PeerLink(std::shared_ptr<State> state) : state_(std::move(state)) {}
  const std::shared_ptr<State> state_;
};

// Sends the messages `session` gives while `ws` takes them, and asks `ws` for OnWritable
// when some are left: the pump of the data channel's and the peer connection's sessions.
void SendWhatMayGo(mux::Session& session, http::WebSocketConnection& ws);

// The holding instance's end of a peer connection (Relay::AttachPeer).
std::shared_ptr<http::WebSocketSession> ServePeer(Relay& relay,
                                                  std::shared_ptr<http::WebSocketConnection> ws,
                                                  const mux::Options& options);

}  // namespace gpunex::platform::relay
