#include "platform/providers/providers_store.h"

#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::providers {
namespace {

const store::RowMapper<AgentTokenRow>& TokenRows() {
  static const auto* const m = new store::RowMapper<AgentTokenRow>({
      {"id", &AgentTokenRow::id},
      {"provider_id", &AgentTokenRow::provider_id},
      {"name", &AgentTokenRow::name},
      {"token_hash", &AgentTokenRow::token_hash},
      {"token_prefix", &AgentTokenRow::token_prefix},
      {"created_at", &AgentTokenRow::created_at},
      {"last_used_at", &AgentTokenRow::last_used_at},
      {"revoked_at", &AgentTokenRow::revoked_at},
      {"replaced_by", &AgentTokenRow::replaced_by},
  });
  return *m;
}

const store::RowMapper<ProviderRow>& ProviderRows() {
  static const auto* const m = new store::RowMapper<ProviderRow>({
      {"user_id", &ProviderRow::user_id},
      {"tier",
       [](ProviderRow& p, const store::Cell& c) { p.tier = kTierNames.ParseStored(c.Str()); }},
      {"status",
       [](ProviderRow& p, const store::Cell& c) {
         p.status = kProviderStatusNames.ParseStored(c.Str());
       }},
      {"application_id", &ProviderRow::application_id},
      {"approved_at", &ProviderRow::approved_at},
      {"approved_by", &ProviderRow::approved_by},
  });
  return *m;
}

}  // namespace

StatusOr<std::optional<ProviderRow>> ProvidersStore::FindProvider(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT " + ProviderRows().Select() +
                                                          " FROM providers WHERE user_id = ?",
                                                      {user_id}));
  return ProviderRows().First(rows);
}

StatusOr<Page<ProviderRow>> ProvidersStore::ListProviders(const PageRequest& page) {
  const store::PageQuery q{
      ProviderRows().Select(),
      "FROM providers",
      "",
      {},
      {{"approved_at", store::KeyColumn::Type::kInt}, {"user_id", store::KeyColumn::Type::kText}}};
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return ProviderRows().DecodePage(rows);
}

Status ProvidersStore::UpsertProvider(const ProviderRow& p) {
  return tx_
      .Exec(
          "INSERT INTO providers (user_id, tier, status, application_id, approved_at, "
          "approved_by) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE "
          "SET tier = excluded.tier, application_id = excluded.application_id, "
          "approved_at = excluded.approved_at, approved_by = excluded.approved_by",
          {p.user_id, std::string(Name(p.tier)), std::string(Name(p.status)), p.application_id,
           ToUnixMicros(p.approved_at), p.approved_by})
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
      tx_.Query("SELECT COUNT(*) AS n FROM agent_tokens WHERE provider_id = ? AND revoked_at IS "
                "NULL",
                {provider_id}));
  return rows.at(0)["n"].Int();
}

StatusOr<std::optional<AgentTokenRow>> ProvidersStore::FindToken(const std::string& provider_id,
                                                                 const std::string& token_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + TokenRows().Select() +
                                        " FROM agent_tokens WHERE id = ? AND provider_id = ?",
                                    {token_id, provider_id}));
  return TokenRows().First(rows);
}

StatusOr<std::vector<AgentTokenRow>> ProvidersStore::ListTokens(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + TokenRows().Select() +
                                        " FROM agent_tokens WHERE provider_id = ? ORDER BY id",
                                    {provider_id}));
  return TokenRows().Decode(rows);
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
                "AND t.revoked_at IS NULL AND p.status = ?",
                {token_hash, std::string(Name(ProviderStatus::kActive))}));
  return TokenRows().First(rows);
}

Status ProvidersStore::TouchToken(const std::string& token_id, Timestamp at, Timestamp since) {
  return tx_
      .Exec(
          "UPDATE agent_tokens SET last_used_at = ? WHERE id = ? AND "
          "(last_used_at IS NULL OR last_used_at < ?)",
          {ToUnixMicros(at), token_id, ToUnixMicros(since)})
      .status();
}

StatusOr<std::vector<std::string>> ProvidersStore::TokensRevokedSince(Timestamp since) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT id FROM agent_tokens WHERE revoked_at >= ? ORDER BY id",
                                    {ToUnixMicros(since)}));
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r["id"].Str());
  return out;
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
      // Every instance looks for the tokens revoked in the last minute each second, to
      // close its own connections of them (providers_module.cc).
      {23,
       "providers",
       "providers: agent tokens by the time of their revocation",
       {
           "CREATE INDEX agent_tokens_revoked ON agent_tokens (revoked_at) "
           "WHERE revoked_at IS NOT NULL",
       },
       {}},
  };
}

}  // namespace gpunex::platform::providers
