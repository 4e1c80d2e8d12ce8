// The access folder's table: the access tokens that open a rental's HTTP ports
// (access_tokens; only each secret's SHA-256 is kept).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::access {

struct AccessToken {
  std::string id;
  std::string rental_id;
  std::string customer_id;
  Timestamp created_at;
  Timestamp expires_at;
  std::optional<Timestamp> revoked_at;
};

class AccessStore {
 public:
  explicit AccessStore(store::Tx& tx) : tx_(tx) {}

  // The rental's tokens neither revoked nor expired at `now`.
  StatusOr<int64_t> CountLive(const std::string& rental_id, Timestamp now);
  Status Insert(const AccessToken& token, const std::string& token_hash);
  // The rental's tokens, newest first, revoked and expired ones included.
  StatusOr<std::vector<AccessToken>> OfRental(const std::string& rental_id);
  // Token `token_id` of the rental, or nullopt.
  StatusOr<std::optional<AccessToken>> Find(const std::string& rental_id,
                                            const std::string& token_id);
  // Revokes the token at `now` (a revoked one keeps its first revocation time).
  Status Revoke(const std::string& token_id, Timestamp now);
  // The token whose secret has this SHA-256, or nullopt.
  StatusOr<std::optional<AccessToken>> ByHash(const std::string& token_hash);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> AccessMigrations();

}  // namespace gpunex::platform::access
