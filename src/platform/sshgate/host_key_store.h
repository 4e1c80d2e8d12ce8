// The sshgate folder's table: the SSH gateway's host key (ssh_host_key, one row).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::sshgate {

class HostKeyStore {
 public:
  explicit HostKeyStore(store::Tx& tx) : tx_(tx) {}

  // The kept private key, or nullopt before the first one is kept.
  StatusOr<std::optional<std::string>> Kept();
  // Keeps `private_key` unless one is kept already (the first one kept stays).
  Status KeepFirst(const std::string& private_key, Timestamp now);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> HostKeyMigrations();

}  // namespace gpunex::platform::sshgate
