#include "platform/payouts/payouts_store.h"

#include "common/json.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"

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

const store::RowMapper<Settings>& SettingsRows() {
  static const auto* const m = new store::RowMapper<Settings>({
      {"provider_id", &Settings::provider_id},
      {"schedule",
       [](Settings& s, const store::Cell& c) { s.schedule = kScheduleNames.ParseStored(c.Str()); }},
      {"threshold_micro", &Settings::threshold},
      {"method",
       [](Settings& s, const store::Cell& c) {
         if (!c.IsNull()) s.method = MethodFromText(c.Str());
       }},
      {"changed_at", &Settings::changed_at},
      {"hold_until", &Settings::hold_until},
      {"updated_at", &Settings::updated_at},
  });
  return *m;
}

const store::RowMapper<Run>& RunRows() {
  static const auto* const m = new store::RowMapper<Run>({
      {"id", &Run::id},
      {"schedule",
       [](Run& r, const store::Cell& c) { r.schedule = kScheduleNames.ParseStored(c.Str()); }},
      {"as_of", &Run::as_of},
      {"cutoff", &Run::cutoff},
      {"state",
       [](Run& r, const store::Cell& c) { r.state = kRunStateNames.ParseStored(c.Str()); }},
      {"eur_rate_ppm", &Run::eur_rate_ppm},
      {"created_at", &Run::created_at},
      {"finished_at", &Run::finished_at},
  });
  return *m;
}

// Selected with the alias "p" (PayoutRows().Select("p")), the run's columns from "r".
const store::RowMapper<Payout>& PayoutRows() {
  static const auto* const m = new store::RowMapper<Payout>({
      {"id", &Payout::id},
      {"run_id", &Payout::run_id},
      {"provider_id", &Payout::provider_id},
      {"schedule",
       [](Payout& p, const store::Cell& c) { p.schedule = kScheduleNames.ParseStored(c.Str()); },
       "r.schedule"},
      {"as_of", &Payout::as_of, "r.as_of"},
      {"state",
       [](Payout& p, const store::Cell& c) { p.state = kPayoutStateNames.ParseStored(c.Str()); }},
      {"amount_micro", &Payout::amount},
      {"fee_micro", &Payout::fee},
      {"method", [](Payout& p, const store::Cell& c) { p.method = MethodFromText(c.Str()); }},
      {"currency", &Payout::currency},
      {"amount_minor", &Payout::amount_minor},
      {"fx_rate_ppm", &Payout::fx_rate_ppm},
      {"signature", &Payout::signature},
      {"bank_reference", &Payout::bank_reference},
      {"failure", &Payout::failure},
      {"file_name", &Payout::file_name},
      {"created_at", &Payout::created_at},
      {"submitted_at", &Payout::submitted_at},
      {"confirmed_at", &Payout::confirmed_at},
      {"failed_at", &Payout::failed_at},
      {"covers_from", &Payout::covers_from},
      {"covers_until", &Payout::covers_until},
  });
  return *m;
}
constexpr std::string_view kPayoutFrom = "FROM payouts p JOIN payout_runs r ON r.id = p.run_id";

std::string PayoutSelect() { return "SELECT " + PayoutRows().Select("p") + " "; }

const store::RowMapper<Attempt>& AttemptRows() {
  static const auto* const m = new store::RowMapper<Attempt>({
      {"n", &Attempt::n},
      {"state",
       [](Attempt& a, const store::Cell& c) { a.state = kAttemptStateNames.ParseStored(c.Str()); }},
      {"signature", &Attempt::signature},
      {"wire", &Attempt::wire_base64},
      {"last_valid_block_height", &Attempt::last_valid_block_height},
      {"error", &Attempt::error},
      {"created_at", &Attempt::created_at},
      {"updated_at", &Attempt::updated_at},
  });
  return *m;
}

const store::RowMapper<BankFile>& FileRows(bool with_content) {
  static const auto* const without = new store::RowMapper<BankFile>({
      {"run_id", &BankFile::run_id},
      {"name", &BankFile::name},
      {"kind",
       [](BankFile& f, const store::Cell& c) { f.kind = kFileKindNames.ParseStored(c.Str()); }},
      {"currency", &BankFile::currency},
      {"lines", &BankFile::lines},
      {"total_minor", &BankFile::total_minor},
      {"sha256", &BankFile::sha256},
      {"state",
       [](BankFile& f, const store::Cell& c) { f.state = kFileStateNames.ParseStored(c.Str()); }},
      {"created_at", &BankFile::created_at},
      {"sent_at", &BankFile::sent_at},
  });
  static const auto* const with =
      new store::RowMapper<BankFile>(without->With({{"content", &BankFile::content}}));
  return with_content ? *with : *without;
}

const store::RowMapper<Skip>& SkipRows() {
  static const auto* const m = new store::RowMapper<Skip>({
      {"provider_id", &Skip::provider_id},
      {"reason",
       [](Skip& k, const store::Cell& c) { k.reason = kSkipReasonNames.ParseStored(c.Str()); }},
      {"available_micro", &Skip::available},
  });
  return *m;
}

// A name as a query parameter.
template <typename E>
store::Value Text(E value) {
  return std::string(Name(value));
}

std::string Placeholders(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += i ? ", ?" : "?";
  return out;
}

}  // namespace

std::string MethodText(const Method& m) {
  json::object o{{"kind", Name(m.kind)}};
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
  // Throws std::invalid_argument for a kind not in the table: the row decoding that
  // reads the method turns it into kInternal naming the column.
  m.kind = kMethodKindNames.ParseStored(StoredText(o, "kind"));
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
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + SettingsRows().Select() + " FROM payout_settings WHERE provider_id = ?",
                {provider_id}));
  return SettingsRows().First(rows);
}

Status PayoutsStore::PutSettings(const Settings& s) {
  return tx_
      .Exec("INSERT INTO payout_settings (" + SettingsRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO UPDATE SET "
                "schedule = excluded.schedule, threshold_micro = excluded.threshold_micro, "
                "method = excluded.method, changed_at = excluded.changed_at, "
                "hold_until = excluded.hold_until, updated_at = excluded.updated_at",
            {s.provider_id, Text(s.schedule), s.threshold.micros(),
             s.method ? store::Value(MethodText(*s.method)) : store::Value(nullptr),
             OptTime(s.changed_at), OptTime(s.hold_until), ToUnixMicros(s.updated_at)})
      .status();
}

StatusOr<std::map<std::string, Settings>> PayoutsStore::SettingsOf(
    const std::vector<std::string>& ids) {
  std::map<std::string, Settings> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx_.Query("SELECT " + SettingsRows().Select() +
                      " FROM payout_settings WHERE provider_id IN (" + Placeholders(n) + ")",
                  params));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Settings> found, SettingsRows().Decode(rows));
    for (Settings& st : found) {
      std::string id = st.provider_id;
      out.emplace(std::move(id), std::move(st));
    }
  }
  return out;
}

// --- runs

StatusOr<std::optional<Run>> PayoutsStore::FindRun(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + RunRows().Select() + " FROM payout_runs WHERE id = ?", {id}));
  return RunRows().First(rows);
}

StatusOr<std::optional<Run>> PayoutsStore::FindRunFor(Schedule schedule, std::string_view as_of) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + RunRows().Select() +
                                        " FROM payout_runs WHERE schedule = ? AND as_of = ?",
                                    {Text(schedule), std::string(as_of)}));
  return RunRows().First(rows);
}

Status PayoutsStore::InsertRun(const Run& r) {
  return tx_
      .Exec("INSERT INTO payout_runs (" + RunRows().Names() + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {r.id, Text(r.schedule), r.as_of, ToUnixMicros(r.cutoff), Text(r.state),
             OptInt(r.eur_rate_ppm), ToUnixMicros(r.created_at), OptTime(r.finished_at)})
      .status();
}

Status PayoutsStore::UpdateRun(const Run& r) {
  return tx_
      .Exec("UPDATE payout_runs SET state = ?, eur_rate_ppm = ?, finished_at = ? WHERE id = ?",
            {Text(r.state), OptInt(r.eur_rate_ppm), OptTime(r.finished_at), r.id})
      .status();
}

StatusOr<std::vector<Run>> PayoutsStore::ListRuns(int limit) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + RunRows().Select() +
                                        " FROM payout_runs ORDER BY created_at DESC, id LIMIT ?",
                                    {int64_t{limit}}));
  return RunRows().Decode(rows);
}

StatusOr<std::vector<std::string>> PayoutsStore::UnfinishedRuns() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query("SELECT id FROM payout_runs WHERE state <> ? ORDER BY created_at",
                                  {Text(RunState::kDone)}));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r["id"].Str());
  return out;
}

Status PayoutsStore::LoadCounts(Run* r) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(
          "SELECT state, COUNT(*) AS n, SUM(amount_micro) AS amount_micro FROM payouts WHERE run_id = ? "
          "GROUP BY state",
          {r->id}));
  r->counts.clear();
  for (const auto& state : kPayoutStateNames.entries) r->counts[std::string(state.second)] = 0;
  for (const auto& reason : kSkipReasonNames.entries) r->counts[std::string(reason.second)] = 0;
  int64_t total = 0;
  for (const auto& row : rows) {
    r->counts[row["state"].Str()] = row["n"].Int();
    total += row["amount_micro"].Int();
  }
  r->total = Usdc::Micros(total);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows skips,
      tx_.Query("SELECT reason, COUNT(*) AS n FROM payout_skips WHERE run_id = ? GROUP BY reason",
                {r->id}));
  for (const auto& row : skips) r->counts[row["reason"].Str()] = row["n"].Int();
  return Status::Ok();
}

// --- planning

StatusOr<Timestamp> PayoutsStore::LastCoveredUntil(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT MAX(covers_until) AS covers_until FROM payouts WHERE provider_id = ? AND "
                "state <> ?",
                {provider_id, Text(PayoutState::kFailed)}));
  if (rows.empty() || rows[0]["covers_until"].IsNull()) return FromUnixMicros(0);
  return rows[0]["covers_until"].Time();
}

Status PayoutsStore::InsertSkip(const std::string& run_id, const Skip& s) {
  return tx_
      .Exec(
          "INSERT INTO payout_skips (run_id, provider_id, reason, available_micro) "
          "VALUES (?, ?, ?, ?) ON CONFLICT (run_id, provider_id) DO NOTHING",
          {run_id, s.provider_id, Text(s.reason), s.available.micros()})
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
           Text(p.state),
           p.amount.micros(),
           p.fee.micros(),
           MethodText(p.method),
           Text(p.method.kind),
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
          {Text(p.state), MethodText(p.method), Text(p.method.kind), OptInt(p.amount_minor),
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
  return rows[0]["round"].Int();
}

StatusOr<std::optional<Payout>> PayoutsStore::FindPayout(const std::string& id,
                                                         bool with_attempts) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(PayoutSelect() + std::string(kPayoutFrom) + " WHERE p.id = ?", {id}));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Payout> p, PayoutRows().First(rows));
  if (p && with_attempts) {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows as,
                            tx_.Query("SELECT " + AttemptRows().Select() +
                                          " FROM payout_attempts WHERE payout_id = ? ORDER BY n",
                                      {id}));
    GPUNEX_ASSIGN_OR_RETURN(p->attempts, AttemptRows().Decode(as));
  }
  return p;
}

StatusOr<std::vector<Payout>> PayoutsStore::RunPayouts(const std::string& run_id, MethodKind kind,
                                                       const std::vector<PayoutState>& states,
                                                       int limit) {
  std::vector<store::Value> params{run_id, Text(kind)};
  for (PayoutState s : states) params.push_back(Text(s));
  params.emplace_back(int64_t{limit});
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query(PayoutSelect() + std::string(kPayoutFrom) +
                                      " WHERE p.run_id = ? AND p.method_kind = ? AND p.state IN (" +
                                      Placeholders(states.size()) + ") ORDER BY p.id LIMIT ?",
                                  params));
  return PayoutRows().Decode(rows);
}

StatusOr<std::vector<Payout>> PayoutsStore::AllRunPayouts(const std::string& run_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query(PayoutSelect() + std::string(kPayoutFrom) +
                                                          " WHERE p.run_id = ? ORDER BY p.id",
                                                      {run_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Payout> out, PayoutRows().Decode(rows));
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < out.size(); ++i) index[out[i].id] = i;
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows attempt_rows,
      tx_.Query("SELECT a.payout_id, " + AttemptRows().Select("a") +
                    " FROM payout_attempts a JOIN payouts p ON p.id = a.payout_id "
                    "WHERE p.run_id = ? ORDER BY a.payout_id, a.n",
                {run_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Attempt> attempts, AttemptRows().Decode(attempt_rows));
  for (size_t i = 0; i < attempts.size(); ++i) {
    auto it = index.find(attempt_rows[i]["payout_id"].Str());
    if (it != index.end()) out[it->second].attempts.push_back(std::move(attempts[i]));
  }
  return out;
}

StatusOr<Page<Payout>> PayoutsStore::ProviderPayouts(const std::string& provider_id,
                                                     const PageRequest& page) {
  store::PageQuery q;
  q.columns = PayoutRows().Select("p");
  q.from = std::string(kPayoutFrom);
  q.where = "p.provider_id = ?";
  q.params = {provider_id};
  q.key = {{"p.created_at", store::KeyColumn::Type::kInt}, {"p.id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return PayoutRows().DecodePage(rows);
}

StatusOr<std::vector<Payout>> PayoutsStore::ProviderPayoutsBetween(const std::string& provider_id,
                                                                   Timestamp from, Timestamp to) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(PayoutSelect() + std::string(kPayoutFrom) +
                    " WHERE p.provider_id = ? AND p.created_at >= ? AND p.created_at < ? "
                    "ORDER BY p.created_at, p.id",
                {provider_id, ToUnixMicros(from), ToUnixMicros(to)}));
  return PayoutRows().Decode(rows);
}

// --- attempts

Status PayoutsStore::InsertAttempt(const std::string& payout_id, const Attempt& a) {
  return tx_
      .Exec("INSERT INTO payout_attempts (payout_id, " + AttemptRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {payout_id, a.n, Text(a.state), a.signature, a.wire_base64, a.last_valid_block_height,
             a.error, ToUnixMicros(a.created_at), ToUnixMicros(a.updated_at)})
      .status();
}

Status PayoutsStore::UpdateAttempt(const std::string& payout_id, const Attempt& a) {
  return tx_
      .Exec(
          "UPDATE payout_attempts SET state = ?, error = ?, updated_at = ? "
          "WHERE payout_id = ? AND n = ?",
          {Text(a.state), a.error, ToUnixMicros(a.updated_at), payout_id, a.n})
      .status();
}

StatusOr<int64_t> PayoutsStore::FailedAttempts(const std::string& payout_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) AS n FROM payout_attempts WHERE payout_id = ? "
                                    "AND state = ?",
                                    {payout_id, Text(AttemptState::kFailed)}));
  return rows[0]["n"].Int();
}

StatusOr<std::vector<Skip>> PayoutsStore::Skips(const std::string& run_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + SkipRows().Select() +
                                        " FROM payout_skips WHERE run_id = ? ORDER BY provider_id",
                                    {run_id}));
  return SkipRows().Decode(rows);
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
        tx_.Query("SELECT a.payout_id, " + AttemptRows().Select("a") +
                      " FROM payout_attempts a WHERE a.payout_id IN (" + Placeholders(n) +
                      ") AND a.n = (SELECT MAX(b.n) FROM payout_attempts b "
                      "WHERE b.payout_id = a.payout_id)",
                  params));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Attempt> attempts, AttemptRows().Decode(rows));
    for (size_t i = 0; i < attempts.size(); ++i) {
      out[rows[i]["payout_id"].Str()] = std::move(attempts[i]);
    }
  }
  return out;
}

// --- files

Status PayoutsStore::InsertFile(const BankFile& f) {
  return tx_
      .Exec("INSERT INTO payout_files (" + FileRows(true).Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {f.run_id, f.name, Text(f.kind), f.currency, f.lines, f.total_minor, f.sha256,
             Text(f.state), ToUnixMicros(f.created_at), OptTime(f.sent_at), f.content})
      .status();
}

Status PayoutsStore::UpdateFile(const BankFile& f) {
  return tx_
      .Exec("UPDATE payout_files SET state = ?, sent_at = ? WHERE run_id = ? AND name = ?",
            {Text(f.state), OptTime(f.sent_at), f.run_id, f.name})
      .status();
}

StatusOr<std::optional<BankFile>> PayoutsStore::FindFile(const std::string& run_id,
                                                         const std::string& name,
                                                         bool with_content) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + FileRows(with_content).Select() +
                                        " FROM payout_files WHERE run_id = ? AND name = ?",
                                    {run_id, name}));
  return FileRows(with_content).First(rows);
}

StatusOr<std::vector<BankFile>> PayoutsStore::Files(const std::string& run_id, bool with_content) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + FileRows(with_content).Select() +
                                        " FROM payout_files WHERE run_id = ? ORDER BY name",
                                    {run_id}));
  return FileRows(with_content).Decode(rows);
}

StatusOr<std::vector<Payout>> PayoutsStore::FilePayouts(const std::string& run_id,
                                                        const std::string& name) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(PayoutSelect() + std::string(kPayoutFrom) +
                                        " WHERE p.run_id = ? AND p.file_name = ? ORDER BY p.id",
                                    {run_id, name}));
  return PayoutRows().Decode(rows);
}

std::vector<store::Migration> PayoutsMigrations() {
  return {
      {13,
       "payouts",
       "payouts: settings, runs, payouts with their attempts, bank files",
       {
           // The earnings read the ledger's transfers by rental. The index is billing's
           // now (its version 18 makes it where this did not); it stays here because a
           // shipped migration is never edited (store/migrations.h).
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
