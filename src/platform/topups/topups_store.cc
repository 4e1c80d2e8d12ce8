#include "platform/topups/topups_store.h"

#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::topups {
namespace {

const store::RowMapper<Topup>& TopupRows() {
  static const auto* const m = new store::RowMapper<Topup>({
      {"id", &Topup::id},
      {"customer_id", &Topup::customer_id},
      {"amount_micro", &Topup::amount},
      {"reference", &Topup::reference},
      {"status",
       [](Topup& t, const store::Cell& c) { t.status = kTopupStatusNames.ParseStored(c.Str()); }},
      {"signature", &Topup::signature},
      {"credited_micro", &Topup::credited},
      {"detail", &Topup::detail},
      {"created_at", &Topup::created_at},
      {"expires_at", &Topup::expires_at},
      {"credited_at", &Topup::credited_at},
      {"last_checked_at", &Topup::last_checked_at},
  });
  return *m;
}

StatusOr<std::vector<Topup>> Topups(store::Tx& tx, const std::string& rest,
                                    const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT " + TopupRows().Select() + " FROM topups " + rest, params));
  return TopupRows().Decode(rows);
}

StatusOr<std::optional<Topup>> One(store::Tx& tx, const std::string& rest,
                                   const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Topup> ts, Topups(tx, rest, params));
  if (ts.empty()) return std::optional<Topup>();
  return std::optional<Topup>(std::move(ts[0]));
}

// A status as a query parameter.
store::Value Text(TopupStatus s) { return std::string(Name(s)); }

store::Value Opt(const std::optional<std::string>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
}
store::Value Opt(const std::optional<Usdc>& v) {
  return v ? store::Value(v->micros()) : store::Value(nullptr);
}
store::Value Opt(const std::optional<Timestamp>& v) {
  return v ? store::Value(ToUnixMicros(*v)) : store::Value(nullptr);
}

}  // namespace

Status TopupsStore::Insert(const Topup& t) {
  return tx_
      .Exec("INSERT INTO topups (" + TopupRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {t.id, t.customer_id, t.amount.micros(), t.reference, Text(t.status), Opt(t.signature),
             Opt(t.credited), t.detail, ToUnixMicros(t.created_at), ToUnixMicros(t.expires_at),
             Opt(t.credited_at), Opt(t.last_checked_at)})
      .status();
}

StatusOr<std::optional<Topup>> TopupsStore::Find(const std::string& id) {
  return One(tx_, "WHERE id = ?", {id});
}

StatusOr<std::optional<Topup>> TopupsStore::FindBySignature(const std::string& signature) {
  return One(tx_, "WHERE signature = ?", {signature});
}

StatusOr<Page<Topup>> TopupsStore::List(const std::string& customer_id, const PageRequest& page) {
  store::PageQuery q;
  q.columns = TopupRows().Select();
  q.from = "FROM topups";
  q.where = "customer_id = ?";
  q.params = {customer_id};
  q.key = {{"created_at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return TopupRows().DecodePage(rows);
}

StatusOr<int64_t> TopupsStore::CountPending(const std::string& customer_id, Timestamp now) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM topups WHERE customer_id = ? AND status = ? "
                "AND expires_at > ?",
                {customer_id, Text(TopupStatus::kPending), ToUnixMicros(now)}));
  return rows.at(0)["n"].Int();
}

StatusOr<int64_t> TopupsStore::Expire(Timestamp now) {
  static_assert(TopupMayGo(TopupStatus::kPending, TopupStatus::kExpired));
  return tx_.Exec("UPDATE topups SET status = ? WHERE status = ? AND expires_at <= ?",
                  {Text(TopupStatus::kExpired), Text(TopupStatus::kPending), ToUnixMicros(now)});
}

StatusOr<std::vector<Topup>> TopupsStore::Due(Timestamp watch_from, Timestamp recheck_before,
                                              int64_t limit) {
  return Topups(tx_,
                "WHERE (status = ? AND created_at >= ?) OR (status = ? AND "
                "created_at >= ? AND (last_checked_at IS NULL OR last_checked_at <= ?)) "
                "ORDER BY created_at, id LIMIT ?",
                {Text(TopupStatus::kPending), ToUnixMicros(watch_from), Text(TopupStatus::kExpired),
                 ToUnixMicros(watch_from), ToUnixMicros(recheck_before), limit});
}

StatusOr<int64_t> TopupsStore::Note(const std::string& id, const std::string& detail,
                                    Timestamp now) {
  return tx_.Exec("UPDATE topups SET detail = ?, last_checked_at = ? WHERE id = ? AND status <> ?",
                  {detail, ToUnixMicros(now), id, Text(TopupStatus::kCredited)});
}

StatusOr<int64_t> TopupsStore::SetCredited(const std::string& id, const std::string& signature,
                                           Usdc credited, const std::string& detail,
                                           Timestamp now) {
  static_assert(TopupMayGo(TopupStatus::kPending, TopupStatus::kCredited) &&
                TopupMayGo(TopupStatus::kExpired, TopupStatus::kCredited));
  return tx_.Exec(
      "UPDATE topups SET status = ?, signature = ?, credited_micro = ?, detail = ?, "
      "credited_at = ?, last_checked_at = ? WHERE id = ? AND status <> ?",
      {Text(TopupStatus::kCredited), signature, credited.micros(), detail, ToUnixMicros(now),
       ToUnixMicros(now), id, Text(TopupStatus::kCredited)});
}

std::vector<store::Migration> TopupsMigrations() {
  return {
      {14,
       "topups",
       "topups: USDC top-ups paid with Solana Pay transfer requests",
       {
           // The status literals are kTopupStatusNames' (a shipped migration is never
           // edited; topups_test checks that each is a name of the table).
           R"(CREATE TABLE topups (
                id TEXT PRIMARY KEY,
                customer_id TEXT NOT NULL REFERENCES users (id),
                amount_micro BIGINT NOT NULL CHECK (amount_micro > 0),
                reference TEXT NOT NULL UNIQUE,
                status TEXT NOT NULL CHECK (status IN ('pending', 'credited', 'expired')),
                signature TEXT,
                credited_micro BIGINT CHECK (credited_micro >= amount_micro),
                detail TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                credited_at BIGINT,
                last_checked_at BIGINT,
                CHECK ((status = 'credited') = (signature IS NOT NULL)),
                CHECK ((signature IS NULL) = (credited_micro IS NULL)),
                CHECK ((signature IS NULL) = (credited_at IS NULL))))",
           // One transaction credits at most one top-up, whatever races (PAY-6).
           "CREATE UNIQUE INDEX topups_signature ON topups (signature) WHERE signature IS NOT NULL",
           "CREATE INDEX topups_due ON topups (status, created_at)",
           "CREATE INDEX topups_customer ON topups (customer_id, created_at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::topups
