// /api/v1/workloads
#include <algorithm>
#include <limits>
#include <map>

#include "platform/api/api.h"

namespace gpunex::platform::api {
namespace {

// Fields people try that the policy never allows, with the reason (ISO-1).
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

constexpr std::string_view kKnown[] = {"machine_id", "gpu_ids",   "image", "command",
                                       "env",        "memory_mb", "cpus",  "pids_limit",
                                       "scratch_mb", "timeout_s", "ports"};

StatusOr<fleet::CreateWorkloadRequest> DecodeCreate(const json::object& body) {
  FieldErrors errors;
  JsonReader r(body, "", &errors);
  RejectContainerOptions(body, kKnown, errors);
  fleet::CreateWorkloadRequest req;
  req.machine_id = r.String("machine_id", true, 64).value_or("");
  if (const json::array* a = r.Array("gpu_ids", true, 0, 64)) {
    for (const auto& g : *a) {
      if (!g.is_string() || g.get_string().size() > 64) {
        r.Fail("gpu_ids", "must be GPU ids from the machine");
        break;
      }
      req.gpu_ids.emplace_back(g.get_string());
    }
  }
  DecodeContainer(r, &req.container);
  constexpr int64_t kIntMin = std::numeric_limits<int64_t>::min(),
                    kIntMax = std::numeric_limits<int64_t>::max();
  constexpr double kAny = std::numeric_limits<double>::max();
  req.memory_mb = r.Int("memory_mb", false, kIntMin, kIntMax);
  req.cpus = r.Number("cpus", false, -kAny, kAny);
  req.pids_limit = r.Int("pids_limit", false, kIntMin, kIntMax);
  req.scratch_mb = r.Int("scratch_mb", false, kIntMin, kIntMax);
  req.timeout_s = r.Int("timeout_s", false, kIntMin, kIntMax);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return req;
}

// A workload as `p` may see it, by the rules of rentals (RentalJson): the machine, its
// GPUs, the provider, the container and the agent's own words on the end (with its cause)
// are for the machine's provider and admins; a customer's rental shows its customer to
// them as a pseudonym only, and its customer sees neither the provider nor the machine,
// and reads the end as the sentence a customer reads (fleet/endings.h), as the agent's
// words may name what is on the provider's host and network.
json::object WorkloadJson(const accounts::Principal& p, const fleet::Workload& w) {
  const bool rental = w.purpose == fleet::WorkloadPurpose::kRental;
  const bool machine_side = p.IsAdmin() || p.IsProvider(w.provider_id);
  json::object spec = protocol::ToJson(w.spec);
  json::value end_reason = nullptr;
  if (w.end_reason) {
    end_reason =
        machine_side ? json::value(*w.end_reason) : json::value(fleet::CustomerSentence(w));
  }
  json::object o{{"id", w.id},
                 {"purpose", Name(w.purpose)},
                 {"state", Name(w.state)},
                 {"exit_code", w.exit_code ? json::value(*w.exit_code) : json::value(nullptr)},
                 {"end_reason", std::move(end_reason)},
                 {"end_party", OptJson(w.end_party)},
                 {"created_at", FormatRfc3339(w.created_at)},
                 {"started_at", TimeJson(w.started_at)},
                 {"ended_at", TimeJson(w.ended_at)},
                 {"updated_at", FormatRfc3339(w.updated_at)}};
  if (machine_side) {
    json::array gpu_ids;
    for (const auto& id : w.gpu_ids) gpu_ids.emplace_back(id);
    o["machine_id"] = w.machine_id;
    o["provider_id"] = w.provider_id;
    o["gpu_ids"] = std::move(gpu_ids);
    o["container_id"] = OptJson(w.container_id);
    o["end_cause"] = OptJson(w.end_cause);
    if (rental) {
      o["customer"] = rentals::CustomerPseudonym(w.created_by);
    } else {
      o["created_by"] = w.created_by;
    }
  } else {
    // The customer of a rental (Workloads shows nobody else a workload).
    spec.erase("gpu_uuids");
    o["created_by"] = w.created_by;
  }
  o["spec"] = std::move(spec);
  return o;
}

http::Response WorkloadReply(int status, const accounts::Principal& p,
                             const StatusOr<fleet::Workload>& w) {
  if (!w.ok()) return http::ErrorResponse(w.status());
  return http::Response::Json(status, WorkloadJson(p, *w));
}

}  // namespace

void RejectContainerOptions(const json::object& body, std::span<const std::string_view> known,
                            FieldErrors& errors) {
  for (const auto& kv : body) {
    const std::string_view key = kv.key();
    if (auto it = kForbidden.find(key); it != kForbidden.end()) {
      errors.emplace(std::string(key), it->second);
    } else if (std::find(known.begin(), known.end(), key) == known.end()) {
      errors.emplace(std::string(key), "is not a known field");
    }
  }
}

void DecodeContainer(const JsonReader& r, fleet::ContainerSpec* container) {
  std::string& image = container->image;
  std::vector<std::string>& command = container->command;
  auto& env = container->env;
  image = r.String("image", true, 255).value_or("");
  if (const json::array* a = r.Array("command", false, 0, 1024)) {
    for (const auto& c : *a) {
      if (!c.is_string()) {
        r.Fail("command", std::string(fleet::kCommandRule));
        break;
      }
      command.emplace_back(c.get_string());
    }
  }
  if (const json::object* e = r.Object("env", false)) {
    for (const auto& kv : *e) {
      if (!kv.value().is_string()) {
        r.errors()->emplace("env." + std::string(kv.key()), std::string(fleet::kEnvValueRule));
        continue;
      }
      env.emplace_back(std::string(kv.key()), std::string(kv.value().get_string()));
    }
  }
  container->ports = protocol::ReadPorts(r, "ports", /*with_public=*/true);
}

void RegisterWorkloadRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/workloads", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    auto create = DecodeCreate(*body);
    if (!create.ok()) return http::ErrorResponse(create.status());
    return WorkloadReply(201, *p, ctx.workloads.Create(*p, *create));
  });
  r.Add("GET", "/api/v1/workloads", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 500});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.workloads.List(*p, req.Query("machine_id"), *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(
        200, PageJson(*list, [&](const fleet::Workload& w) { return WorkloadJson(*p, w); }));
  });
  r.Add("GET", "/api/v1/workloads/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return WorkloadReply(200, *p, ctx.workloads.Get(*p, req.Param("id")));
  });
  r.Add("POST", "/api/v1/workloads/{id}/stop", kProviderOrAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto w = ctx.workloads.Stop(*p, req.Param("id"));
    if (!w.ok()) return http::ErrorResponse(w.status());
    json::object out = WorkloadJson(*p, *w);
    out["stop_requested"] = true;
    return http::Response::Json(202, out);
  });
  // ?after=<position from a previous answer>: the chunks since. next_cursor is the position
  // to follow on from (present even at the end: a running workload's log grows).
  r.Add("GET", "/api/v1/workloads/{id}/logs", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    PageRequest page{fleet::Workloads::kMaxLogPage, std::nullopt};
    if (const std::string after = req.Query("after"); !after.empty()) {
      auto c = Cursor::Decode(after);
      if (!c.ok())
        return http::ErrorResponse(
            FieldError("after", "must be a position from a previous answer"));
      page.after = std::move(*c);
    }
    auto logs = ctx.workloads.Logs(*p, req.Param("id"), page);
    if (!logs.ok()) return http::ErrorResponse(logs.status());
    json::array items;
    for (const auto& c : logs->items) {
      items.push_back(json::object{
          {"stream", c.stream}, {"seq", c.seq}, {"at", FormatRfc3339(c.at)}, {"data", c.data}});
    }
    return http::Response::Json(
        200, json::object{{"items", std::move(items)},
                          {"next_cursor", logs->position ? json::value(logs->position->Encode())
                                                         : json::value(nullptr)}});
  });
}

}  // namespace gpunex::platform::api
