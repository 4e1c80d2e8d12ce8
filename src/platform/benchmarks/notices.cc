#include "platform/benchmarks/notices.h"

#include "platform/notify/notify.h"

namespace gpunex::platform::benchmarks {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::vector<Notice> ListingNotices(const Evaluation& e, const std::string& machine_name) {
  std::vector<Notice> out;
  if (!e.delisted.empty()) {
    out.push_back(
        {"benchmark.delisted", "GPU delisted on " + machine_name + " after its benchmark",
         "These GPUs of machine " + machine_name +
             " did not reach the minimum figures and are no longer offered to customers: " +
             Join(e.delisted) + ".\n" + e.delist_details +
             "\nWhen you have fixed it, ask for a re-run in the Benchmark tab; a GPU that passes "
             "is listed again at once.",
         true});
  }
  if (!e.relisted.empty()) {
    out.push_back({"benchmark.relisted", "GPU listed again on " + machine_name,
                   "These GPUs of machine " + machine_name +
                       " passed their benchmark re-run and are offered to customers again: " +
                       Join(e.relisted) + ".",
                   true});
  }
  if (!e.first_listed.empty()) {
    out.push_back({"benchmark.listed", "GPU listed on " + machine_name,
                   "These GPUs of machine " + machine_name +
                       " passed their first benchmark and are now offered to customers: " +
                       Join(e.first_listed) + ".",
                   false});
  }
  return out;
}

std::string NoticeEmailSubject(const Notice& n) {
  // Fixed words: the title names the machine, which its provider typed.
  if (n.kind == "benchmark.delisted") return "gpunex: a GPU was delisted after its benchmark";
  if (n.kind == "benchmark.relisted") return "gpunex: a GPU is listed again";
  if (n.kind == "benchmark.listed") return "gpunex: a GPU is listed";
  return "gpunex: a benchmark result";
}

std::string NoticeEmailBody(const Notice& n, const std::string& name, const std::string& link) {
  return "Hello " + notify::GreetingName(name) + ",\n\n" + n.text +
         "\n\nSee the Benchmark tab of your Provider Dashboard: " + link + "\n\nThe gpunex team\n";
}

}  // namespace gpunex::platform::benchmarks
