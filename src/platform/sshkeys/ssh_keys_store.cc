#include "platform/sshkeys/ssh_keys_store.h"

#include "platform/store/rows.h"

namespace gpunex::platform::sshkeys {

namespace {

const store::RowMapper<SshKey>& KeyRows() {
  static const auto* const m = new store::RowMapper<SshKey>({
      {"id", &SshKey::id},
      {"user_id", &SshKey::user_id},
      {"name", &SshKey::name},
      {"key_type", &SshKey::type},
      {"public_key", &SshKey::public_key},
      {"fingerprint", &SshKey::fingerprint},
      {"bits", &SshKey::bits},
      {"created_at", &SshKey::created_at},
  });
  return *m;
}

}  // namespace

StatusOr<std::vector<SshKey>> SshKeysStore::OfUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + KeyRows().Select() +
                                        " FROM ssh_keys WHERE user_id = ? ORDER BY created_at, id",
                                    {user_id}));
  return KeyRows().Decode(rows);
}

StatusOr<int64_t> SshKeysStore::CountOfUser(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM ssh_keys WHERE user_id = ?", {user_id}));
  return rows[0]["n"].Int();
}

StatusOr<std::optional<SshKey>> SshKeysStore::ByFingerprint(const std::string& fingerprint) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT " + KeyRows().Select() +
                                                          " FROM ssh_keys WHERE fingerprint = ?",
                                                      {fingerprint}));
  return KeyRows().First(rows);
}

Status SshKeysStore::Insert(const SshKey& k) {
  return tx_
      .Exec("INSERT INTO ssh_keys (" + KeyRows().Names() + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
