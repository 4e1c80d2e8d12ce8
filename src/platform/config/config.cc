#include "platform/config/config.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <set>

#include "common/log.h"

namespace gpunex::platform {

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

namespace {

Status Bad(const std::string& key, const std::string& why) { return FieldError(key, why); }

const toml::node* Node(const void* table, std::string_view key) {
  return table ? static_cast<const toml::table*>(table)->get(key) : nullptr;
}

}  // namespace

std::string ConfigTable::Name(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

Status ConfigTable::Str(std::string_view key, std::string* out) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (!n) return Status::Ok();
  if (!n->is_string()) return Bad(Name(key), "must be a string");
  *out = n->as_string()->get();
  return Status::Ok();
}

Status ConfigTable::Int64(std::string_view key, int64_t* out, int64_t min, int64_t max) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (!n) return Status::Ok();
  if (!n->is_integer()) return Bad(Name(key), "must be an integer");
  const int64_t v = n->as_integer()->get();
  if (v < min || v > max) {
    return Bad(Name(key), "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  *out = v;
  return Status::Ok();
}

Status ConfigTable::Bool(std::string_view key, bool* out) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (!n) return Status::Ok();
  if (!n->is_boolean()) return Bad(Name(key), "must be true or false");
  *out = n->as_boolean()->get();
  return Status::Ok();
}

Status ConfigTable::Number(std::string_view key, double* out) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (!n) return Status::Ok();
  std::optional<double> d = n->value<double>();
  if (!d) return Bad(Name(key), "must be a number");
  *out = *d;
  return Status::Ok();
}

StatusOr<ConfigTable> ConfigTable::Table(std::string_view key) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (n && !n->is_table()) return Bad(Name(key), "must be a table");
  return ConfigTable(n ? n->as_table() : nullptr, Name(key));
}

std::vector<std::string> ConfigTable::Keys() const {
  std::vector<std::string> out;
  if (!table_) return out;
  for (const auto& [k, v] : *static_cast<const toml::table*>(table_)) out.emplace_back(k.str());
  return out;
}

Status ConfigTable::StrList(std::string_view key, std::vector<std::string>* out) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  if (!n) return Status::Ok();
  if (!n->is_array()) return Bad(Name(key), "must be an array of strings");
  out->clear();
  for (const auto& e : *n->as_array()) {
    if (!e.is_string()) return Bad(Name(key), "must be an array of strings");
    out->push_back(e.as_string()->get());
  }
  return Status::Ok();
}

const void* ConfigTable::Sub(std::string_view key) {
  seen_.emplace(key);
  const toml::node* n = Node(table_, key);
  return n ? n->as_table() : nullptr;
}

Status ConfigTable::RejectUnknown() const {
  if (!table_) return Status::Ok();
  for (const auto& [k, v] : *static_cast<const toml::table*>(table_)) {
    if (!seen_.contains(k.str())) return Bad(Name(k.str()), "is not a known setting");
  }
  return Status::Ok();
}

namespace {

const toml::table* SubTable(ConfigTable& r, std::string_view key) {
  return static_cast<const toml::table*>(r.Sub(key));
}

Status ApplyToml(const toml::table& root, const EnvGetter& env,
                 const std::vector<ConfigSection>& sections, Config* c) {
  ConfigTable r(&root, "");
  GPUNEX_RETURN_IF_ERROR(r.Str("listen", &c->listen));
  GPUNEX_RETURN_IF_ERROR(r.Str("data_dir", &c->data_dir));
  GPUNEX_RETURN_IF_ERROR(r.Str("database_url", &c->database_url));
  GPUNEX_RETURN_IF_ERROR(r.Str("public_url", &c->public_url));
  GPUNEX_RETURN_IF_ERROR(r.Bool("allow_emulated_gpus", &c->allow_emulated_gpus));
  GPUNEX_RETURN_IF_ERROR(r.Str("log_level", &c->log_level));
  if (auto* t = SubTable(r, "tls")) {
    ConfigTable s(t, "tls");
    GPUNEX_RETURN_IF_ERROR(s.Str("cert_file", &c->tls_cert_file));
    GPUNEX_RETURN_IF_ERROR(s.Str("key_file", &c->tls_key_file));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "http")) {
    ConfigTable s(t, "http");
    GPUNEX_RETURN_IF_ERROR(s.Int("max_body_bytes", &c->max_body_bytes, 1024, 64ll << 20));
    GPUNEX_RETURN_IF_ERROR(s.Int("io_threads", &c->io_threads, 1, 64));
    GPUNEX_RETURN_IF_ERROR(s.Int("worker_threads", &c->worker_threads, 1, 256));
    GPUNEX_RETURN_IF_ERROR(s.Int("message_threads", &c->message_threads, 1, 256));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("max_connections_per_address", &c->max_connections_per_address, 0, 1'000'000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "review")) {
    ConfigTable s(t, "review");
    GPUNEX_RETURN_IF_ERROR(s.Int("target_business_days", &c->review_target_business_days, 1, 60));
    GPUNEX_RETURN_IF_ERROR(s.StrList("holidays", &c->holidays));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  for (const ConfigSection& section : sections) {
    ConfigTable s(SubTable(r, section.name), section.name);
    GPUNEX_ASSIGN_OR_RETURN(std::any options, section.parse(s, env));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
    c->sections[section.name] = std::move(options);
  }
  return r.RejectUnknown();
}

Status ParseBool(const std::string& name, const std::string& v, bool* out) {
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return Bad(name, "must be true or false");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Config> LoadConfig(const std::string& path, const EnvGetter& env,
                            const std::vector<ConfigSection>& sections) {
  Config c;
  toml::table file;
  if (!path.empty()) {
    try {
      file = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
      return InvalidArgument("cannot read config " + path + ": " + std::string(e.description()));
    }
  }
  GPUNEX_RETURN_IF_ERROR(ApplyToml(file, env, sections, &c));
  auto set = [&](const char* var, std::string* field) {
    if (auto v = env(var)) *field = *v;
  };
  set("GPUNEX_LISTEN", &c.listen);
  set("GPUNEX_DATA_DIR", &c.data_dir);
  set("GPUNEX_DATABASE_URL", &c.database_url);
  set("GPUNEX_PUBLIC_URL", &c.public_url);
  set("GPUNEX_LOG_LEVEL", &c.log_level);
  set("GPUNEX_TLS_CERT", &c.tls_cert_file);
  set("GPUNEX_TLS_KEY", &c.tls_key_file);
  if (auto v = env("GPUNEX_ALLOW_EMULATED_GPUS")) {
    GPUNEX_RETURN_IF_ERROR(ParseBool("GPUNEX_ALLOW_EMULATED_GPUS", *v, &c.allow_emulated_gpus));
  }
  LogLevel level;
  if (!ParseLogLevel(c.log_level, &level)) {
    return Bad("log_level", "must be one of debug, info, warn, error");
  }
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    return Bad("tls", "cert_file and key_file must be set together");
  }
  if (c.listen.find(':') == std::string::npos) return Bad("listen", "must be host:port");
  if (c.public_url.empty()) {
    c.public_url = (c.tls_cert_file.empty() ? "http://" : "https://") + c.listen;
    c.public_url_from_listen = true;
  }
  while (c.public_url.ends_with('/')) c.public_url.pop_back();
  if (!c.public_url.starts_with("http://") && !c.public_url.starts_with("https://")) {
    return Bad("public_url", "must start with http:// or https://");
  }
  for (const auto& h : c.holidays) {
    if (h.size() != 10 || h[4] != '-' || h[7] != '-') {
      return Bad("review.holidays", "dates must be YYYY-MM-DD");
    }
  }
  return c;
}

}  // namespace gpunex::platform
