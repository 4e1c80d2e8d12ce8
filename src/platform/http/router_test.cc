#include "platform/http/router.h"

#include <gtest/gtest.h>

#include <any>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "platform/http/metrics.h"

namespace gpunex::platform::http {
namespace {

Request Req(std::string method, std::string path) {
  Request req;
  req.method = std::move(method);
  req.path = std::move(path);
  req.target = req.path;
  return req;
}

// A handler that answers with the name it was registered under.
Handler Named(std::string name) {
  return [name](Request&) { return Response::Text(200, name); };
}

std::string ErrorCode(const Response& r) {
  auto body = ParseJson(r.body);
  if (!body.ok()) return "<not json>";
  return std::string(body->at("error").at("code").as_string());
}

TEST(Router, BindsParams) {
  Router router;
  std::map<std::string, std::string> seen_params;
  std::string seen_route;
  router.Add("POST", "/api/v1/provider-applications/{id}/decision", [&](Request& req) {
    seen_params = req.params;
    seen_route = req.route;
    return Response::NoContent();
  });
  Request req = Req("POST", "/api/v1/provider-applications/app_42/decision");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(seen_params, (std::map<std::string, std::string>{{"id", "app_42"}}));
  EXPECT_EQ(seen_route, "/api/v1/provider-applications/{id}/decision");
  EXPECT_EQ(req.Param("id"), "app_42");
}

TEST(Router, BindsSeveralParams) {
  Router router;
  router.Add("PATCH", "/api/v1/machines/{id}/gpus/{gpu_id}", [](Request& req) {
    return Response::Text(200, req.Param("id") + "," + req.Param("gpu_id"));
  });
  Request req = Req("PATCH", "/api/v1/machines/m1/gpus/g 2");
  EXPECT_EQ(router.Dispatch(req).body, "m1,g 2");
}

TEST(Router, ParamNeedsNonEmptySegment) {
  Router router;
  router.Add("GET", "/machines/{id}", Named("machine"));
  Request req = Req("GET", "/machines/");
  EXPECT_EQ(router.Dispatch(req).status, 404);
  req = Req("GET", "/machines/a/b");
  EXPECT_EQ(router.Dispatch(req).status, 404);
  req = Req("GET", "/machines");
  EXPECT_EQ(router.Dispatch(req).status, 404);
}

TEST(Router, LiteralBeatsParam) {
  Router router;
  // Registered param-first on purpose: precedence does not depend on order.
  router.Add("GET", "/api/v1/machines/{id}", Named("by-id"));
  router.Add("GET", "/api/v1/machines/summary", Named("summary"));
  router.Add("GET", "/api/v1/{kind}/summary", Named("kind-summary"));
  Request req = Req("GET", "/api/v1/machines/summary");
  EXPECT_EQ(router.Dispatch(req).body, "summary");
  EXPECT_TRUE(req.params.empty());
  req = Req("GET", "/api/v1/machines/m7");
  EXPECT_EQ(router.Dispatch(req).body, "by-id");
  req = Req("GET", "/api/v1/payouts/summary");
  EXPECT_EQ(router.Dispatch(req).body, "kind-summary");
  EXPECT_EQ(req.Param("kind"), "payouts");
}

TEST(Router, EarlierLiteralSegmentDecides) {
  Router router;
  router.Add("GET", "/a/{x}/c", Named("literal-first"));
  router.Add("GET", "/{y}/b/c", Named("param-first"));
  Request req = Req("GET", "/a/b/c");
  EXPECT_EQ(router.Dispatch(req).body, "literal-first");
}

TEST(Router, UnknownPathIs404) {
  Router router;
  router.Add("GET", "/healthz", Named("ok"));
  Request req = Req("GET", "/nope");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorCode(r), "not_found");
  EXPECT_EQ(req.route, "");
}

TEST(Router, WrongMethodIs405WithAllow) {
  Router router;
  router.Add("GET", "/api/v1/api-keys", Named("list"));
  router.Add("POST", "/api/v1/api-keys", Named("create"));
  router.Add("DELETE", "/api/v1/api-keys/{id}", Named("delete"));
  Request req = Req("PUT", "/api/v1/api-keys");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.GetHeader("Allow"), "GET, POST");
  EXPECT_EQ(ErrorCode(r), "method_not_allowed");
  EXPECT_EQ(r.GetHeader("Content-Type"), "application/json");
}

TEST(Router, MethodPicksAmongMatchingPatterns) {
  Router router;
  router.Add("POST", "/machines/search", Named("search"));
  router.Add("GET", "/machines/{id}", Named("get"));
  Request req = Req("GET", "/machines/search");
  EXPECT_EQ(router.Dispatch(req).body, "get");
  req = Req("DELETE", "/machines/search");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.GetHeader("Allow"), "GET, POST");
}

TEST(Router, RootAndTrailingSlash) {
  Router router;
  router.Add("GET", "/", Named("root"));
  router.Add("GET", "/a", Named("a"));
  Request req = Req("GET", "/");
  EXPECT_EQ(router.Dispatch(req).body, "root");
  req = Req("GET", "/a/");
  EXPECT_EQ(router.Dispatch(req).status, 404);
}

TEST(Router, ExceptionBecomes500WithoutItsText) {
  Router router;
  router.Add("GET", "/boom", [](Request&) -> Response {
    throw std::runtime_error("secret database password in message");
  });
  router.Add("GET", "/boom2", [](Request&) -> Response { throw 42; });
  for (const char* path : {"/boom", "/boom2"}) {
    Request req = Req("GET", path);
    Response r = router.Dispatch(req);
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(ErrorCode(r), "internal");
    EXPECT_EQ(r.body.find("secret"), std::string::npos);
  }
}

TEST(Router, ReportsToMetrics) {
  Metrics metrics;
  Router router(&metrics);
  router.Add("GET", "/api/v1/machines/{id}", Named("m"));
  Request req = Req("GET", "/api/v1/machines/m1");
  router.Dispatch(req);
  req = Req("GET", "/api/v1/machines/m2");
  router.Dispatch(req);
  req = Req("GET", "/elsewhere");
  router.Dispatch(req);
  req = Req("BREW", "/api/v1/machines/m1");
  router.Dispatch(req);
  std::string text = metrics.Render();
  EXPECT_NE(
      text.find(
          "http_requests_total{method=\"GET\",route=\"/api/v1/machines/{id}\",status=\"200\"} 2\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("http_requests_total{method=\"other\",route=\"/api/v1/machines/{id}\","
                      "status=\"405\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("/api/v1/machines/m1"), std::string::npos);  // never raw paths
}

TEST(Router, ReportsADeferredResponseWhenItsAnswerComes) {
  Metrics metrics;
  Router router(&metrics);
  std::optional<Responder> kept;
  router.Add("POST", "/api/v1/jobs", [&](Request&) {
    auto [resp, responder] = Response::Defer();
    kept = responder;
    return std::move(resp);
  });
  Request req = Req("POST", "/api/v1/jobs");
  Response resp = router.Dispatch(req);
  ASSERT_NE(resp.deferred, nullptr);
  const std::string series =
      "http_requests_total{method=\"POST\",route=\"/api/v1/jobs\",status=\"201\"} 1\n";
  EXPECT_EQ(metrics.Render().find("route=\"/api/v1/jobs\""), std::string::npos);
  ASSERT_TRUE(kept.has_value());
  (*kept)(Response::Text(201, "placed"));
  Response answer = resp.deferred->Finish();
  EXPECT_EQ(answer.status, 201);
  EXPECT_EQ(answer.body, "placed");
  EXPECT_NE(metrics.Render().find(series), std::string::npos) << metrics.Render();
}

TEST(Router, AsHandlerDispatches) {
  Router router;
  router.Add("GET", "/x", Named("x"));
  Handler h = router.AsHandler();
  Request req = Req("GET", "/x");
  EXPECT_EQ(h(req).body, "x");
}

// Lets "open" routes through, refuses "closed" ones with 403, and records what it saw.
class FakeGuard final : public Guard {
 public:
  bool Knows(std::string_view access) const override {
    return access == "open" || access == "closed";
  }
  Response Run(Request& req, std::string_view access, const Handler& handler) const override {
    seen_route = req.route;
    seen_params = req.params;
    if (access != "open") return ErrorResponse(PermissionDenied("closed"));
    req.caller = std::string("caller-of-" + req.route);
    Response resp = handler(req);
    handler_status = resp.status;
    return resp;
  }
  mutable std::string seen_route;
  mutable std::map<std::string, std::string> seen_params;
  mutable int handler_status = 0;
};

TEST(Router, GuardDecidesBeforeTheHandlerRuns) {
  Router router;
  auto guard = std::make_shared<FakeGuard>();
  router.SetGuard(guard);
  int ran = 0;
  std::string caller;
  router.Add("GET", "/open/{id}", "open", [&](Request& req) {
    ++ran;
    caller = std::any_cast<std::string>(req.caller);
    return Response::Text(200, req.Param("id"));
  });
  router.Add("POST", "/closed/{id}", "closed", [&](Request&) {
    ++ran;
    return Response::NoContent();
  });
  Request req = Req("POST", "/closed/c1");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(ran, 0) << "a refused request never reaches the handler";
  EXPECT_EQ(guard->seen_route, "/closed/{id}");
  EXPECT_EQ(guard->seen_params, (std::map<std::string, std::string>{{"id", "c1"}}));

  req = Req("GET", "/open/o1");
  r = router.Dispatch(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "o1");
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(caller, "caller-of-/open/{id}") << "what the guard learned reaches the handler";

  // 404 and 405 need no guard.
  req = Req("GET", "/elsewhere");
  EXPECT_EQ(router.Dispatch(req).status, 404);
  req = Req("DELETE", "/open/o1");
  EXPECT_EQ(router.Dispatch(req).status, 405);
  EXPECT_EQ(ran, 1);
}

TEST(Router, GuardSeesAHandlerExceptionAsA500) {
  Router router;
  auto guard = std::make_shared<FakeGuard>();
  router.SetGuard(guard);
  router.Add("GET", "/boom", "open",
             [](Request&) -> Response { throw std::runtime_error("secret"); });
  Request req = Req("GET", "/boom");
  Response r = router.Dispatch(req);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(guard->handler_status, 500);
  EXPECT_EQ(r.body.find("secret"), std::string::npos);
}

TEST(Router, ListsRoutesWithTheirAccess) {
  Router router;
  router.SetGuard(std::make_shared<FakeGuard>());
  router.Add("GET", "/a", "open", Named("a"));
  router.Add("POST", "/b/{id}", "closed", Named("b"));
  std::vector<Router::RouteInfo> routes = router.Routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0].method, "GET");
  EXPECT_EQ(routes[0].pattern, "/a");
  EXPECT_EQ(routes[0].access, "open");
  EXPECT_EQ(routes[1].method, "POST");
  EXPECT_EQ(routes[1].pattern, "/b/{id}");
  EXPECT_EQ(routes[1].access, "closed");
}

TEST(RouterDeathTest, GuardedRoutesDeclareAnAccessTheGuardKnows) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Router router;
  router.SetGuard(std::make_shared<FakeGuard>());
  EXPECT_DEATH(router.Add("GET", "/a", Named("a")), "does not know the access");
  EXPECT_DEATH(router.Add("GET", "/a", "opne", Named("a")), "does not know the access");
  router.Add("GET", "/a", "open", Named("a"));
  EXPECT_DEATH(router.SetGuard(std::make_shared<FakeGuard>()), "before the first route");
  Router unguarded;
  unguarded.Add("GET", "/a", Named("a"));
  EXPECT_DEATH(unguarded.SetGuard(std::make_shared<FakeGuard>()), "before the first route");
}

TEST(RouterDeathTest, DuplicateRouteAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Router router;
  router.Add("GET", "/a/{id}", Named("a"));
  EXPECT_DEATH(router.Add("GET", "/a/{other}", Named("b")), "duplicate route");
  EXPECT_DEATH(router.Add("GET", "a", Named("b")), "must start with");
  EXPECT_DEATH(router.Add("GET", "/a/{x}/{x}", Named("b")), "repeated");
  EXPECT_DEATH(router.Add("GET", "/a/x{y}", Named("b")), "braces");
}

TEST(MatchPattern, MatchesAsTheRouterDoes) {
  std::map<std::string, std::string> params{{"stale", "x"}};
  EXPECT_TRUE(MatchPattern("/r/{id}/ports/{port}", "/r/rnt_1/ports/22", &params));
  EXPECT_EQ(params, (std::map<std::string, std::string>{{"id", "rnt_1"}, {"port", "22"}}));
  EXPECT_FALSE(MatchPattern("/r/{id}/ports/{port}", "/r//ports/22", &params));
  EXPECT_FALSE(MatchPattern("/r/{id}/ports/{port}", "/r/rnt_1/ports/22/", &params));
  EXPECT_FALSE(MatchPattern("/r/{id}/ports/{port}", "/r/rnt_1/port/22", &params));
  EXPECT_TRUE(MatchPattern("/a/b", "/a/b", &params));
  EXPECT_TRUE(params.empty());
}

}  // namespace
}  // namespace gpunex::platform::http
