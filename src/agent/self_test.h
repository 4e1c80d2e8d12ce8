// `gpunex-agent self-test` (AGT-6): the checks the platform needs from this machine, each
// with what to fix when it fails.
#pragma once

#include <string>

#include "agent/agent.h"

namespace gpunex::agent {

struct SelfTestReport {
  bool ok = true;
  std::string text;  // one line per check: "[ok]" / "[FAIL]" / "[warn]", then fixes
};

SelfTestReport RunSelfTest(const AgentOptions& options, AgentState& state, GpuSource& gpus,
                           DockerClient* docker);

}  // namespace gpunex::agent
