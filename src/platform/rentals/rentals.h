// Rentals (RNT-1..6, LED-1..4): a customer rents GPUs of one offer; the platform starts
// their container through the fleet's workload path (the same validation and isolation
// policy, re-checked by the agent), follows it through pending → starting → running →
// ending → ended, meters it per second and charges it through the ledger.
//
// Billing (docs/billing.md): a rental is billed from the moment the agent reports its
// container running (never for pulling, creating, or a container that fails to start)
// until its end is decided: the customer's stop, the container's exit as the agent
// reports it, the rental's caps (max_duration_s, max_cost_micro), the customer's balance
// running out, or for a machine gone dark its last heartbeat. Every metering tick (every
// meter_interval_s, and at the end) charges the totals of metering.h for the billed
// seconds, less what was charged before: customer → provider pending (the provider's
// part) and customer → platform (the commission), under transfer ids made of the rental
// and the new totals, in the transaction that stores the rental's totals. A rental is
// never charged past the moment its customer's balance reached zero: a tick charges at
// most what the balance holds, at a whole second, and ends the rental there.
//
// A machine offline for longer than agent_lost_grace_s ends its rentals as "agent_lost"
// (the provider's fault), billed to its last heartbeat; rentals that the provider's side
// ended within their first early_fault_refund_s are refunded in full. Pending earnings
// become available earnings_hold_s after the usage (billing::ReleaseEarnings).
//
// Authorization: a customer reads and stops their own rentals; a provider reads the
// rentals on its machines; admins read all and stop any (as the platform: "operator").
//
// Thread-safety: Rentals is safe to share.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/background.h"
#include "common/money.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/billing/billing.h"
#include "platform/fleet/fleet.h"
#include "platform/fleet/workloads.h"
#include "platform/market/market.h"
#include "platform/notify/notify.h"
#include "platform/providers/provider_status.h"
#include "platform/rentals/job.h"
#include "platform/rentals/rental.h"
#include "platform/store/db.h"

namespace gpunex::platform::rentals {

struct RentalsOptions {
  int64_t meter_interval_s = 60;
  int64_t agent_lost_grace_s = 300;
  int64_t earnings_hold_s = 24 * 3600;
  int64_t commission_community_bps = 2000;
  int64_t commission_enterprise_bps = 1500;
  int64_t early_fault_refund_s = 600;
  int64_t low_balance_s = 70 * 60;  // warn when the balance covers less than this
  int64_t release_interval_s = 60;
  int sweep_ms = 1000;
  notify::NoticeSettings notices;
  const Clock* clock = &SystemClock();
};

inline constexpr int64_t kMaxGpus = 8;
inline constexpr int64_t kMinDurationS = 60;
inline constexpr int64_t kMaxDurationS = 365 * 24 * 3600;
inline constexpr int64_t kMaxCostMicro = 1'000'000'000'000;  // 1,000,000 USDC

struct CreateRentalRequest {
  std::string offer_id;
  int64_t gpus = 0;
  ContainerSpec container;
  std::optional<int64_t> max_duration_s;
  std::optional<Usdc> max_cost;
  std::string idempotency_key;  // "" without one
};

// The request's own values, before anything is looked up; the container as the fleet
// checks every container (fleet::ValidateContainer), with the operator's `images` policy.
FieldErrors ValidateRental(const CreateRentalRequest& req, const fleet::ImagePolicy& images);

// The placement rule, one for every placement: a rental asked for by offer (POST /rentals)
// and a job the scheduler places (Plan, and the commit's re-check in CreateInTx). OK when
// `customer_id` may rent GPUs of a machine of `provider_id`; a field error on "offer_id"
// when not: a provider never rents its own GPUs (it would pay itself, and the rental
// would count for its own machine's reliability).
Status CheckPlacement(std::string_view customer_id, std::string_view provider_id);

// What a rental must find covered by the balance before it is made (docs/billing.md, "The
// first hour"): its first hour at `price` per GPU-hour, or its max_duration_s or its
// max_cost when they come first.
StatusOr<Usdc> FirstHourCost(Usdc price, int64_t gpus, std::optional<int64_t> max_duration_s,
                             std::optional<Usdc> max_cost);

// What the customer's active rentals (pending, starting, running) will still draw within
// their first hour: for each, its FirstHourCost less what it was charged so far (none
// once its first hour is paid). A new rental or job needs the balance less this. Read in
// the caller's transaction, which is serializable: rentals created concurrently are
// counted, or the transaction is retried.
struct FirstHoursHeld {
  Usdc amount;
  int64_t rentals = 0;  // the active rentals that hold some of it
};
StatusOr<FirstHoursHeld> HeldForFirstHours(store::Tx& tx, const std::string& customer_id);

// A provider's rentals, read in the caller's transaction for its earnings (payouts/): the
// ids of all of them, in every state; and the rentals among `ids` that exist, without
// their image and command, in no particular order.
StatusOr<std::vector<std::string>> ProviderRentalIds(store::Tx& tx, const std::string& provider_id);
StatusOr<std::vector<Rental>> FindRentals(store::Tx& tx, const std::vector<std::string>& ids);

// Whether the rental has ended or is ending: nothing of it may be reached any more.
bool HasEnded(const Rental& r);
// OK when the rental runs, so that its container may be reached; otherwise kGone when it
// has ended (or is ending), or kFailedPrecondition saying what it is still.
Status RequireRunning(const Rental& r);

// Of `workload_ids`, those that may no longer be reached (relay/, docs/access.md): their
// rental is ending or ended, or they are no rental's. In the caller's transaction.
StatusOr<std::vector<std::string>> UnreachableWorkloads(
    store::Tx& tx, const std::vector<std::string>& workload_ids);

struct BalanceView {
  Usdc balance;
  Usdc running_cost_per_hour;
  std::optional<int64_t> seconds_left;  // none when nothing runs
  bool low = false;
  int64_t running_rentals = 0;
};

// Which rentals a list holds: state "" (any), "active" (not ended) or a state's name;
// an admin's customer_id and provider_id ("" any; ignored for other callers).
struct RentalFilter {
  std::string state;
  std::string customer_id, provider_id;
};

// An operator's refund of (part of) what a rental was charged (docs/billing.md,
// "Refunds"). `amount` at most what it was charged less what was refunded before; the
// reason is what the customer reads on their statement.
struct RefundRequest {
  std::string rental_id;
  Usdc amount;
  std::string reason;
  std::string idempotency_key;  // "" without one
};
struct RefundResult {
  Rental rental;
  std::vector<billing::Transfer> transfers;  // what moved, to the customer
};

class Rentals {
 public:
  // Registers the workload hook on `fleet`. REQUIRES: before the fleet is scheduled.
  Rentals(store::Database& db, fleet::Fleet& fleet, fleet::Workloads& workloads,
          market::Market& market, RentalsOptions options);
  Rentals(const Rentals&) = delete;
  Rentals& operator=(const Rentals&) = delete;

  // Field errors name the request's fields ("offer_id", "gpus", "image", "env.NAME",
  // "max_duration_s", "max_cost_micro"; "offer_id" for the caller's own offer) and
  // "balance" when, less what the customer's active rentals hold for their first hour
  // (HeldForFirstHours), it does not cover the first hour (or max_duration_s, or
  // max_cost_micro, when less). kFailedPrecondition when the offer's free GPUs were taken
  // meanwhile or its price rose. With an idempotency key the same request makes one
  // rental, whatever races.
  StatusOr<Rental> Create(const accounts::Principal& p, const CreateRentalRequest& req);
  // In the caller's transaction (the scheduler's commit): the same, for `customer_id`,
  // with every check (the placement rule, the GPUs, the price, the balance) made against
  // the transaction's state.
  StatusOr<Rental> CreateInTx(store::Tx& tx, Timestamp now, const std::string& customer_id,
                              const market::Offer& offer, const CreateRentalRequest& req,
                              const std::string& job_id);
  StatusOr<Rental> Get(const accounts::Principal& p, const std::string& id);
  // The caller's rentals (every rental for admins, or one customer's or provider's).
  StatusOr<Page<Rental>> List(const accounts::Principal& p, const RentalFilter& filter,
                              const PageRequest& page);
  // The rentals on the caller's machines.
  StatusOr<Page<Rental>> ProviderRentals(const accounts::Principal& p, const std::string& state,
                                         const PageRequest& page);
  // The customer stops it (an admin: the platform, "operator"). kFailedPrecondition when
  // it has ended or is ending.
  StatusOr<Rental> Stop(const accounts::Principal& p, const std::string& id);
  // Admins give back part or all of what an ended (or ending) rental was charged: the
  // commission's share from the platform, the provider's from its pending earnings, then
  // its available ones, and what the provider no longer holds (paid out) from the
  // platform. Field errors name "amount_micro" (at most charged − refunded), "reason"
  // (one line, 1 to 200 characters) and "Idempotency-Key" (used for another refund);
  // kFailedPrecondition while the rental is still billed; kNotFound for no rental. With
  // an idempotency key a repeat returns the first refund and moves nothing.
  StatusOr<RefundResult> Refund(const accounts::Principal& p, const RefundRequest& req);
  StatusOr<fleet::LogPage> Logs(const accounts::Principal& p, const std::string& id,
                                const PageRequest& page);
  StatusOr<BalanceView> Balance(const accounts::Principal& p);
  // The commission of a provider's tier, in basis points.
  int64_t CommissionBps(providers::Tier tier) const;
  // What workload images may name (the fleet's, from [fleet]).
  const fleet::ImagePolicy& image_policy() const { return fleet_.options().images; }

  // One round of the background work; tests call them directly.
  // Meters the running rentals due now; returns how many were metered.
  StatusOr<int64_t> MeterDue();
  // Ends the rentals of machines offline for longer than the grace.
  StatusOr<int64_t> EndLost();
  StatusOr<int64_t> ReleaseEarnings();

  // For market::Market::SetRentalSamples.
  static StatusOr<std::vector<market::RentalSample>> Samples(store::Tx& tx,
                                                             const std::string& gpu_model,
                                                             const std::string& region,
                                                             Timestamp from, Timestamp to);

  // Schedules the meter every sweep_ms: MeterDue(), EndLost(), and ReleaseEarnings()
  // every release_interval_s of the clock.
  void ScheduleOn(Background& background);
  Status MeterAndRelease() EXCLUDES(release_mu_);

  const RentalsOptions& options() const { return options_; }

  // Variables another module puts into the environment of a customer's rental
  // containers (sshkeys: PUBLIC_KEY), read in the transaction that creates the rental.
  // A variable the customer set keeps the customer's value; none is added to a container
  // that already has protocol::kMaxEnvEntries.
  using ContainerEnvFn = std::function<StatusOr<std::vector<std::pair<std::string, std::string>>>(
      store::Tx& tx, const std::string& customer_id)>;
  // REQUIRES: while the platform is built, before the first rental.
  void AddContainerEnv(ContainerEnvFn source) { env_sources_.push_back(std::move(source)); }

 private:
  Status OnWorkloadChange(store::Tx& tx, Timestamp now, const fleet::Workload& w);
  // Meters `r` up to `until` with `balance` left for it (what the customer's balance
  // holds now); updates both. Returns the reason it must end now, if any, with the
  // moment its billing ends.
  struct Cap {
    std::optional<EndReason> reason;  // none: it goes on
    EndParty party = EndParty::kCustomer;
    Timestamp billing_end;
  };
  StatusOr<Cap> Meter(Timestamp now, Timestamp until, Rental& r, Usdc& balance,
                      std::vector<billing::Transfer>& transfers) const;
  // Tells the machine's provider (dashboard and email) that `r` ended on its side, and
  // what to fix there.
  Status NoticeProvider(store::Tx& tx, Timestamp now, const Rental& r);
  // Decides the end of an active rental: bills it to `billing_end`, asks the agent to
  // remove its container (unless `workload_ended`), refunds an early provider fault.
  Status End(store::Tx& tx, Timestamp now, Rental& r, EndReason reason, EndParty party,
             Timestamp billing_end, bool workload_ended, const std::string& detail);
  Status MeterCustomers(const std::vector<std::string>& customers, Timestamp now, int64_t* metered);
  Status WarnIfLow(store::Tx& tx, Timestamp now, const std::string& customer_id, Usdc balance,
                   Usdc cost_per_hour);

  store::Database& db_;
  fleet::Fleet& fleet_;
  fleet::Workloads& workloads_;
  market::Market& market_;
  const RentalsOptions options_;
  std::vector<ContainerEnvFn> env_sources_;  // set before the first rental, then read only
  Mutex release_mu_;
  Timestamp last_release_ GUARDED_BY(release_mu_){};
};

// The pseudonym a provider sees for a customer.
std::string CustomerPseudonym(std::string_view customer_id);

}  // namespace gpunex::platform::rentals
