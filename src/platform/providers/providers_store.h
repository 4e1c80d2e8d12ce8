// The providers folder's tables and the only SQL that touches them: providers (the
// record an approval creates, with the tier) and agent_tokens (hashes only).
//
// A ProvidersStore is a view of one transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/providers/provider_status.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::providers {

struct ProviderRow {
  std::string user_id;
  Tier tier = Tier::kCommunity;
  ProviderStatus status = ProviderStatus::kActive;
  std::string application_id;
  Timestamp approved_at;
  std::string approved_by;
};

struct AgentTokenRow {
  std::string id;
  std::string provider_id;
  std::string name;
  std::string token_hash;
  std::string token_prefix;
  Timestamp created_at;
  std::optional<Timestamp> last_used_at;
  std::optional<Timestamp> revoked_at;
  std::optional<std::string> replaced_by;
};

class ProvidersStore {
 public:
  explicit ProvidersStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<ProviderRow>> FindProvider(const std::string& user_id);
  // Every provider, oldest approval first.
  StatusOr<Page<ProviderRow>> ListProviders(const PageRequest& page);
  // Inserts, or updates tier, application and approval of the existing record.
  Status UpsertProvider(const ProviderRow& p);

  Status InsertToken(const AgentTokenRow& t);
  StatusOr<int64_t> CountActiveTokens(const std::string& provider_id);
  StatusOr<std::optional<AgentTokenRow>> FindToken(const std::string& provider_id,
                                                   const std::string& token_id);
  StatusOr<std::vector<AgentTokenRow>> ListTokens(const std::string& provider_id);  // oldest first
  // Whether an active token was revoked.
  StatusOr<bool> RevokeToken(const std::string& provider_id, const std::string& token_id,
                             Timestamp at, const std::optional<std::string>& replaced_by);
  // The active token with this hash whose provider is active.
  StatusOr<std::optional<AgentTokenRow>> FindLiveTokenByHash(const std::string& token_hash);
  // Sets last_used_at to `at` unless it is `since` or later already: a provider's agents
  // that connect together (after an instance went away) do not all write the token's row.
  Status TouchToken(const std::string& token_id, Timestamp at, Timestamp since);
  // The ids of the tokens revoked (or rotated) at `since` or later, by any instance.
  StatusOr<std::vector<std::string>> TokensRevokedSince(Timestamp since);

 private:
  store::Tx& tx_;
};

std::vector<store::Migration> ProvidersMigrations();

}  // namespace gpunex::platform::providers
