// Where the command-line client finds the platform and its API key: flags, then the
// environment, then a profile of the config file, in that order of precedence
// (docs/cli.md, "Configuration"). Pure functions over strings and one file, so the order
// is testable without a platform.
//
// The file is TOML, `$XDG_CONFIG_HOME/gpunex/config.toml` (else `~/.config/...`), kept
// mode 0600 because it holds API keys:
//
//   profile = "default"            # the profile used when none is named
//   [profiles.default]
//   url = "https://gpunex.example"
//   api_key = "gpx_k_..."
//
// Thread-safety: values and functions; SaveProfile writes the file (one writer at a time).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"

namespace gpunex::cli {

inline constexpr std::string_view kDefaultUrl = "http://127.0.0.1:8080";
inline constexpr std::string_view kDefaultProfile = "default";

struct Profile {
  std::string url;
  std::string api_key;
};

struct ConfigFile {
  std::string profile;  // the file's `profile`: "" when it names none
  std::map<std::string, Profile> profiles;
};

// What the flags gave ("" when absent).
struct Flags {
  std::string url;
  std::string api_key;
  std::string profile;
};

// Where a setting came from, for `auth status` and the 401 message.
enum class Source { kDefault, kFlag, kEnvironment, kProfile };
std::string_view SourceName(Source s);

struct Settings {
  std::string url;  // without a trailing slash
  Source url_source = Source::kDefault;
  std::string api_key;
  Source api_key_source = Source::kDefault;
  std::string profile;  // the profile in use
  std::string config_path;
};

using Env = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> ProcessEnv(const char* name);

// The config file's path: $XDG_CONFIG_HOME/gpunex/config.toml, else
// $HOME/.config/gpunex/config.toml. Fails when neither variable is set.
StatusOr<std::string> ConfigPath(const Env& env);

// Reads the file; a missing file is an empty config. A malformed one fails naming the
// file and what is wrong (a key of another type, an unknown key).
StatusOr<ConfigFile> LoadConfig(const std::string& path);

// The settings: each of url and api_key from the flag, else GPUNEX_URL/GPUNEX_API_KEY,
// else the profile (--profile, else GPUNEX_PROFILE, else the file's `profile`, else
// "default"); the url defaults to kDefaultUrl. A profile named by a flag or the
// environment that the file lacks fails (a typo must not fall back to another platform).
StatusOr<Settings> Resolve(const Flags& flags, const Env& env, const ConfigFile& file,
                           const std::string& config_path);

// Writes `profile` into the file under `name` (creating the file and its folder, mode
// 0700 and 0600), keeping the other profiles; makes it the file's `profile` when the file
// names none. Written to a temporary file and renamed, so a crash leaves the old file.
Status SaveProfile(const std::string& path, const std::string& name, const Profile& profile);

// The last four characters of a key, as `…wxyz`: what messages may show of it.
std::string KeyHint(std::string_view key);

}  // namespace gpunex::cli
