// DockerClient: the agent's only way to the container engine, a client of the Docker
// Engine API.
//
// DockerEngineClient() speaks HTTP/1.1 over the engine's unix socket with libcurl, every
// path pinned to API version 1.41 (Docker 20.10, Debian 12's docker.io; newer engines
// still serve it), so a newer engine cannot change a request's meaning under the agent.
// Containers are created without a TTY, so their logs are the engine's multiplexed stream
// (an 8-byte header per frame), which Logs() and FollowLogs() demultiplex.
//
// Errors: the engine's {"message"} becomes the Status message, prefixed "docker: ".
// HTTP 400 -> kInvalidArgument, 401 -> kUnauthenticated, 403 -> kPermissionDenied,
// 404 -> kNotFound, 409 -> kFailedPrecondition, 503 -> kUnavailable, any other failure ->
// kInternal; a missing socket, a refused connection or a dropped one -> kUnavailable
// naming the socket. Responses are bounded: 64 MiB for Logs(), 4 MiB for the rest (the
// streams of PullImage, LoadImage and FollowLogs are read incrementally and not bounded
// in total); a larger response fails with kResourceExhausted.
//
// Thread-safety: every method may be called concurrently; each call uses its own curl
// handle and connection.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/status.h"
#include "common/time.h"

namespace gpunex::agent {

// The engine's identity, from GET /version.
struct DockerVersion {
  std::string version;      // "20.10.24+dfsg1"
  std::string api_version;  // the newest API the engine serves, "1.41"
  std::string os;           // "linux"
  std::string arch;         // "amd64"
};

// One frame of a container's output.
struct LogFrame {
  enum class Stream { kStdout, kStderr };
  Stream stream = Stream::kStdout;
  std::string data;  // raw bytes, not necessarily whole lines or valid UTF-8
};

// One row of ListContainers().
struct ContainerSummary {
  std::string id;
  std::string name;   // without the engine's leading '/'
  std::string state;  // "created", "running", "exited", ...
  std::map<std::string, std::string> labels;
};

// An exec's state, from GET /exec/{id}/json.
struct ExecState {
  bool running = false;
  int64_t exit_code = 0;  // once it does not run
};

class DockerClient {
 public:
  virtual ~DockerClient() = default;

  // GET /version.
  virtual StatusOr<DockerVersion> Version() = 0;
  // OK when the engine answers GET /_ping.
  virtual Status Ping() = 0;

  // Pulls exactly one image: `ref` with its tag ("latest" when none) or digest. Each
  // progress line of the engine's stream ("Pulling fs layer", "Downloading 12MB/40MB", ...)
  // goes to `progress` when given. Fails with kInvalidArgument on a malformed reference;
  // with kNotFound or kPermissionDenied when the registry says so; with kUnavailable when
  // the registry cannot be reached (the engine's message names it) or when the stream
  // reports an error after it began (the HTTP status is then already 200).
  // `auth`, when given, goes to the engine as the X-Registry-Auth header, for the
  // reference's registry (Docker Hub's when it names none).
  virtual Status PullImage(const std::string& ref,
                           const std::optional<protocol::RegistryCredentials>& auth,
                           const std::function<void(const std::string&)>& progress) = 0;
  // Whether the engine holds `ref` locally.
  virtual StatusOr<bool> ImageExists(const std::string& ref) = 0;
  // POST /images/load with the tar file at `tar_path` (as written by `docker save`), for
  // hosts without a registry. Fails with kNotFound when the file cannot be opened and with
  // kInvalidArgument when the engine reports an error in its stream.
  virtual Status LoadImage(const std::string& tar_path) = 0;
  // POST /images/create?fromSrc=- with the tar file at `tar_path` as the image's root file
  // system (as `docker import` does), tagged `ref` (name:tag). Fails with kNotFound when
  // the file cannot be opened, kInvalidArgument on a malformed reference and when the
  // engine reports an error in its stream.
  virtual Status ImportImage(const std::string& tar_path, const std::string& ref) = 0;

  // Creates a container named `name` from `config` (the body of POST /containers/create)
  // and returns its id. kFailedPrecondition when the name is taken; kNotFound when the
  // image is missing.
  virtual StatusOr<std::string> CreateContainer(const std::string& name,
                                                const json::object& config) = 0;
  // Starts a created container; OK when it already runs.
  virtual Status StartContainer(const std::string& id) = 0;
  // Waits until the container is not running and returns its exit code. `timeout_s` = 0
  // waits without limit; when it passes first, fails with kUnavailable ("timed out").
  virtual StatusOr<int64_t> WaitContainer(const std::string& id, int64_t timeout_s) = 0;
  // The container's output so far: from `since` (0 = from the start), and only the last
  // `tail` lines when `tail` >= 0. Frames in the order the engine sent them.
  virtual StatusOr<std::vector<LogFrame>> Logs(const std::string& id, UnixMicros since,
                                               int tail) = 0;
  // Streams the container's output from its start, delivering each frame (or part of a
  // long frame) to `on_frame` as it arrives, and returns OK once the container has
  // stopped and all of its output has been delivered, each byte once. (Engine 20.10 can
  // end the stream before the last frames, which a second read then recovers: up to 256
  // frames; a wider gap is logged as "docker.logs_gap".) `keep_going`, when
  // given, is called about once a second while the stream is open and may block and make
  // other DockerClient calls (to stop the container, say); when it returns false the
  // stream is closed and OK returned at once.
  virtual Status FollowLogs(const std::string& id,
                            const std::function<void(const LogFrame&)>& on_frame,
                            const std::function<bool()>& keep_going) = 0;
  // Sends SIGTERM, then SIGKILL after `timeout_s` seconds; OK when it was not running.
  virtual Status StopContainer(const std::string& id, int timeout_s) = 0;
  // Removes the container (killing it first when `force`) and, when `remove_volumes`, its
  // anonymous volumes. kNotFound when there is no such container.
  virtual Status RemoveContainer(const std::string& id, bool force, bool remove_volumes) = 0;
  // A connected socket to the engine (the caller closes it) on which the request line and
  // header of GET (put: PUT) /containers/{id}/archive?path=`path` have been written:
  // the caller sends a PUT's body (a tar), framed as `chunked` or `length` say, and reads
  // the engine's HTTP answer (GET: the tar of that path). The connection closes after it.
  // kUnavailable when the engine cannot be reached.
  virtual StatusOr<int> OpenArchive(const std::string& id, const std::string& path, bool put,
                                    bool chunked, uint64_t length) = 0;
  // POST /containers/{id}/exec: an exec of `command` in the running container, with its
  // stdout and stderr attached, its stdin when `open_stdin`, and a terminal when `tty`
  // (TERM=xterm-256color); the exec's id. kNotFound when there is no such container,
  // kFailedPrecondition when it does not run.
  virtual StatusOr<std::string> CreateExec(const std::string& container_id,
                                           const std::vector<std::string>& command, bool tty,
                                           bool open_stdin) = 0;
  // POST /exec/{id}/start, upgraded to a raw stream: a connected, non-blocking socket
  // (the caller closes it) past the engine's answer. What the command writes comes out
  // of it (a terminal's bytes as they are; else the engine's multiplexed frames, as
  // internal::FrameDemuxer reads them); what is written to it goes to the command's
  // stdin, and shutting its write side closes that stdin.
  virtual StatusOr<int> StartExec(const std::string& exec_id, bool tty) = 0;
  // POST /exec/{id}/resize: the exec's terminal size.
  virtual Status ResizeExec(const std::string& exec_id, uint16_t rows, uint16_t columns) = 0;
  // GET /exec/{id}/json.
  virtual StatusOr<ExecState> InspectExec(const std::string& exec_id) = 0;
  // GET /containers/{id}/json.
  virtual StatusOr<json::object> InspectContainer(const std::string& id) = 0;
  // Every container, running or not, carrying `label_filter` ("key" or "key=value"; empty
  // for all containers).
  virtual StatusOr<std::vector<ContainerSummary>> ListContainers(
      const std::string& label_filter) = 0;

  // Creates a named volume with the local driver (or returns the existing one of that
  // name). `driver_opts` go to the driver: {"size": "10G"} asks for a quota (only on
  // data roots with quota support: the engine refuses it elsewhere with kInvalidArgument);
  // {"type": "tmpfs", "device": "tmpfs", "o": "size=10g"} makes a size-limited tmpfs.
  virtual Status CreateVolume(const std::string& name,
                              const std::map<std::string, std::string>& labels,
                              const std::map<std::string, std::string>& driver_opts) = 0;
  // kNotFound when there is no such volume; kFailedPrecondition when a container uses it.
  virtual Status RemoveVolume(const std::string& name) = 0;
  // Names of the volumes carrying `label_filter` (as for ListContainers).
  virtual StatusOr<std::vector<std::string>> ListVolumes(const std::string& label_filter) = 0;

  // Creates a user-defined bridge network and returns its id; kFailedPrecondition when the
  // name is taken. An `internal` network has no route out of the host. `options` go to
  // the bridge driver ({"com.docker.network.bridge.name": "gpxwl..."} names its bridge).
  virtual StatusOr<std::string> CreateNetwork(
      const std::string& name, const std::map<std::string, std::string>& labels, bool internal,
      const std::map<std::string, std::string>& options) = 0;
  // kNotFound when there is no such network.
  virtual Status RemoveNetwork(const std::string& name) = 0;
  // Names of the networks carrying `label_filter` (as for ListContainers).
  virtual StatusOr<std::vector<std::string>> ListNetworks(const std::string& label_filter) = 0;
};

// A client of the engine listening on the unix socket `socket_path`. Never fails: an
// unreachable engine shows as kUnavailable from each call.
std::unique_ptr<DockerClient> DockerEngineClient(std::string socket_path = "/var/run/docker.sock");

}  // namespace gpunex::agent
