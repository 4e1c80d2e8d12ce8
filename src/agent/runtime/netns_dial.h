#ifndef GPUNEX_AGENT_RUNTIME_NETNS_DIAL_H_
#define GPUNEX_AGENT_RUNTIME_NETNS_DIAL_H_

// How the agent reaches a port of a workload's container (issue 25: the data channel's
// streams end here) without joining any network: the socket is made inside the
// container's own network namespace and connects to its loopback. So the agent reaches
// that container's ports and nothing else, whatever networks the container is on (none
// at all included), and neither the host nor other workloads gain a path to it.
//
// Needs CAP_SYS_ADMIN over the namespace (root, or the agent's container with that
// capability) and the namespace's file: /proc/PID/ns/net of the container's first
// process (the engine's inspect, State.Pid; the agent's container then needs the host's
// process namespace) or the engine's SandboxKey path.
//
// Thread-safe: each call makes its socket on a short-lived thread of its own, as entering
// a namespace changes only the calling thread.

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace gpunex::agent {

// A connected TCP socket (a file descriptor the caller closes) to 127.0.0.1:`port` in the
// network namespace `netns_path`. kUnavailable when nothing listens there or the connect
// takes longer than `timeout`; kFailedPrecondition when the namespace cannot be entered
// (with why).
StatusOr<int> DialInNetns(const std::string& netns_path, uint16_t port,
                          std::chrono::milliseconds timeout);

// "/proc/PID/ns/net".
std::string ProcessNetns(int64_t pid);

}  // namespace gpunex::agent

#endif  // GPUNEX_AGENT_RUNTIME_NETNS_DIAL_H_
