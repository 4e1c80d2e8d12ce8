#include "platform/billing/ledger.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "common/invariant.h"
#include "platform/billing/billing_store.h"

namespace gpunex::platform::billing {
namespace {

// The kind of the providers' available accounts (ledger_accounts.kind).
constexpr std::string_view kProviderAvailableKind = "provider_available";

std::string Account(std::string_view kind, std::string_view owner) {
  std::string out(kind);
  out += ':';
  out += owner;
  return out;
}

bool SameTransfer(const Transfer& a, const Transfer& b) {
  return a.kind == b.kind && a.debit_account == b.debit_account &&
         a.credit_account == b.credit_account && a.amount == b.amount &&
         a.rental_id == b.rental_id && a.reference == b.reference && a.at == b.at;
}

}  // namespace

std::string CustomerAccount(std::string_view user_id) { return Account("customer", user_id); }
std::string ProviderPendingAccount(std::string_view provider_id) {
  return Account("provider_pending", provider_id);
}
std::string ProviderAvailableAccount(std::string_view provider_id) {
  return Account(kProviderAvailableKind, provider_id);
}
std::string ProviderInPaymentAccount(std::string_view provider_id) {
  return Account("provider_in_payment", provider_id);
}
std::string ProviderPaidAccount(std::string_view provider_id) {
  return Account("provider_paid", provider_id);
}

bool MayGoNegative(std::string_view account) { return account.starts_with("world_"); }

StatusOr<int64_t> Post(store::Tx& tx, const std::vector<Transfer>& transfers) {
  if (transfers.empty()) return int64_t{0};
  std::set<std::string> accounts;
  std::map<std::string, const Transfer*> by_id;
  std::vector<const Transfer*> ordered;
  ordered.reserve(transfers.size());
  for (const Transfer& t : transfers) {
    if (!t.amount.is_positive())
      return InvalidArgument("transfer " + t.id + ": the amount must be positive");
    if (t.id.empty()) return InvalidArgument("a transfer needs an id");
    if (t.debit_account == t.credit_account)
      return InvalidArgument("transfer " + t.id + ": from an account to itself");
    if (t.reference.size() > kMaxReference)
      return InvalidArgument("transfer " + t.id + ": the reference is too long");
    auto [it, fresh] = by_id.emplace(t.id, &t);
    if (!fresh) {
      if (!SameTransfer(*it->second, t))
        return AlreadyExists("transfer " + t.id + " is given twice with different fields");
      continue;
    }
    accounts.insert(t.debit_account);
    accounts.insert(t.credit_account);
    ordered.push_back(&t);
  }
  BillingStore s(tx);
  GPUNEX_RETURN_IF_ERROR(s.EnsureAccounts(
      std::vector<std::string>(accounts.begin(), accounts.end()), transfers[0].at));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> inserted, s.InsertTransfers(ordered));
  const std::set<std::string> fresh(inserted.begin(), inserted.end());
  // Ids that existed already: a retry of the same transfer is a no-op; anything else is a
  // caller's mistake that must not pass silently.
  std::vector<std::string> existing;
  for (const Transfer* t : ordered) {
    if (!fresh.count(t->id)) existing.push_back(t->id);
  }
  if (!existing.empty()) {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Transfer> stored, s.FindTransfers(existing));
    for (const Transfer& old : stored) {
      if (!SameTransfer(old, *by_id.at(old.id)))
        return AlreadyExists("transfer " + old.id + " exists with other fields");
    }
  }
  std::map<std::string, int64_t> delta;
  for (const Transfer* t : ordered) {
    if (!fresh.count(t->id)) continue;
    delta[t->debit_account] -= t->amount.micros();
    delta[t->credit_account] += t->amount.micros();
  }
  int64_t net = 0;
  for (const auto& [account, d] : delta) net += d;
  GPUNEX_INVARIANT(net == 0, "a batch of transfers moves as much into accounts as out of them");
  // Increases first, so that a batch that moves money through an account in order
  // (A → B, then B → C) does not fail on the intermediate step.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [account, d] : delta) {
      if (d == 0 || (pass == 0) != (d > 0)) continue;
      GPUNEX_ASSIGN_OR_RETURN(bool ok, s.AddToBalance(account, d));
      if (!ok) {
        return FailedPrecondition("the balance of " + account +
                                  " is too low for this transfer (it may not go below zero)");
      }
    }
  }
  return static_cast<int64_t>(fresh.size());
}

StatusOr<std::optional<Transfer>> FindTransfer(store::Tx& tx, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Transfer> found, BillingStore(tx).FindTransfers({id}));
  if (found.empty()) return std::optional<Transfer>();
  return std::optional<Transfer>(std::move(found[0]));
}

StatusOr<Usdc> Balance(store::Tx& tx, std::string_view account) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<int64_t> b, BillingStore(tx).Balance(account));
  return Usdc::Micros(b.value_or(0));
}

StatusOr<std::map<std::string, Usdc>> Balances(store::Tx& tx,
                                               const std::vector<std::string>& accounts) {
  GPUNEX_ASSIGN_OR_RETURN(auto stored, BillingStore(tx).Balances(accounts));
  std::map<std::string, Usdc> out;
  for (const auto& a : accounts) {
    auto it = stored.find(a);
    out[a] = Usdc::Micros(it == stored.end() ? 0 : it->second);
  }
  return out;
}

StatusOr<Page<Entry>> Statement(store::Tx& tx, std::string_view account, Timestamp from,
                                Timestamp to, const PageRequest& page) {
  BillingStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(Page<Transfer> ts, s.TransfersOf(account, from, to, page));
  Page<Entry> out;
  out.next = ts.next;
  if (ts.items.empty()) return out;
  // The balance after the newest entry: today's, less what moved after it (beyond `to`).
  GPUNEX_ASSIGN_OR_RETURN(Usdc now, Balance(tx, account));
  GPUNEX_ASSIGN_OR_RETURN(int64_t later,
                          s.SignedSumAfter(account, ts.items.front().at, ts.items.front().id));
  int64_t balance = now.micros() - later;
  for (Transfer& t : ts.items) {
    Entry e;
    e.signed_amount = t.credit_account == account ? t.amount : Usdc::Micros(-t.amount.micros());
    e.balance_after = Usdc::Micros(balance);
    balance -= e.signed_amount.micros();
    e.transfer = std::move(t);
    out.items.push_back(std::move(e));
  }
  return out;
}

StatusOr<CheckResult> Check(store::Tx& tx) {
  BillingStore s(tx);
  CheckResult out;
  GPUNEX_ASSIGN_OR_RETURN(auto stored, s.StoredBalances());
  GPUNEX_ASSIGN_OR_RETURN(auto computed, s.ComputedBalances());
  GPUNEX_ASSIGN_OR_RETURN(out.transfers, s.CountTransfers());
  out.accounts = static_cast<int64_t>(stored.size());
  __extension__ __int128 sum = 0;
  for (const auto& [account, balance] : stored) {
    sum += balance;
    auto it = computed.find(account);
    const int64_t c = it == computed.end() ? 0 : it->second;
    if (c != balance) out.mismatches.push_back({account, Usdc::Micros(balance), Usdc::Micros(c)});
  }
  for (const auto& [account, c] : computed) {
    if (!stored.count(account)) out.mismatches.push_back({account, Usdc::Zero(), Usdc::Micros(c)});
  }
  out.sum_micro = static_cast<int64_t>(sum);
  out.ok = sum == 0 && out.mismatches.empty();
  return out;
}

StatusOr<int64_t> ReleaseEarnings(store::Tx& tx, Timestamp until, Timestamp now) {
  BillingStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(Timestamp from, s.ReleasedUntil());
  if (until <= from) return int64_t{0};
  GPUNEX_ASSIGN_OR_RETURN(auto usage, s.ReleasableUsage(from, until));
  // An operator's refund (rentals/: Rentals::Refund) takes from the pending earnings
  // before their usage is released: a release makes available at most what pending holds
  // beyond the usage still in its hold, so the refunded part is never released and no
  // younger usage is released early.
  GPUNEX_ASSIGN_OR_RETURN(
      auto younger, s.ReleasableUsage(until, FromUnixMicros(std::numeric_limits<int64_t>::max())));
  std::vector<std::string> accounts;
  for (const auto& [account, amount] : usage) accounts.push_back(account);
  GPUNEX_ASSIGN_OR_RETURN(auto held, Balances(tx, accounts));
  std::vector<Transfer> ts;
  const std::string prefix = Account("provider_pending", "");
  for (auto [account, amount] : usage) {
    amount = std::min(amount, held[account].micros() - younger[account]);
    if (amount <= 0 || !account.starts_with(prefix)) continue;
    const std::string provider = account.substr(prefix.size());
    Transfer t;
    t.id = "rel_" + provider + "_" + std::to_string(ToUnixMicros(until));
    t.kind = std::string(kEarningsAvailable);
    t.debit_account = account;
    t.credit_account = ProviderAvailableAccount(provider);
    t.amount = Usdc::Micros(amount);
    t.reference = "usage up to " + FormatRfc3339(until);
    t.at = now;
    ts.push_back(std::move(t));
  }
  GPUNEX_RETURN_IF_ERROR(Post(tx, ts).status());
  GPUNEX_RETURN_IF_ERROR(s.SetReleasedUntil(until));
  return static_cast<int64_t>(ts.size());
}

StatusOr<std::vector<RentalUsageSum>> UsageOfRentals(store::Tx& tx,
                                                     const std::vector<std::string>& rental_ids,
                                                     Timestamp from, Timestamp to, bool by_day) {
  return BillingStore(tx).UsageSums(rental_ids, from, to, by_day);
}

StatusOr<std::vector<ProviderBalance>> AvailableBalances(store::Tx& tx, const std::string& after,
                                                         int64_t limit) {
  return BillingStore(tx).OwnerBalances(kProviderAvailableKind, after, limit);
}

StatusOr<Timestamp> ReleasedUntil(store::Tx& tx) { return BillingStore(tx).ReleasedUntil(); }

}  // namespace gpunex::platform::billing
