#include "platform/fleet/workloads.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "common/ids.h"
#include "common/paging.h"

namespace gpunex::platform::fleet {
namespace {

// Fields people try that the policy never allows, with the reason.
const std::map<std::string, std::string, std::less<>> kForbidden = {
    {"binds", "host mounts are never allowed; use /scratch"},
    {"mounts", "host mounts are never allowed; use /scratch"},
    {"volumes", "host mounts are never allowed; use /scratch"},
    {"privileged", "privileged containers are never allowed"},
    {"cap_add", "added capabilities are never allowed"},
    {"capabilities", "added capabilities are never allowed"},
    {"devices", "only the allocated GPUs are passed to a workload"},
    {"network_mode", "workloads always get their own network"},
    {"pid_mode", "workloads never share the host's process namespace"},
    {"ipc_mode", "workloads never share the host's IPC namespace"},
    {"security_opt", "the security options are fixed by the platform"},
    {"user", "the user is fixed by the image"},
};

constexpr const char* kColumns =
    "id, machine_id, provider_id, created_by, purpose, spec, gpu_ids, state, exit_code, end_reason, "
    "end_party, container_id, created_at, started_at, ended_at, updated_at";

json::value OptTime(const std::optional<int64_t>& t) {
  return t ? json::value(FormatRfc3339(*t)) : json::value(nullptr);
}

json::object ToJson(const store::Row& r) {
  json::object o{{"id", r.Str(0)},         {"machine_id", r.Str(1)}, {"provider_id", r.Str(2)},
                 {"created_by", r.Str(3)}, {"purpose", r.Str(4)},    {"state", r.Str(7)},
                 {"created_at", FormatRfc3339(r.Int(12))},           {"updated_at", FormatRfc3339(r.Int(15))}};
  auto spec = ParseJson(r.Str(5));
  o["spec"] = spec.ok() ? *spec : json::value(nullptr);
  auto gpus = ParseJson(r.Str(6));
  o["gpu_ids"] = gpus.ok() ? *gpus : json::value(json::array{});
  o["exit_code"] = r.IsNull(8) ? json::value(nullptr) : json::value(r.Int(8));
  o["end_reason"] = r.IsNull(9) ? json::value(nullptr) : json::value(r.Str(9));
  o["end_party"] = r.IsNull(10) ? json::value(nullptr) : json::value(r.Str(10));
  o["container_id"] = r.IsNull(11) ? json::value(nullptr) : json::value(r.Str(11));
  o["started_at"] = OptTime(r.OptInt(13));
  o["ended_at"] = OptTime(r.OptInt(14));
  return o;
}

StatusOr<store::Row> LoadVisible(store::Tx& tx, const accounts::Principal& p, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query(std::string("SELECT ") + kColumns + " FROM workloads WHERE id = ?", {id}));
  if (rows.empty() || (!p.IsAdmin() && rows[0].Str(2) != p.user.id && rows[0].Str(3) != p.user.id)) {
    return NotFound("no such workload");
  }
  return rows[0];
}

bool IsImageRef(const std::string& s) {
  static const std::regex re(
      R"(^([a-zA-Z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$)");
  return s.size() <= 255 && std::regex_match(s, re);
}

}  // namespace

StatusOr<std::set<std::string>> GpusInActiveWorkloads(store::Tx& tx, const std::string& machine_id) {
  std::set<std::string> busy;
  GPUNEX_ASSIGN_OR_RETURN(store::Rows active,
                          tx.Query("SELECT gpu_ids FROM workloads WHERE machine_id = ? AND state IN "
                                   "('pending', 'starting', 'running')",
                                   {machine_id}));
  for (const auto& a : active) {
    json::value ids = ParseJsonOr(a.Str(0), json::array{});
    if (!ids.is_array()) continue;
    for (const auto& id : ids.get_array()) {
      if (id.is_string()) busy.insert(std::string(id.get_string()));
    }
  }
  return busy;
}

StatusOr<json::object> Workloads::Create(const accounts::Principal& p, const json::value& body) {
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  for (const auto& kv : body.get_object()) {
    auto it = kForbidden.find(std::string_view(kv.key()));
    if (it != kForbidden.end()) errors.emplace(std::string(kv.key()), it->second);
  }
  std::vector<std::string_view> known = {"machine_id", "gpu_ids", "image",  "command",    "env",
                                         "memory_mb",  "cpus",    "pids_limit", "scratch_mb", "timeout_s"};
  for (const auto& kv : body.get_object()) {
    if (kForbidden.count(std::string_view(kv.key()))) continue;
    if (std::find(known.begin(), known.end(), std::string_view(kv.key())) == known.end()) {
      errors.emplace(std::string(kv.key()), "is not a known field");
    }
  }
  auto machine_id = r.String("machine_id", true, 64);
  auto image = r.String("image", true, 255);
  if (image && !IsImageRef(*image)) r.Fail("image", "must be an image reference such as \"registry/name:tag\"");
  std::vector<std::string> gpu_ids;
  if (const json::array* a = r.Array("gpu_ids", true, 0, 16)) {
    for (const auto& g : *a) {
      if (!g.is_string() || g.get_string().size() > 64) {
        r.Fail("gpu_ids", "must be GPU ids from the machine");
        break;
      }
      gpu_ids.emplace_back(g.get_string());
    }
    std::set<std::string> uniq(gpu_ids.begin(), gpu_ids.end());
    if (uniq.size() != gpu_ids.size()) r.Fail("gpu_ids", "must not repeat a GPU");
  }
  json::array command;
  if (const json::array* a = r.Array("command", false, 0, 64)) {
    for (const auto& c : *a) {
      if (!c.is_string() || c.get_string().size() > 4096 || !IsCleanText(c.get_string(), true)) {
        r.Fail("command", "must be a list of at most 64 strings of at most 4096 characters");
        break;
      }
      command.push_back(c);
    }
  }
  json::object env;
  if (const json::object* e = r.Object("env", false)) {
    static const std::regex name_re("^[A-Za-z_][A-Za-z0-9_]{0,127}$");
    if (e->size() > 128) r.Fail("env", "must have at most 128 variables");
    for (const auto& kv : *e) {
      if (!std::regex_match(std::string(kv.key()), name_re)) {
        errors.emplace("env." + std::string(kv.key()), "is not a valid variable name");
      } else if (!kv.value().is_string() || kv.value().get_string().size() > 32768 ||
                 !IsCleanText(kv.value().get_string(), true)) {
        errors.emplace("env." + std::string(kv.key()), "must be a string of at most 32768 characters");
      } else {
        env[kv.key()] = kv.value();
      }
    }
  }
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(gpu_ids.size()));
  int64_t memory_mb = r.Int("memory_mb", false, 64, kMaxWorkloadMemoryMb).value_or(4096 * n);
  double cpus = r.Number("cpus", false, 0.09, 256).value_or(2.0 * static_cast<double>(n));
  int64_t pids = r.Int("pids_limit", false, 16, 32768).value_or(1024);
  int64_t scratch = r.Int("scratch_mb", false, 16, kMaxWorkloadScratchMb).value_or(4096);
  int64_t timeout = r.Int("timeout_s", false, 0, kMaxWorkloadTimeoutS).value_or(0);
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  json::object out;
  std::string wid = NewId("wl");
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows m,
                            tx.Query("SELECT provider_id, host FROM machines WHERE id = ?", {*machine_id}));
    if (m.empty() || (!p.IsAdmin() && m[0].Str(0) != p.user.id)) {
      return FieldError("machine_id", "is not a machine you may run workloads on");
    }
    auto host = ParseJson(m[0].Str(1));
    if (host.ok() && host->is_object()) {
      const auto& h = host->get_object();
      if (h.contains("ram_mb") && h.at("ram_mb").is_int64() && h.at("ram_mb").get_int64() > 0 &&
          memory_mb > h.at("ram_mb").get_int64()) {
        return FieldError("memory_mb", "is more than the machine has (" +
                                           std::to_string(h.at("ram_mb").get_int64()) + " MiB)");
      }
      if (h.contains("cpu_cores") && h.at("cpu_cores").is_int64() && h.at("cpu_cores").get_int64() > 0 &&
          cpus > static_cast<double>(h.at("cpu_cores").get_int64())) {
        return FieldError("cpus", "is more than the machine has");
      }
    }
    // The GPUs must be this machine's, present, designated by the provider, and free.
    json::array uuids;
    GPUNEX_ASSIGN_OR_RETURN(std::set<std::string> busy, GpusInActiveWorkloads(tx, *machine_id));
    for (size_t i = 0; i < gpu_ids.size(); ++i) {
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows g, tx.Query("SELECT uuid, present, enabled FROM machine_gpus WHERE id = ? AND machine_id = ?",
                                  {gpu_ids[i], *machine_id}));
      std::string field = "gpu_ids[" + std::to_string(i) + "]";
      if (g.empty()) return FieldError(field, "is not a GPU of this machine");
      if (!g[0].Bool(1)) return FieldError(field, "is not present on the machine now");
      if (!g[0].Bool(2)) return FieldError(field, "is not offered by the provider");
      if (busy.count(gpu_ids[i])) return FieldError(field, "is in use by another workload");
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows benchmarking,
          tx.Query("SELECT 1 FROM benchmark_gpus bg JOIN benchmark_runs br ON br.id = bg.run_id "
                   "WHERE bg.gpu_id = ? AND br.state = 'running'",
                   {gpu_ids[i]}));
      if (!benchmarking.empty()) return FieldError(field, "is being benchmarked; try again in a few minutes");
      uuids.emplace_back(g[0].Str(0));
    }
    json::array ids;
    for (const auto& id : gpu_ids) ids.emplace_back(id);
    json::object spec{{"workload_id", wid},    {"image", *image},       {"command", command},
                      {"env", env},            {"gpu_uuids", uuids},    {"memory_mb", memory_mb},
                      {"cpus", cpus},          {"pids_limit", pids},    {"scratch_mb", scratch},
                      {"timeout_s", timeout}};
    const UnixMicros now = NowMicros();
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO workloads (id, machine_id, provider_id, created_by, purpose, spec, gpu_ids, "
                "state, created_at, updated_at) VALUES (?, ?, ?, ?, 'custom', ?, ?, 'pending', ?, ?)",
                {wid, *machine_id, m[0].Str(0), p.user.id, ToJsonText(spec), ToJsonText(ids), now, now})
            .status());
    GPUNEX_RETURN_IF_ERROR(Fleet::EnqueueCommand(tx, *machine_id, "start_workload", spec).status());
    GPUNEX_RETURN_IF_ERROR(accounts::Audit(tx, p.user.id, "workload.created", wid, p.ip,
                                           {{"machine_id", *machine_id}}));
    GPUNEX_ASSIGN_OR_RETURN(store::Row row, LoadVisible(tx, p, wid));
    out = ToJson(row);
    return Status::Ok();
  }));
  fleet_.Kick(*machine_id);
  return out;
}

StatusOr<json::object> Workloads::Get(const accounts::Principal& p, const std::string& id) {
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Row row, LoadVisible(tx, p, id));
    out = ToJson(row);
    return Status::Ok();
  }));
  return out;
}

StatusOr<json::object> Workloads::List(const accounts::Principal& p, const std::string& machine_id,
                                       const std::string& limit_s, const std::string& cursor) {
  GPUNEX_ASSIGN_OR_RETURN(int limit, ParsePageLimit(limit_s, 100, 500));
  std::string after;
  if (!cursor.empty() && !Base64UrlDecode(cursor, &after)) return FieldError("cursor", "is not a valid cursor");
  std::string sql = std::string("SELECT ") + kColumns + " FROM workloads WHERE id > ?";
  std::vector<store::Value> params{after};
  if (!p.IsAdmin()) {
    sql += " AND (provider_id = ? OR created_by = ?)";
    params.emplace_back(p.user.id);
    params.emplace_back(p.user.id);
  }
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  sql += " ORDER BY id LIMIT ?";
  params.emplace_back(int64_t{limit + 1});
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
    json::array items;
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < limit; ++i) items.push_back(ToJson(rows[i]));
    out["items"] = std::move(items);
    out["next_cursor"] = static_cast<int>(rows.size()) > limit
                             ? json::value(Base64UrlEncode(rows[limit - 1].Str(0)))
                             : json::value(nullptr);
    return Status::Ok();
  }));
  return out;
}

StatusOr<json::object> Workloads::Stop(const accounts::Principal& p, const std::string& id) {
  std::string machine_id;
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Row row, LoadVisible(tx, p, id));
    machine_id = row.Str(1);
    if (!IsActiveWorkloadState(row.Str(7))) {
      return FailedPrecondition("the workload has already ended (" + row.Str(7) + ")");
    }
    GPUNEX_RETURN_IF_ERROR(
        Fleet::EnqueueCommand(tx, machine_id, "stop_workload", {{"workload_id", id}}).status());
    GPUNEX_RETURN_IF_ERROR(accounts::Audit(tx, p.user.id, "workload.stop_requested", id, p.ip));
    out = ToJson(row);
    return Status::Ok();
  }));
  fleet_.Kick(machine_id);
  out["stop_requested"] = true;
  return out;
}

StatusOr<json::object> Workloads::Logs(const accounts::Principal& p, const std::string& id,
                                       const std::string& after) {
  int64_t after_at = -1;
  if (!after.empty()) {
    try {
      size_t used = 0;
      after_at = std::stoll(after, &used);
      if (used != after.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      return FieldError("after", "must be a cursor from a previous answer");
    }
  }
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Row row, LoadVisible(tx, p, id));
    (void)row;
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query("SELECT stream, seq, at, data FROM workload_logs WHERE workload_id = ? AND at > ? "
                 "ORDER BY at, stream, seq LIMIT 1000",
                 {id, after_at}));
    json::array items;
    int64_t last = after_at;
    for (const auto& r : rows) {
      items.push_back(json::object{{"stream", r.Str(0)}, {"seq", r.Int(1)}, {"at", FormatRfc3339(r.Int(2))},
                                   {"data", r.Str(3)}});
      last = r.Int(2);
    }
    out["items"] = std::move(items);
    out["next_cursor"] = std::to_string(last);
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::fleet
