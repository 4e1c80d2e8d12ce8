#include "platform/providers/providers_store.h"

namespace gpunex::platform::providers {
namespace {

constexpr const char* kTokenColumns =
    "id, provider_id, name, token_hash, token_prefix, created_at, last_used_at, revoked_at, "
    "replaced_by";

AgentTokenRow TokenFrom(const store::Row& r) {
  return {r.Str(0),  r.Str(1),     r.Str(2),     r.Str(3),   r.Str(4),
          r.Time(5), r.OptTime(6), r.OptTime(7), r.OptStr(8)};
}

}  // namespace

StatusOr<std::optional<ProviderRow>> ProvidersStore::FindProvider(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT user_id, tier, status, application_id, approved_at, approved_by "
                "FROM providers WHERE user_id = ?",
                {user_id}));
  if (rows.empty()) return std::optional<ProviderRow>();
  const auto& r = rows[0];
  return std::optional<ProviderRow>(
      ProviderRow{r.Str(0), r.Str(1), r.Str(2), r.Str(3), r.Time(4), r.Str(5)});
}

Status ProvidersStore::UpsertProvider(const ProviderRow& p) {
  return tx_
      .Exec(
          "INSERT INTO providers (user_id, tier, status, application_id, approved_at, "
          "approved_by) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE "
          "SET tier = excluded.tier, application_id = excluded.application_id, "
          "approved_at = excluded.approved_at, approved_by = excluded.approved_by",
          {p.user_id, p.tier, p.status, p.application_id, ToUnixMicros(p.approved_at),
           p.approved_by})
      .status();
}

Status ProvidersStore::InsertToken(const AgentTokenRow& t) {
  return tx_
      .Exec(
          "INSERT INTO agent_tokens (id, provider_id, name, token_hash, token_prefix, "
          "created_at) VALUES (?, ?, ?, ?, ?, ?)",
          {t.id, t.provider_id, t.name, t.token_hash, t.token_prefix, ToUnixMicros(t.created_at)})
      .status();
}

StatusOr<int64_t> ProvidersStore::CountActiveTokens(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) FROM agent_tokens WHERE provider_id = ? AND revoked_at IS NULL",
                {provider_id}));
  return rows.at(0).Int(0);
}

StatusOr<std::optional<AgentTokenRow>> ProvidersStore::FindToken(const std::string& provider_id,
                                                                 const std::string& token_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + kTokenColumns +
                                        " FROM agent_tokens WHERE id = ? AND provider_id = ?",
                                    {token_id, provider_id}));
  if (rows.empty()) return std::optional<AgentTokenRow>();
  return std::optional<AgentTokenRow>(TokenFrom(rows[0]));
}

StatusOr<std::vector<AgentTokenRow>> ProvidersStore::ListTokens(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + kTokenColumns +
                                        " FROM agent_tokens WHERE provider_id = ? ORDER BY id",
                                    {provider_id}));
  std::vector<AgentTokenRow> out;
  for (const auto& r : rows) out.push_back(TokenFrom(r));
  return out;
}

StatusOr<bool> ProvidersStore::RevokeToken(const std::string& provider_id,
                                           const std::string& token_id, Timestamp at,
                                           const std::optional<std::string>& replaced_by) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec("UPDATE agent_tokens SET revoked_at = ?, replaced_by = COALESCE(?, "
               "replaced_by) WHERE id = ? AND provider_id = ? AND revoked_at IS NULL",
               {ToUnixMicros(at), replaced_by ? store::Value(*replaced_by) : store::Value(nullptr),
                token_id, provider_id}));
  return n > 0;
}

StatusOr<std::optional<AgentTokenRow>> ProvidersStore::FindLiveTokenByHash(
    const std::string& token_hash) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT t.id, t.provider_id, t.name, t.token_hash, t.token_prefix, t.created_at, "
                "t.last_used_at, t.revoked_at, t.replaced_by FROM agent_tokens t "
                "JOIN providers p ON p.user_id = t.provider_id WHERE t.token_hash = ? "
                "AND t.revoked_at IS NULL AND p.status = 'active'",
                {token_hash}));
  if (rows.empty()) return std::optional<AgentTokenRow>();
  return std::optional<AgentTokenRow>(TokenFrom(rows[0]));
}

Status ProvidersStore::TouchToken(const std::string& token_id, Timestamp at) {
  return tx_
      .Exec("UPDATE agent_tokens SET last_used_at = ? WHERE id = ?", {ToUnixMicros(at), token_id})
      .status();
}

std::vector<store::Migration> ProvidersMigrations() {
  return {
      {2,
       "providers",
       "providers and their agent tokens",
       {
           R"(CREATE TABLE providers (
                user_id TEXT PRIMARY KEY REFERENCES users(id),
                tier TEXT NOT NULL,
                status TEXT NOT NULL,
                application_id TEXT NOT NULL,
                approved_at BIGINT NOT NULL,
                approved_by TEXT NOT NULL))",
           R"(CREATE TABLE agent_tokens (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT,
                replaced_by TEXT))",
           "CREATE INDEX agent_tokens_provider ON agent_tokens (provider_id)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::providers
