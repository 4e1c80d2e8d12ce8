#include "platform/web/static_site.h"

#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <string>

#include "platform/http/router.h"

namespace gpunex::platform::web {
namespace {

constexpr std::string_view kIndex =
    "<!doctype html><title>gpunex</title><script src=\"/assets/app-1a2b.js\"></script>";
constexpr std::string_view kScript = "console.log('<dashboard>')";
constexpr std::string_view kStyle = "body{margin:0}";
constexpr std::string_view kIcon = "<svg xmlns=\"http://www.w3.org/2000/svg\"/>";

const EmbeddedFile kFiles[] = {
    {"/index.html", kIndex},
    {"/assets/app-1a2b.js", kScript},
    {"/assets/app-3c4d.css", kStyle},
    {"/favicon.svg", kIcon},
};

http::Request Get(std::string path, std::string method = "GET") {
  http::Request req;
  req.method = std::move(method);
  req.path = path;
  req.target = std::move(path);
  return req;
}

TEST(StaticSite, ContentTypes) {
  EXPECT_EQ(ContentTypeFor("/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("/assets/a-1.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("/assets/a-1.css"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("/favicon.svg"), "image/svg+xml");
  EXPECT_EQ(ContentTypeFor("/assets/f.woff2"), "font/woff2");
  EXPECT_EQ(ContentTypeFor("/a.png"), "image/png");
  EXPECT_EQ(ContentTypeFor("/LICENSE"), "application/octet-stream");
  EXPECT_EQ(ContentTypeFor("/dir.js/file"), "application/octet-stream");
}

TEST(StaticSite, EtagComparison) {
  EXPECT_TRUE(EtagMatches("\"abc\"", "\"abc\""));
  EXPECT_TRUE(EtagMatches("W/\"abc\"", "\"abc\""));
  EXPECT_TRUE(EtagMatches("\"x\", W/\"abc\" ,\"y\"", "\"abc\""));
  EXPECT_TRUE(EtagMatches(" * ", "\"abc\""));
  EXPECT_FALSE(EtagMatches("", "\"abc\""));
  EXPECT_FALSE(EtagMatches("\"abd\"", "\"abc\""));
  EXPECT_FALSE(EtagMatches("abc", "\"abc\""));
}

TEST(StaticSite, ServesIndexWithPolicyAndRevalidation) {
  StaticSite site(kFiles);
  ASSERT_TRUE(site.built());
  http::Response r = site.Serve(Get("/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kIndex);
  EXPECT_EQ(r.GetHeader("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r.GetHeader("Cache-Control"), "no-cache");
  EXPECT_EQ(r.GetHeader("Content-Security-Policy"), kContentSecurityPolicy);
  EXPECT_NE(r.GetHeader("Content-Security-Policy").find("script-src 'self';"), std::string::npos);
  EXPECT_NE(r.GetHeader("Content-Security-Policy").find("frame-ancestors 'none'"),
            std::string::npos);
  const std::string etag = r.GetHeader("ETag");
  ASSERT_EQ(etag.size(), 34u);
  EXPECT_EQ(etag.front(), '"');
  EXPECT_EQ(etag.back(), '"');
  // /index.html by name is the same document.
  EXPECT_EQ(site.Serve(Get("/index.html")).GetHeader("ETag"), etag);
}

TEST(StaticSite, UnknownPagesFallBackToIndex) {
  StaticSite site(kFiles);
  for (std::string path :
       {"/provider", "/provider/overview", "/applications/app_1/", "/favicon.ico"}) {
    http::Response r = site.Serve(Get(path));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, kIndex) << path;
    EXPECT_EQ(r.GetHeader("Cache-Control"), "no-cache") << path;
    EXPECT_FALSE(r.GetHeader("Content-Security-Policy").empty()) << path;
  }
}

TEST(StaticSite, HashedAssetsAreImmutable) {
  StaticSite site(kFiles);
  http::Response js = site.Serve(Get("/assets/app-1a2b.js"));
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, kScript);
  EXPECT_EQ(js.GetHeader("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.GetHeader("Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_TRUE(js.GetHeader("Content-Security-Policy").empty());
  EXPECT_FALSE(js.GetHeader("ETag").empty());
  EXPECT_NE(js.GetHeader("ETag"), site.Serve(Get("/assets/app-3c4d.css")).GetHeader("ETag"));
  EXPECT_EQ(site.Serve(Get("/assets/app-3c4d.css")).GetHeader("Content-Type"),
            "text/css; charset=utf-8");

  // Unhashed files at the top are revalidated.
  http::Response icon = site.Serve(Get("/favicon.svg"));
  EXPECT_EQ(icon.GetHeader("Content-Type"), "image/svg+xml");
  EXPECT_EQ(icon.GetHeader("Cache-Control"), "no-cache");
}

TEST(StaticSite, MissingAssetIsNotFound) {
  StaticSite site(kFiles);
  http::Response r = site.Serve(Get("/assets/app-old.js"));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("\"not_found\""), std::string::npos);
  EXPECT_NE(r.GetHeader("Cache-Control"), "public, max-age=31536000, immutable");
}

TEST(StaticSite, IfNoneMatchGivesNotModified) {
  StaticSite site(kFiles);
  const std::string etag = site.Serve(Get("/assets/app-1a2b.js")).GetHeader("ETag");
  for (const std::string& inm : {etag, "W/" + etag, "\"other\", " + etag, std::string("*")}) {
    http::Request req = Get("/assets/app-1a2b.js");
    req.headers["if-none-match"] = inm;
    http::Response r = site.Serve(req);
    EXPECT_EQ(r.status, 304) << inm;
    EXPECT_TRUE(r.body.empty());
    EXPECT_EQ(r.GetHeader("ETag"), etag);
    EXPECT_EQ(r.GetHeader("Cache-Control"), "public, max-age=31536000, immutable");
  }
  http::Request stale = Get("/assets/app-1a2b.js");
  stale.headers["if-none-match"] = "\"0123\"";
  EXPECT_EQ(site.Serve(stale).status, 200);

  // The SPA fallback revalidates against index.html's tag.
  const std::string index_tag = site.Serve(Get("/")).GetHeader("ETag");
  http::Request page = Get("/provider");
  page.headers["if-none-match"] = index_tag;
  EXPECT_EQ(site.Serve(page).status, 304);
}

TEST(StaticSite, NotBuiltSaysHowToBuild) {
  StaticSite site({});
  EXPECT_FALSE(site.built());
  for (std::string path : {"/", "/provider", "/assets/app.js"}) {
    http::Response r = site.Serve(Get(path));
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.GetHeader("Content-Type"), "text/html; charset=utf-8");
    EXPECT_NE(r.body.find("scripts/build-web.sh"), std::string::npos);
    EXPECT_EQ(r.GetHeader("Content-Security-Policy"), kContentSecurityPolicy);
  }
}

// The routes as gpunexd sets them up: API routes, the dashboard's catch-alls, and a
// router with only the API routes that answers /api/ paths the catch-alls receive.
class StaticRoutes : public ::testing::Test {
 protected:
  static void AddApi(http::Router& r) {
    r.Add("GET", "/healthz", [](http::Request&) { return http::Response::Text(200, "ok"); });
    r.Add("GET", "/api/v1/me", [](http::Request&) { return http::Response::Text(200, "me"); });
    r.Add("POST", "/api/v1/auth/login",
          [](http::Request&) { return http::Response::Text(200, "login"); });
    r.Add("GET", "/api/v1/machines/{id}",
          [](http::Request& req) { return http::Response::Text(200, req.Param("id")); });
  }

  void SetUp() override {
    AddApi(router_);
    auto api_only = std::make_shared<http::Router>();
    AddApi(*api_only);
    RegisterRoutes(router_, std::make_shared<StaticSite>(kFiles), "public",
                   [api_only](http::Request& req) { return api_only->Dispatch(req); });
  }

  http::Response Call(std::string method, std::string path) {
    http::Request req = Get(std::move(path), std::move(method));
    return router_.Dispatch(req);
  }

  http::Router router_;
};

TEST_F(StaticRoutes, PagesAndFiles) {
  EXPECT_EQ(Call("GET", "/").body, kIndex);
  EXPECT_EQ(Call("HEAD", "/").status, 200);
  EXPECT_EQ(Call("GET", "/review/app_1").body, kIndex);
  EXPECT_EQ(Call("GET", "/provider/").body, kIndex);
  EXPECT_EQ(Call("GET", "/a/b/c/d/e/f/g/h").body, kIndex);
  EXPECT_EQ(Call("GET", "/assets/app-1a2b.js").body, kScript);
  EXPECT_EQ(Call("HEAD", "/assets/app-1a2b.js").GetHeader("Cache-Control"),
            std::string(kImmutable));
  EXPECT_EQ(Call("GET", "/assets/nope.js").status, 404);
  http::Response post = Call("POST", "/provider");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.GetHeader("Allow"), "GET, HEAD");
}

TEST_F(StaticRoutes, CatchAllsDeclareTheAccessGiven) {
  size_t catch_alls = 0;
  for (const http::Router::RouteInfo& r : router_.Routes()) {
    if (r.pattern == "/" || r.pattern.starts_with("/{p")) {
      EXPECT_EQ(r.access, "public") << r.method << " " << r.pattern;
      ++catch_alls;
    }
  }
  EXPECT_EQ(catch_alls, std::size(kMethods) * (1 + 2 * kMaxDepth));
}

TEST_F(StaticRoutes, OtherRoutesKeepWinning) {
  EXPECT_EQ(Call("GET", "/healthz").body, "ok");
  // Another method on their paths keeps their 405.
  http::Response head = Call("HEAD", "/healthz");
  EXPECT_EQ(head.status, 405);
  EXPECT_EQ(head.GetHeader("Allow"), "GET");
  EXPECT_EQ(Call("DELETE", "/healthz").GetHeader("Allow"), "GET");
  EXPECT_EQ(Call("GET", "/api/v1/me").body, "me");
  EXPECT_EQ(Call("POST", "/api/v1/auth/login").body, "login");
  EXPECT_EQ(Call("GET", "/api/v1/machines/m1").body, "m1");
}

TEST_F(StaticRoutes, ApiPathsKeepTheApiAnswers) {
  for (auto [method, path] : {std::pair{"GET", "/api/v1/nothing"},
                              {"POST", "/api/v1/nothing"},
                              {"DELETE", "/api/v1/a/b/c"},
                              {"GET", "/api"},
                              {"GET", "/api/"}}) {
    http::Response r = Call(method, path);
    EXPECT_EQ(r.status, 404) << method << " " << path;
    EXPECT_NE(r.body.find("\"not_found\""), std::string::npos) << path;
    EXPECT_EQ(r.GetHeader("Content-Type").rfind("application/json", 0), 0u) << path;
  }
  // A known API path with another method: 405 naming the API's methods only.
  http::Response get_login = Call("GET", "/api/v1/auth/login");
  EXPECT_EQ(get_login.status, 405);
  EXPECT_EQ(get_login.GetHeader("Allow"), "POST");
  http::Response post_machine = Call("POST", "/api/v1/machines/m1");
  EXPECT_EQ(post_machine.status, 405);
  EXPECT_EQ(post_machine.GetHeader("Allow"), "GET");
}

}  // namespace
}  // namespace gpunex::platform::web
