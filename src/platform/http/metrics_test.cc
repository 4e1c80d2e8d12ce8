#include "platform/http/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

namespace gpunex::platform::http {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

struct Exposition {
  std::map<std::string, std::string> help;
  std::map<std::string, std::string> type;
  std::vector<Sample> samples;
};

// A strict little parser of the text format, enough to check what Render() writes.
Exposition Parse(const std::string& text) {
  Exposition out;
  std::istringstream in(text);
  std::string line;
  EXPECT_TRUE(text.empty() || text.back() == '\n');
  while (std::getline(in, line)) {
    EXPECT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      out.help[rest.substr(0, sp)] = sp == std::string::npos ? "" : rest.substr(sp + 1);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      out.type[rest.substr(0, sp)] = rest.substr(sp + 1);
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        std::string key;
        while (line[i] != '=') key += line[i++];
        ++i;
        EXPECT_EQ(line[i], '"');
        ++i;
        std::string value;
        while (line[i] != '"') {
          if (line[i] == '\\') {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;
        s.labels[key] = value;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    EXPECT_EQ(line[i], ' ') << line;
    std::string v = line.substr(i + 1);
    s.value = v == "+Inf" ? INFINITY : std::stod(v);
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::vector<Sample> Find(const Exposition& e, const std::string& name,
                         const std::map<std::string, std::string>& labels_subset) {
  std::vector<Sample> out;
  for (const Sample& s : e.samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : labels_subset) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (ok) out.push_back(s);
  }
  return out;
}

TEST(Metrics, EmptyRegistryDeclaresHttpFamilies) {
  Metrics m;
  Exposition e = Parse(m.Render());
  EXPECT_EQ(e.type["http_requests_total"], "counter");
  EXPECT_EQ(e.type["http_request_duration_seconds"], "histogram");
  EXPECT_FALSE(e.help["http_requests_total"].empty());
  EXPECT_TRUE(e.samples.empty());
}

TEST(Metrics, CountsRequestsAndBucketsAreCumulative) {
  Metrics m;
  m.ObserveRequest("GET", "/api/v1/machines", 200, 0.0004);
  m.ObserveRequest("GET", "/api/v1/machines", 200, 0.003);
  m.ObserveRequest("GET", "/api/v1/machines", 500, 0.3);
  m.ObserveRequest("GET", "/api/v1/machines", 200, 42);
  m.ObserveRequest("POST", "/auth/login", 401, 0.01);  // on a bound: le is inclusive

  Exposition e = Parse(m.Render());
  auto ok = Find(e, "http_requests_total", {{"method", "GET"}, {"status", "200"}});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].value, 3);
  EXPECT_EQ(ok[0].labels.at("route"), "/api/v1/machines");
  EXPECT_EQ(Find(e, "http_requests_total", {{"status", "500"}})[0].value, 1);

  auto buckets = Find(e, "http_request_duration_seconds_bucket", {{"route", "/api/v1/machines"}});
  ASSERT_EQ(buckets.size(), Metrics::kDurationBuckets.size() + 1);
  std::map<std::string, double> by_le;
  double previous = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_GE(buckets[i].value, previous) << "buckets must be cumulative";
    previous = buckets[i].value;
    by_le[buckets[i].labels.at("le")] = buckets[i].value;
    if (i + 1 < buckets.size()) {
      EXPECT_DOUBLE_EQ(std::stod(buckets[i].labels.at("le")), Metrics::kDurationBuckets[i]);
    }
  }
  EXPECT_EQ(buckets.back().labels.at("le"), "+Inf");
  EXPECT_EQ(by_le["0.001"], 1);
  EXPECT_EQ(by_le["0.0025"], 1);
  EXPECT_EQ(by_le["0.005"], 2);
  EXPECT_EQ(by_le["0.25"], 2);
  EXPECT_EQ(by_le["0.5"], 3);
  EXPECT_EQ(by_le["10"], 3);
  EXPECT_EQ(by_le["+Inf"], 4);
  auto count = Find(e, "http_request_duration_seconds_count", {{"route", "/api/v1/machines"}});
  auto sum = Find(e, "http_request_duration_seconds_sum", {{"route", "/api/v1/machines"}});
  ASSERT_EQ(count.size(), 1u);
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(count[0].value, 4);
  EXPECT_NEAR(sum[0].value, 0.0004 + 0.003 + 0.3 + 42, 1e-9);
  // Histogram series carry no status label.
  EXPECT_EQ(count[0].labels.count("status"), 0u);

  auto login =
      Find(e, "http_request_duration_seconds_bucket", {{"route", "/auth/login"}, {"le", "0.01"}});
  ASSERT_EQ(login.size(), 1u);
  EXPECT_EQ(login[0].value, 1);
}

TEST(Metrics, GaugesAndCounters) {
  Metrics m;
  m.SetGauge("gpunex_machines_online", "Machines with a live agent channel.", 3);
  m.SetGauge("gpunex_machines_online", "ignored help", 5);
  m.AddCounter("gpunex_emails_sent_total", "Emails handed to the SMTP server.",
               {{"template", "application_approved"}});
  m.AddCounter("gpunex_emails_sent_total", "", {{"template", "application_approved"}}, 2);
  m.AddCounter("gpunex_emails_sent_total", "", {{"template", "needs_info"}});
  m.AddCounter("gpunex_emails_sent_total", "", {{"template", "needs_info"}}, -1);  // dropped
  m.SetGauge("gpunex_info", "Build information.", 1, {{"version", "0.1.0"}});

  std::string text = m.Render();
  Exposition e = Parse(text);
  EXPECT_EQ(e.type["gpunex_machines_online"], "gauge");
  EXPECT_EQ(e.help["gpunex_machines_online"], "Machines with a live agent channel.");
  EXPECT_EQ(Find(e, "gpunex_machines_online", {})[0].value, 5);
  EXPECT_EQ(e.type["gpunex_emails_sent_total"], "counter");
  EXPECT_EQ(Find(e, "gpunex_emails_sent_total", {{"template", "application_approved"}})[0].value,
            3);
  EXPECT_EQ(Find(e, "gpunex_emails_sent_total", {{"template", "needs_info"}})[0].value, 1);
  EXPECT_NE(text.find("gpunex_machines_online 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpunex_info{version=\"0.1.0\"} 1\n"), std::string::npos) << text;
}

TEST(Metrics, RejectsMisuse) {
  Metrics m;
  m.SetGauge("bad name", "", 1);
  m.SetGauge("9starts_with_digit", "", 1);
  m.SetGauge("ok_gauge", "", 1, {{"bad-label", "x"}});
  m.SetGauge("ok_gauge2", "", 1, {{"__reserved", "x"}});
  m.AddCounter("http_request_duration_seconds", "", {}, 1);  // a histogram already
  m.SetGauge("http_requests_total", "", 1);                  // a counter already
  Exposition e = Parse(m.Render());
  EXPECT_TRUE(e.samples.empty());
  EXPECT_EQ(e.type["http_requests_total"], "counter");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  Metrics m;
  m.AddCounter("gpunex_weird_total", "line one\nback\\slash", {{"v", "a\"b\\c\nd"}});
  std::string text = m.Render();
  EXPECT_NE(text.find("# HELP gpunex_weird_total line one\\nback\\\\slash\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpunex_weird_total{v=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << text;
  Exposition e = Parse(text);
  EXPECT_EQ(Find(e, "gpunex_weird_total", {})[0].labels.at("v"), "a\"b\\c\nd");
}

TEST(Metrics, RenderIsDeterministicAndSorted) {
  Metrics a, b;
  a.SetGauge("zeta", "", 1);
  a.SetGauge("alpha", "", 2);
  a.ObserveRequest("POST", "/b", 200, 0.1);
  a.ObserveRequest("GET", "/a", 200, 0.1);
  b.ObserveRequest("GET", "/a", 200, 0.1);
  b.ObserveRequest("POST", "/b", 200, 0.1);
  b.SetGauge("alpha", "", 2);
  b.SetGauge("zeta", "", 1);
  EXPECT_EQ(a.Render(), b.Render());
  std::string text = a.Render();
  EXPECT_LT(text.find("# TYPE alpha"), text.find("# TYPE http_request_duration_seconds"));
  EXPECT_LT(text.find("# TYPE http_requests_total"), text.find("# TYPE zeta"));
  EXPECT_NE(text.find("alpha 2\n"), std::string::npos);
}

TEST(Metrics, FormatsNonIntegerValues) {
  Metrics m;
  m.SetGauge("g_frac", "", 0.25);
  m.SetGauge("g_inf", "", INFINITY);
  m.SetGauge("g_nan", "", NAN);
  std::string text = m.Render();
  EXPECT_NE(text.find("g_frac 0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g_inf +Inf\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g_nan NaN\n"), std::string::npos) << text;
}

TEST(Metrics, ConcurrentObservations) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) {
        m.ObserveRequest("GET", "/x", 200, 0.002);
        m.AddCounter("c_total", "", {});
        if (i % 100 == 0) (void)m.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  Exposition e = Parse(m.Render());
  EXPECT_EQ(Find(e, "http_requests_total", {})[0].value, 8000);
  EXPECT_EQ(Find(e, "c_total", {})[0].value, 8000);
  EXPECT_EQ(Find(e, "http_request_duration_seconds_bucket", {{"le", "0.0025"}})[0].value, 8000);
}

}  // namespace
}  // namespace gpunex::platform::http
