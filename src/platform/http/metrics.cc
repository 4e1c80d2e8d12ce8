#include "platform/http/metrics.h"

#include <charconv>
#include <cmath>
#include <utility>

#include "common/log.h"

namespace gpunex::platform::http {
namespace {

constexpr std::string_view kRequestsTotal = "http_requests_total";
constexpr std::string_view kRequestDuration = "http_request_duration_seconds";

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Label names starting with "__" are reserved by Prometheus.
bool IsLabelName(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Sample values: integers without exponent or fraction, other finite values in their
// shortest round-trip form, and the exposition format's spellings of the specials.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::to_chars_result r;
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {  // 2^53
    r = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof(buf), v);
  }
  return std::string(buf, r.ptr);
}

void AppendEscaped(std::string* out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '"' && quote) {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

// Appends `{a="1",b="2"}` (with `le` last when given), or nothing for no labels.
void AppendLabels(std::string* out, const Metrics::Labels& labels,
                  std::string_view le = std::string_view()) {
  if (labels.empty() && le.empty()) return;
  *out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) *out += ',';
    first = false;
    *out += name;
    *out += "=\"";
    AppendEscaped(out, value, true);
    *out += '"';
  }
  if (!le.empty()) {
    if (!first) *out += ',';
    *out += "le=\"";
    *out += le;
    *out += '"';
  }
  *out += '}';
}

}  // namespace

Metrics::Metrics() {
  MutexLock lock(&mu_);
  FamilyFor(kRequestsTotal, "HTTP requests served, by method, route pattern and status.",
            Type::kCounter, {});
  FamilyFor(kRequestDuration, "Time to serve an HTTP request, by method and route pattern.",
            Type::kHistogram, {});
}

Metrics::Family* Metrics::FamilyFor(std::string_view name, std::string_view help, Type type,
                                    const Labels& labels) {
  if (!IsMetricName(name)) {
    LogError("metrics.bad_name", {{"metric", name}});
    return nullptr;
  }
  for (const auto& [label, value] : labels) {
    if (!IsLabelName(label) || (type == Type::kHistogram && label == "le")) {
      LogError("metrics.bad_label", {{"metric", name}, {"label", label}});
      return nullptr;
    }
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}, {}}).first;
  } else if (it->second.type != type) {
    LogError("metrics.type_conflict", {{"metric", name}});
    return nullptr;
  }
  return &it->second;
}

void Metrics::ObserveRequest(std::string_view method, std::string_view route, int status,
                             double seconds) {
  Labels labels{{"method", std::string(method)}, {"route", std::string(route)}};
  MutexLock lock(&mu_);
  if (Family* f = FamilyFor(kRequestDuration, "", Type::kHistogram, labels)) {
    Histogram& h = f->histograms[labels];
    size_t i = 0;
    while (i < kDurationBuckets.size() && !(seconds <= kDurationBuckets[i])) ++i;
    ++h.counts[i];
    h.sum += seconds;
    ++h.count;
  }
  labels["status"] = std::to_string(status);
  if (Family* f = FamilyFor(kRequestsTotal, "", Type::kCounter, labels)) {
    f->values[labels] += 1;
  }
}

void Metrics::SetGauge(std::string_view name, std::string_view help, double value,
                       const Labels& labels) {
  MutexLock lock(&mu_);
  if (Family* f = FamilyFor(name, help, Type::kGauge, labels)) f->values[labels] = value;
}

void Metrics::AddCounter(std::string_view name, std::string_view help, const Labels& labels,
                         double delta) {
  if (!(delta >= 0)) {  // also rejects NaN
    LogError("metrics.negative_increment", {{"metric", name}, {"delta", delta}});
    return;
  }
  MutexLock lock(&mu_);
  if (Family* f = FamilyFor(name, help, Type::kCounter, labels)) f->values[labels] += delta;
}

std::string Metrics::Render() const {
  std::string out;
  MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) {
    out += "# HELP ";
    out += name;
    out += ' ';
    AppendEscaped(&out, family.help, false);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += family.type == Type::kCounter ? "counter"
           : family.type == Type::kGauge ? "gauge"
                                         : "histogram";
    out += '\n';
    for (const auto& [labels, value] : family.values) {
      out += name;
      AppendLabels(&out, labels);
      out += ' ';
      out += FormatValue(value);
      out += '\n';
    }
    for (const auto& [labels, h] : family.histograms) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < h.counts.size(); ++i) {
        cumulative += h.counts[i];
        out += name;
        out += "_bucket";
        AppendLabels(&out, labels,
                     i < kDurationBuckets.size() ? FormatValue(kDurationBuckets[i]) : "+Inf");
        out += ' ';
        out += FormatValue(static_cast<double>(cumulative));
        out += '\n';
      }
      out += name;
      out += "_sum";
      AppendLabels(&out, labels);
      out += ' ';
      out += FormatValue(h.sum);
      out += '\n';
      out += name;
      out += "_count";
      AppendLabels(&out, labels);
      out += ' ';
      out += FormatValue(static_cast<double>(h.count));
      out += '\n';
    }
  }
  return out;
}

}  // namespace gpunex::platform::http
