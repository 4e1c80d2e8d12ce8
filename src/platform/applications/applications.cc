#include "platform/applications/applications.h"

#include <map>

#include "common/ids.h"
#include "common/invariant.h"
#include "common/log.h"
#include "platform/applications/applications_store.h"
#include "platform/catalog/catalog.h"
#include "platform/notify/notify.h"
#include "platform/providers/providers.h"

namespace gpunex::platform::applications {
namespace {

bool Blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Loads an application the principal may see; someone else's is "not found".
StatusOr<ApplicationRow> LoadVisible(ApplicationsStore& s, const accounts::Principal& p,
                                     const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationRow> a, s.Find(id));
  if (!a || (a->user_id != p.user.id && !p.IsAdmin()))
    return NotFound("no such provider application");
  return std::move(*a);
}

Status RequireOwner(const accounts::Principal& p, const ApplicationRow& a) {
  if (a.user_id != p.user.id)
    return PermissionDenied("only the applicant can change an application");
  return Status::Ok();
}

// Catalog lookups in `tx`; the first failure of the lookup itself lands in `*error`.
ModelExists ModelCheck(store::Tx& tx, Status* error) {
  return [&tx, error](std::string_view id) {
    auto r = catalog::ModelExists(tx, id);
    if (!r.ok()) {
      if (error->ok()) *error = r.status();
      return false;
    }
    return *r;
  };
}

Status AddEvent(ApplicationsStore& s, const std::string& app_id, const std::string& actor,
                ApplicationAction action, std::optional<ApplicationStatus> from,
                ApplicationStatus to, const std::optional<std::string>& message,
                std::optional<Tier> tier, Timestamp at,
                std::optional<BodyDiff> changes = std::nullopt,
                std::optional<Tier> overridden_suggestion = std::nullopt) {
  return s.InsertEvent({NewId("ape"), app_id, at, actor, action, from, to, message, tier,
                        std::move(changes), overridden_suggestion});
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

std::string Greeting(const ApplicationRow& a) {
  return "Hello " + notify::GreetingName(a.body.contact.full_name) + ",\n\n";
}

// Writes the in-dashboard notification and the email for one event on `a`, and has the
// outbox woken once the transaction commits.
Status Tell(store::Tx& tx, const ApplicationsOptions& o, Timestamp now, const ApplicationRow& a,
            std::string_view kind, const std::string& title, const std::string& dashboard_text,
            const std::string& email_subject, const std::string& email_body) {
  GPUNEX_RETURN_IF_ERROR(notify::AddNotification(tx, now, a.user_id, kind, title, dashboard_text,
                                                 "/#/applications/" + a.id));
  // Submission requires a contact email, and only submitted applications are decided,
  // so this holds for every event that sends one.
  if (!a.body.contact.email) {
    LogWarn("applications.no_contact_email",
            {{"application_id", a.id}, {"kind", std::string(kind)}});
    return Status::Ok();
  }
  notify::Email e;
  e.to = *a.body.contact.email;
  e.subject = email_subject;
  e.body = email_body;
  e.kind = std::string(kind);
  // Held until the applicant's account has verified the contact address (notify/verify.h).
  e.user_id = a.user_id;
  GPUNEX_RETURN_IF_ERROR(notify::EnqueueEmail(tx, now, e, o.mail_domain));
  if (o.wake_outbox) tx.AfterCommit(o.wake_outbox);
  return Status::Ok();
}

// The application as of `now`, without its history.
Application FromRow(const ApplicationRow& r, const ApplicationsOptions& o, Timestamp now) {
  Application a;
  a.id = r.id;
  a.user_id = r.user_id;
  a.status = r.status;
  a.body = r.body;
  a.suggested_tier = r.suggested_tier;
  a.suggested_tier_reasons = SuggestTier(r.body).reasons;
  a.tier = r.tier;
  a.created_at = r.created_at;
  a.updated_at = r.updated_at;
  // Version 16 wrote first_submitted_at for every submitted row; the fallback is for a
  // row that another writer left without it.
  a.submitted_at = r.first_submitted_at ? r.first_submitted_at : r.submitted_at;
  if (r.submitted_at && r.submitted_at != a.submitted_at) a.resubmitted_at = r.submitted_at;
  a.decided_at = r.decided_at;
  a.decided_by = r.decided_by;
  if (a.submitted_at) {
    a.age_business_days =
        o.calendar.BusinessDaysBetween(*a.submitted_at, r.decided_at.value_or(now));
    a.overdue =
        r.status == ApplicationStatus::kSubmitted && *a.age_business_days > o.target_business_days;
  }
  a.total_gpus = TotalGpus(r.body);
  a.has_unlisted_models = HasUnlistedModels(r.body);
  return a;
}

// Adds the history, with the actors' names from accounts.
Status AddHistory(store::Tx& tx, Application& a) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<ApplicationEventRow> rows,
                          ApplicationsStore(tx).ListEvents(a.id));
  std::map<std::string, std::optional<std::string>> names;
  std::vector<ApplicationEvent> history;
  for (ApplicationEventRow& e : rows) {
    auto it = names.find(e.actor_user_id);
    if (it == names.end()) {
      auto user = accounts::LoadUser(tx, e.actor_user_id);
      if (!user.ok() && user.status().code() != StatusCode::kNotFound) return user.status();
      it = names.emplace(e.actor_user_id, user.ok() ? std::optional(user->name) : std::nullopt)
               .first;
    }
    history.push_back({e.at, std::move(e.actor_user_id), it->second, e.action, e.from_status,
                       e.to_status, std::move(e.message), e.tier, std::move(e.changes),
                       e.overridden_suggestion});
  }
  a.history = std::move(history);
  return Status::Ok();
}

StatusOr<Application> WithHistory(store::Tx& tx, const ApplicationRow& r,
                                  const ApplicationsOptions& o, Timestamp now) {
  Application a = FromRow(r, o, now);
  GPUNEX_RETURN_IF_ERROR(AddHistory(tx, a));
  return a;
}

// Moves `a` to submitted, with its history row, notification and email.
Status DoSubmit(store::Tx& tx, const ApplicationsOptions& o, const accounts::Principal& p,
                ApplicationRow& a, Timestamp now) {
  Status model_error;
  FieldErrors missing = Validate(a.body, Completeness::kComplete, ModelCheck(tx, &model_error));
  GPUNEX_RETURN_IF_ERROR(model_error);
  if (!missing.empty()) {
    return Status(StatusCode::kValidationFailed,
                  "the application is incomplete; fix the listed fields and submit again",
                  std::move(missing));
  }
  const ApplicationStatus from = a.status;
  GPUNEX_INVARIANT(ApplicationMayGo(from, ApplicationStatus::kSubmitted),
                   "an application is submitted only from draft or needs_info");
  const bool resubmit = from == ApplicationStatus::kNeedsInfo;
  ApplicationsStore s(tx);
  GPUNEX_RETURN_IF_ERROR(s.MarkSubmitted(a.id, now));
  a.status = ApplicationStatus::kSubmitted;
  a.submitted_at = now;
  if (!a.first_submitted_at) a.first_submitted_at = now;
  a.updated_at = now;
  GPUNEX_RETURN_IF_ERROR(
      AddEvent(s, a.id, p.user.id,
               resubmit ? ApplicationAction::kResubmitted : ApplicationAction::kSubmitted, from,
               ApplicationStatus::kSubmitted, std::nullopt, std::nullopt, now));
  const std::string text = resubmit ? "Your updated application was received and is back in review."
                                    : "Your application was received and is in review.";
  const size_t entries = a.body.gpus.size();
  const std::string body = Greeting(a) + text + "\n\nApplication: " + a.id +
                           "\nGPUs: " + std::to_string(TotalGpus(a.body)) + " in " +
                           std::to_string(entries) + " entr" + (entries == 1 ? "y" : "ies") +
                           "\nSuggested tier: " + std::string(Name(a.suggested_tier)) +
                           "\n\nWe aim to decide within " + std::to_string(o.target_business_days) +
                           " business days. You can follow it at " + o.public_url +
                           "/#/applications/" + a.id + "\n\n-- gpunex\n";
  return Tell(tx, o, now, a, resubmit ? "application.resubmitted" : "application.submitted",
              resubmit ? "Application resubmitted" : "Application submitted", text,
              resubmit ? "gpunex: your updated provider application was received"
                       : "gpunex: your provider application was received",
              body);
}

}  // namespace

FieldErrors ValidateDecision(const DecisionRequest& req) {
  FieldErrors errors;
  const bool blank = Blank(req.decision);
  const std::optional<Decision> d = kDecisionNames.Parse(req.decision);
  if (blank) {
    errors.emplace("decision", "is required");
  } else if (!d) {
    errors.emplace("decision", "must be " + kDecisionNames.Listed());
  }
  if (req.tier && !kTierNames.Parse(*req.tier)) {
    errors.emplace("tier", "must be " + kTierNames.Listed());
  }
  if (d == Decision::kApprove && !req.tier) errors.emplace("tier", "is required to approve");
  if (!blank && d != Decision::kApprove && req.tier)
    errors.emplace("tier", "is only used when approving");
  if ((d == Decision::kReject || d == Decision::kRequestInfo) &&
      (!req.message || Blank(*req.message))) {
    errors.emplace("message", d == Decision::kReject ? "must give the reason for the rejection"
                                                     : "must say what information is needed");
  }
  if (req.message && req.message->size() > Applications::kMaxMessage) {
    errors.emplace("message",
                   "must be at most " + std::to_string(Applications::kMaxMessage) + " characters");
  }
  if (req.override_suggestion && !blank && d != Decision::kApprove) {
    errors.emplace("override_suggestion", "is only used when approving");
  }
  return errors;
}

StatusOr<Application> Applications::Create(const accounts::Principal& p,
                                           const CreateApplicationRequest& req) {
  Application out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    Status model_error;
    FieldErrors errors =
        Validate(req.body, req.submit ? Completeness::kComplete : Completeness::kDraft,
                 ModelCheck(tx, &model_error));
    GPUNEX_RETURN_IF_ERROR(model_error);
    if (!errors.empty()) return ValidationFailed(std::move(errors));
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationsStore::OpenApplication> open,
                            s.FindOpen(p.user.id));
    if (open) {
      return FailedPrecondition(open->status == ApplicationStatus::kApproved
                                    ? "you are already an approved provider"
                                    : "you already have an open application (" + open->id +
                                          "); edit that one instead");
    }
    const Timestamp now = options_.clock->Now();
    ApplicationRow a;
    a.id = NewId("app");
    a.user_id = p.user.id;
    a.status = ApplicationStatus::kDraft;
    a.body = Normalize(req.body);
    a.suggested_tier = SuggestTier(a.body).tier;
    a.created_at = a.updated_at = now;
    GPUNEX_RETURN_IF_ERROR(s.Insert(a));
    GPUNEX_RETURN_IF_ERROR(AddEvent(s, a.id, p.user.id, ApplicationAction::kCreated, std::nullopt,
                                    ApplicationStatus::kDraft, std::nullopt, std::nullopt, now));
    if (req.submit) GPUNEX_RETURN_IF_ERROR(DoSubmit(tx, options_, p, a, now));
    GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, now));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Application> Applications::Get(const accounts::Principal& p, const std::string& id) {
  Application out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(ApplicationRow a, LoadVisible(s, p, id));
    GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, options_.clock->Now()));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Application> Applications::Update(const accounts::Principal& p, const std::string& id,
                                           const ApplicationBody& body) {
  Application out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(ApplicationRow a, LoadVisible(s, p, id));
    GPUNEX_RETURN_IF_ERROR(RequireOwner(p, a));
    if (a.status != ApplicationStatus::kDraft && a.status != ApplicationStatus::kNeedsInfo) {
      return FailedPrecondition(
          "an application can be edited only as a draft or when more information was requested; it "
          "is " +
          std::string(Name(a.status)));
    }
    Status model_error;
    FieldErrors errors = Validate(body, Completeness::kDraft, ModelCheck(tx, &model_error));
    GPUNEX_RETURN_IF_ERROR(model_error);
    if (!errors.empty()) return ValidationFailed(std::move(errors));
    const Timestamp now = options_.clock->Now();
    ApplicationBody saved = Normalize(body);
    BodyDiff changes = DiffBodies(a.body, saved);
    if (changes.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, now));
      return Status::Ok();
    }
    a.body = std::move(saved);
    a.suggested_tier = SuggestTier(a.body).tier;
    a.updated_at = now;
    GPUNEX_RETURN_IF_ERROR(s.UpdateBody(a.id, a.body, a.suggested_tier, now));
    GPUNEX_RETURN_IF_ERROR(AddEvent(s, a.id, p.user.id, ApplicationAction::kUpdated, a.status,
                                    a.status, std::nullopt, std::nullopt, now, std::move(changes)));
    GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, now));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Application> Applications::Submit(const accounts::Principal& p, const std::string& id,
                                           const SubmitRequest& req) {
  // Blank is none.
  const std::string reply = Blank(req.reply.value_or("")) ? "" : *req.reply;
  if (reply.size() > kMaxMessage) {
    return FieldError("reply", "must be at most " + std::to_string(kMaxMessage) + " characters");
  }
  Application out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(ApplicationRow a, LoadVisible(s, p, id));
    GPUNEX_RETURN_IF_ERROR(RequireOwner(p, a));
    if (a.status != ApplicationStatus::kDraft && a.status != ApplicationStatus::kNeedsInfo) {
      return FailedPrecondition("the application is already " + std::string(Name(a.status)));
    }
    if (!reply.empty() && a.status != ApplicationStatus::kNeedsInfo) {
      return FieldError("reply", "is only accepted when the reviewer asked for more information");
    }
    const Timestamp now = options_.clock->Now();
    // Before the resubmission, so that the history reads reply, then resubmitted (events
    // of one instant are in id order, and ids count up).
    if (!reply.empty()) {
      GPUNEX_RETURN_IF_ERROR(AddEvent(s, a.id, p.user.id, ApplicationAction::kReply, a.status,
                                      a.status, reply, std::nullopt, now));
    }
    GPUNEX_RETURN_IF_ERROR(DoSubmit(tx, options_, p, a, now));
    GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, now));
    return Status::Ok();
  }));
  return out;
}

StatusOr<ApplicationList> Applications::List(const accounts::Principal& p,
                                             const ListApplicationsRequest& req) {
  FieldErrors errors;
  const std::optional<ApplicationStatus> status = kApplicationStatusNames.Parse(req.status);
  if (!req.status.empty() && !status) {
    errors.emplace("status", "must be one of draft, submitted, needs_info, approved, rejected");
  }
  if (req.page.limit < 1 || req.page.limit > kPageLimits.max_limit) {
    errors.emplace("limit",
                   "must be an integer from 1 to " + std::to_string(kPageLimits.max_limit));
  }
  if (req.query.size() > kMaxQuery) {
    errors.emplace("q", "must be at most " + std::to_string(kMaxQuery) + " characters");
  }
  if (!req.sort.empty() && req.sort != "oldest" && req.sort != "newest") {
    errors.emplace("sort", "must be \"oldest\" or \"newest\"");
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  ApplicationFilter filter;
  if (!p.IsAdmin() || req.mine) filter.user_id = p.user.id;
  filter.status = status;
  if (!Blank(req.query)) {
    const size_t b = req.query.find_first_not_of(" \t\r\n");
    const size_t e = req.query.find_last_not_of(" \t\r\n");
    filter.text = req.query.substr(b, e - b + 1);
  }
  const ApplicationOrder order = status == ApplicationStatus::kSubmitted
                                     ? ApplicationOrder::kSubmitted
                                     : ApplicationOrder::kCreated;
  const bool descending = req.sort == "newest";

  ApplicationList out;
  std::vector<UnreadableApplication> skipped;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(ApplicationRowPage page, s.List(filter, order, descending, req.page));
    GPUNEX_ASSIGN_OR_RETURN(out.total, s.Count(filter, order));
    const Timestamp now = options_.clock->Now();
    out.items.clear();
    for (const ApplicationRow& r : page.rows) out.items.push_back(FromRow(r, options_, now));
    out.next = std::move(page.next);
    skipped = std::move(page.unreadable);
    return Status::Ok();
  }));
  for (const UnreadableApplication& u : skipped) {
    unreadable_rows_.fetch_add(1, std::memory_order_relaxed);
    LogError("applications.unreadable_row", {{"application_id", u.id}, {"error", u.why}});
  }
  return out;
}

StatusOr<Application> Applications::Decide(const accounts::Principal& p, const std::string& id,
                                           const DecisionRequest& req) {
  if (!p.IsAdmin()) return PermissionDenied("only reviewers can decide on applications");
  FieldErrors errors = ValidateDecision(req);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  // A blank optional message on approval is no message.
  std::optional<std::string> message = req.message;
  if (message && Blank(*message)) message.reset();
  // Both are names of their tables: ValidateDecision checked.
  const Decision decision = *kDecisionNames.Parse(req.decision);
  const std::optional<Tier> tier = req.tier ? kTierNames.Parse(*req.tier) : std::nullopt;

  Application out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    ApplicationsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(ApplicationRow a, LoadVisible(s, p, id));
    if (a.status != ApplicationStatus::kSubmitted) {
      return FailedPrecondition("only submitted applications can be decided; this one is " +
                                std::string(Name(a.status)));
    }
    if (a.user_id == p.user.id)
      return PermissionDenied("reviewers cannot decide on their own application");
    if (decision == Decision::kApprove && tier == Tier::kEnterprise &&
        !a.body.infrastructure.ups.value_or(false)) {
      return FieldError("tier", "Enterprise requires a UPS; approve as community instead");
    }
    // Enterprise against a Community suggestion is the reviewer's explicit call; Community
    // against an Enterprise suggestion (the safer tier) needs no confirmation. Either is
    // recorded as an override.
    std::optional<Tier> overridden;
    if (decision == Decision::kApprove && *tier != a.suggested_tier) overridden = a.suggested_tier;
    if (overridden && *tier == Tier::kEnterprise && !req.override_suggestion) {
      return FieldError("tier", "differs from the suggested tier, community (" +
                                    Join(SuggestTier(a.body).reasons, "; ") +
                                    "); to approve as enterprise anyway, set override_suggestion");
    }
    const Timestamp now = options_.clock->Now();
    const ApplicationStatus from = a.status;
    const ApplicationStatus to = decision == Decision::kApprove  ? ApplicationStatus::kApproved
                                 : decision == Decision::kReject ? ApplicationStatus::kRejected
                                                                 : ApplicationStatus::kNeedsInfo;
    GPUNEX_INVARIANT(ApplicationMayGo(from, to), "a decision is taken on a submitted application");
    const bool final = to != ApplicationStatus::kNeedsInfo;
    GPUNEX_RETURN_IF_ERROR(s.MarkDecided(a.id, to, tier, now, final, p.user.id));
    GPUNEX_RETURN_IF_ERROR(AddEvent(s, a.id, p.user.id, ActionOf(decision), from, to, message, tier,
                                    now, std::nullopt, overridden));
    accounts::AuditDetail detail;
    if (tier) detail["tier"] = Name(*tier);
    if (overridden) detail["overridden_suggestion"] = Name(*overridden);
    GPUNEX_RETURN_IF_ERROR(accounts::Audit(
        tx, now, p.user.id, "application." + std::string(Name(decision)), a.id, p.ip, detail));
    a.status = to;
    a.tier = tier;
    a.updated_at = now;
    if (final) {
      a.decided_at = now;
      a.decided_by = p.user.id;
    }
    const std::string link = options_.public_url + "/#/applications/" + a.id;
    const std::string reviewer_note = message ? "\n\nMessage from the reviewer:\n" + *message : "";
    if (to == ApplicationStatus::kApproved) {
      GPUNEX_RETURN_IF_ERROR(providers::UpsertProvider(tx, now, a.user_id, *tier, a.id, p.user.id));
      GPUNEX_ASSIGN_OR_RETURN(providers::NewAgentToken token,
                              providers::IssueAgentToken(tx, now, a.user_id, "first agent"));
      const std::string tier_name = *tier == Tier::kEnterprise ? "Enterprise" : "Community";
      const std::string a_tier = (*tier == Tier::kEnterprise ? "an " : "a ") + tier_name;
      const std::string body =
          Greeting(a) + "Your provider application " + a.id + " is approved as " + a_tier +
          " provider." + reviewer_note +
          "\n\nYour agent token (shown only here; keep it secret):\n\n    " + token.secret +
          "\n\nInstall the agent on each GPU machine (Docker and the NVIDIA Container Toolkit "
          "required):\n\n    " +
          providers::InstallCommand(options_.public_url, token.secret) +
          "\n\nThe machine appears Online in your Provider Dashboard within seconds: " +
          options_.public_url +
          "/#/provider\nYou can create, revoke and rotate agent tokens there.\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(Tell(
          tx, options_, now, a, "application.approved", "Application approved (" + tier_name + ")",
          "You are now " + a_tier +
              " provider. Your agent token and the install command are emailed to " +
              a.body.contact.email.value_or("your contact email") +
              " (once that address is verified: your Account page shows what waits).",
          "gpunex: your provider application is approved", body));
    } else if (to == ApplicationStatus::kRejected) {
      const std::string body =
          Greeting(a) + "We are sorry: your provider application " + a.id +
          " was not approved.\n\nReason:\n" + *message +
          "\n\nYou may apply again when the points above are addressed.\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(Tell(tx, options_, now, a, "application.rejected",
                                  "Application not approved", *message,
                                  "gpunex: your provider application was not approved", body));
    } else {
      const std::string body = Greeting(a) + "The reviewer of your provider application " + a.id +
                               " needs more information:\n\n" + *message +
                               "\n\nPlease edit the application and submit it again: " + link +
                               "\n\n-- gpunex\n";
      GPUNEX_RETURN_IF_ERROR(
          Tell(tx, options_, now, a, "application.needs_info", "More information needed", *message,
               "gpunex: more information needed for your provider application", body));
    }
    GPUNEX_ASSIGN_OR_RETURN(out, WithHistory(tx, a, options_, now));
    return Status::Ok();
  }));
  return out;
}

StatusOr<FieldErrors> Applications::Check(const ApplicationBody& body, Completeness completeness) {
  FieldErrors out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    Status model_error;
    out = Validate(body, completeness, ModelCheck(tx, &model_error));
    return model_error;
  }));
  return out;
}

StatusOr<std::optional<Availability>> ApprovedAvailability(store::Tx& tx,
                                                           const std::string& user_id,
                                                           const std::string& catalog_id) {
  ApplicationsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationsStore::OpenApplication> open,
                          s.FindOpen(user_id));
  if (!open || open->status != ApplicationStatus::kApproved) return std::optional<Availability>();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationRow> row, s.Find(open->id));
  if (!row) return std::optional<Availability>();
  const GpuEntry* first = nullptr;
  for (const GpuEntry& g : row->body.gpus) {
    if (!g.availability) continue;
    if (g.model == catalog_id) return std::optional<Availability>(*g.availability);
    if (!first) first = &g;
  }
  if (!first) return std::optional<Availability>();
  return std::optional<Availability>(*first->availability);
}

StatusOr<std::optional<OfferTerms>> ApprovedOfferTerms(store::Tx& tx, const std::string& user_id,
                                                       const std::string& catalog_id) {
  ApplicationsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationsStore::OpenApplication> open,
                          s.FindOpen(user_id));
  if (!open || open->status != ApplicationStatus::kApproved) return std::optional<OfferTerms>();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ApplicationRow> row, s.Find(open->id));
  if (!row) return std::optional<OfferTerms>();
  OfferTerms out;
  out.commitment_months = row->body.infrastructure.commitment_months.value_or(0);
  const GpuEntry* first = nullptr;
  const GpuEntry* same = nullptr;
  for (const GpuEntry& g : row->body.gpus) {
    if (!g.location) continue;
    if (!first) first = &g;
    if (g.model == catalog_id && !same) same = &g;
  }
  if (const GpuEntry* e = same ? same : first) out.location = *e->location;
  return std::optional<OfferTerms>(std::move(out));
}

}  // namespace gpunex::platform::applications
