// Providers (REV-4): the provider record created on approval, with its tier, and the
// provider's agent tokens. An agent token ("gpx_a_...") authenticates a provider's agent
// on the agent channel only; it is shown once and stored as its SHA-256.
//
// The tables are providers_store.h's. Approval (applications/) creates the record and
// the first token through the functions here that take the caller's transaction.
//
// Thread-safety: Providers is safe to share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/providers/provider_status.h"
#include "platform/store/db.h"

namespace gpunex::platform::providers {

struct Provider {
  std::string user_id;
  Tier tier = Tier::kCommunity;
  ProviderStatus status = ProviderStatus::kActive;
  std::string application_id;
  Timestamp approved_at;
};

struct AgentToken {
  std::string id;
  std::string name;
  std::string prefix;
  Timestamp created_at;
  std::optional<Timestamp> last_used_at;
  std::optional<Timestamp> revoked_at;
  std::optional<std::string> replaced_by;
};

// A new token with its secret, shown only this once.
struct NewAgentToken {
  AgentToken token;
  std::string secret;
};

inline constexpr size_t kMaxTokenName = 100;

// Creates or updates the provider record and grants the provider role, in the caller's
// transaction.
Status UpsertProvider(store::Tx& tx, Timestamp now, const std::string& user_id, Tier tier,
                      const std::string& application_id, const std::string& approved_by);

// The provider record of `user_id`; nullopt when the user is not a provider.
StatusOr<std::optional<Provider>> FindProvider(store::Tx& tx, const std::string& user_id);

// Every provider, oldest approval first, in the caller's transaction (the operators'
// list: the caller checks the role).
StatusOr<Page<Provider>> ListProviders(store::Tx& tx, const PageRequest& page);

// Issues a new agent token in the caller's transaction. kFailedPrecondition when the
// provider has too many active tokens.
StatusOr<NewAgentToken> IssueAgentToken(store::Tx& tx, Timestamp now,
                                        const std::string& provider_id, std::string_view name);

// The command a provider runs on a machine to install the agent.
std::string InstallCommand(std::string_view public_url, std::string_view token);

// Who an agent token belongs to.
struct AgentIdentity {
  std::string provider_id;
  std::string token_id;
};

struct ProvidersOptions {
  const Clock* clock = &SystemClock();
};

class Providers {
 public:
  explicit Providers(store::Database& db, ProvidersOptions options = {})
      : db_(db), options_(options) {}

  // kPermissionDenied when the caller is not a provider.
  StatusOr<Provider> Get(const accounts::Principal& p);

  // `name` empty: "agent".
  StatusOr<NewAgentToken> CreateToken(const accounts::Principal& p, const std::string& name);
  StatusOr<std::vector<AgentToken>> ListTokens(const accounts::Principal& p);
  // kNotFound unless the token is the caller's and active.
  Status RevokeToken(const accounts::Principal& p, const std::string& token_id);
  // Revokes the token and issues its replacement (same name) atomically.
  StatusOr<NewAgentToken> RotateToken(const accounts::Principal& p, const std::string& token_id);

  // For the agent channel: kUnauthenticated for unknown or revoked tokens, or tokens of a
  // provider that is not active.
  StatusOr<AgentIdentity> AuthenticateAgent(std::string_view token);
  // Records that the token opened a connection now.
  Status TouchAgentToken(const std::string& token_id);

 private:
  store::Database& db_;
  const ProvidersOptions options_;
};

}  // namespace gpunex::platform::providers
