// /api/v1/offers, /api/v1/providers/me/offers, /api/v1/market/recommendation and
// /api/v1/market/stats: the marketplace (MKT-1..4, PRC-3). Search, the recommendation and
// the summary are open to anonymous visitors, rate-limited per address; they show
// pseudonyms and aggregates, and an offer's machine id only to its provider and admins.
#include <algorithm>
#include <bitset>
#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

#include "common/ascii.h"
#include "platform/api/api.h"
#include "platform/http/rate_limit.h"

namespace gpunex::platform::api {
namespace {

using market::Offer;

json::value OptNumber(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::value OptMicros(const std::optional<Usdc>& u) {
  return u ? json::value(u->micros()) : json::value(nullptr);
}

json::object ExplainJson(const market::Explanation& e) {
  return {{"reliability", e.reliability},
          {"value", e.value},
          {"median_value", e.median_value},
          {"value_factor", e.value_factor},
          {"tier_factor", e.tier_factor},
          {"commit_factor", e.commit_factor},
          {"rank", e.rank}};
}

json::object OfferJson(const Offer& o, bool sees_machine) {
  json::array scores;
  for (double s : o.gpu_performance_scores) scores.push_back(s);
  json::object j{
      {"id", o.id},
      {"gpu_model", o.gpu_model},
      {"gpu_name", o.gpu_name},
      {"gpus_available", o.gpus_available},
      {"gpus_total", o.gpus_total},
      {"vram_gb", o.vram_gb},
      {"performance_score", o.performance_score},
      {"gpu_performance_scores", std::move(scores)},
      {"reliability_score", o.reliability_score},
      {"reliability_status", o.reliability_new ? "new" : "scored"},
      {"uptime_30d", OptNumber(o.uptime_30d)},
      {"price_micro", o.price.micros()},
      {"price_usdc", o.price.ToString()},
      {"country", o.country},
      {"region", o.region},
      {"city", o.city},
      {"tier", providers::Name(o.tier)},
      {"down_mbps", OptNumber(o.down_mbps)},
      {"up_mbps", OptNumber(o.up_mbps)},
      {"latency_ms", OptNumber(o.latency_ms)},
      {"storage", json::object{{"seq_read_mb_s", OptNumber(o.storage_read_mb_s)},
                               {"seq_write_mb_s", OptNumber(o.storage_write_mb_s)},
                               {"rand_read_iops", OptNumber(o.storage_read_iops)},
                               {"disk_free_gb", o.disk_free_gb}}},
      {"cuda_version", o.cuda_version},
      {"driver_version", o.driver_version},
      {"ram_gb_per_gpu", o.ram_gb_per_gpu},
      {"cpu_cores_per_gpu", o.cpu_cores_per_gpu},
      {"host", json::object{{"cpu_model", o.cpu_model},
                            {"cpu_cores", o.cpu_cores},
                            {"ram_gb", o.ram_gb},
                            {"disk_total_gb", o.disk_total_gb},
                            {"disk_free_gb", o.disk_free_gb}}},
      {"commitment_months", o.commitment_months},
      {"listed_since", FormatRfc3339(o.listed_since)},
      {"emulated", o.emulated},
      {"provider", json::object{{"pseudonym", o.pseudonym}}},
  };
  if (sees_machine) j["machine_id"] = o.machine_id;
  return j;
}

// The offer's public JSON without its closing brace, rendered once per loaded offer.
const std::string& PublicOfferPrefix(const Offer& o) {
  return o.rendered.Get([&] {
    std::string text = ToJsonText(OfferJson(o, false));
    text.pop_back();  // the closing brace
    return text;
  });
}

// Strict numbers of a query string: the whole text, finite.
std::optional<double> ParseNumber(const std::string& s) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> ParseInteger(const std::string& s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<bool> ParseFlag(const std::string& s) {
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  return std::nullopt;
}

bool IsSlug(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

// The query parameters of a search: each bad one named in the validation failure.
class QueryReader {
 public:
  explicit QueryReader(const http::Request& req) : req_(req) {}

  std::optional<std::string> Text(const std::string& name) {
    seen_.insert(name);
    auto it = req_.query.find(name);
    if (it == req_.query.end()) return std::nullopt;
    return it->second;
  }
  std::optional<double> Number(const std::string& name, double min, double max) {
    auto t = Text(name);
    if (!t) return std::nullopt;
    auto v = ParseNumber(*t);
    if (!v || *v < min || *v > max) {
      errors_[name] = "must be a number from " + Num(min) + " to " + Num(max);
      return std::nullopt;
    }
    return v;
  }
  std::optional<int64_t> Integer(const std::string& name, int64_t min, int64_t max) {
    auto t = Text(name);
    if (!t) return std::nullopt;
    auto v = ParseInteger(*t);
    if (!v || *v < min || *v > max) {
      errors_[name] =
          "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
      return std::nullopt;
    }
    return v;
  }
  std::optional<bool> Flag(const std::string& name) {
    auto t = Text(name);
    if (!t) return std::nullopt;
    auto v = ParseFlag(*t);
    if (!v) errors_[name] = "must be true or false";
    return v;
  }
  void Fail(const std::string& name, std::string message) { errors_[name] = std::move(message); }
  // Every parameter not read is refused (a misspelt filter would otherwise be ignored).
  void RejectUnknown() {
    for (const auto& [k, v] : req_.query) {
      if (!seen_.count(k)) errors_[k] = "is not a parameter of this request";
    }
  }
  FieldErrors& errors() { return errors_; }

 private:
  static std::string Num(double v) {
    std::string s = std::to_string(v);
    while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
      const bool dot = s.back() == '.';
      s.pop_back();
      if (dot) break;
    }
    return s;
  }
  const http::Request& req_;
  std::set<std::string> seen_;
  FieldErrors errors_;
};

// The fields a search gives of each offer: bit i for OfferFields()[i] (an offer has about
// 30; a bit past 64 throws).
using FieldSet = std::bitset<64>;

// The top-level fields of an offer in a search's items, in their order, which `fields=`
// chooses among: OfferJson's (as one who sees the machine gets them), then what a search
// adds.
const std::vector<std::string>& OfferFields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& member : OfferJson(Offer{}, true)) out.emplace_back(member.key());
    out.emplace_back("position");
    out.emplace_back("explain");
    return out;
  }();
  return names;
}

// Where `name` is in OfferFields() from `from` on; npos when it is not.
size_t FieldIndex(std::string_view name, size_t from = 0) {
  const std::vector<std::string>& names = OfferFields();
  for (size_t i = from; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::string::npos;
}

struct SearchRequest {
  market::OfferQuery query;
  bool explain = false;
  // Only these fields of each offer (and always its id); none: all of them.
  FieldSet fields;
};

// The `fields` parameter: a comma-separated choice of OfferFields().
void ParseFields(QueryReader& r, FieldSet& fields) {
  auto list = r.Text("fields");
  if (!list) return;
  size_t start = 0;
  while (start <= list->size()) {
    size_t comma = list->find(',', start);
    if (comma == std::string::npos) comma = list->size();
    const std::string name = list->substr(start, comma - start);
    const size_t i = FieldIndex(name);
    if (i == std::string::npos) {
      r.Fail("fields", "\"" + name.substr(0, 64) +
                           "\" is not a field of an offer (a comma-separated list of id, "
                           "gpu_model, price_micro, reliability_score, ...)");
      return;
    }
    fields.set(i);
    start = comma + 1;
  }
  fields.set(FieldIndex("id"));
}

// Where the JSON value that starts at `i` of `text` ends (one past it). The text is our
// own serializer's: a value is a string, a number, true, false, null, an array or an
// object.
size_t EndOfValue(std::string_view text, size_t i) {
  if (i >= text.size()) return text.size();
  if (text[i] == '"') {
    for (size_t j = i + 1;;) {
      j = text.find_first_of("\"\\", j);
      if (j == std::string_view::npos) return text.size();
      if (text[j] == '"') return j + 1;
      j += 2;  // an escaped character
    }
  }
  if (text[i] == '{' || text[i] == '[') {
    int depth = 0;
    for (size_t j = i; j < text.size(); ++j) {
      const char c = text[j];
      if (c == '"') {
        j = EndOfValue(text, j) - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return j + 1;
      }
    }
    return text.size();
  }
  const size_t end = text.find_first_of(",}]", i);  // a number or a literal
  return end == std::string_view::npos ? text.size() : end;
}

// Appends the members of `object` (the JSON text of an object as OfferJson renders it,
// with or without its closing brace) that `fields` chooses, each after a comma unless
// `first`. Member names carry no escapes, and come in OfferFields()' order.
void AppendChosenMembers(std::string_view object, const FieldSet& fields, std::string& out,
                         bool& first) {
  size_t field = 0;
  size_t i = 1;  // past '{'
  while (i < object.size() && object[i] == '"') {
    const size_t name_end = object.find('"', i + 1);
    if (name_end == std::string_view::npos) return;
    const std::string_view name = object.substr(i + 1, name_end - i - 1);
    const size_t end = EndOfValue(object, name_end + 2);  // past `":`
    field = FieldIndex(name, field);
    if (field == std::string::npos) field = FieldIndex(name);  // out of order: look it up whole
    if (field != std::string::npos && fields.test(field)) {
      if (!first) out += ',';
      out.append(object.substr(i, end - i));
      first = false;
    }
    if (field == std::string::npos) field = 0;
    i = end < object.size() && object[end] == ',' ? end + 1 : end;
  }
}

StatusOr<SearchRequest> ParseSearch(const http::Request& req, const ApiContext& ctx) {
  SearchRequest out;
  market::OfferQuery& q = out.query;
  QueryReader r(req);
  if (auto models = r.Text("gpu_model")) {
    size_t start = 0;
    while (start <= models->size()) {
      size_t comma = models->find(',', start);
      if (comma == std::string::npos) comma = models->size();
      const std::string id = models->substr(start, comma - start);
      if (!IsSlug(id, 64) || !ctx.market.KnownModel(id)) {
        r.Fail("gpu_model", "\"" + id.substr(0, 64) + "\" is not a GPU model of the catalog");
        break;
      }
      q.gpu_models.insert(id);
      if (q.gpu_models.size() > 32) {
        r.Fail("gpu_model", "at most 32 models");
        break;
      }
      start = comma + 1;
    }
  }
  if (auto v = r.Integer("min_gpus", 1, 1024)) q.min_gpus = *v;
  q.min_vram_gb = r.Number("min_vram_gb", 0, 4096);
  if (auto v = r.Integer("max_price_micro", 1, pricing::kMaxPrice.micros())) {
    q.max_price = Usdc::Micros(*v);
  }
  if (auto c = r.Text("country")) {
    std::string up = *c;
    for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (up.size() != 2 || !std::isalpha(static_cast<unsigned char>(up[0])) ||
        !std::isalpha(static_cast<unsigned char>(up[1]))) {
      r.Fail("country", "must be an ISO 3166-1 alpha-2 code such as IT");
    } else {
      q.country = up;
    }
  }
  if (auto v = r.Text("region")) {
    // Regions are kept in lower case: "EU-South" finds eu-south.
    const std::string region = AsciiLower(*v);
    if (!IsSlug(region, 64)) {
      r.Fail("region", "must be a region name such as eu-south (a-z, 0-9, -; at most 64)");
    } else {
      q.region = region;
    }
  }
  if (auto v = r.Text("tier")) {
    q.tier = providers::kTierNames.Parse(*v);
    if (!q.tier) r.Fail("tier", "must be community or enterprise");
  }
  q.min_reliability = r.Number("min_reliability", 0, 100);
  q.min_performance = r.Number("min_performance", 0, 1e6);
  q.min_down_mbps = r.Number("min_down_mbps", 0, 1e7);
  q.min_up_mbps = r.Number("min_up_mbps", 0, 1e7);
  if (auto v = r.Text("min_cuda")) {
    q.min_cuda = market::ParseCudaVersion(*v);
    if (!q.min_cuda) r.Fail("min_cuda", "must be a CUDA version such as 12.4");
  }
  if (auto v = r.Flag("verified_only")) q.verified_only = *v;
  if (auto v = r.Flag("include_busy")) q.include_busy = *v;
  if (auto v = r.Text("sort")) {
    auto s = market::ParseSort(*v);
    if (!s) {
      r.Fail("sort", "must be one of rank, price, -performance, -value, -reliability");
    } else {
      q.sort = *s;
    }
  }
  if (auto v = r.Flag("explain")) out.explain = *v;
  ParseFields(r, out.fields);
  r.Text("limit");
  r.Text("cursor");
  r.RejectUnknown();
  auto page = ParsePageRequest(req, {50, 200});
  if (!page.ok()) {
    const Status st = page.status();
    for (const auto& [k, v] : st.fields()) r.errors()[k] = v;
  } else {
    q.page = *page;
  }
  if (!r.errors().empty()) return ValidationFailed(std::move(r.errors()));
  return out;
}

// The caller when the request carries credentials; nullopt for an anonymous visitor.
StatusOr<std::optional<accounts::Principal>> OptionalUser(const http::Request& req,
                                                          const ApiContext& ctx) {
  if (req.Header("authorization").empty() && req.Cookie(kSessionCookie).empty()) {
    return std::optional<accounts::Principal>();
  }
  GPUNEX_ASSIGN_OR_RETURN(accounts::Principal p, RequireUser(req, ctx));
  return std::optional<accounts::Principal>(std::move(p));
}

// Anonymous callers of the public routes are limited per address.
using Limiter = std::shared_ptr<http::RateLimiter>;
std::optional<http::Response> Throttle(const Limiter& limiter,
                                       const std::optional<accounts::Principal>& p,
                                       const http::Request& req) {
  int64_t retry = 0;
  if (p || limiter->Allow(req.remote_addr, &retry)) return std::nullopt;
  http::Response resp = http::ErrorResponse(
      ResourceExhausted("too many searches from this address; log in or retry later"));
  resp.SetHeader("Retry-After", std::to_string(retry));
  return resp;
}

json::object RecommendationJson(const market::RecommendationView& v) {
  const market::Recommendation& r = v.recommendation;
  auto window = [](const market::MarketWindow& w) {
    return json::object{{"listed_gpu_hours", w.listed_gpu_hours},
                        {"rented_gpu_hours", w.rented_gpu_hours},
                        {"rentals", static_cast<int64_t>(w.rentals.size())}};
  };
  return {{"gpu_model", v.gpu_model},
          {"region", v.region.empty() ? json::value(nullptr) : json::value(v.region)},
          {"price_micro", r.price.micros()},
          {"price_usdc", r.price.ToString()},
          {"utilization", OptNumber(r.utilization)},
          {"median_price_micro", OptMicros(r.median_price)},
          {"sample_rentals", r.sample_rentals},
          {"basis", r.basis},
          {"catalog_price_micro", v.catalog_price.micros()},
          {"note", v.note},
          {"utilization_factor", OptNumber(r.factor)},
          {"reason", v.reason.empty() ? json::value(nullptr) : json::value(v.reason)},
          {"region_window", window(v.region_window)},
          {"global_window", window(v.global_window)}};
}

json::object StatsJson(const market::MarketStats& s) {
  return {{"gpu_model", s.gpu_model.empty() ? json::value(nullptr) : json::value(s.gpu_model)},
          {"region", s.region.empty() ? json::value(nullptr) : json::value(s.region)},
          {"offers", s.offers},
          {"listed_gpus", s.listed_gpus},
          {"available_gpus", s.available_gpus},
          {"rented_gpus", s.rented_gpus},
          {"price_p25_micro", OptMicros(s.price_p25)},
          {"price_median_micro", OptMicros(s.price_median)},
          {"price_p75_micro", OptMicros(s.price_p75)}};
}

// gpu_model (a catalog id; required when `need_model`) and region of the market routes.
StatusOr<std::pair<std::string, std::string>> ParseModelRegion(const http::Request& req,
                                                               const ApiContext& ctx,
                                                               bool need_model) {
  QueryReader r(req);
  std::string model = r.Text("gpu_model").value_or("");
  std::string region = r.Text("region").value_or("");
  if (model.empty() && need_model) {
    r.Fail("gpu_model", "is required");
  } else if (!model.empty() && (!IsSlug(model, 64) || !ctx.market.KnownModel(model))) {
    r.Fail("gpu_model", "is not a GPU model of the catalog");
  }
  if (!region.empty() && !market::IsRegionName(region)) {
    r.Fail("region", "must be a region name such as eu-south (a-z, 0-9, -; at most 64)");
  }
  r.RejectUnknown();
  if (!r.errors().empty()) return ValidationFailed(std::move(r.errors()));
  return std::pair{model, region};
}

}  // namespace

void RegisterMarketRoutes(http::Router& r, const ApiContext& ctx) {
  auto limiter = std::make_shared<http::RateLimiter>(ctx.market.options().anonymous_searches_per_s,
                                                     ctx.market.options().anonymous_burst, 100'000,
                                                     &ctx.clock);
  r.Add("GET", "/api/v1/offers", kPublicOrUser, [&ctx, limiter](http::Request& req) {
    auto p = OptionalUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (auto limited = Throttle(limiter, *p, req)) return *limited;
    auto search = ParseSearch(req, ctx);
    if (!search.ok()) return http::ErrorResponse(search.status());
    std::shared_ptr<const market::Snapshot> snap = ctx.market.snapshot();
    auto result = market::Search(*snap, search->query);
    if (!result.ok()) return http::ErrorResponse(result.status());
    // Each offer's public fields as rendered once (Offer::rendered), then what this search
    // adds: the machine id for those who see it, the position and the explanation.
    // With `fields`, the members chosen of that (a compact page for tools that want few).
    std::string body = "{\"items\":[";
    const FieldSet& chosen = search->fields;
    auto wants = [&](std::string_view name) {
      return chosen.none() || chosen.test(FieldIndex(name));
    };
    for (size_t i = 0; i < result->items.size(); ++i) {
      const market::SearchHit& h = result->items[i];
      if (i > 0) body += ',';
      bool first = false;
      if (chosen.none()) {
        body += PublicOfferPrefix(*h.offer);
      } else {
        body += '{';
        first = true;
        AppendChosenMembers(PublicOfferPrefix(*h.offer), chosen, body, first);
      }
      auto member = [&](std::string_view name, const std::string& value) {
        if (!wants(name)) return;
        if (!first) body += ',';
        body += '"';
        body += name;
        body += "\":";
        body += value;
        first = false;
      };
      if (market::Market::SeesMachine(*p, *h.offer)) {
        member("machine_id", ToJsonText(json::value(h.offer->machine_id)));
      }
      member("position", std::to_string(h.position));
      if (search->explain) member("explain", ToJsonText(ExplainJson(h.explain)));
      body += '}';
    }
    body += "]," + ToJsonText(json::object{
                                  {"next_cursor", result->next ? json::value(result->next->Encode())
                                                               : json::value(nullptr)},
                                  {"matched", result->matched},
                                  {"median_value", result->median_value},
                                  {"sort", market::SortCode(search->query.sort)}})
                       .substr(1);
    return http::Response::Text(200, std::move(body), "application/json");
  });
  r.Add("GET", "/api/v1/offers/{id}", kPublicOrUser, [&ctx, limiter](http::Request& req) {
    auto p = OptionalUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (auto limited = Throttle(limiter, *p, req)) return *limited;
    std::shared_ptr<const market::Snapshot> snap = ctx.market.snapshot();
    const Offer* o = snap->Find(req.Param("id"));
    if (!o) return http::ErrorResponse(NotFound("no such offer"));
    return http::Response::Json(200, OfferJson(*o, market::Market::SeesMachine(*p, *o)));
  });
  r.Add("GET", "/api/v1/providers/me/offers", kProvider, [&ctx](http::Request& req) {
    auto p = RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto own = ctx.market.ProviderOffers(*p);
    if (!own.ok()) return http::ErrorResponse(own.status());
    json::array items;
    for (const market::OwnOfferRank& o : own->offers) {
      json::array advice;
      for (const auto& a : o.advice) advice.push_back(json::value(a));
      json::object j = OfferJson(*o.offer, true);
      j["rank"] = json::object{
          {"position", o.position == 0 ? json::value(nullptr) : json::value(o.position)},
          {"of", o.of},
          {"summary", o.position == 0 ? json::value("not in search results now")
                                      : json::value(market::PlaceSummary(
                                            o.position, o.of, o.offer->gpu_name, o.offer->region))},
          {"explain", ExplainJson(o.explain)},
          {"price_for_next_place_micro", OptMicros(o.price_for_next_place)},
          {"advice", std::move(advice)}};
      items.push_back(std::move(j));
    }
    return http::Response::Json(200, json::object{{"items", std::move(items)}});
  });
  r.Add("GET", "/api/v1/market/recommendation", kPublicOrUser, [&ctx, limiter](http::Request& req) {
    auto p = OptionalUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (auto limited = Throttle(limiter, *p, req)) return *limited;
    auto args = ParseModelRegion(req, ctx, true);
    if (!args.ok()) return http::ErrorResponse(args.status());
    auto v = ctx.market.Recommend(args->first, args->second);
    if (!v.ok()) return http::ErrorResponse(v.status());
    return http::Response::Json(200, RecommendationJson(*v));
  });
  r.Add("GET", "/api/v1/market/stats", kPublicOrUser, [&ctx, limiter](http::Request& req) {
    auto p = OptionalUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    if (auto limited = Throttle(limiter, *p, req)) return *limited;
    auto args = ParseModelRegion(req, ctx, false);
    if (!args.ok()) return http::ErrorResponse(args.status());
    auto s = ctx.market.Stats(args->first, args->second);
    if (!s.ok()) return http::ErrorResponse(s.status());
    return http::Response::Json(200, StatsJson(*s));
  });
}

}  // namespace gpunex::platform::api
