#include "platform/applications/applications_store.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/json.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::applications {
namespace {

// The search column (version 16): what a reviewer's search looks in, lower case (ASCII).
std::string SearchText(const std::string& id, const ApplicationBody& body) {
  std::string s = body.contact.full_name + "\n" + body.contact.company + "\n" +
                  body.contact.email.value_or("") + "\n" + id;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `text` as a LIKE pattern that matches it anywhere, its wildcards escaped with a backslash.
std::string ContainsPattern(std::string_view text) {
  std::string out = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out + "%";
}

// The stored form of an edit's changes: {"changes": [{"field", "from", "to"}], "omitted"}.
std::string EncodeChanges(const BodyDiff& d) {
  json::array changes;
  for (const FieldChange& c : d.changes) {
    json::object o{{"field", c.field}};
    if (c.from) o["from"] = *c.from;
    if (c.to) o["to"] = *c.to;
    changes.push_back(std::move(o));
  }
  json::object out{{"changes", std::move(changes)}};
  if (d.omitted) out["omitted"] = static_cast<int64_t>(d.omitted);
  return ToJsonText(out);
}

// Leniently: what does not read is left out (the history is for people, and an entry
// must not fail the application's page).
std::optional<BodyDiff> DecodeChanges(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  json::value v = ParseJsonOr(*text, json::value(nullptr));
  if (!v.is_object()) return std::nullopt;
  BodyDiff d;
  const json::object& o = v.get_object();
  if (auto it = o.find("changes"); it != o.end() && it->value().is_array()) {
    for (const json::value& c : it->value().get_array()) {
      if (!c.is_object()) continue;
      const json::object& co = c.get_object();
      auto str = [&co](std::string_view key) -> std::optional<std::string> {
        auto m = co.find(key);
        if (m == co.end() || !m->value().is_string()) return std::nullopt;
        return std::string(m->value().get_string());
      };
      std::optional<std::string> field = str("field");
      if (!field) continue;
      d.changes.push_back({std::move(*field), str("from"), str("to")});
    }
  }
  if (auto it = o.find("omitted");
      it != o.end() && it->value().is_int64() && it->value().get_int64() > 0) {
    d.omitted = static_cast<size_t>(it->value().get_int64());
  }
  return d;
}

using store::SqlLiteral;

store::Value StatusValue(ApplicationStatus s) { return std::string(Name(s)); }

store::Value OptValue(std::optional<Tier> t) {
  return t ? store::Value(std::string(Name(*t))) : store::Value(nullptr);
}

std::optional<Tier> OptTier(const store::Cell& c) {
  if (c.IsNull()) return std::nullopt;
  return kTierNames.ParseStored(c.Str());
}

store::Value OptValue(const std::optional<std::string>& s) {
  return s ? store::Value(*s) : store::Value(nullptr);
}
store::Value OptTimeValue(const std::optional<Timestamp>& t) {
  return t ? store::Value(ToUnixMicros(*t)) : store::Value(nullptr);
}

// --- the stored document

// Reads one object of a stored document leniently: a member that is missing or null is
// absent, unknown members are ignored, and only a member of the wrong type makes the
// document unreadable (the first such problem is kept in `*error`).
class StoredReader {
 public:
  StoredReader(const json::object& obj, std::string path, std::string* error)
      : obj_(obj), path_(std::move(path)), error_(error) {}

  std::string PathOf(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  std::string* error() const { return error_; }

  // "" when absent.
  std::string Str(std::string_view key) const { return OptStr(key).value_or(""); }
  // Absent when missing, null or "" (release 0.1 wrote "" for an email or country not given).
  std::optional<std::string> OptStr(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      Wrong(key, "a string");
      return std::nullopt;
    }
    if (v->get_string().empty()) return std::nullopt;
    return std::string(v->get_string());
  }
  // As OptStr, but "" is a value (model_other: "" is an error the validator reports, kept
  // as it was saved).
  std::optional<std::string> OptStrKeepEmpty(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      Wrong(key, "a string");
      return std::nullopt;
    }
    return std::string(v->get_string());
  }
  std::optional<int64_t> Int(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return std::nullopt;
    if (v->is_int64()) return v->get_int64();
    if (v->is_uint64() &&
        v->get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(v->get_uint64());
    }
    if (v->is_double() && std::isfinite(v->get_double()) &&
        std::trunc(v->get_double()) == v->get_double() && std::abs(v->get_double()) < 9e18) {
      return static_cast<int64_t>(v->get_double());
    }
    Wrong(key, "an integer");
    return std::nullopt;
  }
  std::optional<double> Number(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) {
      Wrong(key, "a number");
      return std::nullopt;
    }
    return v->to_number<double>();
  }
  std::optional<bool> Bool(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return std::nullopt;
    if (!v->is_bool()) {
      Wrong(key, "true or false");
      return std::nullopt;
    }
    return v->get_bool();
  }
  const json::object* Object(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return nullptr;
    if (!v->is_object()) {
      Wrong(key, "an object");
      return nullptr;
    }
    return &v->get_object();
  }
  const json::array* Array(std::string_view key) const {
    const json::value* v = Get(key);
    if (!v) return nullptr;
    if (!v->is_array()) {
      Wrong(key, "an array");
      return nullptr;
    }
    return &v->get_array();
  }

 private:
  const json::value* Get(std::string_view key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->value().is_null()) return nullptr;
    return &it->value();
  }
  void Wrong(std::string_view key, std::string_view what) const {
    if (error_->empty()) *error_ = PathOf(key) + " is not " + std::string(what);
  }

  const json::object& obj_;
  std::string path_;
  std::string* error_;
};

void SetError(std::string* error, std::string message) {
  if (error->empty()) *error = std::move(message);
}

Availability DecodeStoredAvailability(const StoredReader& r) {
  Availability a;
  const std::optional<AvailabilityKind> kind = kAvailabilityKindNames.Parse(r.Str("kind"));
  if (kind != AvailabilityKind::kSchedule) {
    if (!kind) SetError(r.error(), r.PathOf("kind") + " is neither \"always\" nor \"schedule\"");
    return a;
  }
  a.always = false;
  a.timezone = r.Str("timezone");
  if (const json::array* ws = r.Array("windows")) {
    for (size_t i = 0; i < ws->size(); ++i) {
      std::string path = r.PathOf("windows") + "[" + std::to_string(i) + "]";
      if (!(*ws)[i].is_object()) {
        SetError(r.error(), path + " is not an object");
        continue;
      }
      StoredReader w((*ws)[i].get_object(), path, r.error());
      Window win;
      if (const json::array* days = w.Array("days")) {
        for (const json::value& d : *days) {
          if (!d.is_string()) {
            SetError(r.error(), w.PathOf("days") + " holds something other than a string");
            continue;
          }
          win.days.emplace_back(d.get_string());
        }
      }
      win.start = w.Str("start");
      win.end = w.Str("end");
      a.windows.push_back(std::move(win));
    }
  }
  return a;
}

GpuEntry DecodeEntry(const StoredReader& r) {
  GpuEntry g;
  g.model = r.Str("model");
  g.model_other = r.OptStrKeepEmpty("model_other");
  g.quantity = r.Int("quantity");
  g.system_ram_gb = r.Int("system_ram_gb");
  g.upload_gbps = r.Number("upload_gbps");
  g.download_gbps = r.Number("download_gbps");
  if (const json::object* a = r.Object("availability")) {
    g.availability =
        DecodeStoredAvailability(StoredReader(*a, r.PathOf("availability"), r.error()));
  }
  if (const json::object* l = r.Object("location")) {
    StoredReader loc(*l, r.PathOf("location"), r.error());
    g.location = Location{loc.Str("city"), loc.OptStr("country"), loc.Str("region")};
  }
  return g;
}

// The body in a stored document; kInternal saying what is wrong when it cannot be read.
StatusOr<ApplicationBody> DecodeBody(std::string_view text) {
  json::value v = ParseJsonOr(text, json::value(nullptr));
  if (!v.is_object()) return Internal("the stored body is not a JSON object");
  std::string error;
  StoredReader root(v.get_object(), "", &error);
  ApplicationBody body;
  if (const json::object* c = root.Object("contact")) {
    StoredReader r(*c, "contact", &error);
    body.contact = Contact{r.Str("full_name"), r.OptStr("email"), r.Str("company")};
  }
  if (const json::array* gpus = root.Array("gpus")) {
    for (size_t i = 0; i < gpus->size(); ++i) {
      std::string path = "gpus[" + std::to_string(i) + "]";
      if (!(*gpus)[i].is_object()) {
        SetError(&error, path + " is not an object");
        continue;
      }
      body.gpus.push_back(DecodeEntry(StoredReader((*gpus)[i].get_object(), path, &error)));
    }
  }
  if (const json::object* inf = root.Object("infrastructure")) {
    StoredReader r(*inf, "infrastructure", &error);
    body.infrastructure =
        Infrastructure{r.Bool("ups"), r.Int("commitment_months"), r.Str("maintenance_notes")};
  }
  if (!error.empty()) return Internal("the stored body does not read: " + error);
  return body;
}

void PutIfSet(json::object& o, std::string_view key, const std::string& s) {
  if (!s.empty()) o[key] = s;
}
template <typename T>
void PutIfSet(json::object& o, std::string_view key, const std::optional<T>& v) {
  if (v) o[key] = *v;
}

}  // namespace

namespace {

json::object EncodeStoredAvailability(const Availability& a) {
  json::object o{
      {"kind", Name(a.always ? AvailabilityKind::kAlways : AvailabilityKind::kSchedule)}};
  if (a.always) return o;
  PutIfSet(o, "timezone", a.timezone);
  json::array windows;
  for (const Window& w : a.windows) {
    json::array days;
    for (const std::string& d : w.days) days.emplace_back(d);
    json::object wo{{"days", std::move(days)}};
    PutIfSet(wo, "start", w.start);
    PutIfSet(wo, "end", w.end);
    windows.push_back(std::move(wo));
  }
  o["windows"] = std::move(windows);
  return o;
}

}  // namespace

std::string StoredAvailabilityText(const Availability& a) {
  return ToJsonText(EncodeStoredAvailability(a));
}

StatusOr<Availability> ParseStoredAvailability(std::string_view text) {
  GPUNEX_ASSIGN_OR_RETURN(json::value doc, ParseJson(text));
  if (!doc.is_object()) return Internal("not a JSON object");
  std::string error;
  Availability a = DecodeStoredAvailability(StoredReader(doc.get_object(), "", &error));
  if (!error.empty()) return Internal(error);
  return a;
}

namespace {

std::string EncodeBody(const ApplicationBody& body) {
  json::object contact;
  PutIfSet(contact, "full_name", body.contact.full_name);
  PutIfSet(contact, "email", body.contact.email);
  PutIfSet(contact, "company", body.contact.company);
  json::array gpus;
  for (const GpuEntry& g : body.gpus) {
    json::object o;
    o["model"] = g.model;
    PutIfSet(o, "model_other", g.model_other);
    PutIfSet(o, "quantity", g.quantity);
    PutIfSet(o, "system_ram_gb", g.system_ram_gb);
    PutIfSet(o, "upload_gbps", g.upload_gbps);
    PutIfSet(o, "download_gbps", g.download_gbps);
    if (g.availability) o["availability"] = EncodeStoredAvailability(*g.availability);
    if (g.location) {
      json::object loc;
      PutIfSet(loc, "city", g.location->city);
      PutIfSet(loc, "country", g.location->country);
      PutIfSet(loc, "region", g.location->region);
      o["location"] = std::move(loc);
    }
    gpus.push_back(std::move(o));
  }
  json::object inf;
  PutIfSet(inf, "ups", body.infrastructure.ups);
  PutIfSet(inf, "commitment_months", body.infrastructure.commitment_months);
  PutIfSet(inf, "maintenance_notes", body.infrastructure.maintenance_notes);
  return ToJsonText(json::object{{"contact", std::move(contact)},
                                 {"gpus", std::move(gpus)},
                                 {"infrastructure", std::move(inf)}});
}

// A row with its body still as text: a body that cannot be read makes the row unreadable,
// not the query.
struct StoredApplication {
  ApplicationRow row;
  std::string body;
};

const store::RowMapper<StoredApplication>& ApplicationRows() {
  using A = StoredApplication;
  static const auto* const m = new store::RowMapper<A>({
      {"id", [](A& a, const store::Cell& c) { a.row.id = c.Str(); }},
      {"user_id", [](A& a, const store::Cell& c) { a.row.user_id = c.Str(); }},
      {"status",
       [](A& a, const store::Cell& c) {
         a.row.status = kApplicationStatusNames.ParseStored(c.Str());
       }},
      {"body", &A::body},
      {"suggested_tier",
       [](A& a, const store::Cell& c) { a.row.suggested_tier = kTierNames.ParseStored(c.Str()); }},
      {"tier", [](A& a, const store::Cell& c) { a.row.tier = OptTier(c); }},
      {"created_at", [](A& a, const store::Cell& c) { a.row.created_at = c.Time(); }},
      {"updated_at", [](A& a, const store::Cell& c) { a.row.updated_at = c.Time(); }},
      {"first_submitted_at",
       [](A& a, const store::Cell& c) { a.row.first_submitted_at = c.OptTime(); }},
      {"submitted_at", [](A& a, const store::Cell& c) { a.row.submitted_at = c.OptTime(); }},
      {"decided_at", [](A& a, const store::Cell& c) { a.row.decided_at = c.OptTime(); }},
      {"decided_by", [](A& a, const store::Cell& c) { a.row.decided_by = c.OptStr(); }},
  });
  return *m;
}

// The row, or why its body cannot be read.
StatusOr<ApplicationRow> RowFrom(StoredApplication a) {
  GPUNEX_ASSIGN_OR_RETURN(a.row.body, DecodeBody(a.body));
  return std::move(a.row);
}

const store::RowMapper<ApplicationEventRow>& EventRows() {
  using E = ApplicationEventRow;
  static const auto* const m = new store::RowMapper<E>({
      {"id", &E::id},
      {"application_id", &E::application_id},
      {"at", &E::at},
      {"actor_user_id", &E::actor_user_id},
      {"action",
       [](E& e, const store::Cell& c) { e.action = kApplicationActionNames.ParseStored(c.Str()); }},
      {"from_status",
       [](E& e, const store::Cell& c) {
         // "" for created.
         if (!c.Str().empty()) e.from_status = kApplicationStatusNames.ParseStored(c.Str());
       }},
      {"to_status",
       [](E& e, const store::Cell& c) {
         e.to_status = kApplicationStatusNames.ParseStored(c.Str());
       }},
      {"message", &E::message},
      {"tier", [](E& e, const store::Cell& c) { e.tier = OptTier(c); }},
      {"changes", [](E& e, const store::Cell& c) { e.changes = DecodeChanges(c.OptStr()); }},
      {"overridden_suggestion",
       [](E& e, const store::Cell& c) { e.overridden_suggestion = OptTier(c); }},
  });
  return *m;
}

// --- version 6

// Drops every object member whose value is null or "" from a document release 0.1 (schema
// versions 2..5) stored, recursively; whether anything was dropped. Those documents wrote
// every field and used null or "" for "not given"; no field of theirs has "" as a value
// of its own. Frozen with version 6: later changes to the document format do not
// belong here.
bool DropEmptyMembers(json::value& v) {
  bool changed = false;
  if (v.is_object()) {
    json::object& o = v.get_object();
    for (auto it = o.begin(); it != o.end();) {
      const json::value& m = it->value();
      if (m.is_null() || (m.is_string() && m.get_string().empty())) {
        it = o.erase(it);
        changed = true;
      } else {
        changed = DropEmptyMembers(it->value()) || changed;
        ++it;
      }
    }
  } else if (v.is_array()) {
    for (json::value& item : v.get_array()) changed = DropEmptyMembers(item) || changed;
  }
  return changed;
}

// Rewrites the stored bodies that hold null or "" members. A body that is not JSON is
// left as it is (reads skip and count it). Idempotent.
Status RepairStoredBodies(store::Tx& tx) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT id, body FROM provider_applications ORDER BY id"));
  for (const store::Row& r : rows) {
    json::value doc = ParseJsonOr(r["body"].Str(), json::value(nullptr));
    if (!doc.is_object() || !DropEmptyMembers(doc)) continue;
    GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE provider_applications SET body = ? WHERE id = ?",
                                   {ToJsonText(doc), r["id"].Str()})
                               .status());
  }
  return Status::Ok();
}

// --- version 16

// Fills the search column of every row from its body; a body that does not read is
// searched by its id alone. Idempotent.
Status FillSearchText(store::Tx& tx) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx.Query("SELECT id, body FROM provider_applications ORDER BY id"));
  for (const store::Row& r : rows) {
    const std::string id = r["id"].Str();
    auto body = DecodeBody(r["body"].Str());
    GPUNEX_RETURN_IF_ERROR(tx.Exec("UPDATE provider_applications SET search_text = ? WHERE id = ?",
                                   {SearchText(id, body.ok() ? *body : ApplicationBody{}), id})
                               .status());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::optional<ApplicationRow>> ApplicationsStore::Find(const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT " + ApplicationRows().Select() + " FROM provider_applications WHERE id = ?",
                {id}));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<StoredApplication> stored, ApplicationRows().First(rows));
  if (!stored) return std::optional<ApplicationRow>();
  auto row = RowFrom(std::move(*stored));
  if (!row.ok())
    return Internal("stored application " + id + " is unreadable: " + row.status().message());
  return std::optional<ApplicationRow>(std::move(*row));
}

StatusOr<std::optional<ApplicationsStore::OpenApplication>> ApplicationsStore::FindOpen(
    const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT id, status FROM provider_applications "
                "WHERE user_id = ? AND status IN (" +
                    SqlLiteral(ApplicationStatus::kDraft) + ", " +
                    SqlLiteral(ApplicationStatus::kSubmitted) + ", " +
                    SqlLiteral(ApplicationStatus::kNeedsInfo) + ", " +
                    SqlLiteral(ApplicationStatus::kApproved) + ") ORDER BY created_at, id LIMIT 1",
                {user_id}));
  if (rows.empty()) return std::optional<OpenApplication>();
  try {
    return std::optional<OpenApplication>(OpenApplication{
        rows[0]["id"].Str(), kApplicationStatusNames.ParseStored(rows[0]["status"].Str())});
  } catch (const std::invalid_argument& e) {
    return Internal("provider_applications.status: " + std::string(e.what()));
  }
}

Status ApplicationsStore::Insert(const ApplicationRow& a) {
  return tx_
      .Exec("INSERT INTO provider_applications (" + ApplicationRows().Names() +
                ", search_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {a.id, a.user_id, StatusValue(a.status), EncodeBody(a.body),
             std::string(Name(a.suggested_tier)), OptValue(a.tier), ToUnixMicros(a.created_at),
             ToUnixMicros(a.updated_at), OptTimeValue(a.first_submitted_at),
             OptTimeValue(a.submitted_at), OptTimeValue(a.decided_at), OptValue(a.decided_by),
             SearchText(a.id, a.body)})
      .status();
}

Status ApplicationsStore::UpdateBody(const std::string& id, const ApplicationBody& body,
                                     Tier suggested_tier, Timestamp at) {
  return tx_
      .Exec(
          "UPDATE provider_applications SET body = ?, suggested_tier = ?, updated_at = ?, "
          "search_text = ? WHERE id = ?",
          {EncodeBody(body), std::string(Name(suggested_tier)), ToUnixMicros(at),
           SearchText(id, body), id})
      .status();
}

Status ApplicationsStore::MarkSubmitted(const std::string& id, Timestamp at) {
  const int64_t t = ToUnixMicros(at);
  return tx_
      .Exec(
          "UPDATE provider_applications SET status = " + SqlLiteral(ApplicationStatus::kSubmitted) +
              ", submitted_at = ?, "
              "first_submitted_at = COALESCE(first_submitted_at, ?), updated_at = ? WHERE id = ?",
          {t, t, t, id})
      .status();
}

Status ApplicationsStore::MarkDecided(const std::string& id, ApplicationStatus status,
                                      std::optional<Tier> tier, Timestamp at, bool decided,
                                      const std::string& decided_by) {
  const int64_t t = ToUnixMicros(at);
  return tx_
      .Exec(
          "UPDATE provider_applications SET status = ?, tier = ?, updated_at = ?, decided_at = ?, "
          "decided_by = ? WHERE id = ?",
          {StatusValue(status), OptValue(tier), t,
           decided ? store::Value(t) : store::Value(nullptr),
           decided ? store::Value(decided_by) : store::Value(nullptr), id})
      .status();
}

Status ApplicationsStore::InsertEvent(const ApplicationEventRow& e) {
  return tx_
      .Exec(
          std::string("INSERT INTO application_events (") + EventRows().Names() +
              ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {e.id, e.application_id, ToUnixMicros(e.at), e.actor_user_id, std::string(Name(e.action)),
           e.from_status ? StatusValue(*e.from_status) : store::Value(std::string()),
           StatusValue(e.to_status), OptValue(e.message), OptValue(e.tier),
           e.changes ? store::Value(EncodeChanges(*e.changes)) : store::Value(nullptr),
           OptValue(e.overridden_suggestion)})
      .status();
}

StatusOr<std::vector<ApplicationEventRow>> ApplicationsStore::ListEvents(
    const std::string& application_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + EventRows().Select() +
                                        " FROM application_events WHERE application_id = ? ORDER "
                                        "BY at, id",
                                    {application_id}));
  return EventRows().Decode(rows);
}

namespace {

// The WHERE conditions (without WHERE; "" for none) and their parameters of a list.
std::string Conditions(const ApplicationFilter& filter, ApplicationOrder order,
                       std::vector<store::Value>* params) {
  std::vector<std::string> conditions;
  if (filter.user_id) {
    conditions.push_back("user_id = ?");
    params->emplace_back(*filter.user_id);
  }
  if (filter.status) {
    conditions.push_back("status = ?");
    params->push_back(StatusValue(*filter.status));
  }
  if (filter.text) {
    conditions.push_back("search_text LIKE ? ESCAPE '\\'");
    params->emplace_back(ContainsPattern(*filter.text));
  }
  if (order == ApplicationOrder::kSubmitted) conditions.push_back("first_submitted_at IS NOT NULL");
  std::string where;
  for (const std::string& c : conditions) where += (where.empty() ? "" : " AND ") + c;
  return where;
}

}  // namespace

StatusOr<int64_t> ApplicationsStore::Count(const ApplicationFilter& filter,
                                           ApplicationOrder order) {
  std::vector<store::Value> params;
  const std::string where = Conditions(filter, order, &params);
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) AS n FROM provider_applications" +
                                        (where.empty() ? std::string() : " WHERE " + where),
                                    params));
  return rows.empty() ? 0 : rows[0]["n"].Int();
}

StatusOr<ApplicationRowPage> ApplicationsStore::List(const ApplicationFilter& filter,
                                                     ApplicationOrder order, bool descending,
                                                     const PageRequest& page) {
  store::PageQuery q;
  q.columns = ApplicationRows().Select();
  q.from = "FROM provider_applications";
  q.where = Conditions(filter, order, &q.params);
  q.descending = descending;
  q.key = {{order == ApplicationOrder::kSubmitted ? "first_submitted_at" : "created_at",
            store::KeyColumn::Type::kInt},
           {"id", store::KeyColumn::Type::kText}};

  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  GPUNEX_ASSIGN_OR_RETURN(Page<StoredApplication> stored, ApplicationRows().DecodePage(rows));
  ApplicationRowPage out;
  out.next = std::move(stored.next);
  for (StoredApplication& a : stored.items) {
    std::string id = a.row.id;
    auto row = RowFrom(std::move(a));
    if (row.ok()) {
      out.rows.push_back(std::move(*row));
    } else {
      out.unreadable.push_back({std::move(id), row.status().message()});
    }
  }
  return out;
}

std::vector<store::Migration> ApplicationsMigrations() {
  return {
      {2,
       "applications",
       "provider applications and their history",
       {
           R"(CREATE TABLE provider_applications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                status TEXT NOT NULL,
                body TEXT NOT NULL,
                suggested_tier TEXT NOT NULL,
                tier TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                first_submitted_at BIGINT,
                submitted_at BIGINT,
                decided_at BIGINT,
                decided_by TEXT))",
           "CREATE INDEX provider_applications_user ON provider_applications (user_id)",
           "CREATE INDEX provider_applications_status ON provider_applications (status, "
           "submitted_at)",
           R"(CREATE TABLE application_events (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES provider_applications(id),
                at BIGINT NOT NULL,
                actor_user_id TEXT NOT NULL,
                action TEXT NOT NULL,
                from_status TEXT NOT NULL,
                to_status TEXT NOT NULL,
                message TEXT,
                tier TEXT))",
           "CREATE INDEX application_events_app ON application_events (application_id, at)",
       },
       {}},
      {6,
       "applications",
       "stored application bodies without the null and \"\" members release 0.1 wrote for absent "
       "values",
       {},
       RepairStoredBodies},
      {16,
       "applications",
       "the reviewers' search column, the first submission of every submitted application, and "
       "the history's changes and overridden suggestions",
       {
           "ALTER TABLE provider_applications ADD COLUMN search_text TEXT NOT NULL DEFAULT ''",
           // Rows that were submitted before first_submitted_at was always written.
           "UPDATE provider_applications SET first_submitted_at = submitted_at "
           "WHERE first_submitted_at IS NULL AND submitted_at IS NOT NULL",
           "CREATE INDEX provider_applications_queue ON provider_applications (status, "
           "first_submitted_at)",
           "ALTER TABLE application_events ADD COLUMN changes TEXT",
           "ALTER TABLE application_events ADD COLUMN overridden_suggestion TEXT",
       },
       FillSearchText},
  };
}

}  // namespace gpunex::platform::applications
