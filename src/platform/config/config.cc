#include "platform/config/config.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <set>
#include <tuple>

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
    GPUNEX_RETURN_IF_ERROR(
        s.Int("max_connections_per_address", &c->max_connections_per_address, 0, 1'000'000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "smtp")) {
    ConfigTable s(t, "smtp");
    GPUNEX_RETURN_IF_ERROR(s.Str("url", &c->smtp_url));
    GPUNEX_RETURN_IF_ERROR(s.Str("from", &c->smtp_from));
    GPUNEX_RETURN_IF_ERROR(s.Int("poll_ms", &c->outbox_poll_ms, 10, 60000));
    GPUNEX_RETURN_IF_ERROR(s.Int("backoff_base_seconds", &c->outbox_backoff_base_s, 1, 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("max_attempts", &c->outbox_max_attempts, 1, 100));
    GPUNEX_RETURN_IF_ERROR(s.Int("lease_seconds", &c->outbox_lease_s, 2, 3600));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "auth")) {
    ConfigTable s(t, "auth");
    GPUNEX_RETURN_IF_ERROR(s.Int("session_ttl_hours", &c->session_ttl_hours, 1, 24 * 90));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("session_idle_minutes", &c->session_idle_minutes, 5, 24 * 90 * 60));
    GPUNEX_RETURN_IF_ERROR(s.Int("email_link_hours", &c->email_link_hours, 1, 24 * 30));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("signups_per_address_per_hour", &c->signups_per_address_per_hour, 1, 1'000'000));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("password_hash_concurrency", &c->password_hash_concurrency, 1, 64));
    GPUNEX_RETURN_IF_ERROR(s.Int("password_hash_waiting", &c->password_hash_waiting, 0, 1024));
    GPUNEX_RETURN_IF_ERROR(s.Int("login_max_failures", &c->login_max_failures, 1, 1000));
    GPUNEX_RETURN_IF_ERROR(s.Int("login_max_failures_ip", &c->login_max_failures_ip, 1, 100000));
    GPUNEX_RETURN_IF_ERROR(s.Int("login_window_minutes", &c->login_window_minutes, 1, 1440));
    GPUNEX_RETURN_IF_ERROR(s.Int("login_max_delay_s", &c->login_max_delay_s, 1, 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("argon2_opslimit", &c->argon2_opslimit, 1, 20));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("argon2_memlimit_bytes", &c->argon2_memlimit_bytes, 8192, 4ll << 30));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "fleet")) {
    ConfigTable s(t, "fleet");
    GPUNEX_RETURN_IF_ERROR(s.Int("heartbeat_interval_s", &c->heartbeat_interval_s, 1, 300));
    GPUNEX_RETURN_IF_ERROR(s.Int("offline_after_s", &c->offline_after_s, 2, 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("hello_timeout_s", &c->hello_timeout_s, 1, 300));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("max_machines_per_provider", &c->max_machines_per_provider, 1, 1'000'000));
    GPUNEX_RETURN_IF_ERROR(s.Str("agent_image", &c->agent_image));
    GPUNEX_RETURN_IF_ERROR(s.Bool("allow_private_registries", &c->allow_private_registries));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "reliability")) {
    ConfigTable s(t, "reliability");
    GPUNEX_RETURN_IF_ERROR(s.Int("threshold", &c->reliability_threshold, 1, 100));
    GPUNEX_RETURN_IF_ERROR(s.Int("refresh_ms", &c->reliability_refresh_ms, 1000, 3600 * 1000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "market")) {
    ConfigTable s(t, "market");
    GPUNEX_RETURN_IF_ERROR(s.Int("poll_ms", &c->market_poll_ms, 10, 10'000));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("anonymous_searches_per_s", &c->market_anonymous_searches_per_s, 1, 100'000));
    GPUNEX_RETURN_IF_ERROR(s.Int("anonymous_burst", &c->market_anonymous_burst, 1, 1'000'000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "rentals")) {
    ConfigTable s(t, "rentals");
    GPUNEX_RETURN_IF_ERROR(s.Int("meter_interval_s", &c->rentals_meter_interval_s, 1, 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("agent_lost_grace_s", &c->rentals_agent_lost_grace_s, 1, 86'400));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("earnings_hold_s", &c->rentals_earnings_hold_s, 60, 30ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("commission_community_bps", &c->rentals_commission_community_bps, 0, 10'000));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("commission_enterprise_bps", &c->rentals_commission_enterprise_bps, 0, 10'000));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("early_fault_refund_s", &c->rentals_early_fault_refund_s, 0, 86'400));
    GPUNEX_RETURN_IF_ERROR(s.Int("low_balance_s", &c->rentals_low_balance_s, 0, 7 * 86'400));
    GPUNEX_RETURN_IF_ERROR(s.Int("sweep_ms", &c->rentals_sweep_ms, 10, 60'000));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("release_interval_s", &c->rentals_release_interval_s, 1, 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("max_queued_jobs_per_customer", &c->rentals_max_queued_jobs_per_customer, 1, 10'000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
    // A refund takes back earnings that are still pending.
    if (c->rentals_early_fault_refund_s >= c->rentals_earnings_hold_s) {
      return FieldError("rentals.early_fault_refund_s", "must be less than earnings_hold_s");
    }
  }
  if (auto* t = SubTable(r, "benchmarks")) {
    ConfigTable s(t, "benchmarks");
    GPUNEX_RETURN_IF_ERROR(s.Bool("enabled", &c->benchmarks_enabled));
    GPUNEX_RETURN_IF_ERROR(s.Int("interval_s", &c->benchmark_interval_s, 1, 365ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("retry_after_s", &c->benchmark_retry_after_s, 1, 30ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("run_timeout_s", &c->benchmark_run_timeout_s, 10, 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("spot_check_mean_s", &c->benchmark_spot_check_mean_s, 0, 365ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("sustain_s", &c->benchmark_sustain_s, 0, 600));
    GPUNEX_RETURN_IF_ERROR(s.Int("storage_file_mb", &c->benchmark_storage_file_mb, 1, 64 * 1024));
    GPUNEX_RETURN_IF_ERROR(s.Int("storage_seconds", &c->benchmark_storage_seconds, 1, 120));
    GPUNEX_RETURN_IF_ERROR(s.Int("network_mb", &c->benchmark_network_mb, 1, 1024));
    GPUNEX_RETURN_IF_ERROR(s.Int("pings", &c->benchmark_pings, 1, 1000));
    GPUNEX_RETURN_IF_ERROR(s.Int("tick_ms", &c->benchmark_tick_ms, 50, 3600 * 1000));
    auto numbers = [](const toml::table& tt, const std::string& name,
                      std::map<std::string, double>* out) -> Status {
      for (const auto& [k, v] : tt) {
        std::optional<double> d = v.value<double>();
        if (!d) return Bad(name + "." + std::string(k.str()), "must be a number");
        (*out)[std::string(k.str())] = *d;
      }
      return Status::Ok();
    };
    if (auto* th = SubTable(s, "thresholds")) {
      GPUNEX_RETURN_IF_ERROR(numbers(*th, "benchmarks.thresholds", &c->benchmark_thresholds));
    }
    if (auto* models = SubTable(s, "models")) {
      for (const auto& [id, v] : *models) {
        const std::string name = "benchmarks.models." + std::string(id.str());
        if (!v.is_table()) return Bad(name, "must be a table of thresholds");
        GPUNEX_RETURN_IF_ERROR(
            numbers(*v.as_table(), name, &c->benchmark_model_thresholds[std::string(id.str())]));
      }
    }
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "solana")) {
    ConfigTable s(t, "solana");
    GPUNEX_RETURN_IF_ERROR(s.Str("rpc_url", &c->solana_rpc_url));
    GPUNEX_RETURN_IF_ERROR(s.Str("keypair", &c->solana_keypair));
    GPUNEX_RETURN_IF_ERROR(s.Str("usdc_mint", &c->solana_usdc_mint));
    GPUNEX_RETURN_IF_ERROR(s.Str("commitment", &c->solana_commitment));
    GPUNEX_RETURN_IF_ERROR(s.Int("rpc_timeout_ms", &c->solana_rpc_timeout_ms, 100, 120'000));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
  }
  if (auto* t = SubTable(r, "payouts")) {
    ConfigTable s(t, "payouts");
    constexpr long long kMaxMicro = 1'000'000'000'000;  // 1,000,000 USDC
    GPUNEX_RETURN_IF_ERROR(s.Int("threshold_micro", &c->payouts_threshold_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("hold_after_change_s", &c->payouts_hold_after_change_s, 0, 30ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(s.Bool("automatic_runs", &c->payouts_automatic_runs));
    GPUNEX_RETURN_IF_ERROR(s.Int("loop_ms", &c->payouts_loop_ms, 10, 3'600'000));
    GPUNEX_RETURN_IF_ERROR(s.Int("batch", &c->payouts_batch, 1, 1000));
    GPUNEX_RETURN_IF_ERROR(s.Int("parallel_sends", &c->payouts_parallel_sends, 1, 64));
    GPUNEX_RETURN_IF_ERROR(s.Str("eur_rate", &c->payouts_eur_rate));
    GPUNEX_RETURN_IF_ERROR(s.Str("files_dir", &c->payout_files_dir));
    GPUNEX_RETURN_IF_ERROR(s.Int("solana_min_micro", &c->payouts_solana_min_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("solana_fee_micro", &c->payouts_solana_fee_micro, 0, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("sepa_min_micro", &c->payouts_sepa_min_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("sepa_fee_micro", &c->payouts_sepa_fee_micro, 0, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("ach_min_micro", &c->payouts_ach_min_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("ach_fee_micro", &c->payouts_ach_fee_micro, 0, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Str("sepa_name", &c->payouts_sepa_name));
    GPUNEX_RETURN_IF_ERROR(s.Str("sepa_iban", &c->payouts_sepa_iban));
    GPUNEX_RETURN_IF_ERROR(s.Str("sepa_bic", &c->payouts_sepa_bic));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_destination_routing", &c->payouts_ach_destination_routing));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_destination_name", &c->payouts_ach_destination_name));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_origin", &c->payouts_ach_origin));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_origin_name", &c->payouts_ach_origin_name));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_company_name", &c->payouts_ach_company_name));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_company_id", &c->payouts_ach_company_id));
    GPUNEX_RETURN_IF_ERROR(s.Str("ach_odfi_routing", &c->payouts_ach_odfi_routing));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
    for (auto [name, fee, min] :
         {std::tuple{"solana", c->payouts_solana_fee_micro, c->payouts_solana_min_micro},
          std::tuple{"sepa", c->payouts_sepa_fee_micro, c->payouts_sepa_min_micro},
          std::tuple{"ach", c->payouts_ach_fee_micro, c->payouts_ach_min_micro}}) {
      if (fee >= min)
        return Bad(std::string("payouts.") + name + "_fee_micro", "must be less than the minimum");
    }
  }
  if (auto* t = SubTable(r, "topups")) {
    ConfigTable s(t, "topups");
    constexpr long long kMaxMicro = 1'000'000'000'000;
    GPUNEX_RETURN_IF_ERROR(s.Int("ttl_s", &c->topups_ttl_s, 60, 7ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("watch_s", &c->topups_watch_s, 60, 90ll * 24 * 3600));
    GPUNEX_RETURN_IF_ERROR(s.Int("expired_check_s", &c->topups_expired_check_s, 1, 86'400));
    GPUNEX_RETURN_IF_ERROR(s.Int("loop_ms", &c->topups_loop_ms, 100, 3'600'000));
    GPUNEX_RETURN_IF_ERROR(s.Int("min_micro", &c->topups_min_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(s.Int("max_micro", &c->topups_max_micro, 1, kMaxMicro));
    GPUNEX_RETURN_IF_ERROR(
        s.Int("max_pending_per_customer", &c->topups_max_pending_per_customer, 1, 1000));
    GPUNEX_RETURN_IF_ERROR(s.Str("label", &c->topups_label));
    GPUNEX_RETURN_IF_ERROR(s.RejectUnknown());
    if (c->topups_min_micro > c->topups_max_micro)
      return Bad("topups.min_micro", "must not exceed max_micro");
    if (c->topups_watch_s < c->topups_ttl_s) return Bad("topups.watch_s", "must be at least ttl_s");
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
  set("GPUNEX_SMTP_URL", &c.smtp_url);
  set("GPUNEX_SMTP_FROM", &c.smtp_from);
  set("GPUNEX_PUBLIC_URL", &c.public_url);
  set("GPUNEX_LOG_LEVEL", &c.log_level);
  set("GPUNEX_TLS_CERT", &c.tls_cert_file);
  set("GPUNEX_TLS_KEY", &c.tls_key_file);
  set("GPUNEX_SOLANA_RPC_URL", &c.solana_rpc_url);
  set("GPUNEX_SOLANA_KEYPAIR", &c.solana_keypair);
  set("GPUNEX_SOLANA_USDC_MINT", &c.solana_usdc_mint);
  set("GPUNEX_SOLANA_COMMITMENT", &c.solana_commitment);
  set("GPUNEX_PAYOUT_FILES_DIR", &c.payout_files_dir);
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
  if (c.offline_after_s <= c.heartbeat_interval_s) {
    return Bad("fleet.offline_after_s", "must be longer than fleet.heartbeat_interval_s");
  }
  if (c.public_url.empty()) {
    c.public_url = (c.tls_cert_file.empty() ? "http://" : "https://") + c.listen;
    c.public_url_from_listen = true;
  }
  while (c.public_url.ends_with('/')) c.public_url.pop_back();
  if (!c.public_url.starts_with("http://") && !c.public_url.starts_with("https://")) {
    return Bad("public_url", "must start with http:// or https://");
  }
  if (c.solana_commitment != "processed" && c.solana_commitment != "confirmed" &&
      c.solana_commitment != "finalized") {
    return Bad("solana.commitment", "must be processed, confirmed or finalized");
  }
  if (c.solana_rpc_url.empty() != c.solana_keypair.empty()) {
    return Bad("solana", "rpc_url and keypair must be set together");
  }
  if (c.payout_files_dir.empty()) c.payout_files_dir = c.data_dir + "/payout-files";
  for (const auto& h : c.holidays) {
    if (h.size() != 10 || h[4] != '-' || h[7] != '-') {
      return Bad("review.holidays", "dates must be YYYY-MM-DD");
    }
  }
  return c;
}

}  // namespace gpunex::platform
