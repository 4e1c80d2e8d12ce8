// Router: maps a request's method and decoded path to the handler registered for a
// route pattern such as "/api/v1/provider-applications/{id}/decision".
//
// A pattern is a '/'-separated list of segments; a segment "{name}" matches exactly one
// non-empty path segment and binds it to req.params["name"], any other segment matches
// itself literally. When several patterns match a path, the one whose first differing
// segment is literal wins ("/machines/search" beats "/machines/{id}"). Among the patterns
// that match the path, the most specific one that has a handler for the request's method
// is chosen; if none has, the answer is 405 with an Allow header naming the methods of
// all matching patterns. Paths are split after percent-decoding, so "%2F" inside a
// segment separates segments like "/" does.
//
// A guarded router (SetGuard) runs no handler directly: every route declares its access
// when it is added (a name such as "public" or "provider" that the guard knows), and every
// request that reaches a route goes through the guard, which authenticates and refuses
// before the handler runs. Routes() lists the routes with their access.
//
// Thread-safety: SetGuard() and Add() must not run concurrently with anything else
// (register routes at startup); Dispatch() and Routes() are const and may run
// concurrently from many threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platform/http/http.h"

namespace gpunex::platform::http {

// Whether `path` matches the route pattern `pattern` as the router matches it (one
// "{name}" segment for one non-empty segment); fills `params` when it does. For the
// server's own pattern routes (ServerOptions::websocket_routes).
bool MatchPattern(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string>* params);

class Metrics;

// Stands between a router and its handlers (Router::SetGuard).
// Thread-safety: Run() is called concurrently from many threads.
class Guard {
 public:
  virtual ~Guard() = default;

  // Whether a route may declare `access`. Router::Add aborts on an access the guard does
  // not know, so that a typo fails at startup instead of opening a route.
  virtual bool Knows(std::string_view access) const = 0;

  // Answers `req`, matched to a route that declared `access` (req.params and req.route
  // are filled): with handler(req) when the caller may reach the route, else with a
  // refusal of its own. `handler` does not throw (the router answers a handler's
  // exception with a 500).
  virtual Response Run(Request& req, std::string_view access, const Handler& handler) const = 0;
};

class Router {
 public:
  // `metrics`, when not null, receives one observation per dispatched request and must
  // outlive the router.
  explicit Router(Metrics* metrics = nullptr) : metrics_(metrics) {}

  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Puts `guard` in front of every handler, and makes every route declare its access.
  // REQUIRES: no route was added yet, and no guard was set (aborts otherwise).
  void SetGuard(std::shared_ptr<const Guard> guard);

  // Registers `handler` for `method` ("GET", "POST", ...) on `pattern`, reachable by the
  // callers that `access` names (the guard's business; "" on a router without a guard).
  // REQUIRES: `pattern` starts with '/', every "{name}" segment has a non-empty name
  // unique within the pattern, and no route with the same method and the same shape
  // (same literals and parameter positions) was added before; on a guarded router,
  // the guard knows `access`. Violations abort: they are programming errors found at
  // startup.
  void Add(std::string method, std::string_view pattern, std::string_view access, Handler handler);
  // A route without a declared access. REQUIRES: the router has no guard.
  void Add(std::string method, std::string_view pattern, Handler handler) {
    Add(std::move(method), pattern, "", std::move(handler));
  }

  // A registered route as Routes() lists it.
  struct RouteInfo {
    std::string method;
    std::string pattern;
    std::string access;
  };
  // Every route, in the order they were added.
  std::vector<RouteInfo> Routes() const;

  // Finds the route for req.method and req.path, fills req.params and req.route and
  // runs its handler, through the guard when there is one. Unknown path: 404 (ErrorResponse of
  // NotFound). Known path, other method: 405 "method_not_allowed" with Allow. An exception from the
  // handler is logged and answered with a 500 that does not contain its text. The request is
  // reported to the metrics with its route pattern, or "unmatched" when no pattern matched.
  Response Dispatch(Request& req) const;

  // The router as a Handler for Server::Create. The router must outlive the handler.
  Handler AsHandler() const {
    return [this](Request& req) { return Dispatch(req); };
  }

 private:
  struct Segment {
    bool is_param;
    std::string text;  // the literal, or the parameter name
  };
  struct Route {
    std::string method;
    std::string pattern;
    std::string access;
    std::vector<Segment> segments;
    Handler handler;
  };

  // Whether `route` matches `segments`; fills `params` when it does.
  static bool Match(const Route& route, const std::vector<std::string_view>& segments,
                    std::map<std::string, std::string>* params);
  // Whether `a` is more specific than `b`, both matching the same path.
  static bool MoreSpecific(const Route& a, const Route& b);

  // The route's handler; an exception becomes a logged 500.
  static Response RunHandler(const Route& route, Request& req);

  Metrics* const metrics_;
  std::shared_ptr<const Guard> guard_;
  std::vector<Route> routes_;
};

}  // namespace gpunex::platform::http
