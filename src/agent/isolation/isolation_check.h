// The network isolation check (docs/trust.md): can a workload reach another workload, or
// a service of the host? Docker isolates user-defined bridge networks from each other only
// through the iptables rules it installs (DOCKER-ISOLATION-*), and never keeps a container
// from the host's own addresses (its network's gateway is one of them). An engine started
// with --iptables=false, or a host whose firewall lost Docker's rules, lets a rental reach
// the next customer's container and every service of the host. The agent does not assume:
// it measures, with throw-away containers made like a workload's, before the machine is
// listed and then every hour.
//
// One check:
//   1. two networks made exactly as a workload's (WorkloadNetworkOptions: a gpxwl* bridge),
//      "gpunex-probe-<id>-a" and "-b";
//   2. listeners (netprobe.h), each answering with the check's random token: one in the
//      host's network namespace (NetworkMode host) on a random port, which also lists the
//      host's IPv4 addresses; one on network b (another workload); one on network a (the
//      control: a workload must reach its own network, or the check proves nothing);
//   3. a prober on network a connects to all of them at once: the control, the container
//      on b, and the host listener through every host address (its own gateway among
//      them);
//   4. everything is removed, whatever happened (after the verdict is told:
//      IsolationCheckOptions::on_verdict).
// The containers run the agent's own image (self_image.h) as nobody, without capabilities,
// read-only, with small memory and PID limits. Objects carry the labels io.gpunex.probe
// (the check) and io.gpunex.probe-owner (who ran it), not io.gpunex.managed, so a
// reconcile leaves them alone; a check removes what an earlier check of its owner left
// (its agent died during it), never another agent's on the same engine (tests run
// several). Checks of one state directory (the agent's and `gpunex-agent self-test`'s in
// the same container) take turns through a lock file there.
//
// Thread-safety: CheckNetworkIsolation may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/isolation/netprobe.h"
#include "agent/runtime/docker_client.h"
#include "common/agent_protocol.h"

namespace gpunex::agent::isolation {

// On every container and network of a check: the check's id, and its owner's.
inline constexpr char kLabelProbe[] = "io.gpunex.probe";
inline constexpr char kLabelProbeOwner[] = "io.gpunex.probe-owner";

struct IsolationCheckOptions {
  // Who runs the check, the same across its restarts ([A-Za-z0-9]+; the agent uses a hash
  // of its machine key).
  std::string owner;
  // Where the probe image's tar and the lock file go: the agent's state directory.
  std::string work_dir;
  // How long the prober waits for each answer. A firewall that drops (rather than refuses)
  // makes every blocked target take this long.
  std::chrono::milliseconds connect_timeout{1500};
  // How long a listener may take to be ready, and the prober to finish.
  std::chrono::seconds step_timeout{30};
  // A check that finds something reached runs once more, this long after, before it says
  // so: an engine creating or removing other networks at that moment (another agent's
  // check on the same engine, say) may lack their rules for an instant, and one such
  // instant must not delist the machine. A real hole is found twice.
  std::chrono::milliseconds confirm_after{2000};
  // Called once per check with its report as soon as that is final, before the probe's
  // containers and networks are removed: the removal waits until the engine has listed
  // none of them for a few seconds (kQuietFor), which need not delay the verdict (the
  // agent's first listing waited for it). Called on the checking thread.
  std::function<void(const protocol::NetworkIsolation&)> on_verdict;
};

// The owner of the checks of the agent with this machine key (the key is secret, the
// first 12 hex digits of its SHA-256 are not).
std::string CheckOwner(const std::string& machine_key);

// What a check on `docker` reports without running (kIsolationNoEngine for an engine that
// does not answer, kIsolationUnverified for one that answers with an error); nullopt
// when the engine answers, and only a check can tell.
std::optional<protocol::NetworkIsolation> EngineUnanswered(DockerClient& docker);

// Runs one check on `docker`. Never fails: an engine that does not answer is
// kIsolationNoEngine, a check that cannot finish kIsolationUnverified with the reason in
// `detail`. Returns once everything the check made is removed; options.on_verdict has the
// report before that.
protocol::NetworkIsolation CheckNetworkIsolation(DockerClient& docker,
                                                 const IsolationCheckOptions& options);

// What the provider should do about `report` (for self-test and the agent's log); "" when
// it is kIsolated or kIsolationNoEngine.
std::string IsolationFix(const protocol::NetworkIsolation& report);

// The parts of a check, apart for tests.

// The prober's targets: the control ("peer", on the prober's own network), the other
// workload ("workload") and the host listener at each host address ("host-1", ...).
struct ProbePlan {
  ProbeTarget peer;
  ProbeTarget workload;
  std::vector<ProbeTarget> host;

  std::vector<ProbeTarget> Targets() const;
};

// The host addresses a host listener printed ("address A" lines), in order; empty when
// it printed none.
std::vector<std::string> ListenerAddresses(std::string_view listener_output);

// The report from what `netprobe connect` printed for `plan`: kIsolationUnverified when it
// did not finish, left a target out, or could not reach the control; kNotIsolated naming
// what was reached; kIsolated otherwise. `detail` quotes the addresses and, when nothing
// was reached, why each was not.
protocol::NetworkIsolation JudgeProbe(const ProbePlan& plan, std::string_view prober_output);

}  // namespace gpunex::agent::isolation
