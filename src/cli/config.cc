#include "cli/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpunex::cli {

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kDefault:
      return "default";
    case Source::kFlag:
      return "flag";
    case Source::kEnvironment:
      return "environment";
    case Source::kProfile:
      return "profile";
  }
  return "default";
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

StatusOr<std::string> ConfigPath(const Env& env) {
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && !xdg->empty()) {
    return *xdg + "/gpunex/config.toml";
  }
  if (auto home = env("HOME"); home && !home->empty()) {
    return *home + "/.config/gpunex/config.toml";
  }
  return FailedPrecondition("neither XDG_CONFIG_HOME nor HOME is set: no config file to use");
}

StatusOr<ConfigFile> LoadConfig(const std::string& path) {
  ConfigFile out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  toml::table file;
  try {
    file = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << e.source().begin;
    return InvalidArgument(path + ": " + std::string(e.description()) + " at " + where.str());
  }
  for (const auto& [key, value] : file) {
    const std::string k(key.str());
    if (k == "profile") {
      const auto* s = value.as_string();
      if (s == nullptr) return InvalidArgument(path + ": profile must be a string");
      out.profile = s->get();
    } else if (k == "profiles") {
      const auto* profiles = value.as_table();
      if (profiles == nullptr) return InvalidArgument(path + ": profiles must be a table");
      for (const auto& [name, entry] : *profiles) {
        const std::string n(name.str());
        const auto* t = entry.as_table();
        if (t == nullptr) return InvalidArgument(path + ": profiles." + n + " must be a table");
        Profile p;
        for (const auto& [pk, pv] : *t) {
          const std::string field(pk.str());
          const auto* s = pv.as_string();
          if (field != "url" && field != "api_key") {
            return InvalidArgument(path + ": profiles." + n + "." + field + " is not a known key");
          }
          if (s == nullptr) {
            return InvalidArgument(path + ": profiles." + n + "." + field + " must be a string");
          }
          (field == "url" ? p.url : p.api_key) = s->get();
        }
        out.profiles[n] = std::move(p);
      }
    } else {
      return InvalidArgument(path + ": " + k + " is not a known key");
    }
  }
  return out;
}

namespace {

std::string TrimSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

StatusOr<Settings> Resolve(const Flags& flags, const Env& env, const ConfigFile& file,
                           const std::string& config_path) {
  Settings s;
  s.config_path = config_path;
  bool named = true;
  if (!flags.profile.empty()) {
    s.profile = flags.profile;
  } else if (auto p = env("GPUNEX_PROFILE"); p && !p->empty()) {
    s.profile = *p;
  } else if (!file.profile.empty()) {
    s.profile = file.profile;
  } else {
    s.profile = kDefaultProfile;
    named = false;
  }
  const auto it = file.profiles.find(s.profile);
  if (it == file.profiles.end() && named) {
    return NotFound("no profile \"" + s.profile + "\" in " + config_path +
                    " (gpunex auth login --profile " + s.profile + " makes one)");
  }
  const Profile none;
  const Profile& profile = it == file.profiles.end() ? none : it->second;

  const auto pick = [&](const std::string& flag, const char* env_name, const std::string& saved,
                        std::string* value, Source* source) {
    if (!flag.empty()) {
      *value = flag;
      *source = Source::kFlag;
    } else if (auto e = env(env_name); e && !e->empty()) {
      *value = *e;
      *source = Source::kEnvironment;
    } else if (!saved.empty()) {
      *value = saved;
      *source = Source::kProfile;
    }
  };
  s.url = std::string(kDefaultUrl);
  pick(flags.url, "GPUNEX_URL", profile.url, &s.url, &s.url_source);
  s.url = TrimSlash(s.url);
  pick(flags.api_key, "GPUNEX_API_KEY", profile.api_key, &s.api_key, &s.api_key_source);
  if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0) {
    return InvalidArgument("the platform URL must start with http:// or https://: " + s.url);
  }
  return s;
}

Status SaveProfile(const std::string& path, const std::string& name, const Profile& profile) {
  GPUNEX_ASSIGN_OR_RETURN(ConfigFile file, LoadConfig(path));
  file.profiles[name] = profile;
  if (file.profile.empty()) file.profile = name;

  toml::table profiles;
  for (const auto& [n, p] : file.profiles) {
    profiles.insert(n, toml::table{{"url", p.url}, {"api_key", p.api_key}});
  }
  toml::table root{{"profile", file.profile}, {"profiles", std::move(profiles)}};
  std::ostringstream text;
  text << "# gpunex command-line client: profiles of platforms and their API keys.\n"
       << "# Keep this file private (mode 0600): it holds secrets.\n"
       << root << "\n";

  const std::filesystem::path target(path);
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return Internal("cannot make " + target.parent_path().string() + ": " + ec.message());
  ::chmod(target.parent_path().c_str(), 0700);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  const std::string bytes = text.str();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Internal("cannot write " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Internal("cannot replace " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

std::string KeyHint(std::string_view key) {
  if (key.empty()) return "(none)";
  if (key.size() <= 4) return "…" + std::string(key);
  return "…" + std::string(key.substr(key.size() - 4));
}

}  // namespace gpunex::cli
