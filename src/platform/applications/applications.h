// Provider applications and their review (APP-1..5, REV-1..5).
//
// Life cycle: draft → submitted → (needs_info → submitted)* → approved | rejected.
// Every change and decision is one transaction that also writes the history row, the
// applicant's in-dashboard notification and the email in the outbox (NTF-1), so none of
// them can exist without the others. Approval also creates the provider record, grants
// the provider role and issues the first agent token, which reaches the applicant only
// in the approval email (and is scrubbed from the outbox once sent).
//
// Authorization: applicants see and change only their own applications; admins see all
// and decide. Someone else's application is answered as not found.
#pragma once

#include <string>

#include "common/json.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/applications/business_days.h"
#include "platform/store/db.h"

namespace gpunex::platform::applications {

struct ApplicationsOptions {
  std::string public_url = "http://127.0.0.1:8080";
  std::string mail_domain = "gpunex.local";  // Message-ID domain
  int target_business_days = 3;
  BusinessCalendar calendar;
  const Clock* clock = &SystemClock();
};

class Applications {
 public:
  Applications(store::Database& db, ApplicationsOptions options)
      : db_(db), options_(std::move(options)) {}

  // POST /provider-applications. With "submit": true the application must be complete and
  // is submitted at once. kFailedPrecondition when the user already has an open or
  // approved application.
  StatusOr<json::object> Create(const accounts::Principal& p, const json::value& body);
  StatusOr<json::object> Get(const accounts::Principal& p, const std::string& id);
  // Replaces the body; only the owner, only in draft or needs_info.
  StatusOr<json::object> Update(const accounts::Principal& p, const std::string& id,
                                const json::value& body);
  StatusOr<json::object> Submit(const accounts::Principal& p, const std::string& id);
  // Admins: every application (optionally with one status), oldest submission first for
  // the queue. Others: their own.
  StatusOr<json::object> List(const accounts::Principal& p, const std::string& status,
                              const std::string& limit, const std::string& cursor);
  // {decision: approve|reject|request_info, tier?, message?}; admins only, only when
  // submitted.
  StatusOr<json::object> Decide(const accounts::Principal& p, const std::string& id,
                                const json::value& body);

 private:
  store::Database& db_;
  ApplicationsOptions options_;
};

}  // namespace gpunex::platform::applications
