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
  Status Number(std::string_view key, double* out);  // an integer or a float
  Status StrList(std::string_view key, std::vector<std::string>* out);
  // The sub-table `key` as a reader of its own ("table.key.inner" in errors); one with no
  // keys when the file has none; an error when `key` is there but not a table.
  StatusOr<ConfigTable> Table(std::string_view key);
  // The keys the file sets in this table, in order.
  std::vector<std::string> Keys() const;
  // The sub-table `key` (a toml::table), or null; for this file's own tables.
  const void* Sub(std::string_view key);
  // A field error for every key of the table that nothing read.
  Status RejectUnknown() const;
  // "prefix.key": the name errors use.
  std::string Name(std::string_view key) const;
  // The table's own name ("benchmarks.thresholds").
  const std::string& path() const { return prefix_; }

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
  std::string example{};
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
  int message_threads = 4;  // agents' and terminals' WebSocket messages, apart from requests
  int max_connections_per_address = 256;  // open connections one client address may hold

  // Review (REV-1): applications older than this many business days are overdue.
  int review_target_business_days = 3;
  std::vector<std::string> holidays;  // "YYYY-MM-DD", not business days

  // The options of the modules' own tables (ConfigSection), by table name.
  std::map<std::string, std::any, std::less<>> sections;

  // The cookie gets the Secure attribute when the public URL is HTTPS.
  bool CookieSecure() const { return public_url.starts_with("https://"); }

  // The options a module's section parsed; its defaults when the section was not loaded
  // (a Config made in a test). REQUIRES: a loaded section was parsed into a T.
  template <typename T>
  const T& Section(std::string_view name) const {
    static const T kDefaults{};
    auto it = sections.find(name);
    return it == sections.end() ? kDefaults : std::any_cast<const T&>(it->second);
  }
};

// Reads the process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Loads `path` (when not empty) and applies the GPUNEX_* environment overrides of the
// core keys: GPUNEX_LISTEN, GPUNEX_DATA_DIR, GPUNEX_DATABASE_URL, GPUNEX_PUBLIC_URL,
// GPUNEX_ALLOW_EMULATED_GPUS, GPUNEX_LOG_LEVEL, GPUNEX_TLS_CERT, GPUNEX_TLS_KEY. Each of
// `sections` reads its own table and variables (GPUNEX_SMTP_URL, GPUNEX_SOLANA_RPC_URL,
// ...), into Config::sections. Errors name the key or variable at fault.
StatusOr<Config> LoadConfig(const std::string& path, const EnvGetter& env = ProcessEnv,
                            const std::vector<ConfigSection>& sections = {});

}  // namespace gpunex::platform
