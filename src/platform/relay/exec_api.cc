// GET /api/v1/rentals/{id}/exec: a command run in the customer's running rental's
// container, over a WebSocket that speaks Kubernetes' v5.channel.k8s.io protocol
// (docs/access.md, "Exec"), so that its clients and libraries work as they are. The agent
// runs it through the Docker Engine's exec API (agent/runtime/exec_sessions.h); the
// stream between carries exec frames (common/exec_stream.h), which this bridge turns into
// the protocol's messages and back: a channel byte, then the bytes.
#include <chrono>
#include <optional>

#include "common/exec_stream.h"
#include "common/log.h"
#include "platform/api/api.h"
#include "platform/relay/relay_module.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::relay {
namespace {

// The Kubernetes status an exec ends with (channel 3), from the agent's
// {"exit_code":N} or {"error":"..."}; the exit code, when there is one.
std::string KubernetesStatus(std::string_view agent_status, std::optional<int64_t>* exit_code) {
  auto parsed = ParseJson(agent_status);
  const json::object* o = parsed.ok() && parsed->is_object() ? &parsed->get_object() : nullptr;
  const json::value* code = o ? o->if_contains("exit_code") : nullptr;
  if (code && code->is_int64()) {
    *exit_code = code->get_int64();
    if (**exit_code == 0) {
      return ToJsonText(json::object{{"metadata", json::object{}}, {"status", "Success"}});
    }
    const std::string n = std::to_string(**exit_code);
    return ToJsonText(json::object{
        {"metadata", json::object{}},
        {"status", "Failure"},
        {"message", "command terminated with non-zero exit code: " + n},
        {"reason", "NonZeroExitCode"},
        {"details", json::object{{"causes", json::array{json::object{{"reason", "ExitCode"},
                                                                     {"message", n}}}}}}});
  }
  const json::value* error = o ? o->if_contains("error") : nullptr;
  return ToJsonText(json::object{
      {"metadata", json::object{}},
      {"status", "Failure"},
      {"message", error && error->is_string() ? std::string(error->get_string())
                                              : std::string("the command's end is unknown")},
      {"reason", "InternalError"}});
}

// A customer's exec WebSocket bridged to an exec stream of the relay.
class ExecBridge final : public http::WebSocketSession,
                         public StreamSink,
                         public std::enable_shared_from_this<ExecBridge> {
 public:
  ExecBridge(std::shared_ptr<http::WebSocketConnection> ws, std::string rental_id)
      : ws_(std::move(ws)), rental_id_(std::move(rental_id)) {}

  void Start(std::unique_ptr<Stream> stream) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (ended_) return;
    stream_ = std::move(stream);
    FlushLocked();
    DrainLocked();
  }

  // --- the customer's side: a channel byte, then the bytes ---

  bool AcceptsBinary() const override { return true; }
  void OnBinary(std::string message) override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (message.empty()) return CloseLocked(1007, "a message starts with its channel byte");
    const auto channel = static_cast<ExecChannel>(static_cast<uint8_t>(message[0]));
    const std::string_view payload = std::string_view(message).substr(1);
    switch (channel) {
      case ExecChannel::kStdin:
        break;
      case ExecChannel::kResize:
        if (auto size = ParseTerminalSize(payload); !size.ok()) {
          return CloseLocked(1007, size.status().message());
        }
        break;
      case ExecChannel::kClose:
        if (payload.size() != 1) return CloseLocked(1007, "a close names one channel");
        if (payload[0] != 0) return;  // only stdin can be closed from this side
        break;
      default:
        return CloseLocked(1007,
                           "the client sends on channels 0 (stdin), 4 (resize) and "
                           "255 (close) only");
    }
    bytes_in_ += static_cast<int64_t>(payload.size());
    pending_ += EncodeExecFrame(channel, payload);
    FlushLocked();
  }
  void OnMessage(std::string) override {
    ws_->Close(1003, "v5.channel.k8s.io sends binary messages");
  }
  void OnWritable() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    DrainLocked();
  }
  void OnClose() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    stream_.reset();  // the command reads end of file; its output is dropped
    LogInfo("relay.exec_closed",
            {{"rental_id", rental_id_},
             {"bytes_in", bytes_in_},
             {"bytes_out", bytes_out_},
             {"exit_code", exit_code_ ? json::value(*exit_code_) : json::value(nullptr)},
             {"seconds",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count()}});
  }

  // --- the agent's side (the relay's sink calls) ---

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
    if (status_sent_) return;
    LogInfo("relay.stream_ended", {{"rental_id", rental_id_},
                                   {"what", "exec"},
                                   {"code", mux::kCodeNames.Name(end.code)},
                                   {"reason", end.reason}});
    ws_->Close(end.clean ? 1011 : CloseCodeFor(end.code),
               end.clean ? "the command's stream ended without its status" : end.reason);
  }

 private:
  void CloseLocked(int code, const std::string& why) REQUIRES(mu_) {
    stream_.reset();
    ws_->Close(code, why);
  }

  // The customer's frames into the stream; reading from the customer pauses while the
  // stream has no room.
  void FlushLocked() REQUIRES(mu_) {
    if (!stream_) return;
    stream_->WriteSome(&pending_);
    const bool full = !pending_.empty();
    if (full != paused_) {
      paused_ = full;
      ws_->PauseReading(full);
    }
  }

  // The agent's frames to the customer while their socket keeps up.
  void DrainLocked() REQUIRES(mu_) {
    while (stream_ && !status_sent_) {
      auto frame = frames_.Next();
      if (!frame.ok()) return CloseLocked(1011, "the agent's exec stream is broken");
      if (frame->has_value()) {
        Send(**frame);
        continue;
      }
      if (!ws_->Writable()) {
        ws_->NotifyWhenWritable();
        return;
      }
      std::string bytes = stream_->Read(kChunk);
      if (bytes.empty()) {
        if (finished_) CloseLocked(1011, "the command's stream ended without its status");
        return;
      }
      frames_.Feed(bytes);
    }
  }

  void Send(const ExecFrame& f) REQUIRES(mu_) {
    std::string message(1, static_cast<char>(f.channel));
    if (f.channel == ExecChannel::kStatus) {
      message += KubernetesStatus(f.payload, &exit_code_);
      ws_->SendBinary(std::move(message));
      status_sent_ = true;
      stream_.reset();
      ws_->Close(1000, "");
      return;
    }
    if (f.channel != ExecChannel::kStdout && f.channel != ExecChannel::kStderr) return;
    bytes_out_ += static_cast<int64_t>(f.payload.size());
    message += f.payload;
    ws_->SendBinary(std::move(message));
  }

  static constexpr size_t kChunk = 64 * 1024;

  const std::shared_ptr<http::WebSocketConnection> ws_;
  const std::string rental_id_;
  Mutex mu_;
  std::unique_ptr<Stream> stream_ GUARDED_BY(mu_);
  std::string pending_ GUARDED_BY(mu_);  // frames for the agent the stream did not take yet
  ExecFrameReader frames_ GUARDED_BY(mu_);
  bool paused_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
  bool status_sent_ GUARDED_BY(mu_) = false;
  std::optional<int64_t> exit_code_ GUARDED_BY(mu_);
  int64_t bytes_in_ GUARDED_BY(mu_) = 0;   // stdin bytes from the customer
  int64_t bytes_out_ GUARDED_BY(mu_) = 0;  // stdout and stderr bytes to the customer
  const std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
};

// "true"/"1" or "false"/"0"; `fallback` when absent.
StatusOr<bool> BoolParam(const http::Request& req, const char* name, bool fallback) {
  const std::string v = req.Query(name);
  if (v.empty() && !req.query.contains(name)) return fallback;
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return FieldError(name, "must be true or false");
}

}  // namespace

http::WebSocketAcceptor ExecAcceptor(const api::ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, api::AuthenticateUpgrade(req, ctx, api::kUser));
    GPUNEX_ASSIGN_OR_RETURN(rentals::Rental r, ctx.rentals.Get(p, req.Param("id")));
    // Only the customer runs commands in the container: not the provider, not an admin.
    if (r.customer_id != p.user.id) return NotFound("no such rental");
    GPUNEX_RETURN_IF_ERROR(rentals::RequireRunning(r));
    StreamTarget target{.workload_id = r.workload_id, .kind = StreamTarget::Kind::kExec};
    target.command = req.QueryValues("command");
    if (std::string why = ExecCommandProblem(target.command); !why.empty()) {
      return FieldError("command", why);
    }
    GPUNEX_ASSIGN_OR_RETURN(target.tty, BoolParam(req, "tty", false));
    GPUNEX_ASSIGN_OR_RETURN(target.open_stdin, BoolParam(req, "stdin", true));
    bool offered = false;
    const std::string protocols = req.Header("sec-websocket-protocol");
    for (size_t at = 0; at <= protocols.size();) {
      size_t comma = protocols.find(',', at);
      if (comma == std::string::npos) comma = protocols.size();
      std::string_view one = std::string_view(protocols).substr(at, comma - at);
      while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
      while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
      offered = offered || one == kExecSubprotocol;
      at = comma + 1;
    }
    if (!offered) {
      return FieldError("Sec-WebSocket-Protocol",
                        "offer the subprotocol " + std::string(kExecSubprotocol));
    }
    conn->SetSubprotocol(std::string(kExecSubprotocol));
    auto bridge = std::make_shared<ExecBridge>(conn, r.id);
    GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream,
                            ctx.services.Get<Relay>().Open(
                                r.machine_id, target, std::weak_ptr<StreamSink>(bridge), r.id));
    bridge->Start(std::move(stream));
    // The access log: who ran what program, never its arguments (they may hold secrets).
    LogInfo("relay.exec_opened", {{"rental_id", r.id},
                                  {"user_id", p.user.id},
                                  {"program", target.command.front()},
                                  {"arguments", target.command.size() - 1},
                                  {"tty", target.tty},
                                  {"remote", req.remote_addr}});
    return std::shared_ptr<http::WebSocketSession>(bridge);
  };
}

}  // namespace gpunex::platform::relay
