// How the workload runner names a workload's end from what the engine says (issue 24).
//
// The facts the engine gives -- the exit code, State.OOMKilled, whether the container
// still exists, how a pull or a start failed -- become a cause (agent_protocol.h,
// protocol::kCause*) that goes with the terminal workload_event. The platform puts each
// cause down to the party that caused it (docs/billing.md, "Who ended it"): the agent
// reports what happened, never whose fault it was. The reason beside it keeps the
// engine's own words, which only the provider sees.
//
// Pure functions of values, so that each rule is tested without an engine
// (endings_test.cc); workload_runner.cc gathers the facts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/runtime/workload_runner.h"
#include "common/json.h"
#include "common/status.h"

namespace gpunex::agent {

// What the runner knows once a container that ran has ended.
struct EngineEnd {
  bool timed_out = false;       // the runner stopped it when its timeout_s passed
  bool stopped = false;         // the runner stopped it as it was asked to
  bool agent_shutdown = false;  // ... and the one who asked is the agent shutting down
  // From waiting on the container; none when it vanished before its exit code was read.
  std::optional<int64_t> exit_code;
  bool gone = false;        // no such container any more, or the engine is removing it
  bool oom_killed = false;  // State.OOMKilled: the kernel killed it at its memory limit
};

// Sets `end->gone` and `end->oom_killed` from the inspect answer for the ended container
// (before the runner removes it). An answer the engine could not give changes nothing.
void ReadInspect(const StatusOr<json::object>& inspect, EngineEnd* end);

struct EndVerdict {
  WorkloadState state = WorkloadState::kExited;
  std::string reason;  // WorkloadStatus::reason
  std::string cause;   // protocol::kCause*
};

// The terminal state, reason and cause of a container that ran. In this order: a timeout
// or a stop the runner made is that; a container removed from outside the agent is
// container_gone (even when the engine gave its exit code on the way: `docker rm -f`
// kills first); State.OOMKilled is oom_killed; an exit code is exited.
EndVerdict RunEnd(const EngineEnd& end);

// The cause of a failed pull, from the DockerClient's status (docker_client.h): the host's
// own failures (its disk, its image store) are engine_error; the registry saying it has no
// such image, or a reference the engine refuses, image_not_found; the registry refusing
// access (unauthorized, denied, rate-limited) image_refused; anything else, the registry
// not reached or failing, registry_unreachable (the runner makes that engine_error when
// the engine itself does not answer).
std::string PullFailureCause(const Status& pull);

// The cause of a failed container start: the engine refusing the command as invalid
// (HTTP 400: not found in the image, not executable) is bad_command; anything else is the
// engine's (engine_error).
std::string StartFailureCause(const Status& start);

}  // namespace gpunex::agent
