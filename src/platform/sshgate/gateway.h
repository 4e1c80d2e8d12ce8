// The SSH gateway (issue 26; docs/access.md, "SSH"): `ssh -p PORT {rental_id}@{platform}`
// reaches a customer's running rental, whatever its image and wherever its machine is,
// through the agent's data channel (the relay), with libssh's server API.
//
// - Who: the user name is the rental's id; a public key of the rental's customer's
//   account (sshkeys) signs in, nothing else. A key removed from the account no longer
//   does, from the next connection on.
// - What: a session's `shell`, `exec` and `subsystem sftp` requests each become an exec
//   stream in the container (common/exec_stream.h): a pty with its window changes, stdin
//   with its end, stdout and stderr apart, the exit status. `direct-tcpip` (ssh -L, ssh -J)
//   becomes a port stream to a port the rental declared, asked for as localhost.
// - Limits: connections in all and per rental, authentication attempts per connection and
//   failed connections per address, the time to sign in, an idle timeout; a connection
//   ends within a second or two of its rental's end. Every connection and channel is in
//   the log (who, when, what, how long, bytes), never what they carried.
//
// Threading: an acceptor thread, and one thread per connection that owns its libssh
// session (libssh sessions are not shared between threads); the relay's sink calls only
// wake that thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/thread_annotations.h"
#include "platform/relay/relay.h"
#include "platform/sshgate/host_key.h"
#include "platform/store/db.h"

namespace gpunex::platform::sshgate {

struct SshGatewayOptions {
  // "host:port" to listen on ("127.0.0.1:0": a free port, then port() says which).
  std::string listen;
  // A connection where no byte moved either way for this long is closed (its shells
  // told why).
  std::chrono::seconds idle_timeout{3600};
  // Connections open at once, in all and per rental.
  int max_connections = 512;
  int max_connections_per_rental = 16;
  // Channels (shells, commands, forwarded connections) one connection may have open.
  int max_channels_per_connection = 32;
  // Keys one connection may offer before it is closed.
  int max_auth_attempts = 10;
  // Connections from one address that ended without signing in, within failure_window,
  // after which the address is refused until the window has passed.
  int max_failures_per_address = 20;
  std::chrono::seconds failure_window{600};
  // Time from connecting to signing in.
  std::chrono::seconds login_grace{30};
  // How often a signed-in connection checks that its rental still runs.
  std::chrono::milliseconds rental_check{1000};
};

// Figures for /metrics.
struct SshGatewayFigures {
  int64_t connections = 0;      // open now
  int64_t signed_in = 0;        // since start
  int64_t refused = 0;          // connections refused at a cap since start
  int64_t failed_sign_ins = 0;  // connections closed without signing in since start
};

// A session's pty as the client asked for it.
struct Pty {
  std::string term;  // TERM, "xterm-256color"
  uint16_t columns = 80;
  uint16_t rows = 24;
};

// The command an exec stream runs for a session's request (the parts of a connection
// that need none, apart so that a unit test reads them):
//   shell: bash when the image has it, else sh, as a login shell;
//   exec: `/bin/sh -c COMMAND`, as sshd runs it with a user's shell;
//   sftp: the image's sftp-server wherever it is, else a message on stderr and 127.
// With a pty, the shell first exports its TERM (when it is a plain name) and sets its
// size (the engine starts a command before it can be told the size).
std::vector<std::string> ShellCommand(const std::optional<Pty>& pty);
std::vector<std::string> ExecCommand(const std::string& command, const std::optional<Pty>& pty);
std::vector<std::string> SftpCommand();

// Whether a direct-tcpip destination host names the rental itself: localhost,
// 127.0.0.1 or ::1 (a forwarded connection reaches the rental's own ports only).
bool IsRentalHost(const std::string& host);

class SshGateway {
 public:
  // Listens on options.listen with `host_key`. A field error on "access.ssh_listen" when
  // the address is no host:port, kUnavailable when it cannot be bound.
  static StatusOr<std::unique_ptr<SshGateway>> Create(SshGatewayOptions options, HostKey host_key,
                                                      store::Database& db, relay::Relay& relay);
  // Stops accepting, closes every connection and waits for their threads.
  ~SshGateway();
  SshGateway(const SshGateway&) = delete;
  SshGateway& operator=(const SshGateway&) = delete;

  // Starts accepting connections.
  void Start();
  uint16_t port() const { return port_; }
  const HostKey& host_key() const { return host_key_; }
  const SshGatewayOptions& options() const { return options_; }
  SshGatewayFigures Figures() const EXCLUDES(mu_);

  class Connection;  // gateway.cc

 private:
  SshGateway(SshGatewayOptions options, HostKey host_key, store::Database& db, relay::Relay& relay,
             int listen_fd, uint16_t port);

  void Accept();
  void Serve(int fd, std::string address);
  // Whether `address` has failed to sign in too often lately (and forgets old failures).
  bool RefusedAddress(const std::string& address) REQUIRES(mu_);

  // For Connection: counts a signed-in connection to `rental_id`; false at the cap.
  bool AddRentalConnection(const std::string& rental_id) EXCLUDES(mu_);
  void RemoveRentalConnection(const std::string& rental_id) EXCLUDES(mu_);

  const SshGatewayOptions options_;
  const HostKey host_key_;
  store::Database& db_;
  relay::Relay& relay_;
  const int listen_fd_;
  const uint16_t port_;
  void* bind_ = nullptr;  // the ssh_bind holding the host key
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  mutable Mutex mu_;
  CondVar drained_;  // signalled when a connection's thread ends
  int64_t open_ GUARDED_BY(mu_) = 0;
  std::set<int> fds_ GUARDED_BY(mu_);  // the open connections' sockets
  std::map<std::string, int> per_rental_ GUARDED_BY(mu_);
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> failures_
      GUARDED_BY(mu_);
  int64_t signed_in_ GUARDED_BY(mu_) = 0;
  int64_t refused_ GUARDED_BY(mu_) = 0;
  int64_t failed_sign_ins_ GUARDED_BY(mu_) = 0;
};

}  // namespace gpunex::platform::sshgate
