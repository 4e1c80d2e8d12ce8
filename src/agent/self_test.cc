#include "agent/self_test.h"

#include <unistd.h>

#include "agent/host/host_facts.h"
#include "agent/isolation/isolation_check.h"
#include "common/net/websocket_client.h"

namespace gpunex::agent {
namespace {

class Report {
 public:
  void Ok(const std::string& what) { text_ += "[ok]   " + what + "\n"; }
  void Warn(const std::string& what, const std::string& fix) {
    text_ += "[warn] " + what + "\n       → " + fix + "\n";
  }
  void Fail(const std::string& what, const std::string& fix) {
    ok_ = false;
    text_ += "[FAIL] " + what + "\n       → " + fix + "\n";
  }
  SelfTestReport Done() {
    text_ +=
        ok_ ? "self-test passed\n" : "self-test FAILED: fix the items above and run it again\n";
    return {ok_, text_};
  }

 private:
  bool ok_ = true;
  std::string text_;
};

}  // namespace

SelfTestReport RunSelfTest(const AgentOptions& options, AgentState& state, GpuSource& gpus,
                           DockerClient* docker) {
  Report r;
  if (::access(state.dir().c_str(), W_OK) == 0) {
    r.Ok("state directory " + state.dir() + " is writable");
  } else {
    r.Fail("state directory " + state.dir() + " is not writable",
           "mount the gpunex-agent-state volume there (the installer does this)");
  }
  auto host = CollectHostFacts(state.dir());
  if (host.ok()) {
    r.Ok("host: " + host->cpu_model + ", " + std::to_string(host->cpu_cores) + " CPUs, " +
         std::to_string(host->ram_mb / 1024) + " GiB RAM, " +
         std::to_string(host->disk_free_mb / 1024) + " GiB free");
  } else {
    r.Warn("cannot read host facts: " + host.status().message(), "check that /proc is mounted");
  }
  auto inv = gpus.Inventory();
  if (!inv.ok()) {
    r.Fail("GPUs: " + inv.status().message(),
           "install the NVIDIA driver and the NVIDIA Container Toolkit, "
           "and start the agent with --gpus all");
  } else if (inv->empty()) {
    r.Fail("no GPUs found", "check `nvidia-smi` on the host");
  } else {
    for (const auto& g : *inv) {
      std::string line =
          "GPU " + std::to_string(g.index) + ": " + g.name + " (" + g.uuid + ")" +
          (g.catalog_id.empty() ? " — not in the catalog, reviewed case by case" : "");
      r.Ok(line);
      if (!g.emulated && g.pcie_width_current > 0 && g.pcie_width_max > 0 &&
          g.pcie_width_current < g.pcie_width_max) {
        r.Warn("GPU " + std::to_string(g.index) + " runs at PCIe x" +
                   std::to_string(g.pcie_width_current) + " of x" +
                   std::to_string(g.pcie_width_max),
               "reseat the card or use a full-width slot");
      }
    }
    if (gpus.Emulated()) {
      r.Warn("these GPUs are EMULATED",
             "emulated GPUs are for tests and demos; the platform refuses them unless allowed");
    }
  }
  if (!docker) {
    r.Fail("no Docker client", "install Docker and mount /var/run/docker.sock into the agent");
  } else if (auto v = docker->Version(); v.ok()) {
    r.Ok("Docker Engine " + v->version + " (API " + v->api_version + ")");
    // The check the agent runs before the machine is listed (isolation_check.h).
    isolation::IsolationCheckOptions o;
    o.work_dir = state.dir();
    o.owner = isolation::CheckOwner(state.machine_key());
    protocol::NetworkIsolation n = isolation::CheckNetworkIsolation(*docker, o);
    if (n.state == protocol::kIsolated) {
      r.Ok("workloads are network-isolated: " + n.detail);
    } else {
      r.Fail("workloads are not network-isolated (" + n.state + "): " + n.detail +
                 "; the platform does not list this machine",
             isolation::IsolationFix(n));
    }
  } else {
    r.Fail("Docker Engine unreachable: " + v.status().message(),
           "start Docker and mount /var/run/docker.sock into the agent container");
  }
  if (options.token.empty()) {
    r.Fail("no agent token", "set GPUNEX_TOKEN or run `gpunex-agent store-token`");
  }
  if (options.platform_url.empty()) {
    r.Fail("no platform address", "set GPUNEX_PLATFORM_URL");
  } else if (!options.token.empty()) {
    net::WebSocketClientOptions wo;
    wo.ca_file = options.ca_file;
    wo.connect_timeout = std::chrono::seconds(10);
    wo.headers.emplace_back("Authorization", "Bearer " + options.token);
    std::string url = options.platform_url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    auto ws = net::WebSocketClient::Connect(url + "/api/v1/agent/connect", wo);
    if (ws.ok()) {
      (*ws)->Close(1000, "self-test");
      r.Ok("the platform at " + options.platform_url + " accepts this agent's token");
    } else if (ws.status().code() == StatusCode::kUnauthenticated ||
               ws.status().code() == StatusCode::kPermissionDenied) {
      r.Fail("the platform refused the token: " + ws.status().message(),
             "create a new agent token in the Provider Dashboard and store it");
    } else {
      r.Fail("cannot reach the platform: " + ws.status().message(),
             "check GPUNEX_PLATFORM_URL, DNS, the firewall, and HTTPS_PROXY if you use a proxy");
    }
  }
  return r.Done();
}

}  // namespace gpunex::agent
