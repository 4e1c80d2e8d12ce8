#include "platform/web/static_site.h"

#include <utility>
#include <vector>

#include "common/ids.h"

namespace gpunex::platform::web {
namespace {

constexpr std::string_view kAssetsPrefix = "/assets/";

// Shown for every page when gpunexd was built without web/dist.
constexpr std::string_view kNotBuiltPage =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
    "content=\"width=device-width, initial-scale=1\"><title>gpunex: dashboard not "
    "built</title></head><body><h1>gpunex</h1><p>The web dashboard is not built into this "
    "gpunexd.</p><p>Build it with <code>scripts/build-web.sh</code>, "
    "then rebuild gpunexd. The REST API under <code>/api/v1</code> works without "
    "it.</p></body></html>\n";

bool IsHtml(std::string_view content_type) { return content_type.starts_with("text/html"); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view ContentTypeFor(std::string_view path) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".webmanifest", "application/manifest+json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".woff", "font/woff"},
      {".txt", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"},
  };
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    const std::string_view ext = path.substr(dot);
    for (const auto& [e, type] : kTypes) {
      if (e == ext) return type;
    }
  }
  return "application/octet-stream";
}

bool EtagMatches(std::string_view if_none_match, std::string_view etag) {
  if (Trim(if_none_match) == "*") return true;
  const std::string_view opaque = etag.starts_with("W/") ? etag.substr(2) : etag;
  while (!if_none_match.empty()) {
    const size_t comma = if_none_match.find(',');
    std::string_view one = Trim(if_none_match.substr(0, comma));
    if (one.starts_with("W/")) one.remove_prefix(2);
    if (!one.empty() && one == opaque) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

StaticSite::StaticSite(std::span<const EmbeddedFile> files) {
  for (const EmbeddedFile& f : files) {
    // The first 128 bits of SHA-256 identify the content well enough for caching.
    files_.emplace(std::string(f.path), File{f.data, ContentTypeFor(f.path),
                                             "\"" + Sha256Hex(f.data).substr(0, 32) + "\""});
  }
}

http::Response StaticSite::Send(const http::Request& req, const File& f,
                                std::string_view cache_control) const {
  http::Response resp;
  if (EtagMatches(req.Header("if-none-match"), f.etag)) {
    resp.status = 304;
  } else {
    resp.status = 200;
    resp.body = std::string(f.data);
    resp.SetHeader("Content-Type", std::string(f.content_type));
  }
  resp.SetHeader("ETag", f.etag);
  resp.SetHeader("Cache-Control", std::string(cache_control));
  if (IsHtml(f.content_type)) {
    resp.SetHeader("Content-Security-Policy", std::string(kContentSecurityPolicy));
  }
  return resp;
}

http::Response StaticSite::Serve(const http::Request& req) const {
  if (!built()) {
    http::Response resp =
        http::Response::Text(200, std::string(kNotBuiltPage), "text/html; charset=utf-8");
    resp.SetHeader("Cache-Control", "no-store");
    resp.SetHeader("Content-Security-Policy", std::string(kContentSecurityPolicy));
    return resp;
  }
  if (auto it = files_.find(req.path); it != files_.end()) {
    const bool hashed = req.path.starts_with(kAssetsPrefix);
    return Send(req, it->second, hashed ? kImmutable : kRevalidate);
  }
  if (req.path.starts_with(kAssetsPrefix)) {
    // An old page asking for an asset of another build: HTML here would only confuse it.
    http::Response resp = http::ErrorResponse(NotFound("no such file"));
    resp.SetHeader("Cache-Control", "no-store");
    return resp;
  }
  return Send(req, files_.find("/index.html")->second, kRevalidate);
}

std::shared_ptr<const StaticSite> EmbeddedSite() {
  static const std::shared_ptr<const StaticSite> site =
      std::make_shared<StaticSite>(EmbeddedFiles());
  return site;
}

void RegisterRoutes(http::Router& router, std::shared_ptr<const StaticSite> site,
                    std::string_view access, http::Handler others) {
  http::Handler serve = [site = std::move(site), others = std::move(others)](http::Request& req) {
    http::Response without_site = others(req);
    const bool api = req.path == "/api" || req.path.starts_with("/api/");
    if (api || without_site.status != 404) return without_site;
    if (req.method != "GET" && req.method != "HEAD") {
      http::Response resp = http::ProtocolErrorResponse(
          405, "method_not_allowed", "the dashboard's pages only answer GET and HEAD");
      resp.SetHeader("Allow", "GET, HEAD");
      return resp;
    }
    return site->Serve(req);
  };
  std::vector<std::string> patterns = {"/"};
  std::string pattern;
  for (int depth = 1; depth <= kMaxDepth; ++depth) {
    pattern += "/{p" + std::to_string(depth) + "}";
    patterns.push_back(pattern);
    patterns.push_back(pattern + "/");
  }
  for (std::string_view method : kMethods) {
    for (const std::string& p : patterns) router.Add(std::string(method), p, access, serve);
  }
}

}  // namespace gpunex::platform::web
