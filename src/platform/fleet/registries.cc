#include "platform/fleet/registries.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpunex::platform::fleet {
namespace {

std::string LowerHost(std::string_view domain) {
  std::string host(domain.substr(0, domain.find(':')));
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return host;
}

// One part of a numeric host as inet_aton reads it: 0x.. hex, 0.. octal, else decimal.
std::optional<uint64_t> NumberPart(std::string_view p) {
  int base = 10;
  if (p.size() > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p.remove_prefix(2);
  } else if (p.size() > 1 && p[0] == '0') {
    base = 8;
    p.remove_prefix(1);
  }
  if (p.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : p) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    if (d >= base) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    if (v > 0xFFFFFFFFu) return std::nullopt;
  }
  return v;
}

// The IPv4 address `host` is to inet_aton (1 to 4 parts, the last filling the bytes left),
// or none when it is a name.
std::optional<uint32_t> NumericAddress(std::string_view host) {
  std::vector<uint64_t> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = host.find('.', start);
    auto v = NumberPart(host.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!v || parts.size() == 4) return std::nullopt;
    parts.push_back(*v);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  const size_t n = parts.size();
  uint64_t addr = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (parts[i] > 255) return std::nullopt;
    addr |= parts[i] << (8 * (3 - i));
  }
  const uint64_t last_max = 0xFFFFFFFFu >> (8 * (n - 1));
  if (parts.back() > last_max) return std::nullopt;
  return static_cast<uint32_t>(addr | parts.back());
}

bool In(uint32_t addr, uint32_t net, int prefix) {
  const uint32_t mask = prefix == 0 ? 0 : 0xFFFFFFFFu << (32 - prefix);
  return (addr & mask) == net;
}

RegistryHost ClassifyAddress(uint32_t a) {
  if (In(a, 0x00000000, 8) || In(a, 0xA9FE0000, 16) || In(a, 0xE0000000, 4) ||
      In(a, 0xF0000000, 4)) {
    // 0/8 "this host", 169.254/16 link-local, 224/4 multicast, 240/4 reserved and the
    // broadcast address in it.
    return RegistryHost::kForbidden;
  }
  if (In(a, 0x7F000000, 8) || In(a, 0x0A000000, 8) || In(a, 0xAC100000, 12) ||
      In(a, 0xC0A80000, 16) || In(a, 0x64400000, 10) || In(a, 0xC6120000, 15)) {
    // Loopback, RFC 1918, shared address space (100.64/10), benchmarking (198.18/15).
    return RegistryHost::kPrivate;
  }
  return RegistryHost::kPublic;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

RegistryHost ClassifyRegistryHost(std::string_view domain) {
  if (domain.empty()) return RegistryHost::kPublic;  // Docker Hub
  const std::string host = LowerHost(domain);
  if (auto addr = NumericAddress(host)) return ClassifyAddress(*addr);
  if (host == "localhost" || EndsWith(host, ".localhost")) return RegistryHost::kPrivate;
  // One label ("registry:5000", "ip6-localhost"): a name only the host's own resolver
  // and /etc/hosts know.
  if (host.find('.') == std::string::npos) return RegistryHost::kPrivate;
  static constexpr std::array<std::string_view, 9> kInternalSuffixes = {
      ".local", ".localdomain", ".internal", ".intranet", ".lan",
      ".home",  ".corp",        ".private",  ".home.arpa"};
  for (std::string_view suffix : kInternalSuffixes) {
    if (EndsWith(host, suffix)) return RegistryHost::kPrivate;
  }
  // A last label of digits is no public name ("10.0.0.0.1").
  const std::string_view last = std::string_view(host).substr(host.rfind('.') + 1);
  if (std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return RegistryHost::kPrivate;
  }
  return RegistryHost::kPublic;
}

bool IsDependableRegistry(std::string_view domain) {
  static constexpr std::array<std::string_view, 11> kDependable = {"docker.io",
                                                                   "index.docker.io",
                                                                   "registry-1.docker.io",
                                                                   "ghcr.io",
                                                                   "nvcr.io",
                                                                   "quay.io",
                                                                   "gcr.io",
                                                                   "registry.k8s.io",
                                                                   "public.ecr.aws",
                                                                   "mcr.microsoft.com",
                                                                   "registry.hub.docker.com"};
  if (domain.empty()) return true;  // Docker Hub
  if (domain.find(':') != std::string_view::npos) return false;
  const std::string host = LowerHost(domain);
  return std::find(kDependable.begin(), kDependable.end(), host) != kDependable.end();
}

}  // namespace gpunex::platform::fleet
