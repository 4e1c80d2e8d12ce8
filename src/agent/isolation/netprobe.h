// The program the network isolation check (isolation_check.h) runs in its throw-away
// containers, as `gpunex-agent netprobe ...`: a listener that answers every connection
// with a token, and a prober that connects to a list of addresses at once and says which
// of them answered with the token. A connection that was accepted by something else (a
// service of the host that happens to use the port) does not count as reaching a listener.
//
//   netprobe listen --port P --token T [--addresses] [--lifetime-s S]
//       Listens on 0.0.0.0:P. With --addresses, prints "address A" for each IPv4 address
//       of the network namespace's interfaces (loopback left out). Then prints "ready"
//       and answers every connection with "gpunex-netprobe T\n" until S seconds (default
//       300) have passed: a listener left behind by an agent that died goes away by itself.
//   netprobe connect --token T [--timeout-ms M] NAME=A:P ...
//       Connects to every target at once, waiting at most M ms (default 1500) for each
//       answer, and prints one line per target, in the order given:
//       "reached NAME A:P" or "blocked NAME A:P <why>", then "done".
//
// Thread-safety: the functions share nothing; each call uses its own sockets.
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpunex::agent::isolation {

// What a listener answers, before the token and "\n".
inline constexpr char kNetprobeBanner[] = "gpunex-netprobe ";

struct ProbeTarget {
  std::string name;     // the caller's label: [A-Za-z0-9_.-]+
  std::string address;  // IPv4, dotted
  int port = 0;

  bool operator==(const ProbeTarget&) const = default;
};

struct ProbeOutcome {
  ProbeTarget target;
  bool reached = false;
  std::string why;  // when not reached: "timed out", "Connection refused", "another answer"
};

// "NAME=A.B.C.D:PORT"; nullopt when malformed.
std::optional<ProbeTarget> ParseProbeTarget(std::string_view text);

// Connects to every target at once and reads each one's first line, waiting at most
// `timeout` in all; reached when the line is kNetprobeBanner + `token`. In the order of
// `targets`.
std::vector<ProbeOutcome> ConnectTargets(const std::vector<ProbeTarget>& targets,
                                         const std::string& token,
                                         std::chrono::milliseconds timeout);

// The IPv4 addresses of this network namespace's interfaces, loopback left out.
StatusOr<std::vector<std::string>> LocalIpv4Addresses();

// Listens on 0.0.0.0:`port` (SO_REUSEADDR) and answers every connection with the banner
// and `token` until `lifetime` has passed, calling `on_ready` once the socket listens.
// Fails at once when the port cannot be bound; OK when the lifetime is over.
Status ServeBanner(int port, const std::string& token, std::chrono::milliseconds lifetime,
                   const std::function<void()>& on_ready);

// `gpunex-agent netprobe <args>` (args without "netprobe"): the exit status; the lines
// above on `out`, usage and errors on `err`.
int RunNetprobe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gpunex::agent::isolation
