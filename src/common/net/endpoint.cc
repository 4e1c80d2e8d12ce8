#include "common/net/endpoint.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "common/ascii.h"

namespace gpunex::net {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParsePort(std::string_view s, uint16_t* port) {
  if (s.empty() || s.size() > 5) return false;
  unsigned value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

// Splits "host", "host:port", "[v6]" or "[v6]:port". `port` keeps its value when the
// authority names none.
bool SplitHostPort(std::string_view authority, std::string* host, uint16_t* port) {
  std::string_view h;
  std::string_view rest;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    h = authority.substr(1, close - 1);
    rest = authority.substr(close + 1);
    if (h.find(':') == std::string_view::npos) return false;  // brackets are for IPv6
  } else {
    const size_t colon = authority.find(':');
    h = authority.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
  }
  if (h.empty()) return false;
  for (char c : h) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '@' || c == '?' ||
        c == '#' || c == '[' || c == ']') {
      return false;
    }
  }
  if (!rest.empty()) {
    if (rest.front() != ':' || !ParsePort(rest.substr(1), port)) return false;
  }
  *host = AsciiLower(h);
  return true;
}

std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

bool IsIpv6(const std::string& host) { return host.find(':') != std::string::npos; }

std::string BracketIfIpv6(const std::string& host) {
  return IsIpv6(host) ? "[" + host + "]" : host;
}

// An IP address as 16 bytes (IPv4 as its IPv4-mapped IPv6 form), and whether it was v4.
struct IpBytes {
  std::array<unsigned char, 16> bytes{};
  bool v4 = false;
};

std::optional<IpBytes> ParseIp(std::string_view text) {
  const std::string s(text);
  IpBytes ip;
  in_addr v4;
  in6_addr v6;
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    ip.v4 = true;
    ip.bytes[10] = 0xff;
    ip.bytes[11] = 0xff;
    std::memcpy(ip.bytes.data() + 12, &v4, 4);
    return ip;
  }
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::memcpy(ip.bytes.data(), &v6, 16);
    return ip;
  }
  return std::nullopt;
}

// Whether `host` (an IP address) lies in `cidr` ("10.0.0.0/8").
bool CidrContains(std::string_view cidr, const IpBytes& host) {
  const size_t slash = cidr.find('/');
  std::optional<IpBytes> net = ParseIp(cidr.substr(0, slash));
  uint16_t bits = 0;
  const std::string_view len = cidr.substr(slash + 1);
  if (!net || net->v4 != host.v4 || len.empty() || len.size() > 3 ||
      !std::all_of(len.begin(), len.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  bits = static_cast<uint16_t>(std::stoi(std::string(len)));
  if (bits > (net->v4 ? 32 : 128)) return false;
  if (net->v4) bits += 96;
  for (size_t i = 0; i < 16 && bits > 0; ++i) {
    const unsigned take = std::min<unsigned>(bits, 8);
    const auto mask = static_cast<unsigned char>(0xff00u >> take);
    if ((net->bytes[i] & mask) != (host.bytes[i] & mask)) return false;
    bits = static_cast<uint16_t>(bits - take);
  }
  return true;
}

bool EntryMatches(std::string_view entry, const std::string& host, uint16_t port) {
  if (entry == "*") return true;
  // An optional ":port" (IPv6 entries put the address in brackets to have one).
  std::string_view name = entry;
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string_view::npos) return false;
    name = entry.substr(1, close - 1);
    std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      uint16_t want = 0;
      if (rest.front() != ':' || !ParsePort(rest.substr(1), &want) || want != port) return false;
    }
  } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
    const size_t colon = entry.find(':');
    uint16_t want = 0;
    if (!ParsePort(entry.substr(colon + 1), &want) || want != port) return false;
    name = entry.substr(0, colon);
  }
  if (name.empty()) return false;
  const std::optional<IpBytes> host_ip = ParseIp(host);
  if (name.find('/') != std::string_view::npos) {
    return host_ip.has_value() && CidrContains(name, *host_ip);
  }
  if (std::optional<IpBytes> entry_ip = ParseIp(name)) {
    return host_ip.has_value() && host_ip->bytes == entry_ip->bytes;
  }
  if (name.substr(0, 2) == "*.") name.remove_prefix(2);
  if (!name.empty() && name.front() == '.') name.remove_prefix(1);
  if (name.empty()) return false;
  if (host == name) return true;
  return host.size() > name.size() &&
         host.compare(host.size() - name.size(), name.size(), name) == 0 &&
         host[host.size() - name.size() - 1] == '.';
}

std::optional<std::string> FirstSet(const EnvLookup& env, const char* upper, const char* lower) {
  for (const char* name : {upper, lower}) {
    std::optional<std::string> value = env(name);
    if (value && !Trim(*value).empty()) return std::string(Trim(*value));
  }
  return std::nullopt;
}

}  // namespace

std::string WebSocketEndpoint::Authority() const {
  return BracketIfIpv6(host) + ":" + std::to_string(port);
}

std::string WebSocketEndpoint::HostHeader() const {
  if (port == (tls ? 443 : 80)) return BracketIfIpv6(host);
  return Authority();
}

StatusOr<WebSocketEndpoint> ParseWebSocketUrl(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return InvalidArgument("the platform URL must start with ws://, wss://, http:// or https://");
  }
  const std::string scheme = AsciiLower(url.substr(0, scheme_end));
  WebSocketEndpoint endpoint;
  if (scheme == "wss" || scheme == "https") {
    endpoint.tls = true;
  } else if (scheme != "ws" && scheme != "http") {
    return InvalidArgument("the platform URL has an unsupported scheme: " + scheme);
  }
  endpoint.port = endpoint.tls ? 443 : 80;
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find('#'));
  const size_t path_start = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_start);
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("the platform URL must not carry credentials");
  }
  if (!SplitHostPort(authority, &endpoint.host, &endpoint.port)) {
    return InvalidArgument("the platform URL has a bad host or port: " + std::string(url));
  }
  endpoint.target =
      path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (endpoint.target.front() == '?') endpoint.target.insert(0, "/");
  for (char c : endpoint.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return InvalidArgument("the platform URL's path has spaces or control characters");
    }
  }
  return endpoint;
}

StatusOr<HttpProxy> ParseProxyUrl(std::string_view url) {
  std::string_view rest = url;
  const size_t scheme_end = url.find("://");
  if (scheme_end != std::string_view::npos) {
    const std::string scheme = AsciiLower(url.substr(0, scheme_end));
    if (scheme != "http") {
      return InvalidArgument("unsupported proxy scheme \"" + scheme +
                             "\": only http:// proxies (CONNECT) are supported");
    }
    rest = url.substr(scheme_end + 3);
  }
  const size_t path_start = rest.find('/');
  if (path_start != std::string_view::npos && path_start + 1 != rest.size()) {
    return InvalidArgument("the proxy URL must not have a path");
  }
  std::string_view authority = rest.substr(0, path_start);
  HttpProxy proxy;
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    const size_t colon = userinfo.find(':');
    std::optional<std::string> user = PercentDecode(userinfo.substr(0, colon));
    std::optional<std::string> password = PercentDecode(
        colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1));
    if (!user || !password) return InvalidArgument("the proxy URL has a bad percent escape");
    proxy.authorization = "Basic " + Base64Encode(*user + ":" + *password);
    authority = authority.substr(at + 1);
  }
  proxy.port = 80;
  if (!SplitHostPort(authority, &proxy.host, &proxy.port)) {
    return InvalidArgument("the proxy URL has a bad host or port");
  }
  return proxy;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<std::optional<HttpProxy>> ChooseProxy(const WebSocketEndpoint& endpoint,
                                               const std::string& proxy_url, const EnvLookup& env) {
  std::string chosen = proxy_url;
  if (chosen.empty()) {
    std::optional<std::string> from_env = endpoint.tls ? FirstSet(env, "HTTPS_PROXY", "https_proxy")
                                                       : FirstSet(env, "HTTP_PROXY", "http_proxy");
    if (!from_env) return std::optional<HttpProxy>();
    std::optional<std::string> no_proxy = FirstSet(env, "NO_PROXY", "no_proxy");
    if (no_proxy && NoProxyMatches(*no_proxy, endpoint.host, endpoint.port)) {
      return std::optional<HttpProxy>();
    }
    chosen = *from_env;
  }
  StatusOr<HttpProxy> proxy = ParseProxyUrl(chosen);
  if (!proxy.ok()) return proxy.status();
  return std::optional<HttpProxy>(std::move(*proxy));
}

bool NoProxyMatches(std::string_view no_proxy, std::string_view host, uint16_t port) {
  const std::string lower_host = AsciiLower(host);
  size_t start = 0;
  while (start <= no_proxy.size()) {
    size_t end = no_proxy.find_first_of(", \t", start);
    if (end == std::string_view::npos) end = no_proxy.size();
    const std::string entry = AsciiLower(Trim(no_proxy.substr(start, end - start)));
    if (!entry.empty() && EntryMatches(entry, lower_host, port)) return true;
    start = end + 1;
  }
  return false;
}

std::string Base64Encode(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t n = (static_cast<uint32_t>(static_cast<unsigned char>(data[i])) << 16) |
                       (static_cast<uint32_t>(static_cast<unsigned char>(data[i + 1])) << 8) |
                       static_cast<uint32_t>(static_cast<unsigned char>(data[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const size_t left = data.size() - i;
  if (left > 0) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(data[i])) << 16;
    if (left == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(data[i + 1])) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(left == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace gpunex::net
