#include "platform/fleet/history_store.h"

#include "platform/fleet/fleet_store.h"
#include "platform/store/coordination.h"
#include "platform/store/rows.h"

namespace gpunex::platform::fleet {
namespace {

// One row per present GPU of a machine (or one without a GPU): each row's summary holds
// that GPU alone, merged by MachineSummaries.
const store::RowMapper<MachineSummary>& SummaryRows() {
  using M = MachineSummary;
  static const auto* const m = new store::RowMapper<M>({
      {"id", &M::id},
      {"provider_id", &M::provider_id},
      {"name", &M::name},
      {"status",
       [](M& m, const store::Cell& c) { m.status = kMachineStatusNames.ParseStored(c.Str()); }},
      {"created_at", &M::created_at},
      {"gpu_id",
       [](M& m, const store::Cell& c) {
         if (std::optional<std::string> gpu = c.OptStr()) m.gpu_ids.push_back(*gpu);
       },
       "g.id"},
  });
  return *m;
}

const store::RowMapper<OnlineSpan>& OnlineSpanRows() {
  static const auto* const m = new store::RowMapper<OnlineSpan>({
      {"machine_id", &OnlineSpan::machine_id},
      {"started_at", &OnlineSpan::start},
      {"ended_at", &OnlineSpan::end},
  });
  return *m;
}

const store::RowMapper<WorkloadEnding>& EndingRows() {
  static const auto* const m = new store::RowMapper<WorkloadEnding>({
      {"id", &WorkloadEnding::workload_id},
      {"machine_id", &WorkloadEnding::machine_id},
      {"ended_at", &WorkloadEnding::at},
      {"end_party", [](WorkloadEnding& e,
                       const store::Cell& c) { e.party = kEndPartyNames.ParseStored(c.Str()); }},
      {"end_reason",
       [](WorkloadEnding& e, const store::Cell& c) { e.reason = c.OptStr().value_or(""); }},
      {"exit_code", &WorkloadEnding::exit_code},
  });
  return *m;
}

const store::RowMapper<LoadedSamples>& LoadedRows() {
  static const auto* const m = new store::RowMapper<LoadedSamples>({
      {"gpu_id", &LoadedSamples::gpu_id},
      {"minute", &LoadedSamples::minute},
      {"loaded_samples", &LoadedSamples::loaded},
      {"loaded_throttled_samples", &LoadedSamples::throttled},
  });
  return *m;
}

}  // namespace

StatusOr<std::vector<MachineSummary>> MachineSummaries(store::Tx& tx,
                                                       const std::string& provider_id) {
  std::string where = provider_id.empty() ? "" : " WHERE m.provider_id = ?";
  std::vector<store::Value> params;
  if (!provider_id.empty()) params.emplace_back(provider_id);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT " + SummaryRows().Select("m") +
                   " FROM machines m LEFT JOIN machine_gpus g ON g.machine_id = m.id AND "
                   "g.present = 1" +
                   where + " ORDER BY m.id, g.idx",
               params));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineSummary> each, SummaryRows().Decode(rows));
  std::vector<MachineSummary> out;
  for (MachineSummary& m : each) {
    if (out.empty() || out.back().id != m.id) {
      out.push_back(std::move(m));
    } else {
      for (std::string& gpu : m.gpu_ids) out.back().gpu_ids.push_back(std::move(gpu));
    }
  }
  return out;
}

StatusOr<std::vector<OnlineSpan>> OnlineSpansSince(store::Tx& tx, Timestamp from,
                                                   const std::string& machine_id) {
  std::string sql = "SELECT " + OnlineSpanRows().Select() +
                    " FROM machine_intervals WHERE state = " + SqlLiteral(MachineStatus::kOnline) +
                    " AND (ended_at IS NULL OR ended_at > ?)";
  std::vector<store::Value> params{ToUnixMicros(from)};
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query(sql + " ORDER BY machine_id, started_at", params));
  return OnlineSpanRows().Decode(rows);
}

StatusOr<std::vector<WorkloadEnding>> WorkloadEndings(store::Tx& tx, Timestamp from, Timestamp to,
                                                      const std::string& machine_id) {
  std::string sql =
      "SELECT " + EndingRows().Select() +
      " FROM workloads WHERE ended_at >= ? AND ended_at < ? AND end_party IS NOT NULL";
  std::vector<store::Value> params{ToUnixMicros(from), ToUnixMicros(to)};
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql + " ORDER BY ended_at, id", params));
  return EndingRows().Decode(rows);
}

StatusOr<std::vector<LoadedSamples>> LoadedSamplesBetween(store::Tx& tx, int64_t from_minute,
                                                          int64_t to_minute,
                                                          const std::string& gpu_id) {
  std::string sql =
      "SELECT " + LoadedRows().Select() +
      " FROM gpu_telemetry_minutes WHERE minute >= ? AND minute < ? AND loaded_samples > 0";
  std::vector<store::Value> params{from_minute, to_minute};
  if (!gpu_id.empty()) {
    sql += " AND gpu_id = ?";
    params.emplace_back(gpu_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql + " ORDER BY gpu_id, minute", params));
  return LoadedRows().Decode(rows);
}

StatusOr<std::string> HistoryMark(store::Tx& tx) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT (SELECT MAX(started_at) FROM machine_intervals), (SELECT MAX(ended_at) "
               "FROM workloads), (SELECT COUNT(*) FROM machines)"));
  return store::MarkOf(rows[0]);
}

}  // namespace gpunex::platform::fleet
