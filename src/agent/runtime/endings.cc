#include "agent/runtime/endings.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string_view>

#include "common/agent_protocol.h"
#include "common/ascii.h"

namespace gpunex::agent {
namespace {

bool HasAny(const std::string& text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string::npos; });
}

}  // namespace

void ReadInspect(const StatusOr<json::object>& inspect, EngineEnd* end) {
  if (!inspect.ok()) {
    if (inspect.status().code() == StatusCode::kNotFound) end->gone = true;
    return;
  }
  auto state = inspect->find("State");
  if (state == inspect->end() || !state->value().is_object()) return;
  const json::object& s = state->value().get_object();
  if (auto oom = s.find("OOMKilled"); oom != s.end() && oom->value().is_bool()) {
    end->oom_killed = end->oom_killed || oom->value().get_bool();
  }
  // `docker rm -f` marks the container "removing" before it kills it; "dead" is one whose
  // removal failed half way.
  if (auto status = s.find("Status"); status != s.end() && status->value().is_string()) {
    const std::string_view st = status->value().get_string();
    if (st == "removing" || st == "dead") end->gone = true;
  }
}

EndVerdict RunEnd(const EngineEnd& end) {
  if (end.timed_out) return {WorkloadState::kFailed, "timeout", protocol::kCauseTimeout};
  if (end.stopped) {
    return {WorkloadState::kStopped, "",
            end.agent_shutdown ? protocol::kCauseAgentShutdown : protocol::kCauseStopped};
  }
  if (end.gone || !end.exit_code) {
    return {WorkloadState::kFailed, "the container was removed outside the agent",
            protocol::kCauseContainerGone};
  }
  if (end.oom_killed) {
    return {WorkloadState::kFailed, "out of memory", protocol::kCauseOomKilled};
  }
  return {WorkloadState::kExited, "", protocol::kCauseExited};
}

std::string PullFailureCause(const Status& pull) {
  const std::string m = AsciiLower(pull.message());
  // The host's own storage, whatever the registry did.
  if (HasAny(m, {"no space left on device", "read-only file system", "failed to register layer",
                 "input/output error", "too many open files"})) {
    return protocol::kCauseEngineError;
  }
  if (HasAny(m, {"toomanyrequests", "too many requests", "rate limit"})) {
    return protocol::kCauseImageRefused;
  }
  if (pull.code() == StatusCode::kNotFound ||
      HasAny(m, {"manifest unknown", "not found", "does not exist", "name unknown"})) {
    return protocol::kCauseImageNotFound;
  }
  if (pull.code() == StatusCode::kUnauthenticated || pull.code() == StatusCode::kPermissionDenied ||
      HasAny(m, {"unauthorized", "denied", "authentication required", "forbidden"})) {
    return protocol::kCauseImageRefused;
  }
  if (pull.code() == StatusCode::kInvalidArgument) return protocol::kCauseImageNotFound;
  return protocol::kCauseRegistryUnreachable;
}

std::string StartFailureCause(const Status& start) {
  return start.code() == StatusCode::kInvalidArgument ? protocol::kCauseBadCommand
                                                      : protocol::kCauseEngineError;
}

}  // namespace gpunex::agent
