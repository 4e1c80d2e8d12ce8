#include "platform/sshgate/gateway.h"

#include <arpa/inet.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "common/event_fd.h"
#include "common/exec_stream.h"
#include "common/json.h"
#include "common/log.h"
#include "platform/rentals/rentals.h"
#include "platform/sshkeys/ssh_key.h"
#include "platform/sshkeys/ssh_keys_store.h"

namespace gpunex::platform::sshgate {

namespace {

using SteadyClock = std::chrono::steady_clock;

// What one read from a client's channel or from a stream takes at most.
constexpr size_t kChunk = 64 * 1024;
// How long a connection's loop sleeps at most between looks at its limits.
constexpr int kPollMs = 250;
// The longest user name looked at (a rental id is 30 characters).
constexpr size_t kMaxUserChars = 64;
// Bytes told to the client before a disconnect are flushed for at most this long.
constexpr int kFlushMs = 2000;

// A pty's TERM when it is a plain terminal name ("xterm-256color"), else "".
std::string PlainTerm(const std::string& term) {
  if (term.empty() || term.size() > 64) return "";
  for (char c : term) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' && c != '+') {
      return "";
    }
  }
  return term;
}

// What a command's shell runs first for a pty.
std::string PtySetup(const std::optional<Pty>& pty) {
  if (!pty) return "";
  const std::string plain = PlainTerm(pty->term);
  return (plain.empty() ? "" : "export TERM=" + plain + "; ") + "stty rows " +
         std::to_string(pty->rows) + " cols " + std::to_string(pty->columns) + " 2>/dev/null; ";
}

std::string AddressOf(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, host, sizeof host);
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, host, sizeof host);
  }
  return host;
}

// A listening socket on "host:port" and the port it got.
StatusOr<std::pair<int, uint16_t>> Listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return FieldError("access.ssh_listen", "must be host:port, such as \"0.0.0.0:2222\"");
  }
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return FieldError("access.ssh_listen", "names no address to listen on: \"" + listen + "\"");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  const int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd < 0) return Unavailable(std::string("ssh listener: socket: ") + std::strerror(errno));
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
    const int err = errno;
    close(fd);
    return Unavailable("ssh listener: cannot listen on " + listen + ": " + std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t got = bound.ss_family == AF_INET6
                           ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                           : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return std::pair<int, uint16_t>{fd, got};
}

// What the relay says about a stream, for the connection's thread, which it wakes.
class Sink final : public relay::StreamSink {
 public:
  explicit Sink(std::shared_ptr<EventFd> wake) : wake_(std::move(wake)) {}
  void OnAccepted() override { wake_->Signal(); }
  void OnReadable() override { wake_->Signal(); }
  void OnRoom() override { wake_->Signal(); }
  void OnFinished() override {
    finished_ = true;
    wake_->Signal();
  }
  void OnEnded(const relay::StreamEnd& end) override EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      end_ = end;
    }
    wake_->Signal();
  }
  bool finished() const { return finished_; }
  std::optional<relay::StreamEnd> end() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return end_;
  }

 private:
  const std::shared_ptr<EventFd> wake_;
  std::atomic<bool> finished_{false};
  mutable Mutex mu_;
  std::optional<relay::StreamEnd> end_ GUARDED_BY(mu_);
};

// One SSH channel of a connection: a session (a shell, a command, sftp) or a forwarded
// TCP connection, and the stream it became.
struct Channel {
  enum class Kind { kSession, kTcp };
  ssh_channel ch = nullptr;
  Kind kind = Kind::kSession;
  std::string what;  // "shell", "exec", "sftp", "tcp 8888" once asked for: for the log
  std::vector<std::string> command;          // a session's, until it starts
  ssh_channel_callbacks_struct callbacks{};  // a session's requests
  // A session's pty, asked for before its shell or command.
  bool pty = false;
  std::string term;
  TerminalSize size{80, 24};

  std::shared_ptr<Sink> sink;
  std::unique_ptr<relay::Stream> stream;
  std::string to_agent;      // bytes (an exec's frames) the stream did not take yet
  bool client_eof = false;   // the client sends nothing more
  bool finish_sent = false;  // and the stream was told so
  ExecFrameReader frames;    // an exec's frames from the agent
  std::string out;           // bytes for the client that its window did not take yet
  size_t out_at = 0;
  bool out_stderr = false;
  bool eof_sent = false;
  bool closed = false;  // we closed it: it waits only to be freed
  std::optional<int64_t> exit_code;
  int64_t bytes_in = 0;   // from the client
  int64_t bytes_out = 0;  // to the client
  SteadyClock::time_point opened = SteadyClock::now();
};

int OnMessage(ssh_session, ssh_message message, void* user);
int OnWake(socket_t fd, int, void*) {
  ClearEventFd(fd);
  return 0;
}

}  // namespace

std::vector<std::string> ShellCommand(const std::optional<Pty>& pty) {
  return {
      "/bin/sh", "-c",
      PtySetup(pty) + "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi"};
}

std::vector<std::string> ExecCommand(const std::string& command, const std::optional<Pty>& pty) {
  return {"/bin/sh", "-c", PtySetup(pty) + command};
}

std::vector<std::string> SftpCommand() {
  return {"/bin/sh", "-c",
          "for p in /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server "
          "/usr/lib/ssh/sftp-server /usr/libexec/sftp-server /usr/lib/sftp-server; do "
          "[ -x \"$p\" ] && exec \"$p\"; done; "
          "command -v sftp-server >/dev/null 2>&1 && exec sftp-server; "
          "echo 'gpunex: this image has no sftp-server: install openssh-sftp-server (or "
          "openssh-server) in it for sftp and scp; scp -O and rsync need only scp or rsync' >&2; "
          "exit 127"};
}

bool IsRentalHost(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1";
}

// One client's connection, on its own thread (SshGateway::Serve).
class SshGateway::Connection {
 public:
  Connection(SshGateway& gateway, int fd, std::string address)
      : g_(gateway), fd_(fd), address_(std::move(address)) {}

  ~Connection() {
    for (auto& c : channels_) c->stream.reset();
    if (counted_) g_.RemoveRentalConnection(rental_.id);
    if (event_) {
      ssh_event_remove_fd(event_, wake_->fd());
      if (session_) ssh_event_remove_session(event_, session_);
      ssh_event_free(event_);
    }
    if (session_) {
      ssh_disconnect(session_);
      ssh_free(session_);  // closes fd_, which the session took
    } else {
      close(fd_);
    }
  }

  // Serves the connection to its end; whether it signed in.
  bool Run() {
    session_ = ssh_new();
    if (!session_) return false;
    const long grace = static_cast<long>(g_.options_.login_grace.count());
    ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &grace);
    if (ssh_bind_accept_fd(static_cast<ssh_bind>(g_.bind_), session_, fd_) != SSH_OK) {
      End("accept: " + std::string(ssh_get_error(g_.bind_)));
      return false;
    }
    ssh_set_auth_methods(session_, SSH_AUTH_METHOD_PUBLICKEY);
    ssh_callbacks_init(&server_callbacks_);
    server_callbacks_.userdata = this;
    server_callbacks_.auth_pubkey_function = [](ssh_session, const char* user, ssh_key key,
                                                char state, void* self) {
      return static_cast<Connection*>(self)->Authenticate(user, key, state);
    };
    server_callbacks_.channel_open_request_session_function = [](ssh_session, void* self) {
      return static_cast<Connection*>(self)->OpenSession();
    };
    ssh_set_server_callbacks(session_, &server_callbacks_);
    // What the callbacks leave: forwarded connections (direct-tcpip) and keepalives.
    ssh_set_message_callback(session_, OnMessage, this);
    if (ssh_handle_key_exchange(session_) != SSH_OK) {
      End("key exchange: " + std::string(ssh_get_error(session_)));
      return false;
    }
    ssh_set_blocking(session_, 0);
    event_ = ssh_event_new();
    if (!event_ || ssh_event_add_session(event_, session_) != SSH_OK ||
        ssh_event_add_fd(event_, wake_->fd(), POLLIN, OnWake, nullptr) != SSH_OK) {
      End("cannot poll the session");
      return false;
    }
    while (end_reason_.empty()) {
      if (ssh_event_dopoll(event_, kPollMs) == SSH_ERROR || !Connected()) {
        End(signed_in_ ? "the client closed the connection" : "closed before signing in");
        break;
      }
      for (size_t i = 0; i < channels_.size(); ++i) Pump(*channels_[i]);
      std::erase_if(channels_, [this](const std::unique_ptr<Channel>& c) { return Reap(*c); });
      Watch();
    }
    Finish();
    return signed_in_;
  }

  // The message callback's work: 0 when answered, 1 for libssh's default answer (a
  // refusal).
  int Handle(ssh_message m) {
    switch (ssh_message_type(m)) {
      case SSH_REQUEST_CHANNEL_OPEN:
        return signed_in_ && ssh_message_subtype(m) == SSH_CHANNEL_DIRECT_TCPIP ? OpenForward(m)
                                                                                : 1;
      case SSH_REQUEST_GLOBAL:  // a keepalive (ServerAliveInterval) keeps a connection
        if (signed_in_) Touch();
        return 1;
      default:
        return 1;
    }
  }

 private:
  bool Connected() const {
    return ssh_is_connected(session_) != 0 &&
           (ssh_get_status(session_) & (SSH_CLOSED | SSH_CLOSED_ERROR)) == 0;
  }

  void End(std::string reason) {
    if (end_reason_.empty()) end_reason_ = std::move(reason);
  }

  void Touch() { last_activity_ = SteadyClock::now(); }

  // --- signing in ---

  // auth_pubkey_function: SSH_AUTH_SUCCESS for a key of the customer of the rental the
  // user name names (when `state` is SSH_PUBLICKEY_STATE_NONE the client only asks whether
  // the key would do; libssh has checked the signature when it is VALID).
  int Authenticate(const char* user, ssh_key key, char state) {
    if (signed_in_) return SSH_AUTH_DENIED;
    if (++auth_attempts_ > g_.options_.max_auth_attempts) {
      End("too many keys offered");
      return SSH_AUTH_DENIED;
    }
    user_ = user ? user : "";
    auto rental = RentalOfKey(user_, key);
    if (!rental.ok()) LogWarn("ssh.sign_in_error", {{"error", rental.status().ToString()}});
    if (!rental.ok() || !rental->has_value()) return SSH_AUTH_DENIED;
    if (state == SSH_PUBLICKEY_STATE_NONE) return SSH_AUTH_SUCCESS;
    if (state != SSH_PUBLICKEY_STATE_VALID) return SSH_AUTH_DENIED;
    rental_ = std::move(**rental);
    signed_in_ = true;
    counted_ = g_.AddRentalConnection(rental_.id);
    Touch();
    LogInfo("ssh.signed_in", {{"rental_id", rental_.id},
                              {"user_id", rental_.customer_id},
                              {"key_fingerprint", fingerprint_},
                              {"remote", address_}});
    return SSH_AUTH_SUCCESS;
  }

  // The rental `user` names when `key` is on its customer's account; nullopt otherwise.
  StatusOr<std::optional<rentals::Rental>> RentalOfKey(const std::string& user, ssh_key key) {
    std::optional<rentals::Rental> out;
    if (user.empty() || user.size() > kMaxUserChars || key == nullptr) return out;
    char* b64 = nullptr;
    if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK) return out;
    const std::string line = std::string(ssh_key_type_to_char(ssh_key_type(key))) + " " + b64;
    ssh_string_free_char(b64);
    auto parsed = sshkeys::ParsePublicKey(line, "key");
    if (!parsed.ok()) return out;  // a kind of key no account holds
    fingerprint_ = parsed->fingerprint;
    GPUNEX_RETURN_IF_ERROR(g_.db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<sshkeys::SshKey> held,
                              sshkeys::SshKeysStore(tx).ByFingerprint(parsed->fingerprint));
      if (!held) return Status::Ok();
      GPUNEX_ASSIGN_OR_RETURN(std::vector<rentals::Rental> found, rentals::FindRentals(tx, {user}));
      if (found.size() == 1 && found[0].customer_id == held->user_id) out = std::move(found[0]);
      return Status::Ok();
    }));
    return out;
  }

  // --- channels ---

  Channel* Find(ssh_channel ch) {
    for (auto& c : channels_) {
      if (c->ch == ch) return c.get();
    }
    return nullptr;
  }

  bool ChannelsFull() const {
    return static_cast<int>(channels_.size()) >= g_.options_.max_channels_per_connection;
  }

  // channel_open_request_session_function: a session channel, whose requests the
  // callbacks below answer.
  ssh_channel OpenSession() {
    if (!signed_in_ || ChannelsFull()) return nullptr;
    auto c = std::make_unique<Channel>();
    c->ch = ssh_channel_new(session_);
    if (!c->ch) return nullptr;
    ssh_callbacks_init(&c->callbacks);
    c->callbacks.userdata = this;
    c->callbacks.channel_pty_request_function = [](ssh_session, ssh_channel ch, const char* term,
                                                   int width, int height, int, int, void* self) {
      return static_cast<Connection*>(self)->PtyRequest(ch, term, width, height);
    };
    c->callbacks.channel_pty_window_change_function = [](ssh_session, ssh_channel ch, int width,
                                                         int height, int, int, void* self) {
      return static_cast<Connection*>(self)->WindowChange(ch, width, height);
    };
    c->callbacks.channel_shell_request_function = [](ssh_session, ssh_channel ch, void* self) {
      auto* conn = static_cast<Connection*>(self);
      return conn->Request(ch, "shell", ShellCommand(conn->PtyOf(ch)));
    };
    c->callbacks.channel_exec_request_function = [](ssh_session, ssh_channel ch,
                                                    const char* command, void* self) {
      auto* conn = static_cast<Connection*>(self);
      return conn->Request(ch, "exec", ExecCommand(command ? command : "", conn->PtyOf(ch)));
    };
    c->callbacks.channel_subsystem_request_function = [](ssh_session, ssh_channel ch,
                                                         const char* name, void* self) {
      if (!name || std::string_view(name) != "sftp") return 1;
      return static_cast<Connection*>(self)->Request(ch, "sftp", SftpCommand());
    };
    ssh_set_channel_callbacks(c->ch, &c->callbacks);
    channels_.push_back(std::move(c));
    return channels_.back()->ch;
  }

  // A session not yet started, for its requests.
  Channel* Unstarted(ssh_channel ch) {
    Channel* c = Find(ch);
    return c && c->what.empty() && !c->closed ? c : nullptr;
  }

  std::optional<Pty> PtyOf(ssh_channel ch) {
    Channel* c = Find(ch);
    if (!c || !c->pty) return std::nullopt;
    return Pty{.term = c->term, .columns = c->size.columns, .rows = c->size.rows};
  }

  int PtyRequest(ssh_channel ch, const char* term, int width, int height) {
    Channel* c = Unstarted(ch);
    if (!c) return 1;
    c->pty = true;
    c->term = term ? term : "";
    c->size = SizeOf(width, height, c->size);
    return 0;
  }

  int WindowChange(ssh_channel ch, int width, int height) {
    Channel* c = Find(ch);
    if (!c || c->closed) return 1;
    c->size = SizeOf(width, height, c->size);
    if (c->stream && c->pty) c->to_agent += ResizeFrame(c->size);
    return 0;
  }

  // A shell, a command or sftp: started on the next turn of the loop, after libssh has
  // answered the request (what the session says comes after that answer).
  int Request(ssh_channel ch, std::string what, std::vector<std::string> command) {
    Channel* c = Unstarted(ch);
    if (!c) return 1;
    c->what = std::move(what);
    c->command = std::move(command);
    return 0;
  }

  // A direct-tcpip channel (ssh -L, ssh -J) to a port the rental declared, asked for as
  // localhost; refused otherwise.
  int OpenForward(ssh_message m) {
    if (ChannelsFull()) return 1;
    const char* host = ssh_message_channel_request_open_destination(m);
    const int port = ssh_message_channel_request_open_destination_port(m);
    const bool declared = std::any_of(rental_.ports.begin(), rental_.ports.end(),
                                      [port](const auto& p) { return p.port == port; });
    if (!host || !IsRentalHost(host) || !declared) {
      LogInfo("ssh.forward_refused", {{"rental_id", rental_.id},
                                      {"host", host ? host : ""},
                                      {"port", port},
                                      {"why", declared ? "not localhost" : "not declared"}});
      return 1;
    }
    auto c = std::make_unique<Channel>();
    c->kind = Channel::Kind::kTcp;
    c->what = "tcp " + std::to_string(port);
    c->sink = std::make_shared<Sink>(wake_);
    StreamTarget target{.workload_id = rental_.workload_id,
                        .port = static_cast<uint16_t>(port),
                        .kind = StreamTarget::Kind::kPort};
    auto stream = g_.relay_.Open(rental_.machine_id, target, c->sink, rental_.id);
    if (!stream.ok()) {
      LogInfo("ssh.forward_refused",
              {{"rental_id", rental_.id}, {"port", port}, {"why", stream.status().ToString()}});
      return 1;
    }
    c->stream = std::move(*stream);
    c->ch = ssh_message_channel_request_open_reply_accept(m);
    if (c->ch) channels_.push_back(std::move(c));
    return 0;
  }

  static TerminalSize SizeOf(int w, int h, TerminalSize fallback) {
    if (w < 1 || w > 10000 || h < 1 || h > 10000) return fallback;
    return TerminalSize{static_cast<uint16_t>(w), static_cast<uint16_t>(h)};
  }

  static std::string ResizeFrame(TerminalSize s) {
    return EncodeExecFrame(ExecChannel::kResize,
                           ToJsonText(json::object{{"Width", s.columns}, {"Height", s.rows}}));
  }

  // The session's command as an exec stream in the container.
  void Start(Channel& c) {
    std::vector<std::string> command = std::move(c.command);
    c.command.clear();
    if (!counted_) {
      return Fail(c, "the rental has " + std::to_string(g_.options_.max_connections_per_rental) +
                         " SSH connections open, the most it may; close one");
    }
    auto fresh = Reload();
    if (!fresh.ok()) return Fail(c, "the platform cannot read the rental now; try again");
    if (Status running = rentals::RequireRunning(*fresh); !running.ok()) {
      return Fail(c, running.message());
    }
    if (std::string why = ExecCommandProblem(command); !why.empty()) {
      return Fail(c, "the command cannot run: " + why);
    }
    StreamTarget target{.workload_id = rental_.workload_id, .kind = StreamTarget::Kind::kExec};
    target.command = std::move(command);
    target.tty = c.pty;
    target.open_stdin = true;
    c.sink = std::make_shared<Sink>(wake_);
    auto stream = g_.relay_.Open(rental_.machine_id, target, c.sink, rental_.id);
    if (!stream.ok()) return Fail(c, stream.status().message());
    c.stream = std::move(*stream);
    if (c.pty) c.to_agent = ResizeFrame(c.size);
    LogInfo("ssh.channel_opened", {{"rental_id", rental_.id},
                                   {"what", c.what},
                                   {"program", target.command.front()},
                                   {"pty", c.pty}});
  }

  StatusOr<rentals::Rental> Reload() {
    std::vector<rentals::Rental> found;
    GPUNEX_RETURN_IF_ERROR(g_.db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(found, rentals::FindRentals(tx, {rental_.id}));
      return Status::Ok();
    }));
    if (found.size() != 1) return NotFound("no such rental");
    return found[0];
  }

  // Tells a session why it ends (on stderr) and ends it with status 255, as ssh does for
  // its own errors; closes a forwarded connection.
  void Fail(Channel& c, const std::string& why) {
    if (c.closed) return;
    if (c.kind == Channel::Kind::kSession) {
      const std::string text = "gpunex: " + why + (c.pty ? "\r\n" : "\n");
      ssh_channel_write_stderr(c.ch, text.data(), static_cast<uint32_t>(text.size()));
      ssh_channel_request_send_exit_status(c.ch, 255);
      c.exit_code = 255;
    }
    Close(c);
  }

  void Close(Channel& c) {
    if (c.closed) return;
    c.stream.reset();
    if (!c.eof_sent) ssh_channel_send_eof(c.ch);
    c.eof_sent = true;
    ssh_channel_close(c.ch);
    c.closed = true;
    LogInfo("ssh.channel_closed",
            {{"rental_id", rental_.id},
             {"what", c.what},
             {"bytes_in", c.bytes_in},
             {"bytes_out", c.bytes_out},
             {"exit_code", c.exit_code ? json::value(*c.exit_code) : json::value(nullptr)},
             {"seconds", std::chrono::duration<double>(SteadyClock::now() - c.opened).count()}});
  }

  // The command's end: its status as the session's exit status.
  void Exit(Channel& c, std::string_view status) {
    auto parsed = ParseJson(status);
    const json::object* o = parsed.ok() && parsed->is_object() ? &parsed->get_object() : nullptr;
    const json::value* code = o ? o->if_contains("exit_code") : nullptr;
    if (code && code->is_int64()) {
      c.exit_code = code->get_int64();
      ssh_channel_request_send_exit_status(c.ch, static_cast<int>(*c.exit_code));
      return Close(c);
    }
    const json::value* error = o ? o->if_contains("error") : nullptr;
    Fail(c, error && error->is_string() ? std::string(error->get_string())
                                        : std::string("the command's end is unknown"));
  }

  // Moves what can move now, both ways, within the client's window and the stream's room.
  void Pump(Channel& c) {
    if (!c.closed && !c.command.empty()) Start(c);
    if (c.closed || (c.kind == Channel::Kind::kSession && !c.stream)) return;
    const bool exec = c.kind == Channel::Kind::kSession;
    // To the client.
    while (!c.closed) {
      if (c.out_at < c.out.size()) {
        const uint32_t window = ssh_channel_window_size(c.ch);
        if (window == 0) break;
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(window, c.out.size() - c.out_at));
        const char* data = c.out.data() + c.out_at;
        const int wrote = c.out_stderr ? ssh_channel_write_stderr(c.ch, data, n)
                                       : ssh_channel_write(c.ch, data, n);
        if (wrote < 0) return Close(c);
        if (wrote == 0) break;
        c.out_at += static_cast<size_t>(wrote);
        c.bytes_out += wrote;
        Touch();
        continue;
      }
      c.out.clear();
      c.out_at = 0;
      if (exec) {
        auto frame = c.frames.Next();
        if (!frame.ok()) return Fail(c, "the agent's exec stream is broken");
        if (frame->has_value()) {
          ExecFrame& f = **frame;
          if (f.channel == ExecChannel::kStatus) return Exit(c, f.payload);
          if (f.channel == ExecChannel::kStdout || f.channel == ExecChannel::kStderr) {
            c.out = std::move(f.payload);
            c.out_stderr = f.channel == ExecChannel::kStderr;
          }
          continue;
        }
      }
      if (!c.stream) break;
      std::string bytes = c.stream->Read(kChunk);
      if (bytes.empty()) break;
      if (exec) {
        c.frames.Feed(bytes);
      } else {
        c.out = std::move(bytes);
        c.out_stderr = false;
      }
    }
    if (c.closed) return;
    // From the client.
    while (c.stream && !c.client_eof && c.to_agent.size() < kChunk) {
      read_buffer_.resize(kChunk);
      const int n = ssh_channel_read_nonblocking(c.ch, read_buffer_.data(), kChunk, 0);
      if (n > 0) {
        const std::string_view got(read_buffer_.data(), static_cast<size_t>(n));
        c.to_agent += exec ? EncodeExecFrame(ExecChannel::kStdin, got) : std::string(got);
        c.bytes_in += n;
        Touch();
        continue;
      }
      if (n == SSH_EOF || (n == 0 && ssh_channel_is_eof(c.ch))) {
        c.client_eof = true;
        if (exec) c.to_agent += EncodeExecFrame(ExecChannel::kClose, std::string(1, '\0'));
      }
      break;
    }
    if (c.stream && !c.to_agent.empty()) c.stream->WriteSome(&c.to_agent);
    if (c.stream && !exec && c.client_eof && c.to_agent.empty() && !c.finish_sent) {
      c.finish_sent = true;
      [[maybe_unused]] Status finished = c.stream->Finish();
    }
    // The stream's end, once everything it brought has gone to the client.
    const bool drained = c.out_at >= c.out.size() && c.frames.buffered() == 0;
    if (!exec && drained && c.sink->finished() && !c.eof_sent) {
      ssh_channel_send_eof(c.ch);
      c.eof_sent = true;
    }
    if (auto end = c.sink->end(); end && drained) {
      if (!exec) return Close(c);
      Fail(c, end->code == mux::Code::kGone ? "the rental has ended"
                                            : "the command's stream ended: " + end->reason);
    }
  }

  // Whether `c` is done with: closed by both sides (or by the client), freed.
  bool Reap(Channel& c) {
    if (!c.closed && ssh_channel_is_closed(c.ch)) {
      c.closed = true;  // the client closed it: its command gets end of file, then a hang-up
      c.stream.reset();
    }
    if (!c.closed) return false;
    ssh_channel_free(c.ch);
    return true;
  }

  // The limits of a connection, looked at every turn of its loop.
  void Watch() {
    const auto now = SteadyClock::now();
    if (g_.stopping_) return End("the platform is stopping");
    if (!signed_in_) {
      if (now - connected_ > g_.options_.login_grace) End("did not sign in in time");
      return;
    }
    if (now - last_activity_ > g_.options_.idle_timeout) {
      return Tell("idle for " + std::to_string(g_.options_.idle_timeout.count()) +
                  " seconds: closing the connection");
    }
    if (now - last_check_ < g_.options_.rental_check) return;
    last_check_ = now;
    auto fresh = Reload();
    if (fresh.ok() && rentals::HasEnded(*fresh)) Tell("the rental has ended");
  }

  // Ends the connection, telling each running session why.
  void Tell(const std::string& why) {
    for (auto& c : channels_) {
      if (!c->closed) Fail(*c, why);
    }
    End(why);
  }

  void Finish() {
    for (auto& c : channels_) Close(*c);
    if (Connected()) ssh_blocking_flush(session_, kFlushMs);
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - connected_).count();
    if (signed_in_) {
      LogInfo("ssh.closed", {{"rental_id", rental_.id},
                             {"remote", address_},
                             {"seconds", seconds},
                             {"why", end_reason_}});
    } else {
      LogWarn("ssh.not_signed_in", {{"remote", address_},
                                    {"user", user_.substr(0, kMaxUserChars)},
                                    {"attempts", auth_attempts_},
                                    {"why", end_reason_}});
    }
  }

  SshGateway& g_;
  const int fd_;
  const std::string address_;
  ssh_session session_ = nullptr;
  ssh_server_callbacks_struct server_callbacks_{};
  ssh_event event_ = nullptr;
  const std::shared_ptr<EventFd> wake_ = std::make_shared<EventFd>();
  std::string end_reason_;
  int auth_attempts_ = 0;
  std::string user_;         // the user name asked for
  std::string fingerprint_;  // of the last key offered
  bool signed_in_ = false;
  bool counted_ = false;    // in the gateway's per-rental count
  rentals::Rental rental_;  // as of signing in
  std::vector<std::unique_ptr<Channel>> channels_;
  std::string read_buffer_;
  const SteadyClock::time_point connected_ = SteadyClock::now();
  SteadyClock::time_point last_activity_ = connected_;
  SteadyClock::time_point last_check_ = connected_;
};

namespace {

int OnMessage(ssh_session, ssh_message message, void* user) {
  return static_cast<SshGateway::Connection*>(user)->Handle(message);
}

}  // namespace

StatusOr<std::unique_ptr<SshGateway>> SshGateway::Create(SshGatewayOptions options,
                                                         HostKey host_key, store::Database& db,
                                                         relay::Relay& relay) {
  ssh_init();
  GPUNEX_ASSIGN_OR_RETURN(auto listening, Listen(options.listen));
  return std::unique_ptr<SshGateway>(new SshGateway(std::move(options), std::move(host_key), db,
                                                    relay, listening.first, listening.second));
}

SshGateway::SshGateway(SshGatewayOptions options, HostKey host_key, store::Database& db,
                       relay::Relay& relay, int listen_fd, uint16_t port)
    : options_(std::move(options)),
      host_key_(std::move(host_key)),
      db_(db),
      relay_(relay),
      listen_fd_(listen_fd),
      port_(port) {
  ssh_bind bind = ssh_bind_new();
  ssh_key key = nullptr;
  ssh_pki_import_privkey_base64(host_key_.private_key.c_str(), nullptr, nullptr, nullptr, &key);
  ssh_bind_options_set(bind, SSH_BIND_OPTIONS_IMPORT_KEY, key);  // the bind owns it now
  bind_ = bind;
}

SshGateway::~SshGateway() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  MutexLock lock(&mu_);
  // A connection in a blocking step (the key exchange) sees its socket end at once.
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  while (open_ > 0) drained_.Wait(&mu_);
  close(listen_fd_);
  ssh_bind_free(static_cast<ssh_bind>(bind_));
}

void SshGateway::Start() {
  acceptor_ = std::thread([this] { Accept(); });
}

SshGatewayFigures SshGateway::Figures() const {
  MutexLock lock(&mu_);
  return SshGatewayFigures{.connections = open_,
                           .signed_in = signed_in_,
                           .refused = refused_,
                           .failed_sign_ins = failed_sign_ins_};
}

bool SshGateway::RefusedAddress(const std::string& address) {
  auto it = failures_.find(address);
  if (it == failures_.end()) return false;
  const auto since = std::chrono::steady_clock::now() - options_.failure_window;
  while (!it->second.empty() && it->second.front() < since) it->second.pop_front();
  if (it->second.empty()) {
    failures_.erase(it);
    return false;
  }
  return static_cast<int>(it->second.size()) >= options_.max_failures_per_address;
}

void SshGateway::Accept() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string address = AddressOf(ss);
    {
      MutexLock lock(&mu_);
      const bool full = open_ >= options_.max_connections;
      if (full || RefusedAddress(address)) {
        ++refused_;
        close(fd);
        LogWarn("ssh.refused", {{"remote", address},
                                {"why", full ? "too many connections"
                                             : "too many failed sign-ins from this address"}});
        continue;
      }
      ++open_;
      fds_.insert(fd);
    }
    std::thread([this, fd, address = std::move(address)] { Serve(fd, address); }).detach();
  }
}

void SshGateway::Serve(int fd, std::string address) {
  bool signed_in = false;
  {
    Connection c(*this, fd, address);
    signed_in = c.Run();
    MutexLock lock(&mu_);
    fds_.erase(fd);  // before the connection closes it
  }
  MutexLock lock(&mu_);
  if (signed_in) {
    ++signed_in_;
  } else {
    ++failed_sign_ins_;
    failures_[address].push_back(std::chrono::steady_clock::now());
  }
  --open_;
  drained_.SignalAll();
}

bool SshGateway::AddRentalConnection(const std::string& rental_id) {
  MutexLock lock(&mu_);
  int& n = per_rental_[rental_id];
  if (n >= options_.max_connections_per_rental) return false;
  ++n;
  return true;
}

void SshGateway::RemoveRentalConnection(const std::string& rental_id) {
  MutexLock lock(&mu_);
  auto it = per_rental_.find(rental_id);
  if (it != per_rental_.end() && --it->second <= 0) per_rental_.erase(it);
}

}  // namespace gpunex::platform::sshgate
