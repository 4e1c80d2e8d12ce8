#include "platform/applications/application.h"

#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "common/countries.h"
#include "platform/accounts/accounts.h"

namespace gpunex::platform::applications {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

constexpr std::string_view kRequired = "is required";

bool Blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

}  // namespace

int ParseClockTime(std::string_view s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':') return -1;
  for (int i : {0, 1, 3, 4}) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  }
  int h = (s[0] - '0') * 10 + (s[1] - '0');
  int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59) return -1;
  if (h == 24 && m == 0 && allow_24) return 24 * 60;
  if (h > 23) return -1;
  return h * 60 + m;
}

namespace {

// The number as the API's messages write it: 800, 0.5.
std::string FormatNumber(double x) {
  std::string s = std::to_string(x);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// Collects errors under one object's path, like the API's decoder does.
class Errors {
 public:
  Errors(FieldErrors* errors, std::string path) : errors_(errors), path_(std::move(path)) {}
  std::string PathOf(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  void Fail(std::string_view key, std::string_view message) const {
    errors_->emplace(PathOf(key), std::string(message));
  }
  void Int(std::string_view key, const std::optional<int64_t>& v, bool required, int64_t min,
           int64_t max) const {
    if (!v) {
      if (required) Fail(key, kRequired);
    } else if (*v < min) {
      Fail(key, "must be at least " + std::to_string(min));
    } else if (*v > max) {
      Fail(key, "must be at most " + std::to_string(max));
    }
  }
  void Number(std::string_view key, const std::optional<double>& v, bool required,
              double min_exclusive, double max_inclusive) const {
    if (!v) {
      if (required) Fail(key, kRequired);
    } else if (!(*v > min_exclusive)) {
      Fail(key, "must be greater than " + FormatNumber(min_exclusive));
    } else if (*v > max_inclusive) {
      Fail(key, "must be at most " + FormatNumber(max_inclusive));
    }
  }
  void Items(std::string_view key, size_t n, size_t min, size_t max) const {
    if (n < min) {
      Fail(key, "must have at least " + std::to_string(min) + " item" + (min == 1 ? "" : "s"));
    } else if (n > max) {
      Fail(key, "must have at most " + std::to_string(max) + " items");
    }
  }
  FieldErrors* errors() const { return errors_; }

 private:
  FieldErrors* errors_;
  std::string path_;
};

void ValidateWindow(const Window& w, const Errors& e) {
  e.Items("days", w.days.size(), 1, kDays.size());
  std::set<std::string_view> seen;
  for (const std::string& d : w.days) {
    if (std::find(kDays.begin(), kDays.end(), d) == kDays.end()) {
      e.Fail("days", "must list days as \"mon\" .. \"sun\"");
      break;
    }
    if (!seen.insert(d).second) {
      e.Fail("days", "must not repeat a day");
      break;
    }
  }
  int s = w.start.empty() ? -2 : ParseClockTime(w.start, false);
  int end = w.end.empty() ? -2 : ParseClockTime(w.end, true);
  if (s == -2) e.Fail("start", kRequired);
  if (end == -2) e.Fail("end", kRequired);
  if (s == -1) e.Fail("start", "must be a time \"HH:MM\" from 00:00 to 23:59");
  // Midnight as an end is written 24:00.
  if (end == -1 || end == 0) e.Fail("end", "must be a time \"HH:MM\" from 00:01 to 24:00");
  if (s >= 0 && end >= 0 && end == s) {
    e.Fail("end", "must differ from start (for the whole day use 00:00 to 24:00)");
  }
}

void CheckAvailability(const Availability& a, const Errors& e) {
  if (a.always) return;
  if (Blank(a.timezone)) {
    e.Fail("timezone", kRequired);
  } else if (!IsValidTimeZone(a.timezone)) {
    e.Fail("timezone", "must be an IANA time zone such as \"Europe/Rome\"");
  }
  e.Items("windows", a.windows.size(), 1, kMaxWindows);
  for (size_t i = 0; i < a.windows.size(); ++i) {
    ValidateWindow(a.windows[i],
                   Errors(e.errors(), e.PathOf("windows") + "[" + std::to_string(i) + "]"));
  }
}

void ValidateLocation(const Location& loc, bool req, const Errors& e) {
  if (req && Blank(loc.city)) e.Fail("city", kRequired);
  if (!loc.country || (req && Blank(*loc.country))) {
    if (req) e.Fail("country", kRequired);
  } else if (!IsCountryCode(*loc.country)) {
    e.Fail("country", "must be an ISO 3166-1 alpha-2 country code such as \"IT\"");
  }
  bool region_ok = std::all_of(loc.region.begin(), loc.region.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '-';
  });
  if (!region_ok)
    e.Fail("region", "must use lower-case letters, digits and '-' (e.g. \"eu-south\")");
}

void ValidateEntry(const GpuEntry& g, bool req, const ModelExists& model_exists, const Errors& e) {
  if (Blank(g.model)) {
    e.Fail("model", kRequired);
  } else if (g.model == "other") {
    if (!g.model_other || Blank(*g.model_other)) e.Fail("model_other", kRequired);
  } else if (!model_exists(g.model)) {
    e.Fail("model", "is not a GPU model in the catalog; use \"other\" with model_other");
  } else if (g.model_other) {
    e.Fail("model_other", "must be null unless model is \"other\"");
  }
  e.Int("quantity", g.quantity, req, 1, kMaxQuantity);
  e.Int("system_ram_gb", g.system_ram_gb, req, 1, kMaxSystemRamGb);
  e.Number("upload_gbps", g.upload_gbps, req, 0, kMaxGbps);
  e.Number("download_gbps", g.download_gbps, req, 0, kMaxGbps);
  if (g.availability) {
    CheckAvailability(*g.availability, Errors(e.errors(), e.PathOf("availability")));
  } else if (req) {
    e.Fail("availability", kRequired);
  }
  if (g.location) {
    ValidateLocation(*g.location, req, Errors(e.errors(), e.PathOf("location")));
  } else if (req) {
    e.Fail("location", kRequired);
  }
}

}  // namespace

void ValidateAvailability(const Availability& a, const std::string& path, FieldErrors* errors) {
  CheckAvailability(a, Errors(errors, path));
}

bool IsValidTimeZone(std::string_view name) {
  if (name.empty() || name.size() > kMaxTimeZone) return false;
  try {
    return date::locate_zone(name) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

FieldErrors Validate(const ApplicationBody& body, Completeness completeness,
                     const ModelExists& model_exists) {
  const bool req = completeness == Completeness::kComplete;
  FieldErrors errors;

  const Errors contact(&errors, "contact");
  if (req && Blank(body.contact.full_name)) contact.Fail("full_name", kRequired);
  if (!body.contact.email || (req && Blank(*body.contact.email))) {
    if (req) contact.Fail("email", kRequired);
  } else if (std::string normalized, why = accounts::CheckEmail(*body.contact.email, &normalized);
             !why.empty()) {
    contact.Fail("email", why);
  }

  const Errors root(&errors, "");
  root.Items("gpus", body.gpus.size(), req ? 1 : 0, kMaxGpuEntries);
  for (size_t i = 0; i < body.gpus.size(); ++i) {
    ValidateEntry(body.gpus[i], req, model_exists,
                  Errors(&errors, "gpus[" + std::to_string(i) + "]"));
  }

  const Errors inf(&errors, "infrastructure");
  if (!body.infrastructure.ups && req) inf.Fail("ups", kRequired);
  if (const auto& m = body.infrastructure.commitment_months; m) {
    if (*m != 0 && *m != 3 && *m != 6 && *m != 12)
      inf.Fail("commitment_months", "must be 0 (none), 3, 6 or 12");
  } else if (req) {
    inf.Fail("commitment_months", kRequired);
  }
  return errors;
}

ApplicationBody Normalize(ApplicationBody body) {
  if (body.contact.email) {
    std::string normalized;
    if (accounts::CheckEmail(*body.contact.email, &normalized).empty())
      body.contact.email = normalized;
  }
  for (GpuEntry& g : body.gpus) {
    if (g.availability) g.availability = NormalizeAvailability(std::move(*g.availability));
  }
  return body;
}

Availability NormalizeAvailability(Availability a) {
  for (Window& w : a.windows) {
    std::sort(w.days.begin(), w.days.end(), [](const std::string& x, const std::string& y) {
      return std::find(kDays.begin(), kDays.end(), x) < std::find(kDays.begin(), kDays.end(), y);
    });
  }
  if (a.always) {
    a.timezone.clear();
    a.windows.clear();
  }
  return a;
}

TierSuggestion SuggestTier(const ApplicationBody& body) {
  TierSuggestion s;
  if (!body.infrastructure.ups.value_or(false))
    s.reasons.push_back("no UPS (required for Enterprise)");
  if (body.infrastructure.commitment_months.value_or(0) < 6) {
    s.reasons.push_back("commitment shorter than 6 months");
  }
  bool always = !body.gpus.empty();
  bool fast = !body.gpus.empty();
  for (const auto& g : body.gpus) {
    always = always && g.availability && g.availability->always;
    fast = fast && g.upload_gbps.value_or(0) >= 1 && g.download_gbps.value_or(0) >= 1;
  }
  if (!always) s.reasons.push_back("not available 24/7 on every GPU entry");
  if (!fast) s.reasons.push_back("less than 1 Gbps upload or download on some GPU entry");
  s.tier = s.reasons.empty() ? Tier::kEnterprise : Tier::kCommunity;
  return s;
}

int64_t TotalGpus(const ApplicationBody& body) {
  int64_t n = 0;
  for (const auto& g : body.gpus) n += g.quantity.value_or(0);
  return n;
}

namespace {

// Collects the changes of one diff, bounded.
class DiffWriter {
 public:
  void Text(std::string field, const std::string& from, const std::string& to) {
    Opt(std::move(field), from.empty() ? std::nullopt : std::optional(from),
        to.empty() ? std::nullopt : std::optional(to));
  }
  void Opt(std::string field, const std::optional<std::string>& from,
           const std::optional<std::string>& to) {
    if (from == to) return;
    if (diff_.changes.size() == kMaxChanges) {
      ++diff_.omitted;
      return;
    }
    diff_.changes.push_back({std::move(field), Cut(from), Cut(to)});
  }
  BodyDiff Take() { return std::move(diff_); }

 private:
  static std::optional<std::string> Cut(const std::optional<std::string>& v) {
    if (!v || v->size() <= kMaxChangeValue) return v;
    size_t n = kMaxChangeValue;
    // Back to the start of a UTF-8 sequence.
    while (n > 0 && (static_cast<unsigned char>((*v)[n]) & 0xC0) == 0x80) --n;
    return v->substr(0, n) + "…";
  }
  BodyDiff diff_;
};

std::optional<std::string> IntText(const std::optional<int64_t>& v) {
  return v ? std::optional(std::to_string(*v)) : std::nullopt;
}
std::optional<std::string> NumberText(const std::optional<double>& v) {
  return v ? std::optional(FormatNumber(*v)) : std::nullopt;
}
std::optional<std::string> BoolText(const std::optional<bool>& v) {
  return v ? std::optional(std::string(*v ? "yes" : "no")) : std::nullopt;
}

std::optional<std::string> AvailabilityText(const std::optional<Availability>& a) {
  if (!a) return std::nullopt;
  if (a->always) return "24/7";
  std::string out = (a->timezone.empty() ? std::string("(no time zone)") : a->timezone) + ":";
  for (size_t i = 0; i < a->windows.size(); ++i) {
    const Window& w = a->windows[i];
    out += i ? "; " : " ";
    for (size_t d = 0; d < w.days.size(); ++d) out += (d ? "," : "") + w.days[d];
    out += " " + w.start + "-" + w.end;
  }
  return out;
}

std::string EntryText(const GpuEntry& g) {
  const std::string model = g.model == "other" ? g.model_other.value_or("other") : g.model;
  return (g.quantity ? std::to_string(*g.quantity) : std::string("?")) + " × " + model;
}

}  // namespace

BodyDiff DiffBodies(const ApplicationBody& before, const ApplicationBody& after) {
  DiffWriter w;
  w.Text("contact.full_name", before.contact.full_name, after.contact.full_name);
  w.Opt("contact.email", before.contact.email, after.contact.email);
  w.Text("contact.company", before.contact.company, after.contact.company);
  const size_t n = std::max(before.gpus.size(), after.gpus.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string path = "gpus[" + std::to_string(i) + "]";
    if (i >= before.gpus.size() || i >= after.gpus.size()) {
      const bool added = i >= before.gpus.size();
      const std::string text = EntryText(added ? after.gpus[i] : before.gpus[i]);
      w.Opt(path, added ? std::nullopt : std::optional(text),
            added ? std::optional(text) : std::nullopt);
      continue;
    }
    const GpuEntry& b = before.gpus[i];
    const GpuEntry& a = after.gpus[i];
    w.Text(path + ".model", b.model, a.model);
    w.Opt(path + ".model_other", b.model_other, a.model_other);
    w.Opt(path + ".quantity", IntText(b.quantity), IntText(a.quantity));
    w.Opt(path + ".system_ram_gb", IntText(b.system_ram_gb), IntText(a.system_ram_gb));
    w.Opt(path + ".upload_gbps", NumberText(b.upload_gbps), NumberText(a.upload_gbps));
    w.Opt(path + ".download_gbps", NumberText(b.download_gbps), NumberText(a.download_gbps));
    w.Opt(path + ".availability", AvailabilityText(b.availability),
          AvailabilityText(a.availability));
    const Location bl = b.location.value_or(Location{});
    const Location al = a.location.value_or(Location{});
    w.Text(path + ".location.city", bl.city, al.city);
    w.Opt(path + ".location.country", bl.country, al.country);
    w.Text(path + ".location.region", bl.region, al.region);
  }
  const Infrastructure& bi = before.infrastructure;
  const Infrastructure& ai = after.infrastructure;
  w.Opt("infrastructure.ups", BoolText(bi.ups), BoolText(ai.ups));
  w.Opt("infrastructure.commitment_months", IntText(bi.commitment_months),
        IntText(ai.commitment_months));
  w.Text("infrastructure.maintenance_notes", bi.maintenance_notes, ai.maintenance_notes);
  return w.Take();
}

bool HasUnlistedModels(const ApplicationBody& body) {
  return std::any_of(body.gpus.begin(), body.gpus.end(),
                     [](const GpuEntry& g) { return g.model == "other"; });
}

}  // namespace gpunex::platform::applications
