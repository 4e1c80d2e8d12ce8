// The fleet store's workloads and their logs (fleet_store.h).
#include "common/json.h"
#include "platform/fleet/fleet_store.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::fleet {
namespace {

using store::KeyColumn;

// The active states (IsActiveWorkloadState) as an SQL list: "'pending', 'starting', ...".
std::string ActiveStates() {
  return SqlLiteral(WorkloadState::kPending) + ", " + SqlLiteral(WorkloadState::kStarting) + ", " +
         SqlLiteral(WorkloadState::kRunning);
}

store::Value OptValue(const std::optional<std::string>& s) {
  return s ? store::Value(*s) : store::Value(nullptr);
}

// The stored spec, read leniently (what was validated when it was written is not
// validated again).
protocol::StartWorkload SpecFrom(const std::string& text) {
  const json::value v = ParseJsonOr(text, json::object{});
  const json::object& o = StoredObject(v);
  protocol::StartWorkload s;
  s.workload_id = StoredText(o, "workload_id");
  s.image = StoredText(o, "image");
  if (auto it = o.find("command"); it != o.end()) s.command = StoredTextList(it->value());
  if (auto it = o.find("env"); it != o.end() && it->value().is_object()) {
    for (const auto& kv : it->value().get_object()) {
      if (kv.value().is_string())
        s.env.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
    }
  }
  if (auto it = o.find("gpu_uuids"); it != o.end()) s.gpu_uuids = StoredTextList(it->value());
  s.memory_mb = StoredInt(o, "memory_mb");
  s.cpus = StoredNumber(o, "cpus");
  s.pids_limit = StoredInt(o, "pids_limit");
  s.scratch_mb = StoredInt(o, "scratch_mb");
  s.timeout_s = StoredInt(o, "timeout_s");
  FieldErrors ignored;  // written valid
  s.ports = protocol::ReadPorts(JsonReader(o, "", &ignored), "ports", /*with_public=*/false);
  return s;
}

std::string IdsText(const std::vector<std::string>& ids) {
  json::array a;
  for (const auto& id : ids) a.emplace_back(id);
  return ToJsonText(a);
}

const store::RowMapper<Workload>& WorkloadRows() {
  using W = Workload;
  static const auto* const m = new store::RowMapper<W>({
      {"id", &W::id},
      {"machine_id", &W::machine_id},
      {"provider_id", &W::provider_id},
      {"created_by", &W::created_by},
      {"purpose",
       [](W& w, const store::Cell& c) { w.purpose = kWorkloadPurposeNames.ParseStored(c.Str()); }},
      {"spec", [](W& w, const store::Cell& c) { w.spec = SpecFrom(c.Str()); }},
      {"gpu_ids",
       [](W& w, const store::Cell& c) {
         w.gpu_ids = StoredTextList(ParseJsonOr(c.Str(), json::array{}));
       }},
      {"state",
       [](W& w, const store::Cell& c) { w.state = kWorkloadStateNames.ParseStored(c.Str()); }},
      {"exit_code", &W::exit_code},
      {"end_reason", &W::end_reason},
      {"end_party",
       [](W& w, const store::Cell& c) {
         if (!c.IsNull()) w.end_party = kEndPartyNames.ParseStored(c.Str());
       }},
      {"container_id", &W::container_id},
      {"created_at", &W::created_at},
      {"started_at", &W::started_at},
      {"ended_at", &W::ended_at},
      {"updated_at", &W::updated_at},
      {"end_cause", &W::end_cause},
  });
  return *m;
}

const store::RowMapper<LogChunk>& LogChunkRows() {
  static const auto* const m = new store::RowMapper<LogChunk>({
      {"stream", &LogChunk::stream},
      {"seq", &LogChunk::seq},
      {"at", &LogChunk::at},
      {"data", &LogChunk::data},
  });
  return *m;
}

}  // namespace

// ---------------------------------------------------------------- workloads

Status FleetStore::InsertWorkload(const Workload& w) {
  return tx_
      .Exec(
          "INSERT INTO workloads (id, machine_id, provider_id, created_by, purpose, spec, "
          "gpu_ids, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {w.id, w.machine_id, w.provider_id, w.created_by, std::string(Name(w.purpose)),
           ToJsonText(protocol::ToJson(w.spec)), IdsText(w.gpu_ids), std::string(Name(w.state)),
           ToUnixMicros(w.created_at), ToUnixMicros(w.updated_at)})
      .status();
}

StatusOr<std::optional<Workload>> FleetStore::FindWorkload(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + WorkloadRows().Select() + " FROM workloads WHERE id = ?",
                {id}));
  return WorkloadRows().First(rows);
}

StatusOr<Page<Workload>> FleetStore::ListWorkloads(const WorkloadFilter& filter,
                                                   const PageRequest& page) {
  store::PageQuery q{
      WorkloadRows().Select(), "FROM workloads", "", {}, {{"id", KeyColumn::Type::kText}}};
  std::string where;
  if (!filter.all) {
    std::string whose;
    if (!filter.provider_id.empty()) {
      whose = "provider_id = ?";
      q.params.emplace_back(filter.provider_id);
    }
    if (!filter.customer_id.empty()) {
      whose += std::string(whose.empty() ? "" : " OR ") +
               "(created_by = ? AND purpose = " + SqlLiteral(WorkloadPurpose::kRental) + ")";
      q.params.emplace_back(filter.customer_id);
    }
    where = "(" + (whose.empty() ? std::string("1 = 0") : whose) + ")";
  }
  if (!filter.machine_id.empty()) {
    where += std::string(where.empty() ? "" : " AND ") + "machine_id = ?";
    q.params.emplace_back(filter.machine_id);
  }
  q.where = where;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return WorkloadRows().DecodePage(rows);
}

StatusOr<std::set<std::string>> FleetStore::GpusInActiveWorkloads(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT gpu_ids FROM workloads WHERE machine_id = ? "
                                    "AND state IN (" +
                                        ActiveStates() + ")",
                                    {machine_id}));
  std::set<std::string> busy;
  for (const auto& r : rows) {
    for (auto& id : StoredTextList(ParseJsonOr(r["gpu_ids"].Str(), json::array())))
      busy.insert(std::move(id));
  }
  return busy;
}

StatusOr<std::vector<Workload>> FleetStore::ActiveWorkloads(const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + WorkloadRows().Select() +
                                        " FROM workloads WHERE machine_id = ? "
                                        "AND state IN (" +
                                        ActiveStates() + ") ORDER BY id",
                                    {machine_id}));
  return WorkloadRows().Decode(rows);
}

Status FleetStore::SetWorkloadProgress(const std::string& id, WorkloadState state,
                                       const std::optional<std::string>& container_id,
                                       Timestamp at) {
  return tx_
      .Exec(
          "UPDATE workloads SET state = ?, container_id = COALESCE(?, container_id), "
          "started_at = CASE WHEN ? = " +
              SqlLiteral(WorkloadState::kRunning) +
              " THEN ? ELSE started_at END, updated_at = ? WHERE id = ?",
          {std::string(Name(state)), OptValue(container_id), std::string(Name(state)),
           ToUnixMicros(at), ToUnixMicros(at), id})
      .status();
}

StatusOr<bool> FleetStore::EndWorkload(const std::string& id, WorkloadState state,
                                       std::optional<int64_t> exit_code, const std::string& reason,
                                       const Ending& ending,
                                       const std::optional<std::string>& container_id,
                                       Timestamp at) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t n,
      tx_.Exec(
          "UPDATE workloads SET state = ?, exit_code = ?, end_reason = ?, end_party = ?, "
          "end_cause = ?, ended_at = ?, updated_at = ?, container_id = COALESCE(?, "
          "container_id) WHERE id = ? AND state IN (" +
              ActiveStates() + ")",
          {std::string(Name(state)), exit_code ? store::Value(*exit_code) : store::Value(nullptr),
           reason, std::string(Name(ending.party)), ending.cause, ToUnixMicros(at),
           ToUnixMicros(at), OptValue(container_id), id}));
  return n > 0;
}

// ---------------------------------------------------------------- workload logs

StatusOr<int64_t> FleetStore::CountLogChunks(const std::string& workload_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM workload_logs WHERE workload_id = ?", {workload_id}));
  return rows.at(0)["n"].Int();
}

Status FleetStore::InsertLogChunk(const std::string& workload_id, const LogChunk& c) {
  return tx_
      .Exec(
          "INSERT INTO workload_logs (workload_id, stream, seq, at, data) VALUES (?, ?, ?, ?, "
          "?) ON CONFLICT (workload_id, stream, seq) DO NOTHING",
          {workload_id, c.stream, c.seq, ToUnixMicros(c.at), c.data})
      .status();
}

StatusOr<Page<LogChunk>> FleetStore::LogChunks(const std::string& workload_id,
                                               const PageRequest& page) {
  store::PageQuery q{LogChunkRows().Select(),
                     "FROM workload_logs",
                     "workload_id = ?",
                     {workload_id},
                     {{"at", KeyColumn::Type::kInt},
                      {"stream", KeyColumn::Type::kText},
                      {"seq", KeyColumn::Type::kInt}}};
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return LogChunkRows().DecodePage(rows);
}

}  // namespace gpunex::platform::fleet
