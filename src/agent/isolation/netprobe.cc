#include "agent/isolation/netprobe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>

namespace gpunex::agent::isolation {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxAnswer = 256;
constexpr size_t kMaxTargets = 128;

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

// A token: [A-Za-z0-9]{1,64}.
bool IsToken(std::string_view t) {
  return !t.empty() && t.size() <= 64 && std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

std::optional<int> ParseInt(std::string_view s, int min, int max) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < min || v > max) return std::nullopt;
  return v;
}

int Millis(Clock::duration d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
}

// One target's connection while ConnectTargets() runs.
struct Attempt {
  int fd = -1;
  bool connected = false;
  bool done = false;
  std::string answer;
  ProbeOutcome outcome;

  void Finish(bool reached, std::string why) {
    outcome.reached = reached;
    outcome.why = std::move(why);
    done = true;
  }
};

}  // namespace

std::optional<ProbeTarget> ParseProbeTarget(std::string_view text) {
  size_t eq = text.find('=');
  size_t colon = text.rfind(':');
  if (eq == std::string_view::npos || colon == std::string_view::npos || colon < eq) {
    return std::nullopt;
  }
  ProbeTarget t;
  t.name = std::string(text.substr(0, eq));
  t.address = std::string(text.substr(eq + 1, colon - eq - 1));
  auto port = ParseInt(text.substr(colon + 1), 1, 65535);
  in_addr addr{};
  if (t.name.empty() || t.name.size() > 64 ||
      !std::all_of(t.name.begin(), t.name.end(), IsNameChar) || !port ||
      inet_pton(AF_INET, t.address.c_str(), &addr) != 1) {
    return std::nullopt;
  }
  t.port = *port;
  return t;
}

std::vector<ProbeOutcome> ConnectTargets(const std::vector<ProbeTarget>& targets,
                                         const std::string& token,
                                         std::chrono::milliseconds timeout) {
  const std::string expected = kNetprobeBanner + token + "\n";
  std::vector<Attempt> attempts(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    Attempt& a = attempts[i];
    a.outcome.target = targets[i];
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(targets[i].port));
    if (inet_pton(AF_INET, targets[i].address.c_str(), &sa.sin_addr) != 1) {
      a.Finish(false, "not an IPv4 address");
      continue;
    }
    a.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (a.fd < 0) {
      a.Finish(false, std::string("socket: ") + std::strerror(errno));
      continue;
    }
    if (connect(a.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      a.connected = true;
    } else if (errno != EINPROGRESS) {
      a.Finish(false, std::strerror(errno));
    }
  }

  const auto deadline = Clock::now() + timeout;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> owners;
    for (Attempt& a : attempts) {
      if (a.done) continue;
      fds.push_back({a.fd, static_cast<short>(a.connected ? POLLIN : POLLOUT), 0});
      owners.push_back(&a);
    }
    const auto now = Clock::now();
    if (fds.empty() || now >= deadline) break;
    int n = poll(fds.data(), fds.size(), std::max(1, Millis(deadline - now)));
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      Attempt& a = *owners[i];
      if (fds[i].revents == 0) continue;
      if (!a.connected) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(a.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          a.Finish(false, std::strerror(err));
        } else {
          a.connected = true;  // read its answer in the next round
        }
        continue;
      }
      char buf[kMaxAnswer];
      ssize_t got = read(a.fd, buf, sizeof buf);
      if (got < 0) {
        if (errno != EAGAIN && errno != EINTR) a.Finish(false, std::strerror(errno));
        continue;
      }
      a.answer.append(buf, static_cast<size_t>(got));
      if (a.answer.find('\n') != std::string::npos || got == 0 || a.answer.size() > kMaxAnswer) {
        if (a.answer == expected) {
          a.Finish(true, "");
        } else {
          a.Finish(false, a.answer.empty() ? "closed without an answer" : "another answer");
        }
      }
    }
  }
  std::vector<ProbeOutcome> out;
  for (Attempt& a : attempts) {
    if (!a.done) a.Finish(false, a.connected ? "connected, but no answer" : "timed out");
    if (a.fd >= 0) close(a.fd);
    out.push_back(std::move(a.outcome));
  }
  return out;
}

StatusOr<std::vector<std::string>> LocalIpv4Addresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Internal(std::string("getifaddrs: ") + std::strerror(errno));
  std::vector<std::string> out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK)) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (!inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text)) continue;
    std::string a = text;
    if (a.starts_with("127.") || std::find(out.begin(), out.end(), a) != out.end()) continue;
    out.push_back(a);
  }
  freeifaddrs(list);
  return out;
}

Status ServeBanner(int port, const std::string& token, std::chrono::milliseconds lifetime,
                   const std::function<void()>& on_ready) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 64) != 0) {
    Status st =
        Unavailable("cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno));
    close(fd);
    return st;
  }
  if (on_ready) on_ready();
  const std::string banner = kNetprobeBanner + token + "\n";
  const auto deadline = Clock::now() + lifetime;
  for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, std::max(1, Millis(deadline - now))) <= 0) continue;
    int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    (void)send(c, banner.data(), banner.size(), MSG_NOSIGNAL);
    close(c);
  }
  close(fd);
  return Status::Ok();
}

int RunNetprobe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto usage = [&err](const std::string& why) {
    err << "netprobe: " << why
        << "\nusage: netprobe listen --port P --token T [--addresses] [--lifetime-s S]\n"
           "       netprobe connect --token T [--timeout-ms M] NAME=A:P ...\n";
    return 2;
  };
  if (args.empty()) return usage("listen or connect?");
  std::string token;
  std::optional<int> port, lifetime_s = 300, timeout_ms = 1500;
  bool addresses = false;
  std::vector<ProbeTarget> targets;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--token" && has_value) {
      token = args[++i];
      if (!IsToken(token)) return usage("--token must be 1 to 64 letters and digits");
    } else if (a == "--port" && has_value) {
      port = ParseInt(args[++i], 1, 65535);
      if (!port) return usage("--port must be in [1, 65535]");
    } else if (a == "--lifetime-s" && has_value) {
      lifetime_s = ParseInt(args[++i], 1, 3600);
      if (!lifetime_s) return usage("--lifetime-s must be in [1, 3600]");
    } else if (a == "--timeout-ms" && has_value) {
      timeout_ms = ParseInt(args[++i], 100, 60'000);
      if (!timeout_ms) return usage("--timeout-ms must be in [100, 60000]");
    } else if (a == "--addresses") {
      addresses = true;
    } else if (auto t = ParseProbeTarget(a); t && args[0] == "connect") {
      if (targets.size() == kMaxTargets) return usage("too many targets");
      targets.push_back(*t);
    } else {
      return usage("unexpected \"" + a + "\"");
    }
  }
  if (token.empty()) return usage("--token is required");

  if (args[0] == "listen") {
    if (!port) return usage("--port is required");
    if (addresses) {
      auto list = LocalIpv4Addresses();
      if (!list.ok()) {
        err << "netprobe: " << list.status().message() << "\n";
        return 1;
      }
      for (const auto& a : *list) out << "address " << a << "\n";
    }
    Status st = ServeBanner(*port, token, std::chrono::seconds(*lifetime_s),
                            [&out] { out << "ready" << std::endl; });
    if (!st.ok()) {
      err << "netprobe: " << st.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (args[0] == "connect") {
    if (targets.empty()) return usage("no targets");
    for (const auto& o : ConnectTargets(targets, token, std::chrono::milliseconds(*timeout_ms))) {
      out << (o.reached ? "reached " : "blocked ") << o.target.name << " " << o.target.address
          << ":" << o.target.port;
      if (!o.reached) out << " " << o.why;
      out << "\n";
    }
    out << "done" << std::endl;
    return 0;
  }
  return usage("listen or connect?");
}

}  // namespace gpunex::agent::isolation
