// Payout runs: planning, the Solana transfers and the bank files (payouts.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/ids.h"
#include "common/invariant.h"
#include "common/log.h"
#include "platform/bank/nacha.h"
#include "platform/bank/pain001.h"
#include "platform/billing/ledger.h"
#include "platform/payouts/calendar.h"
#include "platform/payouts/payouts.h"
#include "platform/payouts/payouts_store.h"
#include "platform/solana/address.h"
#include "platform/solana/transaction.h"

namespace gpunex::platform::payouts {
namespace {

// Every change of a payout's state after it is planned goes through here (payout.h's
// PayoutMayGo).
Status Move(Payout& po, PayoutState to) {
  GPUNEX_INVARIANT(PayoutMayGo(po.state, to), "payout " + po.id + " may not go from " +
                                                  std::string(Name(po.state)) + " to " +
                                                  std::string(Name(to)));
  po.state = to;
  return Status::Ok();
}

// Every change of a run's state goes through here (payout.h's RunMayGo).
Status Move(Run& run, RunState to) {
  GPUNEX_INVARIANT(RunMayGo(run.state, to), "payout run " + run.id + " may not go from " +
                                                std::string(Name(run.state)) + " to " +
                                                std::string(Name(to)));
  run.state = to;
  return Status::Ok();
}

__extension__ typedef __int128 Int128;

constexpr std::string_view kRunLock = "payouts.run";
constexpr int64_t kMicrosPerCent = 10'000;

// Transfer ids: one reservation and at most one return per round (a retry starts the
// next round), and one payment.
std::string ReserveId(const std::string& payout, int64_t round) {
  return "po_" + payout + "_reserve_" + std::to_string(round);
}
std::string ReturnId(const std::string& payout, int64_t round) {
  return "po_" + payout + "_return_" + std::to_string(round);
}

std::string Memo(const std::string& payout_id) { return "gpunex payout " + payout_id; }

// Writes `content` to `path` whole or not at all: a temporary file, fsync, rename.
Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return Unavailable("cannot create " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Unavailable("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::chrono::year_month_day DayOf(Timestamp t) {
  return std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(t));
}

Status NoticeToProvider(store::Tx& tx, Timestamp now, const Payout& po,
                        const notify::NoticeSettings& settings) {
  GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, po.provider_id));
  notify::Notice n;
  const std::string amount = NetOf(po).ToString() + " USDC";
  if (po.state == PayoutState::kConfirmed) {
    n.kind = "payouts.paid";
    n.title = "Your payout was sent";
    n.text = "Your " + std::string(Name(po.schedule)) + " payout of " + amount +
             (po.method.kind == MethodKind::kSolana
                  ? " was confirmed on Solana (transaction " + po.signature.value_or("") + ")."
                  : " was paid by your bank transfer (reference " + po.bank_reference.value_or("") +
                        ").");
  } else {
    n.kind = "payouts.failed";
    n.title = "Your payout failed";
    n.text = "Your payout of " + amount + " could not be made: " + po.failure.value_or("") +
             ". The money is back in your available balance; check your payout details.";
  }
  n.link = "/#/provider/payments";
  n.email = true;
  return notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, settings);
}

}  // namespace

Status Payouts::Confirm(store::Tx& tx, Timestamp now, Payout& po, const std::string& reference) {
  std::vector<billing::Transfer> ts;
  const Usdc sent = NetOf(po);
  ts.push_back({"po_" + po.id + "_paid", "payout_paid",
                billing::ProviderInPaymentAccount(po.provider_id),
                billing::ProviderPaidAccount(po.provider_id), sent, std::nullopt,
                "payout " + po.id + " " + reference, now});
  if (po.fee.is_positive()) {
    ts.push_back({"po_" + po.id + "_fee", "payout_fee",
                  billing::ProviderInPaymentAccount(po.provider_id),
                  std::string(billing::kPlatformCommission), po.fee, std::nullopt,
                  "payout " + po.id + " fee", now});
  }
  GPUNEX_RETURN_IF_ERROR(billing::Post(tx, ts).status());
  GPUNEX_RETURN_IF_ERROR(Move(po, PayoutState::kConfirmed));
  po.confirmed_at = now;
  po.failure.reset();
  if (po.method.kind == MethodKind::kSolana) {
    po.signature = reference;
  } else {
    po.bank_reference = reference;
  }
  GPUNEX_RETURN_IF_ERROR(PayoutsStore(tx).UpdatePayout(po));
  return NoticeToProvider(tx, now, po, options_.notices);
}

Status Payouts::Fail(store::Tx& tx, Timestamp now, Payout& po, const std::string& why) {
  PayoutsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(int64_t round, s.Round(po.id));
  GPUNEX_RETURN_IF_ERROR(
      billing::Post(tx, {{ReturnId(po.id, round), "payout_returned",
                          billing::ProviderInPaymentAccount(po.provider_id),
                          billing::ProviderAvailableAccount(po.provider_id), po.amount,
                          std::nullopt, "payout " + po.id + " failed", now}})
          .status());
  GPUNEX_RETURN_IF_ERROR(Move(po, PayoutState::kFailed));
  po.failed_at = now;
  po.failure = why.substr(0, 500);
  GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(po));
  return NoticeToProvider(tx, now, po, options_.notices);
}

// --- starting and planning

StatusOr<Run> Payouts::StartRun(const accounts::Principal& p, const RunRequest& req) {
  if (!p.IsAdmin()) return PermissionDenied("only admins start payout runs");
  FieldErrors errors;
  std::optional<Timestamp> as_of = ParseDate(req.as_of);
  const std::optional<Schedule> schedule = kScheduleNames.Parse(req.schedule);
  if (!schedule) errors.emplace("schedule", "must be " + kScheduleNames.Listed());
  if (!as_of) {
    errors.emplace("as_of", "must be a date as YYYY-MM-DD");
  } else if (errors.empty() && !IsRunDate(*schedule, *as_of, options_.calendar)) {
    errors.emplace("as_of", *schedule == Schedule::kWeekly
                                ? "must be a Monday: weekly payouts are made on Mondays"
                                : "must be the first business day of its month");
  } else if (*as_of > options_.clock->Now()) {
    errors.emplace("as_of", "must not be in the future");
  }
  if (req.eur_rate_ppm && (*req.eur_rate_ppm <= 0 || *req.eur_rate_ppm > 100'000'000))
    errors.emplace("eur_rate", "must be a rate above 0 and at most 100 EUR per USDC");
  if (!errors.empty() || req.validate_only) return ValidationFailed(std::move(errors));

  const Timestamp now = options_.clock->Now();
  Run out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Run> existing, s.FindRunFor(*schedule, req.as_of));
    if (existing) {
      out = *existing;
      if (!out.eur_rate_ppm && req.eur_rate_ppm) {
        out.eur_rate_ppm = req.eur_rate_ppm;
        GPUNEX_RETURN_IF_ERROR(s.UpdateRun(out));
      }
    } else {
      out.id = NewId("run");
      out.schedule = *schedule;
      out.as_of = req.as_of;
      out.cutoff = *as_of;
      out.state = RunState::kPlanning;
      out.eur_rate_ppm = req.eur_rate_ppm ? req.eur_rate_ppm : options_.default_eur_rate_ppm;
      out.created_at = now;
      GPUNEX_RETURN_IF_ERROR(s.InsertRun(out));
    }
    return s.LoadCounts(&out);
  }));
  ticks_.Wake();  // the loop plans it at once
  return out;
}

// Plans a run in one transaction: a payout and its reservation for every provider to
// pay, a skip for every other one. A crash before the commit leaves the run unplanned
// (planned again from the start); after it, planned whole.
struct Payouts::Plan {
  static Status Make(Payouts& self, const std::string& run_id) {
    const Timestamp now = self.options_.clock->Now();
    return self.db_.Transact([&](store::Tx& tx) -> Status {
      PayoutsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Run> run, s.FindRun(run_id));
      if (!run || run->state != RunState::kPlanning) return Status::Ok();
      GPUNEX_ASSIGN_OR_RETURN(Timestamp released, billing::ReleasedUntil(tx));
      std::string after;
      std::vector<billing::Transfer> reservations;
      // Every provider with an available balance (the ledger's), page by page, and its
      // settings (none: weekly, without a method); those of this run's schedule are
      // paid or skipped.
      while (true) {
        GPUNEX_ASSIGN_OR_RETURN(std::vector<billing::ProviderBalance> page,
                                billing::AvailableBalances(tx, after, 1000));
        if (page.empty()) break;
        after = page.back().provider_id;
        std::vector<std::string> ids;
        ids.reserve(page.size());
        for (const auto& b : page) ids.push_back(b.provider_id);
        GPUNEX_ASSIGN_OR_RETURN(auto settings, s.SettingsOf(ids));
        for (const auto& c : page) {
          auto found = settings.find(c.provider_id);
          const Settings* st = found == settings.end() ? nullptr : &found->second;
          if ((st ? st->schedule : Schedule::kWeekly) != run->schedule) continue;
          const Usdc available = c.balance;
          Skip skip{c.provider_id, SkipReason::kCarriedOver, available};
          if (!available.is_positive()) continue;  // nothing to pay, nothing to say
          if (!st || !st->method) {
            skip.reason = SkipReason::kNoMethod;
          } else if (st->hold_until && *st->hold_until > now) {
            skip.reason = SkipReason::kHeld;
          } else {
            const MethodTerms& terms = self.TermsOf(st->method->kind);
            const Usdc threshold =
                run->schedule == Schedule::kWeekly ? st->threshold : self.options_.monthly_minimum;
            Usdc amount = available;
            // A bank pays whole cents; the rest stays available for the next payout.
            if (st->method->kind != MethodKind::kSolana)
              amount = Usdc::Micros(amount.micros() - amount.micros() % kMicrosPerCent);
            if (amount < std::max(threshold, terms.minimum) || amount <= terms.fee) {
              skip.reason = SkipReason::kCarriedOver;
            } else {
              Payout po;
              po.id = NewId("po");
              po.run_id = run->id;
              po.provider_id = c.provider_id;
              po.state = PayoutState::kPlanned;
              po.amount = amount;
              po.fee = terms.fee;
              po.method = *st->method;
              po.currency = terms.currency;
              if (po.method.kind == MethodKind::kAch)
                po.amount_minor =
                    Usdc::Micros(amount.micros() - terms.fee.micros()).micros() / kMicrosPerCent;
              po.created_at = now;
              GPUNEX_ASSIGN_OR_RETURN(po.covers_from, s.LastCoveredUntil(c.provider_id));
              po.covers_until = released;
              GPUNEX_RETURN_IF_ERROR(s.InsertPayout(po, 1));
              reservations.push_back({ReserveId(po.id, 1), "payout_reserved",
                                      billing::ProviderAvailableAccount(c.provider_id),
                                      billing::ProviderInPaymentAccount(c.provider_id), amount,
                                      std::nullopt, "payout " + po.id, now});
              continue;
            }
          }
          GPUNEX_RETURN_IF_ERROR(s.InsertSkip(run->id, skip));
        }
      }
      GPUNEX_RETURN_IF_ERROR(billing::Post(tx, reservations).status());
      GPUNEX_RETURN_IF_ERROR(Move(*run, RunState::kRunning));
      return s.UpdateRun(*run);
    });
  }
};

// --- the engine

StatusOr<int64_t> Payouts::Tick() {
  MutexLock tick(&tick_mu_);
  if (!run_lock_ || !run_lock_->Held()) {
    run_lock_.reset();
    GPUNEX_ASSIGN_OR_RETURN(run_lock_, db_.TryLock(kRunLock));
    if (!run_lock_) return 0;  // another instance is carrying the runs forward
    // This instance carries the runs forward now (at start, or after the holder died).
    LogInfo("payouts.lock_taken");
  }
  store::Lock* lock = run_lock_.get();
  const Timestamp now = options_.clock->Now();
  if (options_.automatic_runs) {
    for (Schedule schedule : {Schedule::kWeekly, Schedule::kMonthly}) {
      const Timestamp due = LatestRunDate(schedule, now, options_.calendar);
      bool exists = false;
      GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
        GPUNEX_ASSIGN_OR_RETURN(auto r, PayoutsStore(tx).FindRunFor(schedule, DateOf(due)));
        exists = r.has_value();
        return Status::Ok();
      }));
      if (exists) continue;
      accounts::Principal system;
      system.user.roles.push_back(std::string(accounts::kRoleAdmin));
      auto r = StartRun(system, {DateOf(due), std::string(Name(schedule)), std::nullopt});
      if (!r.ok()) LogWarn("payouts.schedule_failed", {{"error", r.status().ToString()}});
    }
  }
  std::vector<std::string> runs;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(runs, PayoutsStore(tx).UnfinishedRuns());
    return Status::Ok();
  }));
  // One run's trouble (the RPC down) does not hold up the others (bank files, planning);
  // the first error is the answer.
  int64_t changed = 0;
  Status first_error;
  for (const auto& id : runs) {
    if (!lock->Held()) return Unavailable("lost the payout run lock");
    auto n = Advance(id);
    if (n.ok()) {
      changed += *n;
    } else if (first_error.ok()) {
      first_error = n.status();
    }
  }
  if (!first_error.ok()) return first_error;
  return changed;
}

StatusOr<int64_t> Payouts::Advance(const std::string& run_id) {
  std::optional<Run> run;
  auto load = [&] {
    return db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(run, PayoutsStore(tx).FindRun(run_id));
      return Status::Ok();
    });
  };
  GPUNEX_RETURN_IF_ERROR(load());
  if (run && run->state == RunState::kPlanning) {
    GPUNEX_RETURN_IF_ERROR(Plan::Make(*this, run_id));
    GPUNEX_RETURN_IF_ERROR(load());
  }
  if (!run) return NotFound("no payout run " + run_id);
  if (run->state == RunState::kDone || run->state == RunState::kPlanning) return 0;
  GPUNEX_RETURN_IF_ERROR(Fault("payout.after_plan"));
  int64_t changed = 0;
  GPUNEX_ASSIGN_OR_RETURN(int64_t solana, AdvanceSolana(*run));
  changed += solana;
  GPUNEX_ASSIGN_OR_RETURN(int64_t bank, WriteBankFiles(*run));
  changed += bank;
  GPUNEX_RETURN_IF_ERROR(RewriteMissingFiles(*run));
  GPUNEX_RETURN_IF_ERROR(FinishIfDone(*run));
  return changed;
}

Status Payouts::FinishIfDone(const Run& run) {
  // The state the run's payouts put it in; nullopt when it is done already or gone.
  auto state_of = [&](store::Tx& tx, std::optional<Run>* r) -> StatusOr<std::optional<RunState>> {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(*r, s.FindRun(run.id));
    if (!*r || (*r)->state == RunState::kDone) return std::optional<RunState>();
    GPUNEX_RETURN_IF_ERROR(s.LoadCounts(&**r));
    auto& counts = (*r)->counts;
    int64_t open = 0;
    for (PayoutState st :
         {PayoutState::kPlanned, PayoutState::kWaitingFunds, PayoutState::kSubmitted}) {
      open += counts[std::string(Name(st))];
    }
    GPUNEX_ASSIGN_OR_RETURN(auto solana_open,
                            s.RunPayouts(run.id, MethodKind::kSolana,
                                         {PayoutState::kPlanned, PayoutState::kSubmitted}, 1));
    return std::optional<RunState>(open == 0             ? RunState::kDone
                                   : solana_open.empty() ? RunState::kWaiting
                                                         : RunState::kRunning);
  };
  // Read first: a run that stays as it is (waiting on the operator for days) takes no
  // write transaction every loop.
  bool changes = false;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    std::optional<Run> r;
    GPUNEX_ASSIGN_OR_RETURN(std::optional<RunState> state, state_of(tx, &r));
    changes = state && *state != r->state;
    return Status::Ok();
  }));
  if (!changes) return Status::Ok();
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    std::optional<Run> r;
    GPUNEX_ASSIGN_OR_RETURN(std::optional<RunState> state, state_of(tx, &r));
    if (!state || *state == r->state) return Status::Ok();
    GPUNEX_RETURN_IF_ERROR(Move(*r, *state));
    if (*state == RunState::kDone) r->finished_at = now;
    return PayoutsStore(tx).UpdateRun(*r);
  });
}

// --- Solana

StatusOr<int64_t> Payouts::AdvanceSolana(const Run& run) {
  if (!rpc_ || !key_) return 0;
  GPUNEX_ASSIGN_OR_RETURN(int64_t confirmed, ConfirmSolana(run));
  GPUNEX_ASSIGN_OR_RETURN(int64_t sent, SignAndSendSolana(run));
  return confirmed + sent;
}

StatusOr<int64_t> Payouts::ConfirmSolana(const Run& run) {
  const std::string& commitment = options_.solana_chain.commitment;
  std::vector<Payout> submitted;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(submitted,
                            PayoutsStore(tx).RunPayouts(run.id, MethodKind::kSolana,
                                                        {PayoutState::kSubmitted}, 1'000'000));
    return Status::Ok();
  }));
  int64_t changed = 0;
  const size_t chunk = solana::kMaxSignaturesPerStatusCall;
  for (size_t start = 0; start < submitted.size(); start += chunk) {
    const size_t end = std::min(submitted.size(), start + chunk);
    std::vector<std::string> ids;
    for (size_t i = start; i < end; ++i) ids.push_back(submitted[i].id);
    std::map<std::string, Attempt> latest;
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(latest, PayoutsStore(tx).LatestAttempts(ids));
      return Status::Ok();
    }));
    std::vector<std::string> sigs;
    for (const auto& id : ids) sigs.push_back(latest.count(id) ? latest[id].signature : "");
    // The block height first, then the statuses: a transaction not found after the height
    // passed its last valid block height can never land (read the other way round, it
    // could land between the two reads).
    GPUNEX_ASSIGN_OR_RETURN(uint64_t height, rpc_->BlockHeight(commitment));
    GPUNEX_ASSIGN_OR_RETURN(auto statuses, rpc_->SignatureStatuses(sigs, true));
    if (statuses.size() != sigs.size()) return Internal("getSignatureStatuses: wrong count");
    GPUNEX_RETURN_IF_ERROR(Fault("payout.before_confirm"));
    const Timestamp now = options_.clock->Now();
    std::vector<std::pair<std::string, Attempt>> resend;
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      resend.clear();
      int64_t n = 0;
      PayoutsStore s(tx);
      for (size_t i = 0; i < ids.size(); ++i) {
        GPUNEX_ASSIGN_OR_RETURN(std::optional<Payout> po, s.FindPayout(ids[i], false));
        auto a = latest.find(ids[i]);
        if (!po || po->state != PayoutState::kSubmitted || a == latest.end()) continue;
        Attempt att = a->second;
        const auto& st = statuses[i];
        if (st && !st->err && solana::Reached(*st, commitment)) {
          att.state = AttemptState::kLanded;
          att.updated_at = now;
          GPUNEX_RETURN_IF_ERROR(s.UpdateAttempt(po->id, att));
          GPUNEX_RETURN_IF_ERROR(Confirm(tx, now, *po, att.signature));
          ++n;
        } else if (st && st->err) {
          // It landed and failed: this signature is spent and can never land again.
          att.state = AttemptState::kFailed;
          att.error = *st->err;
          att.updated_at = now;
          GPUNEX_RETURN_IF_ERROR(s.UpdateAttempt(po->id, att));
          GPUNEX_ASSIGN_OR_RETURN(int64_t failed, s.FailedAttempts(po->id));
          if (failed >= options_.max_attempts) {
            GPUNEX_RETURN_IF_ERROR(
                Fail(tx, now, *po, "the Solana transaction failed: " + *st->err));
          } else {
            GPUNEX_RETURN_IF_ERROR(Move(*po, PayoutState::kPlanned));
            GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(*po));
          }
          ++n;
        } else if (!st && height > static_cast<uint64_t>(att.last_valid_block_height)) {
          att.state = AttemptState::kExpired;
          att.updated_at = now;
          GPUNEX_RETURN_IF_ERROR(s.UpdateAttempt(po->id, att));
          // Signed again with a new blockhash.
          GPUNEX_RETURN_IF_ERROR(Move(*po, PayoutState::kPlanned));
          GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(*po));
          ++n;
        } else if (!st &&
                   now - att.updated_at >= std::chrono::milliseconds(options_.resend_after_ms)) {
          resend.emplace_back(po->id, att);
        }
      }
      changed += n;
      return Status::Ok();
    }));
    GPUNEX_RETURN_IF_ERROR(Fault("payout.after_confirm"));
    // Not found yet and still able to land: the same transaction again (a node may have
    // dropped it; the same signature cannot land twice).
    for (auto& [id, att] : resend) {
      auto sent = rpc_->SendTransaction(att.wire_base64, false, commitment);
      if (!sent.ok()) {
        LogInfo("payouts.resend_failed", {{"payout", id}, {"error", sent.status().ToString()}});
      }
      att.state = AttemptState::kSent;
      att.updated_at = options_.clock->Now();
    }
    if (!resend.empty()) {
      GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
        PayoutsStore s(tx);
        for (const auto& [id, att] : resend) GPUNEX_RETURN_IF_ERROR(s.UpdateAttempt(id, att));
        return Status::Ok();
      }));
    }
  }
  return changed;
}

StatusOr<int64_t> Payouts::SignAndSendSolana(const Run& run) {
  const SolanaOptions& chain = options_.solana_chain;
  std::vector<Payout> todo;
  int64_t in_flight_micro = 0, in_flight_count = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(
        todo, s.RunPayouts(run.id, MethodKind::kSolana,
                           {PayoutState::kPlanned, PayoutState::kWaitingFunds}, 1'000'000));
    GPUNEX_ASSIGN_OR_RETURN(auto flying, s.RunPayouts(run.id, MethodKind::kSolana,
                                                      {PayoutState::kSubmitted}, 1'000'000));
    for (const auto& po : flying) in_flight_micro += NetOf(po).micros();
    in_flight_count = static_cast<int64_t>(flying.size());
    return Status::Ok();
  }));
  if (todo.empty()) return 0;
  // What the platform's wallet holds, less what the transactions in flight may still take.
  GPUNEX_ASSIGN_OR_RETURN(auto sol, rpc_->GetAccountInfo(key_->public_key, chain.commitment));
  GPUNEX_ASSIGN_OR_RETURN(auto usdc,
                          rpc_->GetAccountInfo(platform_token_account_, chain.commitment));
  const int64_t per_tx_lamports = chain.fee_lamports + chain.ata_rent_lamports;
  int64_t lamports_left =
      (sol ? static_cast<int64_t>((*sol).lamports) : 0) - in_flight_count * per_tx_lamports;
  int64_t usdc_left = -in_flight_micro;
  if (usdc) {
    if (auto t = solana::ParseTokenAccount((*usdc).data))
      usdc_left += static_cast<int64_t>(t->amount);
  }

  int64_t changed = 0;
  bool alerted = false;
  for (size_t start = 0; start < todo.size(); start += static_cast<size_t>(options_.batch)) {
    const size_t end = std::min(todo.size(), start + static_cast<size_t>(options_.batch));
    GPUNEX_ASSIGN_OR_RETURN(solana::BlockhashInfo bh, rpc_->LatestBlockhash(chain.commitment));
    struct Signed {
      Payout* po;
      Attempt attempt;
    };
    std::vector<Signed> ready;
    std::vector<Payout*> short_of_funds;
    std::map<std::string, Attempt> latest;
    std::vector<std::string> ids;
    for (size_t i = start; i < end; ++i) ids.push_back(todo[i].id);
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(latest, PayoutsStore(tx).LatestAttempts(ids));
      return Status::Ok();
    }));
    const Timestamp now = options_.clock->Now();
    for (size_t i = start; i < end; ++i) {
      Payout& po = todo[i];
      const int64_t need = NetOf(po).micros();
      if (need > usdc_left || per_tx_lamports > lamports_left) {
        short_of_funds.push_back(&po);
        continue;
      }
      GPUNEX_ASSIGN_OR_RETURN(solana::Pubkey wallet,
                              solana::ParsePubkey(po.method.wallet, "wallet"));
      const solana::Pubkey ata = solana::AssociatedTokenAddress(wallet, chain.mint);
      std::vector<solana::Instruction> ins{
          solana::CreateAssociatedTokenAccountIdempotent(key_->public_key, ata, wallet, chain.mint),
          solana::TransferChecked(platform_token_account_, chain.mint, ata, key_->public_key,
                                  static_cast<uint64_t>(need), chain.decimals),
          solana::Memo(Memo(po.id))};
      GPUNEX_ASSIGN_OR_RETURN(std::vector<uint8_t> msg,
                              solana::CompileMessage(key_->public_key, ins, bh.blockhash));
      GPUNEX_ASSIGN_OR_RETURN(solana::SignedTransaction signed_tx,
                              solana::SignTransaction(msg, {key_}));
      Attempt a;
      auto l = latest.find(po.id);
      a.n = l == latest.end() ? 1 : l->second.n + 1;
      a.state = AttemptState::kSigned;
      a.signature = signed_tx.signature;
      a.wire_base64 = signed_tx.Base64();
      a.last_valid_block_height = static_cast<int64_t>(bh.last_valid_block_height);
      a.created_at = a.updated_at = now;
      usdc_left -= need;
      lamports_left -= per_tx_lamports;
      ready.push_back({&po, std::move(a)});
    }
    // Recorded before anything is sent: after a crash the signature is known, and the
    // transaction is followed (resent or expired), never signed anew while it could land.
    int64_t newly_short = 0;
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      newly_short = 0;
      PayoutsStore s(tx);
      std::vector<std::string> fresh;
      for (const auto& r : ready) fresh.push_back(r.po->id);
      GPUNEX_ASSIGN_OR_RETURN(auto now_latest, s.LatestAttempts(fresh));
      for (auto& r : ready) {
        GPUNEX_ASSIGN_OR_RETURN(std::optional<Payout> cur, s.FindPayout(r.po->id, false));
        if (!cur ||
            (cur->state != PayoutState::kPlanned && cur->state != PayoutState::kWaitingFunds)) {
          r.attempt.n = 0;  // taken care of elsewhere meanwhile: not sent
          continue;
        }
        auto l = now_latest.find(r.po->id);
        if (l != now_latest.end() && !IsSpentAttemptState(l->second.state)) {
          r.attempt.n = 0;  // its last transaction may still land
          continue;
        }
        if (l != now_latest.end() && l->second.n + 1 != r.attempt.n) r.attempt.n = l->second.n + 1;
        GPUNEX_RETURN_IF_ERROR(s.InsertAttempt(cur->id, r.attempt));
        GPUNEX_RETURN_IF_ERROR(Move(*cur, PayoutState::kSubmitted));
        if (!cur->submitted_at) cur->submitted_at = now;
        GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(*cur));
      }
      for (Payout* po : short_of_funds) {
        if (po->state == PayoutState::kWaitingFunds) continue;
        GPUNEX_RETURN_IF_ERROR(Move(*po, PayoutState::kWaitingFunds));
        GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(*po));
        ++newly_short;
      }
      if (newly_short > 0 && !alerted) {
        // Admins hear of it once per pass that finds the wallet short.
        GPUNEX_ASSIGN_OR_RETURN(auto admins, accounts::UsersWithRole(tx, accounts::kRoleAdmin));
        for (const auto& id : admins) {
          GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, id));
          notify::Notice n;
          n.kind = "payouts.wallet_short";
          n.title = "The payout wallet is short of funds";
          n.text = "Payouts of run " + run.id + " (" + std::string(Name(run.schedule)) + ", " +
                   run.as_of + ") wait for USDC or SOL in the platform's wallet " +
                   solana::ToBase58(key_->public_key) + " (USDC token account " +
                   solana::ToBase58(platform_token_account_) +
                   "). They are sent as soon as it is funded.";
          n.link = "/#/admin/payouts";
          n.email = true;
          GPUNEX_RETURN_IF_ERROR(
              notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices));
        }
      }
      return Status::Ok();
    }));
    if (newly_short > 0) alerted = true;
    changed += newly_short;
    GPUNEX_RETURN_IF_ERROR(Fault("payout.after_sign"));
    // Sent by a few threads at once: a node's round trip, not our work, is what a send
    // costs (the Rpc is safe to share).
    std::vector<std::pair<std::string, Attempt>> sent;
    std::mutex sent_mu;
    auto send_from = [&](size_t first) {
      for (size_t i = first; i < ready.size(); i += static_cast<size_t>(options_.parallel_sends)) {
        Signed& r = ready[i];
        if (r.attempt.n == 0) continue;
        auto st = rpc_->SendTransaction(r.attempt.wire_base64, false, chain.commitment);
        if (!st.ok()) {
          // Left as signed: followed like any other until it lands or expires.
          LogInfo("payouts.send_failed", {{"payout", r.po->id}, {"error", st.status().ToString()}});
          continue;
        }
        r.attempt.state = AttemptState::kSent;
        r.attempt.updated_at = options_.clock->Now();
        std::lock_guard<std::mutex> l(sent_mu);
        sent.emplace_back(r.po->id, r.attempt);
      }
    };
    for (const auto& r : ready) changed += r.attempt.n != 0;
    {
      std::vector<std::thread> senders;
      for (int t = 1; t < options_.parallel_sends; ++t) senders.emplace_back(send_from, t);
      send_from(0);
      for (auto& t : senders) t.join();
    }
    GPUNEX_RETURN_IF_ERROR(Fault("payout.after_send"));
    if (!sent.empty()) {
      GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
        PayoutsStore s(tx);
        for (const auto& [id, a] : sent) GPUNEX_RETURN_IF_ERROR(s.UpdateAttempt(id, a));
        return Status::Ok();
      }));
    }
  }
  return changed;
}

// --- bank files

StatusOr<int64_t> Payouts::WriteBankFiles(const Run& run) {
  int64_t changed = 0;
  for (MethodKind kind : {MethodKind::kSepa, MethodKind::kAch}) {
    std::vector<Payout> todo;
    std::vector<BankFile> files;
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      PayoutsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(todo, s.RunPayouts(run.id, kind, {PayoutState::kPlanned}, 1'000'000));
      GPUNEX_ASSIGN_OR_RETURN(files, s.Files(run.id, false));
      return Status::Ok();
    }));
    std::erase_if(todo, [](const Payout& p) { return p.file_name.has_value(); });
    if (todo.empty()) continue;
    const Timestamp now = options_.clock->Now();
    // One file per kind and run; a retried payout goes into a file of its own.
    const FileKind file_kind = kind == MethodKind::kSepa ? FileKind::kPain001 : FileKind::kNacha;
    int same_kind = 0;
    for (const auto& f : files) same_kind += f.kind == file_kind;
    const std::string suffix = same_kind ? "-" + std::to_string(same_kind + 1) : "";
    BankFile f;
    f.run_id = run.id;
    f.kind = file_kind;
    f.state = FileState::kWritten;
    f.created_at = now;
    f.lines = static_cast<int64_t>(todo.size());
    if (kind == MethodKind::kSepa) {
      if (!run.eur_rate_ppm) {
        LogInfo("payouts.waiting_for_rate", {{"run", run.id}});
        continue;  // the operator sets the run's EUR rate (StartRun again with eur_rate)
      }
      const SepaOriginator& o = options_.sepa_originator;
      bank::Pain001 doc;
      doc.message_id = bank::SepaIdFromGpunexId(run.id + suffix);
      doc.created_at = now;
      doc.initiating_party = o.name;
      doc.debtor.name = o.name;
      doc.debtor.iban = o.iban;
      if (!o.bic.empty()) doc.debtor.bic = o.bic;
      doc.execution_date = DayOf(now);
      for (Payout& po : todo) {
        po.fx_rate_ppm = run.eur_rate_ppm;
        po.amount_minor = static_cast<int64_t>(static_cast<Int128>(NetOf(po).micros()) *
                                               *run.eur_rate_ppm / 1'000'000 / kMicrosPerCent);
        po.bank_reference = bank::SepaIdFromGpunexId(po.id);
        bank::Pain001::Line l;
        l.end_to_end_id = bank::SepaIdFromGpunexId(po.id);
        l.creditor_name = po.method.holder;
        l.iban = po.method.iban;
        if (!po.method.bic.empty()) l.bic = po.method.bic;
        l.amount_cents = *po.amount_minor;
        l.remittance = "gpunex payout " + po.as_of + " " + *po.bank_reference;
        f.total_minor += l.amount_cents;
        doc.lines.push_back(std::move(l));
      }
      GPUNEX_ASSIGN_OR_RETURN(f.content, bank::WritePain001(doc));
      f.currency = "EUR";
      f.name = run.id + suffix + "-sepa.xml";
    } else {
      const AchOriginator& o = options_.ach_originator;
      bank::NachaFile file;
      file.immediate_destination = o.destination_routing;
      file.immediate_destination_name = o.destination_name;
      file.immediate_origin = o.origin;
      file.immediate_origin_name = o.origin_name;
      file.file_id_modifier = static_cast<char>('A' + std::min(same_kind, 25));
      file.created_at = now;
      file.company_name = o.company_name;
      file.company_id = o.company_id;
      file.company_entry_description = "PAYOUT";
      file.effective_date = DayOf(now);
      file.odfi_routing = o.odfi_routing;
      // Trace numbers go on across the run's files: a retried line's file of the same day
      // never repeats one, and the bank's answer names one line.
      file.first_sequence = 1;
      for (const auto& earlier : files) {
        if (earlier.kind == FileKind::kNacha) file.first_sequence += earlier.lines;
      }
      for (size_t i = 0; i < todo.size(); ++i) {
        Payout& po = todo[i];
        // The trace number finds the line in the bank's answer.
        po.bank_reference =
            bank::TraceNumber(o.odfi_routing, file.first_sequence + static_cast<int64_t>(i));
        bank::NachaFile::Entry e;
        e.routing = po.method.routing_number;
        e.account_number = po.method.account_number;
        e.account_type = po.method.account_type;
        e.amount_cents = po.amount_minor.value_or(0);
        e.individual_id = po.id.substr(0, 15);
        e.individual_name = po.method.holder;
        f.total_minor += e.amount_cents;
        file.entries.push_back(std::move(e));
      }
      GPUNEX_ASSIGN_OR_RETURN(f.content, bank::WriteNacha(file));
      // Re-read before release: the totals a bank checks must be the ones we meant.
      GPUNEX_ASSIGN_OR_RETURN(bank::NachaSummary sum, bank::ParseNacha(f.content));
      if (static_cast<int64_t>(sum.entries.size()) != f.lines ||
          sum.total_credit_cents != f.total_minor)
        return Internal("the NACHA file of run " + run.id + " does not re-read to its totals");
      f.currency = "USD";
      f.name = run.id + suffix + "-ach.txt";
    }
    f.sha256 = Sha256Hex(f.content);
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      PayoutsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(auto again, s.FindFile(run.id, f.name, false));
      if (again) return Status::Ok();
      GPUNEX_RETURN_IF_ERROR(s.InsertFile(f));
      for (Payout& po : todo) {
        po.file_name = f.name;
        GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(po));
      }
      return Status::Ok();
    }));
    changed += f.lines;
  }
  return changed;
}

Status Payouts::RewriteMissingFiles(const Run& run) {
  if (options_.files_dir.empty()) return Status::Ok();
  std::vector<BankFile> files;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(files, PayoutsStore(tx).Files(run.id, false));
    return Status::Ok();
  }));
  for (const auto& f : files) {
    const std::string path = options_.files_dir + "/" + f.name;
    if (auto have = ReadFile(path); have && Sha256Hex(*have) == f.sha256) continue;
    GPUNEX_RETURN_IF_ERROR(Fault("payout.before_file_write"));
    std::optional<BankFile> full;
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(full, PayoutsStore(tx).FindFile(run.id, f.name, true));
      return Status::Ok();
    }));
    if (!full) continue;
    std::error_code ec;
    std::filesystem::create_directories(options_.files_dir, ec);
    GPUNEX_RETURN_IF_ERROR(WriteFileAtomically(path, full->content));
    LogInfo("payouts.file_written", {{"file", path}, {"lines", std::to_string(f.lines)}});
  }
  return Status::Ok();
}

// --- the operator's side

StatusOr<Run> Payouts::MarkFileSent(const accounts::Principal& p, const std::string& run_id,
                                    const std::string& name) {
  if (!p.IsAdmin()) return PermissionDenied("only admins manage payout runs");
  const Timestamp now = options_.clock->Now();
  Run out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<BankFile> f, s.FindFile(run_id, name, false));
    if (!f) return NotFound("no file " + name + " in payout run " + run_id);
    if (f->state != FileState::kSent) {
      f->state = FileState::kSent;
      f->sent_at = now;
      GPUNEX_RETURN_IF_ERROR(s.UpdateFile(*f));
      GPUNEX_ASSIGN_OR_RETURN(auto lines, s.FilePayouts(run_id, name));
      for (Payout& po : lines) {
        if (po.state != PayoutState::kPlanned) continue;
        GPUNEX_RETURN_IF_ERROR(Move(po, PayoutState::kSubmitted));
        po.submitted_at = now;
        GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(po));
      }
    }
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Run> r, s.FindRun(run_id));
    out = *r;
    GPUNEX_RETURN_IF_ERROR(s.LoadCounts(&out));
    GPUNEX_ASSIGN_OR_RETURN(out.files, s.Files(run_id, false));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Payout> Payouts::SetBankResult(const accounts::Principal& p, const std::string& payout_id,
                                        const BankResult& result) {
  if (!p.IsAdmin()) return PermissionDenied("only admins record bank results");
  FieldErrors errors;
  if (result.bank_reference.size() > 100)
    errors.emplace("bank_reference", "must be at most 100 characters");
  if (result.reason.size() > 300) errors.emplace("reason", "must be at most 300 characters");
  if (result.state == BankOutcome::kFailed && result.reason.empty())
    errors.emplace("reason", "is required: say what the bank answered");
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const Timestamp now = options_.clock->Now();
  Payout out;
  std::string run_id;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Payout> po, s.FindPayout(payout_id, false));
    if (!po) return NotFound("no payout " + payout_id);
    if (po->method.kind == MethodKind::kSolana)
      return FailedPrecondition("a Solana payout is confirmed on chain, not by a bank");
    if (po->state == PayoutState::kConfirmed && result.state == BankOutcome::kPaid) {
      out = *po;  // the same answer twice
      return Status::Ok();
    }
    if (po->state != PayoutState::kSubmitted)
      return FailedPrecondition("the payout is " + std::string(Name(po->state)) +
                                ": only a line of a file marked sent has a bank result");
    if (result.state == BankOutcome::kPaid) {
      GPUNEX_RETURN_IF_ERROR(Confirm(tx, now, *po,
                                     result.bank_reference.empty()
                                         ? po->bank_reference.value_or(po->id)
                                         : result.bank_reference));
    } else {
      GPUNEX_RETURN_IF_ERROR(Fail(tx, now, *po, "the bank returned it: " + result.reason));
    }
    out = *po;
    run_id = po->run_id;
    return Status::Ok();
  }));
  if (!run_id.empty()) {
    Run r;
    r.id = run_id;
    GPUNEX_RETURN_IF_ERROR(FinishIfDone(r));
  }
  return out;
}

StatusOr<Payout> Payouts::Retry(const accounts::Principal& p, const std::string& payout_id) {
  if (!p.IsAdmin()) return PermissionDenied("only admins retry payouts");
  const Timestamp now = options_.clock->Now();
  Payout out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Payout> po, s.FindPayout(payout_id, false));
    if (!po) return NotFound("no payout " + payout_id);
    if (po->state != PayoutState::kFailed)
      return FailedPrecondition("the payout is " + std::string(Name(po->state)) +
                                ": only a failed payout is retried");
    // The details may have changed since: a retry goes to the current ones.
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Settings> st, s.FindSettings(po->provider_id));
    if (!st || !st->method) return FailedPrecondition("the provider has no payout method");
    if (st->hold_until && *st->hold_until > now)
      return FailedPrecondition("the provider's payout details changed: held until " +
                                FormatRfc3339(*st->hold_until));
    if (st->method->kind != po->method.kind)
      return FailedPrecondition("the provider chose another method; the next run pays them");
    GPUNEX_ASSIGN_OR_RETURN(int64_t round, s.Round(po->id));
    Status reserved =
        billing::Post(tx, {{ReserveId(po->id, round + 1), "payout_reserved",
                            billing::ProviderAvailableAccount(po->provider_id),
                            billing::ProviderInPaymentAccount(po->provider_id), po->amount,
                            std::nullopt, "payout " + po->id + " retried", now}})
            .status();
    if (reserved.code() == StatusCode::kFailedPrecondition)
      return FailedPrecondition("the provider's available balance no longer covers the payout");
    GPUNEX_RETURN_IF_ERROR(reserved);
    GPUNEX_RETURN_IF_ERROR(s.SetRound(po->id, round + 1));
    GPUNEX_RETURN_IF_ERROR(Move(*po, PayoutState::kPlanned));
    po->failure.reset();
    po->failed_at.reset();
    po->file_name.reset();
    po->method = *st->method;
    GPUNEX_RETURN_IF_ERROR(s.UpdatePayout(*po));
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Run> r, s.FindRun(po->run_id));
    if (r && r->state != RunState::kRunning) {
      GPUNEX_RETURN_IF_ERROR(Move(*r, RunState::kRunning));
      r->finished_at.reset();
      GPUNEX_RETURN_IF_ERROR(s.UpdateRun(*r));
    }
    out = *po;
    return Status::Ok();
  }));
  ticks_.Wake();
  return out;
}

}  // namespace gpunex::platform::payouts
