// The agent's main loop (AGT-3, AGT-4): one outbound WebSocket to the platform, kept up
// with jittered exponential backoff; hello with the inventory and the machine identity;
// heartbeats with telemetry; commands acknowledged and answered exactly once (answers
// to repeats come from the state record); workload events and logs forwarded, queued
// while the channel is down.
//
// Network isolation (isolation/isolation_check.h): a thread checks it when Run() starts
// and every isolation_interval_s after; hello carries the latest report ("checking" until
// the first check ends) and each change is sent as a network_isolation message. A workload
// starts only on a machine whose last check said "isolated": otherwise it fails at once
// with "engine: network isolation ..." (the provider's side), after a fresh check when the
// last one could not tell.
//
// The data channel (link/data_link.h): once the control channel is welcomed, a thread
// keeps a second WebSocket open for the streams to workloads' declared ports, each
// reached with WorkloadRunner::DialPort; it reconnects with backoff on its own.
//
// Thread-safety: Run() on one thread; Stop() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/gpu/gpu_source.h"
#include "agent/link/data_link.h"
#include "agent/runtime/docker_client.h"
#include "agent/runtime/workload_runner.h"
#include "agent/state.h"
#include "common/agent_protocol.h"
#include "common/net/websocket_client.h"
#include "common/status.h"
#include "common/thread_annotations.h"

namespace gpunex::agent {

inline constexpr char kAgentVersion[] = "0.1.0";

struct AgentOptions {
  std::string platform_url;  // http(s)://host:port of gpunexd
  std::string token;         // the agent token
  std::string ca_file;       // for a platform with a private CA; "" = system store
  int max_backoff_s = 60;
  int welcome_timeout_s = 30;
  // The image holding gpunex-gpubench, run like a workload on the GPU under test.
  std::string gpubench_image = "gpunex/gpubench:0.1.0";
  // Seconds between network isolation checks; after a check that could not tell
  // (unverified, no engine), isolation_retry_s.
  int isolation_interval_s = 3600;
  int isolation_retry_s = 60;
  // Between checks the engine is pinged this often: an engine that stops answering is
  // reported (no_engine: the platform delists the machine) within this time, and one that
  // answers again is checked at once.
  int engine_ping_s = 10;
  // How long a workload's start waits for a check that is running.
  int isolation_wait_s = 120;
};

class Agent {
 public:
  // `docker` may be null when no engine is reachable (workloads then fail clearly).
  Agent(AgentOptions options, AgentState& state, GpuSource& gpus, DockerClient* docker);
  ~Agent();

  // Connects and serves until Stop(). Returns OK after Stop().
  Status Run() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  // The wait before reconnect attempt `attempt` (0-based): full jitter over
  // min(max, 1 s · 2^attempt). Exposed for tests.
  static std::chrono::milliseconds Backoff(int attempt, int max_backoff_s);

  // The latest network isolation report.
  protocol::NetworkIsolation Isolation() EXCLUDES(mu_);

 private:
  class Connection;
  Status Session() EXCLUDES(mu_);
  protocol::Hello MakeHello();
  void HandleCommand(const protocol::Command& c) EXCLUDES(mu_);
  void Execute(protocol::Command c) EXCLUDES(mu_);
  void Queue(protocol::AgentMessage m) EXCLUDES(mu_);
  bool SendNow(const protocol::AgentMessage& m) EXCLUDES(mu_);
  // Sends the queue in order while the connection takes it; one caller at a time does.
  void FlushQueue() EXCLUDES(mu_);
  // run_benchmark (benchmark.h) with this agent's runner, channel and state directory.
  protocol::BenchmarkResult Benchmark(const protocol::RunBenchmark& req) EXCLUDES(bench_mu_, mu_);
  // gpunex-gpubench on one real GPU, in a container through the workload runner.
  StatusOr<json::object> RunGpubench(const std::string& benchmark_id, const GpuInfo& gpu,
                                     int64_t sustain_s) EXCLUDES(mu_);
  // Round trips over the channel: `n` pings, each answered by a pong; milliseconds.
  StatusOr<std::vector<double>> MeasureRoundTrips(int64_t n) EXCLUDES(mu_);
  // The isolation thread: a check, then a wait, until Stop().
  void IsolationLoop() EXCLUDES(mu_);
  // Waits until `until`, Stop() or a check wanted (true), or until the next engine ping is
  // due (false).
  bool WaitForIsolationCheck(std::chrono::steady_clock::time_point until) EXCLUDES(mu_);
  // The data channel's thread: connects once the control channel is up, serves it, and
  // reconnects, until Stop().
  void DataLoop() EXCLUDES(mu_);
  // The options both channels connect with: the platform's CA and the agent token.
  net::WebSocketClientOptions ChannelOptions() const;
  // Before a workload starts: "" when the machine's last check said isolated, else why it
  // may not start. Waits (up to isolation_wait_s) for a check that is running, and asks
  // for a new one first when the last could not tell.
  std::string IsolationRefusal() EXCLUDES(mu_);

  AgentOptions options_;
  AgentState& state_;
  GpuSource& gpus_;
  DockerClient* docker_;
  std::unique_ptr<WorkloadRunner> runner_;

  std::atomic<bool> stopping_{false};
  Mutex mu_;
  CondVar cv_;  // signalled when a pong arrives, a command's worker or a check ends, a
                // check is asked for, or on Stop()
  std::shared_ptr<Connection> conn_ GUARDED_BY(mu_);
  std::deque<protocol::AgentMessage> queue_ GUARDED_BY(mu_);  // waits for a connection
  bool flushing_ GUARDED_BY(mu_) = false;                     // FlushQueue is sending it
  std::map<std::string, int64_t> log_seq_ GUARDED_BY(mu_);    // per workload and stream
  // Per workload: the bytes of its output replaced by U+FFFD (invalid UTF-8, NUL, ...).
  std::map<std::string, uint64_t> log_replaced_ GUARDED_BY(mu_);
  int running_workers_ GUARDED_BY(mu_) = 0;  // commands executing
  int64_t last_ping_id_ GUARDED_BY(mu_) = 0;
  // Pings waiting for their pong: when it arrived, or the epoch while it has not.
  std::map<int64_t, std::chrono::steady_clock::time_point> pongs_ GUARDED_BY(mu_);
  std::set<std::string> bench_running_ GUARDED_BY(mu_);              // benchmark containers
  std::map<std::string, std::string> bench_output_ GUARDED_BY(mu_);  // their stdout
  Mutex bench_mu_ ACQUIRED_BEFORE(mu_);                              // one benchmark at a time
  std::thread isolation_thread_;                                     // Run() starts, joins
  std::unique_ptr<DataLink> data_link_;                              // with a runner only
  std::thread data_thread_;                                          // Run() starts, joins
  protocol::NetworkIsolation isolation_ GUARDED_BY(mu_);             // the latest report
  int64_t isolation_checks_ GUARDED_BY(mu_) = 0;                     // checks ended
  bool isolation_wanted_ GUARDED_BY(mu_) = false;  // a check is asked for before its time
};

}  // namespace gpunex::agent
