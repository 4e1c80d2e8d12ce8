#include "platform/fleet/fleet_store.h"

#include "common/ids.h"
#include "common/json.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/signals.h"

namespace gpunex::platform::fleet {
namespace {

using store::KeyColumn;

// --- JSON documents kept in TEXT columns. Read leniently: what the platform wrote once is
// never re-validated (a field it cannot read is left at its default).

std::string HostText(const protocol::Host& h) { return ToJsonText(protocol::ToJson(h)); }

protocol::Host HostFrom(const std::string& text) {
  const json::value v = ParseJsonOr(text, json::object{});
  const json::object& o = StoredObject(v);
  protocol::Host h;
  h.hostname = StoredText(o, "hostname");
  h.cpu_model = StoredText(o, "cpu_model");
  h.os = StoredText(o, "os");
  h.kernel = StoredText(o, "kernel");
  h.docker_version = StoredText(o, "docker_version");
  h.cpu_cores = StoredInt(o, "cpu_cores");
  h.ram_mb = StoredInt(o, "ram_mb");
  h.disk_total_mb = StoredInt(o, "disk_total_mb");
  h.disk_free_mb = StoredInt(o, "disk_free_mb");
  if (auto it = o.find("network_isolation"); it != o.end() && it->value().is_object()) {
    const json::object& n = it->value().get_object();
    protocol::NetworkIsolation r;
    r.state = StoredText(n, "state");
    if (auto reached = n.find("reached"); reached != n.end()) {
      r.reached = StoredTextList(reached->value());
    }
    r.detail = StoredText(n, "detail");
    h.network_isolation = std::move(r);
  }
  return h;
}

std::string InfoText(const GpuInfo& g) {
  return ToJsonText(json::object{{"driver_version", g.driver_version},
                                 {"cuda_driver_version", g.cuda_driver_version},
                                 {"pcie_gen_max", g.pcie_gen_max},
                                 {"pcie_gen_current", g.pcie_gen_current},
                                 {"pcie_width_max", g.pcie_width_max},
                                 {"pcie_width_current", g.pcie_width_current},
                                 {"power_limit_w", g.power_limit_w}});
}

GpuInfo InfoFrom(const std::string& text) {
  const json::value v = ParseJsonOr(text, json::object{});
  const json::object& o = StoredObject(v);
  return {StoredText(o, "driver_version"), StoredText(o, "cuda_driver_version"),
          StoredInt(o, "pcie_gen_max"),    StoredInt(o, "pcie_gen_current"),
          StoredInt(o, "pcie_width_max"),  StoredInt(o, "pcie_width_current"),
          StoredInt(o, "power_limit_w")};
}

std::string TelemetryText(const protocol::GpuSample& s) {
  json::array reasons;
  for (const auto& r : s.throttle_reasons) reasons.emplace_back(r);
  return ToJsonText(json::object{{"utilization_pct", s.utilization_pct},
                                 {"memory_used_mb", s.memory_used_mb},
                                 {"temperature_c", s.temperature_c},
                                 {"power_w", s.power_w},
                                 {"sm_clock_mhz", s.sm_clock_mhz},
                                 {"throttle_reasons", std::move(reasons)}});
}

protocol::GpuSample TelemetryFrom(const std::string& text) {
  const json::value v = ParseJsonOr(text, json::object{});
  const json::object& o = StoredObject(v);
  protocol::GpuSample s;
  s.utilization_pct = StoredInt(o, "utilization_pct");
  s.memory_used_mb = StoredInt(o, "memory_used_mb");
  s.temperature_c = StoredInt(o, "temperature_c");
  s.power_w = StoredNumber(o, "power_w");
  s.sm_clock_mhz = StoredInt(o, "sm_clock_mhz");
  if (auto it = o.find("throttle_reasons"); it != o.end())
    s.throttle_reasons = StoredTextList(it->value());
  return s;
}

const store::RowMapper<MachineRow>& MachineRows() {
  static const auto* const m = new store::RowMapper<MachineRow>({
      {"id", &MachineRow::id},
      {"provider_id", &MachineRow::provider_id},
      {"key_hash", &MachineRow::key_hash},
      {"name", &MachineRow::name},
      {"status", [](MachineRow& m,
                    const store::Cell& c) { m.status = kMachineStatusNames.ParseStored(c.Str()); }},
      {"emulated", &MachineRow::emulated},
      {"agent_version", &MachineRow::agent_version},
      {"host", [](MachineRow& m, const store::Cell& c) { m.host = HostFrom(c.Str()); }},
      {"inventory_hash", &MachineRow::inventory_hash},
      {"created_at", &MachineRow::created_at},
      {"last_seen_at", &MachineRow::last_seen},
      {"status_since", &MachineRow::status_since},
  });
  return *m;
}

const store::RowMapper<MachineGpu>& GpuRows() {
  static const auto* const m = new store::RowMapper<MachineGpu>({
      {"id", &MachineGpu::id},
      {"machine_id", &MachineGpu::machine_id},
      {"idx", &MachineGpu::index},
      {"uuid", &MachineGpu::uuid},
      {"name", &MachineGpu::name},
      {"catalog_id", &MachineGpu::catalog_id},
      {"vram_mb", &MachineGpu::vram_mb},
      {"emulated", &MachineGpu::emulated},
      {"present", &MachineGpu::present},
      {"enabled", &MachineGpu::enabled},
      {"info", [](MachineGpu& g, const store::Cell& c) { g.info = InfoFrom(c.Str()); }},
      {"telemetry",
       [](MachineGpu& g, const store::Cell& c) {
         if (!c.IsNull()) g.telemetry = TelemetryFrom(c.Str());
       }},
      {"telemetry_at", &MachineGpu::telemetry_at},
      {"benchmark_verdict",
       [](MachineGpu& g, const store::Cell& c) {
         g.benchmark_verdict = listing::ParseBenchmarkVerdictCode(c.Str()).value_or(
             listing::BenchmarkVerdict::kPassed);
       }},
      {"benchmark_note",
       [](MachineGpu& g, const store::Cell& c) { g.benchmark_note = c.OptStr().value_or(""); }},
      {"benchmarking", &MachineGpu::benchmarking},
      {"listing_state",
       [](MachineGpu& g, const store::Cell& c) {
         g.listing.state = listing::ParseListingStateCode(c.Str()).value_or(
             listing::ListingState::kMachineOffline);
       }},
      {"listing_note",
       [](MachineGpu& g, const store::Cell& c) { g.listing.note = c.OptStr().value_or(""); }},
      {"listing_since", &MachineGpu::listing_since},
      {"created_at", &MachineGpu::created_at},
      {"priced", &MachineGpu::priced},
  });
  return *m;
}

const store::RowMapper<CommandRow>& CommandRows() {
  static const auto* const m = new store::RowMapper<CommandRow>({
      {"id", &CommandRow::id},
      {"machine_id", &CommandRow::machine_id},
      {"kind", &CommandRow::kind},
      {"payload", &CommandRow::payload_json},
      {"state", [](CommandRow& r,
                   const store::Cell& c) { r.state = kCommandStateNames.ParseStored(c.Str()); }},
      {"created_at", &CommandRow::created_at},
      {"sent_at", &CommandRow::sent_at},
  });
  return *m;
}

const store::RowMapper<MachineInterval>& IntervalRows() {
  static const auto* const m = new store::RowMapper<MachineInterval>({
      {"state", [](MachineInterval& i,
                   const store::Cell& c) { i.state = kMachineStatusNames.ParseStored(c.Str()); }},
      {"started_at", &MachineInterval::started_at},
      {"ended_at", &MachineInterval::ended_at},
      {"end_reason",
       [](MachineInterval& i, const store::Cell& c) {
         if (!c.IsNull()) i.end_reason = kIntervalEndReasonNames.ParseStored(c.Str());
       }},
  });
  return *m;
}

// `sql` selects one column named id.
StatusOr<std::vector<std::string>> Ids(store::Tx& tx, const std::string& sql,
                                       const std::vector<store::Value>& params) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r["id"].Str());
  return out;
}

}  // namespace

// ---------------------------------------------------------------- machines

StatusOr<std::optional<MachineRow>> FleetStore::FindMachine(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + MachineRows().Select() + " FROM machines WHERE id = ?",
                {id}));
  return MachineRows().First(rows);
}

StatusOr<std::vector<std::tuple<std::string, MachineStatus, Timestamp, Timestamp>>>
FleetStore::MachineStates(const std::vector<std::string>& ids) {
  std::vector<std::tuple<std::string, MachineStatus, Timestamp, Timestamp>> out;
  constexpr size_t kChunk = 400;
  for (size_t start = 0; start < ids.size(); start += kChunk) {
    const size_t n = std::min(kChunk, ids.size() - start);
    std::string in;
    std::vector<store::Value> params;
    for (size_t i = start; i < start + n; ++i) {
      in += i == start ? "?" : ", ?";
      params.emplace_back(ids[i]);
    }
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx_.Query("SELECT id, status, last_seen_at, status_since FROM machines "
                                      "WHERE id IN (" +
                                          in + ")",
                                      params));
    for (const auto& r : rows) {
      out.emplace_back(r["id"].Str(), kMachineStatusNames.ParseStored(r["status"].Str()),
                       r["last_seen_at"].Time(), r["status_since"].Time());
    }
  }
  return out;
}

StatusOr<int64_t> FleetStore::CountMachinesOf(const std::string& provider_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM machines WHERE provider_id = ?", {provider_id}));
  return rows[0]["n"].Int();
}

StatusOr<std::optional<MachineRow>> FleetStore::FindMachineByKey(const std::string& key_hash) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + MachineRows().Select() +
                                        " FROM machines WHERE key_hash = ?",
                                    {key_hash}));
  return MachineRows().First(rows);
}

Status FleetStore::InsertMachine(const MachineRow& m) {
  return tx_
      .Exec(std::string("INSERT INTO machines (") + MachineRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {m.id, m.provider_id, m.key_hash, m.name, std::string(Name(m.status)),
             int64_t{m.emulated}, m.agent_version, HostText(m.host), m.inventory_hash,
             ToUnixMicros(m.created_at), ToUnixMicros(m.last_seen), ToUnixMicros(m.status_since)})
      .status();
}

Status FleetStore::UpdateMachineOnHello(const std::string& id, bool emulated,
                                        const std::string& agent_version,
                                        const protocol::Host& host,
                                        const std::string& inventory_hash, Timestamp seen) {
  return tx_
      .Exec(
          "UPDATE machines SET emulated = ?, agent_version = ?, host = ?, inventory_hash = ?, "
          "last_seen_at = ? WHERE id = ?",
          {int64_t{emulated}, agent_version, HostText(host), inventory_hash, ToUnixMicros(seen),
           id})
      .status();
}

Status FleetStore::SetMachineHost(const std::string& id, const protocol::Host& host) {
  return tx_.Exec("UPDATE machines SET host = ? WHERE id = ?", {HostText(host), id}).status();
}

Status FleetStore::TouchMachine(const std::string& id, Timestamp seen) {
  return tx_.Exec("UPDATE machines SET last_seen_at = ? WHERE id = ?", {ToUnixMicros(seen), id})
      .status();
}

StatusOr<bool> FleetStore::SetMachineName(const std::string& id, const std::string& name) {
  GPUNEX_ASSIGN_OR_RETURN(int64_t n,
                          tx_.Exec("UPDATE machines SET name = ? WHERE id = ?", {name, id}));
  return n > 0;
}

Status FleetStore::SetMachineStatus(const std::string& id, MachineStatus status, Timestamp since) {
  return tx_
      .Exec("UPDATE machines SET status = ?, status_since = ? WHERE id = ?",
            {std::string(Name(status)), ToUnixMicros(since), id})
      .status();
}

StatusOr<Page<MachineRow>> FleetStore::ListMachines(const std::string& provider_id,
                                                    std::optional<MachineStatus> status,
                                                    const PageRequest& page) {
  store::PageQuery q{
      MachineRows().Select(), "FROM machines", "", {}, {{"id", KeyColumn::Type::kText}}};
  if (!provider_id.empty()) {
    q.where = "provider_id = ?";
    q.params = {provider_id};
  }
  if (status) q.where += (q.where.empty() ? "status = " : " AND status = ") + SqlLiteral(*status);
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return MachineRows().DecodePage(rows);
}

StatusOr<std::map<std::string, MachineCounts>> FleetStore::MachineCountsOf(
    const std::vector<std::string>& provider_ids) {
  std::map<std::string, MachineCounts> out;
  if (provider_ids.empty()) return out;
  const std::vector<store::Value> params(provider_ids.begin(), provider_ids.end());
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows machines,
      tx_.Query("SELECT provider_id, COUNT(*) AS machines, SUM(CASE WHEN status = " +
                    SqlLiteral(MachineStatus::kOnline) +
                    " THEN 1 ELSE 0 END) AS online FROM machines WHERE provider_id IN (" +
                    store::InList(params.size()) + ") GROUP BY provider_id",
                params));
  for (const store::Row& r : machines) {
    MachineCounts& c = out[r["provider_id"].Str()];
    c.machines = r["machines"].Int();
    c.online = r["online"].Int();
  }
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows gpus,
      tx_.Query("SELECT m.provider_id AS provider_id, COUNT(*) AS gpus FROM machine_gpus g "
                "JOIN machines m ON m.id = g.machine_id WHERE m.provider_id IN (" +
                    store::InList(params.size()) + ") GROUP BY m.provider_id",
                params));
  for (const store::Row& r : gpus) out[r["provider_id"].Str()].gpus = r["gpus"].Int();
  return out;
}

StatusOr<std::vector<std::string>> FleetStore::StaleOnlineMachines(Timestamp cutoff) {
  return Ids(tx_,
             "SELECT id FROM machines WHERE status = " + SqlLiteral(MachineStatus::kOnline) +
                 " AND last_seen_at < ? ORDER BY id",
             {ToUnixMicros(cutoff)});
}

StatusOr<bool> FleetStore::IsStaleOnline(const std::string& id, Timestamp cutoff) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query("SELECT 1 FROM machines WHERE id = ? AND status = " +
                                      SqlLiteral(MachineStatus::kOnline) + " AND last_seen_at < ?",
                                  {id, ToUnixMicros(cutoff)}));
  return !rows.empty();
}

StatusOr<std::vector<std::string>> FleetStore::OnlineMachines() {
  return Ids(tx_,
             "SELECT id FROM machines WHERE status = " + SqlLiteral(MachineStatus::kOnline) +
                 " ORDER BY id",
             {});
}

// ---------------------------------------------------------------- GPUs

StatusOr<std::vector<MachineGpu>> FleetStore::GpusOf(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows, tx_.Query(std::string("SELECT ") + GpuRows().Select() +
                                      " FROM machine_gpus WHERE machine_id = ? ORDER BY idx, uuid",
                                  {machine_id}));
  return GpuRows().Decode(rows);
}

StatusOr<std::optional<MachineGpu>> FleetStore::FindGpu(const std::string& machine_id,
                                                        const std::string& gpu_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + GpuRows().Select() +
                                        " FROM machine_gpus WHERE id = ? AND machine_id = ?",
                                    {gpu_id, machine_id}));
  return GpuRows().First(rows);
}

StatusOr<std::optional<std::string>> FleetStore::GpuIdByUuid(const std::string& machine_id,
                                                             const std::string& uuid) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT id FROM machine_gpus WHERE machine_id = ? AND uuid = ?",
                                    {machine_id, uuid}));
  if (rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>(rows[0]["id"].Str());
}

Status FleetStore::MarkGpusAbsent(const std::string& machine_id) {
  return tx_.Exec("UPDATE machine_gpus SET present = 0 WHERE machine_id = ?", {machine_id})
      .status();
}

StatusOr<bool> FleetStore::UpdateGpuFromHello(const std::string& machine_id, const MachineGpu& g) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec(
          "UPDATE machine_gpus SET idx = ?, name = ?, catalog_id = ?, vram_mb = ?, emulated = ?, "
          "present = 1, info = ? WHERE machine_id = ? AND uuid = ?",
          {g.index, g.name, g.catalog_id, g.vram_mb, int64_t{g.emulated}, InfoText(g.info),
           machine_id, g.uuid}));
  return n > 0;
}

Status FleetStore::InsertGpu(const MachineGpu& g) {
  return tx_
      .Exec(
          "INSERT INTO machine_gpus (id, machine_id, idx, uuid, name, catalog_id, vram_mb, "
          "emulated, present, enabled, info, benchmark_verdict, benchmark_note, benchmarking, "
          "listing_state, listing_note, listing_since, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {g.id, g.machine_id, g.index, g.uuid, g.name, g.catalog_id, g.vram_mb,
           int64_t{g.emulated}, int64_t{g.present}, int64_t{g.enabled}, InfoText(g.info),
           std::string(listing::BenchmarkVerdictCode(g.benchmark_verdict)),
           g.benchmark_note.empty() ? store::Value(nullptr) : store::Value(g.benchmark_note),
           int64_t{g.benchmarking}, std::string(listing::ListingStateCode(g.listing.state)),
           g.listing.note.empty() ? store::Value(nullptr) : store::Value(g.listing.note),
           ToUnixMicros(g.listing_since), ToUnixMicros(g.created_at)})
      .status();
}

StatusOr<bool> FleetStore::SetGpuEnabled(const std::string& machine_id, const std::string& gpu_id,
                                         bool enabled) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n, tx_.Exec("UPDATE machine_gpus SET enabled = ? WHERE id = ? AND machine_id = ?",
                          {int64_t{enabled}, gpu_id, machine_id}));
  return n > 0;
}

Status FleetStore::SetGpuTelemetry(const std::string& gpu_id, const protocol::GpuSample& sample,
                                   Timestamp at) {
  return tx_
      .Exec("UPDATE machine_gpus SET telemetry = ?, telemetry_at = ? WHERE id = ?",
            {TelemetryText(sample), ToUnixMicros(at), gpu_id})
      .status();
}

Status FleetStore::SetBenchmarkFacts(const std::string& gpu_id, listing::BenchmarkVerdict verdict,
                                     const std::string& note, bool benchmarking) {
  return tx_
      .Exec(
          "UPDATE machine_gpus SET benchmark_verdict = ?, benchmark_note = ?, "
          "benchmarking = ? WHERE id = ?",
          {std::string(listing::BenchmarkVerdictCode(verdict)),
           note.empty() ? store::Value(nullptr) : store::Value(note), int64_t{benchmarking},
           gpu_id})
      .status();
}

Status FleetStore::SetPriced(const std::string& gpu_id, bool priced) {
  return tx_.Exec("UPDATE machine_gpus SET priced = ? WHERE id = ?", {int64_t{priced}, gpu_id})
      .status();
}

Status FleetStore::TouchOffers(const std::string& machine_id, Timestamp now) {
  // Strictly increasing per machine, so that two changes within one clock tick (or under
  // a stopped test clock) still differ from what an index loaded between them.
  const int64_t us = ToUnixMicros(now);
  return tx_
      .Exec(
          "UPDATE machines SET offers_changed_at = CASE WHEN offers_changed_at >= ? THEN "
          "offers_changed_at + 1 ELSE ? END WHERE id = ?",
          {us, us, machine_id})
      .status();
}

StatusOr<std::optional<int64_t>> FleetStore::OffersStamp(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT offers_changed_at FROM machines WHERE id = ?", {machine_id}));
  if (rows.empty()) return std::optional<int64_t>();
  return std::optional<int64_t>(rows[0]["offers_changed_at"].Int());
}

StatusOr<std::vector<std::pair<std::string, int64_t>>> FleetStore::OffersChangedSince(
    int64_t since_us) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT id, offers_changed_at FROM machines WHERE offers_changed_at > ?",
                {since_us}));
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.emplace_back(r["id"].Str(), r["offers_changed_at"].Int());
  return out;
}

Status FleetStore::SetListing(const std::string& gpu_id, const listing::ListingDecision& d,
                              Timestamp since) {
  return tx_
      .Exec(
          "UPDATE machine_gpus SET listing_state = ?, listing_note = ?, listing_since = ? "
          "WHERE id = ?",
          {std::string(listing::ListingStateCode(d.state)),
           d.note.empty() ? store::Value(nullptr) : store::Value(d.note), ToUnixMicros(since),
           gpu_id})
      .status();
}

StatusOr<AvailabilityFacts> FleetStore::AvailabilityFactsOf(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT inside_schedule, schedule_opens_at, in_maintenance "
                                    "FROM machines WHERE id = ?",
                                    {machine_id}));
  if (rows.empty()) return NotFound("no such machine");
  const store::Row& r = rows[0];
  return AvailabilityFacts{r["inside_schedule"].Int() != 0, r["schedule_opens_at"].OptTime(),
                           r["in_maintenance"].Int() != 0};
}

Status FleetStore::SetAvailabilityFacts(const std::string& machine_id, const AvailabilityFacts& f) {
  return tx_
      .Exec(
          "UPDATE machines SET inside_schedule = ?, schedule_opens_at = ?, in_maintenance = ? "
          "WHERE id = ?",
          {int64_t{f.inside_schedule},
           f.opens_at ? store::Value(ToUnixMicros(*f.opens_at)) : store::Value(nullptr),
           int64_t{f.in_maintenance}, machine_id})
      .status();
}

// ---------------------------------------------------------------- intervals, events, telemetry

Status FleetStore::CloseOpenInterval(const std::string& machine_id, Timestamp at,
                                     IntervalEndReason reason) {
  return tx_
      .Exec(
          "UPDATE machine_intervals SET ended_at = ?, end_reason = ? WHERE machine_id = ? "
          "AND ended_at IS NULL",
          {ToUnixMicros(at), std::string(Name(reason)), machine_id})
      .status();
}

Status FleetStore::OpenInterval(const std::string& machine_id, MachineStatus state, Timestamp at) {
  return tx_
      .Exec("INSERT INTO machine_intervals (id, machine_id, state, started_at) VALUES (?, ?, ?, ?)",
            {NewId("mit"), machine_id, std::string(Name(state)), ToUnixMicros(at)})
      .status();
}

StatusOr<std::vector<MachineInterval>> FleetStore::RecentIntervals(const std::string& machine_id,
                                                                   int limit) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + IntervalRows().Select() +
                    " FROM machine_intervals WHERE machine_id = ? ORDER BY started_at DESC, id "
                    "DESC LIMIT ?",
                {machine_id, int64_t{limit}}));
  return IntervalRows().Decode(rows);
}

Status FleetStore::InsertEvent(const std::string& machine_id, Timestamp at, MachineEventKind kind,
                               const std::string& detail_json) {
  return tx_
      .Exec("INSERT INTO machine_events (id, machine_id, at, kind, detail) VALUES (?, ?, ?, ?, ?)",
            {NewId("mev"), machine_id, ToUnixMicros(at), std::string(Name(kind)), detail_json})
      .status();
}

Status FleetStore::AddTelemetrySample(const std::string& gpu_id, int64_t minute,
                                      const protocol::GpuSample& s, bool throttled, bool loaded) {
  return tx_
      .Exec(
          "INSERT INTO gpu_telemetry_minutes (gpu_id, minute, samples, utilization_sum, "
          "temperature_max, power_sum, memory_used_max, throttled_samples, loaded_samples, "
          "loaded_throttled_samples) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?) "
          "ON CONFLICT (gpu_id, minute) DO UPDATE "
          "SET samples = gpu_telemetry_minutes.samples + 1, utilization_sum = "
          "gpu_telemetry_minutes.utilization_sum + excluded.utilization_sum, "
          "temperature_max = CASE WHEN excluded.temperature_max > "
          "gpu_telemetry_minutes.temperature_max THEN excluded.temperature_max "
          "ELSE gpu_telemetry_minutes.temperature_max END, power_sum = "
          "gpu_telemetry_minutes.power_sum + excluded.power_sum, memory_used_max = CASE "
          "WHEN excluded.memory_used_max > gpu_telemetry_minutes.memory_used_max "
          "THEN excluded.memory_used_max ELSE gpu_telemetry_minutes.memory_used_max END, "
          "throttled_samples = gpu_telemetry_minutes.throttled_samples + "
          "excluded.throttled_samples, loaded_samples = gpu_telemetry_minutes.loaded_samples + "
          "excluded.loaded_samples, loaded_throttled_samples = "
          "gpu_telemetry_minutes.loaded_throttled_samples + excluded.loaded_throttled_samples",
          {gpu_id, minute, std::max<int64_t>(s.utilization_pct, 0), s.temperature_c, s.power_w,
           s.memory_used_mb, int64_t{throttled}, int64_t{loaded}, int64_t{loaded && throttled}})
      .status();
}

// ---------------------------------------------------------------- agent commands

Status FleetStore::InsertCommand(const CommandRow& c) {
  GPUNEX_RETURN_IF_ERROR(
      tx_.Exec("INSERT INTO agent_commands (id, machine_id, kind, payload, state, created_at) "
               "VALUES (?, ?, ?, ?, ?, ?)",
               {c.id, c.machine_id, c.kind, c.payload_json, std::string(Name(c.state)),
                ToUnixMicros(c.created_at)})
          .status());
  return store::Signal(tx_, kCommandsSignal, c.machine_id);
}

StatusOr<std::vector<CommandRow>> FleetStore::UnfinishedCommands(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + CommandRows().Select() +
                                        " FROM agent_commands WHERE machine_id = ? AND state <> " +
                                        SqlLiteral(CommandState::kDone) + " ORDER BY id",
                                    {machine_id}));
  return CommandRows().Decode(rows);
}

Status FleetStore::MarkCommandSent(const std::string& id, Timestamp at) {
  return tx_
      .Exec("UPDATE agent_commands SET sent_at = ?, state = CASE WHEN state = " +
                SqlLiteral(CommandState::kPending) + " THEN " + SqlLiteral(CommandState::kSent) +
                " ELSE state END WHERE id = ?",
            {ToUnixMicros(at), id})
      .status();
}

Status FleetStore::MarkCommandAcked(const std::string& machine_id, const std::string& id,
                                    Timestamp at) {
  return tx_
      .Exec("UPDATE agent_commands SET state = " + SqlLiteral(CommandState::kAcked) +
                ", acked_at = ? WHERE id = ? AND machine_id = ? AND state IN (" +
                SqlLiteral(CommandState::kPending) + ", " + SqlLiteral(CommandState::kSent) + ")",
            {ToUnixMicros(at), id, machine_id})
      .status();
}

StatusOr<std::optional<CommandRow>> FleetStore::FindCommand(const std::string& machine_id,
                                                            const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + CommandRows().Select() +
                                        " FROM agent_commands WHERE id = ? AND machine_id = ?",
                                    {id, machine_id}));
  return CommandRows().First(rows);
}

Status FleetStore::MarkCommandDone(const std::string& id, Timestamp at, bool ok,
                                   const std::string& result_json) {
  return tx_
      .Exec("UPDATE agent_commands SET state = " + SqlLiteral(CommandState::kDone) +
                ", done_at = ?, ok = ?, result = ? WHERE id = ?",
            {ToUnixMicros(at), int64_t{ok}, result_json, id})
      .status();
}

StatusOr<std::vector<std::string>> FleetStore::MachinesWithPendingCommands() {
  return Ids(tx_,
             "SELECT DISTINCT machine_id AS id FROM agent_commands WHERE state = " +
                 SqlLiteral(CommandState::kPending),
             {});
}

}  // namespace gpunex::platform::fleet
