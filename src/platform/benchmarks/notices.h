// The notify step of applying a benchmark result: what the provider is told when a run
// changes their listing, as dashboard notifications and emails. Pure: text only.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include "platform/benchmarks/evaluate.h"

namespace gpunex::platform::benchmarks {

struct Notice {
  std::string kind;    // benchmark.delisted | benchmark.relisted | benchmark.listed
  std::string title;   // one line
  std::string text;    // the dashboard notification's body
  bool email = false;  // also by email
};

// The notices for the listing changes of an evaluation (none when nothing changed).
std::vector<Notice> ListingNotices(const Evaluation& e, const std::string& machine_name);

// The email for a notice. `name`: the provider's, "" for none; `link`: the full URL of
// the Benchmark tab for the machine.
std::string NoticeEmailSubject(const Notice& n);
std::string NoticeEmailBody(const Notice& n, const std::string& name, const std::string& link);

}  // namespace gpunex::platform::benchmarks
