// Helpers for notify's tests: a migrated throw-away database on either backend
// (store/testing/test_database.h) and a real SMTP server (testdata/smtp_sink.py,
// aiosmtpd) run as a child process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"
#include "platform/store/testing/test_database.h"

namespace gpunex::platform::notify::test {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The schema notify's tables need: accounts' migrations (users, which notifications
// refer to) and notify's.
std::vector<store::Migration> TestMigrations();

// A fresh database on `backend` ("sqlite", "postgresql"; see TestBackends()) with
// TestMigrations() applied. kFailedPrecondition (skip) for PostgreSQL without a server.
StatusOr<std::unique_ptr<store::testing::TestDatabase>> OpenMigratedDb(const std::string& backend);

// Inserts a row into users (accounts' table; tests only) with id `user_id`.
Status InsertUser(store::Database& db, const std::string& user_id, Timestamp created_at);

// Runs `sql` in a transaction; returns the rows it yields.
StatusOr<store::Rows> QueryDb(store::Database& db, const std::string& sql,
                              const std::vector<store::Value>& params = {});

// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
int FreePort();

// Polls `done` every 10 ms until it returns true or `timeout` passes; returns its last
// answer.
bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds timeout = std::chrono::seconds(20));

// One message the sink accepted.
struct SinkMessage {
  std::string mail_from;
  std::vector<std::string> rcpt_tos;
  std::string raw;      // CRLF line ends, as received after un-dot-stuffing
  std::string subject;  // decoded by Python's email package
  std::string message_id;
  std::string body;  // decoded, '\n' line ends
};

// The SMTP sink process.
class SmtpSink {
 public:
  SmtpSink() = default;
  ~SmtpSink();  // stops the process
  SmtpSink(const SmtpSink&) = delete;
  SmtpSink& operator=(const SmtpSink&) = delete;

  // Starts the server on `port` (0: a free one) and waits until it accepts
  // connections. With `tls_cert`/`tls_key` (PEM files) it offers and requires STARTTLS.
  // Messages go to `dir`/sink.jsonl.
  Status Start(const std::string& dir, int port = 0, const std::string& tls_cert = "",
               const std::string& tls_key = "");
  void Stop();

  int port() const { return port_; }
  std::string url() const { return "smtp://127.0.0.1:" + std::to_string(port_); }
  // Everything accepted so far, in order.
  std::vector<SinkMessage> Messages() const;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;  // the sink exits when this closes
  int port_ = 0;
  std::string out_path_;
};

}  // namespace gpunex::platform::notify::test
