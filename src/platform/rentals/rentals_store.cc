#include "platform/rentals/rentals_store.h"

#include "common/json.h"
#include "platform/store/paging.h"

namespace gpunex::platform::rentals {
namespace {

constexpr std::string_view kColumns =
    "id, customer_id, offer_id, machine_id, provider_id, gpu_model, gpu_ids, gpus, workload_id, "
    "price_micro, fee_bps, state, end_reason, end_party, exit_code, detail, created_at, "
    "running_at, billing_end_at, ended_at, billed_seconds, charged_micro, fee_micro, "
    "provider_micro, refunded_micro, max_cost_micro, max_duration_s, next_meter_at, image, "
    "command, region, country, idempotency_key, job_id, updated_at, gpu_name";

store::Value Opt(const std::optional<std::string>& v) {
  return v ? store::Value(*v) : store::Value(nullptr);
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

Rental RentalFrom(const store::Row& r) {
  Rental x;
  x.id = r.Str(0);
  x.customer_id = r.Str(1);
  x.offer_id = r.Str(2);
  x.machine_id = r.Str(3);
  x.provider_id = r.Str(4);
  x.gpu_model = r.Str(5);
  x.gpu_ids = StoredTextList(ParseJsonOr(r.Str(6), json::array()));
  x.gpus = r.Int(7);
  x.workload_id = r.Str(8);
  x.price = Usdc::Micros(r.Int(9));
  x.fee_bps = r.Int(10);
  x.state = r.Str(11);
  x.end_reason = r.OptStr(12);
  x.end_party = r.OptStr(13);
  x.exit_code = r.OptInt(14);
  x.detail = r.Str(15);
  x.created_at = r.Time(16);
  x.running_at = r.OptTime(17);
  x.billing_end_at = r.OptTime(18);
  x.ended_at = r.OptTime(19);
  x.billed_seconds = r.Int(20);
  x.charged = Usdc::Micros(r.Int(21));
  x.fee = Usdc::Micros(r.Int(22));
  x.provider_part = Usdc::Micros(r.Int(23));
  x.refunded = Usdc::Micros(r.Int(24));
  if (auto c = r.OptInt(25)) x.max_cost = Usdc::Micros(*c);
  x.max_duration_s = r.OptInt(26);
  x.next_meter_at = r.Time(27);
  x.image = r.Str(28);
  x.command = StoredTextList(ParseJsonOr(r.Str(29), json::array()));
  x.region = r.Str(30);
  x.country = r.Str(31);
  x.idempotency_key = r.Str(32);
  x.job_id = r.Str(33);
  x.updated_at = r.Time(34);
  x.gpu_name = r.Str(35);
  return x;
}

// kColumns without the lists and the image, which metering does not need.
constexpr std::string_view kMeterColumns =
    "id, customer_id, offer_id, machine_id, provider_id, gpu_model, '[]', gpus, workload_id, "
    "price_micro, fee_bps, state, end_reason, end_party, exit_code, detail, created_at, "
    "running_at, billing_end_at, ended_at, billed_seconds, charged_micro, fee_micro, "
    "provider_micro, refunded_micro, max_cost_micro, max_duration_s, next_meter_at, '', "
    "'[]', region, country, idempotency_key, job_id, updated_at, gpu_name";

StatusOr<std::vector<Rental>> Rentals(store::Tx& tx, const std::string& where,
                                      const std::vector<store::Value>& params,
                                      std::string_view columns = kColumns) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT " + std::string(columns) + " FROM rentals WHERE " + where, params));
  std::vector<Rental> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(RentalFrom(r));
  return out;
}

StatusOr<std::optional<Rental>> One(store::Tx& tx, const std::string& where,
                                    const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> rs, Rentals(tx, where, params));
  if (rs.empty()) return std::optional<Rental>();
  return std::optional<Rental>(std::move(rs[0]));
}

std::string InList(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

// --- jobs

constexpr std::string_view kJobColumns =
    "id, customer_id, constraints, container, max_duration_s, max_cost_micro, state, rental_id, "
    "offer_id, detail, idempotency_key, created_at, deadline_at, placed_at, ended_at, updated_at";

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
                   {"env", std::move(env)}});
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

Job JobFrom(const store::Row& r) {
  Job j;
  j.id = r.Str(0);
  j.customer_id = r.Str(1);
  j.constraints = ConstraintsFrom(r.Str(2));
  const json::value kv = ParseJsonOr(r.Str(3), json::object());
  const json::object& k = StoredObject(kv);
  j.container.image = StoredText(k, "image");
  if (auto it = k.find("command"); it != k.end()) j.container.command = StoredTextList(it->value());
  if (auto it = k.find("env"); it != k.end() && it->value().is_object()) {
    for (const auto& e : it->value().as_object()) {
      if (e.value().is_string()) j.container.env.emplace_back(e.key(), e.value().as_string());
    }
  }
  j.max_duration_s = r.OptInt(4);
  if (auto m = r.OptInt(5)) j.max_cost = Usdc::Micros(*m);
  j.state = r.Str(6);
  j.rental_id = r.Str(7);
  j.offer_id = r.Str(8);
  j.detail = r.Str(9);
  j.idempotency_key = r.Str(10);
  j.created_at = r.Time(11);
  j.deadline_at = r.Time(12);
  j.placed_at = r.OptTime(13);
  j.ended_at = r.OptTime(14);
  j.updated_at = r.Time(15);
  return j;
}

}  // namespace

Status RentalsStore::Insert(const Rental& r) {
  return tx_
      .Exec("INSERT INTO rentals (" + std::string(kColumns) +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
             r.state,
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
      tx_.Exec("UPDATE rentals SET state = ?, end_reason = ?, end_party = ?, exit_code = ?, "
               "detail = ?, running_at = ?, billing_end_at = ?, ended_at = ?, billed_seconds = ?, "
               "charged_micro = ?, fee_micro = ?, provider_micro = ?, refunded_micro = ?, "
               "next_meter_at = ?, updated_at = ? WHERE id = ?",
               {r.state, Opt(r.end_reason), Opt(r.end_party), Opt(r.exit_code), r.detail,
                Opt(r.running_at), Opt(r.billing_end_at), Opt(r.ended_at), r.billed_seconds,
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
  q.columns = std::string(kColumns);
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
  if (state == "ended") conds.push_back("state = 'ended'");
  for (size_t i = 0; i < conds.size(); ++i) q.where += (i ? " AND " : "") + conds[i];
  q.key = {{"created_at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  Page<Rental> out;
  for (const auto& r : rows.items) out.items.push_back(RentalFrom(r));
  out.next = rows.next;
  return out;
}

StatusOr<std::vector<std::string>> RentalsStore::CustomersDue(Timestamp now, int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT DISTINCT customer_id FROM rentals WHERE state = 'running' AND "
                "next_meter_at <= ? LIMIT ?",
                {ToUnixMicros(now), limit}));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.Str(0));
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
                params, kMeterColumns));
    for (auto& r : rs) out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<RentalsStore::OpenTerms>> RentalsStore::OpenOf(
    const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT price_micro, gpus, max_duration_s, max_cost_micro, charged_micro FROM "
                "rentals WHERE customer_id = ? AND state IN ('pending', 'starting', 'running')",
                {customer_id}));
  std::vector<OpenTerms> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    OpenTerms t;
    t.price = Usdc::Micros(r.Int(0));
    t.gpus = r.Int(1);
    t.max_duration_s = r.OptInt(2);
    if (auto c = r.OptInt(3)) t.max_cost = Usdc::Micros(*c);
    t.charged = Usdc::Micros(r.Int(4));
    out.push_back(t);
  }
  return out;
}

StatusOr<std::vector<std::string>> RentalsStore::ActiveMachines() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT DISTINCT machine_id FROM rentals WHERE state <> 'ended'"));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.Str(0));
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
  return std::optional<Timestamp>(rows[0].Time(0));
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
      .Exec("INSERT INTO jobs (" + std::string(kJobColumns) +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {j.id, j.customer_id, ConstraintsJson(j), ContainerJson(j), Opt(j.max_duration_s),
             Opt(j.max_cost), j.state, j.rental_id, j.offer_id, j.detail, j.idempotency_key,
             ToUnixMicros(j.created_at), ToUnixMicros(j.deadline_at), Opt(j.placed_at),
             Opt(j.ended_at), ToUnixMicros(j.updated_at)})
      .status();
}

Status RentalsStore::UpdateJob(const Job& j) {
  return tx_
      .Exec(
          "UPDATE jobs SET state = ?, rental_id = ?, offer_id = ?, detail = ?, placed_at = ?, "
          "ended_at = ?, updated_at = ? WHERE id = ?",
          {j.state, j.rental_id, j.offer_id, j.detail, Opt(j.placed_at), Opt(j.ended_at),
           ToUnixMicros(j.updated_at), j.id})
      .status();
}

StatusOr<std::optional<Job>> RentalsStore::FindJob(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kJobColumns) + " FROM jobs WHERE id = ?", {id}));
  if (rows.empty()) return std::optional<Job>();
  return std::optional<Job>(JobFrom(rows[0]));
}

StatusOr<std::optional<Job>> RentalsStore::FindJobByKey(const std::string& customer_id,
                                                        const std::string& key) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + std::string(kJobColumns) +
                                        " FROM jobs WHERE customer_id = ? AND idempotency_key = ?",
                                    {customer_id, key}));
  if (rows.empty()) return std::optional<Job>();
  return std::optional<Job>(JobFrom(rows[0]));
}

StatusOr<Page<Job>> RentalsStore::ListJobs(const std::string& customer_id,
                                           const PageRequest& page) {
  store::PageQuery q;
  q.columns = std::string(kJobColumns);
  q.from = "FROM jobs";
  if (!customer_id.empty()) {
    q.where = "customer_id = ?";
    q.params = {customer_id};
  }
  q.key = {{"created_at", store::KeyColumn::Type::kInt}, {"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  Page<Job> out;
  for (const auto& r : rows.items) out.items.push_back(JobFrom(r));
  out.next = rows.next;
  return out;
}

StatusOr<std::vector<RentalsStore::QueuedGroup>> RentalsStore::QueuedGroups() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT customer_id, constraints, COUNT(*) FROM jobs WHERE state = 'queued' "
                "GROUP BY customer_id, constraints"));
  std::vector<QueuedGroup> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    out.push_back({r.Str(0), r.Str(1), ConstraintsFrom(r.Str(1)), r.Int(2)});
  }
  return out;
}

StatusOr<std::vector<Job>> RentalsStore::QueuedJobsOf(const std::string& customer_id,
                                                      const std::string& key, int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + std::string(kJobColumns) +
                    " FROM jobs WHERE customer_id = ? AND state = 'queued' AND constraints = ? "
                    "ORDER BY created_at, id LIMIT ?",
                {customer_id, key, limit}));
  std::vector<Job> out;
  for (const auto& r : rows) out.push_back(JobFrom(r));
  return out;
}

StatusOr<int64_t> RentalsStore::CountQueuedJobs(const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) FROM jobs WHERE customer_id = ? AND state = 'queued'",
                {customer_id}));
  return rows.empty() ? 0 : rows[0].Int(0);
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
  };
}

}  // namespace gpunex::platform::rentals
