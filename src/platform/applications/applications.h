// Provider applications and their review (APP-1..5, REV-1..5).
//
// Life cycle: draft → submitted → (needs_info → submitted)* → approved | rejected. The
// applicant answers a request for information by resubmitting, optionally with a reply
// (its own history entry); an edit's history entry says which fields changed. Approving
// Enterprise when Community is suggested needs the reviewer's explicit override, and any
// approval against the suggested tier is recorded as such.
// Every change and decision is one transaction that also writes the history row, the
// applicant's in-dashboard notification and the email in the outbox (NTF-1), so none of
// them can exist without the others; once such a transaction commits, the outbox is
// woken (ApplicationsOptions::wake_outbox). Approval also creates the provider record,
// grants the provider role and issues the first agent token, which reaches the
// applicant only in the approval email (and is scrubbed from the outbox once sent).
//
// Authorization: applicants see and change only their own applications; admins see all
// and decide. Someone else's application is answered as not found.
//
// Reading never re-validates a stored body; a row whose body cannot be read at all fails
// the request for that one application, and is skipped (logged and counted in
// unreadable_rows()) by lists, so it cannot break them for everybody.
//
// The tables are applications_store.h's.
//
// Thread-safety: Applications is safe to share; its options are immutable.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/business_days.h"
#include "common/enum_names.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/applications/application.h"
#include "platform/store/db.h"

namespace gpunex::platform::applications {

// One entry of an application's history.
struct ApplicationEvent {
  Timestamp at;
  std::string actor_id;
  std::optional<std::string> actor_name;  // none when the account no longer exists or is disabled
  ApplicationAction action = ApplicationAction::kCreated;
  std::optional<ApplicationStatus> from_status;  // none for created ("" on the wire)
  ApplicationStatus to_status = ApplicationStatus::kDraft;
  std::optional<std::string> message;  // the reviewer's, on decisions; the applicant's reply
  std::optional<Tier> tier;            // on approval
  std::optional<BodyDiff> changes;     // on updated (none on edits saved before version 16)
  // On an approval against the suggested tier: the tier that was suggested.
  std::optional<Tier> overridden_suggestion;
};

struct Application {
  std::string id;
  std::string user_id;
  ApplicationStatus status = ApplicationStatus::kDraft;
  ApplicationBody body;
  Tier suggested_tier = Tier::kCommunity;           // as suggested when the body was last saved
  std::vector<std::string> suggested_tier_reasons;  // SuggestTier(body).reasons
  std::optional<Tier> tier;                         // once approved
  Timestamp created_at;
  Timestamp updated_at;
  std::optional<Timestamp> submitted_at;    // the first submission, kept on resubmission
  std::optional<Timestamp> resubmitted_at;  // the latest resubmission; none before one
  std::optional<Timestamp> decided_at;      // approval or rejection
  std::optional<std::string> decided_by;    // the reviewer's user id, with decided_at
  // Business days from the first submission to the decision (to now while undecided);
  // none before the first submission.
  std::optional<int> age_business_days;
  // Submitted and older than the review target.
  bool overdue = false;
  int64_t total_gpus = 0;
  bool has_unlisted_models = false;
  // Oldest first; none in lists.
  std::optional<std::vector<ApplicationEvent>> history;
};

struct CreateApplicationRequest {
  ApplicationBody body;
  // Submit at once: the body must then be complete.
  bool submit = false;
};

struct ListApplicationsRequest {
  std::string status;  // "" for every status; else a name of kApplicationStatusNames
  PageRequest page;
  // Only the caller's own applications (what a non-admin always gets).
  bool mine = false;
  // "" or text to look for in the applicant's name, company, contact email and the
  // application id (ASCII case ignored); at most kMaxQuery bytes.
  std::string query{};
  // "" or "oldest": by first submission in the queue (status submitted), else by
  // creation, oldest first; "newest": the other way round.
  std::string sort{};
};

// One page of a list and how many applications the list has in all.
struct ApplicationList : Page<Application> {
  int64_t total = 0;
};

struct SubmitRequest {
  // The applicant's answer to a request for information (only in needs_info); blank is
  // none. At most kMaxMessage bytes.
  std::optional<std::string> reply;
};

// A reviewer's decision on a submitted application: approve (with a tier), reject, or ask
// for more information (needs_info). Each is the history's action of the same name.
enum class Decision { kApprove, kReject, kRequestInfo };
inline constexpr EnumNames<Decision, 3> kDecisionNames{{{
    {Decision::kApprove, "approve"},
    {Decision::kReject, "reject"},
    {Decision::kRequestInfo, "request_info"},
}}};
inline std::string_view Name(Decision d) { return kDecisionNames.Name(d); }
constexpr ApplicationAction ActionOf(Decision d) {
  switch (d) {
    case Decision::kApprove:
      return ApplicationAction::kApprove;
    case Decision::kReject:
      return ApplicationAction::kReject;
    case Decision::kRequestInfo:
      return ApplicationAction::kRequestInfo;
  }
  return ApplicationAction::kApprove;
}

// A decision as the wire gives it: its values are names of kDecisionNames and kTierNames,
// which ValidateDecision checks (so that one answer names every bad field).
struct DecisionRequest {
  std::string decision;                // a name of kDecisionNames
  std::optional<std::string> tier;     // a name of kTierNames; required to approve, else absent
  std::optional<std::string> message;  // required to reject or request information
  // Approve Enterprise although Community is suggested (only with "approve").
  bool override_suggestion = false;
};

// The value errors of a decision, under the API's field names ("decision", "tier",
// "message"); empty when it is well formed. Decide checks this first.
FieldErrors ValidateDecision(const DecisionRequest& req);

// The schedule a new machine of `user_id` starts with (availability/): in the user's
// approved application, the availability of the entry for GPU model `catalog_id`, else of
// the first entry that has one; nullopt without an approved application or availability.
StatusOr<std::optional<Availability>> ApprovedAvailability(store::Tx& tx,
                                                           const std::string& user_id,
                                                           const std::string& catalog_id);

// What the marketplace shows of a provider's GPUs of model `catalog_id` (market/): the
// location of that entry in the approved application (else of the first entry with one)
// and the commitment period; nullopt without an approved application.
struct OfferTerms {
  Location location;
  int64_t commitment_months = 0;
};
StatusOr<std::optional<OfferTerms>> ApprovedOfferTerms(store::Tx& tx, const std::string& user_id,
                                                       const std::string& catalog_id);

struct ApplicationsOptions {
  std::string public_url = "http://127.0.0.1:8080";
  std::string mail_domain = "gpunex.local";  // Message-ID domain
  int target_business_days = 3;
  BusinessCalendar calendar;
  const Clock* clock = &SystemClock();
  // Called once a transaction that put email in the outbox committed; may be empty.
  std::function<void()> wake_outbox;
};

class Applications {
 public:
  Applications(store::Database& db, ApplicationsOptions options)
      : db_(db), options_(std::move(options)) {}

  // A new draft (submitted at once with `submit`: the body must then be complete).
  // Field errors for every bad value; kFailedPrecondition when the user already has an
  // open or approved application.
  StatusOr<Application> Create(const accounts::Principal& p, const CreateApplicationRequest& req);
  StatusOr<Application> Get(const accounts::Principal& p, const std::string& id);
  // Replaces the body; only the owner, only in draft or needs_info. The history entry
  // lists the fields that changed; a body equal to the saved one changes nothing and
  // writes no entry.
  StatusOr<Application> Update(const accounts::Principal& p, const std::string& id,
                               const ApplicationBody& body);
  // Only the owner, only in draft or needs_info; kValidationFailed naming what is missing
  // when the body is not complete, or naming "reply" when it is too long or given on a
  // first submission. A reply is written to the history before the resubmission.
  StatusOr<Application> Submit(const accounts::Principal& p, const std::string& id,
                               const SubmitRequest& req = {});
  // Admins: every application (optionally in one status, or only their own with
  // `mine`); others: their own. The review queue (status submitted) is by first
  // submission, other lists by creation; oldest first unless sort is "newest". Field
  // errors on status, limit, q and sort.
  StatusOr<ApplicationList> List(const accounts::Principal& p, const ListApplicationsRequest& req);
  // Admins only, only when submitted, never on their own application. Approving
  // Enterprise when Community is suggested fails on "tier", saying why, unless
  // override_suggestion.
  StatusOr<Application> Decide(const accounts::Principal& p, const std::string& id,
                               const DecisionRequest& req);

  // What Validate finds in `body` at `completeness`, with the catalog consulted; saves
  // nothing. For a caller that already has errors of its own (the API's decoding) and
  // must name every bad field.
  StatusOr<FieldErrors> Check(const ApplicationBody& body, Completeness completeness);

  // How many times a list skipped a row whose stored body could not be read, since start.
  uint64_t unreadable_rows() const { return unreadable_rows_.load(std::memory_order_relaxed); }

  // Lists: 50 by default, at most 200.
  static constexpr PageLimits kPageLimits{50, 200};
  // Reviewer messages and applicants' replies, in bytes.
  static constexpr size_t kMaxMessage = 4000;
  // A list's search text, in bytes.
  static constexpr size_t kMaxQuery = 100;

 private:
  store::Database& db_;
  const ApplicationsOptions options_;
  std::atomic<uint64_t> unreadable_rows_{0};
};

}  // namespace gpunex::platform::applications
