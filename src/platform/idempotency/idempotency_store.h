// The idempotency folder's table, idempotency_keys, and the only SQL that touches it:
// one row per (user, Idempotency-Key) with the request's hash and, once answered, the
// answer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::idempotency {

// A key's state: in_progress from its claim until the request's answer is stored, then
// done. A claim whose lease ran out is replaced by the next attempt's (in_progress again).
enum class KeyState { kInProgress, kDone };
inline constexpr EnumNames<KeyState, 2> kKeyStateNames{{{
    {KeyState::kInProgress, "in_progress"},
    {KeyState::kDone, "done"},
}}};
inline std::string_view Name(KeyState s) { return kKeyStateNames.Name(s); }

struct KeyRow {
  std::string user_id;
  std::string key;
  std::string request_hash;
  KeyState state = KeyState::kInProgress;
  int64_t response_status = 0;
  std::string response_content_type;
  std::string response_body;
  Timestamp created_at;
  Timestamp lease_until;  // in_progress: another attempt may take over after this
  Timestamp expires_at;
};

class IdempotencyStore {
 public:
  explicit IdempotencyStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<KeyRow>> Find(const std::string& user_id, const std::string& key);
  // Inserts or replaces the row of (user, key).
  Status Put(const KeyRow& row);
  // Deletes the claim if it still holds that lease.
  Status Delete(const std::string& user_id, const std::string& key, Timestamp lease_until);
  // Whether the row was still in progress under that lease (and is now done).
  StatusOr<bool> Complete(const std::string& user_id, const std::string& key, Timestamp lease_until,
                          int64_t status, const std::string& content_type, const std::string& body);
  StatusOr<int64_t> DeleteExpired(Timestamp now);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> IdempotencyMigrations();

}  // namespace gpunex::platform::idempotency
