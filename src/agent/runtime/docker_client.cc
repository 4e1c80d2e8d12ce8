#include "agent/runtime/docker_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <string.h>  // explicit_bzero
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

#include "agent/runtime/internal/engine_streams.h"
#include "common/ids.h"
#include "common/image_ref.h"
#include "common/log.h"

namespace gpunex::agent {
namespace {

// Where the engine logs in for an image that names no registry.
constexpr char kDockerHubAuthServer[] = "https://index.docker.io/v1/";

using internal::FrameDemuxer;
using internal::ProgressStream;
using internal::StampedFrames;

// Every path is pinned to this API version (Docker 20.10).
constexpr std::string_view kApiPrefix = "/v1.41";
constexpr size_t kMaxResponseBytes = 4u << 20;
constexpr size_t kMaxLogsBytes = 64u << 20;
constexpr long kConnectTimeoutS = 5;
// For calls that return promptly: everything but pull, load, wait, logs and stop.
constexpr long kDefaultTimeoutS = 120;
// How long an exec start may take to answer before its stream begins.
constexpr long kExecStartTimeoutS = 30;

// Percent-encodes everything but RFC 3986 unreserved characters and `keep`.
std::string Escape(std::string_view s, std::string_view keep = "") {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// The engine's filters query parameter for one label.
std::string LabelFilterQuery(const std::string& label_filter) {
  if (label_filter.empty()) return "";
  json::object filters{{"label", json::array{json::value(label_filter)}}};
  return "filters=" + Escape(ToJsonText(filters));
}

std::string StringField(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return "";
  return std::string(it->value().get_string());
}

// What a request wants from Perform().
struct Request {
  const char* method = "GET";
  std::string path;  // after the version prefix, with its query
  std::optional<std::string> json_body;
  std::FILE* upload = nullptr;  // a tar body of `upload_size` bytes
  curl_off_t upload_size = 0;
  std::vector<std::string> headers;
  size_t max_body = kMaxResponseBytes;
  long timeout_s = kDefaultTimeoutS;  // 0: no limit
  // When set, a successful (2xx) response body goes here piece by piece instead of into
  // Response::body. Returns a non-OK Status to abort the transfer with it.
  std::function<Status(std::string_view)> sink;
  // When set, called about once a second; false closes the transfer (Response::closed).
  std::function<bool()> keep_going;
};

struct Response {
  long http = 0;
  std::string body;     // the whole body, or only an error body when a sink is used
  bool closed = false;  // keep_going returned false
};

// State shared with the curl callbacks of one transfer.
struct Transfer {
  CURL* curl = nullptr;
  const Request* request = nullptr;
  Response* response = nullptr;
  Status abort_status;  // why a callback aborted
  size_t received = 0;
  std::chrono::steady_clock::time_point last_poll = std::chrono::steady_clock::now();
};

size_t OnWrite(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  bool success = code >= 200 && code < 300;
  if (success && t->request->sink) {
    try {
      Status st = t->request->sink(std::string_view(data, n));
      if (!st.ok()) {
        t->abort_status = std::move(st);
        return 0;
      }
    } catch (const std::exception& e) {
      t->abort_status = Internal(std::string("docker: stream handler failed: ") + e.what());
      return 0;
    }
    return n;
  }
  t->received += n;
  if (t->received > t->request->max_body) {
    t->abort_status = ResourceExhausted("docker: response larger than " +
                                        std::to_string(t->request->max_body) + " bytes");
    return 0;
  }
  t->response->body.append(data, n);
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->request->keep_going) return 0;
  auto now = std::chrono::steady_clock::now();
  if (now - t->last_poll < std::chrono::milliseconds(900)) return 0;
  t->last_poll = now;
  bool go = true;
  try {
    go = t->request->keep_going();
  } catch (const std::exception& e) {
    t->abort_status = Internal(std::string("docker: keep_going failed: ") + e.what());
    return 1;
  }
  if (!go) t->response->closed = true;
  return go ? 0 : 1;
}

size_t OnRead(char* buffer, size_t size, size_t nitems, void* user) {
  auto* f = static_cast<std::FILE*>(user);
  size_t n = std::fread(buffer, 1, size * nitems, f);
  if (n == 0 && std::ferror(f)) return CURL_READFUNC_ABORT;
  return n;
}

// The Status for a non-2xx answer, from the engine's {"message"}.
Status HttpError(long http, const std::string& body) {
  std::string message;
  if (auto v = ParseJson(body); v.ok() && v->is_object()) {
    message = StringField(v->get_object(), "message");
  }
  if (message.empty()) {
    message = body.substr(0, 512);
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
      message.pop_back();
    }
  }
  if (message.empty()) message = "HTTP " + std::to_string(http);
  message = "docker: " + message;
  switch (http) {
    case 400:
      return InvalidArgument(std::move(message));
    case 401:
      return Unauthenticated(std::move(message));
    case 403:
      return PermissionDenied(std::move(message));
    case 404:
      return NotFound(std::move(message));
    case 409:
      return FailedPrecondition(std::move(message));
    case 503:
      return Unavailable(std::move(message));
    default:
      return Internal(std::move(message) + " (HTTP " + std::to_string(http) + ")");
  }
}

StatusOr<json::value> ParseBody(const std::string& body) {
  auto v = ParseJson(body);
  if (!v.ok()) return Internal("docker: the engine's answer is not JSON");
  return std::move(v).value();
}

// "1700000000.123456000": the engine's `since` (seconds with an optional fraction).
std::string SinceParam(UnixMicros since) {
  constexpr int64_t kMicrosPerSecond = 1'000'000;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%06lld000", static_cast<long long>(since / kMicrosPerSecond),
                static_cast<long long>(since % kMicrosPerSecond));
  return buf;
}

std::string ParamBool(bool b) { return b ? "1" : "0"; }

class EngineClient final : public DockerClient {
 public:
  explicit EngineClient(std::string socket_path) : socket_path_(std::move(socket_path)) {}

  StatusOr<DockerVersion> Version() override {
    GPUNEX_ASSIGN_OR_RETURN(json::value v, GetJson("/version"));
    if (!v.is_object()) return Internal("docker: /version did not answer an object");
    const json::object& o = v.get_object();
    return DockerVersion{StringField(o, "Version"), StringField(o, "ApiVersion"),
                         StringField(o, "Os"), StringField(o, "Arch")};
  }

  Status Ping() override {
    Request req;
    req.path = "/_ping";
    req.timeout_s = 10;
    return Expect(req, {200});
  }

  Status PullImage(const std::string& ref, const std::optional<protocol::RegistryCredentials>& auth,
                   const std::function<void(const std::string&)>& progress) override {
    std::string error;
    auto parsed = ParseImageRef(ref, &error);
    if (!parsed) return InvalidArgument("image reference \"" + ref + "\" " + error);
    Request req;
    req.method = "POST";
    // The tag parameter also carries a digest; a bare name would pull every tag.
    req.path = "/images/create?fromImage=" + Escape(parsed->name) +
               "&tag=" + Escape(parsed->digest.empty() ? parsed->tag : parsed->digest);
    req.timeout_s = 0;
    if (auth) {
      json::object a{{"username", auth->username},
                     {"password", auth->password},
                     {"serveraddress",
                      parsed->domain.empty() ? std::string(kDockerHubAuthServer) : parsed->domain}};
      std::string text = ToJsonText(a);
      // The engine decodes padded base64url.
      std::string encoded = Base64UrlEncode(text);
      while (encoded.size() % 4 != 0) encoded += '=';
      req.headers.push_back("X-Registry-Auth: " + encoded);
      explicit_bzero(text.data(), text.size());
      explicit_bzero(encoded.data(), encoded.size());
    }
    ProgressStream stream(progress);
    req.sink = [&stream](std::string_view data) { return stream.Feed(data); };
    auto resp = Perform(req);
    if (!resp.ok()) return resp.status();
    if (resp->http < 200 || resp->http >= 300) {
      Status st = HttpError(resp->http, resp->body);
      // The engine answers 500 when it cannot reach the registry.
      if (st.code() == StatusCode::kInternal) {
        return Unavailable("pulling " + parsed->ToString() + ": " + st.message());
      }
      return Status(st.code(), "pulling " + parsed->ToString() + ": " + st.message());
    }
    GPUNEX_RETURN_IF_ERROR(stream.Finish());
    if (stream.error()) {
      const std::string& m = *stream.error();
      std::string message = "pulling " + parsed->ToString() + ": docker: " + m;
      if (m.find("not found") != std::string::npos ||
          m.find("manifest unknown") != std::string::npos) {
        return NotFound(std::move(message));
      }
      if (m.find("denied") != std::string::npos || m.find("unauthorized") != std::string::npos) {
        return PermissionDenied(std::move(message));
      }
      return Unavailable(std::move(message));
    }
    return Status::Ok();
  }

  StatusOr<bool> ImageExists(const std::string& ref) override {
    std::string error;
    auto parsed = ParseImageRef(ref, &error);
    if (!parsed) return InvalidArgument("image reference \"" + ref + "\" " + error);
    Request req;
    req.path = "/images/" + Escape(parsed->ToString(), "/:@") + "/json";
    GPUNEX_ASSIGN_OR_RETURN(Response resp, Perform(req));
    if (resp.http == 200) return true;
    if (resp.http == 404) return false;
    return HttpError(resp.http, resp.body);
  }

  Status LoadImage(const std::string& tar_path) override {
    return UploadTar(tar_path, "/images/load?quiet=1", "loading " + tar_path);
  }

  Status ImportImage(const std::string& tar_path, const std::string& ref) override {
    std::string error;
    auto parsed = ParseImageRef(ref, &error);
    if (!parsed || !parsed->digest.empty()) {
      return InvalidArgument("image reference \"" + ref + "\" " +
                             (parsed ? std::string("must not carry a digest") : error));
    }
    return UploadTar(
        tar_path,
        "/images/create?fromSrc=-&repo=" + Escape(parsed->name) + "&tag=" + Escape(parsed->tag),
        "importing " + ref);
  }

  StatusOr<std::string> CreateContainer(const std::string& name,
                                        const json::object& config) override {
    Request req;
    req.method = "POST";
    req.path = "/containers/create?name=" + Escape(name);
    req.json_body = ToJsonText(config);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, Call(req, {201}));
    if (!v.is_object()) return Internal("docker: create did not answer an object");
    const json::object& o = v.get_object();
    std::string id = StringField(o, "Id");
    if (id.empty()) return Internal("docker: create answered no container id");
    if (auto it = o.find("Warnings"); it != o.end() && it->value().is_array()) {
      for (const auto& w : it->value().get_array()) {
        if (w.is_string()) {
          LogWarn("docker.create_warning", {{"container", name}, {"warning", w.get_string()}});
        }
      }
    }
    return id;
  }

  Status StartContainer(const std::string& id) override {
    Request req;
    req.method = "POST";
    req.path = "/containers/" + Escape(id) + "/start";
    return Expect(req, {204, 304});
  }

  StatusOr<int64_t> WaitContainer(const std::string& id, int64_t timeout_s) override {
    Request req;
    req.method = "POST";
    req.path = "/containers/" + Escape(id) + "/wait?condition=not-running";
    req.timeout_s = static_cast<long>(timeout_s);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, Call(req, {200}));
    if (!v.is_object()) return Internal("docker: wait did not answer an object");
    const json::object& o = v.get_object();
    if (auto it = o.find("Error"); it != o.end() && it->value().is_object()) {
      std::string m = StringField(it->value().get_object(), "Message");
      if (!m.empty()) return Internal("docker: waiting for container " + id + ": " + m);
    }
    auto it = o.find("StatusCode");
    if (it == o.end() || !it->value().is_number()) {
      return Internal("docker: wait answered no StatusCode");
    }
    return it->value().to_number<int64_t>();
  }

  StatusOr<std::vector<LogFrame>> Logs(const std::string& id, UnixMicros since, int tail) override {
    Request req;
    req.path = "/containers/" + Escape(id) + "/logs?stdout=1&stderr=1";
    if (since > 0) req.path += "&since=" + SinceParam(since);
    req.path += "&tail=" + (tail >= 0 ? std::to_string(tail) : std::string("all"));
    req.max_body = kMaxLogsBytes;
    GPUNEX_ASSIGN_OR_RETURN(Response resp, Perform(req));
    if (resp.http != 200) return HttpError(resp.http, resp.body);
    std::vector<LogFrame> frames;
    FrameDemuxer demux;
    GPUNEX_RETURN_IF_ERROR(
        demux.Feed(resp.body, [&frames](LogFrame::Stream s, std::string_view data, bool first) {
          if (first || frames.empty() || frames.back().stream != s) {
            frames.push_back(LogFrame{s, std::string(data)});
          } else {
            frames.back().data += data;
          }
          return Status::Ok();
        }));
    return frames;
  }

  Status FollowLogs(const std::string& id, const std::function<void(const LogFrame&)>& on_frame,
                    const std::function<bool()>& keep_going) override {
    const std::string logs = "/containers/" + Escape(id) + "/logs?stdout=1&stderr=1&timestamps=1";
    StampedFrames followed(&on_frame);
    Request req;
    req.path = logs + "&follow=1";
    req.timeout_s = 0;
    FrameDemuxer demux;
    req.sink = [&demux, &followed](std::string_view data) {
      return demux.Feed(data, [&followed](LogFrame::Stream s, std::string_view p, bool first) {
        return followed.Piece(s, p, first);
      });
    };
    req.keep_going = keep_going;
    GPUNEX_ASSIGN_OR_RETURN(Response resp, Perform(req));
    if (resp.closed) return Status::Ok();
    if (resp.http != 200) return HttpError(resp.http, resp.body);
    followed.Finish();

    // Engine 20.10 can end a follow stream without the last messages written as the
    // container exits (a partial line flushed at exit, for one), and their timestamps
    // need not be the latest. The follow stream is a prefix of the log in order, so read
    // the log's last kFollowOverlap frames, find where the frames delivered end in them,
    // and deliver the rest.
    StampedFrames tail(nullptr);
    Request rest;
    rest.path = logs + "&tail=" + std::to_string(StampedFrames::kFollowOverlap);
    rest.max_body = kMaxLogsBytes;
    GPUNEX_ASSIGN_OR_RETURN(Response last, Perform(rest));
    if (last.http != 200) return HttpError(last.http, last.body);
    FrameDemuxer tail_demux;
    GPUNEX_RETURN_IF_ERROR(
        tail_demux.Feed(last.body, [&tail](LogFrame::Stream s, std::string_view p, bool first) {
          return tail.Piece(s, p, first);
        }));
    tail.Finish();
    const auto& window = tail.frames();
    const auto& recent = followed.recent();
    size_t overlap = internal::DeliveredOverlap(window, recent);
    if (overlap == 0 && !recent.empty() && !window.empty()) {
      LogWarn("docker.logs_gap", {{"container", id},
                                  {"note",
                                   "the end of the log stream could not be aligned; some output "
                                   "may be missing or repeated"}});
    }
    for (size_t i = overlap; i < window.size(); ++i) on_frame(window[i].second);
    return Status::Ok();
  }

  Status StopContainer(const std::string& id, int timeout_s) override {
    Request req;
    req.method = "POST";
    req.path = "/containers/" + Escape(id) + "/stop?t=" + std::to_string(timeout_s);
    req.timeout_s = timeout_s + 60;
    return Expect(req, {204, 304});
  }

  Status RemoveContainer(const std::string& id, bool force, bool remove_volumes) override {
    Request req;
    req.method = "DELETE";
    req.path = "/containers/" + Escape(id) + "?force=" + ParamBool(force) +
               "&v=" + ParamBool(remove_volumes);
    return Expect(req, {204});
  }

  StatusOr<json::object> InspectContainer(const std::string& id) override {
    GPUNEX_ASSIGN_OR_RETURN(json::value v, GetJson("/containers/" + Escape(id) + "/json"));
    if (!v.is_object()) return Internal("docker: inspect did not answer an object");
    return std::move(v.get_object());
  }

  StatusOr<std::vector<ContainerSummary>> ListContainers(const std::string& label_filter) override {
    std::string path = "/containers/json?all=1";
    if (!label_filter.empty()) path += "&" + LabelFilterQuery(label_filter);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, GetJson(path));
    if (!v.is_array()) return Internal("docker: the container list is not an array");
    std::vector<ContainerSummary> out;
    for (const auto& e : v.get_array()) {
      if (!e.is_object()) continue;
      const json::object& o = e.get_object();
      ContainerSummary c;
      c.id = StringField(o, "Id");
      c.state = StringField(o, "State");
      if (auto it = o.find("Names"); it != o.end() && it->value().is_array() &&
                                     !it->value().get_array().empty() &&
                                     it->value().get_array()[0].is_string()) {
        c.name = std::string(it->value().get_array()[0].get_string());
        if (!c.name.empty() && c.name[0] == '/') c.name.erase(0, 1);
      }
      if (auto it = o.find("Labels"); it != o.end() && it->value().is_object()) {
        for (const auto& kv : it->value().get_object()) {
          if (kv.value().is_string()) c.labels[kv.key()] = std::string(kv.value().get_string());
        }
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  Status CreateVolume(const std::string& name, const std::map<std::string, std::string>& labels,
                      const std::map<std::string, std::string>& driver_opts) override {
    json::object body{{"Name", name}, {"Driver", "local"}};
    json::object l, o;
    for (const auto& [k, v] : labels) l[k] = v;
    for (const auto& [k, v] : driver_opts) o[k] = v;
    body["Labels"] = std::move(l);
    body["DriverOpts"] = std::move(o);
    Request req;
    req.method = "POST";
    req.path = "/volumes/create";
    req.json_body = ToJsonText(body);
    return Call(req, {201}).status();
  }

  Status RemoveVolume(const std::string& name) override {
    Request req;
    req.method = "DELETE";
    req.path = "/volumes/" + Escape(name);
    return Expect(req, {204});
  }

  StatusOr<std::vector<std::string>> ListVolumes(const std::string& label_filter) override {
    std::string path = "/volumes";
    if (!label_filter.empty()) path += "?" + LabelFilterQuery(label_filter);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, GetJson(path));
    std::vector<std::string> out;
    if (!v.is_object()) return Internal("docker: the volume list is not an object");
    auto it = v.get_object().find("Volumes");
    if (it == v.get_object().end() || !it->value().is_array()) return out;  // null: none
    for (const auto& e : it->value().get_array()) {
      if (e.is_object()) out.push_back(StringField(e.get_object(), "Name"));
    }
    return out;
  }

  StatusOr<std::string> CreateNetwork(const std::string& name,
                                      const std::map<std::string, std::string>& labels,
                                      bool internal,
                                      const std::map<std::string, std::string>& options) override {
    json::object l, o;
    for (const auto& [k, v] : labels) l[k] = v;
    for (const auto& [k, v] : options) o[k] = v;
    json::object body{{"Name", name},           {"Driver", "bridge"},     {"CheckDuplicate", true},
                      {"Internal", internal},   {"Attachable", false},    {"EnableIPv6", false},
                      {"Labels", std::move(l)}, {"Options", std::move(o)}};
    Request req;
    req.method = "POST";
    req.path = "/networks/create";
    req.json_body = ToJsonText(body);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, Call(req, {201}));
    std::string id = v.is_object() ? StringField(v.get_object(), "Id") : "";
    if (id.empty()) return Internal("docker: network create answered no id");
    return id;
  }

  Status RemoveNetwork(const std::string& name) override {
    Request req;
    req.method = "DELETE";
    req.path = "/networks/" + Escape(name);
    return Expect(req, {204});
  }

  StatusOr<std::vector<std::string>> ListNetworks(const std::string& label_filter) override {
    std::string path = "/networks";
    if (!label_filter.empty()) path += "?" + LabelFilterQuery(label_filter);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, GetJson(path));
    if (!v.is_array()) return Internal("docker: the network list is not an array");
    std::vector<std::string> out;
    for (const auto& e : v.get_array()) {
      if (e.is_object()) out.push_back(StringField(e.get_object(), "Name"));
    }
    return out;
  }

 private:
  // POSTs the tar file at `tar_path` to `path` (an image load or import), following the
  // engine's progress to its end; errors start with `what`.
  Status UploadTar(const std::string& tar_path, std::string path, const std::string& what) {
    std::FILE* f = std::fopen(tar_path.c_str(), "rb");
    if (!f) return NotFound("cannot open image file " + tar_path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::fclose(f);
      return InvalidArgument("image file " + tar_path + " is not a regular file");
    }
    Request req;
    req.method = "POST";
    req.path = std::move(path);
    req.upload = f;
    req.upload_size = st.st_size;
    req.headers = {"Content-Type: application/x-tar"};
    req.timeout_s = 0;
    ProgressStream stream(nullptr);
    req.sink = [&stream](std::string_view data) { return stream.Feed(data); };
    auto resp = Perform(req);
    std::fclose(f);
    if (!resp.ok()) return resp.status();
    if (resp->http < 200 || resp->http >= 300) {
      Status s = HttpError(resp->http, resp->body);
      return Status(s.code(), what + ": " + s.message());
    }
    GPUNEX_RETURN_IF_ERROR(stream.Finish());
    if (stream.error()) return InvalidArgument(what + ": docker: " + *stream.error());
    return Status::Ok();
  }

  // GET `path`, expecting 200 and a JSON body.
  StatusOr<json::value> GetJson(std::string path) {
    Request req;
    req.path = std::move(path);
    return Call(req, {200});
  }

  // Performs `req`; a JSON body when the status is one of `ok_codes`, else the error.
  StatusOr<json::value> Call(const Request& req, std::initializer_list<long> ok_codes) {
    GPUNEX_ASSIGN_OR_RETURN(Response resp, Perform(req));
    for (long c : ok_codes) {
      if (resp.http == c) return ParseBody(resp.body);
    }
    return HttpError(resp.http, resp.body);
  }

  // Performs `req`, ignoring the body when the status is one of `ok_codes`.
  Status Expect(const Request& req, std::initializer_list<long> ok_codes) {
    GPUNEX_ASSIGN_OR_RETURN(Response resp, Perform(req));
    for (long c : ok_codes) {
      if (resp.http == c) return Status::Ok();
    }
    return HttpError(resp.http, resp.body);
  }

  StatusOr<int> OpenArchive(const std::string& id, const std::string& path, bool put, bool chunked,
                            uint64_t length) override {
    std::string head = std::string(put ? "PUT " : "GET ") + std::string(kApiPrefix) +
                       "/containers/" + Escape(id) + "/archive?path=" + Escape(path) +
                       " HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n";
    if (put) {
      head += "Content-Type: application/x-tar\r\n";
      head += chunked ? std::string("Transfer-Encoding: chunked\r\n")
                      : "Content-Length: " + std::to_string(length) + "\r\n";
    }
    head += "\r\n";
    GPUNEX_ASSIGN_OR_RETURN(int fd, OpenRaw(head, "the archive request"));
    const int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    return fd;
  }

  StatusOr<std::string> CreateExec(const std::string& container_id,
                                   const std::vector<std::string>& command, bool tty,
                                   bool open_stdin) override {
    json::array cmd;
    for (const std::string& arg : command) cmd.emplace_back(arg);
    json::object config{{"AttachStdin", open_stdin},
                        {"AttachStdout", true},
                        {"AttachStderr", true},
                        {"Tty", tty},
                        {"Cmd", std::move(cmd)}};
    if (tty) config["Env"] = json::array{"TERM=xterm-256color"};
    Request req;
    req.method = "POST";
    req.path = "/containers/" + Escape(container_id) + "/exec";
    req.json_body = ToJsonText(config);
    GPUNEX_ASSIGN_OR_RETURN(json::value v, Call(req, {201}));
    if (!v.is_object()) return Internal("docker: exec create did not answer an object");
    std::string id = StringField(v.get_object(), "Id");
    if (id.empty()) return Internal("docker: exec create answered no id");
    return id;
  }

  StatusOr<int> StartExec(const std::string& exec_id, bool tty) override {
    const std::string body = ToJsonText(json::object{{"Detach", false}, {"Tty", tty}});
    const std::string head = "POST " + std::string(kApiPrefix) + "/exec/" + Escape(exec_id) +
                             "/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\n"
                             "Upgrade: tcp\r\nContent-Type: application/json\r\n"
                             "Content-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body;
    GPUNEX_ASSIGN_OR_RETURN(int fd, OpenRaw(head, "the exec start"));
    // The answer's head, a byte at a time, so that nothing of the stream after it is read.
    timeval limit{.tv_sec = kExecStartTimeoutS, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string answer;
    while (!answer.ends_with("\r\n\r\n") && answer.size() < 16384) {
      char c = 0;
      if (::recv(fd, &c, 1, 0) != 1) break;
      answer.push_back(c);
    }
    const size_t space = answer.find(' ');
    const long http = space == std::string::npos ? 0 : std::atol(answer.c_str() + space + 1);
    // 101 upgraded; engines before API 1.42 may answer 200 and stream all the same.
    if (http != 101 && http != 200) {
      std::string error_body;
      for (char buf[4096]; error_body.size() < 65536;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        error_body.append(buf, static_cast<size_t>(n));
      }
      ::close(fd);
      if (http == 0) return Unavailable("docker: no answer to the exec start");
      // The body after the head (plain or one chunk): the engine's {"message"}.
      const size_t brace = error_body.find('{');
      const size_t end = error_body.rfind('}');
      return HttpError(http, brace == std::string::npos || end == std::string::npos
                                 ? error_body
                                 : error_body.substr(brace, end - brace + 1));
    }
    timeval none{};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    const int flags = ::fcntl(fd, F_GETFL, 0);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    return fd;
  }

  Status ResizeExec(const std::string& exec_id, uint16_t rows, uint16_t columns) override {
    Request req;
    req.method = "POST";
    req.path = "/exec/" + Escape(exec_id) + "/resize?h=" + std::to_string(rows) +
               "&w=" + std::to_string(columns);
    return Expect(req, {200, 201});
  }

  StatusOr<ExecState> InspectExec(const std::string& exec_id) override {
    Request req;
    req.path = "/exec/" + Escape(exec_id) + "/json";
    GPUNEX_ASSIGN_OR_RETURN(json::value v, Call(req, {200}));
    if (!v.is_object()) return Internal("docker: exec inspect did not answer an object");
    const json::object& o = v.get_object();
    ExecState state;
    if (const json::value* r = o.if_contains("Running"); r && r->is_bool()) {
      state.running = r->get_bool();
    }
    if (const json::value* c = o.if_contains("ExitCode"); c && c->is_int64()) {
      state.exit_code = c->get_int64();
    }
    return state;
  }

  // A connected (blocking) socket to the engine on which `head` has been written.
  StatusOr<int> OpenRaw(const std::string& head, const char* what) {
    GPUNEX_RETURN_IF_ERROR(CheckSocket());
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path_.size() >= sizeof(addr.sun_path)) {
      return Unavailable("the Docker socket path is too long: " + socket_path_);
    }
    std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Unavailable(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int err = errno;
      ::close(fd);
      return Unavailable("cannot connect to the Docker engine at " + socket_path_ + ": " +
                         std::strerror(err));
    }
    for (size_t sent = 0; sent < head.size();) {
      const ssize_t n = ::send(fd, head.data() + sent, head.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        return Unavailable(std::string("docker: writing ") + what + ": " + std::strerror(err));
      }
      sent += static_cast<size_t>(n);
    }
    return fd;
  }

  // Why the socket cannot be used, or OK when it looks usable.
  Status CheckSocket() const {
    struct stat st {};
    if (stat(socket_path_.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        return Unavailable("the Docker socket " + socket_path_ +
                           " does not exist: is Docker installed and dockerd running?");
      }
      return Unavailable("cannot use the Docker socket " + socket_path_ + ": " +
                         std::strerror(errno));
    }
    if (!S_ISSOCK(st.st_mode)) {
      return Unavailable(socket_path_ + " is not a socket: is it the Docker socket?");
    }
    return Status::Ok();
  }

  // One HTTP exchange on a fresh curl handle. Fails only when no HTTP answer came (or a
  // callback aborted); an HTTP error status is the caller's to judge.
  StatusOr<Response> Perform(const Request& req) {
    GPUNEX_RETURN_IF_ERROR(CheckSocket());
    CURL* curl = curl_easy_init();
    if (!curl) return Internal("docker: curl_easy_init failed");
    Response resp;
    Transfer t{curl, &req, &resp, Status::Ok(), 0, std::chrono::steady_clock::now()};
    char errbuf[CURL_ERROR_SIZE] = {};
    std::string url = "http://docker";
    url += kApiPrefix;
    url += req.path;
    curl_slist* headers = nullptr;
    for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
    if (req.json_body) headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip

    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path_.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, req.timeout_s);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method);
    if (req.json_body) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req.json_body->data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(req.json_body->size()));
    } else if (req.upload) {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnRead);
      curl_easy_setopt(curl, CURLOPT_READDATA, req.upload);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, req.upload_size);
    } else if (std::string_view(req.method) == "POST") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{0});
    }
    if (req.keep_going) {
      curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
      curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    }
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.http);
    curl_easy_cleanup(curl);
    curl_slist_free_all(headers);

    if (rc == CURLE_OK) return resp;
    if (!t.abort_status.ok()) return t.abort_status;
    if (rc == CURLE_ABORTED_BY_CALLBACK && resp.closed) return resp;
    std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
      case CURLE_COULDNT_CONNECT:
        return Unavailable("cannot connect to the Docker engine at " + socket_path_ + " (" +
                           detail + "): is dockerd running, and may this user use its socket?");
      case CURLE_OPERATION_TIMEDOUT:
        return Unavailable("docker: timed out after " + std::to_string(req.timeout_s) +
                           " s: " + detail);
      default:
        return Unavailable("docker: the connection to " + socket_path_ + " failed: " + detail);
    }
  }

  const std::string socket_path_;
};

}  // namespace

std::unique_ptr<DockerClient> DockerEngineClient(std::string socket_path) {
  // curl_global_init is not thread-safe on every libcurl; do it once, before any handle.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::make_unique<EngineClient>(std::move(socket_path));
}

}  // namespace gpunex::agent
