#include "agent/runtime/workload_runner.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "agent/runtime/endings.h"
#include "agent/runtime/exec_sessions.h"
#include "agent/runtime/netns_dial.h"
#include "common/agent_protocol.h"
#include "common/log.h"
#include "common/thread_annotations.h"

namespace gpunex::agent {

const char* WorkloadStateName(WorkloadState state) {
  switch (state) {
    case WorkloadState::kStarting:
      return "starting";
    case WorkloadState::kRunning:
      return "running";
    case WorkloadState::kExited:
      return "exited";
    case WorkloadState::kFailed:
      return "failed";
    case WorkloadState::kStopped:
      return "stopped";
  }
  return "unknown";
}

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr char kManagedFilter[] = "io.gpunex.managed=true";
// The stop reason of the workloads that the runner's destruction stops.
constexpr char kAgentShutdown[] = "agent shutdown";

// Logged once per process: scratch volumes have no size limit on this engine.
std::atomic<bool> g_warned_unlimited_scratch{false};

std::map<std::string, std::string> WorkloadLabels(const std::string& workload_id,
                                                  const std::string& owner) {
  std::map<std::string, std::string> labels{{kLabelManaged, "true"}, {kLabelWorkload, workload_id}};
  if (!owner.empty()) labels[kLabelAgent] = owner;
  return labels;
}

// The workload id in a name made by WorkloadNetworkName() or ScratchVolumeName(), or "".
std::string WorkloadOfName(const std::string& name, const std::string& prefix) {
  return name.starts_with(prefix) ? name.substr(prefix.size()) : "";
}

class Runner final : public WorkloadRunner {
 public:
  Runner(DockerClient* docker, WorkloadRunnerOptions options, WorkloadCallbacks callbacks)
      : docker_(*docker), options_(std::move(options)), callbacks_(std::move(callbacks)) {}

  ~Runner() override {
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      shutting_down_ = true;
      for (auto& [id, e] : entries_) {
        MutexLock entry_lock(&e->mu);
        if (!e->done) {
          e->stop_requested = true;
          if (e->stop_reason.empty()) e->stop_reason = kAgentShutdown;
        }
        if (e->thread.joinable()) threads.push_back(std::move(e->thread));
      }
    }
    for (auto& t : threads) t.join();
  }

  Status Start(WorkloadSpec spec) override EXCLUDES(mu_) {
    // Moved out of the spec at once, so that no copy of the spec carries them.
    std::optional<protocol::RegistryCredentials> auth = std::exchange(spec.registry_auth, {});
    struct WipeOnExit {
      std::optional<protocol::RegistryCredentials>& auth;
      ~WipeOnExit() {
        if (auth) protocol::Wipe(*auth);
      }
    } wipe{auth};
    std::vector<std::thread> ended;
    {
      MutexLock lock(&mu_);
      if (shutting_down_) return Unavailable("the workload runner is shutting down");
      if (entries_.contains(spec.workload_id)) {
        return AlreadyExists("workload " + spec.workload_id + " is already known to this agent");
      }
      for (const auto& gpu : spec.gpu_uuids) {
        if (options_.offered_gpus && !options_.offered_gpus->contains(gpu)) {
          return PermissionDenied("GPU " + gpu + " is not offered by this machine");
        }
        for (const auto& [id, e] : entries_) {
          if (Done(*e)) continue;
          for (const auto& used : e->spec.gpu_uuids) {
            if (used == gpu) {
              return FailedPrecondition("GPU " + gpu + " is in use by workload " + id);
            }
          }
        }
      }
      ended = ReapLocked();
      auto e = std::make_shared<Entry>(spec, std::move(auth));
      MutexLock entry_lock(&e->mu);
      e->status.workload_id = spec.workload_id;
      entries_[spec.workload_id] = e;
      e->thread = std::thread([this, e] { Run(*e); });
    }
    for (auto& t : ended) t.join();
    return Status::Ok();
  }

  Status Stop(const std::string& workload_id) override EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      auto it = entries_.find(workload_id);
      if (it != entries_.end()) {
        RequestStop(*it->second, "stop");
        return Status::Ok();
      }
    }
    // Not followed by this runner: act on the container by its name all the same.
    const std::string name = WorkloadContainerName(workload_id);
    Status st = docker_.StopContainer(name, options_.stop_grace_s);
    if (st.code() == StatusCode::kNotFound) return NotFound("no workload " + workload_id);
    (void)docker_.RemoveContainer(name, /*force=*/true, /*remove_volumes=*/true);
    (void)docker_.RemoveVolume(ScratchVolumeName(workload_id));
    if (!options_.policy.network_none) {
      (void)docker_.RemoveNetwork(WorkloadNetworkName(workload_id));
    }
    return st;
  }

  StatusOr<WorkloadStatus> Wait(const std::string& workload_id, int64_t timeout_ms) override
      EXCLUDES(mu_) {
    const auto until = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
    std::shared_ptr<Entry> e = Find(workload_id);
    if (!e) return NotFound("no workload " + workload_id);
    MutexLock lock(&e->mu);
    while (!e->done) {
      const auto now = SteadyClock::now();
      if (now >= until) {
        return Unavailable("workload " + workload_id + " is still " +
                           WorkloadStateName(e->status.state));
      }
      e->ended.WaitFor(&e->mu, until - now);
    }
    return e->status;
  }

  StatusOr<WorkloadStatus> Get(const std::string& workload_id) override EXCLUDES(mu_) {
    std::shared_ptr<Entry> e = Find(workload_id);
    if (!e) return NotFound("no workload " + workload_id);
    MutexLock lock(&e->mu);
    return e->status;
  }

  // The names `list` gives of the managed objects that are this agent's: those with its
  // kLabelAgent, and those without one (made before the label).
  StatusOr<std::vector<std::string>> Ours(
      StatusOr<std::vector<std::string>> (DockerClient::*list)(const std::string&)) {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> managed, (docker_.*list)(kManagedFilter));
    if (options_.policy.owner.empty()) return managed;
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> labelled, (docker_.*list)(kLabelAgent));
    GPUNEX_ASSIGN_OR_RETURN(
        std::vector<std::string> mine,
        (docker_.*list)(std::string(kLabelAgent) + "=" + options_.policy.owner));
    const std::set<std::string> others(labelled.begin(), labelled.end());
    const std::set<std::string> ours(mine.begin(), mine.end());
    std::erase_if(managed,
                  [&](const std::string& n) { return others.contains(n) && !ours.contains(n); });
    return managed;
  }

  // The container of a workload that runs here now.
  StatusOr<std::string> RunningContainer(const std::string& workload_id) EXCLUDES(mu_) {
    std::shared_ptr<Entry> e = Find(workload_id);
    if (!e) return NotFound("no workload " + workload_id + " runs here");
    MutexLock lock(&e->mu);
    if (e->done || e->status.state != WorkloadState::kRunning) {
      return NotFound("workload " + workload_id + " is not running");
    }
    return e->status.container_id;
  }

  StatusOr<int> DialPort(const std::string& workload_id, uint16_t port,
                         std::chrono::milliseconds timeout) override EXCLUDES(mu_) {
    std::shared_ptr<Entry> e = Find(workload_id);
    if (!e) return NotFound("no workload " + workload_id + " runs here");
    bool declared = false;
    for (const auto& p : e->spec.ports) declared = declared || p.port == port;
    if (!declared) {
      return PermissionDenied("workload " + workload_id + " declared no port " +
                              std::to_string(port));
    }
    GPUNEX_ASSIGN_OR_RETURN(std::string container, RunningContainer(workload_id));
    GPUNEX_ASSIGN_OR_RETURN(json::object info, docker_.InspectContainer(container));
    const json::value* state = info.if_contains("State");
    const json::value* pid =
        state && state->is_object() ? state->get_object().if_contains("Pid") : nullptr;
    if (!pid || !pid->is_int64() || pid->get_int64() <= 0) {
      return NotFound("workload " + workload_id + "'s container has no process");
    }
    return DialInNetns(ProcessNetns(pid->get_int64()), port, timeout);
  }

  StatusOr<int> OpenFiles(const StreamTarget& target) override EXCLUDES(mu_) {
    if (target.kind != StreamTarget::Kind::kFiles || !FilesPathProblem(target.path).empty()) {
      return InvalidArgument("not a files target");
    }
    GPUNEX_ASSIGN_OR_RETURN(std::string container, RunningContainer(target.workload_id));
    return docker_.OpenArchive(container, target.path, target.put, target.chunked, target.length);
  }

  StatusOr<int> OpenExec(const StreamTarget& target) override EXCLUDES(mu_) {
    GPUNEX_ASSIGN_OR_RETURN(std::string container, RunningContainer(target.workload_id));
    return execs_.Start(container, target);
  }

  std::vector<WorkloadStatus> InFlight() override EXCLUDES(mu_) {
    std::vector<std::shared_ptr<Entry>> entries;
    {
      MutexLock lock(&mu_);
      for (const auto& [id, e] : entries_) entries.push_back(e);
    }
    std::vector<WorkloadStatus> out;
    for (const auto& e : entries) {
      MutexLock lock(&e->mu);
      if (!e->done) out.push_back(e->status);
    }
    return out;
  }

  Status Reconcile(const std::set<std::string>& keep) override EXCLUDES(mu_) {
    // Workloads this runner runs: stop those not to keep; leave all of them to their
    // threads, which clean up after themselves.
    {
      MutexLock lock(&mu_);
      for (auto& [id, e] : entries_) {
        if (!keep.contains(id)) RequestStop(*e, "reconcile");
      }
    }
    // Checked at each removal, so that a workload started meanwhile is not touched.
    auto owned = [&](const std::string& workload) {
      if (workload.empty()) return false;
      if (keep.contains(workload)) return true;
      std::shared_ptr<Entry> e = Find(workload);
      return e && !Done(*e);
    };
    Status first;
    auto note = [&first](const Status& st, const char* what, const std::string& name) {
      if (st.ok() || st.code() == StatusCode::kNotFound) return;
      LogWarn("runtime.reconcile_failed",
              {{"object", what}, {"name", name}, {"error", st.ToString()}});
      if (first.ok()) first = st;
    };

    auto containers = docker_.ListContainers(kManagedFilter);
    if (!containers.ok()) return containers.status();
    for (const auto& c : *containers) {
      // Another agent's, on an engine they share.
      if (auto agent = c.labels.find(kLabelAgent);
          agent != c.labels.end() && agent->second != options_.policy.owner) {
        continue;
      }
      auto it = c.labels.find(kLabelWorkload);
      std::string workload = it == c.labels.end() ? "" : it->second;
      if (!workload.empty() && keep.contains(workload)) {
        // A kept workload this runner does not follow (it ran under an earlier agent
        // process): supervise it from here on.
        MutexLock lock(&mu_);
        if (!shutting_down_ && !entries_.contains(workload)) AdoptLocked(c, workload);
        continue;
      }
      if (owned(workload)) continue;
      LogInfo("runtime.reconcile_remove",
              {{"container", c.name}, {"workload", workload}, {"state", c.state}});
      note(docker_.RemoveContainer(c.id, /*force=*/true, /*remove_volumes=*/true), "container",
           c.name);
    }
    // Volumes and networks after the containers that used them.
    auto volumes = Ours(&DockerClient::ListVolumes);
    if (!volumes.ok()) return volumes.status();
    for (const auto& v : *volumes) {
      if (owned(WorkloadOfName(v, ScratchVolumeName("")))) continue;
      note(docker_.RemoveVolume(v), "volume", v);
    }
    auto networks = Ours(&DockerClient::ListNetworks);
    if (!networks.ok()) return networks.status();
    for (const auto& n : *networks) {
      if (owned(WorkloadOfName(n, WorkloadNetworkName("")))) continue;
      note(docker_.RemoveNetwork(n), "network", n);
    }
    return first;
  }

 private:
  // One workload, shared by entries_ and the workload's thread. What changes is guarded
  // by the entry's own mutex, which is taken after the runner's mu_ when both are held
  // (and never the other way round).
  struct Entry {
    Entry(WorkloadSpec s, std::optional<protocol::RegistryCredentials> a)
        : spec(std::move(s)), auth(std::move(a)) {}
    ~Entry() { WipeAuth(); }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

    void WipeAuth() {
      if (auth) protocol::Wipe(*auth);
      auth.reset();
    }

    const WorkloadSpec spec;
    // For the pull; wiped when it has ended. Only the workload's thread touches it.
    std::optional<protocol::RegistryCredentials> auth;
    Mutex mu;
    CondVar ended;  // signalled when `done` becomes true
    WorkloadStatus status GUARDED_BY(mu);
    bool done GUARDED_BY(mu) = false;
    bool stop_requested GUARDED_BY(mu) = false;
    std::string stop_reason GUARDED_BY(mu);          // "stop", "reconcile", ...
    std::string container_to_remove GUARDED_BY(mu);  // id, or name when unsure
    SteadyClock::time_point deadline GUARDED_BY(mu) = SteadyClock::time_point::max();
    // Taken out by ReapLocked() or ~Runner() and joined outside the locks.
    std::thread thread GUARDED_BY(mu);
  };

  // The entry of `workload_id`, or null.
  std::shared_ptr<Entry> Find(const std::string& workload_id) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    auto it = entries_.find(workload_id);
    return it == entries_.end() ? nullptr : it->second;
  }

  static bool Done(Entry& e) EXCLUDES(e.mu) {
    MutexLock lock(&e.mu);
    return e.done;
  }

  static void RequestStop(Entry& e, const char* reason) EXCLUDES(e.mu) {
    MutexLock lock(&e.mu);
    if (e.done || e.stop_requested) return;
    e.stop_requested = true;
    e.stop_reason = reason;
  }

  // Takes the threads of ended workloads, for joining outside the lock (they are about to
  // return), and forgets the oldest ended workloads beyond max_finished.
  std::vector<std::thread> ReapLocked() REQUIRES(mu_) {
    std::vector<std::thread> out;
    for (auto& [id, e] : entries_) {
      MutexLock lock(&e->mu);
      if (e->done && e->thread.joinable()) out.push_back(std::move(e->thread));
    }
    while (finished_.size() > options_.max_finished) {
      entries_.erase(finished_.front());
      finished_.pop_front();
    }
    return out;
  }

  static bool StopRequested(Entry& e) EXCLUDES(e.mu) {
    MutexLock lock(&e.mu);
    return e.stop_requested;
  }

  // Whether the stop was the agent's shutting down rather than a request.
  static bool StoppedByShutdown(Entry& e) EXCLUDES(e.mu) {
    MutexLock lock(&e.mu);
    return e.stop_reason == kAgentShutdown;
  }

  bool ShuttingDown() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return shutting_down_;
  }

  // Records and reports a state that is not terminal.
  void Report(Entry& e, WorkloadState state) EXCLUDES(e.mu) {
    WorkloadStatus copy;
    {
      MutexLock lock(&e.mu);
      e.status.state = state;
      copy = e.status;
    }
    LogInfo("runtime.workload_state",
            {{"workload", copy.workload_id}, {"state", WorkloadStateName(state)}});
    if (callbacks_.on_state) callbacks_.on_state(copy);
  }

  // Cleans up, then reports the terminal state and wakes Wait().
  void Finish(Entry& e, WorkloadState state, std::optional<int64_t> exit_code, std::string reason,
              std::string cause) EXCLUDES(mu_, e.mu) {
    Cleanup(e);
    WorkloadStatus copy;
    {
      MutexLock lock(&e.mu);
      e.status.state = state;
      e.status.exit_code = exit_code;
      e.status.reason = std::move(reason);
      e.status.cause = std::move(cause);
      copy = e.status;
    }
    json::object fields{
        {"workload", copy.workload_id}, {"state", WorkloadStateName(state)}, {"cause", copy.cause}};
    if (copy.exit_code) fields["exit_code"] = *copy.exit_code;
    if (!copy.reason.empty()) fields["reason"] = copy.reason;
    LogInfo("runtime.workload_state", std::move(fields));
    if (callbacks_.on_state) callbacks_.on_state(copy);
    {
      MutexLock lock(&mu_);
      MutexLock entry_lock(&e.mu);
      e.done = true;
      finished_.push_back(copy.workload_id);
      e.ended.SignalAll();
    }
  }

  // Before the container ran: the step that failed and the engine's words.
  void Fail(Entry& e, const std::string& step, const Status& st, std::string cause)
      EXCLUDES(mu_, e.mu) {
    std::string reason = step + ": " + st.message();
    for (const auto& [field, message] : st.fields()) reason += "; " + field + " " + message;
    Finish(e, WorkloadState::kFailed, std::nullopt, std::move(reason), std::move(cause));
  }

  void FinishStopped(Entry& e) EXCLUDES(mu_, e.mu) {
    Finish(e, WorkloadState::kStopped, std::nullopt, "",
           StoppedByShutdown(e) ? protocol::kCauseAgentShutdown : protocol::kCauseStopped);
  }

  // The end of a container that ran, from what the engine says of it now (endings.h).
  void FinishRun(Entry& e, const std::string& id, EngineEnd end) EXCLUDES(mu_, e.mu) {
    if (end.stopped) end.agent_shutdown = StoppedByShutdown(e);
    if (!end.timed_out && !end.stopped) ReadInspect(docker_.InspectContainer(id), &end);
    EndVerdict v = RunEnd(end);
    Finish(e, v.state, end.exit_code, std::move(v.reason), std::move(v.cause));
  }

  // The body of a workload's thread.
  void Run(Entry& e) EXCLUDES(mu_, e.mu) {
    const WorkloadSpec& spec = e.spec;
    Report(e, WorkloadState::kStarting);

    // The policy first: nothing is created for a workload it refuses.
    json::object config = BuildContainerConfig(spec, options_.policy);
    if (Status st = CheckContainerConfig(config); !st.ok()) {
      LogError("runtime.policy_violation",
               {{"workload", spec.workload_id}, {"error", st.ToString()}});
      return Fail(e, "policy", st, protocol::kCausePolicyRefused);
    }
    auto exists = docker_.ImageExists(spec.image);
    if (!exists.ok()) {
      // Only a reference the engine refuses is the image's; the rest is the engine's.
      const bool bad_ref = exists.status().code() == StatusCode::kInvalidArgument;
      return Fail(e, bad_ref ? "image" : "engine", exists.status(),
                  bad_ref ? protocol::kCauseImageNotFound : protocol::kCauseEngineError);
    }
    if (!*exists) {
      LogInfo("runtime.image_pull", {{"workload", spec.workload_id}, {"image", spec.image}});
      Status st = docker_.PullImage(spec.image, e.auth, nullptr);
      if (!st.ok()) {
        std::string cause = PullFailureCause(st);
        // Not reaching the registry is the registry's unless the engine is what failed.
        if (cause == protocol::kCauseRegistryUnreachable && !docker_.Ping().ok()) {
          cause = protocol::kCauseEngineError;
        }
        LogWarn("runtime.image_pull_failed",
                {{"workload", spec.workload_id}, {"cause", cause}, {"error", st.ToString()}});
        return Fail(e, "image", st, std::move(cause));
      }
    }
    e.WipeAuth();  // pulled, or there was nothing to pull
    if (StopRequested(e)) return FinishStopped(e);

    if (!options_.policy.network_none) {
      const std::string name = WorkloadNetworkName(spec.workload_id);
      auto net =
          docker_.CreateNetwork(name, WorkloadLabels(spec.workload_id, options_.policy.owner),
                                /*internal=*/false, WorkloadNetworkOptions(name));
      // A network of that name left by an earlier attempt is the workload's own: use it.
      if (!net.ok() && net.status().code() != StatusCode::kFailedPrecondition) {
        return Fail(e, "network", net.status(), protocol::kCauseEngineError);
      }
    }
    if (Status st = CreateScratch(spec); !st.ok()) {
      return Fail(e, "scratch volume", st, protocol::kCauseEngineError);
    }

    auto id = docker_.CreateContainer(WorkloadContainerName(spec.workload_id), config);
    if (!id.ok()) {
      // Unavailable: the engine may have created it before the answer was lost. Any other
      // failure (a name conflict above all) means the name is not ours to remove.
      if (id.status().code() == StatusCode::kUnavailable) {
        MutexLock lock(&e.mu);
        e.container_to_remove = WorkloadContainerName(spec.workload_id);
      }
      return Fail(e, "create", id.status(), protocol::kCauseEngineError);
    }
    {
      MutexLock lock(&e.mu);
      e.status.container_id = *id;
      e.container_to_remove = *id;
    }
    if (StopRequested(e)) return FinishStopped(e);
    if (Status st = docker_.StartContainer(*id); !st.ok()) {
      return Fail(e, "start", st, StartFailureCause(st));
    }
    {
      MutexLock lock(&e.mu);
      if (spec.timeout_s > 0) {
        e.deadline = SteadyClock::now() + std::chrono::seconds(spec.timeout_s);
      }
    }
    Report(e, WorkloadState::kRunning);

    FinishRun(e, *id, Supervise(e, *id));
  }

  // Follows a container started by an earlier agent process.
  void AdoptLocked(const ContainerSummary& c, const std::string& workload) REQUIRES(mu_) {
    WorkloadSpec spec;
    spec.workload_id = workload;
    if (auto g = c.labels.find(kLabelGpus); g != c.labels.end()) {
      std::string list = g->second;
      for (size_t pos = 0; pos < list.size();) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        if (comma > pos) spec.gpu_uuids.push_back(list.substr(pos, comma - pos));
        pos = comma + 1;
      }
    }
    // Its declared ports, which its streams may still reach.
    if (auto p = c.labels.find(kLabelPorts); p != c.labels.end()) {
      if (auto ports = ParsePortsLabel(p->second)) spec.ports = std::move(*ports);
    }
    auto e = std::make_shared<Entry>(std::move(spec), std::nullopt);
    MutexLock entry_lock(&e->mu);
    e->status.workload_id = workload;
    e->status.container_id = c.id;
    e->status.state = WorkloadState::kRunning;
    e->container_to_remove = c.id;
    entries_[workload] = e;
    LogInfo("runtime.workload_adopted",
            {{"workload", workload}, {"container", c.id}, {"state", c.state}});
    e->thread = std::thread([this, e, id = c.id] { RunAdopted(*e, id); });
  }

  // The thread of an adopted workload: waits for the end (stopping it when asked), then
  // forwards the output written since the adoption and reports the end. The timeout of
  // the original request is not known here and is not enforced.
  void RunAdopted(Entry& e, const std::string& id) EXCLUDES(mu_, e.mu) {
    const UnixMicros since = NowMicros();
    EngineEnd end;
    bool stop_sent = false;
    for (;;) {
      auto code = docker_.WaitContainer(id, 1);
      if (code.ok()) {
        end.exit_code = *code;
        break;
      }
      if (code.status().code() == StatusCode::kNotFound) {
        end.gone = true;
        break;
      }
      const bool stop = StopRequested(e);
      if (stop_sent && ShuttingDown()) break;
      if (stop && !stop_sent) {
        stop_sent = true;
        end.stopped = true;
        if (Status st = docker_.StopContainer(id, options_.stop_grace_s);
            !st.ok() && st.code() != StatusCode::kNotFound) {
          (void)docker_.RemoveContainer(id, /*force=*/true, /*remove_volumes=*/true);
        }
      }
    }
    if (auto frames = docker_.Logs(id, since, -1); frames.ok() && callbacks_.on_log) {
      for (const auto& f : *frames) callbacks_.on_log(e.spec.workload_id, f);
    }
    FinishRun(e, id, end);
  }

  // Follows the running container's output until it ends, stopping it when asked to or
  // when its timeout passes.
  EngineEnd Supervise(Entry& e, const std::string& id) EXCLUDES(mu_, e.mu) {
    EngineEnd end;
    bool stop_sent = false;
    // Called about once a second; stops the container once when it should end.
    auto check = [&]() -> bool {
      bool stop;
      std::string why;
      {
        MutexLock lock(&e.mu);
        why = e.stop_reason;
        if (!end.stopped && !end.timed_out) {
          if (e.stop_requested) {
            end.stopped = true;
          } else if (SteadyClock::now() >= e.deadline) {
            end.timed_out = true;
          }
        }
        stop = end.stopped || end.timed_out;
      }
      if (stop && !stop_sent) {
        stop_sent = true;
        LogInfo("runtime.workload_stop",
                {{"workload", e.spec.workload_id}, {"why", end.timed_out ? "timeout" : why}});
        Status st = docker_.StopContainer(id, options_.stop_grace_s);
        if (!st.ok() && st.code() != StatusCode::kNotFound) {
          LogWarn("runtime.stop_failed",
                  {{"workload", e.spec.workload_id}, {"error", st.ToString()}});
          // Killing is removing: the stream then ends and the cleanup finds nothing.
          (void)docker_.RemoveContainer(id, /*force=*/true, /*remove_volumes=*/true);
        }
      }
      return true;
    };
    auto on_frame = [&](const LogFrame& f) {
      if (callbacks_.on_log) callbacks_.on_log(e.spec.workload_id, f);
    };

    Status followed = docker_.FollowLogs(id, on_frame, check);
    if (!followed.ok()) {
      LogWarn("runtime.follow_logs_failed",
              {{"workload", e.spec.workload_id}, {"error", followed.ToString()}});
    }
    // The stream ended with the container, or broke: wait for the exit code, still
    // checking for stop and timeout.
    while (true) {
      auto start = SteadyClock::now();
      auto code = docker_.WaitContainer(id, followed.ok() ? 30 : 1);
      if (code.ok()) {
        end.exit_code = *code;
        break;
      }
      if (code.status().code() == StatusCode::kNotFound) {
        end.gone = true;
        break;
      }
      check();
      if (stop_sent && ShuttingDown()) {
        LogWarn("runtime.wait_abandoned",
                {{"workload", e.spec.workload_id}, {"error", code.status().ToString()}});
        break;
      }
      if (SteadyClock::now() - start < std::chrono::seconds(1)) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
    return end;
  }

  Status CreateScratch(const WorkloadSpec& spec) {
    const std::string name = ScratchVolumeName(spec.workload_id);
    const std::string size = std::to_string(spec.scratch_mb) + "m";
    if (options_.scratch == ScratchBackend::kTmpfs) {
      return docker_.CreateVolume(
          name, WorkloadLabels(spec.workload_id, options_.policy.owner),
          {{"type", "tmpfs"}, {"device", "tmpfs"}, {"o", "size=" + size + ",nosuid,nodev"}});
    }
    Status st = docker_.CreateVolume(name, WorkloadLabels(spec.workload_id, options_.policy.owner),
                                     {{"size", size}});
    if (st.ok() || st.code() != StatusCode::kInvalidArgument ||
        st.message().find("quota") == std::string::npos) {
      return st;
    }
    if (!g_warned_unlimited_scratch.exchange(true)) {
      LogWarn("runtime.scratch_unlimited",
              {{"reason", st.message()},
               {"note", "scratch volumes have no size limit on this engine's data root"}});
    }
    return docker_.CreateVolume(name, WorkloadLabels(spec.workload_id, options_.policy.owner), {});
  }

  // Waits (a few seconds at most) until a container that the engine is removing is gone;
  // kFailedPrecondition when it is still there.
  Status AwaitRemoval(const std::string& container) {
    for (int i = 0; i < 40; ++i) {
      auto info = docker_.InspectContainer(container);
      if (!info.ok() && info.status().code() == StatusCode::kNotFound) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return FailedPrecondition("container " + container + " is still being removed");
  }

  // Removes the workload's container, volume and network; failures are logged and left to
  // Reconcile().
  void Cleanup(Entry& e) EXCLUDES(e.mu) {
    const std::string& w = e.spec.workload_id;
    std::string container;
    {
      MutexLock lock(&e.mu);
      container = e.container_to_remove;
    }
    auto log = [&w](const Status& st, const char* what) {
      if (!st.ok() && st.code() != StatusCode::kNotFound) {
        LogWarn("runtime.cleanup_failed",
                {{"workload", w}, {"object", what}, {"error", st.ToString()}});
      }
    };
    if (!container.empty()) {
      Status st = docker_.RemoveContainer(container, /*force=*/true, /*remove_volumes=*/true);
      // Someone else is removing it (`docker rm -f` on the host): the scratch volume is
      // free once that removal is done.
      if (st.code() == StatusCode::kFailedPrecondition) st = AwaitRemoval(container);
      log(st, "container");
    }
    log(docker_.RemoveVolume(ScratchVolumeName(w)), "volume");
    if (!options_.policy.network_none) {
      log(docker_.RemoveNetwork(WorkloadNetworkName(w)), "network");
    }
  }

  DockerClient& docker_;
  const WorkloadRunnerOptions options_;
  const WorkloadCallbacks callbacks_;
  ExecSessions execs_{docker_};

  Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ GUARDED_BY(mu_);
  std::deque<std::string> finished_ GUARDED_BY(mu_);  // oldest first
  bool shutting_down_ GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<WorkloadRunner> DockerWorkloadRunner(DockerClient* docker,
                                                     WorkloadRunnerOptions options,
                                                     WorkloadCallbacks callbacks) {
  return std::make_unique<Runner>(docker, std::move(options), std::move(callbacks));
}

}  // namespace gpunex::agent
