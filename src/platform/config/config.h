// gpunexd configuration: a TOML file (optional) with environment overrides on top.
// Every key is documented in deploy/gpunexd.example.toml; unknown keys are errors so
// that a typo never silently falls back to a default.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex::platform {

using EnvGetter = std::function<std::optional<std::string>(const std::string&)>;

// Reads typed values out of one table of the configuration file, remembering which keys
// it read so that the others can be reported as unknown. Errors name "table.key". A key
// the file does not set leaves the value as it was (its default).
class ConfigTable {
 public:
  // `toml_table`: the file's table (a toml::table), or null when the file has none.
  ConfigTable(const void* toml_table, std::string prefix)
      : table_(toml_table), prefix_(std::move(prefix)) {}

  Status Str(std::string_view key, std::string* out);
  Status Int64(std::string_view key, int64_t* out, int64_t min, int64_t max);
  template <typename T>
  Status Int(std::string_view key, T* out, long long min, long long max) {
    int64_t v = static_cast<int64_t>(*out);
    Status st = Int64(key, &v, min, max);
    if (st.ok()) *out = static_cast<T>(v);
    return st;
  }
  Status Bool(std::string_view key, bool* out);
  Status StrList(std::string_view key, std::vector<std::string>* out);
  // The sub-table `key` (a toml::table), or null; for this file's own tables.
  const void* Sub(std::string_view key);
  // A field error for every key of the table that nothing read.
  Status RejectUnknown() const;
  // "prefix.key": the name errors use.
  std::string Name(std::string_view key) const;

 private:
  const void* table_;
  std::string prefix_;
  std::set<std::string, std::less<>> seen_;
};

// A table of the configuration that a module reads itself (module.h): [name] in the file.
struct ConfigSection {
  std::string name;
  // Reads the table (every key absent when the file has none) and the module's own
  // environment variables into the module's options, checked; errors name "name.key" or
  // the variable.
  std::function<StatusOr<std::any>(ConfigTable& table, const EnvGetter& env)> parse;
  // The table as deploy/gpunexd.example.toml documents it: a "[name]" line, then each key
  // commented with its default.
  std::string example;
};

struct Config {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "gpunex-data";  // SQLite database and state
  std::string database_url;              // "postgresql://..." selects PostgreSQL
  std::string public_url;                // base URL users and agents reach; default from listen
  bool public_url_from_listen = false;   // public_url was derived from listen (port fixed on bind)
  bool allow_emulated_gpus = false;
  std::string log_level = "info";

  // TLS: both set → HTTPS only.
  std::string tls_cert_file;
  std::string tls_key_file;

  // HTTP limits.
  size_t max_body_bytes = 1 << 20;
  int io_threads = 2;
  int worker_threads = 8;
  int max_connections_per_address = 256;  // open connections one client address may hold

  // Email. Empty smtp_url: emails wait in the outbox until one is configured.
  std::string smtp_url;
  std::string smtp_from = "gpunex <no-reply@gpunex.local>";
  int outbox_poll_ms = 1000;
  int outbox_backoff_base_s = 5;
  int outbox_max_attempts = 12;
  // How long a sender's claim on an email lasts; after a crash on PostgreSQL (several
  // instances) an email in flight is sent again once this passes. Must exceed one SMTP
  // send (60 s at most).
  int outbox_lease_s = 90;

  // Accounts.
  int session_ttl_hours = 168;
  int session_idle_minutes = 12 * 60;     // a session unused this long has ended
  int email_link_hours = 48;              // how long an email verification link works
  int signups_per_address_per_hour = 20;  // then 429 (a token bucket with this burst)
  int password_hash_concurrency = 1;      // Argon2id hashes at once
  int password_hash_waiting = 4;          // requests that may wait for one, then 429
  int login_max_failures = 5;             // per email within the window, then 429
  int login_max_failures_ip = 50;         // per client address within the window
  int login_max_delay_s = 60;  // the longest wait failures elsewhere impose on an account
  int login_window_minutes = 15;
  // Argon2id cost (libsodium). The defaults are libsodium's "interactive" limits.
  unsigned long long argon2_opslimit = 2;
  size_t argon2_memlimit_bytes = 64ull << 20;

  // Fleet (AGT-4): agents send a heartbeat every heartbeat_interval_s; a machine without
  // one for offline_after_s is Offline.
  int heartbeat_interval_s = 10;
  int offline_after_s = 30;
  int64_t max_machines_per_provider = 100;
  int hello_timeout_s = 10;  // a new agent connection must say hello within this
  // The agent image the installer pulls.
  std::string agent_image = "gpunex/agent:0.1.0";
  // Whether workload images may name a registry on a loopback or private address or an
  // internal host name (fleet::ImagePolicy; docs/security.md).
  bool allow_private_registries = false;

  // Benchmarks (BEN-1..6; deploy/gpunexd.example.toml documents each key).
  bool benchmarks_enabled = true;
  int64_t benchmark_interval_s = 7 * 24 * 3600;
  int64_t benchmark_retry_after_s = 3600;
  int64_t benchmark_spot_check_mean_s = 3 * 24 * 3600;  // 0: no spot checks
  int64_t benchmark_run_timeout_s = 1800;
  int64_t benchmark_sustain_s = 60;
  int64_t benchmark_storage_file_mb = 1024;
  int64_t benchmark_storage_seconds = 8;
  int64_t benchmark_network_mb = 256;
  int64_t benchmark_pings = 20;
  int benchmark_tick_ms = 5000;
  // Threshold overrides by name ("memory" = 0.75, ...), for every model and per model;
  // names are checked where they are applied (benchmarks::ApplyThresholdOverrides).
  std::map<std::string, double> benchmark_thresholds;
  std::map<std::string, std::map<std::string, double>> benchmark_model_thresholds;

  // Reliability score (REL-1..5): notify providers below this score; a full refresh at
  // least this often (changes are picked up within a second anyway).
  int reliability_threshold = 80;
  int reliability_refresh_ms = 60'000;

  // Marketplace (MKT-1..4): how often the offer index looks for changed machines, and
  // how many searches per second (with a burst) one address may make without logging in.
  int market_poll_ms = 200;
  int market_anonymous_searches_per_s = 10;
  int market_anonymous_burst = 40;

  // Rentals and billing (RNT-1..6, LED-1..4; docs/billing.md): metering every
  // meter_interval_s, rentals of a machine offline for agent_lost_grace_s end as agent
  // lost, earnings are pending for earnings_hold_s, the commission per tier, a full refund
  // of a provider-fault end in the first early_fault_refund_s, a warning when the balance
  // covers less than low_balance_s of the running rentals; a customer may have at most
  // max_queued_jobs_per_customer jobs waiting for an offer.
  int64_t rentals_meter_interval_s = 60;
  int64_t rentals_agent_lost_grace_s = 300;
  int64_t rentals_earnings_hold_s = 24 * 3600;
  int64_t rentals_commission_community_bps = 2000;
  int64_t rentals_commission_enterprise_bps = 1500;
  int64_t rentals_early_fault_refund_s = 600;
  int64_t rentals_low_balance_s = 70 * 60;
  int rentals_sweep_ms = 1000;
  int64_t rentals_release_interval_s = 60;  // how often pending earnings are released
  int64_t rentals_max_queued_jobs_per_customer = 100;

  // Solana (PAY-4, PAY-6; docs/payouts.md): the JSON-RPC endpoint, the platform's key
  // file (the Solana CLI's format, mode 0600), the USDC mint and the commitment payouts
  // and top-ups are confirmed at. Without an RPC URL and a key, USDC payouts and top-ups
  // are not offered.
  std::string solana_rpc_url;
  std::string solana_keypair;
  std::string solana_usdc_mint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
  std::string solana_commitment = "confirmed";
  int solana_rpc_timeout_ms = 10'000;

  // Payouts (PAY-1..5; docs/payouts.md).
  int64_t payouts_threshold_micro = 50'000'000;  // the weekly default (§13a)
  int64_t payouts_hold_after_change_s = 48 * 3600;
  bool payouts_automatic_runs = true;  // Mondays and first business days, by themselves
  int payouts_loop_ms = 1000;
  int payouts_parallel_sends = 8;  // sendTransaction calls at once
  int payouts_batch = 100;         // Solana payouts signed per blockhash and transaction
  std::string payouts_eur_rate;    // EUR per USDC for scheduled runs ("0.92"); "" asks the operator
  std::string payout_files_dir;    // bank files are written here; default <data_dir>/payout-files
  int64_t payouts_solana_min_micro = 1'000'000, payouts_solana_fee_micro = 0;
  int64_t payouts_sepa_min_micro = 10'000'000, payouts_sepa_fee_micro = 0;
  int64_t payouts_ach_min_micro = 10'000'000, payouts_ach_fee_micro = 0;
  // The platform's bank account for SEPA files (empty: SEPA payouts not offered).
  std::string payouts_sepa_name, payouts_sepa_iban, payouts_sepa_bic;
  // The platform's ACH origination (empty: ACH payouts not offered).
  std::string payouts_ach_destination_routing, payouts_ach_destination_name, payouts_ach_origin,
      payouts_ach_origin_name, payouts_ach_company_name, payouts_ach_company_id,
      payouts_ach_odfi_routing;

  // Customers' top-ups in USDC (PAY-6; docs/payouts.md): a request is shown for ttl_s and
  // watched for a late payment until watch_s (every expired_check_s once expired).
  int64_t topups_ttl_s = 3600;
  int64_t topups_watch_s = 7 * 24 * 3600;
  int64_t topups_expired_check_s = 300;
  int topups_loop_ms = 2000;
  int64_t topups_min_micro = 1'000'000;
  int64_t topups_max_micro = 100'000'000'000;
  int topups_max_pending_per_customer = 20;
  std::string topups_label = "gpunex";  // shown by the payer's wallet

  // Review (REV-1): applications older than this many business days are overdue.
  int review_target_business_days = 3;
  std::vector<std::string> holidays;  // "YYYY-MM-DD", not business days

  // The options of the modules' own tables (ConfigSection), by table name.
  std::map<std::string, std::any, std::less<>> sections;

  // The cookie gets the Secure attribute when the public URL is HTTPS.
  bool CookieSecure() const { return public_url.starts_with("https://"); }

  // The options a module's section parsed. REQUIRES: the section was loaded with this
  // type (LoadConfig's `sections`).
  template <typename T>
  const T& Section(std::string_view name) const {
    return std::any_cast<const T&>(sections.find(name)->second);
  }
};

// Reads the process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Loads `path` (when not empty) and applies the GPUNEX_* environment overrides:
// GPUNEX_LISTEN, GPUNEX_DATA_DIR, GPUNEX_DATABASE_URL, GPUNEX_SMTP_URL, GPUNEX_SMTP_FROM,
// GPUNEX_PUBLIC_URL, GPUNEX_ALLOW_EMULATED_GPUS, GPUNEX_LOG_LEVEL, GPUNEX_TLS_CERT,
// GPUNEX_TLS_KEY, GPUNEX_SOLANA_RPC_URL, GPUNEX_SOLANA_KEYPAIR, GPUNEX_SOLANA_USDC_MINT,
// GPUNEX_SOLANA_COMMITMENT, GPUNEX_PAYOUT_FILES_DIR. Errors name the key or variable at fault.
// Each of `sections` reads its own table, into Config::sections.
StatusOr<Config> LoadConfig(const std::string& path, const EnvGetter& env = ProcessEnv,
                            const std::vector<ConfigSection>& sections = {});

}  // namespace gpunex::platform
