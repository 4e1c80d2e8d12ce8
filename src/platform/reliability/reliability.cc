#include "platform/reliability/reliability.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/log.h"
#include "platform/availability/availability_store.h"
#include "platform/benchmarks/benchmarks.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/history_store.h"
#include "platform/store/coordination.h"

namespace gpunex::platform::reliability {
namespace {

constexpr Duration kLateCommit = 10 * kOneMinute;  // how late a write may commit after its time
// Machines more than this behind are caught up options_.catch_up_days at a time.
constexpr Duration kCatchUpAlways = 6 * kOneHour;
constexpr int64_t kHourUs = int64_t{3600} * 1'000'000;
constexpr int64_t kMinuteUs = int64_t{60} * 1'000'000;
constexpr int64_t kDayUs = 24 * kHourUs;

int64_t HourOf(Timestamp t) {
  const int64_t us = ToUnixMicros(t);
  return us >= 0 ? us / kHourUs : (us - kHourUs + 1) / kHourUs;
}
Timestamp HourStart(int64_t hour) { return FromUnixMicros(hour * kHourUs); }
int64_t DayOf(Timestamp t) { return ToUnixMicros(t) / kDayUs; }
int64_t Cutoff(Timestamp now, Duration window) { return HourOf(now - window); }

std::optional<double> Ratio(int64_t up, int64_t scheduled) {
  if (scheduled <= 0) return std::nullopt;
  return static_cast<double>(up) / static_cast<double>(scheduled);
}

// How far a score (points) or the 30-day uptime (fraction) moves before the machine's
// offers are refreshed.
constexpr double kOfferScoreStep = 0.01;
constexpr double kOfferUptimeStep = 0.0001;

std::string Clock(Timestamp t) { return FormatRfc3339(t).substr(11, 5); }
std::string Day(Timestamp t) { return FormatRfc3339(t).substr(0, 10); }

std::string Span(Timestamp a, Timestamp b, bool ongoing) {
  if (ongoing) return "since " + Day(a) + " " + Clock(a) + " UTC (ongoing)";
  if (Day(a) == Day(b)) return Day(a) + " " + Clock(a) + "–" + Clock(b) + " UTC";
  return Day(a) + " " + Clock(a) + " – " + Day(b) + " " + Clock(b) + " UTC";
}

// x to `decimals` places (dividing, so that 0.3283 is the double nearest to it).
double Round(double x, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(x * scale) / scale;
}

}  // namespace

// What a refresh reads once for every machine.
struct Reliability::Inputs {
  std::map<std::string, fleet::MachineSummary> machines;
  std::map<std::string, availability::ScheduleRow> schedules;
  std::map<std::string, std::vector<Maintenance>> maintenance;
  std::map<std::string, std::vector<Interval>> online;
};

std::vector<std::string> Advice(const Components& c, bool is_new) {
  std::vector<std::string> out;
  if (is_new) {
    out.push_back("The score is provisional until the machine has had 24 hours of scheduled time.");
  }
  if (c.uptime < 0.99) {
    out.push_back(
        "Keep the agent online during your scheduled hours. Declare maintenance at least 24 h "
        "ahead: then up to 8 h in 30 days do not count. Narrow the schedule to the hours you "
        "can keep.");
  }
  if (c.completion < 0.95) {
    out.push_back(
        "Jobs ended by your side (agent lost, GPU lost, machine shut down) lower completion: "
        "check power, cooling, the network and the agent's logs.");
  }
  if (c.benchmark < 0.98) {
    out.push_back(
        "A GPU measures below its first benchmarks or throttles under load: check cooling, "
        "airflow and power limits, then ask for a benchmark re-run.");
  }
  out.push_back(
      "Recent events weigh most (a week-old event counts half), so the score recovers with "
      "steady uptime and completed jobs.");
  return out;
}

Reliability::Reliability(store::Database& db, availability::Availability& availability,
                         ReliabilityOptions options)
    : db_(db), options_(std::move(options)) {
  availability.OnScheduleChanging([this](store::Tx& tx, Timestamp now, const std::string& id) {
    return AccrueMachine(tx, now, id);
  });
}

std::vector<Interval> Reliability::Scheduled(const std::string& machine_id, Timestamp updated_at,
                                             const availability::Schedule& s, Timestamp from,
                                             Timestamp to) {
  if (s.always) return {{from, to}};
  MutexLock lock(&cache_mu_);
  auto it = schedules_.find(machine_id);
  if (it == schedules_.end() || it->second.updated_at != updated_at || from < it->second.from ||
      to > it->second.to) {
    CachedSchedule c{updated_at, from - kOneDay, to + kOneDay, {}};
    c.intervals = availability::ScheduledIntervals(s, c.from, c.to);
    it = schedules_.insert_or_assign(machine_id, std::move(c)).first;
  }
  return availability::Intersect(it->second.intervals, {{from, to}});
}

Status Reliability::Accrue(store::Tx& tx, Timestamp now, MachineState& m, const Inputs& in,
                           const Progress& progress) {
  Timestamp from = std::max(m.accrued_until, now - kWindow - kOneHour);
  if (from >= now) return Status::Ok();
  static const std::vector<Maintenance> kNone;
  auto mit = in.maintenance.find(m.machine_id);
  const std::vector<Maintenance>& windows = mit == in.maintenance.end() ? kNone : mit->second;
  Timestamp schedule_from = from;
  for (const Maintenance& w : windows) {
    if (w.end > from && w.start < now) schedule_from = std::min(schedule_from, w.start);
  }
  TimeFacts facts;
  auto sit = in.schedules.find(m.machine_id);
  if (sit == in.schedules.end()) {
    facts.schedule = {{schedule_from, now}};
  } else {
    facts.schedule =
        Scheduled(m.machine_id, sit->second.updated_at, sit->second.schedule, schedule_from, now);
  }
  if (auto oit = in.online.find(m.machine_id); oit != in.online.end()) facts.online = oit->second;
  facts.maintenance = windows;
  std::map<int64_t, HourRow> hours;
  for (const Piece& p : ClassifyTime(facts, from, now)) {
    if (!p.scheduled) continue;
    for (Timestamp a = p.start; a < p.end;) {
      const int64_t hour = HourOf(a);
      const Timestamp b = std::min(p.end, HourStart(hour + 1));
      HourRow& h = hours[hour];
      h.machine_id = m.machine_id;
      h.hour = hour;
      const int64_t us = ToUnixMicros(b) - ToUnixMicros(a);
      const double e = EpochWeightedSeconds(a, b, kEpoch);
      h.scheduled_us += us;
      h.scheduled_e += e;
      if (p.up) {
        h.up_us += us;
        h.up_e += e;
      }
      a = b;
    }
  }
  ReliabilityStore s(tx);
  for (const auto& [hour, h] : hours) {
    GPUNEX_RETURN_IF_ERROR(s.AddHour(h));
    m.scheduled_total_us += h.scheduled_us;
    if (hour >= progress.expired_month_hour) {
      m.scheduled_e += h.scheduled_e;
      m.up_e += h.up_e;
      m.month.scheduled_us += h.scheduled_us;
      m.month.up_us += h.up_us;
    }
    if (hour >= progress.expired_week_hour) {
      m.week.scheduled_us += h.scheduled_us;
      m.week.up_us += h.up_us;
    }
    if (hour >= progress.expired_day_hour) {
      m.day.scheduled_us += h.scheduled_us;
      m.day.up_us += h.up_us;
    }
  }
  m.accrued_until = now;
  return Status::Ok();
}

Status Reliability::Rescore(store::Tx& tx, Timestamp now, MachineState& m,
                            const std::vector<std::string>& present_gpus,
                            const std::vector<const GpuState*>& gpus, const std::string& name) {
  ReliabilityStore s(tx);
  std::map<std::string, const GpuState*> by_id;
  for (const GpuState* g : gpus) by_id[g->gpu_id] = g;
  const double k = 1 / EpochWeight(now, kEpoch);
  Components c;
  c.uptime = m.scheduled_e > 0 ? std::clamp(m.up_e / m.scheduled_e, 0.0, 1.0) : 1;
  c.completion = Completion(std::max(0.0, m.ok_e * k), std::max(0.0, m.ended_e * k));
  if (!present_gpus.empty()) {
    double sum = 0;
    for (const std::string& id : present_gpus) {
      auto it = by_id.find(id);
      sum += it == by_id.end() ? 1
                               : GpuBenchmark(it->second->latest, it->second->baseline,
                                              it->second->loaded_e, it->second->throttled_e);
    }
    c.benchmark = sum / static_cast<double>(present_gpus.size());
  }
  m.uptime = c.uptime;
  m.completion = c.completion;
  m.benchmark = c.benchmark;
  m.score = Score(c);
  m.is_new = m.scheduled_total_us < kNewUntilScheduled.count();
  m.gpus = static_cast<int64_t>(present_gpus.size());
  m.computed_at = now;
  // Daily history: the first refresh of a day records the score the previous day ended with.
  const int64_t today = DayOf(now);
  if (today > m.snapshot_day) {
    GPUNEX_RETURN_IF_ERROR(s.UpsertDay({m.machine_id, today - 1, m.score, m.is_new, m.gpus}));
    m.snapshot_day = today;
  }
  // The provider hears of a crossing of the threshold, once each way.
  std::optional<notify::Notice> notice;
  const std::string link = "/#/provider/performance?machine=" + m.machine_id;
  char score_text[32];
  std::snprintf(score_text, sizeof score_text, "%.1f", m.score);
  if (!m.is_new && !m.below_threshold && m.score < options_.threshold) {
    m.below_threshold = true;
    notice = notify::Notice{
        "reliability.low",
        "Reliability of " + name + " fell below " +
            std::to_string(static_cast<int>(options_.threshold)),
        "The reliability score of machine " + name + " is " + score_text +
            ". Customers see it, and offers rank lower with it. The Performance tab lists what "
            "lowered it and what raises it again.",
        link,
        true,
        "a machine's reliability fell below " +
            std::to_string(static_cast<int>(options_.threshold))};
  } else if (m.below_threshold && m.score >= options_.threshold + options_.recover_margin) {
    m.below_threshold = false;
    notice = notify::Notice{
        "reliability.recovered",
        "Reliability of " + name + " recovered",
        "The reliability score of machine " + name + " is back at " + score_text + ".",
        link,
        false,
        "a machine's reliability recovered"};
  }
  if (notice) {
    auto owner = accounts::LoadUser(tx, m.provider_id);
    if (owner.ok()) {
      GPUNEX_RETURN_IF_ERROR(notify::SendNotice(tx, now, {owner->id, owner->email, owner->name},
                                                *notice, options_.notices));
    } else if (owner.status().code() != StatusCode::kNotFound) {
      return owner.status();
    }
  }
  return Status::Ok();
}

Status Reliability::Refresh(store::Tx& tx, Timestamp now, const std::string& must,
                            int64_t* behind_out) {
  GPUNEX_RETURN_IF_ERROR(store::LockUntilCommit(tx, kScoresLockKey));
  ReliabilityStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Progress> loaded, s.LoadProgress());
  // The first refresh reads the window's workload endings and telemetry, and every score.
  Progress progress = loaded.value_or(
      Progress{now - kWindow, ToUnixMicros(now - kWindow) / kMinuteUs, Timestamp{},
               Cutoff(now, kOneDay), Cutoff(now, 7 * kOneDay), Cutoff(now, kWindow)});
  Inputs in;
  GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::MachineSummary> machines, fleet::MachineSummaries(tx));
  std::map<std::string, std::string> machine_of_gpu;
  for (fleet::MachineSummary& m : machines) {
    for (const std::string& g : m.gpu_ids) machine_of_gpu[g] = m.id;
    std::string id = m.id;
    in.machines.emplace(std::move(id), std::move(m));
  }
  // States, new machines' included.
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineState> states, s.MachinesAfter("", 1 << 30));
  std::map<std::string, MachineState> by_id;
  for (MachineState& m : states) {
    std::string id = m.machine_id;
    by_id.emplace(std::move(id), std::move(m));
  }
  for (const auto& [id, m] : in.machines) {
    if (by_id.count(id)) continue;
    MachineState st;
    st.machine_id = id;
    st.provider_id = m.provider_id;
    st.accrued_until = m.created_at;
    st.computed_at = now;
    st.snapshot_day = DayOf(m.created_at);
    GPUNEX_RETURN_IF_ERROR(s.InsertMachine(st));
    by_id.emplace(id, std::move(st));
  }

  std::set<std::string> touched;  // machines whose sums change here, besides their time
  // Workload endings, each counted once.
  GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::WorkloadEnding> endings,
                          fleet::WorkloadEndings(tx, progress.jobs_until - kLateCommit, now));
  for (const fleet::WorkloadEnding& e : endings) {
    auto it = by_id.find(e.machine_id);
    if (it == by_id.end()) continue;
    GPUNEX_ASSIGN_OR_RETURN(bool fresh,
                            s.InsertJob({e.workload_id, e.machine_id, e.at, e.party, e.reason}));
    const JobEnd job{e.at, e.party};
    if (!fresh || !JobCounts(job)) continue;
    HourRow h{e.machine_id, HourOf(e.at)};
    h.ended_e = EpochWeight(e.at, kEpoch);
    h.ok_e = JobOk(job) ? h.ended_e : 0;
    GPUNEX_RETURN_IF_ERROR(s.AddHour(h));
    if (h.hour >= progress.expired_month_hour) {
      it->second.ok_e += h.ok_e;
      it->second.ended_e += h.ended_e;
      touched.insert(e.machine_id);
    }
  }
  progress.jobs_until = now;

  // GPU states, read once; those changed here are written back.
  GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuState> stored_gpus, s.AllGpus());
  std::map<std::string, GpuState> gpus;
  for (GpuState& g : stored_gpus) {
    std::string id = g.gpu_id;
    gpus.emplace(std::move(id), std::move(g));
  }
  std::set<std::string> changed_gpus;
  auto gpu_state = [&](const std::string& gpu_id) -> StatusOr<GpuState*> {
    changed_gpus.insert(gpu_id);
    auto it = gpus.find(gpu_id);
    if (it != gpus.end()) return &it->second;
    GpuState st;
    st.gpu_id = gpu_id;
    if (auto mit = machine_of_gpu.find(gpu_id); mit != machine_of_gpu.end())
      st.machine_id = mit->second;
    return &gpus.emplace(gpu_id, std::move(st)).first->second;
  };
  GPUNEX_ASSIGN_OR_RETURN(
      std::vector<benchmarks::ScoreSample> scores,
      benchmarks::ScoreHistory(tx, "", progress.benchmarks_until - kLateCommit));
  std::map<std::string, std::vector<const benchmarks::ScoreSample*>> scores_by_gpu;
  for (const auto& sample : scores) scores_by_gpu[sample.gpu_id].push_back(&sample);
  for (const auto& [gpu_id, samples] : scores_by_gpu) {
    GPUNEX_ASSIGN_OR_RETURN(GpuState * g, gpu_state(gpu_id));
    std::vector<double> passing;
    for (const auto* sample : samples) {
      if (sample->passed) passing.push_back(sample->score);
    }
    g->baseline = Baseline(passing);
    g->latest = samples.back()->score;
    g->latest_at = samples.back()->at;
  }
  progress.benchmarks_until = now;

  // Telemetry under load, whole minutes only.
  const int64_t complete_minute = ToUnixMicros(now) / kMinuteUs - 1;
  if (complete_minute > progress.telemetry_minute) {
    GPUNEX_ASSIGN_OR_RETURN(
        std::vector<fleet::LoadedSamples> samples,
        fleet::LoadedSamplesBetween(tx, progress.telemetry_minute, complete_minute));
    std::map<std::pair<std::string, int64_t>, GpuHourRow> gpu_hours;
    for (const fleet::LoadedSamples& x : samples) {
      auto mit = machine_of_gpu.find(x.gpu_id);
      if (mit == machine_of_gpu.end()) continue;
      const Timestamp mid = FromUnixMicros(x.minute * kMinuteUs + kMinuteUs / 2);
      const double w = EpochWeight(mid, kEpoch);
      GpuHourRow& h = gpu_hours[{x.gpu_id, HourOf(mid)}];
      h.gpu_id = x.gpu_id;
      h.machine_id = mit->second;
      h.hour = HourOf(mid);
      h.loaded_e += static_cast<double>(x.loaded) * w;
      h.throttled_e += static_cast<double>(x.throttled) * w;
    }
    for (const auto& [key, h] : gpu_hours) {
      GPUNEX_RETURN_IF_ERROR(s.AddGpuHour(h));
      if (h.hour < progress.expired_month_hour) continue;
      GPUNEX_ASSIGN_OR_RETURN(GpuState * g, gpu_state(h.gpu_id));
      g->loaded_e += h.loaded_e;
      g->throttled_e += h.throttled_e;
    }
    progress.telemetry_minute = complete_minute;
  }

  // Hours leaving the windows.
  auto expire = [&](int64_t& mark, Duration window, bool month) -> Status {
    const int64_t cut = Cutoff(now, window);
    if (cut <= mark) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(std::vector<HourRow> rows, s.HoursBetween(mark, cut));
    for (const HourRow& h : rows) {
      auto it = by_id.find(h.machine_id);
      if (it == by_id.end()) continue;
      MachineState& m = it->second;
      touched.insert(h.machine_id);
      WindowSums& w = window == kOneDay ? m.day : (month ? m.month : m.week);
      w.scheduled_us -= h.scheduled_us;
      w.up_us -= h.up_us;
      if (month) {
        m.scheduled_e -= h.scheduled_e;
        m.up_e -= h.up_e;
        m.ok_e -= h.ok_e;
        m.ended_e -= h.ended_e;
      }
    }
    if (month) {
      GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuHourRow> grows, s.GpuHoursBetween(mark, cut));
      for (const GpuHourRow& h : grows) {
        GPUNEX_ASSIGN_OR_RETURN(GpuState * g, gpu_state(h.gpu_id));
        g->loaded_e = std::max(0.0, g->loaded_e - h.loaded_e);
        g->throttled_e = std::max(0.0, g->throttled_e - h.throttled_e);
      }
      GPUNEX_RETURN_IF_ERROR(s.DeleteHoursBefore(cut));
    }
    mark = cut;
    return Status::Ok();
  };
  GPUNEX_RETURN_IF_ERROR(expire(progress.expired_day_hour, kOneDay, false));
  GPUNEX_RETURN_IF_ERROR(expire(progress.expired_week_hour, 7 * kOneDay, false));
  GPUNEX_RETURN_IF_ERROR(expire(progress.expired_month_hour, kWindow, true));
  for (const std::string& id : changed_gpus) {
    const GpuState& g = gpus.at(id);
    if (g.machine_id.empty()) continue;
    GPUNEX_RETURN_IF_ERROR(s.UpsertGpu(g));
    touched.insert(g.machine_id);
  }
  std::map<std::string, std::vector<const GpuState*>> gpus_of_machine;
  for (const auto& [id, g] : gpus) gpus_of_machine[g.machine_id].push_back(&g);

  // Time, for every machine; machines far behind (a first refresh over an existing fleet)
  // a few at a time, so that no transaction holds the writer for long.
  Duration budget = options_.catch_up_days * kOneDay;
  std::set<std::string> later;
  for (auto& [id, m] : by_id) {
    const Duration behind = now - std::max(m.accrued_until, now - kWindow - kOneHour);
    if (behind <= kCatchUpAlways || id == must) continue;
    if (budget > Duration{0}) {
      budget -= behind;
    } else {
      later.insert(id);
    }
  }
  *behind_out = static_cast<int64_t>(later.size());
  Timestamp earliest = now;
  for (const auto& [id, m] : by_id) {
    if (!later.count(id)) earliest = std::min(earliest, m.accrued_until);
  }
  earliest = std::max(earliest, now - kWindow - kOneHour);
  GPUNEX_ASSIGN_OR_RETURN(in.schedules, availability::AvailabilityStore(tx).AllSchedules());
  GPUNEX_ASSIGN_OR_RETURN(std::vector<availability::MaintenanceRow> windows,
                          availability::AvailabilityStore(tx).MaintenanceOverlapping(
                              "", earliest - kAllowancePeriod - 7 * kOneDay, now));
  for (const auto& w : windows) {
    in.maintenance[w.machine_id].push_back({w.id, w.start, w.end, w.declared_at});
  }
  GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::OnlineSpan> spans,
                          fleet::OnlineSpansSince(tx, earliest));
  for (const fleet::OnlineSpan& sp : spans) {
    in.online[sp.machine_id].push_back({sp.start, sp.end.value_or(now)});
  }
  static const std::vector<const GpuState*> kNoGpus;
  for (auto& [id, m] : by_id) {
    auto mit = in.machines.find(id);
    if (mit == in.machines.end()) continue;  // gone
    if (later.count(id)) continue;
    // Done by an earlier round of this refresh, and nothing added since.
    if (!touched.count(id) && m.accrued_until >= now && m.computed_at >= now) continue;
    const OfferScore before{m.score, m.is_new, Ratio(m.month.up_us, m.month.scheduled_us)};
    GPUNEX_RETURN_IF_ERROR(Accrue(tx, now, m, in, progress));
    auto git = gpus_of_machine.find(id);
    GPUNEX_RETURN_IF_ERROR(Rescore(tx, now, m, mit->second.gpu_ids,
                                   git == gpus_of_machine.end() ? kNoGpus : git->second,
                                   mit->second.name));
    m.provider_id = mit->second.provider_id;
    GPUNEX_RETURN_IF_ERROR(s.UpdateMachine(m));
    // The marketplace shows the score and uptime: its offers change when they moved
    // visibly (the decay moves every score a little at every refresh).
    const std::optional<double> uptime = Ratio(m.month.up_us, m.month.scheduled_us);
    if (before.is_new != m.is_new || std::abs(before.score - m.score) >= kOfferScoreStep ||
        before.uptime_30d.has_value() != uptime.has_value() ||
        (uptime && std::abs(*before.uptime_30d - *uptime) >= kOfferUptimeStep)) {
      GPUNEX_RETURN_IF_ERROR(fleet::TouchOffers(tx, now, id));
    }
  }
  return s.SaveProgress(progress);
}

Status Reliability::RefreshOnce() {
  const Timestamp now = options_.clock->Now();
  // A transaction at a time until no machine is left behind.
  for (int round = 0;; ++round) {
    int64_t behind = 0;
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) {
      behind = 0;
      return Refresh(tx, now, "", &behind);
    }));
    if (behind == 0) {
      if (round > 0) LogInfo("reliability.caught_up", {{"transactions", round + 1}});
      return Status::Ok();
    }
    if (round % 20 == 0) LogInfo("reliability.catching_up", {{"machines_left", behind}});
  }
}

Status Reliability::AccrueMachine(store::Tx& tx, Timestamp now, const std::string& machine_id) {
  GPUNEX_RETURN_IF_ERROR(store::LockUntilCommit(tx, kScoresLockKey));
  ReliabilityStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineState> m, s.FindMachine(machine_id));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Progress> progress, s.LoadProgress());
  if (!progress) {
    // Nothing accounted yet (the very first refresh): a whole refresh, once.
    int64_t behind = 0;
    return Refresh(tx, now, machine_id, &behind);
  }
  if (!m) {
    // A machine the refresher has not met yet (a new one saying hello): its state starts
    // when it came, as Refresh would start it, and only its own time is accounted here.
    GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> machine,
                            fleet::LoadMachine(tx, machine_id));
    if (!machine) return Status::Ok();
    MachineState st;
    st.machine_id = machine_id;
    st.provider_id = machine->provider_id;
    st.accrued_until = machine->created_at;
    st.computed_at = now;
    st.snapshot_day = DayOf(machine->created_at);
    GPUNEX_RETURN_IF_ERROR(s.InsertMachine(st));
    m = std::move(st);
  }
  if (m->accrued_until >= now) return Status::Ok();
  // Only this machine's time, in the caller's transaction; its score follows at the next
  // refresh, which the schedule change wakes.
  Inputs in;
  GPUNEX_ASSIGN_OR_RETURN(std::optional<availability::ScheduleRow> row,
                          availability::AvailabilityStore(tx).FindSchedule(machine_id));
  if (row) in.schedules.emplace(machine_id, std::move(*row));
  const Timestamp from = std::max(m->accrued_until, now - kWindow - kOneHour);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<availability::MaintenanceRow> windows,
                          availability::AvailabilityStore(tx).MaintenanceOverlapping(
                              machine_id, from - kAllowancePeriod - 7 * kOneDay, now));
  for (const auto& w : windows) {
    in.maintenance[machine_id].push_back({w.id, w.start, w.end, w.declared_at});
  }
  GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::OnlineSpan> spans,
                          fleet::OnlineSpansSince(tx, from, machine_id));
  for (const auto& sp : spans) in.online[machine_id].push_back({sp.start, sp.end.value_or(now)});
  GPUNEX_RETURN_IF_ERROR(Accrue(tx, now, *m, in, *progress));
  return s.UpdateMachine(*m);
}

StatusOr<std::string> Reliability::ChangeMark(store::Tx& tx) {
  // What the scores are computed from, each folder's own mark of its tables.
  GPUNEX_ASSIGN_OR_RETURN(std::string fleet, fleet::HistoryMark(tx));
  GPUNEX_ASSIGN_OR_RETURN(std::string benchmarks, benchmarks::BenchmarksStore(tx).ChangeMark());
  GPUNEX_ASSIGN_OR_RETURN(std::string schedules, availability::AvailabilityStore(tx).ChangeMark());
  return fleet + benchmarks + schedules;
}

void Reliability::ScheduleOn(Background& background) {
  background.Add({.name = "reliability.refresh",
                  .every = std::chrono::milliseconds(options_.poll_ms),
                  .pass = [this] { return RefreshIfDue(); }});
}

Status Reliability::RefreshIfDue() {
  MutexLock lock(&due_mu_);
  std::string mark;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(mark, ChangeMark(tx));
    return Status::Ok();
  }));
  const Timestamp now = options_.clock->Now();
  if (mark == last_mark_ && now - last_full_ < std::chrono::milliseconds(options_.refresh_ms)) {
    return Status::Ok();
  }
  GPUNEX_RETURN_IF_ERROR(RefreshOnce());
  last_mark_ = mark;
  last_full_ = now;
  return Status::Ok();
}

// ---------------------------------------------------------------- reading

StatusOr<std::vector<ReliabilityEvent>> Reliability::Events(store::Tx& tx, Timestamp now,
                                                            const MachineState& m,
                                                            Timestamp created_at) {
  std::vector<ReliabilityEvent> out;
  const Timestamp from = std::max(now - kWindow, created_at);
  const Components c{m.uptime, m.completion, m.benchmark};
  const double score = Score(c);
  // Outages: unplanned down time inside the schedule.
  GPUNEX_ASSIGN_OR_RETURN(availability::Schedule schedule,
                          availability::ScheduleOf(tx, m.machine_id));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<availability::MaintenanceRow> windows,
                          availability::AvailabilityStore(tx).MaintenanceOverlapping(
                              m.machine_id, from - kAllowancePeriod - 7 * kOneDay, now));
  TimeFacts facts;
  Timestamp schedule_from = from;
  for (const auto& w : windows) {
    facts.maintenance.push_back({w.id, w.start, w.end, w.declared_at});
    schedule_from = std::min(schedule_from, w.start);
  }
  facts.schedule = availability::ScheduledIntervals(schedule, schedule_from, now);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::OnlineSpan> spans,
                          fleet::OnlineSpansSince(tx, from, m.machine_id));
  for (const auto& sp : spans) facts.online.push_back({sp.start, sp.end.value_or(now)});
  const std::vector<Piece> pieces = ClassifyTime(facts, from, now);
  for (size_t i = 0; i < pieces.size();) {
    if (!pieces[i].scheduled || pieces[i].up) {
      ++i;
      continue;
    }
    // A run of down pieces, joined across stretches outside the schedule that it spans.
    const bool maintenance = pieces[i].maintenance;
    Timestamp a = pieces[i].start, b = pieces[i].end;
    double e = EpochWeightedSeconds(a, b, kEpoch);
    int64_t down_us = ToUnixMicros(b) - ToUnixMicros(a);
    size_t j = i + 1;
    for (; j < pieces.size() && pieces[j].scheduled && !pieces[j].up &&
           pieces[j].maintenance == maintenance;
         ++j) {
      b = pieces[j].end;
      e += EpochWeightedSeconds(pieces[j].start, pieces[j].end, kEpoch);
      down_us += ToUnixMicros(pieces[j].end) - ToUnixMicros(pieces[j].start);
    }
    i = j;
    const bool ongoing = b >= now;
    Components better = c;
    if (m.scheduled_e > 0) better.uptime = std::min(1.0, (m.up_e + e) / m.scheduled_e);
    ReliabilityEvent ev;
    ev.at = a;
    ev.kind = ReliabilityEventKind::kOutage;
    ev.description = (maintenance ? "Maintenance counted as downtime (declared less than 24 h "
                                    "ahead, or beyond the 8 h allowance) "
                                  : "Offline ") +
                     Span(a, b, ongoing) + " during scheduled time";
    ev.duration_s = (down_us + 500'000) / 1'000'000;
    ev.weight = Weight(a + (b - a) / 2, now);
    ev.impact = score - Score(better);
    ev.machine_id = m.machine_id;
    ev.key = "outage:" + std::to_string(ToUnixMicros(a));
    out.push_back(std::move(ev));
  }
  // Jobs ended by the provider's side.
  ReliabilityStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<JobRow> jobs, s.JobsOf(m.machine_id, from));
  const double k = 1 / EpochWeight(now, kEpoch);
  for (const JobRow& j : jobs) {
    if (j.party != fleet::EndParty::kProvider) continue;
    const double w = Weight(j.at, now);
    Components better = c;
    better.completion = Completion(m.ok_e * k + w, m.ended_e * k);
    ReliabilityEvent ev;
    ev.at = j.at;
    ev.kind = ReliabilityEventKind::kJobEnded;
    ev.description = "Workload " + j.workload_id + " ended on your side (" +
                     (j.reason.empty() ? std::string("provider fault") : j.reason) + ")";
    ev.weight = w;
    ev.impact = score - Score(better);
    ev.machine_id = m.machine_id;
    ev.key = "job:" + j.workload_id;
    out.push_back(std::move(ev));
  }
  // GPUs below their baseline or throttling.
  GPUNEX_ASSIGN_OR_RETURN(std::vector<GpuState> gpus, s.GpusOf(m.machine_id));
  const double n = std::max<double>(1, static_cast<double>(m.gpus));
  for (const GpuState& g : gpus) {
    const double part = GpuBenchmark(g.latest, g.baseline, g.loaded_e, g.throttled_e);
    if (g.latest && g.baseline && *g.latest < *g.baseline && g.latest_at) {
      const double ratio = *g.latest / *g.baseline;
      Components better = c;
      better.benchmark = std::min(
          1.0,
          c.benchmark +
              (GpuBenchmark(std::nullopt, std::nullopt, g.loaded_e, g.throttled_e) - part) / n);
      char text[160];
      std::snprintf(text, sizeof text,
                    "GPU benchmarked at %.1f, %.0f %% of its baseline %.1f (median of its first "
                    "passing runs)",
                    *g.latest, ratio * 100, *g.baseline);
      ReliabilityEvent ev;
      ev.at = *g.latest_at;
      ev.kind = ReliabilityEventKind::kBenchmarkDegraded;
      ev.description = text;
      ev.weight = 1;
      ev.impact = score - Score(better);
      ev.machine_id = m.machine_id;
      ev.gpu_id = g.gpu_id;
      ev.key = "bench:" + g.gpu_id;
      out.push_back(std::move(ev));
    }
    if (g.loaded_e > 0 && g.throttled_e > 0) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<int64_t> last, s.LastThrottledHour(g.gpu_id));
      Components better = c;
      better.benchmark =
          std::min(1.0, c.benchmark + (GpuBenchmark(g.latest, g.baseline, 0, 0) - part) / n);
      char text[160];
      std::snprintf(text, sizeof text,
                    "GPU throttled (thermal or power) in %.1f %% of its samples under load",
                    100 * g.throttled_e / g.loaded_e);
      ReliabilityEvent ev;
      ev.at = last ? HourStart(*last) : now;
      ev.kind = ReliabilityEventKind::kThrottling;
      ev.description = text;
      ev.weight = 1;
      ev.impact = score - Score(better);
      ev.machine_id = m.machine_id;
      ev.gpu_id = g.gpu_id;
      ev.key = "throttle:" + g.gpu_id;
      out.push_back(std::move(ev));
    }
  }
  for (ReliabilityEvent& ev : out) {
    ev.impact = Round(ev.impact, 2);
    ev.weight = Round(ev.weight, 4);
  }
  return out;
}

namespace {

// Newest first, then by key; one page after the cursor (at, key).
StatusOr<Page<ReliabilityEvent>> PageOf(std::vector<ReliabilityEvent> events,
                                        const PageRequest& page) {
  std::sort(events.begin(), events.end(), [](const ReliabilityEvent& a, const ReliabilityEvent& b) {
    return a.at > b.at || (a.at == b.at && a.key > b.key);
  });
  size_t start = 0;
  if (page.after) {
    const auto& parts = page.after->parts();
    if (parts.size() != 2 || !std::holds_alternative<int64_t>(parts[0]) ||
        !std::holds_alternative<std::string>(parts[1])) {
      return FieldError("cursor", "is not a cursor of this list");
    }
    const Timestamp at = FromUnixMicros(std::get<int64_t>(parts[0]));
    const std::string& key = std::get<std::string>(parts[1]);
    while (start < events.size() &&
           (events[start].at > at || (events[start].at == at && events[start].key >= key))) {
      ++start;
    }
  }
  Page<ReliabilityEvent> out;
  for (size_t i = start; i < events.size() && out.items.size() < static_cast<size_t>(page.limit);
       ++i) {
    out.items.push_back(events[i]);
  }
  if (start + out.items.size() < events.size() && !out.items.empty()) {
    out.next = Cursor({ToUnixMicros(out.items.back().at), out.items.back().key});
  }
  return out;
}

int64_t Outages(const std::vector<ReliabilityEvent>& events, int64_t* total_s) {
  int64_t n = 0;
  *total_s = 0;
  for (const auto& e : events) {
    if (e.kind != ReliabilityEventKind::kOutage) continue;
    ++n;
    *total_s += e.duration_s.value_or(0);
  }
  return n;
}

}  // namespace

StatusOr<std::optional<OfferScore>> OfferScoreOf(store::Tx& tx, const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineState> m,
                          ReliabilityStore(tx).FindMachine(machine_id));
  if (!m) return std::optional<OfferScore>();
  return std::optional<OfferScore>(
      OfferScore{m->score, m->is_new, Ratio(m->month.up_us, m->month.scheduled_us)});
}

StatusOr<ReliabilityView> Reliability::ForMachine(const accounts::Principal& p,
                                                  const std::string& machine_id,
                                                  const PageRequest& events_page) {
  const Timestamp now = options_.clock->Now();
  ReliabilityView v;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        fleet::MachineOwner owner,
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kRead));
    ReliabilityStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MachineState> found, s.FindMachine(machine_id));
    v = ReliabilityView();
    v.machine_id = machine_id;
    v.threshold = options_.threshold;
    v.computed_at = now;
    if (!found) {
      v.advice = Advice(v.components, true);
      v.history.push_back({DayOf(now), v.score, true});
      return Status::Ok();
    }
    const MachineState& m = *found;
    v.score = Round(m.score, 2);
    v.is_new = m.is_new;
    v.components = {Round(m.uptime, 4), Round(m.completion, 4), Round(m.benchmark, 4)};
    v.uptime_24h = Ratio(m.day.up_us, m.day.scheduled_us);
    v.uptime_7d = Ratio(m.week.up_us, m.week.scheduled_us);
    v.uptime_30d = Ratio(m.month.up_us, m.month.scheduled_us);
    v.scheduled_hours = Round(static_cast<double>(m.scheduled_total_us) / kHourUs, 2);
    v.computed_at = m.computed_at;
    GPUNEX_ASSIGN_OR_RETURN(std::vector<ReliabilityEvent> events,
                            Events(tx, now, m, owner.created_at));
    v.outages = Outages(events, &v.outage_s);
    GPUNEX_ASSIGN_OR_RETURN(v.events, PageOf(std::move(events), events_page));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<DayRow> days, s.DaysOf(machine_id, DayOf(now) - 30));
    for (const DayRow& d : days) v.history.push_back({d.day, Round(d.score, 2), d.is_new});
    v.history.push_back({DayOf(now), v.score, v.is_new});
    v.advice =
        Advice(m.is_new ? Components{} : Components{m.uptime, m.completion, m.benchmark}, m.is_new);
    return Status::Ok();
  }));
  return v;
}

StatusOr<ReliabilityView> Reliability::ForProvider(const accounts::Principal& p,
                                                   const PageRequest& events_page) {
  if (!p.user.HasRole(accounts::kRoleProvider))
    return PermissionDenied("only providers have a reliability score");
  const Timestamp now = options_.clock->Now();
  ReliabilityView v;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    ReliabilityStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::MachineSummary> machines,
                            fleet::MachineSummaries(tx, p.user.id));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<MachineState> states, s.MachinesOf(p.user.id));
    std::map<std::string, const MachineState*> state_of;
    for (const MachineState& m : states) state_of[m.machine_id] = &m;
    v = ReliabilityView();
    v.threshold = options_.threshold;
    v.computed_at = now;
    std::vector<MachineScore> scores;
    std::vector<ReliabilityEvent> events;
    std::map<int64_t, std::pair<double, double>> days;  // day → (Σ gpus·score, Σ gpus)
    std::map<int64_t, bool> days_new;
    double weight_sum = 0;
    Components c{0, 0, 0};
    WindowSums day, week, month;
    bool all_new = true;
    int64_t scheduled_us = 0;
    for (const fleet::MachineSummary& ms : machines) {
      MachineLine line;
      line.machine_id = ms.id;
      line.name = ms.name;
      line.gpus = static_cast<int64_t>(ms.gpu_ids.size());
      auto it = state_of.find(ms.id);
      if (it != state_of.end()) {
        const MachineState& m = *it->second;
        line.score = Round(m.score, 2);
        line.is_new = m.is_new;
        line.components = {Round(m.uptime, 4), Round(m.completion, 4), Round(m.benchmark, 4)};
        line.uptime_30d = Ratio(m.month.up_us, m.month.scheduled_us);
        all_new &= m.is_new;
        const double w = std::max<double>(1, static_cast<double>(ms.gpu_ids.size()));
        c.uptime += w * m.uptime;
        c.completion += w * m.completion;
        c.benchmark += w * m.benchmark;
        weight_sum += w;
        scores.push_back({m.score, static_cast<int>(ms.gpu_ids.size())});
        for (auto [sum, part] : {std::pair{&day, &m.day}, {&week, &m.week}, {&month, &m.month}}) {
          sum->scheduled_us += part->scheduled_us;
          sum->up_us += part->up_us;
        }
        scheduled_us += m.scheduled_total_us;
        GPUNEX_ASSIGN_OR_RETURN(std::vector<ReliabilityEvent> mine,
                                Events(tx, now, m, ms.created_at));
        events.insert(events.end(), mine.begin(), mine.end());
        GPUNEX_ASSIGN_OR_RETURN(std::vector<DayRow> rows, s.DaysOf(ms.id, DayOf(now) - 30));
        for (const DayRow& d : rows) {
          const double dw = std::max<double>(1, static_cast<double>(d.gpus));
          days[d.day].first += dw * d.score;
          days[d.day].second += dw;
          auto [pos, inserted] = days_new.emplace(d.day, d.is_new);
          if (!inserted) pos->second = pos->second && d.is_new;
        }
      }
      v.machines.push_back(std::move(line));
    }
    if (weight_sum > 0) {
      v.components = {Round(c.uptime / weight_sum, 4), Round(c.completion / weight_sum, 4),
                      Round(c.benchmark / weight_sum, 4)};
    }
    v.score = Round(ProviderScore(scores), 2);
    v.is_new = all_new;
    v.uptime_24h = Ratio(day.up_us, day.scheduled_us);
    v.uptime_7d = Ratio(week.up_us, week.scheduled_us);
    v.uptime_30d = Ratio(month.up_us, month.scheduled_us);
    v.scheduled_hours = Round(static_cast<double>(scheduled_us) / kHourUs, 2);
    v.outages = Outages(events, &v.outage_s);
    GPUNEX_ASSIGN_OR_RETURN(v.events, PageOf(std::move(events), events_page));
    for (const auto& [d, sums] : days) {
      v.history.push_back({d, Round(sums.first / sums.second, 2), days_new[d]});
    }
    v.history.push_back({DayOf(now), v.score, v.is_new});
    v.advice = Advice(v.components, v.is_new);
    return Status::Ok();
  }));
  return v;
}

}  // namespace gpunex::platform::reliability
