// The isolation policy for customer workloads (SPEC ISO-1, ISO-2): the single place that
// decides what a workload container may do.
//
// A workload request arrives as the start_workload payload and is parsed by
// protocol::ParseStartWorkload() (common/agent_protocol.h), the same strict parser the
// platform's payload is written for: it accepts only the spec's fields, within bounds, and
// refuses anything that could widen the container's reach ("privileged", "binds",
// "cap_add", "devices", "network_mode", "user", ...) with a field error naming it.
// BuildContainerConfig() turns a parsed spec into the body of the Engine API's
// POST /containers/create, and every container the agent creates is built by it.
// CheckContainerConfig() re-verifies a built body against the policy, with its own checks
// of the bounds, right before it is sent (defense in depth: a bug in the parser or the
// builder, or a future change to them, cannot widen the policy silently).
//
// What a workload container gets:
//   - exactly the allocated GPUs, by UUID, through an nvidia device request (none when the
//     machine's GPUs are emulated); NVIDIA_VISIBLE_DEVICES is pinned to the same UUIDs
//     ("void" when none) so that an image's own NVIDIA_VISIBLE_DEVICES=all cannot widen it
//     under the legacy nvidia runtime hook;
//   - no host mounts: its only volume is its own named scratch volume at /scratch, plus a
//     size-limited tmpfs at /tmp; the root filesystem is read-only;
//   - not privileged, every capability dropped, no-new-privileges, private IPC and PID
//     namespaces, the engine's default seccomp and AppArmor profiles;
//   - memory (swap disabled), CPU and PID limits from the spec (the platform sizes them in
//     proportion to the GPUs rented);
//   - its own bridge network "gpunex-wl-<id>" (or no network at all), whose Linux bridge is
//     named WorkloadBridgeName() so that the host's firewall can single workload networks
//     out; no published ports;
//   - an init process as PID 1, no restart, json-file logs with a size cap.
// Not enforced here: the user inside the container is the image's (often root, but without
// capabilities); user-namespace remapping is a daemon setting. The scratch volume's size
// limit depends on the storage driver (see WorkloadRunner).
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent_protocol.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::agent {

// Labels on everything the agent creates for a workload (container, volume, network).
inline constexpr char kLabelManaged[] = "io.gpunex.managed";    // always "true"
inline constexpr char kLabelWorkload[] = "io.gpunex.workload";  // the workload id
// The agent that made it (ContainerPolicyOptions::owner), so that agents sharing one engine
// leave each other's workloads alone. Absent on what agents made before it existed.
inline constexpr char kLabelAgent[] = "io.gpunex.agent";
// Container only: the allocated GPU UUIDs, comma-separated (may be empty), and how they
// are attached: "nvidia" (device request) or "emulated" (not attached).
inline constexpr char kLabelGpus[] = "io.gpunex.gpus";
inline constexpr char kLabelGpuMode[] = "io.gpunex.gpu-mode";
// Container only, when it declared ports: "8080/http,22/tcp", so that an agent that
// restarts and adopts the container still reaches exactly those (docs/access.md).
inline constexpr char kLabelPorts[] = "io.gpunex.ports";
std::string PortsLabel(const std::vector<protocol::WorkloadPort>& ports);
// The ports of a kLabelPorts value; nullopt when it is not one.
std::optional<std::vector<protocol::WorkloadPort>> ParsePortsLabel(std::string_view label);

// The mount point of the scratch volume, and of the tmpfs.
inline constexpr char kScratchPath[] = "/scratch";
inline constexpr char kTmpPath[] = "/tmp";

// A workload request, parsed and bounded by protocol::ParseStartWorkload().
using WorkloadSpec = protocol::StartWorkload;

// The names of a workload's container, network and scratch volume.
std::string WorkloadContainerName(const std::string& workload_id);
std::string WorkloadNetworkName(const std::string& workload_id);
std::string ScratchVolumeName(const std::string& workload_id);

// The Linux bridge of a workload network named `network_name` (and of the isolation
// check's workload-like networks): kWorkloadBridgePrefix and the first 10 hex digits of the
// SHA-256 of the name, 15 bytes (the longest interface name). Docker names a network's
// bridge "br-<id>" by default, like every other network of the host; the fixed prefix lets
// the host's firewall single workload networks out (`iptables -I INPUT -i gpxwl+ -j REJECT`,
// docs/trust.md).
inline constexpr char kWorkloadBridgePrefix[] = "gpxwl";
std::string WorkloadBridgeName(const std::string& network_name);
// The bridge driver options every workload network is created with (its bridge's name).
std::map<std::string, std::string> WorkloadNetworkOptions(const std::string& network_name);

struct ContainerPolicyOptions {
  // The kLabelAgent value of this agent (isolation::CheckOwner of its machine key): the
  // container carries it. Empty: no such label (as agents before it).
  std::string owner;
  // The machine's GPUs are emulated: no device request; the UUIDs appear only in the
  // io.gpunex.gpus label.
  bool emulated_gpus = false;
  // NetworkMode "none" instead of the workload's own network WorkloadNetworkName(id),
  // which the caller creates.
  bool network_none = false;
  // Size of the tmpfs at /tmp in MiB, capped at the spec's memory (tmpfs pages count
  // against the container's memory limit).
  int64_t tmp_mb = 256;
  // json-file log rotation: size of one file ("32m") and how many are kept.
  std::string log_max_size = "32m";
  int log_max_files = 2;
};

// The body of POST /containers/create for `spec`.
// REQUIRES: `spec` came from protocol::ParseStartWorkload (or satisfies its bounds). The caller
// creates the volume ScratchVolumeName(id) and, unless network_none, the network
// WorkloadNetworkName(id) before creating the container.
json::object BuildContainerConfig(const WorkloadSpec& spec, const ContainerPolicyOptions& opts);

// OK when `config` is within the policy: only the keys BuildContainerConfig() writes, each
// with an allowed value, the GPUs attached being exactly those its labels list. Fails with
// kPermissionDenied and a field error for each violation ("HostConfig.Privileged": ...).
Status CheckContainerConfig(const json::object& config);

}  // namespace gpunex::agent
