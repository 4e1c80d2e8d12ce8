// The relay's WebSocket endpoints: the agents' data channel (GET /api/v1/agent/data) and
// a customer's byte stream to a port of their rental (GET
// /api/v1/rentals/{id}/ports/{port}/connect), docs/access.md.
#include <cctype>
#include <charconv>
#include <chrono>

#include "common/ascii.h"
#include "common/log.h"
#include "platform/api/api.h"
#include "platform/relay/cluster_store.h"
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
    ws_->Close(CloseCodeFor(end.code), end.reason);
  }

 private:
  // The customer's bytes into the stream; reading from the customer pauses while the
  // stream has no room.
  void FlushLocked() REQUIRES(mu_) {
    if (!stream_) {
      pending_.clear();
      return;
    }
    bytes_in_ += static_cast<int64_t>(stream_->WriteSome(&pending_));
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

// "out.tar" for "/scratch/out/", "root.tar" for "/".
std::string TarName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::string base = path.substr(path.rfind('/') + 1);
  std::string out;
  for (char c : base) {
    out +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  }
  return (out.empty() ? "root" : out) + ".tar";
}

}  // namespace

http::ProxyAuthorizer FilesAuthorizer(const api::ApiContext& ctx) {
  return [&ctx](const http::ProxyRequest& preq) -> StatusOr<http::ProxyGrant> {
    const http::Request& req = preq.request;
    http::ProxyGrant grant;
    if (req.method != "GET" && req.method != "PUT") {
      http::Response r = http::ProtocolErrorResponse(
          405, "method_not_allowed", "files are read with GET and written with PUT");
      r.SetHeader("Allow", "GET, PUT");
      grant.response = std::move(r);
      return grant;
    }
    GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, api::AuthenticateRequest(req, ctx, api::kUser));
    GPUNEX_ASSIGN_OR_RETURN(rentals::Rental r, ctx.rentals.Get(p, req.Param("id")));
    // Only the customer reaches the container: not the provider, not an admin.
    if (r.customer_id != p.user.id) return NotFound("no such rental");
    const bool put = req.method == "PUT";
    const std::string path = req.Query("path");
    if (path.empty()) {
      return FieldError("path", "name an absolute path in the container, such as /scratch/out");
    }
    if (std::string why = FilesPathProblem(path); !why.empty()) return FieldError("path", why);
    const bool chunked = !req.Header("transfer-encoding").empty();
    const std::string length_text = req.Header("content-length");
    uint64_t length = 0;
    if (!length_text.empty()) {
      auto [end, ec] =
          std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
      if (ec != std::errc()) return InvalidArgument("a bad Content-Length");
    }
    if (!put && (chunked || length > 0)) return InvalidArgument("a download has no body");
    if (put && !chunked && length == 0) {
      return FieldError("body", "send the files as a tar (Content-Type: application/x-tar)");
    }
    GPUNEX_RETURN_IF_ERROR(rentals::RequireRunning(r));
    StreamTarget target{.workload_id = r.workload_id,
                        .kind = StreamTarget::Kind::kFiles,
                        .path = path,
                        .put = put,
                        .chunked = chunked,
                        .length = chunked ? 0 : length};
    // The agent writes the engine's request itself: only a PUT's body goes up.
    grant.send_head = false;
    grant.open = [&ctx, machine = r.machine_id, target,
                  rental = r.id](std::weak_ptr<http::UpstreamSink> sink) {
      return ctx.services.Get<Relay>().OpenUpstream(machine, target, std::move(sink), rental);
    };
    // The engine's own fields (its version, its OS) are not the customer's business; a
    // download is a file to save.
    grant.rewrite_response = [put, name = TarName(path)](int status, http::HeaderFields& fields) {
      std::erase_if(fields, [](const auto& f) {
        const std::string n = AsciiLower(f.first);
        return n == "server" || n == "api-version" || n == "docker-experimental" || n == "ostype";
      });
      fields.emplace_back("Cache-Control", "no-store");
      fields.emplace_back("X-Content-Type-Options", "nosniff");
      if (!put && status == 200) {
        fields.emplace_back("Content-Disposition", "attachment; filename=\"" + name + "\"");
      }
    };
    grant.done = [rental_id = r.id, user = p.user.id, method = req.method, path,
                  remote = req.remote_addr](const http::ProxyExchange& x) {
      LogInfo("relay.files", {{"rental_id", rental_id},
                              {"user_id", user},
                              {"method", method},
                              {"path", path},
                              {"status", x.status},
                              {"bytes_in", x.bytes_in},
                              {"bytes_out", x.bytes_out},
                              {"seconds", x.seconds},
                              {"complete", x.complete},
                              {"remote", remote}});
    };
    return grant;
  };
}

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
    GPUNEX_RETURN_IF_ERROR(rentals::RequireRunning(r));
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

http::WebSocketAcceptor PeerAcceptor(const api::ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    // Only a live instance of the cluster, by the secret it registered (cluster_store.h).
    Cluster* cluster = ctx.services.Find<Cluster>();
    if (cluster == nullptr || !cluster->Verify(req.Header("authorization"))) {
      return Unauthenticated("only the instances of this cluster connect here");
    }
    return ctx.services.Get<Relay>().AttachPeer(std::move(conn));
  };
}

}  // namespace gpunex::platform::relay
