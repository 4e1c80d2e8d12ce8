#include "platform/http/http.h"

#include <gtest/gtest.h>

namespace gpunex::platform::http {
namespace {

json::value BodyOf(const Response& r) {
  auto parsed = ParseJson(r.body);
  EXPECT_TRUE(parsed.ok()) << r.body;
  return parsed.ok() ? *parsed : json::value();
}

TEST(ErrorResponse, HasCodeAndMessage) {
  Response r = ErrorResponse(NotFound("no such machine"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.GetHeader("content-type"), "application/json");
  json::value body = BodyOf(r);
  EXPECT_EQ(body.at("error").at("code").as_string(), "not_found");
  EXPECT_EQ(body.at("error").at("message").as_string(), "no such machine");
  EXPECT_FALSE(body.at("error").as_object().contains("fields"));
}

TEST(ErrorResponse, ValidationNamesEveryField) {
  Response r = ErrorResponse(ValidationFailed(
      {{"gpus[0].quantity", "must be at least 1"}, {"contact.email", "is required"}}));
  EXPECT_EQ(r.status, 422);
  json::value body = BodyOf(r);
  EXPECT_EQ(body.at("error").at("code").as_string(), "validation_failed");
  const json::object& fields = body.at("error").at("fields").as_object();
  EXPECT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields.at("gpus[0].quantity").as_string(), "must be at least 1");
}

TEST(ErrorResponse, PayloadTooLargeCarriesBodyField) {
  Response r = ErrorResponse(Status(StatusCode::kPayloadTooLarge, "the request body is too large",
                                    {{"body", "must be at most 10 bytes"}}));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(BodyOf(r).at("error").at("fields").at("body").as_string(), "must be at most 10 bytes");
}

TEST(ErrorResponse, UnauthenticatedAsksForBearer) {
  Response r = ErrorResponse(Unauthenticated("log in first"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.GetHeader("WWW-Authenticate"), "Bearer");
}

TEST(ErrorResponse, MapsEveryCode) {
  EXPECT_EQ(HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFor(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatusFor(StatusCode::kGone), 410);
  EXPECT_EQ(ErrorResponse(Gone("the rental has ended")).status, 410);
  EXPECT_EQ(HttpStatusFor(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInternal), 500);
}

TEST(ProtocolErrorResponse, SameShape) {
  Response r = ProtocolErrorResponse(405, "method_not_allowed", "no");
  EXPECT_EQ(r.status, 405);
  json::value body = BodyOf(r);
  EXPECT_EQ(body.at("error").at("code").as_string(), "method_not_allowed");
  EXPECT_EQ(body.at("error").at("message").as_string(), "no");
}

TEST(Request, QueryValuesKeepsEveryValueInOrder) {
  Request req;
  req.target = "/x?command=sh&tty=true&command=-c&command=echo%20a%26b+c&commandx=no";
  EXPECT_EQ(req.QueryValues("command"), (std::vector<std::string>{"sh", "-c", "echo a&b c"}));
  EXPECT_EQ(req.QueryValues("tty"), std::vector<std::string>{"true"});
  EXPECT_TRUE(req.QueryValues("stdin").empty());
  req.target = "/x";
  EXPECT_TRUE(req.QueryValues("command").empty());
}

TEST(Request, CookieFindsNamedValue) {
  Request req;
  req.headers["cookie"] = "theme=dark; gpunex_session=abc123;other=1;  spaced = v ";
  EXPECT_EQ(req.Cookie("gpunex_session"), "abc123");
  EXPECT_EQ(req.Cookie("theme"), "dark");
  EXPECT_EQ(req.Cookie("other"), "1");
  EXPECT_EQ(req.Cookie("spaced"), "v");
  EXPECT_EQ(req.Cookie("missing"), "");
  EXPECT_EQ(req.Cookie("gpunex"), "");  // a prefix is not a match
}

TEST(Request, CookieStripsQuotesAndKeepsEquals) {
  Request req;
  req.headers["cookie"] = "a=\"quoted\"; b=x=y; broken; c=";
  EXPECT_EQ(req.Cookie("a"), "quoted");
  EXPECT_EQ(req.Cookie("b"), "x=y");
  EXPECT_EQ(req.Cookie("broken"), "");
  EXPECT_EQ(req.Cookie("c"), "");
}

TEST(Request, CookieWithoutHeader) {
  Request req;
  EXPECT_EQ(req.Cookie("a"), "");
}

TEST(Request, AccessorsDefaultToEmpty) {
  Request req;
  req.headers["x-request-id"] = "r1";
  req.params["id"] = "m1";
  req.query["limit"] = "10";
  EXPECT_EQ(req.Header("x-request-id"), "r1");
  EXPECT_EQ(req.Header("absent"), "");
  EXPECT_EQ(req.Param("id"), "m1");
  EXPECT_EQ(req.Param("other"), "");
  EXPECT_EQ(req.Query("limit"), "10");
  EXPECT_EQ(req.Query("cursor"), "");
}

TEST(Response, SetHeaderReplacesCaseInsensitively) {
  Response r = Response::Text(200, "hi");
  r.SetHeader("content-type", "text/html");
  EXPECT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.GetHeader("Content-Type"), "text/html");
  EXPECT_EQ(Response::NoContent().status, 204);
}

TEST(PercentDecode, DecodesEscapes) {
  EXPECT_EQ(PercentDecode("a%20b%2Fc", false), "a b/c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("%e2%82%AC", false), "\xe2\x82\xac");
  EXPECT_EQ(PercentDecode("%", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%4", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%zz", false), std::nullopt);
}

TEST(ParseTarget, SplitsPathAndQuery) {
  std::string path;
  std::map<std::string, std::string> query;
  ASSERT_TRUE(ParseTarget("/api/v1/a%20b?x=1+2&y=%26&z&x2=&&x=3", &path, &query).ok());
  EXPECT_EQ(path, "/api/v1/a b");
  EXPECT_EQ(query.size(), 4u);
  EXPECT_EQ(query["x"], "3");  // the last value wins
  EXPECT_EQ(query["y"], "&");
  EXPECT_EQ(query["z"], "");
  EXPECT_EQ(query["x2"], "");
}

TEST(ParseTarget, PlusInPathStaysPlus) {
  std::string path;
  std::map<std::string, std::string> query;
  ASSERT_TRUE(ParseTarget("/a+b", &path, &query).ok());
  EXPECT_EQ(path, "/a+b");
  EXPECT_TRUE(query.empty());
}

TEST(ParseTarget, RejectsBadTargets) {
  std::string path;
  std::map<std::string, std::string> query;
  for (const char* target : {"", "api/v1", "http://example.com/", "/a/../b", "/..", "/a/%2e%2e/b",
                             "/a/..%2fb", "/a%00b", "/a%zz", "/a?x=%zz", "/a?x=%00"}) {
    Status s = ParseTarget(target, &path, &query);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << target;
  }
}

TEST(ParseTarget, AllowsDotsInsideSegments) {
  std::string path;
  std::map<std::string, std::string> query;
  EXPECT_TRUE(ParseTarget("/install.sh", &path, &query).ok());
  EXPECT_TRUE(ParseTarget("/a/...b/..c/c..", &path, &query).ok());
  EXPECT_TRUE(ParseTarget("/a/./b", &path, &query).ok());
}

}  // namespace
}  // namespace gpunex::platform::http
