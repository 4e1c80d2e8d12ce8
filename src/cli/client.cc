#include "cli/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>

#include "cli/config.h"
#include "common/ascii.h"

namespace gpunex::cli {

std::string Response::Header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

struct Client::Impl {
  CURL* curl = nullptr;
};

namespace {

struct Transfer {
  Response* response;  // its body collects what is not sunk
  const std::function<bool(const char*, size_t)>* sink;
  const std::function<size_t(char*, size_t)>* source;
  const std::function<void(uint64_t)>* progress;
  uint64_t moved = 0;
  bool sinking = false;  // decided at the first body byte: a 2xx answer with a sink
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a 100 Continue's or a redirect's headers
    const size_t sp = line.find(' ');
    t->response->status = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    const size_t b = value.find_first_not_of(" \t");
    const size_t e = value.find_last_not_of(" \t\r\n");
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    t->response->headers.emplace(std::move(name), std::move(value));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (t->sink != nullptr && t->moved == 0 && t->response->body.empty()) {
    // The first body byte: the status line has come, so the answer asked for goes to the
    // sink and an error's body is collected.
    t->sinking = t->response->status >= 200 && t->response->status < 300;
  }
  if (t->sinking) {
    if (!(*t->sink)(data, bytes)) return 0;  // the sink failed: abort the transfer
    t->moved += bytes;
    if (t->progress != nullptr && *t->progress) (*t->progress)(t->moved);
  } else {
    if (t->response->body.size() + bytes > (64u << 20)) return 0;  // an answer beyond reason
    t->response->body.append(data, bytes);
  }
  return bytes;
}

size_t OnRead(char* buffer, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t got = (*t->source)(buffer, size * n);
  t->moved += got;
  if (t->progress != nullptr && *t->progress) (*t->progress)(t->moved);
  return got;
}

std::string Redacted(std::string_view key) {
  return key.size() > 10 ? std::string(key.substr(0, 6)) + KeyHint(key) : "…";
}

}  // namespace

Client::Client(ClientOptions options) : options_(std::move(options)), impl_(new Impl) {
  static const bool initialised = [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return true;
  }();
  (void)initialised;
  impl_->curl = curl_easy_init();
  if (impl_->curl == nullptr) throw CliError(kExitFailure, "cannot start libcurl");
}

Client::~Client() { curl_easy_cleanup(impl_->curl); }

std::vector<std::pair<std::string, std::string>> Client::AuthHeaders() const {
  if (options_.api_key.empty()) return {};
  return {{"Authorization", "Bearer " + options_.api_key}};
}

std::string Client::WebSocketUrl(const std::string& target) const {
  const std::string& u = options_.url;
  if (u.rfind("https://", 0) == 0) return "wss://" + u.substr(8) + target;
  return "ws://" + u.substr(std::string_view("http://").size()) + target;
}

Response Client::Perform(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string* body,
                         const std::function<bool(const char*, size_t)>* sink,
                         const std::function<size_t(char*, size_t)>* source,
                         const std::function<void(uint64_t)>* progress) {
  CURL* c = impl_->curl;
  curl_easy_reset(c);
  Response r;
  Transfer t{&r, sink, source, progress};
  const std::string url = options_.url + target;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 15L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "gpunex-cli/" GPUNEX_CLI_VERSION);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_slist* list = nullptr;
  for (const auto& [name, value] : AuthHeaders()) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  for (const auto& [name, value] : headers) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  if (body != nullptr) {
    list = curl_slist_append(list, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else if (source != nullptr) {
    list = curl_slist_append(list, "Transfer-Encoding: chunked");
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(c, CURLOPT_READDATA, &t);
  } else if (method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    // No body: an explicit empty one (Content-Length: 0), without curl's form type.
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(0));
    list = curl_slist_append(list, "Content-Type:");
  }
  list = curl_slist_append(list, "Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  const auto start = std::chrono::steady_clock::now();
  if (options_.debug) {
    std::cerr << "> " << method << " " << url;
    if (!options_.api_key.empty())
      std::cerr << "  (Authorization: Bearer " << Redacted(options_.api_key) << ")";
    std::cerr << "\n";
    if (body != nullptr) std::cerr << "> " << *body << "\n";
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    if (rc == CURLE_WRITE_ERROR && t.sinking) {
      throw CliError(kExitFailure, "could not write what " + url + " sent");
    }
    throw CliError(kExitFailure, "cannot reach " + options_.url + ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  if (options_.debug) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "< " << r.status << " (" << (t.sinking ? t.moved : r.body.size()) << " bytes, "
              << static_cast<int>(s * 1000) << " ms)\n";
  }
  return r;
}

Response Client::Send(const std::string& method, const std::string& target,
                      const std::optional<json::value>& body,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
  if (body) {
    const std::string text = ToJsonText(*body);
    return Perform(method, target, headers, &text, nullptr, nullptr, nullptr);
  }
  return Perform(method, target, headers, nullptr, nullptr, nullptr, nullptr);
}

json::value Client::Call(const std::string& method, const std::string& target,
                         const std::optional<json::value>& body,
                         const std::vector<std::pair<std::string, std::string>>& headers) {
  const Response r = Send(method, target, body, headers);
  CheckAnswer(r, method, target);
  if (r.body.empty()) return nullptr;
  StatusOr<json::value> v = ParseJson(r.body);
  if (!v.ok()) {
    throw CliError(kExitFailure, method + " " + target + " answered what is not JSON");
  }
  return std::move(*v);
}

Response Client::Download(const std::string& target,
                          const std::function<bool(const char*, size_t)>& sink,
                          const std::function<void(uint64_t)>& progress) {
  return Perform("GET", target, {}, nullptr, &sink, nullptr, &progress);
}

Response Client::Upload(const std::string& method, const std::string& target,
                        const std::string& content_type,
                        const std::function<size_t(char*, size_t)>& source,
                        const std::function<void(uint64_t)>& progress) {
  return Perform(method, target, {{"Content-Type", content_type}}, nullptr, nullptr, &source,
                 &progress);
}

void Client::CheckAnswer(const Response& r, const std::string& method,
                         const std::string& target) const {
  if (r.status >= 200 && r.status < 300) return;
  std::string message;
  std::string fields;
  if (StatusOr<json::value> v = ParseJson(r.body); v.ok() && v->is_object()) {
    const json::value* error = v->as_object().if_contains("error");
    if (error != nullptr && error->is_object()) {
      message = StoredText(error->as_object(), "message");
      const json::value* bad = error->as_object().if_contains("fields");
      if (bad != nullptr && bad->is_object()) {
        for (const auto& [field, why] : bad->as_object()) {
          fields += "\n  " + std::string(field) + ": " +
                    (why.is_string() ? std::string(why.as_string()) : ToJsonText(why));
        }
      }
    }
  }
  if (message.empty()) message = "HTTP " + std::to_string(r.status);
  const std::string what = method + " " + target.substr(0, target.find('?')) + ": " +
                           std::to_string(r.status) + " " + message + fields;
  if (r.status == 401) {
    const std::string key = options_.api_key.empty()
                                ? "no API key was sent (gpunex auth login, or GPUNEX_API_KEY)"
                                : "the API key " + KeyHint(options_.api_key) + " (from " +
                                      options_.key_origin + ") was refused";
    throw CliError(kExitAuth, what + "\n" + key);
  }
  if (r.status == 403) throw CliError(kExitAuth, what);
  if (r.status == 404) throw CliError(kExitNotFound, what);
  throw CliError(kExitFailure, what);
}

}  // namespace gpunex::cli
