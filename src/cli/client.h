// The command-line client's HTTP: requests to the platform's REST API with the API key,
// over libcurl (TLS, proxies from the environment, chunked bodies), and the failures
// mapped to the CLI's exit codes (docs/cli.md, "Exit codes").
//
// Thread-safety: one Client per thread (a curl handle is not shared).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"

namespace gpunex::cli {

// The exit codes every command keeps (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitTimeout = 3,
  kExitAuth = 4,
  kExitNotFound = 5,
  kExitInterrupted = 130,
};

// A command's failure: its message goes to stderr and the process exits with `code`.
class CliError : public std::runtime_error {
 public:
  CliError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct Response {
  long status = 0;
  std::string body;
  std::multimap<std::string, std::string> headers;  // names in lower case

  std::string Header(const std::string& lower_name) const;
};

struct ClientOptions {
  std::string url;      // the platform's base URL, without a trailing slash
  std::string api_key;  // "" sends no Authorization
  // A human word for where the key came from, for the 401 message ("profile default").
  std::string key_origin;
  bool debug = false;  // print each request and answer's status on stderr, key redacted
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }

  // One request; `target` is the path and query ("/api/v1/rentals?limit=5"). Returns the
  // answer whatever its status; throws CliError(kExitFailure) when nothing came back.
  Response Send(const std::string& method, const std::string& target,
                const std::optional<json::value>& body = std::nullopt,
                const std::vector<std::pair<std::string, std::string>>& headers = {});

  // The JSON of a 2xx answer, or a CliError for anything else (CheckAnswer).
  json::value Call(const std::string& method, const std::string& target,
                   const std::optional<json::value>& body = std::nullopt,
                   const std::vector<std::pair<std::string, std::string>>& headers = {});

  // A GET whose body goes to `sink` as it arrives (a tar, a CSV); the status and headers
  // come back. A non-2xx answer's body is collected into the Response instead.
  Response Download(const std::string& target, const std::function<bool(const char*, size_t)>& sink,
                    const std::function<void(uint64_t)>& progress = {});

  // A request whose body is read from `source` (returns 0 at the end) and sent chunked.
  Response Upload(const std::string& method, const std::string& target,
                  const std::string& content_type,
                  const std::function<size_t(char*, size_t)>& source,
                  const std::function<void(uint64_t)>& progress = {});

  // Throws the CliError for a failed answer: 401 names the key's last four characters
  // and where it came from (exit 4), 403 exit 4 too, 404 exit 5, others exit 1, each
  // with the platform's message and its field errors.
  void CheckAnswer(const Response& r, const std::string& method, const std::string& target) const;

  // The ws:// or wss:// URL of a target, and the Authorization header, for WebSockets.
  std::string WebSocketUrl(const std::string& target) const;
  std::vector<std::pair<std::string, std::string>> AuthHeaders() const;

 private:
  struct Impl;
  Response Perform(const std::string& method, const std::string& target,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   const std::string* body, const std::function<bool(const char*, size_t)>* sink,
                   const std::function<size_t(char*, size_t)>* source,
                   const std::function<void(uint64_t)>* progress);

  ClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes one query value.
std::string UrlEncode(std::string_view s);

}  // namespace gpunex::cli
