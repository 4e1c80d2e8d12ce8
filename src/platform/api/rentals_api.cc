// /api/v1/rentals, /api/v1/providers/me/rentals, /api/v1/me/balance, /api/v1/me/statement,
// /api/v1/admin/credits, /api/v1/admin/rentals/{id}/refund and /api/v1/admin/ledger/check
// (RNT-1..6, LED-1..4).
#include <charconv>
#include <limits>

#include "platform/access/access.h"
#include "platform/accounts/directory.h"
#include "platform/api/api.h"
#include "platform/providers/providers.h"
#include "platform/relay/traffic_store.h"
#include "platform/rentals/jobs.h"
#include "platform/rentals/rentals.h"

namespace gpunex::platform::api {
namespace {

constexpr std::string_view kRentalFields[] = {"offer_id",       "gpus",  "image",
                                              "command",        "env",   "max_duration_s",
                                              "max_cost_micro", "ports", "registry_auth"};

json::value OptMicros(const std::optional<Usdc>& u) {
  return u ? json::value(u->micros()) : json::value(nullptr);
}

// The declared ports; for the customer, each with the path of its TCP connection
// (docs/access.md), which the platform's URL completes (wss://host/api/v1/...), and for
// an HTTP port where the access listener serves it (url: by host name, path_url: by
// path), when there is one.
json::array PortsOf(const ApiContext& ctx, const accounts::Principal& p, const rentals::Rental& r) {
  json::array ports = protocol::PortsJson(r.ports, /*with_public=*/true);
  if (p.user.id != r.customer_id) return ports;
  const access::Access* gate = ctx.services.Find<access::Access>();
  for (size_t i = 0; i < ports.size() && i < r.ports.size(); ++i) {
    json::object& port = ports[i].as_object();
    const int number = r.ports[i].port;
    port["connect_path"] =
        "/api/v1/rentals/" + r.id + "/ports/" + std::to_string(number) + "/connect";
    if (r.ports[i].protocol != protocol::PortProtocol::kHttp || gate == nullptr) continue;
    if (auto urls = gate->UrlsOf(r.id, number)) {
      port["url"] = urls->host_url;
      port["path_url"] = urls->path_url;
    }
  }
  return ports;
}

json::object RentalJson(const ApiContext& ctx, const accounts::Principal& p,
                        const rentals::Rental& r) {
  json::array command;
  for (const auto& c : r.command) command.emplace_back(c);
  auto hour = Usdc::ForUsage(r.price, r.gpus, std::chrono::hours(1));
  json::object o{
      {"id", r.id},
      {"offer_id", r.offer_id},
      {"gpu_model", r.gpu_model},
      {"gpus", r.gpus},
      {"price_micro", r.price.micros()},
      {"cost_per_hour_micro", hour.ok() ? hour->micros() : 0},
      {"fee_bps", r.fee_bps},
      {"state", Name(r.state)},
      {"end_reason", OptJson(r.end_reason)},
      {"end_party", OptJson(r.end_party)},
      {"exit_code", r.exit_code ? json::value(*r.exit_code) : json::value(nullptr)},
      {"detail", r.detail},
      {"started_at", FormatRfc3339(r.created_at)},
      {"running_at", TimeJson(r.running_at)},
      {"billing_ended_at", TimeJson(r.billing_end_at)},
      {"ended_at", TimeJson(r.ended_at)},
      {"billed_seconds", r.billed_seconds},
      {"charged_micro", r.charged.micros()},
      {"fee_micro", r.fee.micros()},
      {"provider_micro", r.provider_part.micros()},
      {"refunded_micro", r.refunded.micros()},
      {"max_cost_micro", OptMicros(r.max_cost)},
      {"max_duration_s", r.max_duration_s ? json::value(*r.max_duration_s) : json::value(nullptr)},
      {"image", r.image},
      {"command", std::move(command)},
      {"ports", PortsOf(ctx, p, r)},
      {"region", r.region},
      {"country", r.country},
      {"job_id", r.job_id.empty() ? json::value(nullptr) : json::value(r.job_id)},
      {"updated_at", FormatRfc3339(r.updated_at)}};
  // The machine, its workload (whose end_reason has the agent's own words on how the
  // rental ended) and the customer's pseudonym are for the rental's provider and admins.
  if (p.IsAdmin() || p.IsProvider(r.provider_id)) {
    json::array gpu_ids;
    for (const auto& g : r.gpu_ids) gpu_ids.emplace_back(g);
    o["machine_id"] = r.machine_id;
    o["workload_id"] = r.workload_id;
    o["gpu_ids"] = std::move(gpu_ids);
    o["customer"] = rentals::CustomerPseudonym(r.customer_id);
  }
  // Who they are, for an operator's pages (the customer's and the provider's accounts).
  if (p.IsAdmin()) {
    o["customer_id"] = r.customer_id;
    o["provider_id"] = r.provider_id;
  }
  return o;
}

// One rental, with the bytes its ports moved through the platform (relay/traffic_store.h):
// `traffic` in all, and each port's own.
http::Response RentalReply(const ApiContext& ctx, int status, const accounts::Principal& p,
                           const StatusOr<rentals::Rental>& r) {
  if (!r.ok()) return http::ErrorResponse(r.status());
  json::object o = RentalJson(ctx, p, *r);
  std::vector<relay::PortTraffic> traffic;
  Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(traffic, relay::TrafficOf(tx, r->id));
    return Status::Ok();
  });
  if (!read.ok()) return http::ErrorResponse(read);
  int64_t in = 0, out = 0;
  for (json::value& v : o["ports"].as_array()) {
    json::object& port = v.as_object();
    json::object t{{"in_bytes", 0}, {"out_bytes", 0}};
    for (const auto& x : traffic) {
      if (x.port == port.at("port").to_number<int64_t>()) {
        t = {{"in_bytes", x.in_bytes}, {"out_bytes", x.out_bytes}};
      }
    }
    port["traffic"] = std::move(t);
  }
  for (const auto& x : traffic) {
    in += x.in_bytes;
    out += x.out_bytes;
  }
  o["traffic"] = json::object{{"in_bytes", in}, {"out_bytes", out}};
  return http::Response::Json(status, o);
}

StatusOr<rentals::CreateRentalRequest> DecodeRental(const http::Request& req) {
  auto body = JsonObjectBody(req);
  if (!body.ok()) return body.status();
  FieldErrors errors;
  JsonReader r(*body, "", &errors);
  RejectContainerOptions(*body, kRentalFields, errors);
  rentals::CreateRentalRequest out;
  out.offer_id = r.String("offer_id", true, 64).value_or("");
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(),
                    kMax = std::numeric_limits<int64_t>::max();
  // Any integer decodes; the bounds are the domain's, with its message.
  out.gpus = r.Int("gpus", true, kMin, kMax).value_or(1);
  DecodeContainer(r, &out.container);
  out.container.registry_auth = protocol::ReadRegistryCredentials(r, "registry_auth");
  out.max_duration_s = r.Int("max_duration_s", false, kMin, kMax);
  if (auto c = r.Int("max_cost_micro", false, kMin, kMax)) out.max_cost = Usdc::Micros(*c);
  out.idempotency_key = req.Header("idempotency-key");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return out;
}

// ?state=: "", "active", or one state of a rental ("ended", "running", ...).
StatusOr<std::string> StateFilter(const http::Request& req) {
  std::string s = req.Query("state");
  if (!s.empty() && s != "active" && !rentals::kRentalStateNames.Parse(s)) {
    return FieldError("state",
                      "must be \"active\", \"pending\", \"starting\", \"running\", "
                      "\"ending\" or \"ended\"");
  }
  return s;
}

json::object EntryJson(const billing::Entry& e) {
  const billing::Transfer& t = e.transfer;
  return {{"id", t.id},
          {"at", FormatRfc3339(t.at)},
          {"kind", t.kind},
          {"amount_micro", e.signed_amount.micros()},
          {"balance_after_micro", e.balance_after.micros()},
          {"rental_id", OptJson(t.rental_id)},
          {"reference", t.reference}};
}

constexpr int kCsvMaxRows = 100'000;

http::Response StatementCsv(const ApiContext& ctx, const accounts::Principal& p, Timestamp from,
                            Timestamp to) {
  std::string csv = "at,id,kind,amount_micro,amount_usdc,rental_id,reference\r\n";
  PageRequest page;
  page.limit = 1000;
  int rows = 0;
  while (rows < kCsvMaxRows) {
    auto entries = ctx.billing.Statement(p, from, to, page);
    if (!entries.ok()) return http::ErrorResponse(entries.status());
    for (const auto& e : entries->items) {
      const billing::Transfer& t = e.transfer;
      csv += FormatRfc3339(t.at) + "," + CsvField(t.id) + "," + t.kind + "," +
             std::to_string(e.signed_amount.micros()) + "," + e.signed_amount.ToString() + "," +
             CsvField(t.rental_id.value_or("")) + "," + CsvField(t.reference) + "\r\n";
      ++rows;
    }
    if (!entries->next) break;
    page.after = entries->next;
  }
  http::Response resp = http::Response::Text(200, std::move(csv), "text/csv; charset=utf-8");
  resp.SetHeader("Content-Disposition", "attachment; filename=\"gpunex-statement.csv\"");
  return resp;
}

constexpr std::string_view kJobFields[] = {
    "gpu_models",      "gpu_model",       "gpus",           "max_price_micro",
    "min_reliability", "min_performance", "region",         "country",
    "min_vram_gb",     "image",           "command",        "env",
    "deadline_s",      "max_duration_s",  "max_cost_micro", "ports"};

StatusOr<rentals::SubmitJobRequest> DecodeJob(const http::Request& req) {
  auto body = JsonObjectBody(req);
  if (!body.ok()) return body.status();
  FieldErrors errors;
  JsonReader r(*body, "", &errors);
  RejectContainerOptions(*body, kJobFields, errors);
  if (r.Has("registry_auth")) {
    errors["registry_auth"] =
        "is taken by rentals only: a queued job would keep the password until it is placed";
  }
  rentals::SubmitJobRequest out;
  rentals::JobConstraints& c = out.constraints;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(),
                    kMax = std::numeric_limits<int64_t>::max();
  constexpr double kAny = std::numeric_limits<double>::max();
  if (r.Has("gpu_models") && r.Has("gpu_model")) {
    errors.emplace("gpu_model", "give gpu_models or gpu_model, not both");
  } else if (r.Has("gpu_model")) {
    out.models_field = "gpu_model";
    if (auto m = r.String("gpu_model", true, 64)) c.gpu_models.push_back(*m);
  } else if (const json::array* a = r.Array("gpu_models", true, 0, 64)) {
    for (size_t i = 0; i < a->size(); ++i) {
      if (!(*a)[i].is_string() || (*a)[i].get_string().size() > 64) {
        errors.emplace("gpu_models[" + std::to_string(i) + "]", "must be a GPU model id");
        continue;
      }
      c.gpu_models.emplace_back((*a)[i].get_string());
    }
  }
  c.gpus = r.Int("gpus", true, kMin, kMax).value_or(1);
  c.max_price = Usdc::Micros(r.Int("max_price_micro", true, kMin, kMax).value_or(1));
  c.min_reliability = r.Number("min_reliability", false, -kAny, kAny);
  c.min_performance = r.Number("min_performance", false, -kAny, kAny);
  c.min_vram_gb = r.Number("min_vram_gb", false, -kAny, kAny);
  c.region = r.String("region", false, 64).value_or("");
  c.country = r.String("country", false, 8).value_or("");
  DecodeContainer(r, &out.container);
  out.deadline_s = r.Int("deadline_s", false, kMin, kMax);
  out.max_duration_s = r.Int("max_duration_s", false, kMin, kMax);
  if (auto m = r.Int("max_cost_micro", false, kMin, kMax)) out.max_cost = Usdc::Micros(*m);
  out.idempotency_key = req.Header("idempotency-key");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return out;
}

json::object JobJson(const rentals::Job& j) {
  const rentals::JobConstraints& c = j.constraints;
  json::array models;
  for (const auto& m : c.gpu_models) models.emplace_back(m);
  json::array command;
  for (const auto& a : j.container.command) command.emplace_back(a);
  auto opt = [](const std::optional<double>& v) {
    return v ? json::value(*v) : json::value(nullptr);
  };
  return {
      {"id", j.id},
      {"state", Name(j.state)},
      {"rental_id", j.rental_id.empty() ? json::value(nullptr) : json::value(j.rental_id)},
      // Where its rental stands: "placed" stays the job's state while it runs and after.
      {"rental_state", j.rental ? json::value(rentals::kRentalStateNames.Name(j.rental->state))
                                : json::value(nullptr)},
      {"rental_end_reason", j.rental && j.rental->end_reason
                                ? json::value(rentals::kEndReasonNames.Name(*j.rental->end_reason))
                                : json::value(nullptr)},
      {"rental_exit_code",
       j.rental && j.rental->exit_code ? json::value(*j.rental->exit_code) : json::value(nullptr)},
      {"rental_detail", j.rental ? json::value(j.rental->detail) : json::value(nullptr)},
      {"offer_id", j.offer_id.empty() ? json::value(nullptr) : json::value(j.offer_id)},
      {"detail", j.detail},
      {"gpu_models", std::move(models)},
      {"gpus", c.gpus},
      {"max_price_micro", c.max_price.micros()},
      {"min_reliability", opt(c.min_reliability)},
      {"min_performance", opt(c.min_performance)},
      {"min_vram_gb", opt(c.min_vram_gb)},
      {"region", c.region},
      {"country", c.country},
      {"image", j.container.image},
      {"command", std::move(command)},
      {"ports", protocol::PortsJson(j.container.ports, /*with_public=*/true)},
      {"max_duration_s", j.max_duration_s ? json::value(*j.max_duration_s) : json::value(nullptr)},
      {"max_cost_micro", OptMicros(j.max_cost)},
      {"created_at", FormatRfc3339(j.created_at)},
      {"deadline_at", FormatRfc3339(j.deadline_at)},
      {"placed_at", TimeJson(j.placed_at)},
      {"ended_at", TimeJson(j.ended_at)}};
}

http::Response JobReply(int status, const StatusOr<rentals::Job>& j) {
  if (!j.ok()) return http::ErrorResponse(j.status());
  return http::Response::Json(status, JobJson(*j));
}

}  // namespace

void RegisterRentalRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("POST", "/api/v1/rentals", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto create = DecodeRental(req);
    if (!create.ok()) return http::ErrorResponse(create.status());
    return RentalReply(ctx, 201, *p, ctx.rentals.Create(*p, *create));
  });
  r.Add("GET", "/api/v1/rentals", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto state = StateFilter(req);
    if (!state.ok()) return http::ErrorResponse(state.status());
    // An operator's filters: one customer's rentals, or one provider's.
    rentals::RentalFilter filter{*state, req.Query("customer_id"), req.Query("provider_id")};
    if ((!filter.customer_id.empty() || !filter.provider_id.empty()) && !p->IsAdmin()) {
      return http::ErrorResponse(FieldError(
          filter.customer_id.empty() ? "provider_id" : "customer_id", "is an operator's filter"));
    }
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.rentals.List(*p, filter, *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(
        200, PageJson(*list, [&](const rentals::Rental& x) { return RentalJson(ctx, *p, x); }));
  });
  r.Add("GET", "/api/v1/rentals/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return RentalReply(ctx, 200, *p, ctx.rentals.Get(*p, req.Param("id")));
  });
  r.Add("POST", "/api/v1/rentals/{id}/stop", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return RentalReply(ctx, 200, *p, ctx.rentals.Stop(*p, req.Param("id")));
  });
  r.Add("GET", "/api/v1/rentals/{id}/logs", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {200, fleet::Workloads::kMaxLogPage});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto logs = ctx.rentals.Logs(*p, req.Param("id"), *page);
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
  r.Add("GET", "/api/v1/providers/me/rentals", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto state = StateFilter(req);
    if (!state.ok()) return http::ErrorResponse(state.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.rentals.ProviderRentals(*p, *state, *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(
        200, PageJson(*list, [&](const rentals::Rental& x) { return RentalJson(ctx, *p, x); }));
  });

  r.Add("POST", "/api/v1/jobs", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto job = DecodeJob(req);
    if (!job.ok()) return http::ErrorResponse(job.status());
    // Answered when the job's round has decided it; no worker thread waits for the round.
    auto [resp, responder] = http::Response::Defer();
    ctx.jobs.SubmitThen(*p, *job,
                        [reply = responder](StatusOr<rentals::Job> j) { reply(JobReply(201, j)); });
    return std::move(resp);
  });
  r.Add("GET", "/api/v1/jobs", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.jobs.List(*p, *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(200, PageJson(*list, JobJson));
  });
  r.Add("GET", "/api/v1/jobs/{id}", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return JobReply(200, ctx.jobs.Get(*p, req.Param("id")));
  });
  r.Add("POST", "/api/v1/jobs/{id}/cancel", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    return JobReply(200, ctx.jobs.Cancel(*p, req.Param("id")));
  });

  r.Add("GET", "/api/v1/me/balance", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto b = ctx.rentals.Balance(*p);
    if (!b.ok()) return http::ErrorResponse(b.status());
    return http::Response::Json(
        200, json::object{{"balance_micro", b->balance.micros()},
                          {"running_cost_per_hour_micro", b->running_cost_per_hour.micros()},
                          {"seconds_left",
                           b->seconds_left ? json::value(*b->seconds_left) : json::value(nullptr)},
                          {"low", b->low},
                          {"running_rentals", b->running_rentals}});
  });
  r.Add("GET", "/api/v1/me/statement", kUser, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto range = DateRange(req);
    if (!range.ok()) return http::ErrorResponse(range.status());
    const std::string format = req.Query("format");
    if (!format.empty() && format != "csv" && format != "json")
      return http::ErrorResponse(FieldError("format", "must be \"csv\" or \"json\""));
    if (format == "csv") return StatementCsv(ctx, *p, range->first, range->second);
    auto page = ParsePageRequest(req, {50, 500});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto entries = ctx.billing.Statement(*p, range->first, range->second, *page);
    if (!entries.ok()) return http::ErrorResponse(entries.status());
    return http::Response::Json(200, PageJson(*entries, EntryJson));
  });

  r.Add("POST", "/api/v1/admin/credits", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only operators credit balances"));
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader rd(*body, "", &errors);
    rd.RejectUnknown({"user_id", "email", "amount_micro", "reference"});
    billing::CreditRequest c;
    // The user by id, or by email (what an operator has at hand): one of the two.
    const std::optional<std::string> email =
        rd.String("email", false, accounts::kMaxUserSearchChars);
    c.user_id = rd.String("user_id", !email, 64).value_or("");
    if (email && !c.user_id.empty()) {
      errors.emplace("email", "give user_id or email, not both");
    } else if (email && errors.empty()) {
      std::optional<std::string> found;
      Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
        GPUNEX_ASSIGN_OR_RETURN(found, accounts::UserIdByEmail(tx, *email));
        return Status::Ok();
      });
      if (!read.ok()) return http::ErrorResponse(read);
      if (!found) {
        errors.emplace("email", "no user has this email address");
      } else {
        c.user_id = *found;
      }
    }
    c.amount = Usdc::Micros(rd.Int("amount_micro", true, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max())
                                .value_or(1));
    c.reference = rd.String("reference", true, 1000).value_or("x");
    c.idempotency_key = req.Header("idempotency-key");
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    auto credited = ctx.billing.Credit(*p, c);
    if (!credited.ok()) return http::ErrorResponse(credited.status());
    const billing::Transfer& t = credited->transfer;
    return http::Response::Json(
        201, json::object{{"transfer", json::object{{"id", t.id},
                                                    {"kind", t.kind},
                                                    {"user_id", c.user_id},
                                                    {"amount_micro", t.amount.micros()},
                                                    {"reference", t.reference},
                                                    {"rental_id", nullptr},
                                                    {"at", FormatRfc3339(t.at)}}},
                          {"balance_micro", credited->balance.micros()}});
  });
  // An operator gives back part or all of what an ended rental was charged.
  r.Add("POST", "/api/v1/admin/rentals/{id}/refund", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only operators refund rentals"));
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader rd(*body, "", &errors);
    rd.RejectUnknown({"amount_micro", "reason"});
    rentals::RefundRequest refund;
    refund.rental_id = req.Param("id");
    refund.amount = Usdc::Micros(rd.Int("amount_micro", true, std::numeric_limits<int64_t>::min(),
                                        std::numeric_limits<int64_t>::max())
                                     .value_or(1));
    refund.reason = rd.String("reason", true, 1000).value_or("x");
    refund.idempotency_key = req.Header("idempotency-key");
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    auto done = ctx.rentals.Refund(*p, refund);
    if (!done.ok()) return http::ErrorResponse(done.status());
    json::array transfers;
    for (const billing::Transfer& t : done->transfers) {
      // Where the money came from, in words: the platform, or the provider's earnings.
      std::string_view from = "platform";
      if (t.debit_account == billing::ProviderPendingAccount(done->rental.provider_id))
        from = "provider_pending";
      if (t.debit_account == billing::ProviderAvailableAccount(done->rental.provider_id))
        from = "provider_available";
      transfers.push_back(json::object{{"id", t.id},
                                       {"kind", t.kind},
                                       {"from", from},
                                       {"amount_micro", t.amount.micros()},
                                       {"reference", t.reference},
                                       {"at", FormatRfc3339(t.at)}});
    }
    return http::Response::Json(201, json::object{{"rental", RentalJson(ctx, *p, done->rental)},
                                                  {"transfers", std::move(transfers)}});
  });
  // Finding a user (to credit them, to read their rentals): by part of their email or name.
  r.Add("GET", "/api/v1/admin/users", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin()) return http::ErrorResponse(PermissionDenied("only operators find users"));
    const std::string q = req.Query("q");
    FieldErrors errors;
    if (q.size() < 2 || q.size() > accounts::kMaxUserSearchChars) {
      errors.emplace("q", "must be 2 to 254 characters of an email address or a name");
    }
    int64_t limit = 20;
    if (const std::string l = req.Query("limit"); !l.empty()) {
      auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), limit);
      if (ec != std::errc() || end != l.data() + l.size() || limit < 1 ||
          limit > accounts::kMaxUserSearchResults) {
        errors.emplace("limit", "must be a whole number from 1 to 50");
      }
    }
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    std::vector<accounts::UserSummary> users;
    Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(users, accounts::SearchUsers(tx, q, static_cast<int>(limit)));
      return Status::Ok();
    });
    if (!read.ok()) return http::ErrorResponse(read);
    json::array items;
    for (const accounts::UserSummary& u : users) {
      items.push_back(json::object{{"id", u.id},
                                   {"email", u.email},
                                   {"name", u.name},
                                   {"created_at", FormatRfc3339(u.created_at)},
                                   {"disabled", u.disabled}});
    }
    return http::Response::Json(
        200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });
  // One user as an operator reads them: roles, balance, and whether they provide.
  r.Add("GET", "/api/v1/admin/users/{id}", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin()) return http::ErrorResponse(PermissionDenied("only operators read users"));
    std::optional<accounts::UserDetail> user;
    Usdc balance;
    std::optional<providers::Provider> provider;
    Status read = ctx.db.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(user, accounts::FindUserDetail(tx, req.Param("id")));
      if (!user) return NotFound("no such user");
      GPUNEX_ASSIGN_OR_RETURN(balance,
                              billing::Balance(tx, billing::CustomerAccount(user->summary.id)));
      GPUNEX_ASSIGN_OR_RETURN(provider, providers::FindProvider(tx, user->summary.id));
      return Status::Ok();
    });
    if (!read.ok()) return http::ErrorResponse(read);
    const accounts::UserSummary& u = user->summary;
    json::array roles;
    for (const auto& role : user->roles) roles.emplace_back(role);
    json::value prov = nullptr;
    if (provider) {
      prov = json::object{{"tier", providers::Name(provider->tier)},
                          {"status", Name(provider->status)},
                          {"application_id", provider->application_id},
                          {"approved_at", FormatRfc3339(provider->approved_at)}};
    }
    return http::Response::Json(200, json::object{{"id", u.id},
                                                  {"email", u.email},
                                                  {"name", u.name},
                                                  {"created_at", FormatRfc3339(u.created_at)},
                                                  {"disabled", u.disabled},
                                                  {"roles", std::move(roles)},
                                                  {"balance_micro", balance.micros()},
                                                  {"provider", std::move(prov)}});
  });
  r.Add("GET", "/api/v1/admin/ledger/check", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto c = ctx.billing.Check(*p);
    if (!c.ok()) return http::ErrorResponse(c.status());
    json::array mismatches;
    for (const auto& m : c->mismatches) {
      mismatches.push_back(json::object{{"account", m.account},
                                        {"stored_micro", m.stored.micros()},
                                        {"computed_micro", m.computed.micros()}});
    }
    return http::Response::Json(200, json::object{{"ok", c->ok},
                                                  {"accounts", c->accounts},
                                                  {"transfers", c->transfers},
                                                  {"sum_micro", c->sum_micro},
                                                  {"mismatches", std::move(mismatches)}});
  });
}

}  // namespace gpunex::platform::api
