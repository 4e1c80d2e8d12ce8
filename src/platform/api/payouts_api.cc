// /api/v1/providers/me/earnings, /statements, /payout-settings, /payouts and
// /api/v1/admin/payout-runs, /admin/payouts, /admin/payout-wallet (ERN-1, PAY-1..5).
#include <limits>

#include "platform/api/api.h"
#include "platform/bank/details.h"
#include "platform/payouts/calendar.h"
#include "platform/payouts/payouts.h"

namespace gpunex::platform::api {
namespace {

using payouts::Payout;

json::object TermsJson(const payouts::MethodTerms& t) {
  return {{"kind", Name(t.kind)},        {"label", t.label},
          {"currency", t.currency},      {"minimum_micro", t.minimum.micros()},
          {"fee_micro", t.fee.micros()}, {"note", t.note},
          {"offered", t.offered}};
}

// The method as its owner (and admins) see it: an ACH account number only by its last
// four digits.
json::value MethodJson(const std::optional<payouts::Method>& m, const std::string& token_account) {
  if (!m) return nullptr;
  json::object o{{"kind", Name(m->kind)}};
  if (m->kind == payouts::MethodKind::kSolana) {
    o["wallet"] = m->wallet;
    if (!token_account.empty()) o["token_account"] = token_account;
  } else if (m->kind == payouts::MethodKind::kSepa) {
    o["holder"] = m->holder;
    o["iban"] = m->iban;
    o["iban_print"] = bank::FormatIbanForPrint(m->iban);
    o["bic"] = m->bic.empty() ? json::value(nullptr) : json::value(m->bic);
    o["country"] = m->iban.substr(0, 2);
  } else {
    o["holder"] = m->holder;
    o["routing_number"] = m->routing_number;
    o["account_number_last4"] = m->account_number.size() >= 4
                                    ? m->account_number.substr(m->account_number.size() - 4)
                                    : m->account_number;
    o["account_type"] = m->account_type;
  }
  return o;
}

// `hold_s`: how long earnings stay pending after the usage that made them ([rentals]
// earnings_hold_s).
json::object SettingsJson(const payouts::SettingsView& v, Usdc monthly_minimum, int64_t hold_s) {
  json::array methods;
  for (const auto& t : v.methods) methods.push_back(TermsJson(t));
  const payouts::Settings& s = v.settings;
  return {{"schedule", Name(s.schedule)},
          {"threshold_micro", s.threshold.micros()},
          {"method", MethodJson(s.method, v.token_account)},
          {"token_account",
           v.token_account.empty() ? json::value(nullptr) : json::value(v.token_account)},
          {"changed_at", TimeJson(s.changed_at)},
          {"hold_until", TimeJson(s.hold_until)},
          {"methods", std::move(methods)},
          {"monthly_minimum_micro", monthly_minimum.micros()},
          {"earnings_hold_s", hold_s},
          {"next_payout",
           {{"date", v.next.date},
            {"schedule", Name(v.next.schedule)},
            {"estimate_micro", v.next.estimate.micros()},
            {"eligible", v.next.eligible},
            {"reason", v.next.reason}}}};
}

std::string FormatPpm(int64_t ppm) {
  std::string s = std::to_string(ppm / 1'000'000) + ".";
  std::string frac = std::to_string(ppm % 1'000'000);
  return s + std::string(6 - frac.size(), '0') + frac;
}

json::object PayoutJson(const Payout& p, bool with_provider) {
  json::array attempts;
  for (const auto& a : p.attempts) {
    attempts.push_back(
        {{"n", a.n},
         {"at", FormatRfc3339(a.created_at)},
         {"state", Name(a.state)},
         {"signature", a.signature.empty() ? json::value(nullptr) : json::value(a.signature)},
         {"error", a.error.empty() ? json::value(nullptr) : json::value(a.error)}});
  }
  json::object o{
      {"id", p.id},
      {"run_id", p.run_id},
      {"schedule", Name(p.schedule)},
      {"as_of", p.as_of},
      {"state", Name(p.state)},
      {"amount_micro", p.amount.micros()},
      {"fee_micro", p.fee.micros()},
      {"net_micro", payouts::NetOf(p).micros()},
      {"method", MethodJson(p.method, "")},
      {"currency", p.currency},
      {"amount_minor", p.amount_minor ? json::value(*p.amount_minor) : json::value(nullptr)},
      {"fx_rate", p.fx_rate_ppm ? json::value(FormatPpm(*p.fx_rate_ppm)) : json::value(nullptr)},
      {"signature", OptJson(p.signature)},
      {"bank_reference", OptJson(p.bank_reference)},
      {"failure", OptJson(p.failure)},
      {"file", OptJson(p.file_name)},
      {"created_at", FormatRfc3339(p.created_at)},
      {"submitted_at", TimeJson(p.submitted_at)},
      {"confirmed_at", TimeJson(p.confirmed_at)},
      {"failed_at", TimeJson(p.failed_at)},
      {"covers_until", FormatRfc3339(p.covers_until)},
      {"attempts", std::move(attempts)}};
  if (with_provider) {
    o["provider_id"] = p.provider_id;
    o["provider_name"] = p.provider_name;
  }
  return o;
}

json::object FileJson(const payouts::BankFile& f) {
  return {{"name", f.name},
          {"kind", Name(f.kind)},
          {"currency", f.currency},
          {"lines", f.lines},
          {"total_minor", f.total_minor},
          {"sha256", f.sha256},
          {"state", Name(f.state)},
          {"created_at", FormatRfc3339(f.created_at)},
          {"sent_at", TimeJson(f.sent_at)}};
}

json::object RunJson(const payouts::Run& r) {
  json::object counts;
  for (const auto& [k, v] : r.counts) counts[k] = v;
  json::array files;
  for (const auto& f : r.files) files.push_back(FileJson(f));
  return {
      {"id", r.id},
      {"schedule", Name(r.schedule)},
      {"as_of", r.as_of},
      {"state", Name(r.state)},
      {"eur_rate", r.eur_rate_ppm ? json::value(FormatPpm(*r.eur_rate_ppm)) : json::value(nullptr)},
      {"created_at", FormatRfc3339(r.created_at)},
      {"finished_at", TimeJson(r.finished_at)},
      {"counts", std::move(counts)},
      {"total_micro", r.total.micros()},
      {"files", std::move(files)}};
}

http::Response Csv(std::string body, const std::string& filename) {
  http::Response resp = http::Response::Text(200, std::move(body), "text/csv; charset=utf-8");
  resp.SetHeader("Content-Disposition", "attachment; filename=\"" + filename + "\"");
  return resp;
}

StatusOr<std::string> Format(const http::Request& req) {
  std::string f = req.Query("format");
  if (!f.empty() && f != "csv" && f != "json")
    return FieldError("format", "must be \"csv\" or \"json\"");
  return f;
}

std::string MicrosText(Usdc u) { return u.ToString(); }

// GPU-hours with two decimals, rounded down: 5400 s → "1.50".
std::string GpuHours(int64_t seconds) {
  const int64_t hundredths = seconds * 100 / 3600;
  const int64_t frac = hundredths % 100;
  return std::to_string(hundredths / 100) + (frac < 10 ? ".0" : ".") + std::to_string(frac);
}

// "0.92" → 920000 (EUR per USDC, six decimals at most).
std::optional<int64_t> ParseRate(std::string_view s) {
  auto u = Usdc::Parse(s);  // the same exact decimal with 6 places
  if (!u) return std::nullopt;
  return u->micros();
}

// The update and the fields that did not decode (the domain names the others).
StatusOr<std::pair<payouts::SettingsUpdate, FieldErrors>> DecodeSettings(const http::Request& req) {
  auto body = JsonObjectBody(req);
  if (!body.ok()) return body.status();
  FieldErrors errors;
  JsonReader r(*body, "", &errors);
  r.RejectUnknown({"schedule", "threshold_micro", "method", "password"});
  payouts::SettingsUpdate u;
  u.schedule = r.String("schedule", false, 16);
  u.threshold_micro = r.Int("threshold_micro", false, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max());
  u.password = r.String("password", false, accounts::Accounts::kMaxPassword).value_or("");
  if (const json::object* m = r.Object("method", false)) {
    JsonReader mr(*m, "method", &errors);
    std::optional<payouts::MethodKind> kind;
    if (auto text = mr.String("kind", true, 16)) {
      kind = payouts::kMethodKindNames.Parse(*text);
      if (!kind) mr.Fail("kind", "must be " + payouts::kMethodKindNames.Listed());
    }
    // Without a kind the other members mean nothing: neither read nor named.
    if (kind) {
      payouts::Method method;
      method.kind = *kind;
      switch (*kind) {
        case payouts::MethodKind::kSolana:
          mr.RejectUnknown({"kind", "wallet", "token_account"});
          method.wallet = mr.String("wallet", true, 64).value_or("");
          break;
        case payouts::MethodKind::kSepa:
          mr.RejectUnknown({"kind", "holder", "iban", "bic", "country", "iban_print"});
          method.holder = mr.String("holder", true, 140).value_or("");
          method.iban = mr.String("iban", true, 64).value_or("");
          method.bic = mr.HasValue("bic") ? mr.String("bic", false, 16).value_or("") : "";
          break;
        case payouts::MethodKind::kAch:
          mr.RejectUnknown({"kind", "holder", "routing_number", "account_number", "account_type"});
          method.holder = mr.String("holder", true, 140).value_or("");
          method.routing_number = mr.String("routing_number", true, 16).value_or("");
          method.account_number = mr.String("account_number", true, 32).value_or("");
          method.account_type = mr.String("account_type", true, 16).value_or("");
          break;
      }
      u.method = method;
    }
  }
  return std::make_pair(std::move(u), std::move(errors));
}

}  // namespace

void RegisterPayoutRoutes(http::Router& r, const ApiContext& ctx) {
  r.Add("GET", "/api/v1/providers/me/payout-settings", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto v = ctx.payouts.GetSettings(*p);
    if (!v.ok()) return http::ErrorResponse(v.status());
    return http::Response::Json(200, SettingsJson(*v, ctx.payouts.options().monthly_minimum,
                                                  ctx.rentals.options().earnings_hold_s));
  });
  r.Add("PUT", "/api/v1/providers/me/payout-settings", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto decoded = DecodeSettings(req);
    if (!decoded.ok()) return http::ErrorResponse(decoded.status());
    auto& [u, bad] = *decoded;
    if (!bad.empty()) {
      u.validate_only = true;
      auto v = ctx.payouts.PutSettings(*p, u);
      if (v.status().code() != StatusCode::kValidationFailed)
        return http::ErrorResponse(v.status());
      const Status domain = v.status();
      return http::ErrorResponse(MergeFieldErrors(bad, domain.fields()));
    }
    auto v = ctx.payouts.PutSettings(*p, u);
    if (!v.ok()) return http::ErrorResponse(v.status());
    return http::Response::Json(200, SettingsJson(*v, ctx.payouts.options().monthly_minimum,
                                                  ctx.rentals.options().earnings_hold_s));
  });

  r.Add("GET", "/api/v1/providers/me/earnings", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto format = Format(req);
    if (!format.ok()) return http::ErrorResponse(format.status());
    auto range = DateRange(req);
    if (!range.ok()) return http::ErrorResponse(range.status());
    const Timestamp now = ctx.clock.Now();
    // Default: the last 30 days up to now.
    Timestamp from = req.Query("from").empty() ? now - 30 * kOneDay : range->first;
    Timestamp to = req.Query("to").empty() ? now + kOneSecond : range->second;
    std::string group = req.Query("group").empty() ? "model" : req.Query("group");
    auto e = ctx.payouts.Earnings(*p, from, to, group);
    if (!e.ok()) return http::ErrorResponse(e.status());
    if (*format == "csv") {
      std::string csv = group +
                        ",label,rentals,gpu_seconds,gross_micro,commission_micro,"
                        "refunds_micro,net_micro,net_usdc\r\n";
      for (const auto& row : e->rows) {
        csv += CsvField(row.key) + "," + CsvField(row.label) + "," + std::to_string(row.rentals) +
               "," + std::to_string(row.gpu_seconds) + "," + std::to_string(row.gross.micros()) +
               "," + std::to_string(row.commission.micros()) + "," +
               std::to_string(row.refunds.micros()) + "," + std::to_string(row.net.micros()) + "," +
               MicrosText(row.net) + "\r\n";
      }
      return Csv(std::move(csv),
                 "gpunex-earnings-" + payouts::DateOf(from) + "-" + payouts::DateOf(to) + ".csv");
    }
    json::array rows;
    for (const auto& row : e->rows) {
      json::object o{{"key", row.key},
                     {"label", row.label},
                     {"rentals", row.rentals},
                     {"gpu_seconds", row.gpu_seconds},
                     {"gross_micro", row.gross.micros()},
                     {"commission_micro", row.commission.micros()},
                     {"refunds_micro", row.refunds.micros()},
                     {"net_micro", row.net.micros()}};
      if (!row.machine_id.empty()) {
        o["machine_id"] = row.machine_id;
        o["gpu_id"] = row.gpu_id;
      }
      if (!row.gpu_model.empty()) o["gpu_model"] = row.gpu_model;
      if (!row.day.empty()) o["day"] = row.day;
      rows.push_back(std::move(o));
    }
    return http::Response::Json(200,
                                json::object{{"totals",
                                              {{"pending_micro", e->totals.pending.micros()},
                                               {"available_micro", e->totals.available.micros()},
                                               {"in_payment_micro", e->totals.in_payment.micros()},
                                               {"paid_micro", e->totals.paid.micros()},
                                               {"period_micro", e->totals.period.micros()}}},
                                             {"period",
                                              {{"schedule", Name(e->schedule)},
                                               {"from", payouts::DateOf(e->period_from)},
                                               {"to", payouts::DateOf(e->period_to)}}},
                                             {"from", FormatRfc3339(e->from)},
                                             {"to", FormatRfc3339(e->to)},
                                             {"group", Name(e->group)},
                                             {"rows", std::move(rows)}});
  });

  r.Add("GET", "/api/v1/providers/me/statements/{month}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto format = Format(req);
    if (!format.ok()) return http::ErrorResponse(format.status());
    auto s = ctx.payouts.Statement(*p, req.Param("month"));
    if (!s.ok()) return http::ErrorResponse(s.status());
    if (*format == "csv") {
      std::string csv = "gpunex monthly statement," + s->month + "\r\n";
      csv += "rentals," + std::to_string(s->rentals) + "\r\n";
      csv += "gpu_hours," + GpuHours(s->gpu_seconds) + "\r\n";
      csv += "gross_usdc," + MicrosText(s->gross) + "\r\ncommission_usdc," +
             MicrosText(s->commission) + "\r\nrefunds_usdc," + MicrosText(s->refunds) +
             "\r\nnet_usdc," + MicrosText(s->net) + "\r\npaid_out_usdc," + MicrosText(s->paid) +
             "\r\n\r\n";
      csv +=
          "rental_id,gpu_model,gpus,gpu_seconds,gross_usdc,commission_usdc,refunds_usdc,"
          "net_usdc\r\n";
      for (const auto& l : s->lines) {
        csv += CsvField(l.rental_id) + "," + CsvField(l.gpu_model) + "," + std::to_string(l.gpus) +
               "," + std::to_string(l.gpu_seconds) + "," + MicrosText(l.gross) + "," +
               MicrosText(l.commission) + "," + MicrosText(l.refunds) + "," + MicrosText(l.net) +
               "\r\n";
      }
      csv += "\r\npayout_id,date,state,method,amount_usdc,currency,amount_minor,reference\r\n";
      for (const auto& po : s->payouts) {
        csv += CsvField(po.id) + "," + po.as_of + "," + std::string(Name(po.state)) + "," +
               std::string(Name(po.method.kind)) + "," + MicrosText(po.amount) + "," + po.currency +
               "," + (po.amount_minor ? std::to_string(*po.amount_minor) : "") + "," +
               CsvField(po.signature.value_or(po.bank_reference.value_or(""))) + "\r\n";
      }
      return Csv(std::move(csv), "gpunex-statement-" + s->month + ".csv");
    }
    json::array lines, pays;
    for (const auto& l : s->lines) {
      lines.push_back({{"rental_id", l.rental_id},
                       {"gpu_model", l.gpu_model},
                       {"gpus", l.gpus},
                       {"gpu_seconds", l.gpu_seconds},
                       {"gross_micro", l.gross.micros()},
                       {"commission_micro", l.commission.micros()},
                       {"refunds_micro", l.refunds.micros()},
                       {"net_micro", l.net.micros()}});
    }
    for (const auto& po : s->payouts) pays.push_back(PayoutJson(po, false));
    return http::Response::Json(200, json::object{{"month", s->month},
                                                  {"rentals", s->rentals},
                                                  {"gpu_seconds", s->gpu_seconds},
                                                  {"gross_micro", s->gross.micros()},
                                                  {"commission_micro", s->commission.micros()},
                                                  {"refunds_micro", s->refunds.micros()},
                                                  {"net_micro", s->net.micros()},
                                                  {"paid_micro", s->paid.micros()},
                                                  {"lines", std::move(lines)},
                                                  {"payouts", std::move(pays)}});
  });

  r.Add("GET", "/api/v1/providers/me/payouts", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto page = ParsePageRequest(req, {50, 200});
    if (!page.ok()) return http::ErrorResponse(page.status());
    auto list = ctx.payouts.ProviderPayouts(*p, *page);
    if (!list.ok()) return http::ErrorResponse(list.status());
    return http::Response::Json(
        200, PageJson(*list, [](const Payout& x) { return PayoutJson(x, false); }));
  });
  r.Add("GET", "/api/v1/providers/me/payouts/{id}", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto format = Format(req);
    if (!format.ok()) return http::ErrorResponse(format.status());
    // Admins read any payout through the run; here only the caller's own.
    accounts::Principal own = *p;
    std::erase(own.user.roles, std::string(accounts::kRoleAdmin));
    auto d = ctx.payouts.ProviderPayout(own, req.Param("id"));
    if (!d.ok()) return http::ErrorResponse(d.status());
    if (*format == "csv") {
      std::string csv = "payout_id,rental_id,gpu_model,net_micro,net_usdc\r\n";
      for (const auto& l : d->second) {
        csv += CsvField(d->first.id) + "," + CsvField(l.rental_id) + "," + CsvField(l.gpu_model) +
               "," + std::to_string(l.net.micros()) + "," + MicrosText(l.net) + "\r\n";
      }
      return Csv(std::move(csv), "gpunex-payout-" + d->first.id + ".csv");
    }
    json::object o = PayoutJson(d->first, false);
    json::array lines;
    for (const auto& l : d->second) {
      lines.push_back(
          {{"rental_id", l.rental_id}, {"gpu_model", l.gpu_model}, {"net_micro", l.net.micros()}});
    }
    o["lines"] = std::move(lines);
    return http::Response::Json(200, o);
  });

  // --- admins
  r.Add("POST", "/api/v1/admin/payout-runs", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only admins start payout runs"));
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader jr(*body, "", &errors);
    jr.RejectUnknown({"as_of", "schedule", "eur_rate"});
    payouts::RunRequest run;
    run.as_of = jr.String("as_of", true, 10).value_or("");
    run.schedule = jr.String("schedule", true, 16).value_or("");
    if (auto rate = jr.String("eur_rate", false, 20)) {
      run.eur_rate_ppm = ParseRate(*rate);
      if (!run.eur_rate_ppm) errors.emplace("eur_rate", "must be a decimal such as \"0.92\"");
    }
    if (!errors.empty()) {
      run.validate_only = true;
      const Status domain = ctx.payouts.StartRun(*p, run).status();
      if (domain.code() != StatusCode::kValidationFailed) return http::ErrorResponse(domain);
      return http::ErrorResponse(MergeFieldErrors(errors, domain.fields()));
    }
    auto created = ctx.payouts.StartRun(*p, run);
    if (!created.ok()) return http::ErrorResponse(created.status());
    return http::Response::Json(201, RunJson(*created));
  });
  r.Add("GET", "/api/v1/admin/payout-runs", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto runs = ctx.payouts.Runs(*p);
    if (!runs.ok()) return http::ErrorResponse(runs.status());
    json::array items;
    for (const auto& x : *runs) items.push_back(RunJson(x));
    return http::Response::Json(200, json::object{{"items", std::move(items)}});
  });
  r.Add("GET", "/api/v1/admin/payout-runs/{id}", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto d = ctx.payouts.GetRun(*p, req.Param("id"));
    if (!d.ok()) return http::ErrorResponse(d.status());
    json::object o = RunJson(d->run);
    json::array items;
    for (const auto& x : d->payouts) items.push_back(PayoutJson(x, true));
    o["payouts"] = std::move(items);
    json::array skips;
    for (const auto& x : d->skips) {
      skips.push_back({{"provider_id", x.provider_id},
                       {"reason", Name(x.reason)},
                       {"available_micro", x.available.micros()}});
    }
    o["skips"] = std::move(skips);
    return http::Response::Json(200, o);
  });
  r.Add("GET", "/api/v1/admin/payout-runs/{id}/files/{name}", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto f = ctx.payouts.File(*p, req.Param("id"), req.Param("name"));
    if (!f.ok()) return http::ErrorResponse(f.status());
    http::Response resp = http::Response::Text(200, f->content,
                                               f->kind == payouts::FileKind::kPain001
                                                   ? "application/xml; charset=utf-8"
                                                   : "text/plain; charset=us-ascii");
    resp.SetHeader("Content-Disposition", "attachment; filename=\"" + f->name + "\"");
    return resp;
  });
  r.Add("POST", "/api/v1/admin/payout-runs/{id}/files/{name}/sent", kAdmin,
        [&ctx](http::Request& req) {
          auto p = RequireUser(req, ctx);
          if (!p.ok()) return http::ErrorResponse(p.status());
          auto run = ctx.payouts.MarkFileSent(*p, req.Param("id"), req.Param("name"));
          if (!run.ok()) return http::ErrorResponse(run.status());
          return http::Response::Json(200, RunJson(*run));
        });
  r.Add("POST", "/api/v1/admin/payouts/{id}/bank-result", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (!p->IsAdmin())
      return http::ErrorResponse(PermissionDenied("only admins record bank results"));
    auto body = JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader jr(*body, "", &errors);
    jr.RejectUnknown({"state", "bank_reference", "reason"});
    payouts::BankResult br;
    // A state that is not a name of kBankOutcomeNames is named here; an absent one is
    // named by the reader.
    const std::string state = jr.String("state", true, 16).value_or("");
    if (auto outcome = payouts::kBankOutcomeNames.Parse(state)) {
      br.state = *outcome;
    } else {
      errors.emplace("state", "must be " + payouts::kBankOutcomeNames.Listed());
    }
    br.bank_reference = jr.String("bank_reference", false, 100).value_or("");
    br.reason = jr.String("reason", false, 300).value_or("");
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    auto po = ctx.payouts.SetBankResult(*p, req.Param("id"), br);
    if (!po.ok()) return http::ErrorResponse(po.status());
    return http::Response::Json(200, PayoutJson(*po, true));
  });
  r.Add("POST", "/api/v1/admin/payouts/{id}/retry", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto po = ctx.payouts.Retry(*p, req.Param("id"));
    if (!po.ok()) return http::ErrorResponse(po.status());
    return http::Response::Json(200, PayoutJson(*po, true));
  });
  r.Add("GET", "/api/v1/admin/payout-wallet", kAdmin, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto w = ctx.payouts.Wallet(*p);
    if (!w.ok()) return http::ErrorResponse(w.status());
    return http::Response::Json(
        200,
        json::object{{"configured", w->configured},
                     {"public_key", w->public_key},
                     {"token_account", w->token_account},
                     {"mint", w->mint},
                     {"usdc_micro", w->usdc_micro},
                     {"sol_lamports", w->sol_lamports},
                     {"needed_micro", w->needed_micro},
                     {"needed_lamports", w->needed_lamports},
                     {"short", w->short_of_funds},
                     {"error", w->error.empty() ? json::value(nullptr) : json::value(w->error)}});
  });
}

}  // namespace gpunex::platform::api
