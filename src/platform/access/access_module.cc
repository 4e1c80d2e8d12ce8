#include "platform/access/access_module.h"

#include "platform/access/access.h"

namespace gpunex::platform::access {

namespace {

// [access] and GPUNEX_ACCESS_LISTEN / GPUNEX_ACCESS_DOMAIN, as the options of Access.
StatusOr<std::any> Parse(ConfigTable& t, const EnvGetter& env) {
  AccessOptions o;
  GPUNEX_RETURN_IF_ERROR(t.Str("listen", &o.listen));
  if (auto v = env("GPUNEX_ACCESS_LISTEN")) o.listen = *v;
  GPUNEX_RETURN_IF_ERROR(t.Str("domain", &o.domain));
  if (auto v = env("GPUNEX_ACCESS_DOMAIN")) o.domain = *v;
  GPUNEX_RETURN_IF_ERROR(t.Str("public_url", &o.public_url));
  GPUNEX_RETURN_IF_ERROR(t.Str("tls_cert_file", &o.tls_cert_file));
  GPUNEX_RETURN_IF_ERROR(t.Str("tls_key_file", &o.tls_key_file));
  int64_t idle = o.idle_timeout.count();
  GPUNEX_RETURN_IF_ERROR(t.Int64("idle_timeout_s", &idle, 10, 7 * 24 * 3600));
  o.idle_timeout = std::chrono::seconds(idle);
  int64_t ttl = o.token_ttl.count();
  GPUNEX_RETURN_IF_ERROR(t.Int64("token_ttl_s", &ttl, 60, o.max_token_ttl.count()));
  o.token_ttl = std::chrono::seconds(ttl);
  GPUNEX_RETURN_IF_ERROR(t.Int64("max_tokens_per_rental", &o.max_tokens_per_rental, 1, 1000));
  GPUNEX_RETURN_IF_ERROR(t.Str("ssh_listen", &o.ssh_listen));
  if (auto v = env("GPUNEX_SSH_LISTEN")) o.ssh_listen = *v;
  GPUNEX_RETURN_IF_ERROR(t.Str("ssh_public_address", &o.ssh_public_address));
  int64_t ssh_idle = o.ssh_idle_timeout.count();
  GPUNEX_RETURN_IF_ERROR(t.Int64("ssh_idle_timeout_s", &ssh_idle, 10, 7 * 24 * 3600));
  o.ssh_idle_timeout = std::chrono::seconds(ssh_idle);
  GPUNEX_RETURN_IF_ERROR(
      t.Int64("ssh_max_connections_per_rental", &o.ssh_max_connections_per_rental, 1, 1000));
  GPUNEX_RETURN_IF_ERROR(
      t.Int64("ssh_max_failures_per_address", &o.ssh_max_failures_per_address, 1, 100000));
  if (!o.ssh_listen.empty() && o.ssh_listen.rfind(':') == std::string::npos) {
    return FieldError("access.ssh_listen", "must be host:port, such as \"0.0.0.0:2222\"");
  }
  if (o.ssh_public_address.find_first_of("/ @") != std::string::npos) {
    return FieldError("access.ssh_public_address",
                      "must be host or host:port, such as \"ssh.example.com:2222\"");
  }
  if (!o.listen.empty() && o.listen.rfind(':') == std::string::npos) {
    return FieldError("access.listen", "must be host:port, such as \"0.0.0.0:8081\"");
  }
  if (o.domain.empty() || o.domain.find_first_of(":/ ") != std::string::npos ||
      o.domain.front() == '.' || o.domain.back() == '.') {
    return FieldError("access.domain", "must be a domain name, such as \"rentals.example.com\"");
  }
  if (!o.public_url.empty() && !o.public_url.starts_with("http://") &&
      !o.public_url.starts_with("https://")) {
    return FieldError("access.public_url", "must start with http:// or https://");
  }
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return FieldError("access.tls_cert_file",
                      "set both tls_cert_file and tls_key_file, or neither");
  }
  return std::any(o);
}

}  // namespace

Module AccessModule() {
  return Module{
      .name = "access",
      .migrations = AccessMigrations,
      .config =
          ConfigSection{
              .name = "access",
              .parse = Parse,
              .example = R"([access]                         # rentals' HTTP ports (docs/access.md)
listen = ""                      # the access listener (GPUNEX_ACCESS_LISTEN); "" : none
domain = "localhost"             # ports answer at {rental}-{port}.{domain} (GPUNEX_ACCESS_DOMAIN)
public_url = ""                  # the listener's URL; "" : http://<listen address>
tls_cert_file = ""               # HTTPS: a certificate for *.{domain} and its key
tls_key_file = ""
idle_timeout_s = 3600            # a proxied exchange with no byte moving is cut after this
token_ttl_s = 86400              # how long an access token lasts unless asked otherwise
max_tokens_per_rental = 20       # live access tokens one rental may hold
ssh_listen = ""                  # the SSH gateway (GPUNEX_SSH_LISTEN), "0.0.0.0:2222"; "" : none
ssh_public_address = ""          # host[:port] customers ssh to; "" : public_url's host, bound port
ssh_idle_timeout_s = 3600        # an SSH connection with no byte and no keepalive is closed
ssh_max_connections_per_rental = 16
ssh_max_failures_per_address = 20  # failed sign-ins per address in 10 minutes, then refused
)"},
      .build = [](ModuleEnv& env) -> Status {
        AccessOptions o = env.config.Section<AccessOptions>("access");
        o.clock = &env.clock;
        env.services.Own(std::make_unique<Access>(env.db, std::move(o)));
        return Status::Ok();
      },
      .routes = RegisterRoutes,
  };
}

}  // namespace gpunex::platform::access
