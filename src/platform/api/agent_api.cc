// The agent channel (GET /api/v1/agent/connect, WebSocket) and the installer script
// (GET /agent/install.sh).
#include "platform/api/api.h"

#include "common/log.h"

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

http::WebSocketAcceptor AgentChannelAcceptor(const ApiContext& ctx) {
  return [&ctx](const http::Request& req, std::shared_ptr<http::WebSocketConnection> conn)
             -> StatusOr<std::shared_ptr<http::WebSocketSession>> {
    std::string auth = req.Header("authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (!auth.starts_with(kBearer)) return Unauthenticated("the agent channel needs \"Authorization: Bearer <agent token>\"");
    auto id = ctx.providers.AuthenticateAgent(std::string_view(auth).substr(kBearer.size()));
    if (!id.ok()) {
      LogWarn("agent.auth_failed", {{"remote", req.remote_addr}, {"error", id.status().message()}});
      return id.status();
    }
    Status touch = ctx.db.Transact([&](store::Tx& tx) {
      return tx.Exec("UPDATE agent_tokens SET last_used_at = ? WHERE id = ?", {NowMicros(), id->token_id})
          .status();
    });
    if (!touch.ok()) return touch;
    auto session = ctx.fleet.Open(id->provider_id, id->token_id, std::make_shared<ChannelAdapter>(conn), req.remote_addr);
    return std::shared_ptr<http::WebSocketSession>(std::make_shared<SessionAdapter>(session));
  };
}

void RegisterAgentRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/agent/install.sh", [&ctx](http::Request&) {
    http::Response resp = http::Response::Text(200, ctx.install_script, "text/x-shellscript; charset=utf-8");
    resp.SetHeader("Cache-Control", "no-cache");
    return resp;
  });
}

}  // namespace gpunex::platform::api
