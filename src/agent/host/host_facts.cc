#include "agent/host/host_facts.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace gpunex::agent {
namespace {

constexpr int64_t kBytesPerMib = 1024 * 1024;

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// Calls fn(line) for each line of `text`.
template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// "key<sep>value" with both sides trimmed; false without `sep`.
bool SplitPair(std::string_view line, char sep, std::string_view* key, std::string_view* value) {
  size_t at = line.find(sep);
  if (at == std::string_view::npos) return false;
  *key = Trim(line.substr(0, at));
  *value = Trim(line.substr(at + 1));
  return true;
}

// Counts the "processor" entries and takes the first "model name".
Status ReadCpuInfo(const std::filesystem::path& path, HostFacts* facts) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return Unavailable("cannot read " + path.string() + " (is /proc mounted?)");
  int processors = 0;
  ForEachLine(*text, [&](std::string_view line) {
    std::string_view key, value;
    if (!SplitPair(line, ':', &key, &value)) return;
    if (key == "processor") ++processors;
    if (key == "model name" && facts->cpu_model.empty()) facts->cpu_model = value;
  });
  if (processors == 0) return Unavailable(path.string() + " lists no processors");
  facts->cpu_cores = processors;
  return Status::Ok();
}

Status ReadMemInfo(const std::filesystem::path& path, HostFacts* facts) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return Unavailable("cannot read " + path.string() + " (is /proc mounted?)");
  ForEachLine(*text, [&](std::string_view line) {
    std::string_view key, value;
    if (!SplitPair(line, ':', &key, &value) || key != "MemTotal") return;
    int64_t kib = 0;  // "65843264 kB"
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), kib);
    if (ec == std::errc() && Trim(value.substr(end - value.data())) == "kB") {
      facts->ram_mb = kib / 1024;
    }
  });
  if (facts->ram_mb < 0) return Unavailable(path.string() + " has no readable MemTotal");
  return Status::Ok();
}

// A value of os-release: unquoted, or in single or double quotes; in double quotes a
// backslash escapes the next character (os-release(5)).
std::string Unquote(std::string_view v) {
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
    return std::string(v.substr(1, v.size() - 2));
  }
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return std::string(v);
  std::string out;
  v = v.substr(1, v.size() - 2);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) ++i;
    out += v[i];
  }
  return out;
}

// PRETTY_NAME, else NAME and VERSION_ID, else "".
std::string OsName(std::string_view os_release) {
  std::string pretty, name, version;
  ForEachLine(os_release, [&](std::string_view line) {
    line = Trim(line);
    std::string_view key, value;
    if (line.empty() || line.front() == '#' || !SplitPair(line, '=', &key, &value)) return;
    if (key == "PRETTY_NAME") pretty = Unquote(value);
    if (key == "NAME") name = Unquote(value);
    if (key == "VERSION_ID") version = Unquote(value);
  });
  if (!pretty.empty()) return pretty;
  if (!name.empty() && !version.empty()) return name + " " + version;
  return name;
}

std::optional<std::string> ReadOsRelease(const std::string& etc_root) {
  std::filesystem::path etc = std::filesystem::path(etc_root).lexically_normal();
  if (!etc.has_filename()) etc = etc.parent_path();  // "/host/etc/" -> "/host/etc"
  if (auto text = ReadFile(etc / "os-release")) return text;
  return ReadFile(etc.parent_path() / "usr/lib/os-release");
}

Status ReadDisk(const std::string& work_dir, HostFacts* facts) {
  struct statvfs fs {};
  if (statvfs(work_dir.c_str(), &fs) != 0) {
    int err = errno;
    std::string why = "cannot examine the work directory " + work_dir + ": " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return NotFound(std::move(why));
    return Unavailable(std::move(why));
  }
  const auto block = static_cast<int64_t>(fs.f_frsize);
  facts->disk_total_mb = static_cast<int64_t>(fs.f_blocks) * block / kBytesPerMib;
  facts->disk_free_mb = static_cast<int64_t>(fs.f_bavail) * block / kBytesPerMib;
  return Status::Ok();
}

json::value TextOrNull(const std::string& s) {
  return s.empty() ? json::value(nullptr) : json::value(s);
}
json::value IntOrNull(int64_t v) { return v < 0 ? json::value(nullptr) : json::value(v); }

}  // namespace

StatusOr<HostFacts> CollectHostFacts(const std::string& work_dir, const std::string& proc_root,
                                     const std::string& etc_root) {
  const std::filesystem::path proc(proc_root);
  HostFacts facts;
  GPUNEX_RETURN_IF_ERROR(ReadCpuInfo(proc / "cpuinfo", &facts));
  GPUNEX_RETURN_IF_ERROR(ReadMemInfo(proc / "meminfo", &facts));
  GPUNEX_RETURN_IF_ERROR(ReadDisk(work_dir, &facts));
  if (auto text = ReadFile(proc / "sys/kernel/hostname")) facts.hostname = Trim(*text);
  if (auto text = ReadFile(proc / "sys/kernel/osrelease")) facts.kernel = Trim(*text);
  if (auto text = ReadOsRelease(etc_root)) facts.os = OsName(*text);
  return facts;
}

json::object ToJson(const HostFacts& facts) {
  json::object o;
  o["hostname"] = TextOrNull(facts.hostname);
  o["cpu_model"] = TextOrNull(facts.cpu_model);
  o["cpu_cores"] = IntOrNull(facts.cpu_cores);
  o["ram_mb"] = IntOrNull(facts.ram_mb);
  o["disk_total_mb"] = IntOrNull(facts.disk_total_mb);
  o["disk_free_mb"] = IntOrNull(facts.disk_free_mb);
  o["os"] = TextOrNull(facts.os);
  o["kernel"] = TextOrNull(facts.kernel);
  o["docker_version"] = TextOrNull(facts.docker_version);
  return o;
}

}  // namespace gpunex::agent
