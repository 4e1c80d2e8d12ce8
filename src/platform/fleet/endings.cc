#include "platform/fleet/endings.h"

#include <array>

#include "common/image_ref.h"
#include "platform/fleet/registries.h"

namespace gpunex::platform::fleet {
namespace {

struct Rule {
  std::string_view cause;
  EndParty party;
};

// docs/billing.md, "Who ended it". registry_unreachable is the customer's here and the
// provider's for a dependable registry (PartyOf).
constexpr std::array<Rule, 15> kRules = {{
    {protocol::kCauseExited, EndParty::kCustomer},
    {protocol::kCauseOomKilled, EndParty::kCustomer},
    {protocol::kCauseTimeout, EndParty::kCustomer},
    {protocol::kCauseStopped, EndParty::kCustomer},
    {protocol::kCauseBadCommand, EndParty::kCustomer},
    {protocol::kCauseImageNotFound, EndParty::kCustomer},
    {protocol::kCauseImageRefused, EndParty::kCustomer},
    {protocol::kCauseRegistryUnreachable, EndParty::kCustomer},
    {protocol::kCauseContainerGone, EndParty::kProvider},
    {protocol::kCauseAgentShutdown, EndParty::kProvider},
    {protocol::kCauseEngineError, EndParty::kProvider},
    {protocol::kCausePolicyRefused, EndParty::kProvider},
    {kCauseAgentLost, EndParty::kProvider},
    {kCauseContainerLost, EndParty::kProvider},
    {kCauseStartRefused, EndParty::kProvider},
}};

// The cause of an event from an agent older than causes, from its state and reason as
// that agent wrote them (workload_runner.cc before issue 24).
std::string LegacyCause(const protocol::WorkloadEvent& e) {
  const std::optional<WorkloadState> state = kWorkloadStateNames.Parse(e.state);
  if (state == WorkloadState::kExited) return protocol::kCauseExited;
  if (state == WorkloadState::kStopped) return protocol::kCauseStopped;
  const std::string& r = e.reason;
  if (r.starts_with("timeout")) return protocol::kCauseTimeout;
  if (r == "out of memory") return protocol::kCauseOomKilled;
  if (r.starts_with("image")) return protocol::kCauseImageNotFound;
  if (r.starts_with("the container disappeared")) return protocol::kCauseContainerGone;
  if (r.starts_with("policy")) return protocol::kCausePolicyRefused;
  return protocol::kCauseEngineError;
}

// One sentence for every failed pull the customer's side answers for: which of them it
// was (no such image, access refused, nothing answering) would tell what listens at a
// name that resolves into the provider's network.
constexpr char kPullFailed[] =
    "The image could not be pulled: check that the reference is right, that the image "
    "exists and that it is public.";

}  // namespace

EndParty PartyOf(std::string_view cause, std::string_view image) {
  if (cause == protocol::kCauseRegistryUnreachable) {
    auto ref = ParseImageRef(image);
    return ref && IsDependableRegistry(ref->domain) ? EndParty::kProvider : EndParty::kCustomer;
  }
  for (const Rule& r : kRules) {
    if (r.cause == cause) return r.party;
  }
  return EndParty::kProvider;
}

Ending EndingOfEvent(const protocol::WorkloadEvent& e, std::string_view image) {
  Ending out;
  out.cause = e.cause.empty() ? LegacyCause(e) : e.cause;
  out.party = PartyOf(out.cause, image);
  return out;
}

std::string CustomerSentence(const Workload& w) {
  const std::string cause = w.end_cause.value_or("");
  const bool provider = w.end_party == EndParty::kProvider;
  if (cause == protocol::kCauseExited) {
    return w.exit_code
               ? "The workload ended by itself with exit code " + std::to_string(*w.exit_code) + "."
               : "The workload ended by itself.";
  }
  if (cause == protocol::kCauseOomKilled) {
    return "The workload used more memory than its limit of " + std::to_string(w.spec.memory_mb) +
           " MiB and was stopped by the kernel.";
  }
  if (cause == protocol::kCauseTimeout) {
    return "The workload reached its time limit of " + std::to_string(w.spec.timeout_s) +
           " seconds.";
  }
  if (cause == protocol::kCauseStopped) return "The workload was stopped on request.";
  if (cause == protocol::kCauseBadCommand) {
    return "The container's command could not be started: check that it exists in the image "
           "and is executable.";
  }
  if (cause == protocol::kCauseImageNotFound || cause == protocol::kCauseImageRefused) {
    return kPullFailed;
  }
  if (cause == protocol::kCauseRegistryUnreachable) {
    return provider ? "The provider's machine could not download the image." : kPullFailed;
  }
  if (cause == protocol::kCauseContainerGone) {
    return "The container was removed on the provider's machine.";
  }
  if (cause == protocol::kCauseAgentShutdown) {
    return "The provider's machine shut its agent down.";
  }
  if (cause == protocol::kCauseEngineError) {
    return "The container engine on the provider's machine failed.";
  }
  if (cause == protocol::kCausePolicyRefused) {
    return "The provider's machine refused the container.";
  }
  if (cause == kCauseAgentLost) return "The provider's machine lost its connection.";
  if (cause == kCauseContainerLost) {
    return "The container was gone when the provider's machine reconnected.";
  }
  if (cause == kCauseStartRefused) return "The provider's machine did not accept the workload.";
  return provider ? "The workload ended on the provider's side." : "The workload ended.";
}

std::string ProviderAdvice(const Workload& w) {
  const std::string cause = w.end_cause.value_or("");
  const std::string said = w.end_reason.value_or("");
  std::string out;
  // The agent's words when no engine answers: a start it refused, or one its isolation
  // check stopped (agent.cc).
  const bool no_engine = said.find("no Docker engine") != std::string::npos ||
                         said.find(protocol::kIsolationNoEngine) != std::string::npos;
  if ((cause == kCauseStartRefused || cause == protocol::kCauseEngineError) && no_engine) {
    out =
        "Docker is not running on the machine, so the container could not start: start the "
        "Docker Engine (sudo systemctl start docker) and check that gpunex-agent can reach "
        "its socket.";
  } else if (cause == kCauseStartRefused) {
    out =
        "The machine's agent did not accept the workload: check that its GPUs are present, "
        "offered and free, and that Docker is running.";
  } else if (cause == protocol::kCauseEngineError) {
    out =
        "Docker failed on the machine: check `systemctl status docker` and "
        "`journalctl -u docker`, and that the disk is not full.";
  } else if (cause == protocol::kCauseContainerGone) {
    out =
        "The container was removed on the machine by something other than gpunex (docker rm, "
        "a cleanup job, another agent): leave containers labelled io.gpunex.* alone.";
  } else if (cause == protocol::kCauseAgentShutdown) {
    out =
        "gpunex-agent was stopped while the rental ran: before you stop it, declare "
        "maintenance so that no rental is placed there.";
  } else if (cause == kCauseAgentLost) {
    out =
        "The machine's agent lost its connection for too long: check the machine's power, "
        "network and that gpunex-agent is running.";
  } else if (cause == kCauseContainerLost) {
    out =
        "The container was gone when the agent reconnected (the machine or Docker "
        "restarted): keep Docker and the machine running while rentals run.";
  } else if (cause == protocol::kCausePolicyRefused) {
    out =
        "The machine's agent refused the container by its policy: update gpunex-agent "
        "(run the installer again).";
  } else if (cause == protocol::kCauseRegistryUnreachable) {
    out =
        "The machine could not download the image from its registry: check the machine's "
        "DNS and internet connection.";
  } else {
    out = "The workload ended on your machine's side: check Docker and gpunex-agent there.";
  }
  if (!said.empty()) out += " What the machine said: " + said;
  return out;
}

}  // namespace gpunex::platform::fleet
