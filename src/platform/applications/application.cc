#include "platform/applications/application.h"

#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "platform/accounts/accounts.h"

namespace gpunex::platform::applications {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

// ISO 3166-1 alpha-2.
constexpr std::string_view kCountries =
    "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ "
    "BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM "
    "DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS "
    "GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN "
    "KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ "
    "MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM "
    "PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV "
    "SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI "
    "VN VU WF WS YE YT ZA ZM ZW";

// Minutes since midnight for "HH:MM"; -1 when malformed. "24:00" allowed when `allow_24`.
int ParseHhMm(std::string_view s, bool allow_24) {
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

std::optional<Availability> ParseAvailability(const JsonReader& parent, bool required) {
  const json::object* o = parent.Object("availability", required);
  if (!o) return std::nullopt;
  JsonReader r(*o, parent.PathOf("availability"), parent.errors());
  size_t before = parent.errors()->size();
  auto kind = r.String("kind", true, 16);
  if (!kind) return std::nullopt;
  Availability a;
  if (*kind == "always") {
    r.RejectUnknown({"kind"});
    return a;
  }
  if (*kind != "schedule") {
    r.Fail("kind", "must be \"always\" or \"schedule\"");
    return std::nullopt;
  }
  a.always = false;
  r.RejectUnknown({"kind", "timezone", "windows"});
  if (auto tz = r.String("timezone", true, 64)) {
    if (IsValidTimeZone(*tz)) {
      a.timezone = *tz;
    } else {
      r.Fail("timezone", "must be an IANA time zone such as \"Europe/Rome\"");
    }
  }
  if (const json::array* ws = r.Array("windows", true, 1, kMaxWindows)) {
    for (size_t i = 0; i < ws->size(); ++i) {
      std::string wpath = r.PathOf("windows") + "[" + std::to_string(i) + "]";
      if (!(*ws)[i].is_object()) {
        parent.errors()->emplace(wpath, "must be an object");
        continue;
      }
      JsonReader w((*ws)[i].get_object(), wpath, parent.errors());
      w.RejectUnknown({"days", "start", "end"});
      Window win;
      if (const json::array* days = w.Array("days", true, 1, 7)) {
        std::set<size_t> seen;
        for (const auto& d : *days) {
          auto it = d.is_string() ? std::find(kDays.begin(), kDays.end(), d.get_string())
                                  : kDays.end();
          if (it == kDays.end()) {
            w.Fail("days", "must list days as \"mon\" .. \"sun\"");
            break;
          }
          if (!seen.insert(it - kDays.begin()).second) {
            w.Fail("days", "must not repeat a day");
            break;
          }
        }
        for (size_t d : seen) win.days.emplace_back(kDays[d]);
      }
      auto start = w.String("start", true, 5);
      auto end = w.String("end", true, 5);
      int s = start ? ParseHhMm(*start, false) : -2;
      int e = end ? ParseHhMm(*end, true) : -2;
      if (s == -1) w.Fail("start", "must be a time \"HH:MM\" from 00:00 to 23:59");
      if (e == -1) w.Fail("end", "must be a time \"HH:MM\" from 00:01 to 24:00");
      if (s >= 0 && e >= 0 && e <= s) {
        w.Fail("end", "must be after start (split windows that cross midnight in two)");
      }
      if (start) win.start = *start;
      if (end) win.end = *end;
      a.windows.push_back(std::move(win));
    }
  }
  if (parent.errors()->size() != before) return std::nullopt;
  return a;
}

std::optional<Location> ParseLocation(const JsonReader& parent, bool required) {
  const json::object* o = parent.Object("location", required);
  if (!o) return std::nullopt;
  JsonReader r(*o, parent.PathOf("location"), parent.errors());
  r.RejectUnknown({"city", "country", "region"});
  Location loc;
  loc.city = r.String("city", required, 100).value_or("");
  if (auto c = r.String("country", required, 2)) {
    if (IsCountryCode(*c)) {
      loc.country = *c;
    } else {
      r.Fail("country", "must be an ISO 3166-1 alpha-2 country code such as \"IT\"");
    }
  }
  if (auto region = r.String("region", false, 64)) {
    bool ok = std::all_of(region->begin(), region->end(), [](unsigned char c) {
      return std::islower(c) || std::isdigit(c) || c == '-';
    });
    if (ok) {
      loc.region = *region;
    } else {
      r.Fail("region", "must use lower-case letters, digits and '-' (e.g. \"eu-south\")");
    }
  }
  return loc;
}

}  // namespace

bool IsValidTimeZone(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  try {
    return date::locate_zone(name) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

bool IsCountryCode(std::string_view code) {
  if (code.size() != 2 || !std::isupper(static_cast<unsigned char>(code[0])) ||
      !std::isupper(static_cast<unsigned char>(code[1]))) {
    return false;
  }
  for (size_t i = 0; i + 2 <= kCountries.size(); i += 3) {
    if (kCountries.substr(i, 2) == code) return true;
  }
  return false;
}

StatusOr<ApplicationBody> ParseApplication(const json::value& v, Completeness completeness,
                                           const ModelExists& model_exists) {
  if (!v.is_object()) return FieldError("body", "must be a JSON object");
  const bool req = completeness == Completeness::kComplete;
  FieldErrors errors;
  JsonReader root(v.get_object(), "", &errors);
  root.RejectUnknown({"contact", "gpus", "infrastructure", "submit"});
  ApplicationBody body;

  if (const json::object* c = root.Object("contact", req)) {
    JsonReader r(*c, "contact", &errors);
    r.RejectUnknown({"full_name", "email", "company"});
    body.contact.full_name = r.String("full_name", req, 200).value_or("");
    if (auto email = r.String("email", req, 254)) {
      std::string why = accounts::CheckEmail(*email, &body.contact.email);
      if (!why.empty()) r.Fail("email", why);
    }
    body.contact.company = r.String("company", false, 200).value_or("");
  }

  if (const json::array* gpus = root.Array("gpus", req, req ? 1 : 0, kMaxGpuEntries)) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      std::string path = "gpus[" + std::to_string(i) + "]";
      if (!(*gpus)[i].is_object()) {
        errors.emplace(path, "must be an object");
        continue;
      }
      JsonReader r((*gpus)[i].get_object(), path, &errors);
      r.RejectUnknown({"model", "model_other", "quantity", "system_ram_gb", "upload_gbps",
                       "download_gbps", "availability", "location"});
      GpuEntry g;
      if (auto model = r.String("model", true, 64)) {
        g.model = *model;
        if (*model == "other") {
          g.model_other = r.String("model_other", true, 100);
        } else if (!model_exists(*model)) {
          r.Fail("model", "is not a GPU model in the catalog; use \"other\" with model_other");
        } else if (r.HasValue("model_other")) {
          r.Fail("model_other", "must be null unless model is \"other\"");
        }
      }
      g.quantity = r.Int("quantity", req, 1, kMaxQuantity);
      g.system_ram_gb = r.Int("system_ram_gb", req, 1, kMaxSystemRamGb);
      g.upload_gbps = r.Number("upload_gbps", req, 0, kMaxGbps);
      g.download_gbps = r.Number("download_gbps", req, 0, kMaxGbps);
      g.availability = ParseAvailability(r, req);
      g.location = ParseLocation(r, req);
      body.gpus.push_back(std::move(g));
    }
  }

  if (const json::object* inf = root.Object("infrastructure", req)) {
    JsonReader r(*inf, "infrastructure", &errors);
    r.RejectUnknown({"ups", "commitment_months", "maintenance_notes"});
    body.infrastructure.ups = r.Bool("ups", req);
    if (auto m = r.Int("commitment_months", req, 0, 12)) {
      if (*m == 0 || *m == 3 || *m == 6 || *m == 12) {
        body.infrastructure.commitment_months = m;
      } else {
        r.Fail("commitment_months", "must be 0 (none), 3, 6 or 12");
      }
    }
    body.infrastructure.maintenance_notes =
        r.String("maintenance_notes", false, kMaxNotes, true).value_or("");
  }
  if (v.get_object().contains("submit") && !v.get_object().at("submit").is_bool()) {
    errors.emplace("submit", "must be true or false");
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return body;
}

Status CheckComplete(const ApplicationBody& body, const ModelExists& model_exists) {
  // Re-validate the JSON form in complete mode: one definition of "complete".
  return ParseApplication(ToJson(body), Completeness::kComplete, model_exists).status();
}

json::object ToJson(const ApplicationBody& body) {
  json::object contact{{"full_name", body.contact.full_name},
                       {"email", body.contact.email},
                       {"company", body.contact.company}};
  json::array gpus;
  for (const auto& g : body.gpus) {
    json::object o;
    o["model"] = g.model;
    o["model_other"] = g.model_other ? json::value(*g.model_other) : nullptr;
    o["quantity"] = g.quantity ? json::value(*g.quantity) : nullptr;
    o["system_ram_gb"] = g.system_ram_gb ? json::value(*g.system_ram_gb) : nullptr;
    o["upload_gbps"] = g.upload_gbps ? json::value(*g.upload_gbps) : nullptr;
    o["download_gbps"] = g.download_gbps ? json::value(*g.download_gbps) : nullptr;
    if (g.availability) {
      if (g.availability->always) {
        o["availability"] = json::object{{"kind", "always"}};
      } else {
        json::array windows;
        for (const auto& w : g.availability->windows) {
          json::array days;
          for (const auto& d : w.days) days.emplace_back(d);
          windows.push_back(json::object{{"days", std::move(days)}, {"start", w.start}, {"end", w.end}});
        }
        o["availability"] = json::object{{"kind", "schedule"},
                                         {"timezone", g.availability->timezone},
                                         {"windows", std::move(windows)}};
      }
    } else {
      o["availability"] = nullptr;
    }
    if (g.location) {
      json::object loc{{"city", g.location->city}, {"country", g.location->country}};
      loc["region"] = g.location->region.empty() ? json::value(nullptr) : json::value(g.location->region);
      o["location"] = std::move(loc);
    } else {
      o["location"] = nullptr;
    }
    gpus.push_back(std::move(o));
  }
  json::object inf;
  inf["ups"] = body.infrastructure.ups ? json::value(*body.infrastructure.ups) : nullptr;
  inf["commitment_months"] = body.infrastructure.commitment_months
                                 ? json::value(*body.infrastructure.commitment_months)
                                 : nullptr;
  inf["maintenance_notes"] = body.infrastructure.maintenance_notes;
  return {{"contact", std::move(contact)}, {"gpus", std::move(gpus)}, {"infrastructure", std::move(inf)}};
}

TierSuggestion SuggestTier(const ApplicationBody& body) {
  TierSuggestion s;
  if (!body.infrastructure.ups.value_or(false)) s.reasons.push_back("no UPS (required for Enterprise)");
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
  s.tier = s.reasons.empty() ? "enterprise" : "community";
  return s;
}

}  // namespace gpunex::platform::applications
