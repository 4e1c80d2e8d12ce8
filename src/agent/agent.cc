#include "agent/agent.h"

#include <algorithm>
#include <bit>
#include <random>
#include <set>
#include <thread>

#include "agent/benchmark.h"
#include "agent/host/host_facts.h"
#include "agent/isolation/isolation_check.h"
#include "agent/runtime/policy.h"
#include "common/log.h"
#include "common/net/websocket_client.h"

namespace gpunex::agent {

class Agent::Connection {
 public:
  explicit Connection(std::unique_ptr<net::WebSocketClient> ws) : ws_(std::move(ws)) {}
  Status Send(const protocol::AgentMessage& m) { return ws_->Send(protocol::Serialize(m)); }
  net::WebSocketClient& ws() { return *ws_; }

 private:
  std::unique_ptr<net::WebSocketClient> ws_;
};

namespace {

protocol::Gpu ToProtocol(const GpuInfo& g) {
  protocol::Gpu p;
  p.index = g.index;
  p.uuid = g.uuid;
  p.name = g.name;
  p.catalog_id = g.catalog_id;
  p.vram_mb = g.vram_mb;
  p.driver_version = g.driver_version;
  p.cuda_driver_version = g.cuda_driver_version;
  p.pcie_gen_max = g.pcie_gen_max;
  p.pcie_gen_current = g.pcie_gen_current;
  p.pcie_width_max = g.pcie_width_max;
  p.pcie_width_current = g.pcie_width_current;
  p.power_limit_w = g.power_limit_w;
  p.emulated = g.emulated;
  return p;
}

protocol::GpuSample ToProtocol(const GpuTelemetry& t) {
  protocol::GpuSample s;
  s.uuid = t.uuid;
  s.utilization_pct = t.utilization_pct;
  s.memory_used_mb = t.memory_used_mb;
  s.temperature_c = t.temperature_c;
  s.power_w = t.power_w;
  s.sm_clock_mhz = t.sm_clock_mhz;
  for (const auto& n : t.throttle_names) {
    if (n != "gpu_idle") s.throttle_reasons.push_back(n);
  }
  return s;
}

std::string ConnectUrl(const std::string& platform_url, std::string_view path) {
  std::string u = platform_url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  return u + std::string(path);
}

// How long a stream's connect to a workload's port may take.
constexpr std::chrono::milliseconds kDialTimeout{5000};

}  // namespace

Agent::Agent(AgentOptions options, AgentState& state, GpuSource& gpus, DockerClient* docker)
    : options_(std::move(options)), state_(state), gpus_(gpus), docker_(docker) {
  {
    MutexLock lock(&mu_);
    // No engine answering now is said as the check says it (CheckNetworkIsolation) in the
    // first hello, so that on a machine without one the first check changes nothing (and
    // records no machine event).
    isolation_.state = protocol::kIsolationChecking;
    if (!docker_) {
      isolation_.state = protocol::kIsolationNoEngine;
    } else if (auto unanswered = isolation::EngineUnanswered(*docker_);
               unanswered && unanswered->state == protocol::kIsolationNoEngine) {
      isolation_ = *std::move(unanswered);
    }
  }
  if (docker_) {
    WorkloadRunnerOptions ro;
    ro.policy.emulated_gpus = gpus_.Emulated();
    // What this agent makes carries its owner label: agents that share an engine leave
    // each other's workloads alone.
    ro.policy.owner = isolation::CheckOwner(state_.machine_key());
    WorkloadCallbacks cb;
    cb.on_state = [this](const WorkloadStatus& s) {
      if (s.workload_id.starts_with(kBenchWorkloadPrefix)) return;  // the benchmark waits for it
      protocol::WorkloadEvent e;
      e.workload_id = s.workload_id;
      e.state = WorkloadStateName(s.state);
      e.exit_code = s.exit_code;
      e.reason = s.reason;
      e.container_id = s.container_id;
      e.cause = s.cause;
      Queue(e);
    };
    cb.on_log = [this](const std::string& workload_id, const LogFrame& frame) {
      if (workload_id.starts_with(kBenchWorkloadPrefix)) {
        // gpunex-gpubench prints its JSON on stdout and progress on stderr.
        if (frame.stream == LogFrame::Stream::kStderr) return;
        MutexLock lock(&mu_);
        std::string& out = bench_output_[workload_id];
        if (out.size() + frame.data.size() <= protocol::kMaxMessageBytes / 2) out += frame.data;
        return;
      }
      std::string stream = frame.stream == LogFrame::Stream::kStderr ? "stderr" : "stdout";
      // Output is bytes: every line goes out, blank or not; what is not text is replaced
      // and counted (logged when a workload's count reaches 1, 2, 4, 8, ...).
      size_t replaced = 0;
      std::string text = protocol::SanitizeLogText(frame.data, &replaced);
      if (replaced > 0) {
        uint64_t before, after;
        {
          MutexLock lock(&mu_);
          uint64_t& total = log_replaced_[workload_id];
          before = total;
          after = total += replaced;
        }
        if (std::bit_width(before) != std::bit_width(after)) {
          LogWarn("agent.log_bytes_replaced",
                  {{"workload_id", workload_id}, {"bytes", static_cast<int64_t>(after)}});
        }
      }
      // Pieces cut between UTF-8 sequences: a text frame must be valid UTF-8.
      for (std::string& piece : protocol::SplitLogText(text, protocol::kMaxLogChunk / 2)) {
        int64_t seq;
        {
          MutexLock lock(&mu_);
          seq = ++log_seq_[workload_id + "/" + stream];
        }
        Queue(protocol::Logs{workload_id, stream, seq, std::move(piece)});
      }
    };
    runner_ = DockerWorkloadRunner(docker_, ro, cb);
    data_link_ = std::make_unique<DataLink>([this](const StreamTarget& t) {
      if (t.kind == StreamTarget::Kind::kFiles) return runner_->OpenFiles(t);
      if (t.kind == StreamTarget::Kind::kExec) return runner_->OpenExec(t);
      return runner_->DialPort(t.workload_id, t.port, kDialTimeout);
    });
  }
}

Agent::~Agent() {
  Stop();
  // Commands run on detached threads that use this object: wait for them.
  MutexLock lock(&mu_);
  while (running_workers_ != 0) cv_.Wait(&mu_);
}

std::chrono::milliseconds Agent::Backoff(int attempt, int max_backoff_s) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t cap = static_cast<int64_t>(max_backoff_s) * 1000;
  int64_t ceiling = std::min<int64_t>(cap, 1000LL << std::min(attempt, 20));
  return std::chrono::milliseconds(
      std::uniform_int_distribution<int64_t>(ceiling / 2, ceiling)(rng));
}

void Agent::Stop() {
  stopping_ = true;
  std::shared_ptr<Connection> c;
  {
    MutexLock lock(&mu_);
    c = conn_;
  }
  if (c) c->ws().Close(1001, "agent stopping");
  if (data_link_) data_link_->Stop();
  cv_.SignalAll();
}

Status Agent::Run() {
  if (docker_) isolation_thread_ = std::thread([this] { IsolationLoop(); });
  if (data_link_) data_thread_ = std::thread([this] { DataLoop(); });
  int attempt = 0;
  while (!stopping_) {
    Status st = Session();
    if (stopping_) break;
    if (st.ok()) {
      attempt = 0;  // a session that got going resets the backoff
    }
    auto wait = Backoff(attempt++, options_.max_backoff_s);
    LogWarn("agent.disconnected", {{"error", st.ToString()}, {"retry_in_ms", wait.count()}});
    const auto until = std::chrono::steady_clock::now() + wait;
    MutexLock lock(&mu_);
    while (!stopping_) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) break;
      cv_.WaitFor(&mu_, until - now);
    }
  }
  if (isolation_thread_.joinable()) isolation_thread_.join();
  if (data_thread_.joinable()) data_thread_.join();
  return Status::Ok();
}

net::WebSocketClientOptions Agent::ChannelOptions() const {
  net::WebSocketClientOptions wo;
  wo.ca_file = options_.ca_file;
  wo.headers.emplace_back("Authorization", "Bearer " + options_.token);
  wo.headers.emplace_back("User-Agent", std::string("gpunex-agent/") + kAgentVersion);
  return wo;
}

void Agent::DataLoop() {
  int attempt = 0;
  while (!stopping_) {
    std::string machine_id;
    {
      // The platform opens a machine's data channel only beside its control channel.
      MutexLock lock(&mu_);
      while (!stopping_ && (conn_ == nullptr || state_.machine_id().empty())) {
        cv_.WaitFor(&mu_, std::chrono::milliseconds(500));
      }
      machine_id = state_.machine_id();
    }
    if (stopping_) break;
    net::WebSocketClientOptions wo = ChannelOptions();
    wo.binary = true;
    auto ws = net::WebSocketClient::Connect(
        ConnectUrl(options_.platform_url, kDataChannelPath) + "?machine_id=" + machine_id, wo);
    Status st = ws.status();
    if (ws.ok()) {
      attempt = 0;
      LogInfo("agent.data.connected", {{"machine_id", machine_id}});
      st = data_link_->Serve(**ws);
      (*ws)->Close(1000, "");
    }
    if (stopping_) break;
    auto wait = Backoff(attempt++, std::min(options_.max_backoff_s, 10));
    LogWarn("agent.data.disconnected", {{"error", st.ToString()}, {"retry_in_ms", wait.count()}});
    const auto until = std::chrono::steady_clock::now() + wait;
    MutexLock lock(&mu_);
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      cv_.WaitFor(&mu_, until - std::chrono::steady_clock::now());
    }
  }
}

protocol::NetworkIsolation Agent::Isolation() {
  MutexLock lock(&mu_);
  return isolation_;
}

void Agent::IsolationLoop() {
  isolation::IsolationCheckOptions o;
  o.work_dir = state_.dir();
  o.owner = isolation::CheckOwner(state_.machine_key());
  // The verdict is said as soon as the check has it, before its probes are removed.
  o.on_verdict = [this](const protocol::NetworkIsolation& report) {
    bool changed;
    {
      MutexLock lock(&mu_);
      changed = !(report == isolation_);
      isolation_ = report;
      ++isolation_checks_;
      isolation_wanted_ = false;
      cv_.SignalAll();
    }
    if (changed) {
      json::object fields{{"state", report.state}, {"detail", report.detail}};
      if (std::string fix = isolation::IsolationFix(report); !fix.empty()) fields["fix"] = fix;
      if (report.state == protocol::kIsolated || report.state == protocol::kIsolationNoEngine) {
        LogInfo("agent.network_isolation", std::move(fields));
      } else {
        LogWarn("agent.network_isolation", std::move(fields));
      }
      Queue(report);
    }
  };
  while (!stopping_) {
    const protocol::NetworkIsolation report = isolation::CheckNetworkIsolation(*docker_, o);
    const bool settled =
        report.state == protocol::kIsolated || report.state == protocol::kNotIsolated;
    const auto until =
        std::chrono::steady_clock::now() +
        std::chrono::seconds(settled ? options_.isolation_interval_s : options_.isolation_retry_s);
    const bool no_engine = report.state == protocol::kIsolationNoEngine;
    // Until the next check: a ping of the engine every engine_ping_s. An engine that
    // went away, or came back, is checked now rather than at the next interval.
    while (!WaitForIsolationCheck(until)) {
      const auto unanswered = isolation::EngineUnanswered(*docker_);
      if ((unanswered && unanswered->state == protocol::kIsolationNoEngine) != no_engine) break;
    }
  }
}

bool Agent::WaitForIsolationCheck(std::chrono::steady_clock::time_point until) {
  const auto ping_at =
      std::chrono::steady_clock::now() + std::chrono::seconds(std::max(1, options_.engine_ping_s));
  MutexLock lock(&mu_);
  while (!stopping_ && !isolation_wanted_) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    if (now >= ping_at) return false;
    cv_.WaitFor(&mu_, std::min(until, ping_at) - now);
  }
  return true;
}

std::string Agent::IsolationRefusal() {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.isolation_wait_s);
  MutexLock lock(&mu_);
  int64_t want = isolation_checks_;
  if (isolation_.state == protocol::kIsolationUnverified ||
      isolation_.state == protocol::kIsolationNoEngine) {
    // It could not tell: the engine may be back, or what failed passed.
    want = isolation_checks_ + 1;
    isolation_wanted_ = true;
    cv_.SignalAll();
  }
  while (!stopping_ &&
         (isolation_.state == protocol::kIsolationChecking || isolation_checks_ < want)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    cv_.WaitFor(&mu_, until - now);
  }
  if (isolation_.state == protocol::kIsolated) return "";
  std::string why = "network isolation " + isolation_.state;
  if (!isolation_.detail.empty()) why += ": " + isolation_.detail;
  return why;
}

protocol::Hello Agent::MakeHello() {
  protocol::Hello h;
  h.agent_version = kAgentVersion;
  h.machine_id = state_.machine_id();
  h.machine_key = state_.machine_key();
  h.emulated = gpus_.Emulated();
  auto inv = gpus_.Inventory();
  if (inv.ok()) {
    for (const auto& g : *inv) h.gpus.push_back(ToProtocol(g));
  } else {
    LogWarn("agent.gpus_unavailable", {{"error", inv.status().ToString()}});
  }
  auto host = CollectHostFacts(state_.dir());
  if (host.ok()) {
    h.host.hostname = host->hostname;
    h.host.cpu_model = host->cpu_model;
    h.host.cpu_cores = host->cpu_cores;
    h.host.ram_mb = host->ram_mb;
    h.host.disk_total_mb = host->disk_total_mb;
    h.host.disk_free_mb = host->disk_free_mb;
    h.host.os = host->os;
    h.host.kernel = host->kernel;
  }
  h.host.network_isolation = Isolation();
  if (docker_) {
    if (auto v = docker_->Version(); v.ok()) h.host.docker_version = v->version;
    if (auto list = docker_->ListContainers(std::string(kLabelManaged) + "=true"); list.ok()) {
      for (const auto& c : *list) {
        auto it = c.labels.find(kLabelWorkload);
        h.containers.push_back({c.id, it == c.labels.end() ? "" : it->second, c.state});
      }
    }
  }
  // Workloads still starting (pulling the image, creating the container) have no
  // container yet: they are listed too, so that the platform keeps them.
  if (runner_) {
    for (const auto& w : runner_->InFlight()) {
      bool listed = false;
      for (const auto& c : h.containers) listed = listed || c.workload_id == w.workload_id;
      if (!listed) h.containers.push_back({w.container_id, w.workload_id, "starting"});
    }
  }
  return h;
}

Status Agent::Session() {
  net::WebSocketClientOptions wo = ChannelOptions();
  wo.max_message_bytes = protocol::kMaxMessageBytes;
  GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<net::WebSocketClient> ws,
                          net::WebSocketClient::Connect(
                              ConnectUrl(options_.platform_url, "/api/v1/agent/connect"), wo));
  auto conn = std::make_shared<Connection>(std::move(ws));
  GPUNEX_RETURN_IF_ERROR(conn->Send(MakeHello()));

  // Welcome, or the platform's reason for refusing.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.welcome_timeout_s);
  protocol::Welcome welcome;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Unavailable("no welcome from the platform");
    GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> text, conn->ws().Receive(left));
    if (!text) continue;
    auto msg = protocol::ParsePlatformMessage(*text);
    if (!msg.ok()) return Internal("bad message from the platform: " + msg.status().ToString());
    if (auto* e = std::get_if<protocol::Error>(&*msg)) {
      return PermissionDenied("the platform refused this agent: " + e->code + ": " + e->message);
    }
    if (auto* w = std::get_if<protocol::Welcome>(&*msg)) {
      welcome = *w;
      break;
    }
    return Internal("the platform spoke before welcoming");
  }
  GPUNEX_RETURN_IF_ERROR(state_.SetMachineId(welcome.machine_id));
  LogInfo("agent.connected", {{"machine_id", welcome.machine_id},
                              {"heartbeat_interval_s", welcome.heartbeat_interval_s}});
  if (runner_) {
    std::set<std::string> keep(welcome.keep_workload_ids.begin(), welcome.keep_workload_ids.end());
    {
      MutexLock lock(&mu_);
      keep.insert(bench_running_.begin(), bench_running_.end());
    }
    Status st = runner_->Reconcile(keep);
    if (!st.ok()) LogWarn("agent.reconcile_failed", {{"error", st.ToString()}});
  }
  {
    MutexLock lock(&mu_);
    conn_ = conn;
  }
  FlushQueue();

  const auto interval = std::chrono::seconds(welcome.heartbeat_interval_s);
  auto next_beat = std::chrono::steady_clock::now();
  int64_t seq = 0;
  Status result;
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_beat) {
      protocol::Heartbeat hb;
      hb.seq = ++seq;
      if (auto samples = gpus_.Sample(); samples.ok()) {
        for (const auto& s : *samples) hb.gpus.push_back(ToProtocol(s));
      }
      if (Status st = conn->Send(hb); !st.ok()) {
        result = st;
        break;
      }
      next_beat = now + interval;
      continue;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - now);
    auto text = conn->ws().Receive(std::min(wait, std::chrono::milliseconds(1000)));
    if (!text.ok()) {
      result = text.status();
      break;
    }
    FlushQueue();
    if (!text->has_value()) continue;
    auto msg = protocol::ParsePlatformMessage(**text);
    if (!msg.ok()) {
      LogError("agent.bad_platform_message", {{"error", msg.status().ToString()}});
      continue;
    }
    if (auto* c = std::get_if<protocol::Command>(&*msg)) {
      HandleCommand(*c);
    } else if (auto* p = std::get_if<protocol::Pong>(&*msg)) {
      MutexLock lock(&mu_);
      if (pongs_.count(p->id)) pongs_[p->id] = std::chrono::steady_clock::now();
      cv_.SignalAll();
    } else if (auto* e = std::get_if<protocol::Error>(&*msg)) {
      result = Unavailable("the platform closed the session: " + e->code + ": " + e->message);
      break;
    }
  }
  {
    MutexLock lock(&mu_);
    conn_.reset();
  }
  conn->ws().Close(1000, "");
  // A session that reached the heartbeat loop counts as a success for the backoff.
  return stopping_ || result.code() == StatusCode::kUnavailable ? Status::Ok() : result;
}

void Agent::Queue(protocol::AgentMessage m) {
  {
    MutexLock lock(&mu_);
    queue_.push_back(std::move(m));
    // Bounded: beyond this the oldest log chunks are dropped first (events are kept).
    // The front is not dropped while FlushQueue is sending it.
    while (queue_.size() > 10000) {
      auto it = std::find_if(queue_.begin() + (flushing_ ? 1 : 0), queue_.end(), [](const auto& q) {
        return std::holds_alternative<protocol::Logs>(q);
      });
      if (it == queue_.end()) break;
      queue_.erase(it);
    }
  }
  FlushQueue();
}

void Agent::FlushQueue() {
  std::shared_ptr<Connection> c;
  {
    MutexLock lock(&mu_);
    // Another thread is sending: it sends what is queued meanwhile too, in order.
    if (flushing_ || !conn_) return;
    flushing_ = true;
    c = conn_;
  }
  for (bool sent = false;;) {
    protocol::AgentMessage m;
    {
      MutexLock lock(&mu_);
      if (sent) queue_.pop_front();
      if (queue_.empty()) {
        flushing_ = false;
        return;
      }
      m = queue_.front();
    }
    sent = c->Send(m).ok();
    if (!sent) {  // it stays queued for the next connection
      MutexLock lock(&mu_);
      flushing_ = false;
      return;
    }
  }
}

bool Agent::SendNow(const protocol::AgentMessage& m) {
  std::shared_ptr<Connection> c;
  {
    MutexLock lock(&mu_);
    c = conn_;
  }
  return c && c->Send(m).ok();
}

void Agent::HandleCommand(const protocol::Command& c) {
  auto rec = state_.Command(c.command_id);
  if (rec && rec->done) {
    // A repeat (the platform did not see our result): answer from the record.
    SendNow(protocol::Result{c.command_id, rec->ok, rec->error, rec->data});
    return;
  }
  SendNow(protocol::Ack{c.command_id});
  if (Status st = state_.Accept(c.command_id); !st.ok()) {
    LogError("agent.state_write_failed", {{"error", st.ToString()}});
    return;
  }
  {
    MutexLock lock(&mu_);
    ++running_workers_;
  }
  std::thread([this, c] {
    Execute(c);
    MutexLock lock(&mu_);
    --running_workers_;
    cv_.SignalAll();
  }).detach();
}

void Agent::Execute(protocol::Command c) {
  bool ok = true;
  std::string error;
  json::object data;
  auto fail = [&](const Status& st) {
    ok = false;
    error = st.ToString();
  };
  if (c.kind == protocol::kRunBenchmark) {
    auto req = protocol::ParseRunBenchmark(c.payload);
    if (req.ok()) {
      data = protocol::ToJson(Benchmark(*req));
    } else {
      fail(req.status());
    }
  } else if (!runner_) {
    ok = false;
    error = "no Docker engine is reachable on this machine";
  } else if (c.kind == protocol::kStartWorkload) {
    // Defense in depth (ISO-2): the platform validated the request, the agent parses it
    // again, and the runner checks the container it builds.
    auto spec = protocol::ParseStartWorkload(c.payload);
    c.payload.erase("registry_auth");  // the spec has them now, and only the runner keeps them
    std::string refusal;
    if (!spec.ok()) {
      fail(spec.status());
    } else if (!runner_->Get(spec->workload_id).ok() && !(refusal = IsolationRefusal()).empty()) {
      // Not started (and never a repeat of one that was): the machine's fault, as an
      // engine that cannot be reached is (RNT-3), reported as the workload's end.
      LogWarn("agent.workload_refused", {{"workload_id", spec->workload_id}, {"why", refusal}});
      Queue(protocol::WorkloadEvent{spec->workload_id, "failed", std::nullopt, "engine: " + refusal,
                                    "", std::string(protocol::kCauseEngineError)});
      data["workload_id"] = spec->workload_id;
    } else if (Status st = runner_->Start(std::move(*spec));           // with its registry_auth
               !st.ok() && st.code() != StatusCode::kAlreadyExists) {  // a repeat: it runs
      fail(st);
    } else {
      data["workload_id"] = c.payload.at("workload_id");
    }
  } else if (c.kind == protocol::kStopWorkload) {
    auto stop = protocol::ParseStopWorkload(c.payload);
    Status st = stop.ok() ? runner_->Stop(stop->workload_id) : stop.status();
    if (!st.ok() && st.code() != StatusCode::kNotFound) fail(st);
  } else {
    ok = false;
    error = "unknown command " + c.kind;
  }
  if (Status st = state_.Finish(c.command_id, ok, error, data); !st.ok()) {
    LogError("agent.state_write_failed", {{"error", st.ToString()}});
  }
  // Queued, so a result produced while disconnected goes out on the next connection.
  Queue(protocol::Result{c.command_id, ok, error, data});
}

StatusOr<std::vector<double>> Agent::MeasureRoundTrips(int64_t n) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  for (int64_t i = 0; i < n && !stopping_; ++i) {
    int64_t id;
    Clock::time_point sent;
    {
      MutexLock lock(&mu_);
      id = ++last_ping_id_;
      sent = Clock::now();
      pongs_[id] = Clock::time_point{};
    }
    if (!SendNow(protocol::Ping{id})) {
      MutexLock lock(&mu_);
      pongs_.erase(id);
      return Unavailable("the platform channel is down");
    }
    Clock::time_point got;
    {
      const auto until = Clock::now() + std::chrono::seconds(5);
      MutexLock lock(&mu_);
      while (!stopping_ && pongs_[id] == Clock::time_point{}) {
        const auto now = Clock::now();
        if (now >= until) break;
        cv_.WaitFor(&mu_, until - now);
      }
      got = pongs_[id];
      pongs_.erase(id);
    }
    if (got == Clock::time_point{}) return Unavailable("no pong within 5 s");
    ms.push_back(std::chrono::duration<double, std::milli>(got - sent).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ms;
}

StatusOr<json::object> Agent::RunGpubench(const std::string& benchmark_id, const GpuInfo& gpu,
                                          int64_t sustain_s) {
  if (!runner_) return FailedPrecondition("no Docker engine is reachable on this machine");
  GPUNEX_ASSIGN_OR_RETURN(WorkloadSpec ws,
                          GpubenchWorkload(benchmark_id, gpu, sustain_s, options_.gpubench_image));
  const std::string wid = ws.workload_id;
  {
    MutexLock lock(&mu_);
    bench_running_.insert(wid);
    bench_output_.erase(wid);
  }
  auto done = [&] {
    MutexLock lock(&mu_);
    bench_running_.erase(wid);
    std::string out = std::move(bench_output_[wid]);
    bench_output_.erase(wid);
    return out;
  };
  if (Status st = runner_->Start(ws); !st.ok()) {
    done();
    return st;
  }
  auto end = runner_->Wait(wid, (sustain_s + 660) * 1000);
  std::string out = done();
  if (!end.ok()) return end.status();
  // Exit 0: figures; 2: the GPU computed wrong results (the JSON says which).
  if (end->state != WorkloadState::kExited || !end->exit_code ||
      (*end->exit_code != 0 && *end->exit_code != 2)) {
    return Internal(
        "gpunex-gpubench did not finish: " + std::string(WorkloadStateName(end->state)) +
        (end->reason.empty() ? "" : " (" + end->reason + ")") +
        (end->exit_code ? ", exit code " + std::to_string(*end->exit_code) : ""));
  }
  // The JSON object is the last line that parses as one.
  size_t pos = out.rfind("\n{");
  std::string text = pos == std::string::npos ? out : out.substr(pos + 1);
  GPUNEX_ASSIGN_OR_RETURN(json::value v, ParseJson(text));
  if (!v.is_object()) return Internal("gpunex-gpubench printed no JSON object");
  return v.get_object();
}

protocol::BenchmarkResult Agent::Benchmark(const protocol::RunBenchmark& req) {
  MutexLock one(&bench_mu_);
  LogInfo("benchmark.started", {{"benchmark_id", req.benchmark_id},
                                {"gpus", static_cast<int64_t>(req.gpus.size())},
                                {"machine_phases", req.machine_phases}});
  BenchmarkSteps steps;
  steps.gpubench = [&](const GpuInfo& gpu, int64_t sustain_s) {
    return RunGpubench(req.benchmark_id, gpu, sustain_s);
  };
  steps.round_trips = [this](int64_t n) { return MeasureRoundTrips(n); };
  steps.throughput = [this](int64_t bytes) {
    bench::NetworkOptions no;
    no.base_url = options_.platform_url;
    no.token = options_.token;
    no.ca_file = options_.ca_file;
    no.bytes = bytes;
    return bench::RunNetworkThroughput(no);
  };
  steps.storage = [this](int64_t file_bytes, double seconds_per_phase) {
    bench::StorageOptions so;
    so.dir = state_.dir();
    so.file_bytes = file_bytes;
    so.seconds_per_phase = seconds_per_phase;
    return bench::RunStorageBenchmark(so);
  };
  protocol::BenchmarkResult result = RunBenchmark(req, gpus_, steps);
  LogInfo("benchmark.finished", {{"benchmark_id", req.benchmark_id}});
  return result;
}

}  // namespace gpunex::agent
