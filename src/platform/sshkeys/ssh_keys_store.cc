#include "platform/sshkeys/ssh_keys_store.h"

namespace gpunex::platform::sshkeys {

namespace {

constexpr const char* kColumns =
    "id, user_id, name, key_type, public_key, fingerprint, bits, created_at";

SshKey Decode(const store::Row& r) {
  return SshKey{.id = r.Str(0),
                .user_id = r.Str(1),
                .name = r.Str(2),
                .type = r.Str(3),
                .public_key = r.Str(4),
                .fingerprint = r.Str(5),
                .bits = r.Int(6),
                .created_at = r.Time(7)};
}

}  // namespace

StatusOr<std::vector<SshKey>> SshKeysStore::OfUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + kColumns +
                                        " FROM ssh_keys WHERE user_id = ? ORDER BY created_at, id",
                                    {user_id}));
  std::vector<SshKey> out;
  for (const store::Row& r : rows) out.push_back(Decode(r));
  return out;
}

StatusOr<int64_t> SshKeysStore::CountOfUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) FROM ssh_keys WHERE user_id = ?", {user_id}));
  return rows[0].Int(0);
}

StatusOr<std::optional<SshKey>> SshKeysStore::ByFingerprint(const std::string& fingerprint) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(std::string("SELECT ") + kColumns +
                                                          " FROM ssh_keys WHERE fingerprint = ?",
                                                      {fingerprint}));
  if (rows.empty()) return std::optional<SshKey>();
  return std::optional<SshKey>(Decode(rows[0]));
}

Status SshKeysStore::Insert(const SshKey& k) {
  return tx_
      .Exec(std::string("INSERT INTO ssh_keys (") + kColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {k.id, k.user_id, k.name, k.type, k.public_key, k.fingerprint, k.bits,
             ToUnixMicros(k.created_at)})
      .status();
}

StatusOr<bool> SshKeysStore::Delete(const std::string& user_id, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n, tx_.Exec("DELETE FROM ssh_keys WHERE id = ? AND user_id = ?", {id, user_id}));
  return n > 0;
}

std::vector<store::Migration> SshKeysMigrations() {
  return {
      {17,
       "sshkeys",
       "sshkeys: customers' SSH public keys, each on one account",
       {
           R"(CREATE TABLE ssh_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                key_type TEXT NOT NULL,
                public_key TEXT NOT NULL,
                fingerprint TEXT NOT NULL UNIQUE,
                bits BIGINT NOT NULL,
                created_at BIGINT NOT NULL))",
           "CREATE INDEX ssh_keys_user ON ssh_keys (user_id, created_at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::sshkeys
