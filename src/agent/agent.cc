#include "agent/agent.h"

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include "agent/bench/network.h"
#include "agent/bench/storage.h"
#include "agent/benchmark.h"
#include "agent/host/host_facts.h"
#include "agent/link/websocket_client.h"
#include "agent/runtime/policy.h"
#include "common/log.h"

namespace gpunex::agent {

class Agent::Connection {
 public:
  explicit Connection(std::unique_ptr<WebSocketClient> ws) : ws_(std::move(ws)) {}
  Status Send(const protocol::AgentMessage& m) { return ws_->Send(protocol::Serialize(m)); }
  WebSocketClient& ws() { return *ws_; }

 private:
  std::unique_ptr<WebSocketClient> ws_;
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

std::string ConnectUrl(const std::string& platform_url) {
  std::string u = platform_url;
  while (!u.empty() && u.back() == '/') u.pop_back();
  return u + "/api/v1/agent/connect";
}

}  // namespace

Agent::Agent(AgentOptions options, AgentState& state, GpuSource& gpus, DockerClient* docker)
    : options_(std::move(options)), state_(state), gpus_(gpus), docker_(docker) {
  if (docker_) {
    WorkloadRunnerOptions ro;
    ro.policy.emulated_gpus = gpus_.Emulated();
    WorkloadCallbacks cb;
    cb.on_state = [this](const WorkloadStatus& s) {
      if (s.workload_id.starts_with(kBenchWorkloadPrefix)) return;  // the benchmark waits for it
      protocol::WorkloadEvent e;
      e.workload_id = s.workload_id;
      e.state = WorkloadStateName(s.state);
      e.exit_code = s.exit_code;
      e.reason = s.reason;
      e.container_id = s.container_id;
      Queue(e);
    };
    cb.on_log = [this](const std::string& workload_id, const LogFrame& frame) {
      if (workload_id.starts_with(kBenchWorkloadPrefix)) {
        // gpunex-gpubench prints its JSON on stdout and progress on stderr.
        if (frame.stream == LogFrame::Stream::kStderr) return;
        std::lock_guard g(mu_);
        std::string& out = bench_output_[workload_id];
        if (out.size() + frame.data.size() <= protocol::kMaxMessageBytes / 2) out += frame.data;
        return;
      }
      std::string stream = frame.stream == LogFrame::Stream::kStderr ? "stderr" : "stdout";
      std::string text = protocol::SanitizeLogText(frame.data);
      for (size_t off = 0; off < text.size(); off += protocol::kMaxLogChunk / 2) {
        int64_t seq;
        {
          std::lock_guard g(mu_);
          seq = ++log_seq_[workload_id + "/" + stream];
        }
        Queue(protocol::Logs{workload_id, stream, seq, text.substr(off, protocol::kMaxLogChunk / 2)});
      }
    };
    runner_ = DockerWorkloadRunner(docker_, ro, cb);
  }
}

Agent::~Agent() {
  Stop();
  // Commands run on detached threads that use this object: wait for them.
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return running_workers_ == 0; });
}

std::chrono::milliseconds Agent::Backoff(int attempt, int max_backoff_s) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  int64_t cap = static_cast<int64_t>(max_backoff_s) * 1000;
  int64_t ceiling = std::min<int64_t>(cap, 1000LL << std::min(attempt, 20));
  return std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(ceiling / 2, ceiling)(rng));
}

void Agent::Stop() {
  stopping_ = true;
  std::shared_ptr<Connection> c;
  {
    std::lock_guard g(mu_);
    c = conn_;
  }
  if (c) c->ws().Close(1001, "agent stopping");
  cv_.notify_all();
}

Status Agent::Run() {
  int attempt = 0;
  while (!stopping_) {
    Status st = Session();
    if (stopping_) break;
    if (st.ok()) {
      attempt = 0;  // a session that got going resets the backoff
    }
    auto wait = Backoff(attempt++, options_.max_backoff_s);
    LogWarn("agent.disconnected", {{"error", st.ToString()}, {"retry_in_ms", wait.count()}});
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, wait, [this] { return stopping_.load(); });
  }
  return Status::Ok();
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
  if (docker_) {
    if (auto v = docker_->Version(); v.ok()) h.host.docker_version = v->version;
    if (auto list = docker_->ListContainers(std::string(kLabelManaged) + "=true"); list.ok()) {
      for (const auto& c : *list) {
        auto it = c.labels.find(kLabelWorkload);
        h.containers.push_back({c.id, it == c.labels.end() ? "" : it->second, c.state});
      }
    }
  }
  return h;
}

Status Agent::Session() {
  WebSocketClientOptions wo;
  wo.ca_file = options_.ca_file;
  wo.max_message_bytes = protocol::kMaxMessageBytes;
  wo.headers.emplace_back("Authorization", "Bearer " + options_.token);
  wo.headers.emplace_back("User-Agent", std::string("gpunex-agent/") + kAgentVersion);
  GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<WebSocketClient> ws,
                          WebSocketClient::Connect(ConnectUrl(options_.platform_url), wo));
  auto conn = std::make_shared<Connection>(std::move(ws));
  GPUNEX_RETURN_IF_ERROR(conn->Send(MakeHello()));

  // Welcome, or the platform's reason for refusing.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.welcome_timeout_s);
  protocol::Welcome welcome;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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
      std::lock_guard g(mu_);
      keep.insert(bench_running_.begin(), bench_running_.end());
    }
    Status st = runner_->Reconcile(keep);
    if (!st.ok()) LogWarn("agent.reconcile_failed", {{"error", st.ToString()}});
  }
  {
    std::lock_guard g(mu_);
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
      std::lock_guard g(mu_);
      if (pongs_.count(p->id)) pongs_[p->id] = std::chrono::steady_clock::now();
      cv_.notify_all();
    } else if (auto* e = std::get_if<protocol::Error>(&*msg)) {
      result = Unavailable("the platform closed the session: " + e->code + ": " + e->message);
      break;
    }
  }
  {
    std::lock_guard g(mu_);
    conn_.reset();
  }
  conn->ws().Close(1000, "");
  // A session that reached the heartbeat loop counts as a success for the backoff.
  return stopping_ || result.code() == StatusCode::kUnavailable ? Status::Ok() : result;
}

void Agent::Queue(protocol::AgentMessage m) {
  {
    std::lock_guard g(mu_);
    queue_.push_back(std::move(m));
    // Bounded: beyond this the oldest log chunks are dropped first (events are kept).
    while (queue_.size() > 10000) {
      auto it = std::find_if(queue_.begin(), queue_.end(),
                             [](const auto& q) { return std::holds_alternative<protocol::Logs>(q); });
      if (it == queue_.end()) break;
      queue_.erase(it);
    }
  }
  FlushQueue();
}

void Agent::FlushQueue() {
  std::unique_lock lock(mu_);
  auto c = conn_;
  if (!c) return;
  while (!queue_.empty()) {
    protocol::AgentMessage m = queue_.front();
    lock.unlock();
    Status st = c->Send(m);
    lock.lock();
    if (!st.ok()) return;  // stays queued for the next connection
    if (!queue_.empty()) queue_.pop_front();
  }
}

bool Agent::SendNow(const protocol::AgentMessage& m) {
  std::shared_ptr<Connection> c;
  {
    std::lock_guard g(mu_);
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
    std::lock_guard g(mu_);
    ++running_workers_;
  }
  std::thread([this, c] {
    Execute(c);
    std::lock_guard g(mu_);
    --running_workers_;
    cv_.notify_all();
  }).detach();
}

void Agent::Execute(protocol::Command c) {
  bool ok = true;
  std::string error;
  json::object data;
  if (c.kind == "run_benchmark") {
    data = RunBenchmark(c.payload, &ok, &error);
  } else if (!runner_) {
    ok = false;
    error = "no Docker engine is reachable on this machine";
  } else if (c.kind == "start_workload") {
    // Defense in depth (ISO-2): the agent validates the platform's request again.
    auto spec = ParseWorkloadSpec(c.payload);
    if (!spec.ok()) {
      ok = false;
      error = spec.status().ToString();
    } else if (Status st = runner_->Start(*spec);
               !st.ok() && st.code() != StatusCode::kAlreadyExists) {  // a repeat: it runs
      ok = false;
      error = st.ToString();
    } else {
      data["workload_id"] = spec->workload_id;
    }
  } else if (c.kind == "stop_workload") {
    std::string wid = c.payload.contains("workload_id") && c.payload.at("workload_id").is_string()
                          ? std::string(c.payload.at("workload_id").get_string())
                          : "";
    Status st = runner_->Stop(wid);
    if (!st.ok() && st.code() != StatusCode::kNotFound) {
      ok = false;
      error = st.ToString();
    }
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
      std::lock_guard g(mu_);
      id = ++last_ping_id_;
      sent = Clock::now();
      pongs_[id] = Clock::time_point{};
    }
    if (!SendNow(protocol::Ping{id})) {
      std::lock_guard g(mu_);
      pongs_.erase(id);
      return Unavailable("the platform channel is down");
    }
    std::unique_lock lock(mu_);
    bool answered = cv_.wait_for(lock, std::chrono::seconds(5), [&] {
      return stopping_ || pongs_[id] != Clock::time_point{};
    });
    Clock::time_point got = pongs_[id];
    pongs_.erase(id);
    lock.unlock();
    if (!answered || got == Clock::time_point{}) return Unavailable("no pong within 5 s");
    ms.push_back(std::chrono::duration<double, std::milli>(got - sent).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ms;
}

StatusOr<json::object> Agent::RunGpubench(const std::string& benchmark_id, const GpuInfo& gpu,
                                          int64_t sustain_s) {
  if (!runner_) return FailedPrecondition("no Docker engine is reachable on this machine");
  // Short, valid and unique: the policy's workload id syntax.
  std::string wid = std::string(kBenchWorkloadPrefix) + benchmark_id + "-" + std::to_string(gpu.index);
  if (wid.size() > 64) wid = wid.substr(wid.size() - 64);
  json::object spec{{"workload_id", wid},
                    {"image", options_.gpubench_image},
                    // The image's entrypoint is gpunex-gpubench; these are its arguments.
                    {"command", json::array{"--uuid", gpu.uuid, "--sustain-s", std::to_string(sustain_s)}},
                    {"gpu_uuids", json::array{gpu.uuid}},
                    {"memory_mb", 4096},
                    {"cpus", 2.0},
                    {"pids_limit", 256},
                    {"scratch_mb", 64},
                    {"timeout_s", sustain_s + 600}};
  GPUNEX_ASSIGN_OR_RETURN(WorkloadSpec ws, ParseWorkloadSpec(json::value(spec)));
  {
    std::lock_guard g(mu_);
    bench_running_.insert(wid);
    bench_output_.erase(wid);
  }
  auto done = [&] {
    std::lock_guard g(mu_);
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
  if (end->state != WorkloadState::kExited || !end->exit_code || (*end->exit_code != 0 && *end->exit_code != 2)) {
    return Internal("gpunex-gpubench did not finish: " + std::string(WorkloadStateName(end->state)) +
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

json::object Agent::RunBenchmark(const json::object& payload, bool* ok, std::string* error) {
  std::lock_guard one(bench_mu_);
  json::object data;
  auto req = ParseBenchmarkRequest(payload);
  if (!req.ok()) {
    *ok = false;
    *error = req.status().ToString();
    return data;
  }
  LogInfo("benchmark.started", {{"benchmark_id", req->benchmark_id},
                                {"gpus", static_cast<int64_t>(req->gpus.size())},
                                {"machine_phases", req->machine_phases}});
  data["benchmark_id"] = req->benchmark_id;
  data["emulated"] = gpus_.Emulated();
  std::vector<GpuInfo> inventory;
  if (auto inv = gpus_.Inventory(); inv.ok()) inventory = *inv;
  json::array results;
  for (const auto& want : req->gpus) {
    json::object r{{"uuid", want.uuid}};
    auto it = std::find_if(inventory.begin(), inventory.end(), [&](const GpuInfo& g) { return g.uuid == want.uuid; });
    StatusOr<json::object> figures = NotFound("the GPU is not on this machine now");
    if (it != inventory.end()) {
      figures = it->emulated ? EmulatedGpubenchResult(*it, gpus_.PerfFactor(), req->sustain_s)
                             : RunGpubench(req->benchmark_id, *it, req->sustain_s);
    }
    r["ok"] = figures.ok();
    if (figures.ok()) {
      r["result"] = std::move(*figures);
    } else {
      r["error"] = figures.status().ToString().substr(0, 1000);
    }
    results.push_back(std::move(r));
  }
  data["gpus"] = std::move(results);
  if (req->machine_phases) {
    bench::NetworkOptions no;
    no.base_url = options_.platform_url;
    no.token = options_.token;
    no.ca_file = options_.ca_file;
    no.bytes = req->network_mb << 20;
    auto rtt = MeasureRoundTrips(req->pings);
    auto net = rtt.ok() ? bench::RunNetworkThroughput(no) : StatusOr<bench::NetworkResult>(rtt.status());
    if (net.ok()) {
      auto [p50, p99] = Percentiles50And99(*rtt);
      data["network"] = json::object{{"rtt_p50_ms", p50},
                                     {"rtt_p99_ms", p99},
                                     {"download_mbit_s", net->download_mbit_s},
                                     {"upload_mbit_s", net->upload_mbit_s}};
    } else {
      data["network_error"] = net.status().ToString().substr(0, 1000);
    }
    bench::StorageOptions so;
    so.dir = state_.dir();
    so.file_bytes = req->storage_file_mb << 20;
    so.seconds_per_phase = req->storage_seconds;
    auto disk = bench::RunStorageBenchmark(so);
    if (disk.ok()) {
      data["storage"] = json::object{{"seq_read_mb_s", disk->seq_read_mb_s},
                                     {"seq_write_mb_s", disk->seq_write_mb_s},
                                     {"rand_read_iops", disk->rand_read_iops},
                                     {"rand_read_p50_us", disk->rand_read_p50_us},
                                     {"rand_read_p99_us", disk->rand_read_p99_us},
                                     {"direct_io", disk->direct_io}};
    } else {
      data["storage_error"] = disk.status().ToString().substr(0, 1000);
    }
  }
  LogInfo("benchmark.finished", {{"benchmark_id", req->benchmark_id}});
  return data;
}

}  // namespace gpunex::agent
