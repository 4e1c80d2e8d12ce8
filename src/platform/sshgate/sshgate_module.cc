#include "platform/sshgate/sshgate_module.h"

#include <charconv>

#include "common/log.h"
#include "platform/access/access.h"
#include "platform/api/api.h"
#include "platform/http/metrics.h"
#include "platform/relay/relay.h"
#include "platform/sshgate/gateway.h"
#include "platform/sshgate/host_key_store.h"

namespace gpunex::platform::sshgate {

namespace {

// The gateway, where customers reach it, for the route and /metrics.
struct SshService {
  std::unique_ptr<SshGateway> gateway;
  SshEndpoint endpoint;
};

json::object EndpointJson(const SshEndpoint& e) {
  const std::string port = std::to_string(e.port);
  return {{"enabled", true},
          {"host", e.host},
          {"port", e.port},
          {"user", "{rental_id}"},
          {"host_key", e.host_key.public_key},
          {"host_key_fingerprint", e.host_key.fingerprint},
          {"known_hosts_line",
           (e.port == 22 ? e.host : "[" + e.host + "]:" + port) + " " + e.host_key.public_key},
          {"command", "ssh -p " + port + " {rental_id}@" + e.host}};
}

void RegisterRoutes(http::Router& r, const api::ApiContext& ctx) {
  // Public: a host key is public, and a client checks it before it signs in.
  r.Add("GET", "/api/v1/access/ssh", api::kPublic, [&ctx](http::Request&) {
    const SshService* s = ctx.services.Find<SshService>();
    if (!s) return http::Response::Json(200, json::object{{"enabled", false}});
    return http::Response::Json(200, EndpointJson(s->endpoint));
  });
}

void CollectMetrics(const Services& services, http::Metrics& m) {
  const SshService* s = services.Find<SshService>();
  if (!s) return;
  const SshGatewayFigures f = s->gateway->Figures();
  m.SetGauge("gpunex_ssh_connections", "SSH connections open on this instance.",
             static_cast<double>(f.connections));
  m.SetGauge("gpunex_ssh_signed_in", "SSH connections that signed in since start.",
             static_cast<double>(f.signed_in));
  m.SetGauge("gpunex_ssh_failed_sign_ins",
             "SSH connections that closed without signing in since start.",
             static_cast<double>(f.failed_sign_ins));
  m.SetGauge("gpunex_ssh_refused", "SSH connections refused at a cap since start.",
             static_cast<double>(f.refused));
}

}  // namespace

SshEndpoint EndpointOf(const std::string& public_address, const std::string& public_url,
                       uint16_t bound_port, HostKey host_key) {
  SshEndpoint e{.host = "", .port = bound_port, .host_key = std::move(host_key)};
  std::string host = public_address;
  if (host.empty()) {
    host = public_url.substr(
        public_url.find("://") == std::string::npos ? 0 : public_url.find("://") + 3);
    host = host.substr(0, host.find('/'));
    if (host.starts_with('[')) {
      host = host.substr(0, host.find(']') + 1);
    } else {
      host = host.substr(0, host.rfind(':'));
    }
  } else if (const size_t colon = host.rfind(':');
             colon != std::string::npos && host.find(':') == colon) {
    uint16_t port = 0;
    auto [end, ec] = std::from_chars(host.data() + colon + 1, host.data() + host.size(), port);
    if (ec == std::errc() && end == host.data() + host.size() && port > 0) e.port = port;
    host = host.substr(0, colon);
  }
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "localhost";
  e.host = host;
  return e;
}

Module SshGateModule() {
  return Module{
      .name = "sshgate",
      .migrations = HostKeyMigrations,
      .build = [](ModuleEnv& env) -> Status {
        const auto& ao = env.config.Section<access::AccessOptions>("access");
        if (ao.ssh_listen.empty()) return Status::Ok();
        GPUNEX_ASSIGN_OR_RETURN(HostKey key, LoadOrCreateHostKey(env.db, env.clock));
        SshGatewayOptions o{
            .listen = ao.ssh_listen,
            .idle_timeout = ao.ssh_idle_timeout,
            .max_connections_per_rental = static_cast<int>(ao.ssh_max_connections_per_rental),
            .max_failures_per_address = static_cast<int>(ao.ssh_max_failures_per_address)};
        auto service = std::make_unique<SshService>();
        GPUNEX_ASSIGN_OR_RETURN(
            service->gateway,
            SshGateway::Create(std::move(o), key, env.db, env.services.Get<relay::Relay>()));
        service->endpoint = EndpointOf(ao.ssh_public_address, env.config.public_url,
                                       service->gateway->port(), std::move(key));
        env.services.Own(std::move(service));
        return Status::Ok();
      },
      .start = [](Services& services) -> Status {
        if (SshService* s = services.Find<SshService>()) {
          s->gateway->Start();
          LogInfo("ssh.started", {{"port", s->gateway->port()},
                                  {"host_key_fingerprint", s->endpoint.host_key.fingerprint}});
        }
        return Status::Ok();
      },
      .routes = RegisterRoutes,
      .metrics = CollectMetrics,
  };
}

}  // namespace gpunex::platform::sshgate
