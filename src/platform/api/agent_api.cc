// The agent channel (GET /api/v1/agent/connect, WebSocket) and the installer script
// (GET /agent/install.sh).
#include <algorithm>
#include <map>

#include "common/log.h"
#include "common/thread_annotations.h"
#include "platform/api/api.h"
#include "platform/fleet/agent_session.h"

namespace gpunex::platform::api {
namespace {

// Adapts the HTTP layer's WebSocket to the fleet's channel and back.
class ChannelAdapter final : public fleet::AgentChannel {
 public:
  explicit ChannelAdapter(std::shared_ptr<http::WebSocketConnection> c) : c_(std::move(c)) {}
  bool Send(std::string text) override { return c_->Send(std::move(text)); }
  void Close(int code, std::string reason) override { c_->Close(code, std::move(reason)); }

 private:
  std::shared_ptr<http::WebSocketConnection> c_;
};

class SessionAdapter final : public http::WebSocketSession {
 public:
  explicit SessionAdapter(std::shared_ptr<fleet::AgentSession> s) : s_(std::move(s)) {}
  void OnMessage(std::string text) override { s_->OnMessage(text); }
  void OnClose() override { s_->OnClose(); }

 private:
  std::shared_ptr<fleet::AgentSession> s_;
};

}  // namespace

extern const char kInstallScriptTemplate[];

std::string RenderInstallScript(std::string_view public_url, std::string_view agent_image) {
  std::string s = kInstallScriptTemplate;
  auto replace_all = [&s](std::string_view from, std::string_view to) {
    for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
      s.replace(pos, from.size(), to);
    }
  };
  replace_all("@GPUNEX_PUBLIC_URL@", public_url);
  replace_all("@GPUNEX_AGENT_IMAGE@", agent_image);
  return s;
}

StatusOr<providers::AgentIdentity> AuthenticateAgentRequest(const http::Request& req,
                                                            const ApiContext& ctx,
                                                            std::string_view what) {
  std::string auth = req.Header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!auth.starts_with(kBearer)) {
    return Unauthenticated(std::string(what) + " needs \"Authorization: Bearer <agent token>\"");
  }
  auto id = ctx.providers.AuthenticateAgent(std::string_view(auth).substr(kBearer.size()));
  if (!id.ok()) {
    LogWarn("agent.auth_failed",
            {{"remote", req.remote_addr}, {"path", req.path}, {"error", id.status().message()}});
  }
  return id;
}

namespace {

// Benchmark transfers in progress per agent token.
class BenchSlots final : public std::enable_shared_from_this<BenchSlots> {
 public:
  // A slot held until the returned value is dropped; kResourceExhausted when the token
  // already has kAgentBenchTransfersPerToken transfers going.
  StatusOr<std::shared_ptr<void>> Acquire(const std::string& token_id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    int& n = in_use_[token_id];
    if (n >= kAgentBenchTransfersPerToken) {
      return ResourceExhausted("at most " + std::to_string(kAgentBenchTransfersPerToken) +
                               " benchmark transfers at a time per agent token");
    }
    ++n;
    return std::shared_ptr<void>(std::make_shared<Slot>(shared_from_this(), token_id));
  }

 private:
  struct Slot {
    Slot(std::shared_ptr<BenchSlots> s, std::string id)
        : slots(std::move(s)), token_id(std::move(id)) {}
    ~Slot() { slots->Release(token_id); }
    std::shared_ptr<BenchSlots> slots;
    std::string token_id;
  };

  void Release(const std::string& token_id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto it = in_use_.find(token_id);
    if (it != in_use_.end() && --it->second <= 0) in_use_.erase(it);
  }

  Mutex mu_;
  std::map<std::string, int> in_use_ GUARDED_BY(mu_);
};

}  // namespace

http::StreamAuthorizer AgentBenchAuthorizer(const ApiContext& ctx) {
  auto slots = std::make_shared<BenchSlots>();
  return [&ctx, slots](const http::Request& req) -> StatusOr<http::StreamGrant> {
    GPUNEX_ASSIGN_OR_RETURN(providers::AgentIdentity id,
                            AuthenticateAgentRequest(req, ctx, "the benchmark endpoint"));
    http::StreamGrant grant;
    grant.bytes = static_cast<uint64_t>(kAgentBenchMaxBytes);
    if (req.path == kAgentBenchDownloadPath) {
      const std::string bytes = req.Query("bytes");
      const std::string limit =
          "must be a whole number of bytes from 1 to " + std::to_string(kAgentBenchMaxBytes);
      if (bytes.empty() || bytes.size() > 10 ||
          !std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return FieldError("bytes", limit);
      }
      const int64_t n = std::stoll(bytes);
      if (n < 1 || n > kAgentBenchMaxBytes) return FieldError("bytes", limit);
      grant.bytes = static_cast<uint64_t>(n);
    }
    GPUNEX_ASSIGN_OR_RETURN(grant.hold, slots->Acquire(id.token_id));
    return grant;
  };
}

http::WebSocketAcceptor AgentChannelAcceptor(const ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    auto id = AuthenticateAgentRequest(req, ctx, "the agent channel");
    if (!id.ok()) return id.status();
    GPUNEX_RETURN_IF_ERROR(ctx.providers.TouchAgentToken(id->token_id));
    auto session = ctx.fleet.Open(id->provider_id, id->token_id,
                                  std::make_shared<ChannelAdapter>(conn), req.remote_addr);
    return std::shared_ptr<http::WebSocketSession>(std::make_shared<SessionAdapter>(session));
  };
}

void RegisterAgentRoutes(http::Router& r, const ApiContext& ctx) {
  // With this platform's URL (fixed once it listens, before routes exist) filled in.
  r.Add("GET", "/agent/install.sh", kPublic,
        [script = RenderInstallScript(ctx.config.public_url, ctx.fleet.options().agent_image)](
            http::Request&) {
          http::Response resp =
              http::Response::Text(200, script, "text/x-shellscript; charset=utf-8");
          resp.SetHeader("Cache-Control", "no-cache");
          return resp;
        });
}

}  // namespace gpunex::platform::api
