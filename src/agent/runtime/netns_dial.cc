#include "agent/runtime/netns_dial.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace gpunex::agent {
namespace {

std::string Errno(int e) { return std::strerror(e); }

// A non-blocking TCP socket made inside the namespace open as `ns_fd`, on a thread of its
// own (setns changes the calling thread only; the thread ends with it).
StatusOr<int> SocketInNetns(int ns_fd) {
  Status status;
  int fd = -1;
  std::thread([&] {
    if (setns(ns_fd, CLONE_NEWNET) != 0) {
      status =
          FailedPrecondition("cannot enter the container's network namespace: " + Errno(errno));
      return;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) status = Internal("socket: " + Errno(errno));
  }).join();
  if (!status.ok()) return status;
  return fd;
}

}  // namespace

std::string ProcessNetns(int64_t pid) { return "/proc/" + std::to_string(pid) + "/ns/net"; }

StatusOr<int> DialInNetns(const std::string& netns_path, uint16_t port,
                          std::chrono::milliseconds timeout) {
  const int ns_fd = open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0) {
    return FailedPrecondition("cannot open the network namespace " + netns_path + ": " +
                              Errno(errno));
  }
  auto fd = SocketInNetns(ns_fd);
  close(ns_fd);
  if (!fd.ok()) return fd.status();

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string where = "port " + std::to_string(port) + " of the container";
  const auto fail = [&](Status s) {
    close(*fd);
    return s;
  };
  if (connect(*fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return fail(Unavailable(where + ": " + Errno(errno)));
    pollfd p{*fd, POLLOUT, 0};
    const int ready = poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) return fail(Unavailable(where + ": no answer within the connect timeout"));
    if (ready < 0) return fail(Internal("poll: " + Errno(errno)));
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(*fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return fail(Unavailable(where + ": " + Errno(err)));
  }
  return *fd;
}

}  // namespace gpunex::agent
