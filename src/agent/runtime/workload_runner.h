// WorkloadRunner: runs customer workloads in isolated containers, end to end (SPEC ISO-1,
// ISO-3).
//
// For each workload: make sure the image is there (pull it when not), create the
// workload's own bridge network "gpunex-wl-<id>" (unless the policy asks for no network)
// and its scratch volume "gpunex-scratch-<id>", create the container with the isolation
// policy (policy.h; the body is re-checked by CheckContainerConfig() right before it is
// sent), start it, stream its output, enforce its timeout, and when it ends remove the
// container, the volume and the network. Reconcile() removes whatever the agent created
// that should no longer exist, including leftovers of an earlier agent process.
//
// States, reported through WorkloadCallbacks::on_state in this order:
//   kStarting -> kRunning -> one of kExited (the process ended by itself, with its exit
//   code), kStopped (Stop() or Reconcile() ended it), kFailed (it could not start, hit its
//   timeout ("timeout"), was killed for memory ("out of memory"), was removed from
//   outside the agent, or the engine failed).
// A workload stopped before it ran goes kStarting -> kStopped. The terminal state is
// reported after the cleanup, so when it arrives the container, volume and network are
// gone (or their removal failed and was logged; Reconcile() retries). It carries the
// cause of the end, named from what the engine said (endings.h).
//
// Scratch size: the volume is created with the local driver's "size" option, which the
// engine honours only when its data root supports project quotas (xfs with pquota, e.g.);
// elsewhere the engine refuses it and, with ScratchBackend::kQuotaIfSupported, the volume
// is created without a limit (logged once as "runtime.scratch_unlimited").
// ScratchBackend::kTmpfs makes it a size-limited tmpfs instead, at the cost of memory.
//
// Threading: one thread per workload, from Start() until its terminal state; it makes
// every engine call for that workload, so Stop() only flags the workload and returns.
// While the container runs, the thread follows its log stream, and checks about once a
// second whether a stop was asked for or the timeout passed, then stops the container
// (SIGTERM, SIGKILL after stop_grace_s) and keeps reading until the stream ends.
// Callbacks run on that thread without any runner lock held: they may call the runner,
// except Wait() for their own workload (which waits for the callback to return).
// The public methods are thread-safe. Destroying the runner stops every workload it runs
// and waits for their cleanup.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/runtime/docker_client.h"
#include "agent/runtime/policy.h"
#include "common/data_channel.h"
#include "common/status.h"

namespace gpunex::agent {

enum class WorkloadState { kStarting, kRunning, kExited, kFailed, kStopped };

// "starting", "running", "exited", "failed", "stopped".
const char* WorkloadStateName(WorkloadState state);

struct WorkloadStatus {
  std::string workload_id;
  WorkloadState state = WorkloadState::kStarting;
  // The container's exit code once it has ended by itself or been stopped; unset when it
  // never ran or the engine could not say.
  std::optional<int64_t> exit_code;
  // kFailed: why ("timeout", "out of memory", "image: ...", "create: ..."); else empty.
  std::string reason;
  // Once ended: what ended it, a protocol::kCause* (endings.h); empty before.
  std::string cause;
  std::string container_id;  // once created
};

struct WorkloadCallbacks {
  // Every state change of every workload.
  std::function<void(const WorkloadStatus&)> on_state;
  // The workload's output, piece by piece, in the order it was written (per stream).
  std::function<void(const std::string& workload_id, const LogFrame& frame)> on_log;
};

enum class ScratchBackend {
  // A quota-limited local volume where the data root supports it; unlimited elsewhere.
  kQuotaIfSupported,
  // A tmpfs volume of exactly scratch_mb (counts against the host's memory).
  kTmpfs,
};

struct WorkloadRunnerOptions {
  ContainerPolicyOptions policy;
  ScratchBackend scratch = ScratchBackend::kQuotaIfSupported;
  // Seconds between SIGTERM and SIGKILL when stopping a workload.
  int stop_grace_s = 10;
  // The GPUs the provider designated (AGT-5); a workload asking for another one is
  // refused. nullopt: no restriction (the caller checks).
  std::optional<std::set<std::string>> offered_gpus;
  // How many ended workloads Get()/Wait() still know about.
  size_t max_finished = 1024;
};

class WorkloadRunner {
 public:
  virtual ~WorkloadRunner() = default;

  // Begins running `spec` in the background and returns. Its registry_auth, when given,
  // is used if the image must be pulled, and wiped once the pull has ended (it is kept
  // nowhere else: Get's spec has none). Fails with kAlreadyExists when the runner already knows the
  // workload id (running or ended: ids are never reused), with kPermissionDenied when a
  // GPU is not among offered_gpus, with kFailedPrecondition when a GPU is in use by another
  // running workload, and with kUnavailable while the runner is shutting down.
  // REQUIRES: `spec` came from protocol::ParseStartWorkload() (or satisfies its bounds).
  virtual Status Start(WorkloadSpec spec) = 0;
  // Asks the workload to stop; its thread stops the container and reports kStopped after
  // the cleanup. OK when it has already ended; kNotFound when unknown.
  virtual Status Stop(const std::string& workload_id) = 0;
  // Blocks until the workload has reached its terminal state (and its terminal on_state
  // callback has returned), for at most `timeout_ms`, and returns that state. kNotFound
  // when unknown; kUnavailable when the time passes first.
  virtual StatusOr<WorkloadStatus> Wait(const std::string& workload_id, int64_t timeout_ms) = 0;
  // The workload's latest state; kNotFound when unknown.
  virtual StatusOr<WorkloadStatus> Get(const std::string& workload_id) = 0;
  // The workloads that have not ended, as they are now (a start in progress has no
  // container yet): for the hello after a reconnect, so that the platform keeps them.
  virtual std::vector<WorkloadStatus> InFlight() = 0;
  // A connected, non-blocking TCP socket (the caller closes it) to `port` of the running
  // workload's container, made inside that container's network namespace and connected
  // to its loopback (netns_dial.h), so that no network joins the agent and the workload.
  // kPermissionDenied for a port the workload did not declare (StartWorkload::ports);
  // kNotFound for a workload not running here; kUnavailable when nothing answers there.
  virtual StatusOr<int> DialPort(const std::string& workload_id, uint16_t port,
                                 std::chrono::milliseconds timeout) = 0;
  // A socket to the engine carrying one archive exchange with the running workload's own
  // container (DockerClient::OpenArchive): `target` (kind kFiles) names the path, whether
  // a tar goes in or out, and a PUT's framing. kNotFound for a workload not running here.
  virtual StatusOr<int> OpenFiles(const StreamTarget& target) = 0;
  // Runs `target`'s command (kind kExec) in the running workload's own container and
  // returns a socket carrying its exec frames (ExecSessions::Start). kNotFound for a
  // workload not running here; kResourceExhausted when the machine runs its cap of execs.
  virtual StatusOr<int> OpenExec(const StreamTarget& target) = 0;
  // Makes the engine hold exactly the workloads in `keep` (SPEC ISO-3): workloads this
  // runner runs that are not in `keep` are stopped (as by Stop()), and every container,
  // scratch volume and network labelled io.gpunex.managed=true that is this agent's (its
  // io.gpunex.agent label is policy.owner, or it has none, as what agents made before the
  // label) and belongs to no workload in `keep` and none this runner runs is removed:
  // another agent's on a shared engine are never touched. Containers of workloads in
  // `keep` that this runner does not run (left by an earlier agent process) are adopted.
  // Returns the first failure after trying everything.
  virtual Status Reconcile(const std::set<std::string>& keep_workload_ids) = 0;
};

// A runner using `docker`, which must outlive it.
std::unique_ptr<WorkloadRunner> DockerWorkloadRunner(DockerClient* docker,
                                                     WorkloadRunnerOptions options,
                                                     WorkloadCallbacks callbacks);

}  // namespace gpunex::agent
