// The relay's WebSocket endpoints: the agents' data channel (GET /api/v1/agent/data) and
// a customer's byte stream to a port of their rental (GET
// /api/v1/rentals/{id}/ports/{port}/connect), docs/access.md.
#include <charconv>
#include <chrono>

#include "common/log.h"
#include "platform/api/api.h"
#include "platform/relay/relay_module.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::relay {
namespace {

// A customer's WebSocket bridged to a stream of the relay: binary messages both ways.
class PortBridge final : public http::WebSocketSession,
                         public StreamSink,
                         public std::enable_shared_from_this<PortBridge> {
 public:
  PortBridge(std::shared_ptr<http::WebSocketConnection> ws, std::string rental_id, int port)
      : ws_(std::move(ws)), rental_id_(std::move(rental_id)), port_(port) {}

  // The stream, once opened (its sink calls may have come first).
  void Start(std::unique_ptr<Stream> stream) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (ended_) return;  // dropping it is all there is to do
    stream_ = std::move(stream);
    FlushLocked();
    DrainLocked();
  }

  // --- the customer's side ---

  bool AcceptsBinary() const override { return true; }
  void OnBinary(std::string bytes) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    pending_ += bytes;
    FlushLocked();
  }
  void OnMessage(std::string) override { ws_->Close(1003, "send the bytes as binary messages"); }
  void OnWritable() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    DrainLocked();
  }
  void OnClose() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // The customer is gone: the stream ends both ways at once (dropping it resets it).
    stream_.reset();
    // The access log's other half (relay.port_opened): how much, how long, never what.
    LogInfo("relay.port_closed",
            {{"rental_id", rental_id_},
             {"port", port_},
             {"bytes_in", bytes_in_},
             {"bytes_out", bytes_out_},
             {"seconds",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count()}});
  }

  // --- the port's side (the relay's thread) ---

  void OnReadable() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    DrainLocked();
  }
  void OnRoom() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    FlushLocked();
  }
  void OnFinished() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    finished_ = true;
    DrainLocked();
  }
  void OnEnded(const StreamEnd& end) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ended_ = true;
    stream_.reset();
    if (end.clean) {
      ws_->Close(1000, "the port closed the connection");
      return;
    }
    LogInfo("relay.stream_ended", {{"rental_id", rental_id_},
                                   {"port", port_},
                                   {"code", mux::kCodeNames.Name(end.code)},
                                   {"reason", end.reason}});
    ws_->Close(CloseCode(end.code), end.reason);
  }

 private:
  // 4000 + the HTTP status that says the same.
  static int CloseCode(mux::Code code) {
    switch (code) {
      case mux::Code::kRefused:
        return 4403;
      case mux::Code::kUnreachable:
        return 4502;
      case mux::Code::kLimit:
        return 4429;
      case mux::Code::kGone:
        return 4410;
      case mux::Code::kShutdown:
        return 4503;
      case mux::Code::kCancelled:
        return 4499;
      case mux::Code::kInternal:
      case mux::Code::kProtocol:
        break;
    }
    return 4500;
  }

  // The customer's bytes into the stream; reading from the customer pauses while the
  // stream has no room.
  void FlushLocked() REQUIRES(mu_) {
    if (!stream_) {
      pending_.clear();
      return;
    }
    while (!pending_.empty()) {
      auto n = stream_->Write(pending_);
      if (!n.ok()) {
        pending_.clear();
        return;
      }
      if (*n == 0) break;
      bytes_in_ += static_cast<int64_t>(*n);
      pending_.erase(0, *n);
    }
    const bool full = !pending_.empty();
    if (full != paused_) {
      paused_ = full;
      ws_->PauseReading(full);
    }
  }

  // The port's bytes to the customer while their socket keeps up.
  void DrainLocked() REQUIRES(mu_) {
    if (!stream_) return;
    while (ws_->Writable()) {
      std::string bytes = stream_->Read(kChunk);
      if (bytes.empty()) {
        if (finished_) {
          stream_.reset();
          ws_->Close(1000, "the port closed the connection");
        }
        return;
      }
      bytes_out_ += static_cast<int64_t>(bytes.size());
      if (!ws_->SendBinary(std::move(bytes))) return;
    }
    ws_->NotifyWhenWritable();
  }

  static constexpr size_t kChunk = 64 * 1024;

  const std::shared_ptr<http::WebSocketConnection> ws_;
  const std::string rental_id_;
  const int port_;
  Mutex mu_;
  std::unique_ptr<Stream> stream_ GUARDED_BY(mu_);
  std::string pending_ GUARDED_BY(mu_);  // the customer's bytes the stream did not take yet
  bool paused_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
  int64_t bytes_in_ GUARDED_BY(mu_) = 0;   // the customer's, taken by the stream
  int64_t bytes_out_ GUARDED_BY(mu_) = 0;  // the port's, sent to the customer
  const std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
};

// The port of the path, declared by the rental.
StatusOr<protocol::WorkloadPort> DeclaredPort(const rentals::Rental& r, const std::string& text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 65535) {
    return FieldError("port", "must be a port number from 1 to 65535");
  }
  for (const auto& p : r.ports) {
    if (p.port == port) return p;
  }
  return NotFound("the rental declared no port " + text +
                  " (a rental reaches only the ports it declared)");
}

}  // namespace

http::WebSocketAcceptor DataChannelAcceptor(const api::ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    GPUNEX_ASSIGN_OR_RETURN(providers::AgentIdentity id,
                            api::AuthenticateAgentRequest(req, ctx, "the data channel"));
    const std::string machine_id = req.Query("machine_id");
    if (machine_id.empty()) {
      return FieldError("machine_id", "name the machine whose data channel this is");
    }
    // The agent's control channel comes first; a token opens only its own machine's.
    if (!ctx.fleet.ConnectedWithToken(machine_id, id.token_id)) {
      return FailedPrecondition(
          "the machine's control channel is not connected here with this agent token");
    }
    return ctx.services.Get<Relay>().Attach(machine_id, std::move(conn));
  };
}

http::WebSocketAcceptor PortConnectAcceptor(const api::ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, api::AuthenticateUpgrade(req, ctx, api::kUser));
    const std::string rental_id = req.Param("id");
    GPUNEX_ASSIGN_OR_RETURN(rentals::Rental r, ctx.rentals.Get(p, rental_id));
    // Only the customer reaches the container: not the provider, not an admin.
    if (r.customer_id != p.user.id) return NotFound("no such rental");
    GPUNEX_ASSIGN_OR_RETURN(protocol::WorkloadPort port, DeclaredPort(r, req.Param("port")));
    if (r.state == rentals::kEnded || r.state == rentals::RentalState::kEnding) {
      return FailedPrecondition("the rental has ended");
    }
    if (r.state != rentals::kRunning) {
      return FailedPrecondition("the rental is not running yet (it is " +
                                std::string(rentals::kRentalStateNames.Name(r.state)) + ")");
    }
    auto bridge = std::make_shared<PortBridge>(conn, r.id, port.port);
    GPUNEX_ASSIGN_OR_RETURN(
        std::unique_ptr<Stream> stream,
        ctx.services.Get<Relay>().Open(r.machine_id, StreamTarget{r.workload_id, port.port},
                                       std::weak_ptr<StreamSink>(bridge), r.id));
    bridge->Start(std::move(stream));
    LogInfo("relay.port_opened", {{"rental_id", r.id},
                                  {"port", port.port},
                                  {"user_id", p.user.id},
                                  {"remote", req.remote_addr}});
    return std::shared_ptr<http::WebSocketSession>(bridge);
  };
}

}  // namespace gpunex::platform::relay
