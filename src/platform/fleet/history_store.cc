#include "platform/fleet/history_store.h"

#include "platform/store/coordination.h"

namespace gpunex::platform::fleet {

StatusOr<std::vector<MachineSummary>> MachineSummaries(store::Tx& tx,
                                                       const std::string& provider_id) {
  std::string where = provider_id.empty() ? "" : " WHERE m.provider_id = ?";
  std::vector<store::Value> params;
  if (!provider_id.empty()) params.emplace_back(provider_id);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT m.id, m.provider_id, m.name, m.status, m.created_at, g.id FROM machines m "
               "LEFT JOIN machine_gpus g ON g.machine_id = m.id AND g.present = 1" +
                   where + " ORDER BY m.id, g.idx",
               params));
  std::vector<MachineSummary> out;
  for (const store::Row& r : rows) {
    if (out.empty() || out.back().id != r.Str(0)) {
      out.push_back({r.Str(0), r.Str(1), r.Str(2), r.Str(3), r.Time(4), {}});
    }
    if (std::optional<std::string> gpu = r.OptStr(5)) out.back().gpu_ids.push_back(*gpu);
  }
  return out;
}

StatusOr<std::vector<OnlineSpan>> OnlineSpansSince(store::Tx& tx, Timestamp from,
                                                   const std::string& machine_id) {
  std::string sql =
      "SELECT machine_id, started_at, ended_at FROM machine_intervals WHERE state = 'online' "
      "AND (ended_at IS NULL OR ended_at > ?)";
  std::vector<store::Value> params{ToUnixMicros(from)};
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query(sql + " ORDER BY machine_id, started_at", params));
  std::vector<OnlineSpan> out;
  out.reserve(rows.size());
  for (const store::Row& r : rows) out.push_back({r.Str(0), r.Time(1), r.OptTime(2)});
  return out;
}

StatusOr<std::vector<WorkloadEnding>> WorkloadEndings(store::Tx& tx, Timestamp from, Timestamp to,
                                                      const std::string& machine_id) {
  std::string sql =
      "SELECT id, machine_id, ended_at, end_party, end_reason, exit_code FROM workloads "
      "WHERE ended_at >= ? AND ended_at < ? AND end_party IS NOT NULL";
  std::vector<store::Value> params{ToUnixMicros(from), ToUnixMicros(to)};
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql + " ORDER BY ended_at, id", params));
  std::vector<WorkloadEnding> out;
  for (const store::Row& r : rows) {
    out.push_back({r.Str(0), r.Str(1), r.Time(2), r.Str(3), r.OptStr(4).value_or(""), r.OptInt(5)});
  }
  return out;
}

StatusOr<std::vector<LoadedSamples>> LoadedSamplesBetween(store::Tx& tx, int64_t from_minute,
                                                          int64_t to_minute,
                                                          const std::string& gpu_id) {
  std::string sql =
      "SELECT gpu_id, minute, loaded_samples, loaded_throttled_samples FROM "
      "gpu_telemetry_minutes WHERE minute >= ? AND minute < ? AND loaded_samples > 0";
  std::vector<store::Value> params{from_minute, to_minute};
  if (!gpu_id.empty()) {
    sql += " AND gpu_id = ?";
    params.emplace_back(gpu_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql + " ORDER BY gpu_id, minute", params));
  std::vector<LoadedSamples> out;
  out.reserve(rows.size());
  for (const store::Row& r : rows) out.push_back({r.Str(0), r.Int(1), r.Int(2), r.Int(3)});
  return out;
}

StatusOr<std::string> HistoryMark(store::Tx& tx) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx.Query("SELECT (SELECT MAX(started_at) FROM machine_intervals), (SELECT MAX(ended_at) "
               "FROM workloads), (SELECT COUNT(*) FROM machines)"));
  return store::MarkOf(rows[0]);
}

}  // namespace gpunex::platform::fleet
