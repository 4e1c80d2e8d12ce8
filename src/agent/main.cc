// gpunex-agent: the provider host agent.
//   gpunex-agent run [--emulate-gpus SPEC] [--emulate-perf F]
//   gpunex-agent self-test [--emulate-gpus SPEC]
//   gpunex-agent store-token            (reads the token from standard input)
//   gpunex-agent bench storage|network ...   (agent/bench/bench_command.h)
//   gpunex-agent netprobe listen|connect ...  (agent/isolation/netprobe.h: what the network
//                                              isolation check runs in its containers)
//   gpunex-agent version
// Environment: GPUNEX_PLATFORM_URL, GPUNEX_TOKEN (or the stored token), GPUNEX_STATE_DIR
// (default /var/lib/gpunex-agent), GPUNEX_DOCKER_SOCKET (default /var/run/docker.sock),
// GPUNEX_CA_FILE, GPUNEX_GPUBENCH_IMAGE (the gpunex-gpubench image benchmarks run).
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/bench/bench_command.h"
#include "agent/isolation/netprobe.h"
#include "agent/self_test.h"
#include "common/allocator.h"
#include "common/log.h"

namespace {

std::string Env(const char* name, std::string fallback = "") {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpunex;
  using namespace gpunex::agent;
  KeepFreedMemoryForReuse();  // the data channel's frames (common/allocator.h)
  CLI::App app{"gpunex-agent: contributes this machine's GPUs to a gpunex platform"};
  app.require_subcommand(1);
  std::string emulate, docker_socket = Env("GPUNEX_DOCKER_SOCKET", "/var/run/docker.sock");
  double perf = 1.0;
  auto* run = app.add_subcommand("run", "connect to the platform and serve");
  auto* self_test = app.add_subcommand("self-test", "check this machine and say what to fix");
  for (auto* c : {run, self_test}) {
    c->add_option("--emulate-gpus", emulate,
                  "EMULATED GPUs for tests and demos, e.g. \"h100-sxm-80gb:2,l4-24gb:1\"");
    c->add_option("--emulate-perf", perf, "benchmark factor of emulated GPUs (0, 2]");
    c->add_option("--docker-socket", docker_socket, "Docker Engine socket");
  }
  auto* store_token =
      app.add_subcommand("store-token", "save the agent token (from stdin) in the state directory");
  auto* version = app.add_subcommand("version", "print the version");
  // `bench storage|network ...`: the rest of the words are parsed by RunBenchCommand.
  auto* bench = app.add_subcommand(
      "bench",
      "measure storage (bench storage --dir D) or the network to the platform (bench network)");
  bench->prefix_command();
  bench->set_help_flag();
  auto* netprobe = app.add_subcommand(
      "netprobe", "the network isolation check's listener and prober (run in its containers)");
  netprobe->prefix_command();
  netprobe->set_help_flag();
  CLI11_PARSE(app, argc, argv);
  if (*bench) return bench::RunBenchCommand(bench->remaining(), std::cout, std::cerr);
  if (*netprobe) return isolation::RunNetprobe(netprobe->remaining(), std::cout, std::cerr);

  if (*version) {
    std::cout << "gpunex-agent " << kAgentVersion << " (protocol " << protocol::kProtocolVersion
              << ")\n";
    return 0;
  }
  const std::string state_dir = Env("GPUNEX_STATE_DIR", "/var/lib/gpunex-agent");
  auto state = AgentState::Open(state_dir);
  if (!state.ok()) {
    std::cerr << "gpunex-agent: " << state.status().ToString() << "\n";
    return 1;
  }
  if (*store_token) {
    std::string token;
    std::getline(std::cin, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (!token.starts_with("gpx_a_") || token.size() > 128) {
      std::cerr << "gpunex-agent: that is not an agent token (they start with gpx_a_)\n";
      return 2;
    }
    Status st = (*state)->StoreToken(token);
    if (!st.ok()) {
      std::cerr << "gpunex-agent: " << st.ToString() << "\n";
      return 1;
    }
    std::cout << "token stored in " << state_dir << "\n";
    return 0;
  }

  std::unique_ptr<GpuSource> gpus;
  if (!emulate.empty()) {
    auto e = EmulatedGpuSource(emulate, perf, (*state)->machine_key());
    if (!e.ok()) {
      std::cerr << "gpunex-agent: --emulate-gpus: " << e.status().ToString() << "\n";
      return 2;
    }
    gpus = std::move(*e);
    LogWarn("agent.emulated_gpus",
            {{"spec", emulate}, {"message", "GPUs are EMULATED: for tests and demos only"}});
  } else {
    gpus = NvmlGpuSource();
  }
  std::unique_ptr<DockerClient> docker = DockerEngineClient(docker_socket);

  AgentOptions options;
  options.platform_url = Env("GPUNEX_PLATFORM_URL");
  options.token = Env("GPUNEX_TOKEN", (*state)->token());
  options.ca_file = Env("GPUNEX_CA_FILE");
  options.gpubench_image = Env("GPUNEX_GPUBENCH_IMAGE", options.gpubench_image);

  if (*self_test) {
    SelfTestReport report = RunSelfTest(options, **state, *gpus, docker.get());
    std::cout << report.text;
    return report.ok ? 0 : 1;
  }

  if (options.platform_url.empty()) {
    std::cerr << "gpunex-agent: set GPUNEX_PLATFORM_URL to the platform's address\n";
    return 2;
  }
  if (options.token.empty()) {
    std::cerr
        << "gpunex-agent: no agent token: set GPUNEX_TOKEN or run `gpunex-agent store-token`\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Agent agent(options, **state, *gpus, docker.get());
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LogInfo("agent.stopping", {{"signal", sig}});
    agent.Stop();
  });
  LogInfo("agent.started", {{"platform", options.platform_url},
                            {"state_dir", state_dir},
                            {"gpu_source", gpus->Kind()},
                            {"version", kAgentVersion}});
  Status st = agent.Run();
  signal_thread.join();
  return st.ok() ? 0 : 1;
}
