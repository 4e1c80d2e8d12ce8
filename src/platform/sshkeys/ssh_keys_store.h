// The sshkeys folder's table: customers' SSH public keys.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::sshkeys {

struct SshKey {
  std::string id;  // "ssh_..."
  std::string user_id;
  std::string name;
  std::string type;        // "ssh-ed25519", ...
  std::string public_key;  // "type base64" (PublicKey::Line)
  std::string fingerprint;
  int64_t bits = 0;
  Timestamp created_at{};
};

class SshKeysStore {
 public:
  explicit SshKeysStore(store::Tx& tx) : tx_(tx) {}

  // The user's keys, oldest first.
  StatusOr<std::vector<SshKey>> OfUser(const std::string& user_id);
  StatusOr<int64_t> CountOfUser(const std::string& user_id);
  // The key with `fingerprint` on any account.
  StatusOr<std::optional<SshKey>> ByFingerprint(const std::string& fingerprint);
  // kAlreadyExists when the fingerprint is taken.
  Status Insert(const SshKey& key);
  // Whether the user's key `id` was there to delete.
  StatusOr<bool> Delete(const std::string& user_id, const std::string& id);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> SshKeysMigrations();

}  // namespace gpunex::platform::sshkeys
