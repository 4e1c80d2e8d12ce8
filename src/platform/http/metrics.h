// Metrics: the process's counters, gauges and the HTTP request-duration histogram,
// rendered for GET /metrics in the Prometheus text exposition format, version 0.0.4
// (Content-Type "text/plain; version=0.0.4; charset=utf-8").
//
// A metric family is created by its first use and keeps the help text and type of that
// use. Misuse (an invalid metric or label name, a name reused with another type, a
// negative counter increment) is a programming error: it is logged and the observation
// dropped, so that metrics never take the server down.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_annotations.h"

namespace gpunex::platform::http {

class Metrics {
 public:
  // Label name -> value; ordered, so series render in a deterministic order.
  using Labels = std::map<std::string, std::string>;

  // Upper bounds, in seconds, of the buckets of http_request_duration_seconds (+Inf is
  // implied).
  static constexpr std::array<double, 13> kDurationBuckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  // The content type of Render()'s output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Counts one served request in http_requests_total{method,route,status} and records
  // its duration in http_request_duration_seconds{method,route}. `route` must be a route
  // pattern or another bounded label ("unmatched"), never a raw path.
  void ObserveRequest(std::string_view method, std::string_view route, int status, double seconds)
      EXCLUDES(mu_);

  // Sets gauge `name`{labels} to `value`.
  void SetGauge(std::string_view name, std::string_view help, double value,
                const Labels& labels = {}) EXCLUDES(mu_);

  // Adds `delta` (>= 0) to counter `name`{labels}; by convention counter names end in
  // "_total" ("gpunex_emails_sent_total").
  void AddCounter(std::string_view name, std::string_view help, const Labels& labels,
                  double delta = 1) EXCLUDES(mu_);

  // All families in name order, each with "# HELP" and "# TYPE" lines and its series in
  // label order. Histogram buckets are cumulative and end with le="+Inf", followed by
  // _sum and _count.
  std::string Render() const EXCLUDES(mu_);

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Histogram {
    // Per-bucket (not cumulative) counts; the last entry is the +Inf bucket.
    std::array<uint64_t, kDurationBuckets.size() + 1> counts{};
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, double> values;         // counters and gauges
    std::map<Labels, Histogram> histograms;  // histograms
  };

  // The family `name`, created with `help` and `type` when new; nullptr (after logging)
  // when the name or a label name is invalid or the family has another type.
  Family* FamilyFor(std::string_view name, std::string_view help, Type type, const Labels& labels)
      REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Family, std::less<>> families_ GUARDED_BY(mu_);
};

}  // namespace gpunex::platform::http
