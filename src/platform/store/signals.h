// Signals between the instances of one database: a transaction signals a channel when it
// commits, and every instance that listens on that channel hears it at once, instead of
// finding the change at its next poll. On PostgreSQL these are NOTIFY and LISTEN; on
// SQLite one process holds the database, so there is no one else to tell.
//
// A signal only hurries what a poll would find anyway: it may be lost (a listener whose
// connection broke hears nothing until it reconnects), so every listener keeps polling.
//
// Thread-safety: Signal runs in the caller's transaction (its thread); a SignalListener
// is used by one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

// Tells every listener of `channel` `payload` (at most 7 000 bytes) once the transaction
// commits; nothing when it rolls back. Repeats within one transaction arrive once.
Status Signal(Tx& tx, std::string_view channel, std::string_view payload);

class SignalListener {
 public:
  // A listener of `channel` over a connection of its own to `database_url` (`db`'s URL),
  // opened at the first Wait; null when `db` is not PostgreSQL (nothing to listen to).
  static std::unique_ptr<SignalListener> For(const Database& db, std::string database_url,
                                             std::string channel);
  ~SignalListener();
  SignalListener(const SignalListener&) = delete;
  SignalListener& operator=(const SignalListener&) = delete;

  // The payloads signalled since the last call, waiting up to `timeout` for the first
  // (empty: none came). A connection that fails is dropped and opened again at the next
  // call; the failure is returned (kUnavailable), after waiting out `timeout` so that a
  // caller in a loop does not spin while the database is away.
  StatusOr<std::vector<std::string>> Wait(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  explicit SignalListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpunex::platform::store
