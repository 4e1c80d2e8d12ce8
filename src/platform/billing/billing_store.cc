#include "platform/billing/billing_store.h"

#include <algorithm>

#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::billing {
namespace {

// Rows per multi-row statement: far below either backend's limit on parameters.
constexpr size_t kChunk = 400;

const store::RowMapper<Transfer>& TransferRows() {
  static const auto* const m = new store::RowMapper<Transfer>({
      {"id", &Transfer::id},
      {"kind", &Transfer::kind},
      {"debit_account", &Transfer::debit_account},
      {"credit_account", &Transfer::credit_account},
      {"amount", &Transfer::amount},
      {"rental_id", &Transfer::rental_id},
      {"reference", &Transfer::reference},
      {"at", &Transfer::at},
  });
  return *m;
}

std::string Placeholders(size_t rows, std::string_view row) {
  std::string out;
  for (size_t i = 0; i < rows; ++i) {
    if (i) out += ", ";
    out += row;
  }
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> BillingStore::InsertTransfers(
    const std::vector<const Transfer*>& ts) {
  std::vector<std::string> inserted;
  for (size_t start = 0; start < ts.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ts.size() - start);
    std::vector<store::Value> params;
    params.reserve(n * 8);
    for (size_t i = start; i < start + n; ++i) {
      const Transfer& t = *ts[i];
      params.insert(params.end(),
                    {t.id, t.kind, t.debit_account, t.credit_account, t.amount.micros(),
                     t.rental_id ? store::Value(*t.rental_id) : store::Value(nullptr), t.reference,
                     ToUnixMicros(t.at)});
    }
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows, tx_.Query("INSERT INTO ledger_transfers (" + TransferRows().Names() +
                                        ") VALUES " + Placeholders(n, "(?, ?, ?, ?, ?, ?, ?, ?)") +
                                        " ON CONFLICT (id) DO NOTHING RETURNING id",
                                    params));
    for (const auto& r : rows) inserted.push_back(r["id"].Str());
  }
  return inserted;
}

StatusOr<std::vector<Transfer>> BillingStore::FindTransfers(const std::vector<std::string>& ids) {
  std::vector<Transfer> out;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT " + TransferRows().Select() +
                                                            " FROM ledger_transfers WHERE id IN (" +
                                                            Placeholders(n, "?") + ")",
                                                        params));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Transfer> found, TransferRows().Decode(rows));
    for (Transfer& t : found) out.push_back(std::move(t));
  }
  return out;
}

Status BillingStore::EnsureAccounts(const std::vector<std::string>& ids, Timestamp now) {
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params;
    params.reserve(n * 5);
    for (size_t i = start; i < start + n; ++i) {
      const std::string& id = ids[i];
      const size_t colon = id.find(':');
      params.insert(params.end(),
                    {id, id.substr(0, colon),
                     colon == std::string::npos ? std::string() : id.substr(colon + 1),
                     int64_t{MayGoNegative(id) ? 1 : 0}, ToUnixMicros(now)});
    }
    GPUNEX_RETURN_IF_ERROR(tx_.Exec("INSERT INTO ledger_accounts (id, kind, owner_id, balance, "
                                    "may_go_negative, created_at) VALUES " +
                                        Placeholders(n, "(?, ?, ?, 0, ?, ?)") +
                                        " ON CONFLICT (id) DO NOTHING",
                                    params)
                               .status());
  }
  return Status::Ok();
}

StatusOr<bool> BillingStore::AddToBalance(const std::string& account, int64_t delta) {
  GPUNEX_ASSIGN_OR_RETURN(int64_t n, tx_.Exec("UPDATE ledger_accounts SET balance = balance + ? "
                                              "WHERE id = ? AND (may_go_negative = 1 OR "
                                              "balance + ? >= 0)",
                                              {delta, account, delta}));
  return n == 1;
}

StatusOr<std::optional<int64_t>> BillingStore::Balance(std::string_view account) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT balance FROM ledger_accounts "
                                                      "WHERE id = ?",
                                                      {std::string(account)}));
  if (rows.empty()) return std::optional<int64_t>();
  return std::optional<int64_t>(rows[0]["balance"].Int());
}

StatusOr<std::map<std::string, int64_t>> BillingStore::Balances(
    const std::vector<std::string>& accounts) {
  std::map<std::string, int64_t> out;
  for (size_t start = 0; start < accounts.size(); start += kChunk) {
    const size_t n = std::min(kChunk, accounts.size() - start);
    std::vector<store::Value> params(accounts.begin() + static_cast<std::ptrdiff_t>(start),
                                     accounts.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx_.Query("SELECT id, balance FROM ledger_accounts WHERE id IN (" +
                                          Placeholders(n, "?") + ")",
                                      params));
    for (const auto& r : rows) out[r["id"].Str()] = r["balance"].Int();
  }
  return out;
}

StatusOr<Page<Transfer>> BillingStore::TransfersOf(std::string_view account, Timestamp from,
                                                   Timestamp to, const PageRequest& page) {
  store::PageQuery q;
  q.columns = TransferRows().Select();
  q.from = "FROM ledger_transfers";
  q.where = "(debit_account = ? OR credit_account = ?) AND at >= ? AND at < ?";
  q.params = {std::string(account), std::string(account), ToUnixMicros(from), ToUnixMicros(to)};
  q.key = {{"at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return TransferRows().DecodePage(rows);
}

StatusOr<int64_t> BillingStore::SignedSumAfter(std::string_view account, Timestamp at,
                                               const std::string& id) {
  const int64_t micros = ToUnixMicros(at);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(
          "SELECT COALESCE(SUM(CASE WHEN credit_account = ? THEN amount ELSE -amount END), "
          "0) AS n FROM ledger_transfers WHERE (debit_account = ? OR credit_account = ?) "
          "AND (at > ? OR (at = ? AND id > ?))",
          {std::string(account), std::string(account), std::string(account), micros, micros, id}));
  return rows[0]["n"].Int();
}

StatusOr<std::map<std::string, int64_t>> BillingStore::StoredBalances() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT id, balance FROM ledger_accounts"));
  std::map<std::string, int64_t> out;
  for (const auto& r : rows) out[r["id"].Str()] = r["balance"].Int();
  return out;
}

StatusOr<std::map<std::string, int64_t>> BillingStore::ComputedBalances() {
  std::map<std::string, int64_t> out;
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows credits,
      tx_.Query("SELECT credit_account, SUM(amount) AS amount FROM ledger_transfers "
                "GROUP BY credit_account"));
  for (const auto& r : credits) out[r["credit_account"].Str()] += r["amount"].Int();
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows debits,
      tx_.Query("SELECT debit_account, SUM(amount) AS amount FROM ledger_transfers "
                "GROUP BY debit_account"));
  for (const auto& r : debits) out[r["debit_account"].Str()] -= r["amount"].Int();
  return out;
}

StatusOr<int64_t> BillingStore::CountTransfers() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) AS n FROM ledger_transfers"));
  return rows[0]["n"].Int();
}

StatusOr<std::map<std::string, int64_t>> BillingStore::ReleasableUsage(Timestamp from,
                                                                       Timestamp until) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(
          "SELECT t.credit_account, SUM(t.amount) AS amount FROM ledger_transfers t "
          "WHERE t.kind = 'usage_provider' AND t.at > ? AND t.at <= ? AND NOT EXISTS ("
          "SELECT 1 FROM ledger_transfers r WHERE r.rental_id = t.rental_id AND "
          "r.kind = 'refund_provider' AND r.id = t.rental_id || '_rp') GROUP BY t.credit_account",
          {ToUnixMicros(from), ToUnixMicros(until)}));
  std::map<std::string, int64_t> out;
  for (const auto& r : rows) out[r["credit_account"].Str()] = r["amount"].Int();
  return out;
}

StatusOr<std::vector<RentalUsageSum>> BillingStore::UsageSums(
    const std::vector<std::string>& rental_ids, Timestamp from, Timestamp to, bool by_day) {
  // Days since the epoch: integer division in both backends.
  const std::string day = by_day ? ", at / 86400000000 AS day" : "";
  const std::string group_day = by_day ? ", at / 86400000000" : "";
  std::vector<RentalUsageSum> out;
  for (size_t start = 0; start < rental_ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, rental_ids.size() - start);
    std::vector<store::Value> params(rental_ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     rental_ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    params.insert(params.end(), {ToUnixMicros(from), ToUnixMicros(to)});
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx_.Query("SELECT rental_id, kind" + day +
                      ", SUM(amount) AS amount FROM ledger_transfers WHERE rental_id IN (" +
                      Placeholders(n, "?") +
                      ") AND at >= ? AND at < ? AND kind IN ('usage_provider', 'usage_fee', "
                      "'refund_provider', 'refund_fee') GROUP BY rental_id, kind" +
                      group_day,
                  params));
    for (const auto& r : rows) {
      out.push_back({r["rental_id"].Str(), r["kind"].Str(), by_day ? r["day"].Int() : 0,
                     Usdc::Micros(r["amount"].Int())});
    }
  }
  return out;
}

StatusOr<std::vector<ProviderBalance>> BillingStore::OwnerBalances(std::string_view kind,
                                                                   const std::string& after,
                                                                   int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT owner_id, balance FROM ledger_accounts WHERE kind = ? "
                                    "AND owner_id > ? ORDER BY owner_id LIMIT ?",
                                    {std::string(kind), after, limit}));
  std::vector<ProviderBalance> out;
  for (const auto& r : rows) out.push_back({r["owner_id"].Str(), Usdc::Micros(r["balance"].Int())});
  return out;
}

StatusOr<Timestamp> BillingStore::ReleasedUntil() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT released_until FROM ledger_release_progress "
                                    "WHERE id = 1"));
  if (rows.empty()) return FromUnixMicros(0);
  return rows[0]["released_until"].Time();
}

Status BillingStore::SetReleasedUntil(Timestamp until) {
  return tx_
      .Exec(
          "INSERT INTO ledger_release_progress (id, released_until) VALUES (1, ?) "
          "ON CONFLICT (id) DO UPDATE SET released_until = excluded.released_until",
          {ToUnixMicros(until)})
      .status();
}

std::vector<store::Migration> BillingMigrations() {
  return {
      {12,
       "billing",
       "billing: the double-entry ledger (accounts with balances, append-only transfers)",
       {
           R"(CREATE TABLE ledger_accounts (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                owner_id TEXT NOT NULL,
                balance BIGINT NOT NULL,
                may_go_negative BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                CHECK (may_go_negative = 1 OR balance >= 0)))",
           R"(CREATE TABLE ledger_transfers (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                debit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
                credit_account TEXT NOT NULL REFERENCES ledger_accounts (id),
                amount BIGINT NOT NULL CHECK (amount > 0),
                rental_id TEXT,
                reference TEXT NOT NULL,
                at BIGINT NOT NULL,
                CHECK (debit_account <> credit_account)))",
           "CREATE INDEX ledger_transfers_debit ON ledger_transfers (debit_account, at)",
           "CREATE INDEX ledger_transfers_credit ON ledger_transfers (credit_account, at)",
           // For the release of pending earnings: the usage credited to providers by time,
           // and the refunds by rental (partial indexes: fees and credits stay out of them).
           "CREATE INDEX ledger_transfers_usage ON ledger_transfers (at) "
           "WHERE kind = 'usage_provider'",
           "CREATE INDEX ledger_transfers_refunds ON ledger_transfers (rental_id) "
           "WHERE kind = 'refund_provider'",
           R"(CREATE TABLE ledger_release_progress (
                id BIGINT PRIMARY KEY,
                released_until BIGINT NOT NULL))",
       },
       {}},
      // The providers' earnings (payouts/) read the usage transfers by rental and time.
      // Version 13 (payouts) made this index before billing owned its reads; IF NOT
      // EXISTS keeps it for those databases and makes it for new ones alike.
      {18,
       "billing",
       "billing: the transfers by rental",
       {
           "CREATE INDEX IF NOT EXISTS ledger_transfers_rental ON ledger_transfers (rental_id, at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::billing
