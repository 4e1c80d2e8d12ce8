// The provider application's body (APP-1..3): what an applicant tells about themselves and
// their GPUs, the rules its values follow, and the tier suggestion (REV-3). Pure
// functions: no database, no HTTP, no JSON (api/applications_api.cc decodes and encodes
// the wire form; applications_store.cc the stored form).
//
// A draft may leave anything out. An absent value is absent (std::nullopt, or "" for the
// free-text fields full_name, company, city, region and maintenance_notes, which have no
// other empty meaning); it is never stored or read back as a value that would not
// validate, such as an email of "".
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/countries.h"
#include "common/enum_names.h"
#include "common/status.h"
#include "platform/providers/provider_status.h"

namespace gpunex::platform::applications {

// A weekly window of availability in the schedule's time zone. An end at or before the
// start runs past midnight: {"fri"}, 22:00–06:00 is Friday 22:00 to Saturday 06:00.
struct Window {
  std::vector<std::string> days;  // "mon".."sun", unique, in week order: the days it starts
  std::string start;              // "HH:MM", 00:00..23:59
  std::string end;                // "HH:MM", 00:01..24:00, not equal to start

  friend bool operator==(const Window&, const Window&) = default;
};

// The kinds of availability, as the wire and the stored documents name them: "always"
// (24/7, Availability::always) or "schedule" (weekly windows in a time zone).
enum class AvailabilityKind { kAlways, kSchedule };
inline constexpr EnumNames<AvailabilityKind, 2> kAvailabilityKindNames{{{
    {AvailabilityKind::kAlways, "always"},
    {AvailabilityKind::kSchedule, "schedule"},
}}};
inline std::string_view Name(AvailabilityKind k) { return kAvailabilityKindNames.Name(k); }

// An application's status (applications.h tells its life cycle).
enum class ApplicationStatus { kDraft, kSubmitted, kNeedsInfo, kApproved, kRejected };
inline constexpr EnumNames<ApplicationStatus, 5> kApplicationStatusNames{{{
    {ApplicationStatus::kDraft, "draft"},
    {ApplicationStatus::kSubmitted, "submitted"},
    {ApplicationStatus::kNeedsInfo, "needs_info"},
    {ApplicationStatus::kApproved, "approved"},
    {ApplicationStatus::kRejected, "rejected"},
}}};
inline std::string_view Name(ApplicationStatus s) { return kApplicationStatusNames.Name(s); }
// draft → submitted → (needs_info → submitted)* → approved | rejected; nothing leaves
// approved or rejected.
constexpr bool ApplicationMayGo(ApplicationStatus from, ApplicationStatus to) {
  using enum ApplicationStatus;
  switch (from) {
    case kDraft:
    case kNeedsInfo:
      return to == kSubmitted;
    case kSubmitted:
      return to == kNeedsInfo || to == kApproved || to == kRejected;
    case kApproved:
    case kRejected:
      return false;
  }
  return false;
}

// A provider's tier (REV-3): Enterprise (UPS-backed, suggested for 24/7 machines with a
// commitment and fast links) or Community; providers/provider_status.h names it.
using providers::kTierNames;
using providers::Tier;

// What an entry of an application's history records: its creation, an edit, the
// applicant's reply to a request for information, a submission (the first, or one after
// needs_info) or a reviewer's decision (approve, reject, request_info: applications.h
// Decision).
enum class ApplicationAction {
  kCreated,
  kUpdated,
  kReply,
  kSubmitted,
  kResubmitted,
  kApprove,
  kReject,
  kRequestInfo,
};
inline constexpr EnumNames<ApplicationAction, 8> kApplicationActionNames{{{
    {ApplicationAction::kCreated, "created"},
    {ApplicationAction::kUpdated, "updated"},
    {ApplicationAction::kReply, "reply"},
    {ApplicationAction::kSubmitted, "submitted"},
    {ApplicationAction::kResubmitted, "resubmitted"},
    {ApplicationAction::kApprove, "approve"},
    {ApplicationAction::kReject, "reject"},
    {ApplicationAction::kRequestInfo, "request_info"},
}}};
inline std::string_view Name(ApplicationAction a) { return kApplicationActionNames.Name(a); }

struct Availability {
  bool always = true;    // {"kind": "always"}: 24/7
  std::string timezone;  // IANA name, for schedules
  std::vector<Window> windows;

  friend bool operator==(const Availability&, const Availability&) = default;
};

struct Location {
  std::string city;                    // "" when not given
  std::optional<std::string> country;  // ISO 3166-1 alpha-2, upper case
  std::string region;                  // optional data-center region, e.g. "eu-south"

  friend bool operator==(const Location&, const Location&) = default;
};

struct GpuEntry {
  std::string model;                       // catalog id or "other"
  std::optional<std::string> model_other;  // set iff model == "other"
  std::optional<int64_t> quantity;
  std::optional<int64_t> system_ram_gb;
  std::optional<double> upload_gbps;
  std::optional<double> download_gbps;
  std::optional<Availability> availability;
  std::optional<Location> location;

  friend bool operator==(const GpuEntry&, const GpuEntry&) = default;
};

struct Contact {
  std::string full_name;
  std::optional<std::string> email;  // normalised to lower case
  std::string company;

  friend bool operator==(const Contact&, const Contact&) = default;
};

struct Infrastructure {
  std::optional<bool> ups;
  std::optional<int64_t> commitment_months;  // 0, 3, 6 or 12
  std::string maintenance_notes;

  friend bool operator==(const Infrastructure&, const Infrastructure&) = default;
};

struct ApplicationBody {
  Contact contact;
  std::vector<GpuEntry> gpus;
  Infrastructure infrastructure;

  friend bool operator==(const ApplicationBody&, const ApplicationBody&) = default;
};

// Limits, shared with docs/ and the web form. The API also checks the text lengths
// while decoding.
inline constexpr size_t kMaxGpuEntries = 64;
inline constexpr int64_t kMaxQuantity = 1024;
inline constexpr int64_t kMaxSystemRamGb = 65536;
inline constexpr double kMaxGbps = 800;
inline constexpr size_t kMaxWindows = 28;
inline constexpr size_t kMaxFullName = 200;
inline constexpr size_t kMaxEmail = 254;
inline constexpr size_t kMaxCompany = 200;
inline constexpr size_t kMaxModelId = 64;
inline constexpr size_t kMaxModelOther = 100;
inline constexpr size_t kMaxTimeZone = 64;
inline constexpr size_t kMaxCity = 100;
inline constexpr size_t kMaxRegion = 64;
inline constexpr size_t kMaxNotes = 2000;

enum class Completeness {
  kDraft,     // fields may be missing; present fields must be valid
  kComplete,  // everything required for submission
};

using ModelExists = std::function<bool(std::string_view catalog_id)>;

// Every problem with the values of `body` under its field path ("gpus[0].location.country",
// the API's names), with the messages the API answers; empty when `body` is valid at
// `completeness`. `model_exists` answers for catalog ids other than "other".
FieldErrors Validate(const ApplicationBody& body, Completeness completeness,
                     const ModelExists& model_exists);

// `body` in its canonical form: the email in lower case, each window's days in week
// order. REQUIRES: Validate found no problem with it.
ApplicationBody Normalize(ApplicationBody body);
// A schedule in its canonical form: days in week order; "always" without zone or windows.
Availability NormalizeAvailability(Availability a);

struct TierSuggestion {
  Tier tier = Tier::kCommunity;
  std::vector<std::string> reasons;  // what keeps it from enterprise (empty for enterprise)
};
// REV-3: Enterprise needs UPS; suggested also 24/7 availability on every entry, a
// commitment of at least 6 months and at least 1 Gbps up and down on every entry.
TierSuggestion SuggestTier(const ApplicationBody& body);

// The sum of the entries' quantities.
int64_t TotalGpus(const ApplicationBody& body);
// Whether an entry names a model outside the catalog ("other").
bool HasUnlistedModels(const ApplicationBody& body);

// Every problem with a schedule's values under `path` ("gpus[0].availability", "schedule").
void ValidateAvailability(const Availability& a, const std::string& path, FieldErrors* errors);
// Minutes since midnight of "HH:MM"; -1 when malformed. "24:00" (1440) when `allow_24`.
int ParseClockTime(std::string_view s, bool allow_24);

bool IsValidTimeZone(std::string_view name);

// One value an edit changed, under its API path ("contact.company", "gpus[1].quantity",
// "gpus[2]" for an entry added or removed), as the review page shows it: text as typed,
// numbers plainly, "yes"/"no", a schedule as "24/7" or "Europe/Rome: mon,tue 08:00-20:00",
// an added or removed entry as "2 × rtx4090-24gb". None: the value is absent. A value
// longer than kMaxChangeValue bytes is cut (at a character boundary) and ends in "…".
struct FieldChange {
  std::string field;
  std::optional<std::string> from;
  std::optional<std::string> to;

  friend bool operator==(const FieldChange&, const FieldChange&) = default;
};

// What an edit changed: at most kMaxChanges changes in field order, and how many more
// there were.
struct BodyDiff {
  std::vector<FieldChange> changes;
  size_t omitted = 0;

  bool empty() const { return changes.empty() && omitted == 0; }
  friend bool operator==(const BodyDiff&, const BodyDiff&) = default;
};

inline constexpr size_t kMaxChanges = 40;
inline constexpr size_t kMaxChangeValue = 200;

// The changes from `before` to `after` (both as saved: Normalize'd).
BodyDiff DiffBodies(const ApplicationBody& before, const ApplicationBody& after);

}  // namespace gpunex::platform::applications
