#include "platform/access/access_store.h"

#include "platform/store/rows.h"

namespace gpunex::platform::access {

namespace {

const store::RowMapper<AccessToken>& TokenRows() {
  static const auto* const m = new store::RowMapper<AccessToken>({
      {"id", &AccessToken::id},
      {"rental_id", &AccessToken::rental_id},
      {"customer_id", &AccessToken::customer_id},
      {"created_at", &AccessToken::created_at},
      {"expires_at", &AccessToken::expires_at},
      {"revoked_at", &AccessToken::revoked_at},
  });
  return *m;
}

}  // namespace

StatusOr<int64_t> AccessStore::CountLive(const std::string& rental_id, Timestamp now) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query("SELECT COUNT(*) AS n FROM access_tokens WHERE rental_id = ? AND "
                                  "revoked_at IS NULL AND expires_at > ?",
                                  {rental_id, ToUnixMicros(now)}));
  return rows[0]["n"].Int();
}

Status AccessStore::Insert(const AccessToken& token, const std::string& token_hash) {
  return tx_
      .Exec(
          "INSERT INTO access_tokens (id, rental_id, customer_id, token_hash, created_at, "
          "expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          {token.id, token.rental_id, token.customer_id, token_hash, ToUnixMicros(token.created_at),
           ToUnixMicros(token.expires_at)})
      .status();
}

StatusOr<std::vector<AccessToken>> AccessStore::OfRental(const std::string& rental_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + TokenRows().Select() +
                    " FROM access_tokens WHERE rental_id = ? ORDER BY created_at DESC, id DESC",
                {rental_id}));
  return TokenRows().Decode(rows);
}

StatusOr<std::optional<AccessToken>> AccessStore::Find(const std::string& rental_id,
                                                       const std::string& token_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + TokenRows().Select() +
                                        " FROM access_tokens WHERE id = ? AND rental_id = ?",
                                    {token_id, rental_id}));
  return TokenRows().First(rows);
}

Status AccessStore::Revoke(const std::string& token_id, Timestamp now) {
  return tx_
      .Exec("UPDATE access_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            {ToUnixMicros(now), token_id})
      .status();
}

StatusOr<std::optional<AccessToken>> AccessStore::ByHash(const std::string& token_hash) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + TokenRows().Select() + " FROM access_tokens WHERE token_hash = ?",
                {token_hash}));
  return TokenRows().First(rows);
}

std::vector<store::Migration> AccessMigrations() {
  return {
      {20,
       "access",
       "access: tokens that open a rental's HTTP ports",
       {
           R"(CREATE TABLE access_tokens (
                id TEXT PRIMARY KEY,
                rental_id TEXT NOT NULL REFERENCES rentals(id),
                customer_id TEXT NOT NULL REFERENCES users(id),
                token_hash TEXT NOT NULL UNIQUE,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT))",
           "CREATE INDEX access_tokens_rental ON access_tokens (rental_id, created_at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::access
