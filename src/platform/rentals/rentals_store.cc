#include "platform/rentals/rentals_store.h"

#include <type_traits>

#include "common/json.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::rentals {
namespace {

using store::InList;

template <typename E>
requires std::is_enum_v<E> store::Value Opt(const std::optional<E>& v) {
  return v ? store::Value(std::string(Name(*v))) : store::Value(nullptr);
}
store::Value Opt(const std::optional<int64_t>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
}
store::Value Opt(const std::optional<Timestamp>& v) {
  return v ? store::Value(ToUnixMicros(*v)) : store::Value(nullptr);
}
store::Value Opt(const std::optional<Usdc>& v) {
  return v ? store::Value(v->micros()) : store::Value(nullptr);
}

std::string TextList(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return ToJsonText(a);
}

std::vector<std::string> TextListFrom(const store::Cell& c) {
  return StoredTextList(ParseJsonOr(c.Str(), json::array()));
}

// The declared ports as stored (written valid, read leniently).
std::vector<protocol::WorkloadPort> PortsFrom(const std::string& text) {
  const json::object o{{"ports", ParseJsonOr(text, json::array())}};
  FieldErrors ignored;
  return protocol::ReadPorts(JsonReader(o, "", &ignored), "ports", /*with_public=*/true);
}

const store::RowMapper<Rental>& RentalRows() {
  static const auto* const m = new store::RowMapper<Rental>({
      {"id", &Rental::id},
      {"customer_id", &Rental::customer_id},
      {"offer_id", &Rental::offer_id},
      {"machine_id", &Rental::machine_id},
      {"provider_id", &Rental::provider_id},
      {"gpu_model", &Rental::gpu_model},
      {"gpu_ids", [](Rental& x, const store::Cell& c) { x.gpu_ids = TextListFrom(c); }},
      {"gpus", &Rental::gpus},
      {"workload_id", &Rental::workload_id},
      {"price_micro", &Rental::price},
      {"fee_bps", &Rental::fee_bps},
      {"state",
       [](Rental& r, const store::Cell& c) { r.state = kRentalStateNames.ParseStored(c.Str()); }},
      {"end_reason",
       [](Rental& r, const store::Cell& c) {
         if (!c.IsNull()) r.end_reason = kEndReasonNames.ParseStored(c.Str());
       }},
      {"end_party",
       [](Rental& r, const store::Cell& c) {
         if (!c.IsNull()) r.end_party = fleet::kEndPartyNames.ParseStored(c.Str());
       }},
      {"exit_code", &Rental::exit_code},
      {"detail", &Rental::detail},
      {"created_at", &Rental::created_at},
      {"running_at", &Rental::running_at},
      {"billing_end_at", &Rental::billing_end_at},
      {"ended_at", &Rental::ended_at},
      {"billed_seconds", &Rental::billed_seconds},
      {"charged_micro", &Rental::charged},
      {"fee_micro", &Rental::fee},
      {"provider_micro", &Rental::provider_part},
      {"refunded_micro", &Rental::refunded},
      {"max_cost_micro", &Rental::max_cost},
      {"max_duration_s", &Rental::max_duration_s},
      {"next_meter_at", &Rental::next_meter_at},
      {"image", &Rental::image},
      {"command", [](Rental& x, const store::Cell& c) { x.command = TextListFrom(c); }},
      {"ports", [](Rental& x, const store::Cell& c) { x.ports = PortsFrom(c.Str()); }},
      {"region", &Rental::region},
      {"country", &Rental::country},
      {"idempotency_key", &Rental::idempotency_key},
      {"job_id", &Rental::job_id},
      {"updated_at", &Rental::updated_at},
      {"gpu_name", &Rental::gpu_name},
  });
  return *m;
}

// The rentals' columns without the lists and the image, which metering does not need.
const std::string& MeterColumns() {
  static const auto* const s = new std::string(RentalRows().Select(
      "", {{"gpu_ids", "'[]'"}, {"image", "''"}, {"command", "'[]'"}, {"ports", "'[]'"}}));
  return *s;
}

StatusOr<std::vector<Rental>> Rentals(store::Tx& tx, const std::string& where,
                                      const std::vector<store::Value>& params,
                                      const std::string& columns = RentalRows().Select()) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT " + columns + " FROM rentals WHERE " + where, params));
  return RentalRows().Decode(rows);
}

StatusOr<std::optional<Rental>> One(store::Tx& tx, const std::string& where,
                                    const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> rs, Rentals(tx, where, params));
  if (rs.empty()) return std::optional<Rental>();
  return std::optional<Rental>(std::move(rs[0]));
}

// --- jobs

std::string ConstraintsJson(const Job& j) {
  const JobConstraints& c = j.constraints;
  json::object o{{"gpu_models", ParseJsonOr(TextList(c.gpu_models), json::array())},
                 {"gpus", c.gpus},
                 {"max_price_micro", c.max_price.micros()},
                 {"region", c.region},
                 {"country", c.country}};
  if (c.min_reliability) o["min_reliability"] = *c.min_reliability;
  if (c.min_performance) o["min_performance"] = *c.min_performance;
  if (c.min_vram_gb) o["min_vram_gb"] = *c.min_vram_gb;
  return ToJsonText(o);
}

std::string ContainerJson(const Job& j) {
  json::object env;
  for (const auto& [k, v] : j.container.env) env[k] = v;
  return ToJsonText(
      json::object{{"image", j.container.image},
                   {"command", ParseJsonOr(TextList(j.container.command), json::array())},
                   {"env", std::move(env)},
                   {"ports", protocol::PortsJson(j.container.ports, /*with_public=*/true)}});
}

std::optional<double> OptNumber(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_number()) return std::nullopt;
  return it->value().to_number<double>();
}

JobConstraints ConstraintsFrom(const std::string& text) {
  JobConstraints out;
  const json::value cv = ParseJsonOr(text, json::object());
  const json::object& c = StoredObject(cv);
  if (auto it = c.find("gpu_models"); it != c.end()) out.gpu_models = StoredTextList(it->value());
  out.gpus = StoredInt(c, "gpus");
  out.max_price = Usdc::Micros(StoredInt(c, "max_price_micro"));
  out.region = StoredText(c, "region");
  out.country = StoredText(c, "country");
  out.min_reliability = OptNumber(c, "min_reliability");
  out.min_performance = OptNumber(c, "min_performance");
  out.min_vram_gb = OptNumber(c, "min_vram_gb");
  return out;
}

ContainerSpec ContainerFrom(const std::string& text) {
  ContainerSpec out;
  const json::value kv = ParseJsonOr(text, json::object());
  const json::object& k = StoredObject(kv);
  out.image = StoredText(k, "image");
  if (auto it = k.find("command"); it != k.end()) out.command = StoredTextList(it->value());
  if (auto it = k.find("env"); it != k.end() && it->value().is_object()) {
    for (const auto& e : it->value().as_object()) {
      if (e.value().is_string()) out.env.emplace_back(e.key(), e.value().as_string());
    }
  }
  FieldErrors ignored;  // written valid
  out.ports = protocol::ReadPorts(JsonReader(k, "", &ignored), "ports", /*with_public=*/true);
  return out;
}

const store::RowMapper<Job>& JobRows() {
  static const auto* const m = new store::RowMapper<Job>({
      {"id", &Job::id},
      {"customer_id", &Job::customer_id},
      {"constraints",
       [](Job& j, const store::Cell& c) { j.constraints = ConstraintsFrom(c.Str()); }},
      {"container", [](Job& j, const store::Cell& c) { j.container = ContainerFrom(c.Str()); }},
      {"max_duration_s", &Job::max_duration_s},
      {"max_cost_micro", &Job::max_cost},
      {"state",
       [](Job& j, const store::Cell& c) { j.state = kJobStateNames.ParseStored(c.Str()); }},
      {"rental_id", &Job::rental_id},
      {"offer_id", &Job::offer_id},
      {"detail", &Job::detail},
      {"idempotency_key", &Job::idempotency_key},
      {"created_at", &Job::created_at},
      {"deadline_at", &Job::deadline_at},
      {"placed_at", &Job::placed_at},
      {"ended_at", &Job::ended_at},
      {"updated_at", &Job::updated_at},
  });
  return *m;
}

const store::RowMapper<RentalsStore::OpenTerms>& OpenTermsRows() {
  using T = RentalsStore::OpenTerms;
  static const auto* const m = new store::RowMapper<T>({
      {"price_micro", &T::price},
      {"gpus", &T::gpus},
      {"max_duration_s", &T::max_duration_s},
      {"max_cost_micro", &T::max_cost},
      {"charged_micro", &T::charged},
  });
  return *m;
}

}  // namespace

Status RentalsStore::Insert(const Rental& r) {
  return tx_
      .Exec("INSERT INTO rentals (" + RentalRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {r.id,
             r.customer_id,
             r.offer_id,
             r.machine_id,
             r.provider_id,
             r.gpu_model,
             TextList(r.gpu_ids),
             r.gpus,
             r.workload_id,
             r.price.micros(),
             r.fee_bps,
             std::string(Name(r.state)),
             Opt(r.end_reason),
             Opt(r.end_party),
             Opt(r.exit_code),
             r.detail,
             ToUnixMicros(r.created_at),
             Opt(r.running_at),
             Opt(r.billing_end_at),
             Opt(r.ended_at),
             r.billed_seconds,
             r.charged.micros(),
             r.fee.micros(),
             r.provider_part.micros(),
             r.refunded.micros(),
             Opt(r.max_cost),
             Opt(r.max_duration_s),
             ToUnixMicros(r.next_meter_at),
             r.image,
             TextList(r.command),
             ToJsonText(protocol::PortsJson(r.ports, /*with_public=*/true)),
             r.region,
             r.country,
             r.idempotency_key,
             r.job_id,
             ToUnixMicros(r.updated_at),
             r.gpu_name})
      .status();
}

Status RentalsStore::Update(const Rental& r) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec(
          "UPDATE rentals SET state = ?, end_reason = ?, end_party = ?, exit_code = ?, "
          "detail = ?, running_at = ?, billing_end_at = ?, ended_at = ?, billed_seconds = ?, "
          "charged_micro = ?, fee_micro = ?, provider_micro = ?, refunded_micro = ?, "
          "next_meter_at = ?, updated_at = ? WHERE id = ?",
          {std::string(Name(r.state)), Opt(r.end_reason), Opt(r.end_party), Opt(r.exit_code),
           r.detail, Opt(r.running_at), Opt(r.billing_end_at), Opt(r.ended_at), r.billed_seconds,
           r.charged.micros(), r.fee.micros(), r.provider_part.micros(), r.refunded.micros(),
           ToUnixMicros(r.next_meter_at), ToUnixMicros(r.updated_at), r.id}));
  if (n != 1) return Internal("rental " + r.id + " is not stored");
  return Status::Ok();
}

Status RentalsStore::UpdateMetered(const std::vector<Rental>& rs) {
  constexpr size_t kChunk = 200;
  for (size_t start = 0; start < rs.size(); start += kChunk) {
    const size_t n = std::min(kChunk, rs.size() - start);
    std::string values;
    std::vector<store::Value> params;
    params.reserve(n * 7);
    for (size_t i = start; i < start + n; ++i) {
      const Rental& r = rs[i];
      values += i == start ? "" : ", ";
      values +=
          "(?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), "
          "CAST(? AS BIGINT), CAST(? AS BIGINT))";
      params.insert(params.end(), {r.id, r.billed_seconds, r.charged.micros(), r.fee.micros(),
                                   r.provider_part.micros(), ToUnixMicros(r.next_meter_at),
                                   ToUnixMicros(r.updated_at)});
    }
    // VALUES columns are column1, column2, ... on both backends.
    GPUNEX_ASSIGN_OR_RETURN(
        int64_t changed,
        tx_.Exec("UPDATE rentals SET billed_seconds = v.column2, charged_micro = v.column3, "
                 "fee_micro = v.column4, provider_micro = v.column5, next_meter_at = v.column6, "
                 "updated_at = v.column7 FROM (VALUES " +
                     values + ") AS v WHERE rentals.id = v.column1",
                 params));
    if (changed != static_cast<int64_t>(n)) return Internal("metered rentals are not stored");
  }
  return Status::Ok();
}

StatusOr<std::optional<Rental>> RentalsStore::Find(const std::string& id) {
  return One(tx_, "id = ?", {id});
}

StatusOr<std::optional<Rental>> RentalsStore::FindByKey(const std::string& customer_id,
                                                        const std::string& key) {
  return One(tx_, "customer_id = ? AND idempotency_key = ?", {customer_id, key});
}

StatusOr<std::optional<Rental>> RentalsStore::FindByWorkload(const std::string& workload_id) {
  return One(tx_, "workload_id = ?", {workload_id});
}

StatusOr<Page<Rental>> RentalsStore::List(const std::string& customer_id,
                                          const std::string& provider_id, const std::string& state,
                                          const PageRequest& page) {
  store::PageQuery q;
  q.columns = RentalRows().Select();
  q.from = "FROM rentals";
  std::vector<std::string> conds;
  if (!customer_id.empty()) {
    conds.push_back("customer_id = ?");
    q.params.emplace_back(customer_id);
  }
  if (!provider_id.empty()) {
    conds.push_back("provider_id = ?");
    q.params.emplace_back(provider_id);
  }
  if (state == "active") conds.push_back("state <> 'ended'");
  if (!state.empty() && state != "active") {
    conds.push_back("state = ?");
    q.params.emplace_back(state);
  }
  for (size_t i = 0; i < conds.size(); ++i) q.where += (i ? " AND " : "") + conds[i];
  q.key = {{"created_at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return RentalRows().DecodePage(rows);
}

StatusOr<std::vector<std::string>> RentalsStore::IdsOfProvider(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT id FROM rentals WHERE provider_id = ?", {provider_id}));
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r["id"].Str());
  return out;
}

StatusOr<std::vector<Rental>> RentalsStore::FindMany(const std::vector<std::string>& ids) {
  static const auto* const columns =
      new std::string(RentalRows().Select("", {{"image", "''"}, {"command", "'[]'"}}));
  std::vector<Rental> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::vector<store::Value> params(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> rs,
                            Rentals(tx_, "id IN (" + InList(n) + ")", params, *columns));
    for (auto& r : rs) out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<std::string>> RentalsStore::CustomersDue(Timestamp now, int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT DISTINCT customer_id FROM rentals WHERE state = 'running' AND "
                "next_meter_at <= ? LIMIT ?",
                {ToUnixMicros(now), limit}));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r["customer_id"].Str());
  return out;
}

StatusOr<std::vector<Rental>> RentalsStore::RunningOf(
    const std::vector<std::string>& customer_ids) {
  std::vector<Rental> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < customer_ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, customer_ids.size() - start);
    std::vector<store::Value> params(customer_ids.begin() + static_cast<std::ptrdiff_t>(start),
                                     customer_ids.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_ASSIGN_OR_RETURN(
        std::vector<Rental> rs,
        Rentals(tx_,
                "state = 'running' AND customer_id IN (" + InList(n) + ") ORDER BY customer_id, id",
                params, MeterColumns()));
    for (auto& r : rs) out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<RentalsStore::OpenTerms>> RentalsStore::OpenOf(
    const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + OpenTermsRows().Select() +
                    " FROM rentals WHERE customer_id = ? AND state IN ('pending', 'starting', "
                    "'running')",
                {customer_id}));
  return OpenTermsRows().Decode(rows);
}

StatusOr<std::vector<std::string>> RentalsStore::ActiveMachines() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT DISTINCT machine_id FROM rentals WHERE state <> 'ended'"));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r["machine_id"].Str());
  return out;
}

StatusOr<std::vector<Rental>> RentalsStore::ActiveOnMachine(const std::string& machine_id) {
  return Rentals(tx_, "machine_id = ? AND state <> 'ended' ORDER BY id", {machine_id});
}

StatusOr<std::vector<Rental>> RentalsStore::RanBetween(const std::string& gpu_model,
                                                       const std::string& region, Timestamp from,
                                                       Timestamp to) {
  std::string where =
      "gpu_model = ? AND running_at IS NOT NULL AND running_at < ? AND "
      "(billing_end_at IS NULL OR billing_end_at > ?)";
  std::vector<store::Value> params{gpu_model, ToUnixMicros(to), ToUnixMicros(from)};
  if (!region.empty()) {
    where += " AND region = ?";
    params.emplace_back(region);
  }
  return Rentals(tx_, where, params);
}

StatusOr<std::optional<Timestamp>> RentalsStore::AlertedAt(const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT alerted_at FROM balance_alerts "
                                                      "WHERE customer_id = ?",
                                                      {customer_id}));
  if (rows.empty()) return std::optional<Timestamp>();
  return std::optional<Timestamp>(rows[0]["alerted_at"].Time());
}

Status RentalsStore::SetAlerted(const std::string& customer_id, std::optional<Timestamp> at) {
  if (!at) {
    return tx_.Exec("DELETE FROM balance_alerts WHERE customer_id = ?", {customer_id}).status();
  }
  return tx_
      .Exec(
          "INSERT INTO balance_alerts (customer_id, alerted_at) VALUES (?, ?) "
          "ON CONFLICT (customer_id) DO UPDATE SET alerted_at = excluded.alerted_at",
          {customer_id, ToUnixMicros(*at)})
      .status();
}

Status RentalsStore::InsertJob(const Job& j) {
  return tx_
      .Exec("INSERT INTO jobs (" + JobRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {j.id, j.customer_id, ConstraintsJson(j), ContainerJson(j), Opt(j.max_duration_s),
             Opt(j.max_cost), std::string(Name(j.state)), j.rental_id, j.offer_id, j.detail,
             j.idempotency_key, ToUnixMicros(j.created_at), ToUnixMicros(j.deadline_at),
             Opt(j.placed_at), Opt(j.ended_at), ToUnixMicros(j.updated_at)})
      .status();
}

Status RentalsStore::UpdateJob(const Job& j) {
  return tx_
      .Exec(
          "UPDATE jobs SET state = ?, rental_id = ?, offer_id = ?, detail = ?, placed_at = ?, "
          "ended_at = ?, updated_at = ? WHERE id = ?",
          {std::string(Name(j.state)), j.rental_id, j.offer_id, j.detail, Opt(j.placed_at),
           Opt(j.ended_at), ToUnixMicros(j.updated_at), j.id})
      .status();
}

StatusOr<std::optional<Job>> RentalsStore::FindJob(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + JobRows().Select() + " FROM jobs WHERE id = ?", {id}));
  return JobRows().First(rows);
}

StatusOr<std::optional<Job>> RentalsStore::FindJobByKey(const std::string& customer_id,
                                                        const std::string& key) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + JobRows().Select() +
                                        " FROM jobs WHERE customer_id = ? AND idempotency_key = ?",
                                    {customer_id, key}));
  return JobRows().First(rows);
}

StatusOr<Page<Job>> RentalsStore::ListJobs(const std::string& customer_id,
                                           const PageRequest& page) {
  store::PageQuery q;
  q.columns = JobRows().Select();
  q.from = "FROM jobs";
  if (!customer_id.empty()) {
    q.where = "customer_id = ?";
    q.params = {customer_id};
  }
  q.key = {{"created_at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return JobRows().DecodePage(rows);
}

StatusOr<std::vector<RentalsStore::QueuedGroup>> RentalsStore::QueuedGroups() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT customer_id, constraints, COUNT(*) AS n FROM jobs WHERE state = 'queued' "
                "GROUP BY customer_id, constraints"));
  std::vector<QueuedGroup> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    const std::string key = r["constraints"].Str();
    out.push_back({r["customer_id"].Str(), key, ConstraintsFrom(key), r["n"].Int()});
  }
  return out;
}

StatusOr<std::vector<Job>> RentalsStore::QueuedJobsOf(const std::string& customer_id,
                                                      const std::string& key, int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + JobRows().Select() +
                    " FROM jobs WHERE customer_id = ? AND state = 'queued' AND constraints = ? "
                    "ORDER BY created_at, id LIMIT ?",
                {customer_id, key, limit}));
  return JobRows().Decode(rows);
}

StatusOr<int64_t> RentalsStore::CountQueuedJobs(const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM jobs WHERE customer_id = ? AND state = 'queued'",
                {customer_id}));
  return rows.empty() ? 0 : rows[0]["n"].Int();
}

StatusOr<int64_t> RentalsStore::EndJobsPastDeadline(Timestamp now) {
  return tx_.Exec(
      "UPDATE jobs SET state = 'unplaceable', detail = 'no offer met the constraints before the "
      "deadline', ended_at = ?, updated_at = ? WHERE state = 'queued' AND deadline_at <= ?",
      {ToUnixMicros(now), ToUnixMicros(now), ToUnixMicros(now)});
}

std::vector<store::Migration> RentalsMigrations() {
  return {
      {12,
       "rentals",
       "rentals: rentals with their billing totals, low-balance alerts, jobs",
       {
           R"(CREATE TABLE rentals (
                id TEXT PRIMARY KEY,
                customer_id TEXT NOT NULL REFERENCES users (id),
                offer_id TEXT NOT NULL,
                machine_id TEXT NOT NULL,
                provider_id TEXT NOT NULL,
                gpu_model TEXT NOT NULL,
                gpu_ids TEXT NOT NULL,
                gpus BIGINT NOT NULL CHECK (gpus > 0),
                workload_id TEXT NOT NULL,
                price_micro BIGINT NOT NULL CHECK (price_micro > 0),
                fee_bps BIGINT NOT NULL CHECK (fee_bps >= 0 AND fee_bps <= 10000),
                state TEXT NOT NULL,
                end_reason TEXT,
                end_party TEXT,
                exit_code BIGINT,
                detail TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                running_at BIGINT,
                billing_end_at BIGINT,
                ended_at BIGINT,
                billed_seconds BIGINT NOT NULL CHECK (billed_seconds >= 0),
                charged_micro BIGINT NOT NULL CHECK (charged_micro >= 0),
                fee_micro BIGINT NOT NULL CHECK (fee_micro >= 0),
                provider_micro BIGINT NOT NULL CHECK (provider_micro >= 0),
                refunded_micro BIGINT NOT NULL CHECK (refunded_micro >= 0),
                max_cost_micro BIGINT,
                max_duration_s BIGINT,
                next_meter_at BIGINT NOT NULL,
                image TEXT NOT NULL,
                command TEXT NOT NULL,
                region TEXT NOT NULL,
                country TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                job_id TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                gpu_name TEXT NOT NULL,
                CHECK (fee_micro + provider_micro = charged_micro)))",
           "CREATE INDEX rentals_customer ON rentals (customer_id, created_at)",
           "CREATE INDEX rentals_provider ON rentals (provider_id, created_at)",
           "CREATE INDEX rentals_meter ON rentals (state, next_meter_at)",
           "CREATE INDEX rentals_machine ON rentals (machine_id, state)",
           "CREATE UNIQUE INDEX rentals_workload ON rentals (workload_id)",
           "CREATE INDEX rentals_model ON rentals (gpu_model, running_at)",
           // A key makes one rental per customer, whatever races (RNT-6).
           "CREATE UNIQUE INDEX rentals_key ON rentals (customer_id, idempotency_key) "
           "WHERE idempotency_key <> ''",
           R"(CREATE TABLE balance_alerts (
                customer_id TEXT PRIMARY KEY,
                alerted_at BIGINT NOT NULL))",
           R"(CREATE TABLE jobs (
                id TEXT PRIMARY KEY,
                customer_id TEXT NOT NULL REFERENCES users (id),
                constraints TEXT NOT NULL,
                container TEXT NOT NULL,
                max_duration_s BIGINT,
                max_cost_micro BIGINT,
                state TEXT NOT NULL,
                rental_id TEXT NOT NULL,
                offer_id TEXT NOT NULL,
                detail TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                deadline_at BIGINT NOT NULL,
                placed_at BIGINT,
                ended_at BIGINT,
                updated_at BIGINT NOT NULL))",
           "CREATE INDEX jobs_customer ON jobs (customer_id, created_at)",
           "CREATE INDEX jobs_queued ON jobs (state, created_at)",
           "CREATE UNIQUE INDEX jobs_key ON jobs (customer_id, idempotency_key) "
           "WHERE idempotency_key <> ''",
       },
       {}},
      // Issue 25: the ports a rental's owner may reach through the platform.
      {19,
       "rentals",
       "rentals: declared ports",
       {
           "ALTER TABLE rentals ADD COLUMN ports TEXT NOT NULL DEFAULT '[]'",
       },
       {}},
  };
}

}  // namespace gpunex::platform::rentals
