// The platform's end of the agents' data channels (issue 25; docs/access.md and
// docs/agent-protocol.md, "The data channel"): the relay that carries a customer's bytes
// to a port of their rental's container and back, through the agent, which only dials
// out.
//
// Each connected agent keeps one data channel here (Attach): a WebSocket of binary
// mux frames (common/mux.h), apart from its control channel, so that bulk bytes never
// delay heartbeats or commands. gpunexd opens the streams (Open), one per customer
// connection, naming the workload's port to reach (common/data_channel.h); the agent
// accepts only a port its workload declared.
//
// Pacing, so that memory stays bounded whatever the peers do: the mux gives each stream
// a credit window; the relay sends frames only while the agent's WebSocket queue is under
// kWebSocketWritableBytes (it waits for OnWritable otherwise); a stream's user writes what
// Write takes and waits for OnRoom for the rest, and reads what Read gives, which
// returns the agent's credit only as fast as the user passes the bytes on.
//
// Thread-safety: every method may be called from any thread. A sink is called one call
// at a time, in order, never while the relay holds a lock, and never from within a call
// of its user's: from the relay's own thread, or from the thread that handles what the
// agent sent (which saves a hand-off between threads per batch of frames). A sink may
// call its Stream (which never calls a sink back synchronously). A sink must not block.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/data_channel.h"
#include "common/mux.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "platform/http/proxy.h"
#include "platform/http/websocket.h"

namespace gpunex::platform::relay {

// How a stream ended.
struct StreamEnd {
  // Both sides finished and everything was read: a normal end.
  bool clean = false;
  // The agent refused the open (code, reason say why): nothing was reached.
  bool refused = false;
  mux::Code code = mux::Code::kCancelled;
  std::string reason;
};

// What a stream's user hears (see the top of this file for the threading).
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // The agent reached the port.
  virtual void OnAccepted() {}
  // Bytes arrived where none were waiting: Read them.
  virtual void OnReadable() = 0;
  // A Write that took less than offered has room now.
  virtual void OnRoom() = 0;
  // The far end sends nothing more: what Read still gives is the rest.
  virtual void OnFinished() = 0;
  // The stream is over; no call follows.
  virtual void OnEnded(const StreamEnd& end) = 0;
};

class DataChannel;

// A stream as its user holds it. Dropping it resets the stream when it is still open.
class Stream {
 public:
  Stream(std::shared_ptr<DataChannel> channel, uint32_t id)
      : channel_(std::move(channel)), id_(id) {}
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Takes as many of `data`'s bytes as the stream has room for (0 when none: OnRoom
  // follows); kFailedPrecondition once it is finished or over.
  StatusOr<size_t> Write(std::string_view data);
  // Writes what the stream takes of `*pending` now and erases it from the front (all of
  // it once the stream is over); the bytes taken.
  size_t WriteSome(std::string* pending);
  // Sends nothing more (the far end reads to its end, then sees end of file).
  Status Finish();
  // Up to `max` received bytes; empty when none wait.
  std::string Read(size_t max);
  // Ends it at once, both ways.
  void Reset(mux::Code code, std::string_view reason);

  uint32_t id() const { return id_; }

 private:
  const std::shared_ptr<DataChannel> channel_;
  const uint32_t id_;
};

// The WebSocket close code that tells a customer how their stream ended: 4000 + the HTTP
// status that says the same (4410 the rental ended, 4502 nothing answers, 4503 the agent is
// not reachable, ...; docs/access.md).
int CloseCodeFor(mux::Code code);

// Bytes a rental's port moved through the relay: in, from its customer to the port; out,
// from the port to the customer.
struct PortTraffic {
  std::string rental_id;
  uint16_t port = 0;
  int64_t in_bytes = 0;
  int64_t out_bytes = 0;
};

// Where another instance of the cluster holds a machine's data channel (docs/operations.md,
// "Streams across instances"). This instance opens the streams to that machine through
// that instance: over one WebSocket to it (peer.h, kPeerPath) whose opens name the machine.
struct PeerRoute {
  std::string instance_id;
  std::string url;            // http(s)://host:port of the instance, with kPeerPath
  std::string authorization;  // the Authorization header that instance checks
  std::string ca_file;        // https: the CA certificates to trust; "" the system's
};

struct RelayOptions {
  mux::Options mux;
  // Streams one workload may have open at once (on top of the mux's per-machine cap).
  int max_streams_per_workload = 256;
  // How often the channels send what waits on time (the mux's round-trip pings), and the
  // relay asks `unreachable` about the workloads that have streams open.
  std::chrono::milliseconds tick{500};
  // Of the workloads given, those that may no longer be reached (their rental ended):
  // their streams are reset with mux::Code::kGone at the next tick. Null: never asked.
  std::function<StatusOr<std::vector<std::string>>(const std::vector<std::string>&)> unreachable;
  // Called with the bytes streams moved since the last call, per rental and port, every
  // meter_interval (on the relay's thread, which waits for it), and once more by the
  // relay's destructor. Null: not metered. (Streams count their own bytes: nothing is
  // added per write or read beyond that.)
  std::function<void(const std::vector<PortTraffic>&)> meter;
  std::chrono::milliseconds meter_interval{5000};
  // The instance that holds `machine_id`'s data channel when this one does not; nullopt
  // when none does. Null: one instance, no routes (called outside the relay's locks).
  std::function<StatusOr<std::optional<PeerRoute>>(const std::string& machine_id)> route;
  // A machine's data channel attached here (true) or gone from here (false), for the
  // cluster's record of which instance holds which agent. Null: not recorded. Called
  // outside the relay's locks, on the thread of the channel's connection.
  std::function<void(const std::string& machine_id, bool held)> holding;
};

// Figures for /metrics.
struct RelayFigures {
  int64_t channels = 0;
  int64_t streams = 0;
  int64_t bytes_to_agents = 0;    // stream bytes sent (what customers wrote)
  int64_t bytes_from_agents = 0;  // stream bytes received (what the ports answered)
  int64_t peer_links = 0;         // connections to other instances (PeerRoute) open
  // Since start, per rental and port, for the rentals that have not ended: as of the
  // last meter_interval.
  std::vector<PortTraffic> ports;
};

class Relay {
 public:
  explicit Relay(RelayOptions options = {});
  // Closes every channel (1001) and stops the relay's thread.
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // The data channel of `machine_id` arrived on `ws` (its agent token checked): the
  // session to hand to the server. A newer channel of the same machine replaces the
  // older one, whose streams end.
  std::shared_ptr<http::WebSocketSession> Attach(const std::string& machine_id,
                                                 std::shared_ptr<http::WebSocketConnection> ws);

  // Opens a stream to `target` through `machine_id`'s agent; `sink` hears what happens
  // (kept weakly: the user keeps it alive). Through the instance that holds the machine's
  // data channel when this one does not (RelayOptions::route). kUnavailable when no
  // instance has it; kResourceExhausted at a cap (the machine's or the workload's).
  // `rental_id` names the rental whose traffic the stream is metered to.
  StatusOr<std::unique_ptr<Stream>> Open(const std::string& machine_id, const StreamTarget& target,
                                         std::weak_ptr<StreamSink> sink,
                                         const std::string& rental_id = "");
  // As Open, on a data channel held here only (what another instance asks for).
  StatusOr<std::unique_ptr<Stream>> OpenHere(const std::string& machine_id,
                                             const StreamTarget& target,
                                             std::weak_ptr<StreamSink> sink,
                                             const std::string& rental_id = "");

  // Another instance's connection (PeerRoute), its credentials checked: the session that
  // opens the streams it asks for on the data channels held here (peer.h).
  std::shared_ptr<http::WebSocketSession> AttachPeer(std::shared_ptr<http::WebSocketConnection> ws);

  // The machines whose data channels are here.
  std::vector<std::string> Machines() const;

  // Open, as an upstream of the HTTP server's proxy (http/proxy.h): how a stream ends
  // becomes the answer the client gets when none has begun (410: the rental ended; 502:
  // nothing answers there; 503: the agent is not reachable).
  StatusOr<std::unique_ptr<http::Upstream>> OpenUpstream(const std::string& machine_id,
                                                         const StreamTarget& target,
                                                         std::weak_ptr<http::UpstreamSink> sink,
                                                         const std::string& rental_id);

  // Whether `machine_id` has a data channel here.
  bool Connected(const std::string& machine_id) const;

  RelayFigures Figures() const;

  // The state the relay's thread and the channels share (relay.cc).
  struct Shared;

 private:
  void Run();
  // Resets the streams of the workloads that options_.unreachable names.
  void EndUnreachable(const std::vector<std::shared_ptr<DataChannel>>& channels);
  // Hands the traffic since the last call to options_.meter.
  void Meter();
  // The channel to the instance `route` names, connected when there is none.
  StatusOr<std::shared_ptr<DataChannel>> PeerChannel(const PeerRoute& route);

  const RelayOptions options_;
  const std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace gpunex::platform::relay
