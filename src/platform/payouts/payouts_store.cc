#include "platform/payouts/payouts_store.h"

#include "common/json.h"
#include "platform/store/paging.h"

namespace gpunex::platform::payouts {
namespace {

store::Value OptTime(const std::optional<Timestamp>& t) {
  return t ? store::Value(ToUnixMicros(*t)) : store::Value(nullptr);
}
store::Value OptInt(const std::optional<int64_t>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
}
store::Value OptStr(const std::optional<std::string>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
}

constexpr std::string_view kSettingsColumns =
    "provider_id, schedule, threshold_micro, method, changed_at, hold_until, updated_at";

Settings SettingsFrom(const store::Row& r) {
  Settings s;
  s.provider_id = r.Str(0);
  s.schedule = r.Str(1);
  s.threshold = Usdc::Micros(r.Int(2));
  if (!r.IsNull(3)) s.method = MethodFromText(r.Str(3));
  s.changed_at = r.OptTime(4);
  s.hold_until = r.OptTime(5);
  s.updated_at = r.Time(6);
  return s;
}

constexpr std::string_view kRunColumns =
    "id, schedule, as_of, cutoff, state, eur_rate_ppm, created_at, finished_at";

Run RunFrom(const store::Row& r) {
  Run x;
  x.id = r.Str(0);
  x.schedule = r.Str(1);
  x.as_of = r.Str(2);
  x.cutoff = r.Time(3);
  x.state = r.Str(4);
  x.eur_rate_ppm = r.OptInt(5);
  x.created_at = r.Time(6);
  x.finished_at = r.OptTime(7);
  return x;
}

constexpr std::string_view kPayoutColumns =
    "p.id, p.run_id, p.provider_id, r.schedule, r.as_of, p.state, p.amount_micro, p.fee_micro, "
    "p.method, p.currency, p.amount_minor, p.fx_rate_ppm, p.signature, p.bank_reference, "
    "p.failure, p.file_name, p.created_at, p.submitted_at, p.confirmed_at, p.failed_at, "
    "p.covers_from, p.covers_until";
constexpr std::string_view kPayoutFrom = "FROM payouts p JOIN payout_runs r ON r.id = p.run_id";

Payout PayoutFrom(const store::Row& r) {
  Payout p;
  p.id = r.Str(0);
  p.run_id = r.Str(1);
  p.provider_id = r.Str(2);
  p.schedule = r.Str(3);
  p.as_of = r.Str(4);
  p.state = r.Str(5);
  p.amount = Usdc::Micros(r.Int(6));
  p.fee = Usdc::Micros(r.Int(7));
  p.method = MethodFromText(r.Str(8));
  p.currency = r.Str(9);
  p.amount_minor = r.OptInt(10);
  p.fx_rate_ppm = r.OptInt(11);
  p.signature = r.OptStr(12);
  p.bank_reference = r.OptStr(13);
  p.failure = r.OptStr(14);
  p.file_name = r.OptStr(15);
  p.created_at = r.Time(16);
  p.submitted_at = r.OptTime(17);
  p.confirmed_at = r.OptTime(18);
  p.failed_at = r.OptTime(19);
  p.covers_from = r.Time(20);
  p.covers_until = r.Time(21);
  return p;
}

constexpr std::string_view kAttemptColumns =
    "n, state, signature, wire, last_valid_block_height, error, created_at, updated_at";

Attempt AttemptFrom(const store::Row& r, size_t o = 0) {
  Attempt a;
  a.n = r.Int(o + 0);
  a.state = r.Str(o + 1);
  a.signature = r.Str(o + 2);
  a.wire_base64 = r.Str(o + 3);
  a.last_valid_block_height = r.Int(o + 4);
  a.error = r.Str(o + 5);
  a.created_at = r.Time(o + 6);
  a.updated_at = r.Time(o + 7);
  return a;
}

constexpr std::string_view kFileColumns =
    "run_id, name, kind, currency, lines, total_minor, sha256, state, created_at, sent_at";

BankFile FileFrom(const store::Row& r, bool with_content) {
  BankFile f;
  f.run_id = r.Str(0);
  f.name = r.Str(1);
  f.kind = r.Str(2);
  f.currency = r.Str(3);
  f.lines = r.Int(4);
  f.total_minor = r.Int(5);
  f.sha256 = r.Str(6);
  f.state = r.Str(7);
  f.created_at = r.Time(8);
  f.sent_at = r.OptTime(9);
  if (with_content) f.content = r.Str(10);
  return f;
}

std::string Placeholders(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += i ? ", ?" : "?";
  return out;
}

// The usage kinds of a provider's rentals.
constexpr std::string_view kUsageKinds =
    "t.kind IN ('usage_provider', 'usage_fee', 'refund_provider', 'refund_fee')";

StatusOr<std::vector<RentalUsage>> UsageRows(store::Tx& tx, std::string_view time_condition,
                                             const std::vector<store::Value>& params, bool by_day) {
  // Days since the epoch: integer division in both backends. (Not grouped by day: a
  // constant, left out of the GROUP BY, where a bare number would name a column.)
  const std::string day = by_day ? "t.at / 86400000000" : "0";
  const std::string group_day = by_day ? ", " + day : "";
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT r.id, r.machine_id, r.gpu_model, r.gpu_ids, r.gpus, r.price_micro, " + day +
                   ", t.kind, SUM(t.amount) FROM rentals r JOIN ledger_transfers t ON "
                   "t.rental_id = r.id WHERE r.provider_id = ? AND " +
                   std::string(time_condition) + " AND " + std::string(kUsageKinds) +
                   " GROUP BY r.id, r.machine_id, r.gpu_model, r.gpu_ids, r.gpus, r.price_micro" +
                   group_day + ", t.kind ORDER BY 7, r.id",
               params));
  std::vector<RentalUsage> out;
  for (const auto& row : rows) {
    if (out.empty() || out.back().rental_id != row.Str(0) || out.back().day != row.Int(6)) {
      RentalUsage u;
      u.rental_id = row.Str(0);
      u.machine_id = row.Str(1);
      u.gpu_model = row.Str(2);
      u.gpu_ids = StoredTextList(ParseJsonOr(row.Str(3), json::array()));
      u.gpus = row.Int(4);
      u.price_micro = row.Int(5);
      u.day = row.Int(6);
      out.push_back(std::move(u));
    }
    RentalUsage& u = out.back();
    const std::string kind = row.Str(7);
    const int64_t sum = row.Int(8);
    if (kind == "usage_provider") u.provider_micro += sum;
    if (kind == "usage_fee") u.fee_micro += sum;
    if (kind == "refund_provider") u.refund_provider_micro += sum;
    if (kind == "refund_fee") u.refund_fee_micro += sum;
  }
  return out;
}

}  // namespace

std::string MethodText(const Method& m) {
  json::object o{{"kind", m.kind}};
  auto put = [&](const char* k, const std::string& v) {
    if (!v.empty()) o[k] = v;
  };
  put("wallet", m.wallet);
  put("holder", m.holder);
  put("iban", m.iban);
  put("bic", m.bic);
  put("routing_number", m.routing_number);
  put("account_number", m.account_number);
  put("account_type", m.account_type);
  return ToJsonText(o);
}

Method MethodFromText(const std::string& text) {
  const json::value v = ParseJsonOr(text, json::object());
  const json::object& o = StoredObject(v);
  Method m;
  m.kind = StoredText(o, "kind");
  m.wallet = StoredText(o, "wallet");
  m.holder = StoredText(o, "holder");
  m.iban = StoredText(o, "iban");
  m.bic = StoredText(o, "bic");
  m.routing_number = StoredText(o, "routing_number");
  m.account_number = StoredText(o, "account_number");
  m.account_type = StoredText(o, "account_type");
  return m;
}

// --- settings

StatusOr<std::optional<Settings>> PayoutsStore::FindSettings(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + std::string(kSettingsColumns) +
                                        " FROM payout_settings WHERE provider_id = ?",
                                    {provider_id}));
  if (rows.empty()) return std::optional<Settings>();
  return std::optional<Settings>(SettingsFrom(rows[0]));
}

Status PayoutsStore::PutSettings(const Settings& s) {
  return tx_
      .Exec("INSERT INTO payout_settings (" + std::string(kSettingsColumns) +
                ") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO UPDATE SET "
                "schedule = excluded.schedule, threshold_micro = excluded.threshold_micro, "
                "method = excluded.method, changed_at = excluded.changed_at, "
                "hold_until = excluded.hold_until, updated_at = excluded.updated_at",
            {s.provider_id, s.schedule, s.threshold.micros(),
             s.method ? store::Value(MethodText(*s.method)) : store::Value(nullptr),
             OptTime(s.changed_at), OptTime(s.hold_until), ToUnixMicros(s.updated_at)})
      .status();
}

// --- runs

StatusOr<std::optional<Run>> PayoutsStore::FindRun(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kRunColumns) + " FROM payout_runs WHERE id = ?", {id}));
  if (rows.empty()) return std::optional<Run>();
  return std::optional<Run>(RunFrom(rows[0]));
}

StatusOr<std::optional<Run>> PayoutsStore::FindRunFor(std::string_view schedule,
                                                      std::string_view as_of) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + std::string(kRunColumns) +
                                        " FROM payout_runs WHERE schedule = ? AND as_of = ?",
                                    {std::string(schedule), std::string(as_of)}));
  if (rows.empty()) return std::optional<Run>();
  return std::optional<Run>(RunFrom(rows[0]));
}

Status PayoutsStore::InsertRun(const Run& r) {
  return tx_
      .Exec("INSERT INTO payout_runs (" + std::string(kRunColumns) +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {r.id, r.schedule, r.as_of, ToUnixMicros(r.cutoff), r.state, OptInt(r.eur_rate_ppm),
             ToUnixMicros(r.created_at), OptTime(r.finished_at)})
      .status();
}

Status PayoutsStore::UpdateRun(const Run& r) {
  return tx_
      .Exec("UPDATE payout_runs SET state = ?, eur_rate_ppm = ?, finished_at = ? WHERE id = ?",
            {r.state, OptInt(r.eur_rate_ppm), OptTime(r.finished_at), r.id})
      .status();
}

StatusOr<std::vector<Run>> PayoutsStore::ListRuns(int limit) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + std::string(kRunColumns) +
                                        " FROM payout_runs ORDER BY created_at DESC, id LIMIT ?",
                                    {int64_t{limit}}));
  std::vector<Run> out;
  for (const auto& r : rows) out.push_back(RunFrom(r));
  return out;
}

StatusOr<std::vector<std::string>> PayoutsStore::UnfinishedRuns() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT id FROM payout_runs WHERE state <> 'done' "
                                    "ORDER BY created_at"));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.Str(0));
  return out;
}

Status PayoutsStore::LoadCounts(Run* r) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT state, COUNT(*), SUM(amount_micro) FROM payouts WHERE run_id = ? "
                "GROUP BY state",
                {r->id}));
  r->counts.clear();
  for (std::string_view s : {kPlanned, kWaitingFunds, kSubmitted, kConfirmed, kFailed})
    r->counts[std::string(s)] = 0;
  for (std::string_view s : {"carried_over", "held", "no_method"}) r->counts[std::string(s)] = 0;
  int64_t total = 0;
  for (const auto& row : rows) {
    r->counts[row.Str(0)] = row.Int(1);
    total += row.Int(2);
  }
  r->total = Usdc::Micros(total);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows skips,
      tx_.Query("SELECT reason, COUNT(*) FROM payout_skips WHERE run_id = ? GROUP BY reason",
                {r->id}));
  for (const auto& row : skips) r->counts[row.Str(0)] = row.Int(1);
  return Status::Ok();
}

// --- planning

StatusOr<std::vector<PayoutsStore::Candidate>> PayoutsStore::Candidates(std::string_view schedule,
                                                                        const std::string& after,
                                                                        int limit) {
  // Every provider with an available balance account; their settings when they have
  // some (none: weekly, without a method).
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT a.owner_id, a.balance, s.provider_id, s.schedule, s.threshold_micro, "
                "s.method, s.changed_at, s.hold_until, s.updated_at FROM ledger_accounts a "
                "LEFT JOIN payout_settings s ON s.provider_id = a.owner_id "
                "WHERE a.kind = 'provider_available' AND a.owner_id > ? AND "
                "COALESCE(s.schedule, 'weekly') = ? ORDER BY a.owner_id LIMIT ?",
                {after, std::string(schedule), int64_t{limit}}));
  std::vector<Candidate> out;
  for (const auto& r : rows) {
    Candidate c;
    c.provider_id = r.Str(0);
    c.available_micro = r.Int(1);
    if (!r.IsNull(2)) {
      Settings s;
      s.provider_id = r.Str(2);
      s.schedule = r.Str(3);
      s.threshold = Usdc::Micros(r.Int(4));
      if (!r.IsNull(5)) s.method = MethodFromText(r.Str(5));
      s.changed_at = r.OptTime(6);
      s.hold_until = r.OptTime(7);
      s.updated_at = r.Time(8);
      c.settings = std::move(s);
    }
    out.push_back(std::move(c));
  }
  return out;
}

StatusOr<Timestamp> PayoutsStore::LastCoveredUntil(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT MAX(covers_until) FROM payouts WHERE provider_id = ? AND state <> 'failed'",
                {provider_id}));
  if (rows.empty() || rows[0].IsNull(0)) return FromUnixMicros(0);
  return rows[0].Time(0);
}

Status PayoutsStore::InsertSkip(const std::string& run_id, const Skip& s) {
  return tx_
      .Exec(
          "INSERT INTO payout_skips (run_id, provider_id, reason, available_micro) "
          "VALUES (?, ?, ?, ?) ON CONFLICT (run_id, provider_id) DO NOTHING",
          {run_id, s.provider_id, s.reason, s.available.micros()})
      .status();
}

// --- payouts

Status PayoutsStore::InsertPayout(const Payout& p, int64_t round) {
  return tx_
      .Exec(
          "INSERT INTO payouts (id, run_id, provider_id, state, amount_micro, fee_micro, "
          "method, method_kind, currency, amount_minor, fx_rate_ppm, signature, bank_reference, "
          "failure, file_name, round, created_at, submitted_at, confirmed_at, failed_at, "
          "covers_from, covers_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
          "?, ?, ?, ?, ?, ?)",
          {p.id,
           p.run_id,
           p.provider_id,
           p.state,
           p.amount.micros(),
           p.fee.micros(),
           MethodText(p.method),
           p.method.kind,
           p.currency,
           OptInt(p.amount_minor),
           OptInt(p.fx_rate_ppm),
           OptStr(p.signature),
           OptStr(p.bank_reference),
           OptStr(p.failure),
           OptStr(p.file_name),
           round,
           ToUnixMicros(p.created_at),
           OptTime(p.submitted_at),
           OptTime(p.confirmed_at),
           OptTime(p.failed_at),
           ToUnixMicros(p.covers_from),
           ToUnixMicros(p.covers_until)})
      .status();
}

Status PayoutsStore::UpdatePayout(const Payout& p) {
  return tx_
      .Exec(
          "UPDATE payouts SET state = ?, method = ?, method_kind = ?, amount_minor = ?, "
          "fx_rate_ppm = ?, signature = ?, bank_reference = ?, failure = ?, file_name = ?, "
          "submitted_at = ?, confirmed_at = ?, failed_at = ? WHERE id = ?",
          {p.state, MethodText(p.method), p.method.kind, OptInt(p.amount_minor),
           OptInt(p.fx_rate_ppm), OptStr(p.signature), OptStr(p.bank_reference), OptStr(p.failure),
           OptStr(p.file_name), OptTime(p.submitted_at), OptTime(p.confirmed_at),
           OptTime(p.failed_at), p.id})
      .status();
}

Status PayoutsStore::SetRound(const std::string& payout_id, int64_t round) {
  return tx_.Exec("UPDATE payouts SET round = ? WHERE id = ?", {round, payout_id}).status();
}

StatusOr<int64_t> PayoutsStore::Round(const std::string& payout_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT round FROM payouts WHERE id = ?", {payout_id}));
  if (rows.empty()) return NotFound("no payout " + payout_id);
  return rows[0].Int(0);
}

StatusOr<std::optional<Payout>> PayoutsStore::FindPayout(const std::string& id,
                                                         bool with_attempts) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + std::string(kPayoutColumns) + " " +
                                        std::string(kPayoutFrom) + " WHERE p.id = ?",
                                    {id}));
  if (rows.empty()) return std::optional<Payout>();
  Payout p = PayoutFrom(rows[0]);
  if (with_attempts) {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows as,
                            tx_.Query("SELECT " + std::string(kAttemptColumns) +
                                          " FROM payout_attempts WHERE payout_id = ? ORDER BY n",
                                      {id}));
    for (const auto& a : as) p.attempts.push_back(AttemptFrom(a));
  }
  return std::optional<Payout>(std::move(p));
}

StatusOr<std::vector<Payout>> PayoutsStore::RunPayouts(const std::string& run_id,
                                                       std::string_view kind,
                                                       const std::vector<std::string_view>& states,
                                                       int limit) {
  std::vector<store::Value> params{run_id, std::string(kind)};
  for (auto s : states) params.emplace_back(std::string(s));
  params.emplace_back(int64_t{limit});
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kPayoutColumns) + " " + std::string(kPayoutFrom) +
                    " WHERE p.run_id = ? AND p.method_kind = ? AND p.state IN (" +
                    Placeholders(states.size()) + ") ORDER BY p.id LIMIT ?",
                params));
  std::vector<Payout> out;
  for (const auto& r : rows) out.push_back(PayoutFrom(r));
  return out;
}

StatusOr<std::vector<Payout>> PayoutsStore::AllRunPayouts(const std::string& run_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kPayoutColumns) + ", u.name " + std::string(kPayoutFrom) +
                    " JOIN users u ON u.id = p.provider_id WHERE p.run_id = ? ORDER BY p.id",
                {run_id}));
  std::vector<Payout> out;
  std::map<std::string, size_t> index;
  for (const auto& r : rows) {
    index[r.Str(0)] = out.size();
    out.push_back(PayoutFrom(r));
    out.back().provider_name = r.Str(22);
  }
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows attempts,
      tx_.Query("SELECT a.payout_id, a.n, a.state, a.signature, a.wire, "
                "a.last_valid_block_height, a.error, a.created_at, a.updated_at "
                "FROM payout_attempts a JOIN payouts p ON p.id = a.payout_id "
                "WHERE p.run_id = ? ORDER BY a.payout_id, a.n",
                {run_id}));
  for (const auto& r : attempts) {
    auto it = index.find(r.Str(0));
    if (it != index.end()) out[it->second].attempts.push_back(AttemptFrom(r, 1));
  }
  return out;
}

StatusOr<Page<Payout>> PayoutsStore::ProviderPayouts(const std::string& provider_id,
                                                     const PageRequest& page) {
  store::PageQuery q;
  q.columns = std::string(kPayoutColumns);
  q.from = std::string(kPayoutFrom);
  q.where = "p.provider_id = ?";
  q.params = {provider_id};
  q.key = {{"p.created_at", store::KeyColumn::Type::kInt}, {"p.id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  Page<Payout> out;
  out.next = rows.next;
  for (const auto& r : rows.items) out.items.push_back(PayoutFrom(r));
  return out;
}

StatusOr<std::vector<Payout>> PayoutsStore::ProviderPayoutsBetween(const std::string& provider_id,
                                                                   Timestamp from, Timestamp to) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kPayoutColumns) + " " + std::string(kPayoutFrom) +
                    " WHERE p.provider_id = ? AND p.created_at >= ? AND p.created_at < ? "
                    "ORDER BY p.created_at, p.id",
                {provider_id, ToUnixMicros(from), ToUnixMicros(to)}));
  std::vector<Payout> out;
  for (const auto& r : rows) out.push_back(PayoutFrom(r));
  return out;
}

// --- attempts

Status PayoutsStore::InsertAttempt(const std::string& payout_id, const Attempt& a) {
  return tx_
      .Exec("INSERT INTO payout_attempts (payout_id, " + std::string(kAttemptColumns) +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {payout_id, a.n, a.state, a.signature, a.wire_base64, a.last_valid_block_height,
             a.error, ToUnixMicros(a.created_at), ToUnixMicros(a.updated_at)})
      .status();
}

Status PayoutsStore::UpdateAttempt(const std::string& payout_id, const Attempt& a) {
  return tx_
      .Exec(
          "UPDATE payout_attempts SET state = ?, error = ?, updated_at = ? "
          "WHERE payout_id = ? AND n = ?",
          {a.state, a.error, ToUnixMicros(a.updated_at), payout_id, a.n})
      .status();
}

StatusOr<int64_t> PayoutsStore::FailedAttempts(const std::string& payout_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) FROM payout_attempts WHERE payout_id = ? AND "
                                    "state = 'failed'",
                                    {payout_id}));
  return rows[0].Int(0);
}

StatusOr<std::vector<Skip>> PayoutsStore::Skips(const std::string& run_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT provider_id, reason, available_micro FROM payout_skips "
                                    "WHERE run_id = ? ORDER BY provider_id",
                                    {run_id}));
  std::vector<Skip> out;
  for (const auto& r : rows) out.push_back({r.Str(0), r.Str(1), Usdc::Micros(r.Int(2))});
  return out;
}

StatusOr<std::map<std::string, Attempt>> PayoutsStore::LatestAttempts(
    const std::vector<std::string>& ids) {
  std::map<std::string, Attempt> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx_.Query("SELECT a.payout_id, " + std::string(kAttemptColumns) +
                      " FROM payout_attempts a WHERE a.payout_id IN (" + Placeholders(n) +
                      ") AND a.n = (SELECT MAX(b.n) FROM payout_attempts b "
                      "WHERE b.payout_id = a.payout_id)",
                  params));
    for (const auto& r : rows) out[r.Str(0)] = AttemptFrom(r, 1);
  }
  return out;
}

// --- files

Status PayoutsStore::InsertFile(const BankFile& f) {
  return tx_
      .Exec("INSERT INTO payout_files (" + std::string(kFileColumns) +
                ", content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {f.run_id, f.name, f.kind, f.currency, f.lines, f.total_minor, f.sha256, f.state,
             ToUnixMicros(f.created_at), OptTime(f.sent_at), f.content})
      .status();
}

Status PayoutsStore::UpdateFile(const BankFile& f) {
  return tx_
      .Exec("UPDATE payout_files SET state = ?, sent_at = ? WHERE run_id = ? AND name = ?",
            {f.state, OptTime(f.sent_at), f.run_id, f.name})
      .status();
}

StatusOr<std::optional<BankFile>> PayoutsStore::FindFile(const std::string& run_id,
                                                         const std::string& name,
                                                         bool with_content) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kFileColumns) + (with_content ? ", content" : "") +
                    " FROM payout_files WHERE run_id = ? AND name = ?",
                {run_id, name}));
  if (rows.empty()) return std::optional<BankFile>();
  return std::optional<BankFile>(FileFrom(rows[0], with_content));
}

StatusOr<std::vector<BankFile>> PayoutsStore::Files(const std::string& run_id, bool with_content) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kFileColumns) + (with_content ? ", content" : "") +
                    " FROM payout_files WHERE run_id = ? ORDER BY name",
                {run_id}));
  std::vector<BankFile> out;
  for (const auto& r : rows) out.push_back(FileFrom(r, with_content));
  return out;
}

StatusOr<std::vector<Payout>> PayoutsStore::FilePayouts(const std::string& run_id,
                                                        const std::string& name) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kPayoutColumns) + " " + std::string(kPayoutFrom) +
                    " WHERE p.run_id = ? AND p.file_name = ? ORDER BY p.id",
                {run_id, name}));
  std::vector<Payout> out;
  for (const auto& r : rows) out.push_back(PayoutFrom(r));
  return out;
}

// --- earnings

StatusOr<std::vector<RentalUsage>> PayoutsStore::Usage(const std::string& provider_id,
                                                       Timestamp from, Timestamp to, bool by_day) {
  return UsageRows(tx_, "t.at >= ? AND t.at < ?",
                   {provider_id, ToUnixMicros(from), ToUnixMicros(to)}, by_day);
}

StatusOr<std::vector<RentalUsage>> PayoutsStore::UsageCovered(const std::string& provider_id,
                                                              Timestamp from, Timestamp until) {
  return UsageRows(tx_, "t.at > ? AND t.at <= ?",
                   {provider_id, ToUnixMicros(from), ToUnixMicros(until)}, false);
}

std::vector<store::Migration> PayoutsMigrations() {
  return {
      {13,
       "payouts",
       "payouts: settings, runs, payouts with their attempts, bank files",
       {
           // The earnings read the ledger's transfers by rental.
           "CREATE INDEX ledger_transfers_rental ON ledger_transfers (rental_id, at)",
           R"(CREATE TABLE payout_settings (
                provider_id TEXT PRIMARY KEY REFERENCES users (id),
                schedule TEXT NOT NULL,
                threshold_micro BIGINT NOT NULL CHECK (threshold_micro > 0),
                method TEXT,
                changed_at BIGINT,
                hold_until BIGINT,
                updated_at BIGINT NOT NULL))",
           R"(CREATE TABLE payout_runs (
                id TEXT PRIMARY KEY,
                schedule TEXT NOT NULL,
                as_of TEXT NOT NULL,
                cutoff BIGINT NOT NULL,
                state TEXT NOT NULL,
                eur_rate_ppm BIGINT,
                created_at BIGINT NOT NULL,
                finished_at BIGINT,
                UNIQUE (schedule, as_of)))",
           R"(CREATE TABLE payouts (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL REFERENCES payout_runs (id),
                provider_id TEXT NOT NULL REFERENCES users (id),
                state TEXT NOT NULL,
                amount_micro BIGINT NOT NULL CHECK (amount_micro > 0),
                fee_micro BIGINT NOT NULL CHECK (fee_micro >= 0 AND fee_micro < amount_micro),
                method TEXT NOT NULL,
                method_kind TEXT NOT NULL,
                currency TEXT NOT NULL,
                amount_minor BIGINT,
                fx_rate_ppm BIGINT,
                signature TEXT,
                bank_reference TEXT,
                failure TEXT,
                file_name TEXT,
                round BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                submitted_at BIGINT,
                confirmed_at BIGINT,
                failed_at BIGINT,
                covers_from BIGINT NOT NULL,
                covers_until BIGINT NOT NULL,
                UNIQUE (run_id, provider_id)))",
           "CREATE INDEX payouts_provider ON payouts (provider_id, created_at)",
           "CREATE INDEX payouts_run ON payouts (run_id, method_kind, state)",
           R"(CREATE TABLE payout_attempts (
                payout_id TEXT NOT NULL REFERENCES payouts (id),
                n BIGINT NOT NULL,
                state TEXT NOT NULL,
                signature TEXT NOT NULL,
                wire TEXT NOT NULL,
                last_valid_block_height BIGINT NOT NULL,
                error TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (payout_id, n)))",
           // A signature is one transaction: never recorded for two payouts.
           "CREATE UNIQUE INDEX payout_attempts_signature ON payout_attempts (signature) "
           "WHERE signature <> ''",
           R"(CREATE TABLE payout_skips (
                run_id TEXT NOT NULL REFERENCES payout_runs (id),
                provider_id TEXT NOT NULL,
                reason TEXT NOT NULL,
                available_micro BIGINT NOT NULL,
                PRIMARY KEY (run_id, provider_id)))",
           R"(CREATE TABLE payout_files (
                run_id TEXT NOT NULL REFERENCES payout_runs (id),
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                currency TEXT NOT NULL,
                lines BIGINT NOT NULL,
                total_minor BIGINT NOT NULL,
                sha256 TEXT NOT NULL,
                state TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                sent_at BIGINT,
                PRIMARY KEY (run_id, name)))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::payouts
