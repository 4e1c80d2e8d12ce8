// Settings, earnings and the queries of payouts; the runs are in run.cc.
#include "platform/payouts/payouts.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "platform/accounts/directory.h"
#include "platform/bank/details.h"
#include "platform/billing/ledger.h"
#include "platform/payouts/calendar.h"
#include "platform/payouts/payouts_store.h"
#include "platform/payouts/usage.h"
#include "platform/solana/address.h"

namespace gpunex::platform::payouts {
namespace {

__extension__ typedef __int128 Int128;

Status RequireProvider(const accounts::Principal& p) {
  if (!p.user.HasRole(accounts::kRoleProvider))
    return PermissionDenied("only providers have earnings and payouts");
  return Status::Ok();
}

Status RequireAdmin(const accounts::Principal& p) {
  if (!p.IsAdmin()) return PermissionDenied("only admins manage payout runs");
  return Status::Ok();
}

std::string UsdcText(Usdc u) {
  std::string s = u.ToString();  // 6 decimals
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " USDC";
}

// GPU-seconds from an amount charged at `price_micro` per GPU-hour: the inverse of
// LED-2's floor(rate × gpus × s / 3600), exact to a second.
int64_t GpuSecondsOf(int64_t gross_micro, int64_t price_micro) {
  if (price_micro <= 0 || gross_micro <= 0) return 0;
  const Int128 s = (static_cast<Int128>(gross_micro) * 3600 + price_micro - 1) / price_micro;
  return static_cast<int64_t>(s);
}

}  // namespace

Payouts::Payouts(store::Database& db, accounts::Accounts& accounts, solana::Rpc* rpc,
                 const solana::Keypair* key, PayoutsOptions options)
    : db_(db), accounts_(accounts), rpc_(rpc), key_(key), options_(std::move(options)) {
  if (key_) {
    platform_token_account_ =
        solana::AssociatedTokenAddress(key_->public_key, options_.solana_chain.mint);
  }
}

Status Payouts::Fault(std::string_view point) const {
  if (!options_.fault) return Status::Ok();
  return options_.fault(point);
}

std::vector<MethodTerms> Payouts::Terms() const {
  std::vector<MethodTerms> out{options_.solana, options_.sepa, options_.ach};
  out[0].offered = out[0].offered && rpc_ && key_;
  out[1].offered = out[1].offered && options_.sepa_originator.configured();
  out[2].offered = out[2].offered && options_.ach_originator.configured();
  return out;
}

const MethodTerms& Payouts::TermsOf(MethodKind kind) const {
  switch (kind) {
    case MethodKind::kSolana:
      break;
    case MethodKind::kSepa:
      return options_.sepa;
    case MethodKind::kAch:
      return options_.ach;
  }
  return options_.solana;
}

StatusOr<Method> Payouts::ValidateMethod(const Method& m) const {
  FieldErrors errors;
  Method out;
  out.kind = m.kind;
  auto keep = [&](const Status& st) {
    for (const auto& [f, why] : st.fields()) errors.emplace(f, why);
    if (st.fields().empty() && !st.ok()) errors.emplace("method", st.message());
  };
  const std::vector<MethodTerms> terms = Terms();
  auto offered = [&](MethodKind kind) {
    for (const auto& t : terms) {
      if (t.kind == kind) return t.offered;
    }
    return false;
  };
  if (!offered(m.kind)) {
    errors.emplace("method.kind", "\"" + std::string(Name(m.kind)) +
                                      "\" payouts are not offered by this platform");
  } else if (m.kind == MethodKind::kSolana) {
    auto w = solana::ParseWallet(m.wallet, "method.wallet");
    if (!w.ok()) {
      keep(w.status());
    } else if (Status st = RefuseNonRecipient(*w, "method.wallet"); !st.ok()) {
      keep(st);
    } else {
      out.wallet = solana::ToBase58(*w);
    }
  } else {
    auto h = bank::NormalizeHolder(m.holder, "method.holder");
    if (h.ok()) {
      out.holder = *h;
    } else {
      keep(h.status());
    }
    if (m.kind == MethodKind::kSepa) {
      auto iban = bank::NormalizeIban(m.iban, "method.iban");
      if (iban.ok()) {
        out.iban = *iban;
      } else {
        keep(iban.status());
      }
      if (m.bic.empty() && iban.ok() && bank::IbanNeedsBic(*iban)) {
        errors.emplace("method.bic", "is required for an account outside the EEA");
      } else if (!m.bic.empty()) {
        auto bic = bank::NormalizeBic(m.bic, "method.bic");
        if (bic.ok()) {
          out.bic = *bic;
        } else {
          keep(bic.status());
        }
      }
    } else {
      if (Status st = bank::ValidateAbaRouting(m.routing_number, "method.routing_number");
          st.ok()) {
        out.routing_number = m.routing_number;
      } else {
        keep(st);
      }
      if (Status st = bank::ValidateAchAccount(m.account_number, "method.account_number");
          st.ok()) {
        out.account_number = m.account_number;
      } else {
        keep(st);
      }
      if (m.account_type != "checking" && m.account_type != "savings") {
        errors.emplace("method.account_type", "must be \"checking\" or \"savings\"");
      } else {
        out.account_type = m.account_type;
      }
    }
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  return out;
}

// A wallet that parses but that the money must not be sent to: the platform's own (a
// payout to it pays nobody and hides the money in the platform's balance), the USDC mint,
// or a program, sysvar or the incinerator. (The platform's token account and other PDAs
// are off the curve: ParseWallet refuses them.)
Status Payouts::RefuseNonRecipient(const solana::Pubkey& wallet, const std::string& field) const {
  if (key_ && wallet == key_->public_key) {
    return FieldError(field,
                      "is the platform's own payout wallet: give the address of your own wallet");
  }
  if (wallet == options_.solana_chain.mint) {
    return FieldError(field, "is the USDC mint, not a wallet: give the address of your own wallet");
  }
  if (auto name = solana::WellKnownAddress(wallet)) {
    return FieldError(field, "is the address of " + std::string(*name) +
                                 ", not a wallet: give the address of your own wallet");
  }
  return Status::Ok();
}

// --- settings

StatusOr<SettingsView> Payouts::GetSettings(const accounts::Principal& p) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  const Timestamp now = options_.clock->Now();
  SettingsView v;
  int64_t available = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Settings> s, PayoutsStore(tx).FindSettings(p.user.id));
    if (s) {
      v.settings = *s;
    } else {
      v.settings.provider_id = p.user.id;
      v.settings.threshold = options_.default_threshold;
      v.settings.updated_at = now;
    }
    GPUNEX_ASSIGN_OR_RETURN(Usdc a,
                            billing::Balance(tx, billing::ProviderAvailableAccount(p.user.id)));
    available = a.micros();
    return Status::Ok();
  }));
  const Settings& s = v.settings;
  if (s.method && s.method->kind == MethodKind::kSolana) {
    if (auto w = solana::ParsePubkey(s.method->wallet, "wallet"); w.ok()) {
      v.token_account =
          solana::ToBase58(solana::AssociatedTokenAddress(*w, options_.solana_chain.mint));
    }
  }
  v.methods = Terms();
  // The next payout: its date and what it would pay if it were made now.
  const Timestamp next = NextRunDate(s.schedule, now, options_.calendar);
  v.next.date = DateOf(next);
  v.next.schedule = s.schedule;
  // What a run would pay now: bank methods in whole cents.
  v.next.estimate = Usdc::Micros(s.method && s.method->kind != MethodKind::kSolana
                                     ? available - available % 10'000
                                     : available);
  const Usdc threshold = s.schedule == Schedule::kWeekly ? s.threshold : options_.monthly_minimum;
  if (!s.method) {
    v.next.reason = "no payout method";
  } else if (s.hold_until && *s.hold_until > next) {
    v.next.reason = "held until " + FormatRfc3339(*s.hold_until) + " after the change of details";
  } else if (Usdc::Micros(available) < std::max(threshold, TermsOf(s.method->kind).minimum)) {
    v.next.reason = "below the minimum of " +
                    UsdcText(std::max(threshold, TermsOf(s.method->kind).minimum)) +
                    ": carried over";
  } else {
    v.next.eligible = true;
  }
  return v;
}

StatusOr<SettingsView> Payouts::PutSettings(const accounts::Principal& p, const SettingsUpdate& u) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  FieldErrors errors;
  std::optional<Schedule> schedule;
  if (u.schedule) {
    schedule = kScheduleNames.Parse(*u.schedule);
    if (!schedule) errors.emplace("schedule", "must be " + kScheduleNames.Listed());
  }
  if (u.threshold_micro && (*u.threshold_micro < options_.min_threshold.micros() ||
                            *u.threshold_micro > options_.max_threshold.micros())) {
    errors.emplace("threshold_micro", "must be between " + UsdcText(options_.min_threshold) +
                                          " and " + UsdcText(options_.max_threshold));
  }
  std::optional<Method> method;
  if (u.method) {
    auto m = ValidateMethod(*u.method);
    if (m.ok()) {
      method = *m;
    } else {
      const Status st = m.status();
      for (const auto& [f, why] : st.fields()) errors.emplace(f, why);
    }
  }
  if (u.validate_only) return ValidationFailed(std::move(errors));

  // PAY-5: changing the method needs the password, from a session (a stolen API key cannot
  // redirect money). Whether the request changes the method is known for certain only in
  // the write transaction: a request that re-sends the current method needs no password,
  // but if the owner changes the method between its read and its write, writing it would
  // undo the owner's change without the password (and reset the hold). The password is
  // checked outside the transaction (hashing it takes a while), so the transaction writes
  // only what was decided on: when it finds that the method changes and the password was
  // not checked, it writes nothing and the request is decided again on what it found.
  bool password_checked = false;
  std::optional<Settings> current;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(current, PayoutsStore(tx).FindSettings(p.user.id));
    return Status::Ok();
  }));
  bool method_changes = method && (!current || current->method != method);
  for (;;) {
    if (method_changes && !password_checked) {
      if (p.IsApiKey()) {
        return PermissionDenied("changing the payout method needs a session and the password");
      }
      if (u.password.empty()) {
        errors.emplace("password", "is required to change the payout method");
      } else if (errors.empty()) {
        GPUNEX_ASSIGN_OR_RETURN(bool ok, accounts_.CheckPassword(p, u.password));
        if (!ok) errors.emplace("password", "is not the account's password");
        password_checked = ok;
      }
    }
    if (!errors.empty()) return ValidationFailed(std::move(errors));
    bool undecided = false;  // the transaction found a change of method not checked for
    GPUNEX_RETURN_IF_ERROR(WriteSettings(p, u, schedule, method, password_checked, &undecided));
    if (!undecided) break;
    method_changes = true;  // at most once more: the password is checked now
  }
  return GetSettings(p);
}

Status Payouts::WriteSettings(const accounts::Principal& p, const SettingsUpdate& u,
                              std::optional<Schedule> schedule, const std::optional<Method>& method,
                              bool password_checked, bool* undecided) {
  const Timestamp now = options_.clock->Now();
  return db_.Transact([&](store::Tx& tx) -> Status {
    *undecided = false;
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Settings> cur, s.FindSettings(p.user.id));
    Settings next;
    if (cur) {
      next = *cur;
    } else {
      next.provider_id = p.user.id;
      next.threshold = options_.default_threshold;
    }
    if (schedule) next.schedule = *schedule;
    if (u.threshold_micro) next.threshold = Usdc::Micros(*u.threshold_micro);
    const bool changes = method && next.method != method;
    if (changes && !password_checked) {
      *undecided = true;
      return Status::Ok();  // nothing written
    }
    // A request that changes nothing writes nothing: a stream of them (re-sending the
    // current settings) then cannot make the owner's change fail on write conflicts.
    if (cur && !changes && next.schedule == cur->schedule && next.threshold == cur->threshold) {
      return Status::Ok();
    }
    if (changes) {
      const bool first = !next.method;
      next.method = method;
      next.changed_at = now;
      // A first method is not a redirection of money: no hold (docs/payouts.md).
      if (!first) next.hold_until = now + Seconds(options_.hold_after_change_s);
      GPUNEX_ASSIGN_OR_RETURN(accounts::User user, accounts::LoadUser(tx, p.user.id));
      notify::Notice n;
      n.kind = "payouts.method_changed";
      n.title = first ? "Your payout method was set" : "Your payout method was changed";
      n.text = std::string("Payouts now go to ") +
               (method->kind == MethodKind::kSolana
                    ? "a USDC wallet on Solana ending in " +
                          method->wallet.substr(method->wallet.size() - 4)
                : method->kind == MethodKind::kSepa
                    ? "an IBAN ending in " + method->iban.substr(method->iban.size() - 4)
                    : "a US account ending in " +
                          method->account_number.substr(method->account_number.size() - 4)) +
               "." +
               (first ? ""
                      : " Payouts to the new details are held until " +
                            FormatRfc3339(*next.hold_until) + ".") +
               " If you did not make this change, change your password and contact the "
               "platform at once.";
      n.link = "/#/provider/payments";
      n.email = true;
      GPUNEX_RETURN_IF_ERROR(
          notify::SendNotice(tx, now, {user.id, user.email, user.name}, n, options_.notices));
    }
    next.updated_at = now;
    return s.PutSettings(next);
  });
}

// --- earnings

StatusOr<EarningsReport> Payouts::Earnings(const accounts::Principal& p, Timestamp from,
                                           Timestamp to, const std::string& group) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  const std::optional<EarningsGroup> by = kEarningsGroupNames.Parse(group);
  if (!by) return FieldError("group", "must be " + kEarningsGroupNames.Listed());
  if (to <= from) return FieldError("to", "must be after from");
  const Timestamp now = options_.clock->Now();
  EarningsReport out;
  out.from = from;
  out.to = to;
  out.group = *by;
  std::vector<RentalUsage> usage, period_usage;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Settings> st, s.FindSettings(p.user.id));
    out.schedule = st ? st->schedule : Schedule::kWeekly;
    const Period period = PeriodOf(out.schedule, now);
    out.period_from = period.from;
    out.period_to = period.to;
    const std::string& u = p.user.id;
    GPUNEX_ASSIGN_OR_RETURN(
        auto b, billing::Balances(
                    tx, {billing::ProviderPendingAccount(u), billing::ProviderAvailableAccount(u),
                         billing::ProviderInPaymentAccount(u), billing::ProviderPaidAccount(u)}));
    out.totals.pending = b[billing::ProviderPendingAccount(u)];
    out.totals.available = b[billing::ProviderAvailableAccount(u)];
    out.totals.in_payment = b[billing::ProviderInPaymentAccount(u)];
    out.totals.paid = b[billing::ProviderPaidAccount(u)];
    GPUNEX_ASSIGN_OR_RETURN(usage, Usage(tx, u, from, to, *by == EarningsGroup::kDay));
    GPUNEX_ASSIGN_OR_RETURN(period_usage, Usage(tx, u, period.from, period.to, false));
    return Status::Ok();
  }));
  int64_t period_net = 0;
  for (const auto& x : period_usage) period_net += x.provider_micro - x.refund_provider_micro;
  out.totals.period = Usdc::Micros(period_net);

  std::map<std::string, EarningsRow> rows;
  std::map<std::string, std::set<std::string>> rentals_of;
  auto add = [&](const std::string& key, const RentalUsage& x, int64_t share_num,
                 int64_t share_den) {
    EarningsRow& r = rows[key];
    r.key = key;
    auto part = [&](int64_t v) {
      return static_cast<int64_t>(static_cast<Int128>(v) * share_num / share_den);
    };
    const int64_t gross = x.provider_micro + x.fee_micro;
    r.gross = Usdc::Micros(r.gross.micros() + part(gross));
    r.commission = Usdc::Micros(r.commission.micros() + part(x.fee_micro - x.refund_fee_micro));
    r.refunds =
        Usdc::Micros(r.refunds.micros() + part(x.refund_provider_micro + x.refund_fee_micro));
    r.net = Usdc::Micros(r.net.micros() + part(x.provider_micro - x.refund_provider_micro));
    // GPU-seconds: of the whole rental at its per-GPU rate, split like the money.
    r.gpu_seconds += part(GpuSecondsOf(gross, x.price_micro));
    rentals_of[key].insert(x.rental_id);
  };
  for (const auto& x : usage) {
    if (*by == EarningsGroup::kModel) {
      add(x.gpu_model, x, 1, 1);
      rows[x.gpu_model].gpu_model = rows[x.gpu_model].label = x.gpu_model;
    } else if (*by == EarningsGroup::kDay) {
      const std::string day = DateOf(FromUnixMicros(x.day * 86'400'000'000));
      add(day, x, 1, 1);
      rows[day].day = rows[day].label = day;
    } else {
      // Per GPU: a rental of several GPUs earns on each equally.
      const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(x.gpu_ids.size()));
      for (int64_t i = 0; i < n; ++i) {
        const std::string gpu = x.gpu_ids.empty() ? "?" : x.gpu_ids[static_cast<size_t>(i)];
        const std::string key = x.machine_id + "/" + gpu;
        add(key, x, 1, n);
        EarningsRow& r = rows[key];
        r.machine_id = x.machine_id;
        r.gpu_id = gpu;
        r.gpu_model = x.gpu_model;
        r.label = x.gpu_model + " (GPU " + gpu + " of machine " + x.machine_id + ")";
      }
    }
  }
  for (auto& [key, r] : rows) {
    r.rentals = static_cast<int64_t>(rentals_of[key].size());
    out.rows.push_back(r);
  }
  if (*by != EarningsGroup::kDay) {
    std::stable_sort(out.rows.begin(), out.rows.end(),
                     [](const EarningsRow& a, const EarningsRow& b) { return a.net > b.net; });
  }
  return out;
}

StatusOr<MonthlyStatement> Payouts::Statement(const accounts::Principal& p,
                                              const std::string& month) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  auto from = ParseDate(month + "-01");
  if (month.size() != 7 || !from) return FieldError("month", "must be a month as YYYY-MM");
  const Period period = PeriodOf(Schedule::kMonthly, *from);
  MonthlyStatement out;
  out.month = month;
  std::vector<RentalUsage> usage;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(usage, Usage(tx, p.user.id, period.from, period.to, false));
    GPUNEX_ASSIGN_OR_RETURN(out.payouts,
                            s.ProviderPayoutsBetween(p.user.id, period.from, period.to));
    return Status::Ok();
  }));
  int64_t gross = 0, commission = 0, refunds = 0, net = 0, paid = 0;
  for (const auto& x : usage) {
    StatementLine l;
    l.rental_id = x.rental_id;
    l.gpu_model = x.gpu_model;
    l.gpus = x.gpus;
    const int64_t g = x.provider_micro + x.fee_micro;
    l.gpu_seconds = GpuSecondsOf(g, x.price_micro);
    l.gross = Usdc::Micros(g);
    l.commission = Usdc::Micros(x.fee_micro - x.refund_fee_micro);
    l.refunds = Usdc::Micros(x.refund_provider_micro + x.refund_fee_micro);
    l.net = Usdc::Micros(x.provider_micro - x.refund_provider_micro);
    gross += l.gross.micros();
    commission += l.commission.micros();
    refunds += l.refunds.micros();
    net += l.net.micros();
    out.gpu_seconds += l.gpu_seconds;
    out.lines.push_back(std::move(l));
  }
  for (const auto& po : out.payouts) {
    if (po.state == PayoutState::kConfirmed) paid += po.amount.micros();
  }
  out.rentals = static_cast<int64_t>(out.lines.size());
  out.gross = Usdc::Micros(gross);
  out.commission = Usdc::Micros(commission);
  out.refunds = Usdc::Micros(refunds);
  out.net = Usdc::Micros(net);
  out.paid = Usdc::Micros(paid);
  return out;
}

StatusOr<Page<Payout>> Payouts::ProviderPayouts(const accounts::Principal& p,
                                                const PageRequest& page) {
  GPUNEX_RETURN_IF_ERROR(RequireProvider(p));
  Page<Payout> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, PayoutsStore(tx).ProviderPayouts(p.user.id, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::pair<Payout, std::vector<PayoutLine>>> Payouts::ProviderPayout(
    const accounts::Principal& p, const std::string& id) {
  std::optional<Payout> po;
  std::vector<RentalUsage> usage;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(po, s.FindPayout(id, true));
    // Another provider's payout is as absent as one that does not exist.
    if (!po || (po->provider_id != p.user.id && !p.IsAdmin())) return NotFound("no payout " + id);
    GPUNEX_ASSIGN_OR_RETURN(usage,
                            UsageCovered(tx, po->provider_id, po->covers_from, po->covers_until));
    return Status::Ok();
  }));
  std::vector<PayoutLine> lines;
  for (const auto& x : usage) {
    const int64_t net = x.provider_micro - x.refund_provider_micro;
    if (net > 0) lines.push_back({x.rental_id, x.gpu_model, Usdc::Micros(net)});
  }
  return std::make_pair(std::move(*po), std::move(lines));
}

// --- admin queries

StatusOr<std::vector<Run>> Payouts::Runs(const accounts::Principal& p) {
  GPUNEX_RETURN_IF_ERROR(RequireAdmin(p));
  std::vector<Run> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(out, s.ListRuns(100));
    for (Run& r : out) {
      GPUNEX_RETURN_IF_ERROR(s.LoadCounts(&r));
      GPUNEX_ASSIGN_OR_RETURN(r.files, s.Files(r.id, false));
    }
    return Status::Ok();
  }));
  return out;
}

StatusOr<RunDetail> Payouts::GetRun(const accounts::Principal& p, const std::string& id) {
  GPUNEX_RETURN_IF_ERROR(RequireAdmin(p));
  RunDetail out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Run> r, s.FindRun(id));
    if (!r) return NotFound("no payout run " + id);
    out.run = *r;
    GPUNEX_RETURN_IF_ERROR(s.LoadCounts(&out.run));
    GPUNEX_ASSIGN_OR_RETURN(out.run.files, s.Files(id, false));
    GPUNEX_ASSIGN_OR_RETURN(out.payouts, s.AllRunPayouts(id));
    std::vector<std::string> providers;
    for (const Payout& po : out.payouts) providers.push_back(po.provider_id);
    GPUNEX_ASSIGN_OR_RETURN(auto names, accounts::UserNames(tx, providers));
    for (Payout& po : out.payouts) po.provider_name = names[po.provider_id];
    GPUNEX_ASSIGN_OR_RETURN(out.skips, s.Skips(id));
    return Status::Ok();
  }));
  return out;
}

StatusOr<BankFile> Payouts::File(const accounts::Principal& p, const std::string& run_id,
                                 const std::string& name) {
  GPUNEX_RETURN_IF_ERROR(RequireAdmin(p));
  std::optional<BankFile> f;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(f, PayoutsStore(tx).FindFile(run_id, name, true));
    return Status::Ok();
  }));
  if (!f) return NotFound("no file " + name + " in payout run " + run_id);
  return *f;
}

StatusOr<WalletStatus> Payouts::Wallet(const accounts::Principal& p) {
  GPUNEX_RETURN_IF_ERROR(RequireAdmin(p));
  WalletStatus w;
  if (!rpc_ || !key_) return w;
  w.configured = true;
  w.public_key = solana::ToBase58(key_->public_key);
  w.token_account = solana::ToBase58(platform_token_account_);
  w.mint = solana::ToBase58(options_.solana_chain.mint);
  const std::string& c = options_.solana_chain.commitment;
  auto sol = rpc_->GetAccountInfo(key_->public_key, c);
  auto usdc = rpc_->GetAccountInfo(platform_token_account_, c);
  if (!sol.ok() || !usdc.ok()) {
    w.error = (!sol.ok() ? sol.status() : usdc.status()).ToString();
    return w;
  }
  if (*sol) w.sol_lamports = static_cast<int64_t>((*sol)->lamports);
  if (*usdc) {
    if (auto t = solana::ParseTokenAccount((*usdc)->data))
      w.usdc_micro = static_cast<int64_t>(t->amount);
  }
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    PayoutsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> runs, s.UnfinishedRuns());
    for (const auto& id : runs) {
      GPUNEX_ASSIGN_OR_RETURN(
          auto waiting,
          s.RunPayouts(id, MethodKind::kSolana, {PayoutState::kWaitingFunds, PayoutState::kPlanned},
                       1'000'000));
      for (const auto& po : waiting) {
        w.needed_micro += NetOf(po).micros();
        w.needed_lamports +=
            options_.solana_chain.fee_lamports + options_.solana_chain.ata_rent_lamports;
      }
    }
    return Status::Ok();
  }));
  w.short_of_funds = w.needed_micro > w.usdc_micro || w.needed_lamports > w.sol_lamports;
  return w;
}

// --- the loop

void Payouts::ScheduleOn(Background& background) {
  ticks_ = background.Add({.name = "payouts.tick",
                           .every = std::chrono::milliseconds(options_.loop_ms),
                           .pass = [this] { return Tick().status(); }});
}

}  // namespace gpunex::platform::payouts
