// The provider application (APP-1..3): its fields, their validation and JSON form, and
// the tier suggestion (REV-3). Pure functions: no database, no HTTP.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace gpunex::platform::applications {

struct Window {
  std::vector<std::string> days;  // "mon".."sun", unique, in week order
  std::string start;              // "HH:MM", 00:00..23:59
  std::string end;                // "HH:MM", after start; "24:00" allowed
};

struct Availability {
  bool always = true;        // {"kind": "always"}: 24/7
  std::string timezone;      // IANA name, for schedules
  std::vector<Window> windows;
};

struct Location {
  std::string city;
  std::string country;  // ISO 3166-1 alpha-2, upper case
  std::string region;   // optional data-center region, e.g. "eu-south"
};

struct GpuEntry {
  std::string model;                      // catalog id or "other"
  std::optional<std::string> model_other; // set iff model == "other"
  std::optional<int64_t> quantity;
  std::optional<int64_t> system_ram_gb;
  std::optional<double> upload_gbps;
  std::optional<double> download_gbps;
  std::optional<Availability> availability;
  std::optional<Location> location;
};

struct Contact {
  std::string full_name;
  std::string email;  // normalised to lower case
  std::string company;
};

struct Infrastructure {
  std::optional<bool> ups;
  std::optional<int64_t> commitment_months;  // 0, 3, 6 or 12
  std::string maintenance_notes;
};

struct ApplicationBody {
  Contact contact;
  std::vector<GpuEntry> gpus;
  Infrastructure infrastructure;
};

// Limits, shared with docs/ and the web form.
inline constexpr size_t kMaxGpuEntries = 64;
inline constexpr int64_t kMaxQuantity = 1024;
inline constexpr int64_t kMaxSystemRamGb = 65536;
inline constexpr double kMaxGbps = 800;
inline constexpr size_t kMaxWindows = 28;
inline constexpr size_t kMaxNotes = 2000;

enum class Completeness {
  kDraft,     // fields may be missing; present fields must be valid
  kComplete,  // everything required for submission
};

using ModelExists = std::function<bool(std::string_view catalog_id)>;

// Parses and validates an application body. Every problem is reported under its field
// path; kInvalidArgument when `v` is not an object.
StatusOr<ApplicationBody> ParseApplication(const json::value& v, Completeness completeness,
                                           const ModelExists& model_exists);

// Whether the stored draft has everything a submission needs (same errors as above).
Status CheckComplete(const ApplicationBody& body, const ModelExists& model_exists);

json::object ToJson(const ApplicationBody& body);

struct TierSuggestion {
  std::string tier;                  // "enterprise" or "community"
  std::vector<std::string> reasons;  // what keeps it from enterprise (empty for enterprise)
};
// REV-3: Enterprise needs UPS; suggested also 24/7 availability on every entry, a
// commitment of at least 6 months and at least 1 Gbps up and down on every entry.
TierSuggestion SuggestTier(const ApplicationBody& body);

bool IsValidTimeZone(std::string_view name);
bool IsCountryCode(std::string_view code);

}  // namespace gpunex::platform::applications
