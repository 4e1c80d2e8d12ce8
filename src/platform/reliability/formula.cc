#include "platform/reliability/formula.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gpunex::platform::reliability {
namespace {

constexpr double kHalfLifeS = 7 * 24 * 3600.0;

double SecondsBetween(Timestamp a, Timestamp b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

double Weight(Timestamp at, Timestamp now) {
  return std::exp2(-std::max(0.0, SecondsBetween(at, now)) / kHalfLifeS);
}

double WeightedSeconds(Timestamp a, Timestamp b, Timestamp now) {
  if (b <= a) return 0;
  // Time after `now` weighs 1 (an age below 0 counts as 0).
  if (b > now)
    return SecondsBetween(std::max(a, now), b) + WeightedSeconds(a, std::min(b, now), now);
  // ∫ 2^(−(now − t)/H) dt = H/ln 2 · (2^(−(now − b)/H) − 2^(−(now − a)/H)).
  return kHalfLifeS / std::numbers::ln2 * (Weight(b, now) - Weight(a, now));
}

double EpochWeight(Timestamp at, Timestamp epoch) {
  return std::exp2(SecondsBetween(epoch, at) / kHalfLifeS);
}

double EpochWeightedSeconds(Timestamp a, Timestamp b, Timestamp epoch) {
  if (b <= a) return 0;
  return kHalfLifeS / std::numbers::ln2 * (EpochWeight(b, epoch) - EpochWeight(a, epoch));
}

bool IsPlanned(const Maintenance& m) { return m.start - m.declared_at >= kPlannedNotice; }

std::map<std::string, Duration> Allowances(const std::vector<Maintenance>& windows) {
  std::vector<const Maintenance*> planned;
  for (const Maintenance& m : windows) {
    if (IsPlanned(m)) planned.push_back(&m);
  }
  std::sort(planned.begin(), planned.end(), [](const Maintenance* a, const Maintenance* b) {
    return a->start < b->start || (a->start == b->start && a->id < b->id);
  });
  std::map<std::string, Duration> out;
  for (size_t i = 0; i < planned.size(); ++i) {
    Duration used{0};
    for (size_t j = 0; j < i; ++j) {
      if (planned[j]->start > planned[i]->start - kAllowancePeriod) used += out[planned[j]->id];
    }
    const Duration left = std::max(Duration{0}, kPlannedAllowance - used);
    out[planned[i]->id] = std::min(planned[i]->end - planned[i]->start, left);
  }
  return out;
}

std::vector<Piece> ClassifyTime(const TimeFacts& f, Timestamp from, Timestamp to) {
  if (to <= from) return {};
  const std::map<std::string, Duration> allowance = Allowances(f.maintenance);
  // Each planned window's excused stretch: its first `allowance` of scheduled time.
  std::vector<Interval> excused;
  std::vector<Interval> maintenance;
  for (const Maintenance& m : f.maintenance) {
    if (m.end <= from || m.start >= to) {
      if (allowance.count(m.id) == 0) continue;
    } else {
      maintenance.push_back({m.start, m.end});
    }
    auto it = allowance.find(m.id);
    if (it == allowance.end() || it->second <= Duration{0}) continue;
    Duration left = it->second;
    for (const Interval& s : availability::Intersect(f.schedule, {{m.start, m.end}})) {
      if (left <= Duration{0}) break;
      const Duration take = std::min(left, s.length());
      excused.push_back({s.start, s.start + take});
      left -= take;
    }
  }
  // Cut at every boundary.
  std::vector<Timestamp> cuts = {from, to};
  auto add_cuts = [&](const std::vector<Interval>& v) {
    for (const Interval& i : v) {
      if (i.start > from && i.start < to) cuts.push_back(i.start);
      if (i.end > from && i.end < to) cuts.push_back(i.end);
    }
  };
  add_cuts(f.schedule);
  add_cuts(f.online);
  add_cuts(excused);
  add_cuts(maintenance);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto inside = [](const std::vector<Interval>& v, Timestamp t) {
    return std::any_of(v.begin(), v.end(),
                       [t](const Interval& i) { return i.start <= t && t < i.end; });
  };
  std::vector<Piece> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    Piece p{cuts[i], cuts[i + 1]};
    const bool in_schedule = inside(f.schedule, p.start);
    p.maintenance = inside(maintenance, p.start);
    p.excused = in_schedule && inside(excused, p.start);
    p.scheduled = in_schedule && !p.excused;
    p.up = p.scheduled && !p.maintenance && inside(f.online, p.start);
    if (!out.empty() && out.back().scheduled == p.scheduled && out.back().up == p.up &&
        out.back().excused == p.excused && out.back().maintenance == p.maintenance) {
      out.back().end = p.end;
    } else {
      out.push_back(p);
    }
  }
  return out;
}

bool JobCounts(const JobEnd& j) { return j.party != fleet::EndParty::kPlatform; }
bool JobOk(const JobEnd& j) { return j.party == fleet::EndParty::kCustomer; }

std::optional<double> Baseline(const std::vector<double>& passing_scores) {
  if (passing_scores.empty()) return std::nullopt;
  std::vector<double> first(passing_scores.begin(),
                            passing_scores.begin() + std::min<size_t>(3, passing_scores.size()));
  std::sort(first.begin(), first.end());
  if (first.size() == 2) return (first[0] + first[1]) / 2;
  return first[first.size() / 2];
}

double GpuBenchmark(std::optional<double> latest, std::optional<double> baseline,
                    double loaded_samples, double throttled_samples) {
  double ratio = 1;
  if (latest && baseline && *baseline > 0) ratio = std::clamp(*latest / *baseline, 0.0, 1.0);
  double throttled = 0;
  if (loaded_samples > 0) throttled = std::clamp(throttled_samples / loaded_samples, 0.0, 1.0);
  return ratio * (1 - 0.5 * throttled);
}

double Completion(double weighted_ok, double weighted_ended) {
  return (weighted_ok + kPriorJobs * kPriorCompletion) / (weighted_ended + kPriorJobs);
}

double Score(const Components& c) {
  auto unit = [](double x) { return std::clamp(x, 0.0, 1.0); };
  return 100 * std::pow(unit(c.uptime), 0.5) * std::pow(unit(c.completion), 0.3) *
         std::pow(unit(c.benchmark), 0.2);
}

Result Compute(const History& h) {
  Result r;
  const Timestamp from = h.now - kWindow;
  Duration scheduled{0};
  for (const Piece& p : ClassifyTime(h.time, from, h.now)) {
    if (!p.scheduled) continue;
    scheduled += p.end - p.start;
    r.scheduled_weighted_s += WeightedSeconds(p.start, p.end, h.now);
    if (p.up) r.up_weighted_s += WeightedSeconds(p.start, p.end, h.now);
  }
  r.components.uptime = r.scheduled_weighted_s > 0 ? r.up_weighted_s / r.scheduled_weighted_s : 1;
  double ok = 0, ended = 0;
  for (const JobEnd& j : h.jobs) {
    if (j.at < from || j.at > h.now || !JobCounts(j)) continue;
    ended += Weight(j.at, h.now);
    if (JobOk(j)) ok += Weight(j.at, h.now);
  }
  r.components.completion = Completion(ok, ended);
  if (!h.gpus.empty()) {
    double sum = 0;
    for (const GpuFacts& g : h.gpus) {
      sum +=
          GpuBenchmark(g.latest, Baseline(g.passing_scores), g.loaded_samples, g.throttled_samples);
    }
    r.components.benchmark = sum / static_cast<double>(h.gpus.size());
  }
  r.score = Score(r.components);
  r.scheduled_total = scheduled + h.scheduled_before_window;
  r.is_new = r.scheduled_total < kNewUntilScheduled;
  return r;
}

double ProviderScore(const std::vector<MachineScore>& machines) {
  double sum = 0, weight = 0;
  for (const MachineScore& m : machines) {
    const double w = std::max(1, m.gpus);
    sum += w * m.score;
    weight += w;
  }
  return weight > 0 ? sum / weight : 100;
}

}  // namespace gpunex::platform::reliability
