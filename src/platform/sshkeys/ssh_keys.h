// Customers' SSH public keys (issue 26): the keys a rental's SSH access and its
// container's PUBLIC_KEY take from the account. At most max_per_account per account; a
// key (by fingerprint) on one account only, so that a key always names one customer.
//
// Thread-safety: thread-safe (each call is one transaction).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/sshkeys/ssh_keys_store.h"
#include "platform/store/db.h"

namespace gpunex::platform::sshkeys {

// The longest key name.
inline constexpr size_t kMaxNameChars = 64;

// The account's keys as a rental's container gets them in PUBLIC_KEY (the variable images
// made for other GPU clouds read into ~/.ssh/authorized_keys): one "type base64" line
// each, oldest first, joined by newlines; as many as fit in `max_chars` (an environment
// value's limit); "" without keys. In the caller's transaction.
StatusOr<std::string> PublicKeyEnv(store::Tx& tx, const std::string& user_id, size_t max_chars);

struct SshKeysOptions {
  int64_t max_per_account = 50;
  const Clock* clock = &SystemClock();
};

class SshKeys {
 public:
  SshKeys(store::Database& db, SshKeysOptions options) : db_(db), options_(options) {}

  // The user's keys, oldest first.
  StatusOr<std::vector<SshKey>> List(const std::string& user_id);
  // Adds `public_key` (one OpenSSH line, ssh_key.h) as `name`, or, when `name` is empty,
  // the key's comment (else its type). Field errors on "name" and "public_key"; kAlreadyExists
  // when the key is on this account or another one; kFailedPrecondition at the limit.
  StatusOr<SshKey> Add(const std::string& user_id, std::string name, const std::string& public_key);
  // kNotFound when the user has no key `id` (someone else's included).
  Status Remove(const std::string& user_id, const std::string& id);

 private:
  store::Database& db_;
  const SshKeysOptions options_;
};

}  // namespace gpunex::platform::sshkeys
