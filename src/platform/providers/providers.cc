#include "platform/providers/providers.h"

#include "common/ids.h"

namespace gpunex::platform::providers {
namespace {

constexpr std::string_view kAgentTokenPrefix = "gpx_a";
constexpr int kMaxActiveTokens = 100;

json::value OptTime(const std::optional<UnixMicros>& t) {
  return t ? json::value(FormatRfc3339(*t)) : json::value(nullptr);
}

StatusOr<AgentToken> LoadToken(store::Tx& tx, const std::string& provider_id,
                               const std::string& token_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT id, name, token_prefix, created_at, last_used_at, revoked_at, replaced_by "
               "FROM agent_tokens WHERE id = ? AND provider_id = ?",
               {token_id, provider_id}));
  if (rows.empty()) return NotFound("no such agent token");
  const auto& r = rows[0];
  return AgentToken{r.Str(0), r.Str(1), r.Str(2), r.Int(3), r.OptInt(4), r.OptInt(5), r.OptStr(6)};
}

Status RequireProvider(store::Tx& tx, const accounts::Principal& p) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT 1 FROM providers WHERE user_id = ?", {p.user.id}));
  if (rows.empty()) return PermissionDenied("only approved providers can do this");
  return Status::Ok();
}

}  // namespace

json::object ToJson(const Provider& p) {
  return {{"user_id", p.user_id},
          {"tier", p.tier},
          {"status", p.status},
          {"application_id", p.application_id},
          {"approved_at", FormatRfc3339(p.approved_at)}};
}

json::object ToJson(const AgentToken& t) {
  json::object o{{"id", t.id},
                 {"name", t.name},
                 {"prefix", t.prefix},
                 {"created_at", FormatRfc3339(t.created_at)}};
  o["last_used_at"] = OptTime(t.last_used_at);
  o["revoked_at"] = OptTime(t.revoked_at);
  o["replaced_by"] = t.replaced_by ? json::value(*t.replaced_by) : json::value(nullptr);
  o["active"] = !t.revoked_at.has_value();
  return o;
}

Status UpsertProvider(store::Tx& tx, const std::string& user_id, std::string_view tier,
                      const std::string& application_id, const std::string& approved_by) {
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("INSERT INTO providers (user_id, tier, status, application_id, approved_at, "
              "approved_by) VALUES (?, ?, 'active', ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET "
              "tier = excluded.tier, application_id = excluded.application_id, "
              "approved_at = excluded.approved_at, approved_by = excluded.approved_by",
              {user_id, std::string(tier), application_id, NowMicros(), approved_by})
          .status());
  return accounts::GrantRole(tx, user_id, accounts::kRoleProvider, approved_by);
}

StatusOr<std::pair<AgentToken, std::string>> IssueAgentToken(store::Tx& tx,
                                                             const std::string& provider_id,
                                                             std::string_view name) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows n,
      tx.Query("SELECT COUNT(*) FROM agent_tokens WHERE provider_id = ? AND revoked_at IS NULL",
               {provider_id}));
  if (n[0].Int(0) >= kMaxActiveTokens) {
    return FailedPrecondition("at most " + std::to_string(kMaxActiveTokens) +
                              " active agent tokens; revoke one first");
  }
  std::string secret = NewSecret(kAgentTokenPrefix);
  AgentToken t{NewId("atk"), std::string(name), secret.substr(0, 12), NowMicros(), {}, {}, {}};
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("INSERT INTO agent_tokens (id, provider_id, name, token_hash, token_prefix, "
              "created_at) VALUES (?, ?, ?, ?, ?, ?)",
              {t.id, provider_id, t.name, Sha256Hex(secret), t.prefix, t.created_at})
          .status());
  GPUNEX_RETURN_IF_ERROR(accounts::Audit(tx, provider_id, "agent_token.created", t.id, ""));
  return std::make_pair(std::move(t), std::move(secret));
}

std::string InstallCommand(std::string_view public_url, std::string_view token) {
  return "curl -fsSL " + std::string(public_url) + "/agent/install.sh | GPUNEX_TOKEN=" +
         std::string(token) + " bash";
}

StatusOr<Provider> Providers::Get(const accounts::Principal& p) {
  Provider out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT user_id, tier, status, application_id, approved_at FROM providers "
                 "WHERE user_id = ?",
                 {p.user.id}));
    if (rows.empty()) return PermissionDenied("you are not an approved provider");
    out = {rows[0].Str(0), rows[0].Str(1), rows[0].Str(2), rows[0].Str(3), rows[0].Int(4)};
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::pair<AgentToken, std::string>> Providers::CreateToken(const accounts::Principal& p,
                                                                    const json::value& body) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"name"});
  auto name = r.String("name", false, 100);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  std::pair<AgentToken, std::string> out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(out, IssueAgentToken(tx, p.user.id, name.value_or("agent")));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::vector<AgentToken>> Providers::ListTokens(const accounts::Principal& p) {
  std::vector<AgentToken> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT id, name, token_prefix, created_at, last_used_at, revoked_at, "
                 "replaced_by FROM agent_tokens WHERE provider_id = ? ORDER BY id",
                 {p.user.id}));
    for (const auto& r : rows) {
      out.push_back({r.Str(0), r.Str(1), r.Str(2), r.Int(3), r.OptInt(4), r.OptInt(5), r.OptStr(6)});
    }
    return Status::Ok();
  }));
  return out;
}

Status Providers::RevokeToken(const accounts::Principal& p, const std::string& token_id) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t n, tx.Exec("UPDATE agent_tokens SET revoked_at = ? WHERE id = ? AND "
                           "provider_id = ? AND revoked_at IS NULL",
                           {NowMicros(), token_id, p.user.id}));
    if (n == 0) return NotFound("no such active agent token");
    return accounts::Audit(tx, p.user.id, "agent_token.revoked", token_id, p.ip);
  });
}

StatusOr<std::pair<AgentToken, std::string>> Providers::RotateToken(const accounts::Principal& p,
                                                                    const std::string& token_id) {
  std::pair<AgentToken, std::string> out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(RequireProvider(tx, p));
    GPUNEX_ASSIGN_OR_RETURN(AgentToken old, LoadToken(tx, p.user.id, token_id));
    if (old.revoked_at) return NotFound("no such active agent token");
    GPUNEX_ASSIGN_OR_RETURN(out, IssueAgentToken(tx, p.user.id, old.name));
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE agent_tokens SET revoked_at = ?, replaced_by = ? WHERE id = ?",
                {NowMicros(), out.first.id, token_id})
            .status());
    return accounts::Audit(tx, p.user.id, "agent_token.rotated", token_id, p.ip,
                           {{"replaced_by", out.first.id}});
  }));
  return out;
}

StatusOr<AgentIdentity> Providers::AuthenticateAgent(std::string_view token) {
  if (!token.starts_with(kAgentTokenPrefix) || token.size() > 128) {
    return Unauthenticated("invalid agent token");
  }
  AgentIdentity id;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT t.id, t.provider_id FROM agent_tokens t JOIN providers p ON "
                 "p.user_id = t.provider_id WHERE t.token_hash = ? AND t.revoked_at IS NULL AND "
                 "p.status = 'active'",
                 {Sha256Hex(token)}));
    if (rows.empty()) return Unauthenticated("the agent token is unknown or revoked");
    id = {rows[0].Str(1), rows[0].Str(0)};
    return Status::Ok();
  }));
  return id;
}

}  // namespace gpunex::platform::providers
