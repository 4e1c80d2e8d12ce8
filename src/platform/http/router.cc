#include "platform/http/router.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <set>
#include <utility>

#include "common/log.h"
#include "platform/http/metrics.h"

namespace gpunex::platform::http {
namespace {

// Splits "/a/b/" into {"a", "b", ""}: empty segments are kept so that they never match a
// parameter and "/a/b/" stays distinct from "/a/b".
std::vector<std::string_view> SplitPath(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  std::vector<std::string_view> out;
  for (;;) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// Metric label for a method: request methods are client-chosen, so anything unusual is
// folded into "other" to keep the label set bounded.
std::string_view MethodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) {
    if (method == known) return known;
  }
  return "other";
}

[[noreturn]] void BadRoute(std::string_view method, std::string_view pattern,
                           std::string_view why) {
  LogError("http.bad_route", {{"method", method}, {"pattern", pattern}, {"error", why}});
  std::abort();
}

}  // namespace

bool MatchPattern(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string>* params) {
  const std::vector<std::string_view> want = SplitPath(pattern);
  const std::vector<std::string_view> got = SplitPath(path);
  if (want.size() != got.size()) return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool is_param = want[i].size() >= 2 && want[i].front() == '{' && want[i].back() == '}';
    if (is_param ? got[i].empty() : want[i] != got[i]) return false;
    if (is_param) found[std::string(want[i].substr(1, want[i].size() - 2))] = got[i];
  }
  *params = std::move(found);
  return true;
}

void Router::SetGuard(std::shared_ptr<const Guard> guard) {
  if (guard == nullptr || guard_ != nullptr || !routes_.empty()) {
    LogError("http.bad_guard", {{"error", "a guard is set once, before the first route"}});
    std::abort();
  }
  guard_ = std::move(guard);
}

void Router::Add(std::string method, std::string_view pattern, std::string_view access,
                 Handler handler) {
  if (pattern.empty() || pattern.front() != '/') {
    BadRoute(method, pattern, "pattern must start with '/'");
  }
  if (guard_ != nullptr && !guard_->Knows(access)) {
    BadRoute(method, pattern, "the guard does not know the access \"" + std::string(access) + "\"");
  }
  Route route{std::move(method), std::string(pattern), std::string(access), {}, std::move(handler)};
  std::set<std::string_view> names;
  for (std::string_view seg : SplitPath(pattern)) {
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}') {
      std::string_view name = seg.substr(1, seg.size() - 2);
      if (name.empty() || name.find_first_of("{}") != std::string_view::npos) {
        BadRoute(route.method, pattern, "bad parameter name");
      }
      if (!names.insert(name).second) BadRoute(route.method, pattern, "repeated parameter name");
      route.segments.push_back({true, std::string(name)});
    } else {
      if (seg.find_first_of("{}") != std::string_view::npos) {
        BadRoute(route.method, pattern, "braces must enclose a whole segment");
      }
      route.segments.push_back({false, std::string(seg)});
    }
  }
  for (const Route& other : routes_) {
    if (other.method != route.method || other.segments.size() != route.segments.size()) continue;
    bool same = true;
    for (size_t i = 0; same && i < route.segments.size(); ++i) {
      const Segment& a = route.segments[i];
      const Segment& b = other.segments[i];
      same = a.is_param == b.is_param && (a.is_param || a.text == b.text);
    }
    if (same) BadRoute(route.method, pattern, "duplicate route");
  }
  routes_.push_back(std::move(route));
}

std::vector<Router::RouteInfo> Router::Routes() const {
  std::vector<RouteInfo> out;
  out.reserve(routes_.size());
  for (const Route& r : routes_) out.push_back({r.method, r.pattern, r.access});
  return out;
}

bool Router::Match(const Route& route, const std::vector<std::string_view>& segments,
                   std::map<std::string, std::string>* params) {
  if (route.segments.size() != segments.size()) return false;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = route.segments[i];
    if (seg.is_param ? segments[i].empty() : seg.text != segments[i]) return false;
  }
  params->clear();
  for (size_t i = 0; i < segments.size(); ++i) {
    if (route.segments[i].is_param) (*params)[route.segments[i].text] = segments[i];
  }
  return true;
}

bool Router::MoreSpecific(const Route& a, const Route& b) {
  for (size_t i = 0; i < a.segments.size() && i < b.segments.size(); ++i) {
    if (a.segments[i].is_param != b.segments[i].is_param) return !a.segments[i].is_param;
  }
  return false;
}

Response Router::RunHandler(const Route& route, Request& req) {
  try {
    return route.handler(req);
  } catch (const std::exception& e) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"route", req.route}, {"error", e.what()}});
  } catch (...) {
    LogError("http.handler_exception",
             {{"method", req.method}, {"route", req.route}, {"error", "unknown exception"}});
  }
  return ErrorResponse(Internal("an internal error occurred"));
}

Response Router::Dispatch(Request& req) const {
  const auto start = std::chrono::steady_clock::now();
  req.params.clear();
  req.route.clear();

  const std::vector<std::string_view> segments = SplitPath(req.path);
  const Route* chosen = nullptr;         // the most specific match with req.method
  const Route* most_specific = nullptr;  // the most specific match with any method
  std::set<std::string> allow;
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> chosen_params;
  for (const Route& route : routes_) {
    if (!Match(route, segments, &params)) continue;
    allow.insert(route.method);
    if (most_specific == nullptr || MoreSpecific(route, *most_specific)) most_specific = &route;
    if (route.method == req.method && (chosen == nullptr || MoreSpecific(route, *chosen))) {
      chosen = &route;
      chosen_params = std::move(params);
    }
  }

  Response resp;
  std::string_view route_label = "unmatched";
  if (chosen != nullptr) {
    req.params = std::move(chosen_params);
    req.route = chosen->pattern;
    route_label = chosen->pattern;
    if (guard_ == nullptr) {
      resp = RunHandler(*chosen, req);
    } else {
      const Handler handler = [chosen](Request& r) { return RunHandler(*chosen, r); };
      try {
        resp = guard_->Run(req, chosen->access, handler);
      } catch (const std::exception& e) {
        LogError("http.guard_exception",
                 {{"method", req.method}, {"route", req.route}, {"error", e.what()}});
        resp = ErrorResponse(Internal("an internal error occurred"));
      } catch (...) {
        LogError("http.guard_exception",
                 {{"method", req.method}, {"route", req.route}, {"error", "unknown exception"}});
        resp = ErrorResponse(Internal("an internal error occurred"));
      }
    }
  } else if (most_specific != nullptr) {
    route_label = most_specific->pattern;
    std::string allow_value;
    for (const std::string& m : allow) {
      if (!allow_value.empty()) allow_value += ", ";
      allow_value += m;
    }
    resp = ProtocolErrorResponse(405, "method_not_allowed",
                                 "the resource does not support this method");
    resp.SetHeader("Allow", std::move(allow_value));
  } else {
    resp = ErrorResponse(NotFound("no such resource"));
  }

  if (metrics_ == nullptr) return resp;
  // A deferred response is observed when its answer comes.
  // The label is a route's pattern (or a literal), which lives as long as the router.
  return std::move(resp).Then([metrics = metrics_, method = MethodLabel(req.method),
                               route = route_label, start](Response r) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    metrics->ObserveRequest(method, route, r.status, elapsed.count());
    return r;
  });
}

}  // namespace gpunex::platform::http
