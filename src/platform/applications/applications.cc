#include "platform/applications/applications.h"

#include <algorithm>

#include "common/ids.h"
#include "common/paging.h"
#include "platform/applications/application.h"
#include "platform/catalog/catalog.h"
#include "platform/notify/notify.h"
#include "platform/providers/providers.h"

namespace gpunex::platform::applications {
namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 200;
constexpr size_t kMaxMessage = 4000;

struct Stored {
  std::string id;
  std::string user_id;
  std::string status;
  ApplicationBody body;
  std::string suggested_tier;
  std::optional<std::string> tier;
  UnixMicros created_at = 0;
  UnixMicros updated_at = 0;
  std::optional<UnixMicros> first_submitted_at;
  std::optional<UnixMicros> submitted_at;
  std::optional<UnixMicros> decided_at;
};

constexpr const char* kSelect =
    "SELECT id, user_id, status, body, suggested_tier, tier, created_at, updated_at, "
    "first_submitted_at, submitted_at, decided_at FROM provider_applications";

StatusOr<Stored> FromRow(const store::Row& r) {
  auto parsed = ParseJson(r.Str(3));
  if (!parsed.ok()) return Internal("stored application " + r.Str(0) + " is not JSON");
  auto body = ParseApplication(*parsed, Completeness::kDraft, [](std::string_view) { return true; });
  if (!body.ok()) return Internal("stored application " + r.Str(0) + " does not parse");
  return Stored{r.Str(0),     r.Str(1),     r.Str(2),      std::move(*body),
                r.Str(4),     r.OptStr(5),  r.Int(6),      r.Int(7),
                r.OptInt(8),  r.OptInt(9),  r.OptInt(10)};
}

StatusOr<std::optional<Stored>> Load(store::Tx& tx, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query(std::string(kSelect) + " WHERE id = ?", {id}));
  if (rows.empty()) return std::optional<Stored>();
  GPUNEX_ASSIGN_OR_RETURN(Stored s, FromRow(rows[0]));
  return std::optional<Stored>(std::move(s));
}

// Loads an application the principal may see; someone else's is "not found".
StatusOr<Stored> LoadVisible(store::Tx& tx, const accounts::Principal& p, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Stored> s, Load(tx, id));
  if (!s || (s->user_id != p.user.id && !p.IsAdmin())) {
    return NotFound("no such provider application");
  }
  return std::move(*s);
}

Status RequireOwner(const accounts::Principal& p, const Stored& s) {
  if (s.user_id != p.user.id) return PermissionDenied("only the applicant can change an application");
  return Status::Ok();
}

ModelExists ModelCheck(store::Tx& tx, Status* error) {
  return [&tx, error](std::string_view id) {
    auto r = catalog::ModelExists(tx, id);
    if (!r.ok()) {
      *error = r.status();
      return false;
    }
    return *r;
  };
}

Status AddEvent(store::Tx& tx, const std::string& app_id, const std::string& actor,
                std::string_view action, std::string_view from, std::string_view to,
                const std::optional<std::string>& message, const std::optional<std::string>& tier,
                UnixMicros at) {
  store::Value msg = message ? store::Value(*message) : store::Value(nullptr);
  store::Value t = tier ? store::Value(*tier) : store::Value(nullptr);
  return tx
      .Exec("INSERT INTO application_events (id, application_id, at, actor_user_id, action, "
            "from_status, to_status, message, tier) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {NewId("ape"), app_id, at, actor, std::string(action), std::string(from),
             std::string(to), msg, t})
      .status();
}

std::string Greeting(const Stored& s) {
  return "Hello " + (s.body.contact.full_name.empty() ? std::string("there") : s.body.contact.full_name) +
         ",\n\n";
}

int TotalGpus(const ApplicationBody& b) {
  int64_t n = 0;
  for (const auto& g : b.gpus) n += g.quantity.value_or(0);
  return static_cast<int>(n);
}

}  // namespace

namespace {

// Writes the in-dashboard notification and the email for one event on `s`.
Status Tell(store::Tx& tx, const ApplicationsOptions& o, const Stored& s, std::string_view kind,
            const std::string& title, const std::string& dashboard_text,
            const std::string& email_subject, const std::string& email_body) {
  std::string link = "/#/applications/" + s.id;
  GPUNEX_RETURN_IF_ERROR(notify::AddNotification(tx, s.user_id, kind, title, dashboard_text, link));
  notify::Email e;
  e.to = s.body.contact.email;
  e.subject = email_subject;
  e.body = email_body;
  e.kind = std::string(kind);
  return notify::EnqueueEmail(tx, e, o.mail_domain);
}

json::object ToJsonFull(const Stored& s, store::Tx& tx, const ApplicationsOptions& o,
                        bool with_history, Status* error) {
  json::object out = ToJson(s.body);
  out["id"] = s.id;
  out["user_id"] = s.user_id;
  out["status"] = s.status;
  out["suggested_tier"] = s.suggested_tier;
  json::array reasons;
  for (auto& r : SuggestTier(s.body).reasons) reasons.emplace_back(r);
  out["suggested_tier_reasons"] = std::move(reasons);
  out["tier"] = s.tier ? json::value(*s.tier) : json::value(nullptr);
  out["created_at"] = FormatRfc3339(s.created_at);
  out["updated_at"] = FormatRfc3339(s.updated_at);
  out["submitted_at"] = s.submitted_at ? json::value(FormatRfc3339(*s.submitted_at)) : nullptr;
  out["decided_at"] = s.decided_at ? json::value(FormatRfc3339(*s.decided_at)) : nullptr;
  if (s.submitted_at) {
    int age = o.calendar.BusinessDaysBetween(*s.submitted_at, s.decided_at.value_or(o.clock->Now()));
    out["age_business_days"] = age;
    out["overdue"] = s.status == "submitted" && age > o.target_business_days;
  } else {
    out["age_business_days"] = nullptr;
    out["overdue"] = false;
  }
  out["total_gpus"] = TotalGpus(s.body);
  bool other = std::any_of(s.body.gpus.begin(), s.body.gpus.end(),
                           [](const GpuEntry& g) { return g.model == "other"; });
  out["has_unlisted_models"] = other;
  if (with_history) {
    json::array history;
    auto rows = tx.Query(
        "SELECT e.at, e.actor_user_id, e.action, e.from_status, e.to_status, e.message, e.tier, "
        "u.name FROM application_events e LEFT JOIN users u ON u.id = e.actor_user_id WHERE "
        "e.application_id = ? ORDER BY e.at, e.id",
        {s.id});
    if (!rows.ok()) {
      *error = rows.status();
      return out;
    }
    for (const auto& r : *rows) {
      json::object h{{"at", FormatRfc3339(r.Int(0))},
                     {"actor_id", r.Str(1)},
                     {"action", r.Str(2)},
                     {"from_status", r.Str(3)},
                     {"to_status", r.Str(4)}};
      h["actor_name"] = r.IsNull(7) ? json::value(nullptr) : json::value(r.Str(7));
      h["message"] = r.IsNull(5) ? json::value(nullptr) : json::value(r.Str(5));
      h["tier"] = r.IsNull(6) ? json::value(nullptr) : json::value(r.Str(6));
      history.push_back(std::move(h));
    }
    out["history"] = std::move(history);
  }
  return out;
}

// Moves `s` to submitted, with its history row, notification and email.
Status DoSubmit(store::Tx& tx, const ApplicationsOptions& o, const accounts::Principal& p,
                Stored& s, UnixMicros now) {
  Status model_error;
  Status complete = CheckComplete(s.body, ModelCheck(tx, &model_error));
  GPUNEX_RETURN_IF_ERROR(model_error);
  if (!complete.ok()) {
    return Status(StatusCode::kValidationFailed,
                  "the application is incomplete; fix the listed fields and submit again",
                  complete.fields());
  }
  const std::string from = s.status;
  const bool resubmit = from == "needs_info";
  GPUNEX_RETURN_IF_ERROR(
      tx.Exec("UPDATE provider_applications SET status = 'submitted', submitted_at = ?, "
              "first_submitted_at = COALESCE(first_submitted_at, ?), updated_at = ? WHERE id = ?",
              {now, now, now, s.id})
          .status());
  s.status = "submitted";
  s.submitted_at = now;
  GPUNEX_RETURN_IF_ERROR(AddEvent(tx, s.id, p.user.id, resubmit ? "resubmitted" : "submitted",
                                  from, "submitted", std::nullopt, std::nullopt, now));
  std::string text = resubmit ? "Your updated application was received and is back in review."
                              : "Your application was received and is in review.";
  std::string body = Greeting(s) + text + "\n\nApplication: " + s.id + "\nGPUs: " +
                     std::to_string(TotalGpus(s.body)) + " in " + std::to_string(s.body.gpus.size()) +
                     " entr" + (s.body.gpus.size() == 1 ? "y" : "ies") +
                     "\nSuggested tier: " + s.suggested_tier +
                     "\n\nWe aim to decide within " + std::to_string(o.target_business_days) +
                     " business days. You can follow it at " + o.public_url + "/#/applications/" +
                     s.id + "\n\n-- gpunex\n";
  return Tell(tx, o, s, resubmit ? "application.resubmitted" : "application.submitted",
              resubmit ? "Application resubmitted" : "Application submitted", text,
              resubmit ? "gpunex: your updated provider application was received"
                       : "gpunex: your provider application was received",
              body);
}

StatusOr<std::string> Cursor(std::string_view cursor, int64_t* key, std::string* id) {
  std::string raw;
  if (!Base64UrlDecode(cursor, &raw)) return FieldError("cursor", "is not a valid cursor");
  size_t bar = raw.find('|');
  if (bar == std::string::npos) return FieldError("cursor", "is not a valid cursor");
  try {
    *key = std::stoll(raw.substr(0, bar));
  } catch (const std::exception&) {
    return FieldError("cursor", "is not a valid cursor");
  }
  *id = raw.substr(bar + 1);
  return raw;
}

}  // namespace

StatusOr<json::object> Applications::Create(const accounts::Principal& p, const json::value& body) {
  const bool submit = body.is_object() && body.get_object().contains("submit") &&
                      body.get_object().at("submit").is_bool() &&
                      body.get_object().at("submit").get_bool();
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    Status model_error;
    auto parsed = ParseApplication(body, submit ? Completeness::kComplete : Completeness::kDraft,
                                   ModelCheck(tx, &model_error));
    GPUNEX_RETURN_IF_ERROR(model_error);
    if (!parsed.ok()) return parsed.status();
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows open,
        tx.Query("SELECT id, status FROM provider_applications WHERE user_id = ? AND status IN "
                 "('draft', 'submitted', 'needs_info', 'approved')",
                 {p.user.id}));
    if (!open.empty()) {
      return FailedPrecondition(open[0].Str(1) == "approved"
                                    ? "you are already an approved provider"
                                    : "you already have an open application (" + open[0].Str(0) +
                                          "); edit that one instead");
    }
    const UnixMicros now = options_.clock->Now();
    Stored s;
    s.id = NewId("app");
    s.user_id = p.user.id;
    s.status = "draft";
    s.body = std::move(*parsed);
    s.suggested_tier = SuggestTier(s.body).tier;
    s.created_at = s.updated_at = now;
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("INSERT INTO provider_applications (id, user_id, status, body, suggested_tier, "
                "created_at, updated_at) VALUES (?, ?, 'draft', ?, ?, ?, ?)",
                {s.id, s.user_id, json::serialize(ToJson(s.body)), s.suggested_tier, now, now})
            .status());
    GPUNEX_RETURN_IF_ERROR(
        AddEvent(tx, s.id, p.user.id, "created", "", "draft", std::nullopt, std::nullopt, now));
    if (submit) GPUNEX_RETURN_IF_ERROR(DoSubmit(tx, options_, p, s, now));
    Status err;
    out = ToJsonFull(s, tx, options_, true, &err);
    return err;
  }));
  return out;
}

StatusOr<json::object> Applications::Get(const accounts::Principal& p, const std::string& id) {
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Stored s, LoadVisible(tx, p, id));
    Status err;
    out = ToJsonFull(s, tx, options_, true, &err);
    return err;
  }));
  return out;
}

StatusOr<json::object> Applications::Update(const accounts::Principal& p, const std::string& id,
                                            const json::value& body) {
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Stored s, LoadVisible(tx, p, id));
    GPUNEX_RETURN_IF_ERROR(RequireOwner(p, s));
    if (s.status != "draft" && s.status != "needs_info") {
      return FailedPrecondition("an application can be edited only as a draft or when more "
                                "information was requested; it is " + s.status);
    }
    Status model_error;
    auto parsed = ParseApplication(body, Completeness::kDraft, ModelCheck(tx, &model_error));
    GPUNEX_RETURN_IF_ERROR(model_error);
    if (!parsed.ok()) return parsed.status();
    if (body.get_object().contains("submit")) {
      return FieldError("submit", "is only accepted on creation; use the submit endpoint");
    }
    const UnixMicros now = options_.clock->Now();
    s.body = std::move(*parsed);
    s.suggested_tier = SuggestTier(s.body).tier;
    s.updated_at = now;
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE provider_applications SET body = ?, suggested_tier = ?, updated_at = ? "
                "WHERE id = ?",
                {json::serialize(ToJson(s.body)), s.suggested_tier, now, s.id})
            .status());
    GPUNEX_RETURN_IF_ERROR(
        AddEvent(tx, s.id, p.user.id, "updated", s.status, s.status, std::nullopt, std::nullopt, now));
    Status err;
    out = ToJsonFull(s, tx, options_, true, &err);
    return err;
  }));
  return out;
}

StatusOr<json::object> Applications::Submit(const accounts::Principal& p, const std::string& id) {
  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Stored s, LoadVisible(tx, p, id));
    GPUNEX_RETURN_IF_ERROR(RequireOwner(p, s));
    if (s.status != "draft" && s.status != "needs_info") {
      return FailedPrecondition("the application is already " + s.status);
    }
    GPUNEX_RETURN_IF_ERROR(DoSubmit(tx, options_, p, s, options_.clock->Now()));
    Status err;
    out = ToJsonFull(s, tx, options_, true, &err);
    return err;
  }));
  return out;
}

StatusOr<json::object> Applications::List(const accounts::Principal& p, const std::string& status,
                                          const std::string& limit_s, const std::string& cursor) {
  FieldErrors errors;
  static const std::vector<std::string> kStatuses = {"draft", "submitted", "needs_info", "approved",
                                                     "rejected"};
  if (!status.empty() && std::find(kStatuses.begin(), kStatuses.end(), status) == kStatuses.end()) {
    errors.emplace("status", "must be one of draft, submitted, needs_info, approved, rejected");
  }
  int limit = kDefaultPageSize;
  if (auto l = ParsePageLimit(limit_s, kDefaultPageSize, kMaxPageSize); l.ok()) {
    limit = *l;
  } else {
    errors.merge(FieldErrors(l.status().fields()));
  }
  int64_t after_key = 0;
  std::string after_id;
  if (!cursor.empty()) {
    auto c = Cursor(cursor, &after_key, &after_id);
    if (!c.ok()) errors.merge(FieldErrors(c.status().fields()));
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  // The review queue (status=submitted) is oldest submission first; other lists follow
  // creation order.
  const bool queue = status == "submitted";
  const std::string key = queue ? "submitted_at" : "created_at";
  std::string sql = std::string(kSelect) + " WHERE 1 = 1";
  std::vector<store::Value> params;
  if (!p.IsAdmin()) {
    sql += " AND user_id = ?";
    params.emplace_back(p.user.id);
  }
  if (!status.empty()) {
    sql += " AND status = ?";
    params.emplace_back(status);
  }
  if (!cursor.empty()) {
    sql += " AND (" + key + " > ? OR (" + key + " = ? AND id > ?))";
    params.emplace_back(after_key);
    params.emplace_back(after_key);
    params.emplace_back(after_id);
  }
  sql += " ORDER BY " + key + ", id LIMIT ?";
  params.emplace_back(int64_t{limit + 1});

  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
    json::array items;
    std::string next;
    for (size_t i = 0; i < rows.size(); ++i) {
      GPUNEX_ASSIGN_OR_RETURN(Stored s, FromRow(rows[i]));
      if (static_cast<int>(i) == limit) break;
      Status err;
      items.push_back(ToJsonFull(s, tx, options_, false, &err));
      GPUNEX_RETURN_IF_ERROR(err);
      if (static_cast<int>(i) == limit - 1 && static_cast<int>(rows.size()) > limit) {
        int64_t k = queue ? s.submitted_at.value_or(0) : s.created_at;
        next = Base64UrlEncode(std::to_string(k) + "|" + s.id);
      }
    }
    out["items"] = std::move(items);
    out["next_cursor"] = next.empty() ? json::value(nullptr) : json::value(next);
    return Status::Ok();
  }));
  return out;
}

StatusOr<json::object> Applications::Decide(const accounts::Principal& p, const std::string& id,
                                            const json::value& body) {
  if (!p.IsAdmin()) return PermissionDenied("only reviewers can decide on applications");
  if (!body.is_object()) return FieldError("body", "must be a JSON object");
  FieldErrors errors;
  JsonReader r(body.get_object(), "", &errors);
  r.RejectUnknown({"decision", "tier", "message"});
  auto decision = r.String("decision", true, 32);
  auto tier = r.String("tier", false, 32);
  const bool needs_message = decision == "reject" || decision == "request_info";
  auto message = r.String("message", needs_message, kMaxMessage, true);
  if (decision && *decision != "approve" && *decision != "reject" && *decision != "request_info") {
    r.Fail("decision", "must be \"approve\", \"reject\" or \"request_info\"");
  }
  if (tier && *tier != "community" && *tier != "enterprise") {
    r.Fail("tier", "must be \"community\" or \"enterprise\"");
  }
  if (decision == "approve" && !tier && !errors.count("tier")) r.Fail("tier", "is required to approve");
  if (decision && *decision != "approve" && tier) r.Fail("tier", "is only used when approving");
  if (needs_message && errors.count("message") && errors.at("message") == "is required") {
    errors["message"] = decision == "reject" ? "must give the reason for the rejection"
                                             : "must say what information is needed";
  }
  // A blank optional message on approval is no message.
  if (message && message->find_first_not_of(" \t\r\n") == std::string::npos) message.reset();
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  json::object out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Stored s, LoadVisible(tx, p, id));
    if (s.status != "submitted") {
      return FailedPrecondition("only submitted applications can be decided; this one is " +
                                s.status);
    }
    if (s.user_id == p.user.id) {
      return PermissionDenied("reviewers cannot decide on their own application");
    }
    if (decision == "approve" && tier == "enterprise" && !s.body.infrastructure.ups.value_or(false)) {
      return FieldError("tier", "Enterprise requires a UPS; approve as community instead");
    }
    const UnixMicros now = options_.clock->Now();
    const std::string from = s.status;
    std::string to;
    if (decision == "approve") to = "approved";
    if (decision == "reject") to = "rejected";
    if (decision == "request_info") to = "needs_info";
    const bool final = to != "needs_info";
    GPUNEX_RETURN_IF_ERROR(
        tx.Exec("UPDATE provider_applications SET status = ?, tier = ?, updated_at = ?, "
                "decided_at = ?, decided_by = ? WHERE id = ?",
                {to, tier ? store::Value(*tier) : store::Value(nullptr), now,
                 final ? store::Value(now) : store::Value(nullptr),
                 final ? store::Value(p.user.id) : store::Value(nullptr), s.id})
            .status());
    GPUNEX_RETURN_IF_ERROR(AddEvent(tx, s.id, p.user.id, *decision, from, to, message, tier, now));
    GPUNEX_RETURN_IF_ERROR(accounts::Audit(tx, p.user.id, "application." + *decision, s.id, p.ip,
                                           {{"tier", tier ? json::value(*tier) : nullptr}}));
    s.status = to;
    s.tier = tier;
    if (final) s.decided_at = now;
    const std::string link = options_.public_url + "/#/applications/" + s.id;
    const std::string reviewer_note = message ? "\n\nMessage from the reviewer:\n" + *message : "";
    if (to == "approved") {
      GPUNEX_RETURN_IF_ERROR(providers::UpsertProvider(tx, s.user_id, *tier, s.id, p.user.id));
      GPUNEX_ASSIGN_OR_RETURN(auto token, providers::IssueAgentToken(tx, s.user_id, "first agent"));
      std::string tier_name = *tier == "enterprise" ? "Enterprise" : "Community";
      std::string body =
          Greeting(s) + "Your provider application " + s.id + " is approved as a " + tier_name +
          " provider." + reviewer_note +
          "\n\nYour agent token (shown only here; keep it secret):\n\n    " + token.second +
          "\n\nInstall the agent on each GPU machine (Docker and the NVIDIA Container Toolkit "
          "required):\n\n    " +
          providers::InstallCommand(options_.public_url, token.second) +
          "\n\nThe machine appears Online in your Provider Dashboard within seconds: " +
          options_.public_url + "/#/provider\nYou can create, revoke and rotate agent tokens "
          "there.\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(Tell(tx, options_, s, "application.approved",
                                  "Application approved (" + tier_name + ")",
                                  "You are now a " + tier_name +
                                      " provider. Your agent token and the install command "
                                      "were sent to " + s.body.contact.email + ".",
                                  "gpunex: your provider application is approved", body));
    } else if (to == "rejected") {
      std::string body = Greeting(s) + "We are sorry: your provider application " + s.id +
                         " was not approved.\n\nReason:\n" + *message +
                         "\n\nYou may apply again when the points above are addressed.\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(Tell(tx, options_, s, "application.rejected", "Application not approved",
                                  *message, "gpunex: your provider application was not approved",
                                  body));
    } else {
      std::string body = Greeting(s) + "The reviewer of your provider application " + s.id +
                         " needs more information:\n\n" + *message +
                         "\n\nPlease edit the application and submit it again: " + link +
                         "\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(Tell(tx, options_, s, "application.needs_info",
                                  "More information needed", *message,
                                  "gpunex: more information needed for your provider application",
                                  body));
    }
    Status err;
    out = ToJsonFull(s, tx, options_, true, &err);
    return err;
  }));
  return out;
}

}  // namespace gpunex::platform::applications
