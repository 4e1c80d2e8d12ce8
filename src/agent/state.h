// The agent's durable state in its state volume (GPUNEX_STATE_DIR):
//   machine.json   machine key (a random secret that identifies this machine to the
//                  platform) and the machine id the platform assigned
//   token          the agent token, when stored by `gpunex-agent store-token` (0600)
//   commands.json  the record of commands received: accepted, and done with their
//                  result, so that a command repeated after a reconnect or a restart is
//                  answered from the record instead of being run again
// Every file is replaced atomically (write, fsync, rename), so a crash leaves either the
// old or the new version.
//
// Thread-safety: AgentState is thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/json.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"

namespace gpunex::agent {

struct CommandRecord {
  bool done = false;
  bool ok = false;
  std::string error;
  json::object data;
  UnixMicros at = 0;
};

class AgentState {
 public:
  // Opens (creating when needed, mode 0700) the state directory and loads its files.
  static StatusOr<std::unique_ptr<AgentState>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string machine_key() const EXCLUDES(mu_);
  std::string machine_id() const EXCLUDES(mu_);
  Status SetMachineId(const std::string& id) EXCLUDES(mu_);

  // The stored token, or "" when none.
  std::string token() const EXCLUDES(mu_);
  Status StoreToken(const std::string& token) EXCLUDES(mu_);

  std::optional<CommandRecord> Command(const std::string& id) const EXCLUDES(mu_);
  // Records that a command was accepted (before running it).
  Status Accept(const std::string& id) EXCLUDES(mu_);
  Status Finish(const std::string& id, bool ok, std::string error, json::object data) EXCLUDES(mu_);

  // Files are written atomically: exposed for tests.
  static Status WriteFileAtomically(const std::string& path, const std::string& content, int mode);

 private:
  explicit AgentState(std::string dir) : dir_(std::move(dir)) {}
  Status SaveMachine() REQUIRES(mu_);
  Status SaveCommands() REQUIRES(mu_);

  const std::string dir_;
  mutable Mutex mu_;
  std::string machine_key_ GUARDED_BY(mu_);
  std::string machine_id_ GUARDED_BY(mu_);
  std::string token_ GUARDED_BY(mu_);
  std::map<std::string, CommandRecord> commands_ GUARDED_BY(mu_);
};

}  // namespace gpunex::agent
