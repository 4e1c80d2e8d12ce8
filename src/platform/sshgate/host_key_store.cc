#include "platform/sshgate/host_key_store.h"

namespace gpunex::platform::sshgate {

StatusOr<std::optional<std::string>> HostKeyStore::Kept() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT private_key FROM ssh_host_key WHERE id = 1", {}));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows[0]["private_key"].Str());
}

Status HostKeyStore::KeepFirst(const std::string& private_key, Timestamp now) {
  return tx_
      .Exec(
          "INSERT INTO ssh_host_key (id, private_key, created_at) VALUES (1, ?, ?) "
          "ON CONFLICT (id) DO NOTHING",
          {private_key, ToUnixMicros(now)})
      .status();
}

std::vector<store::Migration> HostKeyMigrations() {
  return {
      {22,
       "sshgate",
       "sshgate: the SSH gateway's host key, made once for the platform",
       {
           R"(CREATE TABLE ssh_host_key (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                private_key TEXT NOT NULL,
                created_at BIGINT NOT NULL))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::sshgate
