#include "platform/providers/providers.h"

#include "common/ids.h"
#include "platform/providers/providers_store.h"

namespace gpunex::platform::providers {
namespace {

constexpr std::string_view kAgentTokenPrefix = "gpx_a";
constexpr int kMaxActiveTokens = 100;

AgentToken TokenFrom(const AgentTokenRow& r) {
  return {r.id, r.name, r.token_prefix, r.created_at, r.last_used_at, r.revoked_at, r.replaced_by};
}

Status RequireProvider(store::Tx& tx, const accounts::Principal& p) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ProviderRow> row,
                          ProvidersStore(tx).FindProvider(p.user.id));
  if (!row) return PermissionDenied("only approved providers can do this");
  return Status::Ok();
}

// `freed`: active tokens that the caller's transaction revokes as well (a rotation's old
// one), which leave their place to the new token.
StatusOr<NewAgentToken> IssueToken(store::Tx& tx, Timestamp now, const std::string& provider_id,
                                   std::string_view name, int64_t freed) {
  ProvidersStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(int64_t active, s.CountActiveTokens(provider_id));
  if (active - freed >= kMaxActiveTokens) {
    return FailedPrecondition("at most " + std::to_string(kMaxActiveTokens) +
                              " active agent tokens; revoke one first");
  }
  NewAgentToken out;
  out.secret = NewSecret(kAgentTokenPrefix);
  out.token = {NewId("atk"), std::string(name), out.secret.substr(0, 12), now, {}, {}, {}};
  GPUNEX_RETURN_IF_ERROR(s.InsertToken({out.token.id,
                                        provider_id,
                                        out.token.name,
                                        Sha256Hex(out.secret),
                                        out.token.prefix,
                                        now,
                                        {},
                                        {},
                                        {}}));
  GPUNEX_RETURN_IF_ERROR(
      accounts::Audit(tx, now, provider_id, "agent_token.created", out.token.id, ""));
  return out;
}

}  // namespace

Status UpsertProvider(store::Tx& tx, Timestamp now, const std::string& user_id, Tier tier,
                      const std::string& application_id, const std::string& approved_by) {
  GPUNEX_RETURN_IF_ERROR(ProvidersStore(tx).UpsertProvider(
      {user_id, tier, ProviderStatus::kActive, application_id, now, approved_by}));
  return accounts::GrantRole(tx, now, user_id, accounts::kRoleProvider, approved_by);
}

StatusOr<NewAgentToken> IssueAgentToken(store::Tx& tx, Timestamp now,
                                        const std::string& provider_id, std::string_view name) {
  return IssueToken(tx, now, provider_id, name, /*freed=*/0);
}

std::string InstallCommand(std::string_view public_url, std::string_view token) {
  return "curl -fsSL " + std::string(public_url) +
         "/agent/install.sh | GPUNEX_TOKEN=" + std::string(token) + " bash";
}

StatusOr<Page<Provider>> ListProviders(store::Tx& tx, const PageRequest& page) {
  GPUNEX_ASSIGN_OR_RETURN(Page<ProviderRow> rows, ProvidersStore(tx).ListProviders(page));
  Page<Provider> out;
  for (ProviderRow& r : rows.items) {
    out.items.push_back(Provider{std::move(r.user_id), r.tier, r.status,
                                 std::move(r.application_id), r.approved_at});
  }
  out.next = std::move(rows.next);
  return out;
}

StatusOr<std::optional<Provider>> FindProvider(store::Tx& tx, const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ProviderRow> row, ProvidersStore(tx).FindProvider(user_id));
  if (!row) return std::optional<Provider>();
  return std::optional<Provider>(
      Provider{row->user_id, row->tier, row->status, row->application_id, row->approved_at});
}

StatusOr<Provider> Providers::Get(const accounts::Principal& p) {
  Provider out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Provider> found, FindProvider(tx, p.user.id));
    if (!found) return PermissionDenied("you are not an approved provider");
    out = std::move(*found);
    return Status::Ok();
  }));
  return out;
}

StatusOr<NewAgentToken> Providers::CreateToken(const accounts::Principal& p,
                                               const std::string& name) {
  if (p.IsApiKey()) {
    return PermissionDenied("an API key cannot create agent tokens; log in to do it");
  }
  if (name.size() > kMaxTokenName) {
    return FieldError("name", "must be at most " + std::to_string(kMaxTokenName) + " characters");
  }
  const Timestamp now = options_.clock->Now();
  NewAgentToken out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(out,
                            IssueAgentToken(tx, now, p.user.id, name.empty() ? "agent" : name));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::vector<AgentToken>> Providers::ListTokens(const accounts::Principal& p) {
  std::vector<AgentToken> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<AgentTokenRow> rows,
                            ProvidersStore(tx).ListTokens(p.user.id));
    out.clear();
    for (const auto& r : rows) out.push_back(TokenFrom(r));
    return Status::Ok();
  }));
  return out;
}

Status Providers::RevokeToken(const accounts::Principal& p, const std::string& token_id) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(bool revoked,
                            ProvidersStore(tx).RevokeToken(p.user.id, token_id, now, std::nullopt));
    if (!revoked) return NotFound("no such active agent token");
    return accounts::Audit(tx, now, p.user.id, "agent_token.revoked", token_id, p.ip);
  });
}

StatusOr<NewAgentToken> Providers::RotateToken(const accounts::Principal& p,
                                               const std::string& token_id) {
  if (p.IsApiKey()) {
    return PermissionDenied("an API key cannot create agent tokens; log in to do it");
  }
  const Timestamp now = options_.clock->Now();
  NewAgentToken out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    ProvidersStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<AgentTokenRow> old, s.FindToken(p.user.id, token_id));
    if (!old || old->revoked_at) return NotFound("no such active agent token");
    // The old token is revoked below, in this transaction: a rotation at the limit is fine.
    GPUNEX_ASSIGN_OR_RETURN(out, IssueToken(tx, now, p.user.id, old->name, /*freed=*/1));
    GPUNEX_RETURN_IF_ERROR(s.RevokeToken(p.user.id, token_id, now, out.token.id).status());
    return accounts::Audit(tx, now, p.user.id, "agent_token.rotated", token_id, p.ip,
                           {{"replaced_by", out.token.id}});
  }));
  return out;
}

StatusOr<AgentIdentity> Providers::AuthenticateAgent(std::string_view token) {
  if (!token.starts_with(kAgentTokenPrefix) || token.size() > 128)
    return Unauthenticated("invalid agent token");
  AgentIdentity id;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<AgentTokenRow> row,
                            ProvidersStore(tx).FindLiveTokenByHash(Sha256Hex(token)));
    if (!row) return Unauthenticated("the agent token is unknown or revoked");
    id = {row->provider_id, row->id};
    return Status::Ok();
  }));
  return id;
}

Status Providers::TouchAgentToken(const std::string& token_id) {
  const Timestamp now = options_.clock->Now();
  // To the minute, as for API keys: a token that many machines share is written once a
  // minute at most, however many of them connect at once.
  return db_.Transact([&](store::Tx& tx) {
    return ProvidersStore(tx).TouchToken(token_id, now, now - kOneMinute);
  });
}

}  // namespace gpunex::platform::providers
