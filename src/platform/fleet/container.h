// What a workload runs, as every path that starts a container asks for it: a provider's
// workload, a customer's rental and job (rentals/). Validated in one place
// (fleet::ValidateContainer, workloads.h); the API decodes it in one place
// (api::DecodeContainer).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"

namespace gpunex::platform::fleet {

// What the field errors on "command" and on "env.NAME" values say, whichever check finds
// the fault (protocol::kMaxCommandArgs, kMaxCommandArgLength, kMaxEnvValueLength).
inline constexpr std::string_view kCommandRule =
    "must be a list of at most 64 strings of at most 4096 characters";
inline constexpr std::string_view kEnvValueRule = "must be a string of at most 32768 characters";

struct ContainerSpec {
  std::string image;
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;
  // The ports its owner may reach through the platform (issue 25): at most
  // protocol::kMaxPorts, each port once.
  std::vector<protocol::WorkloadPort> ports = {};
  // For a rental's image on a private registry (issue 25): sent to the agent with the
  // start command and kept nowhere (Fleet::EnqueueCommand).
  std::optional<protocol::RegistryCredentials> registry_auth = std::nullopt;
};

}  // namespace gpunex::platform::fleet
