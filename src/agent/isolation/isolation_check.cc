#include "agent/isolation/isolation_check.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "agent/isolation/self_image.h"
#include "agent/runtime/policy.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/thread_annotations.h"

namespace gpunex::agent::isolation {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMiB = 1024 * 1024;
// A listener goes away by itself after this long, should its check die with it.
constexpr int kListenerLifetimeS = 300;
// At most this many host addresses are tried (a host with hundreds of networks).
constexpr size_t kMaxHostAddresses = 64;

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// Printable ASCII only (the report is shown to the provider), at most `max` bytes.
std::string Clean(std::string_view s, size_t max = protocol::kMaxIsolationDetail) {
  std::string out;
  for (char c : s) {
    if (out.size() == max) break;
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

protocol::NetworkIsolation Report(const char* state, std::string detail,
                                  std::vector<std::string> reached = {}) {
  return {state, std::move(reached), Clean(detail)};
}

std::string Where(const ProbeTarget& t) { return t.address + ":" + std::to_string(t.port); }

// One line of `netprobe connect`: reached or not, and why not.
struct Line {
  bool reached = false;
  std::string where;
  std::string why;
};

// A random string of letters and digits.
std::string RandomHex(size_t n) { return Sha256Hex(NewSecret("p")).substr(0, n); }

// A random port in [20000, 60000).
int RandomPort() { return 20000 + static_cast<int>(std::stoul(RandomHex(8), nullptr, 16) % 40000); }

// Serialises the checks of one state directory; released when destroyed.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    fd_ = open((dir + "/isolation-check.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// One check's containers and networks, removed when it is destroyed.
class Probe {
 public:
  Probe(DockerClient& docker, std::string image, const IsolationCheckOptions& options)
      : docker_(docker),
        image_(std::move(image)),
        options_(options),
        id_(RandomHex(10)),
        token_(RandomHex(24)) {}

  // Removes the containers (all at once), then the networks.
  ~Probe() {
    auto remove_all = [this](const std::vector<std::string>& names, bool containers) {
      std::vector<std::thread> threads;
      for (const auto& name : names) {
        threads.emplace_back([this, name, containers] {
          // A container whose removal fails here is tried again by the sweep below.
          Status st = containers ? docker_.RemoveContainer(name, /*force=*/true,
                                                           /*remove_volumes=*/true)
                                 : docker_.RemoveNetwork(name);
          if (!st.ok() && st.code() != StatusCode::kNotFound) {
            LogWarn("isolation.cleanup_failed",
                    {{containers ? "container" : "network", name}, {"error", st.ToString()}});
          }
        });
      }
      for (auto& t : threads) t.join();
    };
    std::vector<std::string> containers;
    {
      MutexLock lock(&mu_);
      containers = containers_;
    }
    remove_all(containers, true);
    // Then whatever still carries this check's label, until none does for kQuietFor (or
    // kSweepFor has passed): a create whose answer was lost (a loaded engine may time out
    // and create it all the same), and a container the engine stopped listing while its
    // removal failed underneath (runc exit 255), which then comes back as exited, seen in
    // CI more than a second after it vanished (so one second of quiet was not enough).
    const auto deadline = std::chrono::steady_clock::now() + kSweepFor;
    int quiet = 0;  // seconds in a row with none listed
    for (;;) {
      auto list = docker_.ListContainers(std::string(kLabelProbe) + "=" + id_);
      if (list.ok() && list->empty()) {
        if (++quiet > kQuietFor.count()) break;
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      quiet = 0;
      if (std::chrono::steady_clock::now() > deadline) {
        LogWarn("isolation.cleanup_failed",
                {{"check", id_},
                 {"left", list.ok() ? std::to_string(list->size()) : list.status().ToString()}});
        break;
      }
      if (list.ok()) {
        for (const auto& c : *list) {
          if (Status st = docker_.RemoveContainer(c.id, /*force=*/true, /*remove_volumes=*/true);
              !st.ok() && st.code() != StatusCode::kNotFound) {
            LogWarn("isolation.cleanup_retry", {{"container", c.id}, {"error", st.ToString()}});
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    remove_all(networks_, false);
  }

  Probe(const Probe&) = delete;
  static constexpr std::chrono::seconds kSweepFor{15};
  static constexpr std::chrono::seconds kQuietFor{4};
  Probe& operator=(const Probe&) = delete;

  // What an earlier check of the same owner left (its agent died during it).
  void RemoveLeftovers() {
    const std::string filter = std::string(kLabelProbeOwner) + "=" + options_.owner;
    if (auto list = docker_.ListContainers(filter); list.ok()) {
      for (const auto& c : *list) (void)docker_.RemoveContainer(c.id, true, true);
    }
    if (auto list = docker_.ListNetworks(filter); list.ok()) {
      for (const auto& n : *list) (void)docker_.RemoveNetwork(n);
    }
  }

  // The prober's output and what it was asked to reach.
  StatusOr<std::pair<ProbePlan, std::string>> Run() {
    const std::string net_a = "gpunex-probe-" + id_ + "-a";
    const std::string net_b = "gpunex-probe-" + id_ + "-b";
    GPUNEX_RETURN_IF_ERROR(CreateNetwork(net_a));
    GPUNEX_RETURN_IF_ERROR(CreateNetwork(net_b));

    // The listeners start at once. On the workload-like networks (namespaces of their
    // own) any port is free; in the host's, another port is tried when one is taken.
    ProbePlan plan;
    const int port = RandomPort();
    auto workload =
        std::async(std::launch::async, [&] { return StartListenerOn("workload", net_b, port); });
    auto peer =
        std::async(std::launch::async, [&] { return StartListenerOn("peer", net_a, port); });
    std::string host_output;
    int host_port = 0;
    Status started;
    for (int attempt = 0; attempt < 3; ++attempt) {
      host_port = RandomPort();
      auto out = StartListener("host", "host", host_port, /*addresses=*/true);
      if (out.ok()) {
        host_output = std::move(*out);
        started = Status::Ok();
        break;
      }
      started = out.status();
    }
    auto workload_ip = workload.get();
    auto peer_ip = peer.get();
    GPUNEX_RETURN_IF_ERROR(started);
    GPUNEX_RETURN_IF_ERROR(workload_ip.status());
    GPUNEX_RETURN_IF_ERROR(peer_ip.status());
    for (const auto& a : ListenerAddresses(host_output)) {
      if (plan.host.size() == kMaxHostAddresses) break;
      plan.host.push_back({"host-" + std::to_string(plan.host.size() + 1), a, host_port});
    }
    if (plan.host.empty()) return Unavailable("the host listener found no IPv4 address");
    plan.workload = {"workload", *workload_ip, port};
    plan.peer = {"peer", *peer_ip, port};

    std::vector<std::string> args{"connect", "--token", token_, "--timeout-ms",
                                  std::to_string(options_.connect_timeout.count())};
    for (const auto& t : plan.Targets()) args.push_back(t.name + "=" + Where(t));
    GPUNEX_ASSIGN_OR_RETURN(std::string id, Start("prober", net_a, args));
    const int64_t wait_s =
        options_.step_timeout.count() +
        std::chrono::duration_cast<std::chrono::seconds>(options_.connect_timeout).count() + 1;
    GPUNEX_RETURN_IF_ERROR(docker_.WaitContainer(id, wait_s).status());
    GPUNEX_ASSIGN_OR_RETURN(std::string output, Output(id));
    return std::make_pair(std::move(plan), std::move(output));
  }

 private:
  Status CreateNetwork(const std::string& name) {
    GPUNEX_RETURN_IF_ERROR(
        docker_.CreateNetwork(name, Labels(), /*internal=*/false, WorkloadNetworkOptions(name))
            .status());
    networks_.push_back(name);
    return Status::Ok();
  }

  std::map<std::string, std::string> Labels() const {
    return {{kLabelProbe, id_}, {kLabelProbeOwner, options_.owner}};
  }

  std::string ContainerName(const std::string& role) const {
    return "gpunex-probe-" + id_ + "-" + role;
  }

  // Creates and starts a probe container running `netprobe args...`; its id.
  StatusOr<std::string> Start(const std::string& role, const std::string& network,
                              const std::vector<std::string>& args) {
    json::array cmd{kSelfImageExecutable, "netprobe"};
    for (const auto& a : args) cmd.emplace_back(a);
    json::object host{
        {"NetworkMode", network},
        {"ReadonlyRootfs", true},
        {"CapDrop", json::array{"ALL"}},
        {"SecurityOpt", json::array{"no-new-privileges"}},
        {"Memory", 64 * kMiB},
        {"MemorySwap", 64 * kMiB},
        {"PidsLimit", 64},
        {"NanoCpus", int64_t{500'000'000}},
        {"RestartPolicy", json::object{{"Name", "no"}, {"MaximumRetryCount", 0}}},
        {"LogConfig",
         json::object{{"Type", "json-file"}, {"Config", json::object{{"max-size", "1m"}}}}},
    };
    json::object config{
        {"Image", image_},
        {"Cmd", std::move(cmd)},
        {"User", "65534:65534"},
        {"Tty", false},
        {"Labels", json::object{{kLabelProbe, id_}, {kLabelProbeOwner, options_.owner}}},
        {"HostConfig", std::move(host)}};
    GPUNEX_ASSIGN_OR_RETURN(std::string id, docker_.CreateContainer(ContainerName(role), config));
    {
      MutexLock lock(&mu_);
      containers_.push_back(id);
    }
    GPUNEX_RETURN_IF_ERROR(docker_.StartContainer(id));
    return id;
  }

  StatusOr<std::string> Output(const std::string& id) {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<LogFrame> frames, docker_.Logs(id, 0, -1));
    std::string out;
    for (const auto& f : frames) {
      if (f.stream == LogFrame::Stream::kStdout) out += f.data;
    }
    return out;
  }

  // Starts a listener and waits until it says "ready"; what it printed.
  StatusOr<std::string> StartListener(const std::string& role, const std::string& network, int port,
                                      bool addresses) {
    std::vector<std::string> args{"listen",
                                  "--port",
                                  std::to_string(port),
                                  "--token",
                                  token_,
                                  "--lifetime-s",
                                  std::to_string(kListenerLifetimeS)};
    if (addresses) args.push_back("--addresses");
    GPUNEX_ASSIGN_OR_RETURN(std::string id, Start(role, network, args));
    const auto deadline = Clock::now() + options_.step_timeout;
    while (true) {
      GPUNEX_ASSIGN_OR_RETURN(std::vector<LogFrame> frames, docker_.Logs(id, 0, -1));
      std::string out, err;
      for (const auto& f : frames) (f.stream == LogFrame::Stream::kStdout ? out : err) += f.data;
      for (const auto& line : Lines(out)) {
        if (line == "ready") return out;
      }
      GPUNEX_ASSIGN_OR_RETURN(json::object info, docker_.InspectContainer(id));
      const json::value* state = info.if_contains("State");
      const bool running = state && state->is_object() && state->get_object().contains("Running") &&
                           state->get_object().at("Running").is_bool() &&
                           state->get_object().at("Running").get_bool();
      if (!running) {
        return Unavailable("the " + role +
                           " listener stopped: " + Clean(err.empty() ? out : err, 300));
      }
      if (Clock::now() >= deadline) {
        return Unavailable("the " + role + " listener was not ready within " +
                           std::to_string(options_.step_timeout.count()) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // A listener on a workload-like network; its address there.
  StatusOr<std::string> StartListenerOn(const std::string& role, const std::string& network,
                                        int port) {
    GPUNEX_RETURN_IF_ERROR(StartListener(role, network, port, /*addresses=*/false).status());
    return AddressOn(role, network);
  }

  // The IPv4 address of the `role` container on `network`.
  StatusOr<std::string> AddressOn(const std::string& role, const std::string& network) {
    GPUNEX_ASSIGN_OR_RETURN(json::object info, docker_.InspectContainer(ContainerName(role)));
    const json::value* settings = info.if_contains("NetworkSettings");
    const json::value* nets = settings && settings->is_object()
                                  ? settings->get_object().if_contains("Networks")
                                  : nullptr;
    const json::value* net =
        nets && nets->is_object() ? nets->get_object().if_contains(network) : nullptr;
    const json::value* ip =
        net && net->is_object() ? net->get_object().if_contains("IPAddress") : nullptr;
    if (!ip || !ip->is_string() || ip->get_string().empty()) {
      return Internal("the " + role + " container has no address on " + network);
    }
    return std::string(ip->get_string());
  }

  DockerClient& docker_;
  const std::string image_;
  const IsolationCheckOptions& options_;
  const std::string id_;
  const std::string token_;
  Mutex mu_;  // the listeners start on threads of their own
  std::vector<std::string> containers_ GUARDED_BY(mu_);
  std::vector<std::string> networks_;  // made by Run()'s thread only
};

}  // namespace

std::string CheckOwner(const std::string& machine_key) {
  return Sha256Hex("gpunex probe owner\n" + machine_key).substr(0, 12);
}

std::vector<ProbeTarget> ProbePlan::Targets() const {
  std::vector<ProbeTarget> out{peer, workload};
  out.insert(out.end(), host.begin(), host.end());
  return out;
}

std::vector<std::string> ListenerAddresses(std::string_view listener_output) {
  std::vector<std::string> out;
  for (const auto& line : Lines(listener_output)) {
    if (line.starts_with("address ")) out.push_back(line.substr(8));
  }
  return out;
}

protocol::NetworkIsolation JudgeProbe(const ProbePlan& plan, std::string_view prober_output) {
  std::map<std::string, Line> lines;
  bool done = false;
  for (const auto& text : Lines(prober_output)) {
    if (text == "done") {
      done = true;
      continue;
    }
    // "reached NAME A:P" or "blocked NAME A:P WHY..."
    const bool reached = text.starts_with("reached ");
    if (!reached && !text.starts_with("blocked ")) continue;
    size_t name_end = text.find(' ', 8);
    if (name_end == std::string::npos) continue;
    size_t where_end = text.find(' ', name_end + 1);
    Line l;
    l.reached = reached;
    l.where = text.substr(name_end + 1, where_end == std::string::npos ? std::string::npos
                                                                       : where_end - name_end - 1);
    if (where_end != std::string::npos) l.why = text.substr(where_end + 1);
    lines[text.substr(8, name_end - 8)] = std::move(l);
  }
  if (!done) {
    return Report(
        protocol::kIsolationUnverified,
        "the probe container did not finish; it printed: " +
            Clean(prober_output.substr(prober_output.size() > 300 ? prober_output.size() - 300 : 0),
                  300));
  }
  for (const auto& t : plan.Targets()) {
    if (!lines.contains(t.name)) {
      return Report(protocol::kIsolationUnverified, "the probe did not try " + t.name);
    }
  }
  const Line& peer = lines[plan.peer.name];
  if (!peer.reached) {
    return Report(protocol::kIsolationUnverified,
                  "a container on a workload network could not reach a container on its own "
                  "network (" +
                      peer.where + ": " + peer.why +
                      "), so what it could not reach proves nothing; is the engine's bridge "
                      "networking working?");
  }
  const Line& workload = lines[plan.workload.name];
  std::vector<std::string> hosts_reached, hosts_blocked;
  for (const auto& h : plan.host) {
    const Line& l = lines[h.name];
    (l.reached ? hosts_reached : hosts_blocked)
        .push_back(l.reached ? l.where : l.where + ": " + l.why);
  }
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
  };
  if (workload.reached || !hosts_reached.empty()) {
    std::vector<std::string> reached, what;
    if (workload.reached) {
      reached.push_back(protocol::kReachedWorkload);
      what.push_back("another workload network's container at " + workload.where);
    }
    if (!hosts_reached.empty()) {
      reached.push_back(protocol::kReachedHost);
      what.push_back("a listener on the host at " + join(hosts_reached, ", "));
    }
    return Report(protocol::kNotIsolated,
                  "a container on a workload network reached " + join(what, " and "),
                  std::move(reached));
  }
  return Report(protocol::kIsolated,
                "a container on a workload network reached neither another workload network's "
                "container (" +
                    workload.where + ": " + workload.why + ") nor the host (" +
                    join(hosts_blocked, "; ") + ")");
}

std::string IsolationFix(const protocol::NetworkIsolation& report) {
  if (report.state == protocol::kIsolated || report.state == protocol::kIsolationNoEngine) {
    return "";
  }
  if (report.state == protocol::kNotIsolated) {
    std::string fix;
    bool workload = false, host = false;
    for (const auto& r : report.reached) {
      workload = workload || r == protocol::kReachedWorkload;
      host = host || r == protocol::kReachedHost;
    }
    if (workload) {
      fix +=
          "turn Docker's iptables rules on (\"iptables\": true in /etc/docker/daemon.json, "
          "the default; restart Docker) so that workload networks cannot reach each other";
    }
    if (host) {
      if (!fix.empty()) fix += "; ";
      fix += std::string("keep workload networks from the host's services: iptables -I INPUT -i ") +
             kWorkloadBridgePrefix +
             "+ -j REJECT (made to survive reboots, e.g. with "
             "iptables-persistent)";
    }
    return fix + "; then restart gpunex-agent or wait for its next check";
  }
  if (report.state == protocol::kIsolationChecking) return "wait for the check to end";
  return "fix what the detail names, then restart gpunex-agent; `gpunex-agent self-test` runs "
         "the check again";
}

std::optional<protocol::NetworkIsolation> EngineUnanswered(DockerClient& docker) {
  Status st = docker.Ping();
  if (st.ok()) return std::nullopt;
  return Report(st.code() == StatusCode::kUnavailable ? protocol::kIsolationNoEngine
                                                      : protocol::kIsolationUnverified,
                st.message());
}

protocol::NetworkIsolation CheckNetworkIsolation(DockerClient& docker,
                                                 const IsolationCheckOptions& options) {
  auto verdict = [&options](protocol::NetworkIsolation report) {
    LogInfo("isolation.checked", {{"state", report.state}, {"detail", report.detail}});
    if (options.on_verdict) options.on_verdict(report);
    return report;
  };
  if (auto unanswered = EngineUnanswered(docker)) return verdict(*std::move(unanswered));
  if (options.owner.empty()) {
    return verdict(
        Report(protocol::kIsolationUnverified, "the check has no owner (a bug of the agent)"));
  }
  DirLock lock(options.work_dir);
  auto image = EnsureSelfImage(docker, options.work_dir);
  if (!image.ok()) {
    return verdict(Report(protocol::kIsolationUnverified,
                          "cannot make the probe image: " + image.status().message()));
  }
  protocol::NetworkIsolation report;
  constexpr int kAttempts = 2;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) {
      LogWarn("isolation.confirming", {{"detail", report.detail}});
      std::this_thread::sleep_for(options.confirm_after);
    }
    Probe probe(docker, *image, options);
    probe.RemoveLeftovers();
    auto ran = probe.Run();
    report = ran.ok() ? JudgeProbe(ran->first, ran->second)
                      : Report(protocol::kIsolationUnverified,
                               "the check could not run: " + ran.status().message());
    // Final unless something was reached the first time: told now, and the probe's
    // containers removed afterwards (its destructor).
    if (report.state != protocol::kNotIsolated || attempt + 1 == kAttempts) {
      report = verdict(std::move(report));
      break;
    }
  }
  return report;
}

}  // namespace gpunex::agent::isolation
