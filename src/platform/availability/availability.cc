#include "platform/availability/availability.h"

#include <algorithm>

#include "common/ids.h"
#include "common/invariant.h"
#include "common/log.h"
#include "platform/applications/applications.h"
#include "platform/fleet/history_store.h"

namespace gpunex::platform::availability {
namespace {

// Facts are decided again at least this often, whatever the schedule says.
constexpr Duration kMaxCheckInterval = kOneDay;

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](unsigned char c) { return (c < 0x20 && c != '\n') || c == 0x7F; });
}

std::string Trimmed(std::string s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

FieldErrors CheckSchedule(const Schedule& s) {
  FieldErrors errors;
  applications::ValidateAvailability(s, "schedule", &errors);
  return errors;
}

}  // namespace

MaintenanceWindow ViewOf(MaintenanceRow row, Timestamp now) {
  MaintenanceWindow w;
  w.planned = row.start - row.declared_at >= 24 * kOneHour;
  if (row.cancelled_at) {
    w.state = MaintenanceState::kCancelled;
  } else if (now < row.start) {
    w.state = MaintenanceState::kUpcoming;
  } else if (now < row.end) {
    w.state = MaintenanceState::kActive;
  } else {
    w.state = MaintenanceState::kEnded;
  }
  w.row = std::move(row);
  return w;
}

StatusOr<Schedule> ScheduleOf(store::Tx& tx, const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ScheduleRow> row,
                          AvailabilityStore(tx).FindSchedule(machine_id));
  return row ? row->schedule : Schedule{};
}

Status DecideFacts(store::Tx& tx, Timestamp now, const std::string& machine_id) {
  AvailabilityStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(Schedule schedule, ScheduleOf(tx, machine_id));
  const ScheduleState st = StateAt(schedule, now);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<MaintenanceRow> windows,
                          s.MaintenanceOverlapping(machine_id, now, now + kMaxCheckInterval));
  fleet::AvailabilityFacts facts;
  facts.inside_schedule = st.inside;
  if (!st.inside) facts.opens_at = st.next_change;
  Timestamp next = now + kMaxCheckInterval;
  if (st.next_change) next = std::min(next, *st.next_change);
  for (const MaintenanceRow& w : windows) {
    if (w.start <= now && now < w.end) facts.in_maintenance = true;
    if (w.start > now) next = std::min(next, w.start);
    if (w.end > now) next = std::min(next, w.end);
  }
  GPUNEX_RETURN_IF_ERROR(fleet::ReportAvailabilityFacts(tx, now, machine_id, facts));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<ScheduleRow> row, s.FindSchedule(machine_id));
  if (!row) {
    return s.UpsertSchedule(
        {machine_id, Schedule{}, ScheduleSource::kDefault, now, std::nullopt, next});
  }
  return s.SetNextCheck(machine_id, next);
}

Availability::Availability(store::Database& db, fleet::Fleet& fleet, AvailabilityOptions options)
    : db_(db), options_(std::move(options)) {
  fleet.OnHello([this](store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello) {
    return OnHello(tx, now, hello);
  });
}

void Availability::OnMaintenanceDeclared(MaintenanceHook hook) {
  declared_hooks_.push_back(std::move(hook));
}

void Availability::OnScheduleChanging(ScheduleHook hook) {
  schedule_hooks_.push_back(std::move(hook));
}

Status Availability::OnHello(store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello) {
  if (!hello.registered) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m,
                          fleet::LoadMachine(tx, hello.machine_id));
  if (!m) return Status::Ok();
  std::string model;
  for (const auto& g : m->gpus) {
    if (g.present && !g.catalog_id.empty()) {
      model = g.catalog_id;
      break;
    }
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Schedule> from_app,
                          applications::ApprovedAvailability(tx, m->provider_id, model));
  Schedule schedule;
  ScheduleSource source = ScheduleSource::kDefault;
  // An application accepted before machine schedules existed might hold a window this
  // release refuses; such a schedule is not taken over.
  if (from_app && CheckSchedule(*from_app).empty()) {
    schedule = applications::NormalizeAvailability(std::move(*from_app));
    source = ScheduleSource::kApplication;
  }
  return WriteSchedule(tx, now, hello.machine_id, schedule, source, std::nullopt);
}

Status Availability::WriteSchedule(store::Tx& tx, Timestamp now, const std::string& machine_id,
                                   const Schedule& schedule, ScheduleSource source,
                                   const std::optional<std::string>& by) {
  for (const ScheduleHook& hook : schedule_hooks_)
    GPUNEX_RETURN_IF_ERROR(hook(tx, now, machine_id));
  GPUNEX_RETURN_IF_ERROR(
      AvailabilityStore(tx).UpsertSchedule({machine_id, schedule, source, now, by, now}));
  return DecideFacts(tx, now, machine_id);
}

StatusOr<MachineAvailability> Availability::Get(const accounts::Principal& p,
                                                const std::string& machine_id) {
  const Timestamp now = options_.clock->Now();
  MachineAvailability out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kRead).status());
    AvailabilityStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<ScheduleRow> row, s.FindSchedule(machine_id));
    out = MachineAvailability();
    out.machine_id = machine_id;
    if (row) {
      out.schedule = row->schedule;
      out.source = row->source;
      out.updated_at = row->updated_at;
    } else {
      out.source = ScheduleSource::kDefault;
    }
    const ScheduleState st = StateAt(out.schedule, now);
    out.inside_schedule = st.inside;
    out.next_change_at = st.next_change;
    out.upcoming = ScheduledIntervals(out.schedule, now, now + 7 * kOneDay);
    if (out.upcoming.size() > kMaxUpcomingIntervals) out.upcoming.resize(kMaxUpcomingIntervals);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<MaintenanceRow> active,
                            s.MaintenanceOverlapping(machine_id, now, now + Duration(1)));
    out.in_maintenance = !active.empty();
    return Status::Ok();
  }));
  return out;
}

StatusOr<MachineAvailability> Availability::SetSchedule(const accounts::Principal& p,
                                                        const std::string& machine_id,
                                                        Schedule schedule) {
  const Timestamp now = options_.clock->Now();
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kChange).status());
    if (FieldErrors e = CheckSchedule(schedule); !e.empty()) return ValidationFailed(e);
    GPUNEX_RETURN_IF_ERROR(WriteSchedule(tx, now, machine_id,
                                         applications::NormalizeAvailability(schedule),
                                         ScheduleSource::kProvider, p.user.id));
    return accounts::Audit(tx, now, p.user.id, "machine.schedule_set", machine_id, p.ip);
  }));
  return Get(p, machine_id);
}

StatusOr<int64_t> Availability::SetScheduleForAll(const accounts::Principal& p, Schedule schedule) {
  const Timestamp now = options_.clock->Now();
  if (FieldErrors e = CheckSchedule(schedule); !e.empty()) return ValidationFailed(e);
  int64_t count = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<fleet::MachineSummary> machines,
                            fleet::MachineSummaries(tx, p.user.id));
    count = static_cast<int64_t>(machines.size());
    const Schedule normal = applications::NormalizeAvailability(schedule);
    for (const fleet::MachineSummary& m : machines) {
      GPUNEX_RETURN_IF_ERROR(
          WriteSchedule(tx, now, m.id, normal, ScheduleSource::kProvider, p.user.id));
    }
    return accounts::Audit(tx, now, p.user.id, "machine.schedule_set_all",
                           std::to_string(count) + " machines", p.ip);
  }));
  return count;
}

StatusOr<Page<MaintenanceWindow>> Availability::ListMaintenance(const accounts::Principal& p,
                                                                const std::string& machine_id,
                                                                const PageRequest& page) {
  const Timestamp now = options_.clock->Now();
  Page<MaintenanceWindow> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kRead).status());
    GPUNEX_ASSIGN_OR_RETURN(Page<MaintenanceRow> rows,
                            AvailabilityStore(tx).ListMaintenance(machine_id, page));
    out = {};
    for (MaintenanceRow& r : rows.items) out.items.push_back(ViewOf(std::move(r), now));
    out.next = std::move(rows.next);
    return Status::Ok();
  }));
  return out;
}

StatusOr<MaintenanceWindow> Availability::Declare(const accounts::Principal& p,
                                                  const std::string& machine_id,
                                                  const DeclareMaintenanceRequest& req) {
  const Timestamp now = options_.clock->Now();
  MaintenanceRow row;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        fleet::MachineOwner owner,
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kChange));
    AvailabilityStore s(tx);
    FieldErrors e;
    if (!req.start) {
      e.emplace("start", "is required");
    } else if (*req.start < now) {
      e.emplace("start", "must not be in the past");
    } else if (*req.start > now + kMaxMaintenanceAhead) {
      e.emplace("start", "must be at most 90 days ahead");
    }
    if (!req.end) {
      e.emplace("end", "is required");
    } else if (req.start && *req.end <= *req.start) {
      e.emplace("end", "must be after start");
    } else if (req.start && *req.end - *req.start > kMaxMaintenanceLength) {
      e.emplace("end", "must be at most 7 days after start");
    }
    const std::optional<MaintenanceCategory> category =
        kMaintenanceCategoryNames.Parse(req.category);
    if (req.category.empty()) {
      e.emplace("category", "is required");
    } else if (!category) {
      e.emplace("category", "must be one of power, internet, disk, gpu, software, other");
    }
    const std::string reason = Trimmed(req.reason);
    const size_t len = Utf8Length(reason);
    if (reason.empty()) {
      e.emplace("reason", "is required");
    } else if (len < kMinReasonLength || len > kMaxReasonLength) {
      e.emplace("reason", "must be 10 to 300 characters");
    } else if (HasControl(reason)) {
      e.emplace("reason", "must not contain control characters");
    }
    if (req.start && req.end && !e.count("start") && !e.count("end")) {
      GPUNEX_ASSIGN_OR_RETURN(std::vector<MaintenanceRow> overlap,
                              s.MaintenanceOverlapping(machine_id, *req.start, *req.end));
      if (!overlap.empty()) {
        e.emplace("start", "overlaps maintenance window " + overlap.front().id + " (" +
                               FormatRfc3339(overlap.front().start) + " to " +
                               FormatRfc3339(overlap.front().end) + ")");
      } else {
        GPUNEX_ASSIGN_OR_RETURN(int64_t upcoming, s.CountUpcoming(machine_id, now));
        if (upcoming >= kMaxUpcomingMaintenance)
          e.emplace("start", "the machine already has 50 maintenance windows to come");
      }
    }
    if (!e.empty()) return ValidationFailed(std::move(e));
    row = MaintenanceRow{NewId("mnt"), machine_id, *req.start, *req.end,    *category,
                         reason,       now,        p.user.id,  std::nullopt};
    GPUNEX_RETURN_IF_ERROR(s.InsertMaintenance(row));
    GPUNEX_RETURN_IF_ERROR(DecideFacts(tx, now, machine_id));
    const MaintenanceWindow view = ViewOf(row, now);
    for (const MaintenanceHook& hook : declared_hooks_) GPUNEX_RETURN_IF_ERROR(hook(tx, now, view));
    LogInfo("maintenance.declared", {{"machine_id", machine_id},
                                     {"maintenance_id", row.id},
                                     {"planned", view.planned},
                                     {"machine", owner.name}});
    return accounts::Audit(tx, now, p.user.id, "maintenance.declared", row.id, p.ip);
  }));
  return ViewOf(std::move(row), now);
}

StatusOr<MaintenanceWindow> Availability::Cancel(const accounts::Principal& p,
                                                 const std::string& machine_id,
                                                 const std::string& window_id) {
  const Timestamp now = options_.clock->Now();
  MaintenanceRow row;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(
        fleet::AuthorizeMachine(tx, p, machine_id, fleet::MachineAccess::kChange).status());
    AvailabilityStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<MaintenanceRow> found,
                            s.FindMaintenance(machine_id, window_id));
    if (!found) return NotFound("no such maintenance window");
    const MaintenanceState state = ViewOf(*found, now).state;
    if (state == MaintenanceState::kCancelled)
      return FailedPrecondition("the maintenance window is already cancelled");
    if (state != MaintenanceState::kUpcoming)
      return FailedPrecondition("the maintenance window has started; it cannot be cancelled");
    GPUNEX_INVARIANT(MaintenanceMayGo(state, MaintenanceState::kCancelled),
                     "a maintenance window is cancelled only before it starts");
    GPUNEX_RETURN_IF_ERROR(s.CancelMaintenance(window_id, now));
    found->cancelled_at = now;
    row = *found;
    GPUNEX_RETURN_IF_ERROR(DecideFacts(tx, now, machine_id));
    return accounts::Audit(tx, now, p.user.id, "maintenance.cancelled", window_id, p.ip);
  }));
  return ViewOf(std::move(row), now);
}

Status Availability::TickOnce() {
  const Timestamp now = options_.clock->Now();
  while (true) {
    std::vector<std::string> due;
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(due, AvailabilityStore(tx).DueMachines(now, 200));
      for (const std::string& id : due) GPUNEX_RETURN_IF_ERROR(DecideFacts(tx, now, id));
      return Status::Ok();
    }));
    if (due.size() < 200) break;
  }
  return NotifySoon(now);
}

Status Availability::NotifySoon(Timestamp now) {
  return db_.Transact([&](store::Tx& tx) -> Status {
    AvailabilityStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<MaintenanceRow> soon,
                            s.StartingSoon(now, kMaintenanceNoticeLead));
    for (const MaintenanceRow& w : soon) {
      GPUNEX_RETURN_IF_ERROR(s.MarkSoonNotified(w.id));
      GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m,
                              fleet::LoadMachine(tx, w.machine_id));
      if (!m) continue;
      GPUNEX_ASSIGN_OR_RETURN(accounts::User owner, accounts::LoadUser(tx, m->provider_id));
      const MaintenanceWindow view = ViewOf(w, now);
      notify::Notice n{
          "maintenance.soon",
          "Maintenance of " + m->name + " starts within the hour",
          "The maintenance window you declared for machine " + m->name + " (" +
              std::string(Name(w.category)) + ") starts at " + FormatRfc3339(w.start) +
              " and ends at " + FormatRfc3339(w.end) +
              ". Its GPUs are not offered to customers meanwhile." +
              (view.planned ? ""
                            : " It was declared less than 24 hours ahead, so its time counts "
                              "against your uptime."),
          "/#/provider/availability?machine=" + w.machine_id,
          true,
          "a maintenance window starts within the hour"};
      GPUNEX_RETURN_IF_ERROR(
          notify::SendNotice(tx, now, {owner.id, owner.email, owner.name}, n, options_.notices));
    }
    return Status::Ok();
  });
}

void Availability::ScheduleOn(Background& background) {
  background.Add({.name = "availability.tick",
                  .every = std::chrono::milliseconds(options_.tick_ms),
                  .pass = [this] { return TickOnce(); }});
}

}  // namespace gpunex::platform::availability
