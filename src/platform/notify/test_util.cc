#include "platform/notify/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/json.h"
#include "platform/accounts/accounts_store.h"
#include "platform/notify/notify_store.h"

extern char** environ;

namespace gpunex::platform::notify::test {
namespace {

#ifndef GPUNEX_TEST_PYTHON
#define GPUNEX_TEST_PYTHON "/usr/bin/python3"  // Debian's, which has python3-aiosmtpd
#endif

std::string SinkScript() { return std::string(GPUNEX_NOTIFY_TESTDATA) + "/smtp_sink.py"; }

std::string Crlf2Lf(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    out += s[i];
  }
  return out;
}

}  // namespace

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpunex-notify-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<store::Migration> TestMigrations() {
  std::vector<store::Migration> all = accounts::AccountsMigrations();
  for (store::Migration& m : NotifyMigrations()) all.push_back(std::move(m));
  return all;
}

StatusOr<std::unique_ptr<store::testing::TestDatabase>> OpenMigratedDb(const std::string& backend) {
  return store::testing::TestDatabase::OpenMigrated(backend, TestMigrations());
}

Status InsertUser(store::Database& db, const std::string& user_id, Timestamp created_at) {
  return db.Transact([&](store::Tx& tx) -> Status {
    return tx
        .Exec(
            "INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)",
            {user_id, user_id + "@example.com", "Test " + user_id, "x", ToUnixMicros(created_at)})
        .status();
  });
}

StatusOr<store::Rows> QueryDb(store::Database& db, const std::string& sql,
                              const std::vector<store::Value>& params) {
  store::Rows rows;
  Status st = db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(rows, tx.Query(sql, params));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return rows;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

SmtpSink::~SmtpSink() { Stop(); }

Status SmtpSink::Start(const std::string& dir, int port, const std::string& tls_cert,
                       const std::string& tls_key) {
  if (pid_ > 0) return FailedPrecondition("sink already running");
  out_path_ = dir + "/sink.jsonl";
  std::vector<std::string> args = {
      GPUNEX_TEST_PYTHON,   SinkScript(),         "--out", out_path_, "--port",
      std::to_string(port), "--exit-on-stdin-eof"};
  if (!tls_cert.empty()) {
    args.insert(args.end(), {"--tls-cert", tls_cert, "--tls-key", tls_key});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Internal("pipe failed");
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Internal("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(in_pipe[0]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(in_pipe[1]);
    return Internal("cannot start " + args[0] + ": " + std::strerror(rc));
  }
  pid_ = pid;
  stdin_fd_ = in_pipe[1];

  // The sink prints its port once it accepts connections.
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{out_pipe[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[64];
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  port_ = std::atoi(line.c_str());
  if (port_ <= 0) {
    Stop();
    return Unavailable("the SMTP sink did not start (is python3-aiosmtpd installed for " +
                       std::string(GPUNEX_TEST_PYTHON) + "?)");
  }
  return Status::Ok();
}

void SmtpSink::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
  int status = 0;
  bool exited =
      WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, std::chrono::seconds(10));
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

std::vector<SinkMessage> SmtpSink::Messages() const {
  std::vector<SinkMessage> out;
  std::ifstream in(out_path_);
  std::string line;
  while (std::getline(in, line)) {
    auto v = ParseJson(line);
    if (!v.ok() || !v->is_object()) continue;  // a line being written
    const json::object& o = v->as_object();
    SinkMessage m;
    m.mail_from = std::string(o.at("mail_from").as_string());
    for (const json::value& r : o.at("rcpt_tos").as_array()) {
      m.rcpt_tos.emplace_back(r.as_string());
    }
    m.raw = std::string(o.at("raw").as_string());
    m.subject = std::string(o.at("subject").as_string());
    m.message_id = std::string(o.at("message_id").as_string());
    m.body = Crlf2Lf(std::string(o.at("body").as_string()));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gpunex::platform::notify::test
