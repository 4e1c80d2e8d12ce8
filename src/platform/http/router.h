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
// Thread-safety: Add() must not run concurrently with anything else (register routes at
// startup); Dispatch() is const and may run concurrently from many threads.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "platform/http/http.h"

namespace gpunex::platform::http {

class Metrics;

class Router {
 public:
  // `metrics`, when not null, receives one observation per dispatched request and must
  // outlive the router.
  explicit Router(Metrics* metrics = nullptr) : metrics_(metrics) {}

  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Registers `handler` for `method` ("GET", "POST", ...) on `pattern`.
  // REQUIRES: `pattern` starts with '/', every "{name}" segment has a non-empty name
  // unique within the pattern, and no route with the same method and the same shape
  // (same literals and parameter positions) was added before. Violations abort: they are
  // programming errors found at startup.
  void Add(std::string method, std::string_view pattern, Handler handler);

  // Finds the route for req.method and req.path, fills req.params and req.route and
  // runs its handler. Unknown path: 404 (ErrorResponse of NotFound). Known path, other
  // method: 405 "method_not_allowed" with Allow. An exception from the handler is logged
  // and answered with a 500 that does not contain its text. The request is reported to
  // the metrics with its route pattern, or "unmatched" when no pattern matched.
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
    std::vector<Segment> segments;
    Handler handler;
  };

  // Whether `route` matches `segments`; fills `params` when it does.
  static bool Match(const Route& route, const std::vector<std::string_view>& segments,
                    std::map<std::string, std::string>* params);
  // Whether `a` is more specific than `b`, both matching the same path.
  static bool MoreSpecific(const Route& a, const Route& b);

  Metrics* const metrics_;
  std::vector<Route> routes_;
};

}  // namespace gpunex::platform::http
