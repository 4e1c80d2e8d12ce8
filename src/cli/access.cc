// Reaching a rental from the command line: logs (-f follows), ssh (the platform's SSH
// gateway), exec (Kubernetes' exec protocol over a WebSocket), port-forward (a local port
// to a declared port, one WebSocket per connection) and cp (tar both ways through the
// files endpoint). docs/cli.md; the endpoints are docs/access.md's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/terminal.h"
#include "common/net/websocket_client.h"

namespace gpunex::cli {
namespace {

using namespace std::chrono_literals;

std::string TextOf(const json::value& v, std::string_view path) {
  const json::value* at = At(v, path);
  return at != nullptr && at->is_string() ? std::string(at->as_string()) : "";
}

// ---- logs ----------------------------------------------------------------------------

void Logs(Context& ctx, const std::string& id, bool follow, int tail_poll_ms) {
  Client& c = ctx.authed();
  const bool json_lines = ctx.format() == Format::kJson;
  std::string cursor;
  int quiet_polls = 0;
  for (;;) {
    std::string target = PathOf("/api/v1/rentals/{}/logs?limit=1000", {id});
    if (!cursor.empty()) target += "&cursor=" + UrlEncode(cursor);
    json::value page = c.Call("GET", target);
    const json::value* items = At(page, "items");
    size_t got = 0;
    if (items != nullptr && items->is_array()) {
      for (const json::value& item : items->as_array()) {
        ++got;
        if (json_lines) {
          std::cout << ToJsonText(item) << "\n";
          continue;
        }
        std::string data = TextOf(item, "data");
        if (data.empty() || data.back() != '\n') data += '\n';
        (TextOf(item, "stream") == "stderr" ? std::cerr : std::cout) << data;
      }
      std::cout.flush();
    }
    const std::string next = TextOf(page, "next_cursor");
    if (!next.empty()) cursor = next;
    if (got == 1000) continue;  // more waiting now
    if (!follow) return;
    // Following: the log is done once the rental has ended and a poll brought nothing.
    if (got == 0 && ++quiet_polls % 2 == 0) {
      const json::value rental = c.Call("GET", PathOf("/api/v1/rentals/{}", {id}));
      if (TextOf(rental, "state") == "ended") return;
    }
    Nap(tail_poll_ms);
  }
}

// ---- ssh -----------------------------------------------------------------------------

[[noreturn]] void Ssh(Context& ctx, const std::string& id, const std::string& identity,
                      const std::vector<std::string>& extra) {
  const json::value gate = ctx.client().Call("GET", "/api/v1/access/ssh");
  const json::value* enabled = At(gate, "enabled");
  if (enabled == nullptr || !enabled->is_bool() || !enabled->as_bool()) {
    throw CliError(kExitFailure,
                   "this platform has no SSH gateway ([access] ssh_listen is off); "
                   "`gpunex rentals exec " +
                       id + " -it -- sh` opens a shell without one");
  }
  // The gateway's host key, pinned in a known_hosts file of our own beside the config.
  const std::filesystem::path known =
      std::filesystem::path(ctx.settings().config_path).parent_path() / "known_hosts";
  const std::string line = TextOf(gate, "known_hosts_line");
  std::error_code ec;
  std::filesystem::create_directories(known.parent_path(), ec);
  bool present = false;
  {
    std::ifstream in(known);
    for (std::string l; std::getline(in, l);) present = present || l == line;
  }
  if (!present) {
    std::ofstream out(known, std::ios::app);
    out << line << "\n";
    if (!out) throw CliError(kExitFailure, "cannot write " + known.string());
  }
  const json::value* port = At(gate, "port");
  std::vector<std::string> argv = {"ssh",
                                   "-p",
                                   port != nullptr ? ToJsonText(*port) : "22",
                                   "-o",
                                   "UserKnownHostsFile=" + known.string(),
                                   "-o",
                                   "StrictHostKeyChecking=yes"};
  if (!identity.empty()) {
    argv.insert(argv.end(), {"-i", identity, "-o", "IdentitiesOnly=yes"});
  }
  // ssh's own options come before the destination, the command after it: split `extra`
  // as ssh would (options that take a value take the next argument when not attached).
  size_t command_at = 0;
  while (command_at < extra.size() && extra[command_at].size() > 1 && extra[command_at][0] == '-') {
    const std::string& opt = extra[command_at];
    const bool takes_value =
        opt.size() == 2 &&
        std::string_view("BbcDEeFIiJLlmOoPpQRSWw").find(opt[1]) != std::string_view::npos;
    command_at += takes_value ? 2 : 1;
  }
  command_at = std::min(command_at, extra.size());
  argv.insert(argv.end(), extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(command_at));
  argv.push_back(id + "@" + TextOf(gate, "host"));
  argv.insert(argv.end(), extra.begin() + static_cast<std::ptrdiff_t>(command_at), extra.end());
  if (ctx.debug) {
    std::string shown;
    for (const std::string& a : argv) shown += (shown.empty() ? "" : " ") + a;
    ctx.Note("exec: " + shown);
  }
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execvp("ssh", cargv.data());
  throw CliError(kExitFailure,
                 std::string("cannot run ssh (the OpenSSH client): ") + std::strerror(errno));
}

// ---- exec ----------------------------------------------------------------------------

// Kubernetes' status message (channel 3) as an exit code.
int ExitCodeOf(std::string_view status) {
  StatusOr<json::value> v = ParseJson(status);
  if (!v.ok()) return 1;
  if (TextOf(*v, "status") == "Success") return 0;
  const json::value* causes = At(*v, "details.causes");
  if (causes != nullptr && causes->is_array()) {
    for (const json::value& cause : causes->as_array()) {
      if (TextOf(cause, "reason") == "ExitCode") {
        try {
          return std::stoi(TextOf(cause, "message"));
        } catch (const std::exception&) {
          return 1;
        }
      }
    }
  }
  return 1;
}

std::string CloseWhy(int code) {
  switch (code) {
    case 4410:
      return "the rental has ended";
    case 4503:
      return "the machine's agent is not connected";
    case 4429:
      return "too many sessions on the machine";
    case 4403:
      return "the agent refused the port (not declared)";
    case 4502:
      return "nothing answered on the port inside the container";
    default:
      return "the platform closed the connection (" + std::to_string(code) + ")";
  }
}

std::unique_ptr<net::WebSocketClient> Dial(Context& ctx, const std::string& target,
                                           const std::string& subprotocol) {
  Client& c = ctx.authed();
  net::WebSocketClientOptions o;
  o.binary = true;
  o.headers = c.AuthHeaders();
  if (!subprotocol.empty()) o.headers.emplace_back("Sec-WebSocket-Protocol", subprotocol);
  o.max_message_bytes = 4 << 20;
  StatusOr<std::unique_ptr<net::WebSocketClient>> ws =
      net::WebSocketClient::Connect(c.WebSocketUrl(target), o);
  if (!ws.ok()) {
    const StatusCode code = ws.status().code();
    throw CliError(code == StatusCode::kUnauthenticated || code == StatusCode::kPermissionDenied
                       ? kExitAuth
                   : code == StatusCode::kNotFound ? kExitNotFound
                                                   : kExitFailure,
                   ws.status().message());
  }
  return std::move(*ws);
}

std::atomic<bool> g_resized{false};

int Exec(Context& ctx, const std::string& id, const std::vector<std::string>& command,
         bool stdin_open, bool tty) {
  if (command.empty()) throw CliError(kExitUsage, "exec needs a command after --");
  std::string target = PathOf("/api/v1/rentals/{}/exec?", {id});
  for (const std::string& a : command) target += "command=" + UrlEncode(a) + "&";
  target +=
      std::string("tty=") + (tty ? "true" : "false") + "&stdin=" + (stdin_open ? "true" : "false");
  std::unique_ptr<net::WebSocketClient> ws = Dial(ctx, target, "v5.channel.k8s.io");

  const bool local_tty = tty && ::isatty(STDIN_FILENO) != 0;
  RawTerminal raw(local_tty);
  const auto send_size = [&] {
    winsize w{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) {
      (void)ws->Send(std::string(1, '\x04') + "{\"Width\":" + std::to_string(w.ws_col) +
                     ",\"Height\":" + std::to_string(w.ws_row) + "}");
    }
  };
  if (local_tty) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_resized = true; };
    ::sigaction(SIGWINCH, &sa, nullptr);
    send_size();
  }
  std::atomic<bool> done{false};
  std::thread input;
  if (stdin_open) {
    input = std::thread([&] {
      char buf[32768];
      while (!done) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) continue;
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          (void)ws->Send(std::string("\xff\x00", 2));  // stdin closed
          return;
        }
        while (!done && ws->QueuedBytes() > (8u << 20)) std::this_thread::sleep_for(5ms);
        if (!ws->Send(std::string(1, '\0') + std::string(buf, static_cast<size_t>(n))).ok()) {
          return;
        }
      }
    });
  }
  int exit_code = -1;
  std::string why;
  for (;;) {
    if (g_resized.exchange(false)) send_size();
    StatusOr<std::optional<std::string>> m = ws->Receive(200ms);
    if (!m.ok()) {
      const int code = ws->PeerCloseCode();
      if (exit_code < 0) why = code != 0 && code != 1000 ? CloseWhy(code) : m.status().message();
      break;
    }
    if (!*m || (*m)->empty()) continue;
    const std::string& msg = **m;
    const std::string_view bytes = std::string_view(msg).substr(1);
    switch (static_cast<unsigned char>(msg[0])) {
      case 1:
        std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size())).flush();
        break;
      case 2:
        std::cerr.write(bytes.data(), static_cast<std::streamsize>(bytes.size())).flush();
        break;
      case 3:
        exit_code = ExitCodeOf(bytes);
        break;
      default:
        break;
    }
  }
  done = true;
  if (input.joinable()) input.join();
  ws->Close();
  raw.Restore();
  if (exit_code < 0) throw CliError(kExitFailure, "exec: " + why);
  return exit_code;
}

// ---- port-forward --------------------------------------------------------------------

void Pump(Context* ctx, const std::string& target, int fd) {
  std::unique_ptr<net::WebSocketClient> ws;
  try {
    ws = Dial(*ctx, target, "");
  } catch (const CliError& e) {
    ctx->Note(std::string("port-forward: ") + e.what());
    ::close(fd);
    return;
  }
  std::atomic<bool> socket_done{false};
  std::thread up([&] {
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      while (ws->QueuedBytes() > (4u << 20)) std::this_thread::sleep_for(2ms);
      if (!ws->Send(std::string(buf, static_cast<size_t>(n))).ok()) break;
    }
    socket_done = true;
  });
  for (;;) {
    StatusOr<std::optional<std::string>> m = ws->Receive(100ms);
    if (!m.ok()) {
      const int code = ws->PeerCloseCode();
      if (code != 0 && code != 1000) ctx->Note("port-forward: " + CloseWhy(code));
      break;
    }
    if (*m) {
      const std::string& data = **m;
      size_t off = 0;
      while (off < data.size()) {
        const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      if (off < data.size()) break;
    } else if (socket_done) {
      break;
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  ws->Close();
  up.join();
  ::close(fd);
}

[[noreturn]] void PortForward(Context& ctx, const std::string& id, const std::string& spec,
                              const std::string& address) {
  const size_t colon = spec.find(':');
  int local = 0;
  int remote = 0;
  try {
    remote = std::stoi(colon == std::string::npos ? spec : spec.substr(colon + 1));
    local = colon == std::string::npos ? remote : std::stoi(spec.substr(0, colon));
  } catch (const std::exception&) {
    throw CliError(kExitUsage, "port-forward takes LOCAL:PORT or PORT (not \"" + spec + "\")");
  }
  if (local < 0 || local > 65535 || remote < 1 || remote > 65535) {
    throw CliError(kExitUsage, "port-forward: ports are 1 to 65535 (LOCAL may be 0: any)");
  }
  // Checked before listening: the rental exists, is the caller's, and declares the port.
  const json::value rental = ctx.authed().Call("GET", PathOf("/api/v1/rentals/{}", {id}));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(local));
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) {
    throw CliError(kExitUsage, "--address must be an IPv4 address (not \"" + address + "\")");
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    throw CliError(kExitFailure, "cannot listen on " + address + ":" + std::to_string(local) +
                                     ": " + std::strerror(errno));
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string target =
      PathOf("/api/v1/rentals/{}/ports/{}/connect", {id, std::to_string(remote)});
  ctx.Note("Forwarding " + address + ":" + std::to_string(ntohs(a.sin_port)) + " -> " + id +
           " port " + std::to_string(remote) + " (state " + TextOf(rental, "state") +
           "); Ctrl+C ends it");
  for (;;) {
    const int conn = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      throw CliError(kExitFailure, std::string("port-forward: accept: ") + std::strerror(errno));
    }
    std::thread(Pump, &ctx, target, conn).detach();
  }
}

// ---- cp ------------------------------------------------------------------------------

struct Remote {
  std::string id;
  std::string path;
};

// "rnt_x:/path" is a rental's path; anything else is local ("./a:b" stays local).
std::optional<Remote> RemoteOf(const std::string& arg) {
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || arg.rfind("rnt_", 0) != 0) return std::nullopt;
  if (arg.substr(0, colon).find('/') != std::string::npos) return std::nullopt;
  return Remote{arg.substr(0, colon), arg.substr(colon + 1)};
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

void CopyFrom(Context& ctx, const Remote& from, const std::string& to) {
  const std::string target =
      PathOf("/api/v1/rentals/{}/files?path=", {from.id}) + UrlEncode(from.path);
  if (to != "-") {
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    if (!std::filesystem::is_directory(to)) {
      throw CliError(kExitUsage, "cp: " + to + " is not a directory (the copy unpacks into one)");
    }
  }
  // tar starts with the first byte of the archive, so a refused request starts none.
  std::FILE* out = to == "-" ? stdout : nullptr;
  std::FILE* pipe = nullptr;
  const auto sink = [&](const char* d, size_t n) {
    if (out == nullptr) {
      pipe = ::popen(("tar -x -f - -C " + Quote(to)).c_str(), "w");
      if (pipe == nullptr) return false;
      out = pipe;
    }
    return std::fwrite(d, 1, n, out) == n;
  };
  const bool show = ctx.progress() && to != "-";
  const Response r = ctx.authed().Download(target, sink, [&](uint64_t moved) {
    if (show) std::cerr << "\r" << from.id << ":" << from.path << "  " << Mib(moved) << std::flush;
  });
  if (show) std::cerr << "\n";
  const int rc = pipe != nullptr ? ::pclose(pipe) : (std::fflush(stdout) == 0 ? 0 : 1);
  ctx.authed().CheckAnswer(r, "GET", target);
  if (to != "-" && pipe == nullptr) throw CliError(kExitFailure, "cp: nothing came to unpack");
  if (rc != 0)
    throw CliError(kExitFailure,
                   "cp: tar could not unpack what came (status " + std::to_string(rc) + ")");
}

void CopyTo(Context& ctx, const std::string& from, const Remote& to) {
  std::FILE* in = stdin;
  std::FILE* pipe = nullptr;
  if (from != "-") {
    const std::filesystem::path p = std::filesystem::absolute(from).lexically_normal();
    if (!std::filesystem::exists(p)) throw CliError(kExitUsage, "cp: no such file: " + from);
    const std::filesystem::path base = p.has_filename() ? p.filename() : p.parent_path().filename();
    const std::filesystem::path dir =
        p.has_filename() ? p.parent_path() : p.parent_path().parent_path();
    pipe = ::popen(("tar -c -f - -C " + Quote(dir.string()) + " " + Quote(base.string())).c_str(),
                   "r");
    if (pipe == nullptr) throw CliError(kExitFailure, "cp: cannot run tar");
    in = pipe;
  }
  const std::string target = PathOf("/api/v1/rentals/{}/files?path=", {to.id}) + UrlEncode(to.path);
  const bool show = ctx.progress();
  const Response r = ctx.authed().Upload(
      "PUT", target, "application/x-tar",
      [&](char* buf, size_t n) { return std::fread(buf, 1, n, in); },
      [&](uint64_t moved) {
        if (show) std::cerr << "\r" << to.id << ":" << to.path << "  " << Mib(moved) << std::flush;
      });
  if (show) std::cerr << "\n";
  const int rc = pipe != nullptr ? ::pclose(pipe) : 0;
  ctx.authed().CheckAnswer(r, "PUT", target);
  if (rc != 0) throw CliError(kExitFailure, "cp: tar could not pack " + from);
}

}  // namespace

void AddAccessCommands(CLI::App& app, Context& ctx) {
  CLI::App* rentals = Noun(app, "rentals", "your rentals: create, follow, reach, stop");
  auto id = std::make_shared<std::string>();

  CLI::App* logs = rentals->add_subcommand("logs", "the container's output");
  auto follow = std::make_shared<bool>(false);
  logs->add_option("id", *id, "the rental's id")->required();
  logs->add_flag("-f,--follow", *follow, "keep printing as it comes, until the rental ends");
  logs->callback([id, follow, &ctx] { Logs(ctx, *id, *follow, 1000); });

  CLI::App* ssh = rentals->add_subcommand("ssh", "an SSH session through the platform's gateway");
  struct SshArgs {
    std::string identity;
    std::vector<std::string> extra;
  };
  auto sa = std::make_shared<SshArgs>();
  ssh->add_option("id", *id, "the rental's id")->required();
  ssh->add_option("-i,--identity", sa->identity, "the private key to sign in with");
  ssh->add_option("args", sa->extra, "after --: ssh's own arguments and a command");
  ssh->callback([id, sa, &ctx] { Ssh(ctx, *id, sa->identity, sa->extra); });

  CLI::App* exec = rentals->add_subcommand("exec", "run a command in the rental's container");
  struct ExecArgs {
    bool stdin_open = false;
    bool tty = false;
    std::vector<std::string> command;
  };
  auto ea = std::make_shared<ExecArgs>();
  exec->add_option("id", *id, "the rental's id")->required();
  exec->add_flag("-i,--stdin", ea->stdin_open, "pass stdin to the command");
  exec->add_flag("-t,--tty", ea->tty, "give it a terminal");
  exec->add_option("command", ea->command, "after --: the command and its arguments");
  exec->callback([id, ea, &ctx] {
    const int code = Exec(ctx, *id, ea->command, ea->stdin_open, ea->tty);
    std::cout.flush();
    std::exit(code);
  });

  CLI::App* pf = rentals->add_subcommand("port-forward", "a local port to a port of the rental");
  struct PfArgs {
    std::string spec;
    std::string address = "127.0.0.1";
  };
  auto pa = std::make_shared<PfArgs>();
  pf->add_option("id", *id, "the rental's id")->required();
  pf->add_option("ports", pa->spec, "LOCAL:PORT, or PORT for the same number")->required();
  pf->add_option("--address", pa->address, "the local address to listen on (127.0.0.1)");
  pf->callback([id, pa, &ctx] { PortForward(ctx, *id, pa->spec, pa->address); });

  CLI::App* cp = rentals->add_subcommand(
      "cp", "copy files: rnt_ID:/path DIR takes them out, PATH rnt_ID:/dir puts them in");
  struct CpArgs {
    std::string from, to;
  };
  auto ca = std::make_shared<CpArgs>();
  cp->add_option("from", ca->from, "rnt_ID:/path, a local path, or - (a tar on stdin)")->required();
  cp->add_option("to", ca->to, "a local directory, - (the tar on stdout), or rnt_ID:/dir")
      ->required();
  cp->callback([ca, &ctx] {
    const std::optional<Remote> from = RemoteOf(ca->from);
    const std::optional<Remote> to = RemoteOf(ca->to);
    if (from.has_value() == to.has_value()) {
      throw CliError(kExitUsage, "cp: exactly one side is a rental's path (rnt_ID:/path)");
    }
    if (from) {
      CopyFrom(ctx, *from, ca->to);
    } else {
      CopyTo(ctx, ca->from, *to);
    }
  });
}

}  // namespace gpunex::cli
