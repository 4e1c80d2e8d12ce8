// The applications folder's tables and the only SQL that touches them:
// provider_applications (one row per application, its body stored as a JSON document) and
// application_events (its history). Other folders reach these through applications.h,
// never here.
//
// The stored document is this store's own format, not the API's: an absent value is
// left out (never written as "" or null). Documents written before version 6 carry
// every field, with null or "" for absent ones; they are read leniently (a "" email or
// country reads as absent) and version 6 rewrites them. Reading never re-validates a
// body: what was accepted once reads back as it was saved.
//
// An ApplicationsStore is a view of one transaction: every method runs in it and fails
// with the transaction's status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/applications/application.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::applications {

struct ApplicationRow {
  std::string id;
  std::string user_id;
  ApplicationStatus status = ApplicationStatus::kDraft;
  ApplicationBody body;
  Tier suggested_tier = Tier::kCommunity;
  std::optional<Tier> tier;  // set on approval
  Timestamp created_at;
  Timestamp updated_at;
  std::optional<Timestamp> first_submitted_at;
  std::optional<Timestamp> submitted_at;  // the latest submission
  std::optional<Timestamp> decided_at;    // approval or rejection
  std::optional<std::string> decided_by;
};

struct ApplicationEventRow {
  std::string id;
  std::string application_id;
  Timestamp at;
  std::string actor_user_id;
  ApplicationAction action = ApplicationAction::kCreated;
  std::optional<ApplicationStatus> from_status;  // none for created (stored as "")
  ApplicationStatus to_status = ApplicationStatus::kDraft;
  std::optional<std::string> message;
  std::optional<Tier> tier;
  std::optional<BodyDiff> changes;            // on updated (version 16 on)
  std::optional<Tier> overridden_suggestion;  // on approve against the suggested tier
};

// A row whose stored body could not be read, and why.
struct UnreadableApplication {
  std::string id;
  std::string why;
};

struct ApplicationFilter {
  std::optional<std::string> user_id;       // only this user's applications
  std::optional<ApplicationStatus> status;  // only applications in this status
  // Only applications whose applicant name, company, contact email or id contain this
  // text, ignoring ASCII case.
  std::optional<std::string> text;
};

// The readable rows of one page, in list order, and the ones skipped as unreadable.
struct ApplicationRowPage {
  std::vector<ApplicationRow> rows;
  std::vector<UnreadableApplication> unreadable;
  std::optional<Cursor> next;  // none: the page reached the end
};

// Which key orders a list.
enum class ApplicationOrder {
  kCreated,  // (created_at, id)
  // (first_submitted_at, id): the review queue, by first submission (a resubmission
  // keeps its place). REQUIRES: filter on status submitted.
  kSubmitted,
};

class ApplicationsStore {
 public:
  explicit ApplicationsStore(store::Tx& tx) : tx_(tx) {}

  // kInternal naming the application when its stored body cannot be read.
  StatusOr<std::optional<ApplicationRow>> Find(const std::string& id);

  // The user's application that is draft, submitted, needs_info or approved (the oldest
  // when there are several): {id, status}. The body is not read.
  struct OpenApplication {
    std::string id;
    ApplicationStatus status = ApplicationStatus::kDraft;
  };
  StatusOr<std::optional<OpenApplication>> FindOpen(const std::string& user_id);

  Status Insert(const ApplicationRow& row);
  Status UpdateBody(const std::string& id, const ApplicationBody& body, Tier suggested_tier,
                    Timestamp at);
  // status = submitted, submitted_at = at (and first_submitted_at when it was never set).
  Status MarkSubmitted(const std::string& id, Timestamp at);
  // A decision: the new status and tier; `decided` (approve, reject) also sets decided_at
  // and decided_by.
  Status MarkDecided(const std::string& id, ApplicationStatus status, std::optional<Tier> tier,
                     Timestamp at, bool decided, const std::string& decided_by);

  Status InsertEvent(const ApplicationEventRow& e);
  // Oldest first (at, id).
  StatusOr<std::vector<ApplicationEventRow>> ListEvents(const std::string& application_id);

  // One page of the applications `filter` selects, in `order`. A row whose body cannot be
  // read is not in `rows` but in `unreadable`; the page still moves past it.
  // `descending`: newest first.
  StatusOr<ApplicationRowPage> List(const ApplicationFilter& filter, ApplicationOrder order,
                                    bool descending, const PageRequest& page);
  // How many applications `filter` selects in all (for `order`'s list), unreadable ones
  // included.
  StatusOr<int64_t> Count(const ApplicationFilter& filter, ApplicationOrder order);

 private:
  store::Tx& tx_;
};

// A schedule as this store's document (JSON text), and back (machines' schedules, kept by
// availability/, are stored in the same form). Reading fails with kInternal, saying what
// it could not read.
std::string StoredAvailabilityText(const Availability& a);
StatusOr<Availability> ParseStoredAvailability(std::string_view text);

// The folder's migrations (store/migrations.h): its part of version 2 (the tables),
// version 6 (stored bodies that carried "" or null for absent values rewritten without)
// and version 16 (the search column, the first submission of every submitted row, the
// history's changes and overridden suggestions).
std::vector<store::Migration> ApplicationsMigrations();

}  // namespace gpunex::platform::applications
