// Who ended a workload (RNT-3, issue 24). Every ending has a cause -- what the agent saw
// the engine say (protocol::kCause*: the exit code, State.OOMKilled, the container gone,
// how a pull or a start failed), or what the platform saw itself (the machine lost, the
// container not there after a reconnect, a start the agent refused) -- and each cause is
// put down to the party that caused it: the customer for what its own process, image or
// registry did; the provider for its engine, host and network; never by who happens to
// report it. The customer reads a plain sentence for it, never the agent's words, which
// name things on the provider's side (addresses, ports, what answered there); the
// provider reads those words as the workload's end_reason.
//
// docs/billing.md's "Who ended it" is this table (with what rentals do with each party);
// endings_test.cc checks each row.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <string_view>

#include "common/agent_protocol.h"
#include "platform/fleet/workload.h"

namespace gpunex::platform::fleet {

// Causes the platform records itself (the agent's are protocol::kCause*).
inline constexpr char kCauseAgentLost[] = "agent_lost";  // the machine went quiet too long
// The agent reconnected without the container (the machine restarted, say).
inline constexpr char kCauseContainerLost[] = "container_lost";
// The agent refused the start command (no engine there, a GPU not offered or busy there).
inline constexpr char kCauseStartRefused[] = "start_refused";

// The cause and the party of one ending.
struct Ending {
  std::string cause;
  EndParty party = EndParty::kProvider;
};

// The party of `cause` for a workload whose image is `image` (registry_unreachable
// depends on the registry: registries.h, IsDependableRegistry). An unknown cause is the
// provider's.
EndParty PartyOf(std::string_view cause, std::string_view image);

// The ending of an agent's terminal workload_event for a workload of `image`. An event
// without a cause comes from an agent older than causes: its cause is read from its reason
// as that agent wrote it.
Ending EndingOfEvent(const protocol::WorkloadEvent& e, std::string_view image);

// The sentence the customer reads about the end of `w` (ended; `end_cause` unset for
// workloads that ended before causes were recorded).
std::string CustomerSentence(const Workload& w);

// What the machine's provider should do about the end of `w`, put down to the provider's
// side: what happened, in the provider's terms, and what to fix ("Docker is not running
// ...: start it"). The engine's own words (w.end_reason) follow where there are any.
std::string ProviderAdvice(const Workload& w);

}  // namespace gpunex::platform::fleet
