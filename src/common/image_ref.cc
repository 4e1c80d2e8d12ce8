#include "common/image_ref.h"

#include <vector>

namespace gpunex {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// path-component := [a-z0-9]+ (separator [a-z0-9]+)*, separator := "." | "_" | "__" | "-"+
bool IsPathComponent(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  size_t i = 0;
  while (i < s.size()) {
    if (IsLowerAlnum(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && !IsLowerAlnum(s[j])) ++j;
    std::string_view sep = s.substr(i, j - i);
    bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
    if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
    i = j;
  }
  return true;
}

// domain := label ("." label)* (":" port)?, label := [A-Za-z0-9] |
// [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]
bool IsDomain(std::string_view s) {
  size_t colon = s.find(':');
  std::string_view host = s.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
    }
  }
  if (host.empty()) return false;
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    std::string_view label = host.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty() || !IsAlnum(label.front()) || !IsAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// tag := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
bool IsTag(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!IsAlnum(s[0]) && s[0] != '_') return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// digest := algorithm ":" hex, with sha256 (64 hex) and sha512 (128 hex) accepted, as the
// engine verifies only those.
bool IsDigest(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view algo = s.substr(0, colon);
  std::string_view hex = s.substr(colon + 1);
  size_t want = algo == "sha256" ? 64 : algo == "sha512" ? 128 : 0;
  if (want == 0 || hex.size() != want) return false;
  for (char c : hex) {
    if (!IsHex(c)) return false;
  }
  return true;
}

std::optional<ImageRef> Fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

}  // namespace

std::string ImageRef::ToString() const {
  std::string s = name;
  if (!tag.empty()) s += ":" + tag;
  if (!digest.empty()) s += "@" + digest;
  return s;
}

std::optional<ImageRef> ParseImageRef(std::string_view ref, std::string* error) {
  if (ref.empty()) return Fail(error, "is empty");
  if (ref.size() > kMaxImageRefLength) {
    return Fail(error, "must be at most " + std::to_string(kMaxImageRefLength) + " characters");
  }
  ImageRef out;
  std::string_view rest = ref;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    if (!IsDigest(digest)) return Fail(error, "has a malformed digest (want sha256:<64 hex>)");
    out.digest = std::string(digest);
    rest = rest.substr(0, at);
  }
  // A tag follows the last ':' after the last '/'; a ':' before it belongs to a port.
  size_t slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (!IsTag(tag)) return Fail(error, "has a malformed tag");
    out.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return Fail(error, "has no repository name");
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t next = rest.find('/', start);
    parts.push_back(rest.substr(start, next == std::string_view::npos ? next : next - start));
    if (next == std::string_view::npos) break;
    start = next + 1;
  }
  size_t first_path = 0;
  // Like the engine: the first component is a registry host when more components follow
  // and it has a '.' or ':', an upper-case letter, or is "localhost".
  auto looks_like_host = [](std::string_view p) {
    if (p == "localhost" || p.find_first_of(".:") != std::string_view::npos) return true;
    for (char c : p) {
      if (c >= 'A' && c <= 'Z') return true;
    }
    return false;
  };
  if (parts.size() > 1 && looks_like_host(parts[0])) {
    if (!IsDomain(parts[0])) return Fail(error, "has a malformed registry host");
    out.domain = std::string(parts[0]);
    first_path = 1;
  }
  for (size_t i = first_path; i < parts.size(); ++i) {
    if (!IsPathComponent(parts[i])) {
      return Fail(error,
                  "has a malformed repository name (lower-case letters, digits and . _ - only)");
    }
  }
  out.name = std::string(rest);
  if (out.tag.empty() && out.digest.empty()) out.tag = "latest";
  return out;
}

}  // namespace gpunex
