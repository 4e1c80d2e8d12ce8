#include "platform/benchmarks/benchmarks.h"

#include <algorithm>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "common/paging.h"
#include "platform/catalog/catalog.h"
#include "platform/fleet/workloads.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {
namespace {

constexpr char kCommandKind[] = "run_benchmark";
constexpr char kDelistPrefix[] = "benchmark: ";
constexpr size_t kMaxReasonLength = 1000;

json::object ReferenceJson(const std::optional<GpuModel>& m) {
  if (!m) return {};
  return {{"fp32_tflops", m->fp32_tflops},
          {"fp16_tflops", m->fp16_tflops},
          {"fp16_tensor_tflops", m->fp16_tensor_tflops},
          {"bf16_tensor_tflops", m->fp16_tensor_tflops},
          {"tf32_tensor_tflops", m->tf32_tensor_tflops},
          {"memory_gbps", m->mem_bw_gbps}};
}

json::object ThresholdsJson(const Thresholds& t, const std::optional<GpuModel>& m) {
  json::object o{{"min_over_median", t.min_over_median},
                 {"max_thermal_throttle_fraction", t.thermal_throttle_fraction}};
  if (m) {
    o["fp32_tflops"] = m->fp32_tflops * t.fp32;
    o["fp16_tflops"] = m->fp16_tflops * t.fp16;
    o["fp16_tensor_tflops"] = m->fp16_tensor_tflops * t.fp16_tensor;
    o["bf16_tensor_tflops"] = m->fp16_tensor_tflops * t.bf16_tensor;
    o["tf32_tensor_tflops"] = m->tf32_tensor_tflops * t.tf32_tensor;
    o["memory_triad_gbps"] = m->mem_bw_gbps * t.memory;
  }
  return o;
}

std::string Truncate(std::string s) {
  if (s.size() > kMaxReasonLength) {
    s.resize(kMaxReasonLength);
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
    s += "…";
  }
  return s;
}

std::string GpuLabel(const std::string& name, int64_t index) {
  return name + " (GPU " + std::to_string(index) + ")";
}

}  // namespace

Benchmarks::Benchmarks(store::Database& db, fleet::Fleet& fleet, BenchmarksOptions options)
    : db_(db), fleet_(fleet), options_(std::move(options)) {
  fleet_.OnResult(kCommandKind, [this](store::Tx& tx, const std::string& machine_id,
                                       const json::object& payload, const protocol::Result& r) {
    return ApplyResult(tx, machine_id, payload, r);
  });
}

Benchmarks::~Benchmarks() { Stop(); }

void Benchmarks::Start() {
  std::lock_guard g(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      Status st = TickOnce();
      if (!st.ok()) LogWarn("benchmarks.tick_failed", {{"error", st.ToString()}});
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(options_.tick_ms), [this] { return stopping_; });
    }
  });
}

void Benchmarks::Stop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

const Thresholds& Benchmarks::ThresholdsFor(const std::string& catalog_id) const {
  auto it = options_.by_model.find(catalog_id);
  return it == options_.by_model.end() ? options_.thresholds : it->second;
}

StatusOr<std::string> Benchmarks::Schedule(store::Tx& tx, const std::string& machine_id,
                                           const std::string& requested_by) {
  const UnixMicros now = options_.clock->Now();
  GPUNEX_ASSIGN_OR_RETURN(store::Rows running,
                          tx.Query("SELECT 1 FROM benchmark_runs WHERE machine_id = ? AND state = 'running'",
                                   {machine_id}));
  if (!running.empty()) return std::string();
  GPUNEX_ASSIGN_OR_RETURN(store::Rows changed,
                          tx.Query("SELECT MAX(at) FROM machine_events WHERE machine_id = ? AND "
                                   "kind = 'inventory_changed'",
                                   {machine_id}));
  const UnixMicros changed_at = changed.empty() || changed[0].IsNull(0) ? 0 : changed[0].Int(0);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows gpus,
      tx.Query("SELECT id, uuid, catalog_id, last_benchmark_at, benchmark_due_at FROM machine_gpus "
               "WHERE machine_id = ? AND present = 1 AND enabled = 1 ORDER BY idx",
               {machine_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::set<std::string> busy, fleet::GpusInActiveWorkloads(tx, machine_id));
  GPUNEX_ASSIGN_OR_RETURN(store::Rows ever,
                          tx.Query("SELECT COUNT(*) FROM benchmark_runs WHERE machine_id = ?", {machine_id}));
  const UnixMicros periodic_cutoff = now - options_.interval_s * kMicrosPerSecond;
  std::string reason = requested_by.empty() ? "" : "requested";
  json::array payload_gpus;
  std::vector<const store::Row*> chosen;
  for (const auto& g : gpus) {
    if (busy.count(g.Str(0))) continue;
    std::string why;
    if (!g.IsNull(4)) {
      // Its last run could not measure it: again once retry_after_s has passed.
      if (g.Int(4) <= now) why = "retry";
    } else if (g.IsNull(3)) {
      why = ever[0].Int(0) == 0 ? "first_connect" : "new_gpu";
    } else if (g.Int(3) < changed_at) {
      why = "hardware_change";
    } else if (g.Int(3) < periodic_cutoff) {
      why = "periodic";
    }
    if (why.empty() && requested_by.empty()) continue;
    // The most telling reason names the run: a change beats a schedule.
    static const std::vector<std::string> kRank = {"",       "periodic",        "retry",
                                                   "new_gpu", "hardware_change", "first_connect"};
    auto rank = [](const std::string& r) {
      return std::find(kRank.begin(), kRank.end(), r) - kRank.begin();
    };
    if (requested_by.empty() && rank(why) > rank(reason)) reason = why;
    chosen.push_back(&g);
    payload_gpus.push_back(json::object{{"uuid", g.Str(1)}, {"catalog_id", g.Str(2)}});
  }
  if (chosen.empty()) return std::string();
  const bool machine_phases = busy.empty();
  const std::string run_id = NewId("bmk");
  json::object payload{{"benchmark_id", run_id},
                       {"gpus", std::move(payload_gpus)},
                       {"machine_phases", machine_phases},
                       {"sustain_s", options_.sustain_s},
                       {"storage",
                        {{"file_mb", options_.storage_file_mb}, {"seconds_per_phase", options_.storage_seconds}}},
                       {"network", {{"mb", options_.network_mb}, {"pings", options_.pings}}}};
  GPUNEX_ASSIGN_OR_RETURN(std::string command_id,
                          fleet::Fleet::EnqueueCommand(tx, machine_id, kCommandKind, payload));
  GPUNEX_ASSIGN_OR_RETURN(store::Rows m, tx.Query("SELECT emulated FROM machines WHERE id = ?", {machine_id}));
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("INSERT INTO benchmark_runs (id, machine_id, reason, state, requested_by, command_id, "
              "machine_phases, emulated, failures, created_at) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, '[]', ?)",
              {run_id, machine_id, reason,
               requested_by.empty() ? store::Value(nullptr) : store::Value(requested_by), command_id,
               int64_t{machine_phases}, m.empty() ? int64_t{0} : m[0].Int(0), now})
          .status());
  for (const auto* g : chosen) {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO benchmark_gpus (run_id, gpu_id, uuid, catalog_id, state, failures, created_at) "
                "VALUES (?, ?, ?, ?, 'running', '[]', ?)",
                {run_id, g->Str(0), g->Str(1), g->Str(2), now})
            .status());
  }
  return run_id;
}

Status Benchmarks::TickOnce() {
  const UnixMicros now = options_.clock->Now();
  // Runs without a result in time: the agent died or never answered.
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    const UnixMicros cutoff = now - options_.run_timeout_s * kMicrosPerSecond;
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows overdue,
        tx.Query("SELECT id FROM benchmark_runs WHERE state = 'running' AND created_at < ?", {cutoff}));
    for (const auto& r : overdue) {
      const std::string error = "no result within " + std::to_string(options_.run_timeout_s) + " s";
      GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE benchmark_runs SET state = 'error', error = ?, finished_at = ? "
                                     "WHERE id = ?",
                                     {error, now, r.Str(0)})
                                 .status());
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("UPDATE machine_gpus SET benchmark_due_at = ? WHERE id IN "
                  "(SELECT gpu_id FROM benchmark_gpus WHERE run_id = ?)",
                  {now + options_.retry_after_s * kMicrosPerSecond, r.Str(0)})
              .status());
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("UPDATE benchmark_gpus SET state = 'error', error = ? WHERE run_id = ?", {error, r.Str(0)})
              .status());
      LogWarn("benchmark.timed_out", {{"benchmark_id", r.Str(0)}});
    }
    return Status::Ok();
  }));
  // Online machines with a GPU that may be due and no run going: one indexed query, then
  // the exact decision per machine.
  store::Rows candidates;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        candidates,
        tx.Query("SELECT m.id FROM machines m WHERE m.status = 'online' AND NOT EXISTS "
                 "(SELECT 1 FROM benchmark_runs r WHERE r.machine_id = m.id AND r.state = 'running') AND EXISTS "
                 "(SELECT 1 FROM machine_gpus g WHERE g.machine_id = m.id AND g.present = 1 AND g.enabled = 1 AND "
                 "(g.benchmark_due_at <= ? OR (g.benchmark_due_at IS NULL AND (g.last_benchmark_at IS NULL OR "
                 "g.last_benchmark_at < ? OR g.last_benchmark_at < (SELECT MAX(e.at) FROM machine_events e "
                 "WHERE e.machine_id = m.id AND e.kind = 'inventory_changed')))))",
                 {now, now - options_.interval_s * kMicrosPerSecond}));
    return Status::Ok();
  }));
  for (const auto& c : candidates) {
    const std::string mid = c.Str(0);
    std::string run_id;
    Status st = db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(run_id, Schedule(tx, mid, ""));
      return Status::Ok();
    });
    if (!st.ok()) {
      // Another instance may have started a run on it at the same moment.
      LogWarn("benchmark.schedule_failed", {{"machine_id", mid}, {"error", st.ToString()}});
      continue;
    }
    if (run_id.empty()) continue;
    LogInfo("benchmark.scheduled", {{"machine_id", mid}, {"benchmark_id", run_id}});
    fleet_.Kick(mid);
  }
  return Status::Ok();
}

StatusOr<json::object> Benchmarks::Request(const accounts::Principal& p, const std::string& machine_id) {
  std::string run_id;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows m,
                            tx.Query("SELECT provider_id, status FROM machines WHERE id = ?", {machine_id}));
    if (m.empty() || (!p.IsAdmin() && m[0].Str(0) != p.user.id)) return NotFound("no such machine");
    if (!options_.enabled) return FailedPrecondition("benchmarks are turned off on this platform");
    if (m[0].Str(1) != "online") return FailedPrecondition("the machine is offline; a benchmark needs its agent");
    GPUNEX_ASSIGN_OR_RETURN(store::Rows running,
                            tx.Query("SELECT id FROM benchmark_runs WHERE machine_id = ? AND state = 'running'",
                                     {machine_id}));
    if (!running.empty()) {
      return FailedPrecondition("a benchmark is already running on this machine (" + running[0].Str(0) + ")");
    }
    GPUNEX_ASSIGN_OR_RETURN(run_id, Schedule(tx, machine_id, p.user.id));
    if (run_id.empty()) {
      return FailedPrecondition("no GPU of this machine can be benchmarked now: each is rented, disabled or absent");
    }
    return accounts::Audit(tx, p.user.id, "benchmark.requested", run_id, p.ip, {{"machine_id", machine_id}});
  }));
  fleet_.Kick(machine_id);
  GPUNEX_ASSIGN_OR_RETURN(json::object page, List(p, machine_id, "1", ""));
  const json::array& items = page.at("items").as_array();
  if (items.empty()) return Internal("the new benchmark run is missing");
  return items.front().as_object();
}

Status Benchmarks::ApplyResult(store::Tx& tx, const std::string& machine_id, const json::object& payload,
                               const protocol::Result& r) {
  const UnixMicros now = options_.clock->Now();
  if (!payload.contains("benchmark_id") || !payload.at("benchmark_id").is_string()) {
    return Internal("run_benchmark command without benchmark_id");
  }
  const std::string run_id(payload.at("benchmark_id").get_string());
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows run,
      tx.Query("SELECT state, machine_phases FROM benchmark_runs WHERE id = ? AND machine_id = ?",
               {run_id, machine_id}));
  if (run.empty() || run[0].Str(0) != "running") return Status::Ok();  // timed out before
  const UnixMicros retry_at = now + options_.retry_after_s * kMicrosPerSecond;

  auto fail_run = [&](const std::string& error) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE benchmark_runs SET state = 'error', error = ?, finished_at = ? WHERE id = ?",
                {Truncate(error), now, run_id})
            .status());
    GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE benchmark_gpus SET state = 'error', error = ? WHERE run_id = ?",
                                   {Truncate(error), run_id})
                               .status());
    LogWarn("benchmark.error", {{"benchmark_id", run_id}, {"machine_id", machine_id}, {"error", error}});
    return tx
        .Exec("UPDATE machine_gpus SET benchmark_due_at = ? WHERE id IN "
              "(SELECT gpu_id FROM benchmark_gpus WHERE run_id = ?)",
              {retry_at, run_id})
        .status();
  };
  if (!r.ok) return fail_run("the agent could not run the benchmark: " + r.error);

  // Machine-level figures first: their failures count against every GPU in the run.
  std::vector<Failure> machine_failures;
  json::value network_json = nullptr, storage_json = nullptr;
  std::vector<std::string> notes;
  if (run[0].Bool(1)) {
    if (r.data.contains("network") && r.data.at("network").is_object()) {
      auto n = ParseNetworkJson(r.data.at("network").get_object(), "network");
      if (!n.ok()) return fail_run("malformed network figures: " + n.status().ToString());
      network_json = ToJson(*n);
      auto f = CheckNetwork(*n, options_.thresholds);
      machine_failures.insert(machine_failures.end(), f.begin(), f.end());
    } else if (r.data.contains("network_error") && r.data.at("network_error").is_string()) {
      notes.push_back("network: " + std::string(r.data.at("network_error").get_string()));
    }
    if (r.data.contains("storage") && r.data.at("storage").is_object()) {
      auto s = ParseStorageJson(r.data.at("storage").get_object(), "storage");
      if (!s.ok()) return fail_run("malformed storage figures: " + s.status().ToString());
      storage_json = ToJson(*s);
      auto f = CheckStorage(*s, options_.thresholds);
      machine_failures.insert(machine_failures.end(), f.begin(), f.end());
    } else if (r.data.contains("storage_error") && r.data.at("storage_error").is_string()) {
      notes.push_back("storage: " + std::string(r.data.at("storage_error").get_string()));
    }
  }
  std::map<std::string, const json::object*> by_uuid;
  if (r.data.contains("gpus") && r.data.at("gpus").is_array()) {
    for (const auto& g : r.data.at("gpus").get_array()) {
      if (g.is_object() && g.get_object().contains("uuid") && g.get_object().at("uuid").is_string()) {
        by_uuid[std::string(g.get_object().at("uuid").get_string())] = &g.get_object();
      }
    }
  }

  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows gpus,
      tx.Query("SELECT bg.gpu_id, bg.uuid, bg.catalog_id, g.name, g.idx, g.enabled, g.present, g.delisted_reason, "
               "g.info FROM benchmark_gpus bg JOIN machine_gpus g ON g.id = bg.gpu_id WHERE bg.run_id = ? "
               "ORDER BY g.idx",
               {run_id}));
  int passed = 0, failed = 0, errored = 0;
  bool emulated = false;
  std::vector<std::string> delisted, relisted, first_listed;
  std::string delist_details;
  for (const auto& g : gpus) {
    const std::string gpu_id = g.Str(0), uuid = g.Str(1), catalog_id = g.Str(2);
    const std::string label = GpuLabel(g.Str(3), g.Int(4));
    auto gpu_error = [&](const std::string& error) -> Status {
      ++errored;
      GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE benchmark_gpus SET state = 'error', error = ? WHERE run_id = ? AND "
                                     "gpu_id = ?",
                                     {Truncate(error), run_id, gpu_id})
                                 .status());
      return tx.Exec("UPDATE machine_gpus SET benchmark_due_at = ? WHERE id = ?", {retry_at, gpu_id}).status();
    };
    auto it = by_uuid.find(uuid);
    if (it == by_uuid.end()) {
      GPUNEX_RETURN_IF_ERROR(gpu_error("the agent reported no result for this GPU"));
      continue;
    }
    const json::object& res = *it->second;
    const bool ok = res.contains("ok") && res.at("ok").is_bool() && res.at("ok").get_bool();
    if (!ok || !res.contains("result") || !res.at("result").is_object()) {
      std::string why = res.contains("error") && res.at("error").is_string()
                            ? std::string(res.at("error").get_string())
                            : std::string("no figures");
      GPUNEX_RETURN_IF_ERROR(gpu_error("the benchmark could not run: " + why));
      continue;
    }
    auto figures = ParseGpubenchJson(res.at("result").get_object(), "result");
    if (!figures.ok()) {
      GPUNEX_RETURN_IF_ERROR(gpu_error("malformed figures: " + figures.status().ToString()));
      continue;
    }
    emulated = emulated || figures->emulated;
    GPUNEX_ASSIGN_OR_RETURN(std::optional<GpuModel> model, catalog::FindModel(tx, catalog_id));
    int64_t width_max = 0;
    if (auto info = ParseJson(g.Str(8)); info.ok() && info->is_object()) {
      const auto& io = info->get_object();
      if (io.contains("pcie_width_max") && io.at("pcie_width_max").is_int64()) {
        width_max = io.at("pcie_width_max").get_int64();
      }
    }
    std::vector<Failure> failures =
        CheckGpu(*figures, model ? &*model : nullptr, width_max, ThresholdsFor(catalog_id));
    failures.insert(failures.end(), machine_failures.begin(), machine_failures.end());
    const double score = PerformanceScore(*figures);
    const bool pass = failures.empty();
    pass ? ++passed : ++failed;
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE benchmark_gpus SET state = ?, figures = ?, score = ?, failures = ? WHERE run_id = ? AND "
                "gpu_id = ?",
                {pass ? "passed" : "failed", ToJsonText(ToJson(*figures)), score, ToJsonText(ToJson(failures)),
                 run_id, gpu_id})
            .status());
    // Listing: only this module sets delisted_reason today; a reason it did not set is
    // left alone.
    const bool had_reason = !g.IsNull(7);
    const std::string old_reason = had_reason ? g.Str(7) : "";
    const bool ours = !had_reason || old_reason == kAwaitingFirstBenchmark || old_reason.starts_with(kDelistPrefix);
    std::string new_reason = old_reason;
    if (ours) {
      new_reason = pass ? "" : Truncate(kDelistPrefix + Describe(failures));
      if (!pass && !old_reason.starts_with(kDelistPrefix)) {
        delisted.push_back(label);
        delist_details += "\n" + label + ":\n";
        for (const auto& f : failures) delist_details += "  - " + Describe({f}) + ". " + f.guidance + "\n";
      }
      if (pass && old_reason.starts_with(kDelistPrefix)) relisted.push_back(label);
      if (pass && old_reason == kAwaitingFirstBenchmark) first_listed.push_back(label);
    }
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE machine_gpus SET performance_score = ?, last_benchmark_at = ?, benchmark_due_at = NULL, "
                "delisted_reason = ?, listed = ? WHERE id = ?",
                {score, now, new_reason.empty() ? store::Value(nullptr) : store::Value(new_reason),
                 int64_t{new_reason.empty() && g.Bool(5) && g.Bool(6)}, gpu_id})
            .status());
  }
  const std::string state = errored == static_cast<int>(gpus.size()) ? "error" : (failed || errored) ? "failed" : "passed";
  std::string error;
  for (const auto& n : notes) error += (error.empty() ? "" : "; ") + n;
  if (errored) error += std::string(error.empty() ? "" : "; ") + std::to_string(errored) + " GPU(s) not measured";
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("UPDATE benchmark_runs SET state = ?, network = ?, storage = ?, failures = ?, error = ?, "
              "emulated = CASE WHEN ? = 1 THEN 1 ELSE emulated END, finished_at = ? WHERE id = ?",
              {state, network_json.is_null() ? store::Value(nullptr) : store::Value(ToJsonText(network_json)),
               storage_json.is_null() ? store::Value(nullptr) : store::Value(ToJsonText(storage_json)),
               ToJsonText(ToJson(machine_failures)), error.empty() ? store::Value(nullptr) : store::Value(Truncate(error)),
               int64_t{emulated}, now, run_id})
          .status());
  LogInfo("benchmark.finished", {{"benchmark_id", run_id},
                                 {"machine_id", machine_id},
                                 {"state", state},
                                 {"passed", passed},
                                 {"failed", failed},
                                 {"errors", errored}});

  // Tell the provider what changed for their listing.
  if (delisted.empty() && relisted.empty() && first_listed.empty()) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows owner,
      tx.Query("SELECT u.id, u.email, u.name, m.name FROM machines m JOIN users u ON u.id = m.provider_id "
               "WHERE m.id = ?",
               {machine_id}));
  if (owner.empty()) return Status::Ok();
  const std::string user_id = owner[0].Str(0), email = owner[0].Str(1), name = owner[0].Str(2);
  const std::string machine_name = owner[0].Str(3);
  const std::string link = "/#/provider/benchmark?machine=" + machine_id;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  auto tell = [&](std::string_view kind, const std::string& title, const std::string& text,
                  bool send_email) -> Status {
    GPUNEX_RETURN_IF_ERROR(notify::AddNotification(tx, user_id, kind, title, text, link));
    if (!send_email) return Status::Ok();
    notify::Email e;
    e.to = email;
    e.subject = "gpunex: " + title;
    e.body = "Hello " + (name.empty() ? std::string("there") : name) + ",\n\n" + text +
             "\n\nSee the Benchmark tab of your Provider Dashboard: " + options_.public_url + link +
             "\n\nThe gpunex team\n";
    e.kind = std::string(kind);
    return notify::EnqueueEmail(tx, e, options_.mail_domain);
  };
  if (!delisted.empty()) {
    GPUNEX_RETURN_IF_ERROR(tell(
        "benchmark.delisted", "GPU delisted on " + machine_name + " after its benchmark",
        "These GPUs of machine " + machine_name + " did not reach the minimum figures and are no longer offered "
            "to customers: " + join(delisted) + ".\n" + delist_details +
            "\nWhen you have fixed it, ask for a re-run in the Benchmark tab; a GPU that passes is listed "
            "again at once.",
        true));
  }
  if (!relisted.empty()) {
    GPUNEX_RETURN_IF_ERROR(tell("benchmark.relisted", "GPU listed again on " + machine_name,
                                "These GPUs of machine " + machine_name +
                                    " passed their benchmark re-run and are offered to customers again: " +
                                    join(relisted) + ".",
                                true));
  }
  if (!first_listed.empty()) {
    GPUNEX_RETURN_IF_ERROR(tell("benchmark.listed", "GPU listed on " + machine_name,
                                "These GPUs of machine " + machine_name +
                                    " passed their first benchmark and are now offered to customers: " +
                                    join(first_listed) + ".",
                                false));
  }
  return Status::Ok();
}

StatusOr<json::object> Benchmarks::List(const accounts::Principal& p, const std::string& machine_id,
                                        const std::string& limit_text, const std::string& cursor) {
  GPUNEX_ASSIGN_OR_RETURN(int limit, ParsePageLimit(limit_text, 20, 100));
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows m, tx.Query("SELECT provider_id FROM machines WHERE id = ?", {machine_id}));
    if (m.empty() || (!p.IsAdmin() && m[0].Str(0) != p.user.id)) return NotFound("no such machine");
    std::string sql =
        "SELECT id, reason, state, requested_by, machine_phases, emulated, network, storage, failures, error, "
        "created_at, finished_at FROM benchmark_runs WHERE machine_id = ?";
    std::vector<store::Value> params{machine_id};
    if (!cursor.empty()) {
      sql += " AND id < ?";
      params.emplace_back(cursor);
    }
    sql += " ORDER BY id DESC LIMIT ?";
    params.emplace_back(int64_t{limit} + 1);
    GPUNEX_ASSIGN_OR_RETURN(store::Rows runs, tx.Query(sql, params));
    json::array items;
    std::map<std::string, std::optional<GpuModel>> models;
    for (size_t i = 0; i < runs.size() && i < static_cast<size_t>(limit); ++i) {
      const auto& r = runs[i];
      json::object run{{"id", r.Str(0)},
                       {"reason", r.Str(1)},
                       {"state", r.Str(2)},
                       {"requested", !r.IsNull(3)},
                       {"machine_phases", r.Bool(4)},
                       {"emulated", r.Bool(5)},
                       {"network", r.IsNull(6) ? json::value(nullptr) : ParseJsonOr(r.Str(6), nullptr)},
                       {"storage", r.IsNull(7) ? json::value(nullptr) : ParseJsonOr(r.Str(7), nullptr)},
                       {"machine_failures", ParseJsonOr(r.Str(8), json::array{})},
                       {"error", r.IsNull(9) ? json::value(nullptr) : json::value(r.Str(9))},
                       {"created_at", FormatRfc3339(r.Int(10))},
                       {"finished_at", r.IsNull(11) ? json::value(nullptr) : json::value(FormatRfc3339(r.Int(11)))}};
      GPUNEX_ASSIGN_OR_RETURN(
          store::Rows gs,
          tx.Query("SELECT bg.gpu_id, bg.uuid, bg.catalog_id, bg.state, bg.figures, bg.score, bg.failures, "
                   "bg.error, g.idx, g.name FROM benchmark_gpus bg JOIN machine_gpus g ON g.id = bg.gpu_id "
                   "WHERE bg.run_id = ? ORDER BY g.idx",
                   {r.Str(0)}));
      json::array gpus;
      for (const auto& g : gs) {
        const std::string catalog_id = g.Str(2);
        if (!models.count(catalog_id)) {
          GPUNEX_ASSIGN_OR_RETURN(models[catalog_id], catalog::FindModel(tx, catalog_id));
        }
        const auto& model = models[catalog_id];
        gpus.push_back(json::object{
            {"gpu_id", g.Str(0)},
            {"uuid", g.Str(1)},
            {"index", g.Int(8)},
            {"name", g.Str(9)},
            {"catalog_id", catalog_id},
            {"state", g.Str(3)},
            {"figures", g.IsNull(4) ? json::value(nullptr) : ParseJsonOr(g.Str(4), nullptr)},
            {"performance_score", g.IsNull(5) ? json::value(nullptr) : json::value(g.Real(5))},
            {"failures", ParseJsonOr(g.Str(6), json::array{})},
            {"error", g.IsNull(7) ? json::value(nullptr) : json::value(g.Str(7))},
            {"reference", model ? json::value(ReferenceJson(model)) : json::value(nullptr)},
            {"thresholds", ThresholdsJson(ThresholdsFor(catalog_id), model)}});
      }
      run["gpus"] = std::move(gpus);
      items.push_back(std::move(run));
    }
    out["items"] = std::move(items);
    out["next_cursor"] = runs.size() > static_cast<size_t>(limit) ? json::value(runs[limit - 1].Str(0))
                                                                   : json::value("");
    return Status::Ok();
  }));
  return out;
}

}  // namespace gpunex::platform::benchmarks
