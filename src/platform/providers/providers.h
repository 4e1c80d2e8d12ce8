// Providers (REV-4): the provider record created on approval, with its tier, and the
// provider's agent tokens. An agent token ("gpx_a_...") authenticates a provider's agent
// on the agent channel only; it is shown once and stored as its SHA-256.
//
// Thread-safety: Providers is safe to share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/store/db.h"

namespace gpunex::platform::providers {

struct Provider {
  std::string user_id;
  std::string tier;    // "community" | "enterprise"
  std::string status;  // "active"
  std::string application_id;
  UnixMicros approved_at = 0;
};
json::object ToJson(const Provider& p);

struct AgentToken {
  std::string id;
  std::string name;
  std::string prefix;
  UnixMicros created_at = 0;
  std::optional<UnixMicros> last_used_at;
  std::optional<UnixMicros> revoked_at;
  std::optional<std::string> replaced_by;
};
json::object ToJson(const AgentToken& t);

// Creates or updates the provider record and grants the provider role, in the caller's
// transaction.
Status UpsertProvider(store::Tx& tx, const std::string& user_id, std::string_view tier,
                      const std::string& application_id, const std::string& approved_by);

// Issues a new agent token in the caller's transaction; returns it with its secret.
StatusOr<std::pair<AgentToken, std::string>> IssueAgentToken(store::Tx& tx,
                                                             const std::string& provider_id,
                                                             std::string_view name);

// The command a provider runs on a machine to install the agent.
std::string InstallCommand(std::string_view public_url, std::string_view token);

// Who an agent token belongs to.
struct AgentIdentity {
  std::string provider_id;
  std::string token_id;
};

class Providers {
 public:
  explicit Providers(store::Database& db) : db_(db) {}

  // kPermissionDenied when the caller is not a provider.
  StatusOr<Provider> Get(const accounts::Principal& p);

  StatusOr<std::pair<AgentToken, std::string>> CreateToken(const accounts::Principal& p,
                                                           const json::value& body);
  StatusOr<std::vector<AgentToken>> ListTokens(const accounts::Principal& p);
  // kNotFound unless the token is the caller's and active.
  Status RevokeToken(const accounts::Principal& p, const std::string& token_id);
  // Revokes the token and issues its replacement (same name) atomically.
  StatusOr<std::pair<AgentToken, std::string>> RotateToken(const accounts::Principal& p,
                                                           const std::string& token_id);

  // For the agent channel: kUnauthenticated for unknown or revoked tokens.
  StatusOr<AgentIdentity> AuthenticateAgent(std::string_view token);

 private:
  store::Database& db_;
};

}  // namespace gpunex::platform::providers
