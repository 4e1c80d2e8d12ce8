#include "platform/idempotency/idempotency_store.h"

#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::idempotency {
namespace {

using store::SqlLiteral;

const store::RowMapper<KeyRow>& KeyRows() {
  using K = KeyRow;
  static const auto* const m = new store::RowMapper<K>({
      {"user_id", &K::user_id},
      {"idempotency_key", &K::key},
      {"request_hash", &K::request_hash},
      {"state", [](K& k, const store::Cell& c) { k.state = kKeyStateNames.ParseStored(c.Str()); }},
      {"response_status",
       [](K& k, const store::Cell& c) { k.response_status = c.OptInt().value_or(0); }},
      {"response_content_type",
       [](K& k, const store::Cell& c) { k.response_content_type = c.OptStr().value_or(""); }},
      {"response_body",
       [](K& k, const store::Cell& c) { k.response_body = c.OptStr().value_or(""); }},
      {"created_at", &K::created_at},
      {"lease_until", &K::lease_until},
      {"expires_at", &K::expires_at},
  });
  return *m;
}

}  // namespace

StatusOr<std::optional<KeyRow>> IdempotencyStore::Find(const std::string& user_id,
                                                       const std::string& key) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + KeyRows().Select() +
                    " FROM idempotency_keys WHERE user_id = ? AND idempotency_key = ?",
                {user_id, key}));
  return KeyRows().First(rows);
}

Status IdempotencyStore::Put(const KeyRow& k) {
  return tx_
      .Exec(
          "INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, state, "
          "response_status, response_content_type, response_body, created_at, lease_until, "
          "expires_at) VALUES (?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?) ON CONFLICT (user_id, "
          "idempotency_key) DO UPDATE SET request_hash = excluded.request_hash, "
          "state = excluded.state, response_status = NULL, response_content_type = NULL, "
          "response_body = NULL, created_at = excluded.created_at, "
          "lease_until = excluded.lease_until, expires_at = excluded.expires_at",
          {k.user_id, k.key, k.request_hash, std::string(Name(k.state)), ToUnixMicros(k.created_at),
           ToUnixMicros(k.lease_until), ToUnixMicros(k.expires_at)})
      .status();
}

Status IdempotencyStore::Delete(const std::string& user_id, const std::string& key,
                                Timestamp lease_until) {
  return tx_
      .Exec("DELETE FROM idempotency_keys WHERE user_id = ? AND idempotency_key = ? AND state = " +
                SqlLiteral(KeyState::kInProgress) + " AND lease_until = ?",
            {user_id, key, ToUnixMicros(lease_until)})
      .status();
}

StatusOr<bool> IdempotencyStore::Complete(const std::string& user_id, const std::string& key,
                                          Timestamp lease_until, int64_t status,
                                          const std::string& content_type,
                                          const std::string& body) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n, tx_.Exec("UPDATE idempotency_keys SET state = " + SqlLiteral(KeyState::kDone) +
                              ", response_status = ?, response_content_type = ?, response_body = ? "
                              "WHERE user_id = ? AND idempotency_key = ? AND state = " +
                              SqlLiteral(KeyState::kInProgress) + " AND lease_until = ?",
                          {status, content_type, body, user_id, key, ToUnixMicros(lease_until)}));
  return n > 0;
}

StatusOr<int64_t> IdempotencyStore::DeleteExpired(Timestamp now) {
  return tx_.Exec("DELETE FROM idempotency_keys WHERE expires_at < ?", {ToUnixMicros(now)});
}

std::vector<store::Migration> IdempotencyMigrations() {
  return {
      {9,
       "idempotency",
       "answers of state-changing requests by Idempotency-Key",
       {
           R"(CREATE TABLE idempotency_keys (
                user_id TEXT NOT NULL REFERENCES users(id),
                idempotency_key TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                state TEXT NOT NULL,
                response_status BIGINT,
                response_content_type TEXT,
                response_body TEXT,
                created_at BIGINT NOT NULL,
                lease_until BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                PRIMARY KEY (user_id, idempotency_key)))",
           "CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::idempotency
