// HTTP request and response values shared by the server (server.h), the router
// (router.h) and the API handlers. Nothing here depends on Boost.Beast: only the
// server's implementation files (internal/) see Beast, so handlers compile fast and are
// testable without sockets.
#pragma once

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/thread_annotations.h"

namespace gpunex::platform::http {

struct Request {
  std::string method;                        // "GET", "POST", ...
  std::string target;                        // as received: "/api/v1/x?y=1"
  std::string path;                          // percent-decoded path without the query: "/api/v1/x"
  std::map<std::string, std::string> query;  // percent-decoded; last value wins
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
  std::string remote_addr;  // peer IP address
  bool tls = false;         // arrived over TLS
  // Filled by the router: values of the {name} segments of the matched route.
  std::map<std::string, std::string> params;
  // Filled by the router: the matched route pattern ("/api/v1/machines/{id}"), or "" when
  // nothing matched. Metrics are labelled with it, never with the raw path.
  std::string route;
  // Filled by the router's guard (router.h) when it authenticated the caller, in the
  // guard's own type (the API's: accounts::Principal); empty otherwise.
  std::any caller;

  // Header value by lower-case name, "" when absent.
  std::string Header(std::string_view name) const;
  // Cookie value from the Cookie header, "" when absent.
  std::string Cookie(std::string_view name) const;
  std::string Param(std::string_view name) const;
  std::string Query(std::string_view name) const;
  // Every value of a repeated query parameter ("?command=ls&command=-l"), in order.
  std::vector<std::string> QueryValues(std::string_view name) const;
};

class Deferred;
class Responder;

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Set by Defer: this is a placeholder, and the answer comes later through the Responder.
  // The server frees the worker thread meanwhile and writes the answer when it comes;
  // whoever handles responses on the way out (headers, metrics, idempotency) goes through
  // Then, never through the placeholder's fields.
  std::shared_ptr<Deferred> deferred;

  void SetHeader(std::string name, std::string value);
  std::string GetHeader(std::string_view name) const;

  static Response Json(int status, const json::value& body);
  static Response Text(int status, std::string body,
                       std::string content_type = "text/plain; charset=utf-8");
  static Response NoContent();

  // A response that a handler cannot give yet because it waits for other work (a job
  // waits for its scheduling round): the handler returns the placeholder and passes the
  // Responder to whoever finishes the work. No worker thread waits.
  static std::pair<Response, Responder> Defer();
  // `f` applied to the response: at once to a plain one; to a deferred one's answer when
  // it comes (on a worker thread, before it is written; Thens apply in the order added).
  Response Then(std::function<Response(Response)> f) &&;
};

// Gives a deferred response its answer: once, from any thread; later calls do nothing.
// Copies share the one answer. When the last copy goes without having answered, the
// answer is a 500 (the work that held it was dropped).
class Responder {
 public:
  void operator()(Response resp) const;

 private:
  friend struct Response;
  struct Once;
  explicit Responder(std::shared_ptr<Once> once) : once_(std::move(once)) {}
  std::shared_ptr<Once> once_;
};

// The answer of a deferred response, between its Responder and the server.
// Thread-safety: safe to share.
class Deferred {
 public:
  // The first answer counts; later ones are dropped.
  void Answer(Response resp) EXCLUDES(mu_);
  // Called once, by the server: `wake` runs when the answer is in: at once, on this
  // thread, when it is in already; otherwise on the thread that answers.
  void OnAnswer(std::function<void()> wake) EXCLUDES(mu_);
  // The answer with the Thens applied; only after `wake`.
  Response Finish() EXCLUDES(mu_);
  void AddThen(std::function<Response(Response)> f) EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::optional<Response> answer_ GUARDED_BY(mu_);
  bool answered_ GUARDED_BY(mu_) = false;
  std::function<void()> wake_ GUARDED_BY(mu_);
  std::vector<std::function<Response(Response)>> thens_ GUARDED_BY(mu_);
};

// Serves one request. Handlers run on the server's worker threads, so a Handler shared by
// a server must be safe to call concurrently. Exceptions are caught by the router and the
// server and answered with a 500 whose body does not reveal them.
using Handler = std::function<Response(Request&)>;

// The one place that maps a Status to an HTTP status and the error body of docs/api.md:
//   {"error": {"code": "...", "message": "...", "fields": {...}}}
// `fields` appears when the status carries field errors.
Response ErrorResponse(const Status& status);
int HttpStatusFor(StatusCode code);

// An error body in the same shape for HTTP-level failures that have no StatusCode
// (405 "method_not_allowed", 431 "headers_too_large"): {"error": {"code", "message"}}.
Response ProtocolErrorResponse(int http_status, std::string_view code, std::string_view message);

// Decodes %XX escapes, and '+' to a space when `plus_is_space` (query strings).
// nullopt when an escape is malformed ("%4", "%zz").
std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space);

// Splits an origin-form request target ("/a/b%20c?x=1&y") into its percent-decoded path
// ("/a/b c") and query ({x: "1", y: ""}; the last of repeated keys wins).
// Fails with kInvalidArgument when the target does not start with '/', an escape is
// malformed, the path or query holds a NUL byte, or the path has a ".." segment.
Status ParseTarget(std::string_view target, std::string* path,
                   std::map<std::string, std::string>* query);

}  // namespace gpunex::platform::http
