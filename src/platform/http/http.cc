#include "platform/http/http.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <utility>

namespace gpunex::platform::http {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Request::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

std::string Request::Cookie(std::string_view name) const {
  // RFC 6265 section 5.4: "a=1; b=2". Values may be wrapped in double quotes.
  const std::string all = Header("cookie");
  std::string_view rest(all);
  while (!rest.empty()) {
    size_t end = rest.find(';');
    std::string_view part = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    if (TrimSpace(part.substr(0, eq)) != name) continue;
    std::string_view value = TrimSpace(part.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
  return {};
}

std::string Request::Param(std::string_view name) const {
  auto it = params.find(std::string(name));
  return it == params.end() ? std::string() : it->second;
}

std::string Request::Query(std::string_view name) const {
  auto it = query.find(std::string(name));
  return it == query.end() ? std::string() : it->second;
}

std::vector<std::string> Request::QueryValues(std::string_view name) const {
  std::vector<std::string> out;
  const size_t qmark = target.find('?');
  if (qmark == std::string::npos) return out;
  std::string_view qs = std::string_view(target).substr(qmark + 1);
  while (!qs.empty()) {
    const size_t amp = qs.find('&');
    const std::string_view pair = qs.substr(0, amp);
    qs = amp == std::string_view::npos ? std::string_view() : qs.substr(amp + 1);
    const size_t eq = pair.find('=');
    std::optional<std::string> key = PercentDecode(pair.substr(0, eq), true);
    if (!key || *key != name) continue;
    std::optional<std::string> value = PercentDecode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (value) out.push_back(std::move(*value));
  }
  return out;
}

void Response::SetHeader(std::string name, std::string value) {
  for (auto& [k, v] : headers) {
    if (std::equal(k.begin(), k.end(), name.begin(), name.end(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

std::string Response::GetHeader(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (std::equal(k.begin(), k.end(), name.begin(), name.end(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      return v;
    }
  }
  return {};
}

Response Response::Json(int status, const json::value& body) {
  Response r;
  r.status = status;
  r.body = ToJsonText(body);
  r.SetHeader("Content-Type", "application/json");
  return r;
}

Response Response::Text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  r.SetHeader("Content-Type", std::move(content_type));
  return r;
}

Response Response::NoContent() {
  Response r;
  r.status = 204;
  return r;
}

std::pair<Response, Responder> Response::Defer() {
  Response placeholder;
  placeholder.status = 0;
  placeholder.deferred = std::make_shared<Deferred>();
  return {std::move(placeholder),
          Responder(std::make_shared<Responder::Once>(placeholder.deferred))};
}

Response Response::Then(std::function<Response(Response)> f) && {
  if (!deferred) return f(std::move(*this));
  deferred->AddThen(std::move(f));
  return std::move(*this);
}

struct Responder::Once {
  explicit Once(std::shared_ptr<Deferred> d) : deferred(std::move(d)) {}
  Once(const Once&) = delete;
  Once& operator=(const Once&) = delete;
  // The 500 is built only for a Responder that never answered (not for every job).
  ~Once() {
    if (!used) deferred->Answer(ErrorResponse(Internal("an internal error occurred")));
  }
  const std::shared_ptr<Deferred> deferred;
  std::atomic<bool> used{false};
};

void Responder::operator()(Response resp) const {
  once_->used = true;
  once_->deferred->Answer(std::move(resp));
}

void Deferred::Answer(Response resp) {
  std::function<void()> wake;
  {
    MutexLock lock(&mu_);
    if (answered_) return;
    answered_ = true;
    answer_ = std::move(resp);
    wake = std::move(wake_);
  }
  if (wake) wake();
}

void Deferred::OnAnswer(std::function<void()> wake) {
  {
    MutexLock lock(&mu_);
    if (!answered_) {
      wake_ = std::move(wake);
      return;
    }
  }
  wake();
}

Response Deferred::Finish() {
  Response resp;
  std::vector<std::function<Response(Response)>> thens;
  {
    MutexLock lock(&mu_);
    if (answer_) resp = std::move(*answer_);
    answer_.reset();
    thens.swap(thens_);
  }
  for (auto& f : thens) resp = std::move(resp).Then(std::move(f));
  return resp;
}

void Deferred::AddThen(std::function<Response(Response)> f) {
  MutexLock lock(&mu_);
  thens_.push_back(std::move(f));
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kValidationFailed:
      return 422;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kGone:
      return 410;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kPayloadTooLarge:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kAborted:
      return 503;
    case StatusCode::kOutOfRange:
      return 422;
    case StatusCode::kOutcomeUnknown:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

Response ErrorResponse(const Status& status) {
  json::object err;
  err["code"] = StatusCodeName(status.code());
  err["message"] = status.message();
  if (!status.fields().empty()) {
    json::object fields;
    for (const auto& [k, v] : status.fields()) fields[k] = v;
    err["fields"] = std::move(fields);
  }
  Response r =
      Response::Json(HttpStatusFor(status.code()), json::object{{"error", std::move(err)}});
  if (status.code() == StatusCode::kUnauthenticated) r.SetHeader("WWW-Authenticate", "Bearer");
  return r;
}

Response ProtocolErrorResponse(int http_status, std::string_view code, std::string_view message) {
  json::object err;
  err["code"] = code;
  err["message"] = message;
  return Response::Json(http_status, json::object{{"error", std::move(err)}});
}

std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Status ParseTarget(std::string_view target, std::string* path,
                   std::map<std::string, std::string>* query) {
  if (target.empty() || target.front() != '/') {
    return InvalidArgument("the request target must be an absolute path");
  }
  size_t qmark = target.find('?');
  std::optional<std::string> decoded = PercentDecode(target.substr(0, qmark), false);
  if (!decoded) return InvalidArgument("the request path has a malformed percent escape");
  if (decoded->find('\0') != std::string::npos) {
    return InvalidArgument("the request path contains a NUL byte");
  }
  // Segments are checked after decoding, so "%2e%2e" and "..%2f" are caught too.
  std::string_view rest(*decoded);
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    if (rest.substr(0, slash) == "..") {
      return InvalidArgument("the request path must not contain '..' segments");
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  query->clear();
  if (qmark != std::string_view::npos) {
    std::string_view qs = target.substr(qmark + 1);
    while (!qs.empty()) {
      size_t amp = qs.find('&');
      std::string_view pair = qs.substr(0, amp);
      qs = amp == std::string_view::npos ? std::string_view() : qs.substr(amp + 1);
      if (pair.empty()) continue;
      size_t eq = pair.find('=');
      std::optional<std::string> key = PercentDecode(pair.substr(0, eq), true);
      std::optional<std::string> value = PercentDecode(
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
      if (!key || !value) {
        return InvalidArgument("the query string has a malformed percent escape");
      }
      if (key->find('\0') != std::string::npos || value->find('\0') != std::string::npos) {
        return InvalidArgument("the query string contains a NUL byte");
      }
      (*query)[std::move(*key)] = std::move(*value);
    }
  }
  *path = std::move(*decoded);
  return Status::Ok();
}

}  // namespace gpunex::platform::http
