#include "platform/rentals/rentals.h"

#include <algorithm>
#include <set>

#include "common/ids.h"
#include "common/invariant.h"
#include "common/json.h"
#include "common/log.h"
#include "platform/billing/ledger.h"
#include "platform/billing/metering.h"
#include "platform/pricing/pricing.h"
#include "platform/providers/providers.h"
#include "platform/rentals/rentals_store.h"

namespace gpunex::platform::rentals {
namespace {

// Every change of a rental's state after its creation goes through here (rental.h's
// RentalMayGo).
Status Move(Rental& r, RentalState to) {
  GPUNEX_INVARIANT(RentalMayGo(r.state, to), "rental " + r.id + " may not go from " +
                                                 std::string(Name(r.state)) + " to " +
                                                 std::string(Name(to)));
  r.state = to;
  return Status::Ok();
}

using billing::Transfer;

__extension__ typedef __int128 Int128;

// How many customers one metering transaction takes.
constexpr size_t kCustomersPerTx = 200;
constexpr int64_t kCustomersPerRound = 20'000;

int64_t WholeSeconds(Duration d) {
  return d.count() <= 0 ? 0 : std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

// Visible: admins, the customer, and the machine's provider acting as one (an API key
// without the provider scope does not).
bool Visible(const accounts::Principal& p, const Rental& r) {
  return p.IsAdmin() || r.customer_id == p.user.id || p.IsProvider(r.provider_id);
}

}  // namespace

FieldErrors ValidateRental(const CreateRentalRequest& req, const fleet::ImagePolicy& images) {
  FieldErrors errors = fleet::ValidateContainer(req.container, images);
  if (req.offer_id.empty() || req.offer_id.size() > 64) {
    errors.emplace("offer_id", "must be the id of an offer on the marketplace");
  }
  if (req.gpus < 1 || req.gpus > kMaxGpus) {
    errors.emplace("gpus", "must be from 1 to " + std::to_string(kMaxGpus));
  }
  if (req.max_duration_s &&
      (*req.max_duration_s < kMinDurationS || *req.max_duration_s > kMaxDurationS)) {
    errors.emplace("max_duration_s", "must be from 60 to 31536000 seconds (a year)");
  }
  if (req.max_cost && (req.max_cost->micros() < 1 || req.max_cost->micros() > kMaxCostMicro)) {
    errors.emplace("max_cost_micro", "must be from 1 to 1000000000000 micro-USDC");
  }
  return errors;
}

Status CheckPlacement(std::string_view customer_id, std::string_view provider_id) {
  if (customer_id == provider_id) {
    return FieldError("offer_id", "is your own offer: a provider cannot rent its own GPUs");
  }
  return Status::Ok();
}

StatusOr<Usdc> FirstHourCost(Usdc price, int64_t gpus, std::optional<int64_t> max_duration_s,
                             std::optional<Usdc> max_cost) {
  const int64_t first_s = std::min<int64_t>(3600, max_duration_s.value_or(3600));
  GPUNEX_ASSIGN_OR_RETURN(Usdc need, Usdc::ForUsage(price, gpus, std::chrono::seconds(first_s)));
  if (max_cost) need = std::min(need, *max_cost);
  return need;
}

StatusOr<std::vector<std::string>> ProviderRentalIds(store::Tx& tx,
                                                     const std::string& provider_id) {
  return RentalsStore(tx).IdsOfProvider(provider_id);
}

StatusOr<std::vector<Rental>> FindRentals(store::Tx& tx, const std::vector<std::string>& ids) {
  return RentalsStore(tx).FindMany(ids);
}

bool HasEnded(const Rental& r) { return r.state == kEnded || r.state == RentalState::kEnding; }

Status RequireRunning(const Rental& r) {
  if (HasEnded(r)) return Gone("the rental has ended");
  if (r.state != kRunning) {
    return FailedPrecondition("the rental is not running yet (it is " +
                              std::string(kRentalStateNames.Name(r.state)) + ")");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> UnreachableWorkloads(
    store::Tx& tx, const std::vector<std::string>& workload_ids) {
  std::vector<std::string> out;
  RentalsStore s(tx);
  for (const std::string& id : workload_ids) {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Rental> r, s.FindByWorkload(id));
    if (!r || HasEnded(*r)) out.push_back(id);
  }
  return out;
}

StatusOr<FirstHoursHeld> HeldForFirstHours(store::Tx& tx, const std::string& customer_id) {
  GPUNEX_ASSIGN_OR_RETURN(auto open, RentalsStore(tx).OpenOf(customer_id));
  FirstHoursHeld held;
  for (const auto& r : open) {
    GPUNEX_ASSIGN_OR_RETURN(Usdc first,
                            FirstHourCost(r.price, r.gpus, r.max_duration_s, r.max_cost));
    if (r.charged >= first) continue;
    GPUNEX_ASSIGN_OR_RETURN(Usdc rest, first.Minus(r.charged));
    GPUNEX_ASSIGN_OR_RETURN(held.amount, held.amount.Plus(rest));
    ++held.rentals;
  }
  return held;
}

namespace {

Transfer Usage(const Rental& r, std::string_view kind, std::string to, Usdc amount, Usdc total,
               Timestamp at) {
  Transfer t;
  t.id = r.id + (kind == billing::kUsageFee ? "_f_" : "_p_") + std::to_string(total.micros());
  t.kind = std::string(kind);
  t.debit_account = billing::CustomerAccount(r.customer_id);
  t.credit_account = std::move(to);
  t.amount = amount;
  t.rental_id = r.id;
  t.at = at;
  return t;
}

std::string Micros(Usdc u) { return u.ToString() + " USDC"; }

// The rental's end (reason, party) from its workload's: the party is the one the fleet put
// the workload's end down to (fleet/endings.h), the reason the rental's name for its cause
// (docs/billing.md, "Who ended it").
std::pair<EndReason, EndParty> EndOfWorkload(const Rental& r, const fleet::Workload& w) {
  const EndParty party = w.end_party.value_or(EndParty::kCustomer);
  const std::string cause = w.end_cause.value_or("");
  if (r.state != kRunning)
    return {EndReason::kStartFailed, party};  // never billed, whoever's it was
  if (cause == protocol::kCauseOomKilled) return {EndReason::kOutOfMemory, party};
  if (cause == protocol::kCauseContainerGone) return {EndReason::kContainerRemoved, party};
  if (cause == protocol::kCauseAgentShutdown || cause == fleet::kCauseContainerLost) {
    return {EndReason::kMachineShutdown, party};
  }
  if (party != EndParty::kProvider) return {EndReason::kExited, party};
  // Ended on the machine's side some other way: the engine failed.
  const std::string reason = w.end_reason.value_or("");
  if (reason.find("GPU") != std::string::npos || reason.find("gpu") != std::string::npos)
    return {EndReason::kGpuLost, EndParty::kProvider};
  return {EndReason::kHardwareFailure, EndParty::kProvider};
}

}  // namespace

std::string CustomerPseudonym(std::string_view customer_id) {
  return "customer-" + market::Pseudonym(customer_id);
}

Rentals::Rentals(store::Database& db, fleet::Fleet& fleet, fleet::Workloads& workloads,
                 market::Market& market, RentalsOptions options)
    : db_(db), fleet_(fleet), workloads_(workloads), market_(market), options_(std::move(options)) {
  fleet_.OnWorkloadChange([this](store::Tx& tx, Timestamp now, const fleet::Workload& w) {
    return OnWorkloadChange(tx, now, w);
  });
}

int64_t Rentals::CommissionBps(providers::Tier tier) const {
  return tier == providers::Tier::kEnterprise ? options_.commission_enterprise_bps
                                              : options_.commission_community_bps;
}

StatusOr<Rental> Rentals::Create(const accounts::Principal& p, const CreateRentalRequest& req) {
  FieldErrors errors = ValidateRental(req, fleet_.options().images);
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  std::shared_ptr<const market::Snapshot> snap = market_.snapshot();
  const market::Offer* offer = snap ? snap->Find(req.offer_id) : nullptr;
  if (!offer) return FieldError("offer_id", "is not an offer on the marketplace");
  GPUNEX_RETURN_IF_ERROR(CheckPlacement(p.user.id, offer->provider_id));
  if (req.gpus > offer->gpus_available) {
    return FieldError("gpus", "is more than the offer's free GPUs (" +
                                  std::to_string(offer->gpus_available) + ")");
  }
  const Timestamp now = options_.clock->Now();
  Rental out;
  Status st = db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, CreateInTx(tx, now, p.user.id, *offer, req, ""));
    return accounts::Audit(tx, now, p.user.id, "rental.created", out.id, p.ip,
                           {{"offer_id", req.offer_id}, {"gpus", std::to_string(req.gpus)}});
  });
  if (st.code() == StatusCode::kAlreadyExists && !req.idempotency_key.empty()) {
    // The same key won a race in another transaction: that rental is the answer.
    std::optional<Rental> first;
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(first, RentalsStore(tx).FindByKey(p.user.id, req.idempotency_key));
      return Status::Ok();
    }));
    if (first) return *first;
  }
  GPUNEX_RETURN_IF_ERROR(st);
  return out;
}

StatusOr<Rental> Rentals::CreateInTx(store::Tx& tx, Timestamp now, const std::string& customer_id,
                                     const market::Offer& offer, const CreateRentalRequest& req,
                                     const std::string& job_id) {
  RentalsStore s(tx);
  if (!req.idempotency_key.empty()) {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Rental> first,
                            s.FindByKey(customer_id, req.idempotency_key));
    if (first) {
      if (first->offer_id != req.offer_id || first->gpus != req.gpus ||
          first->image != req.container.image) {
        return FieldError("Idempotency-Key", "was used for another rental");
      }
      return *first;
    }
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m,
                          fleet::LoadMachine(tx, offer.machine_id));
  if (!m || m->status != fleet::MachineStatus::kOnline) {
    return FailedPrecondition("the offer's machine is offline now; choose another offer");
  }
  // The machine's provider as stored, not as the snapshot showed it.
  GPUNEX_RETURN_IF_ERROR(CheckPlacement(customer_id, m->provider_id));
  // Free GPUs of the offer's model, in index order; the transaction is serializable, so
  // two rentals racing for the last one cannot both take it.
  GPUNEX_ASSIGN_OR_RETURN(std::set<std::string> busy, fleet::GpusInActiveWorkloads(tx, m->id));
  std::vector<std::string> gpu_ids;
  for (const auto& g : m->gpus) {
    if (static_cast<int64_t>(gpu_ids.size()) == req.gpus) break;
    if (g.catalog_id == offer.gpu_model && g.listing.available() && !busy.count(g.id))
      gpu_ids.push_back(g.id);
  }
  if (static_cast<int64_t>(gpu_ids.size()) < req.gpus) {
    return FailedPrecondition("the offer has " + std::to_string(gpu_ids.size()) +
                              " free GPUs now: they were taken meanwhile");
  }
  GPUNEX_ASSIGN_OR_RETURN(auto prices, pricing::EffectivePrices(tx, m->id, m->provider_id));
  auto price = prices.find(offer.gpu_model);
  if (price == prices.end()) return FailedPrecondition("the offer is no longer priced");
  if (price->second > offer.price) {
    return FailedPrecondition("the offer's price rose to " + Micros(price->second) +
                              " per GPU-hour; search again");
  }
  GPUNEX_ASSIGN_OR_RETURN(std::optional<providers::Provider> prov,
                          providers::FindProvider(tx, m->provider_id));
  Rental r;
  r.id = NewId("rnt");
  r.customer_id = customer_id;
  r.offer_id = offer.id;
  r.machine_id = m->id;
  r.provider_id = m->provider_id;
  r.gpu_model = offer.gpu_model;
  r.gpu_name = offer.gpu_name;
  r.gpu_ids = gpu_ids;
  r.gpus = req.gpus;
  r.price = price->second;
  r.fee_bps = CommissionBps(prov ? prov->tier : providers::Tier::kCommunity);
  r.state = kPending;
  r.created_at = r.updated_at = now;
  r.next_meter_at = now;
  r.max_cost = req.max_cost;
  r.max_duration_s = req.max_duration_s;
  r.image = req.container.image;
  r.command = req.container.command;
  r.ports = req.container.ports;
  r.region = offer.region;
  r.country = offer.country;
  r.idempotency_key = req.idempotency_key;
  r.job_id = job_id;
  // The balance must cover the first hour (or the rental's own caps when they come first)
  // of this rental and of the customer's other active rentals, less what those were
  // charged: read here, in the transaction that stores the rental, so that concurrent
  // rentals on one balance cannot all pass.
  GPUNEX_ASSIGN_OR_RETURN(Usdc need,
                          FirstHourCost(r.price, r.gpus, req.max_duration_s, req.max_cost));
  GPUNEX_ASSIGN_OR_RETURN(Usdc balance,
                          billing::Balance(tx, billing::CustomerAccount(customer_id)));
  GPUNEX_ASSIGN_OR_RETURN(FirstHoursHeld held, HeldForFirstHours(tx, customer_id));
  GPUNEX_ASSIGN_OR_RETURN(Usdc spare, balance.Minus(held.amount));
  if (spare < need) {
    std::string why = "covers less than the first hour of this rental (" + Micros(need) +
                      " needed, " + Micros(balance) + " held";
    if (held.rentals > 0) {
      why += ", of which " + Micros(held.amount) + " is the rest of the first hour of your " +
             std::to_string(held.rentals) + " active rental" + (held.rentals == 1 ? "" : "s");
    }
    return FieldError("balance", why + ")");
  }
  // The container's share of the machine: as much of its memory and CPUs as of its GPUs.
  fleet::CreateWorkloadRequest w;
  w.machine_id = m->id;
  w.gpu_ids = gpu_ids;
  w.container = req.container;
  for (const ContainerEnvFn& source : env_sources_) {
    GPUNEX_ASSIGN_OR_RETURN(auto added, source(tx, customer_id));
    auto& env = w.container.env;
    for (auto& variable : added) {
      const bool set = std::any_of(
          env.begin(), env.end(), [&variable](const auto& e) { return e.first == variable.first; });
      if (!set && env.size() < protocol::kMaxEnvEntries) env.push_back(std::move(variable));
    }
  }
  const int64_t total = std::max<int64_t>(1, static_cast<int64_t>(m->gpus.size()));
  if (m->host.ram_mb > 0) {
    w.memory_mb = std::clamp<int64_t>(m->host.ram_mb * r.gpus / total, protocol::kMinMemoryMb,
                                      protocol::kMaxMemoryMb);
  }
  if (m->host.cpu_cores > 0) {
    w.cpus = std::clamp(static_cast<double>(m->host.cpu_cores) * static_cast<double>(r.gpus) /
                            static_cast<double>(total),
                        protocol::kMinCpus, protocol::kMaxCpus);
  }
  GPUNEX_ASSIGN_OR_RETURN(
      fleet::Workload wl,
      workloads_.CreateInTx(tx, now, customer_id, fleet::WorkloadPurpose::kRental, w, &*m, &busy));
  r.workload_id = wl.id;
  GPUNEX_RETURN_IF_ERROR(s.Insert(r));
  return r;
}

StatusOr<Rental> Rentals::Get(const accounts::Principal& p, const std::string& id) {
  std::optional<Rental> r;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(r, RentalsStore(tx).Find(id));
    return Status::Ok();
  }));
  if (!r || !Visible(p, *r)) return NotFound("no such rental");
  return std::move(*r);
}

StatusOr<Page<Rental>> Rentals::List(const accounts::Principal& p, const RentalFilter& filter,
                                     const PageRequest& page) {
  Page<Rental> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        out, p.IsAdmin()
                 ? RentalsStore(tx).List(filter.customer_id, filter.provider_id, filter.state, page)
                 : RentalsStore(tx).List(p.user.id, "", filter.state, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Page<Rental>> Rentals::ProviderRentals(const accounts::Principal& p,
                                                const std::string& state, const PageRequest& page) {
  if (!p.user.HasRole(accounts::kRoleProvider))
    return PermissionDenied("only providers have rentals on their machines");
  Page<Rental> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, RentalsStore(tx).List("", p.user.id, state, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Rental> Rentals::Stop(const accounts::Principal& p, const std::string& id) {
  const Timestamp now = options_.clock->Now();
  Rental out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Rental> r, RentalsStore(tx).Find(id));
    if (!r || !Visible(p, *r)) return NotFound("no such rental");
    const bool own = r->customer_id == p.user.id;
    if (!own && !p.IsAdmin()) return PermissionDenied("only the customer stops a rental");
    if (r->state == kEnded || r->state == kEnding) {
      return FailedPrecondition("the rental has already ended (" +
                                std::string(r->end_reason ? Name(*r->end_reason) : Name(r->state)) +
                                ")");
    }
    // Billed to the stop, unless the machine is quiet: then to its last heartbeat.
    Timestamp until = now;
    GPUNEX_ASSIGN_OR_RETURN(auto live, fleet::LivenessOf(tx, {r->machine_id}));
    if (auto l = live.find(r->machine_id); l != live.end() && !l->second.online)
      until = std::min(now, l->second.last_seen);
    if (own) {
      GPUNEX_RETURN_IF_ERROR(End(tx, now, *r, EndReason::kStopped, EndParty::kCustomer, until,
                                 false, "stopped by the customer"));
    } else {
      GPUNEX_RETURN_IF_ERROR(End(tx, now, *r, EndReason::kOperator, EndParty::kPlatform, until,
                                 false, "stopped by an operator"));
    }
    out = *r;
    return accounts::Audit(tx, now, p.user.id, "rental.stopped", id, p.ip);
  }));
  return out;
}

StatusOr<RefundResult> Rentals::Refund(const accounts::Principal& p, const RefundRequest& req) {
  if (!p.IsAdmin()) return PermissionDenied("only operators refund rentals");
  FieldErrors errors;
  if (req.amount.micros() < 1 || req.amount.micros() > kMaxCostMicro) {
    errors.emplace("amount_micro",
                   "must be a positive number of micro-USDC, at most what the "
                   "rental was charged less what was refunded");
  }
  if (req.reason.empty() || req.reason.size() > billing::kMaxReference ||
      !IsCleanText(req.reason, false)) {
    errors.emplace("reason", "must be one line of 1 to 200 characters (the customer reads it)");
  }
  if (!errors.empty()) return ValidationFailed(std::move(errors));
  const Timestamp now = options_.clock->Now();
  // One id for the refund; its transfers add what they take from: _f the commission, _p
  // the provider's pending earnings, _a its available ones, _x the platform (what the
  // provider no longer holds).
  const std::string base =
      req.idempotency_key.empty() ? NewId("rf") : "rf_" + p.user.id + "_" + req.idempotency_key;
  RefundResult out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    out.transfers.clear();
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Rental> r, RentalsStore(tx).Find(req.rental_id));
    if (!r) return NotFound("no such rental");
    // A repeat of a refund whose answer was lost: the first one stands.
    int64_t repeated = 0;
    for (const char* part : {"_f", "_p", "_a", "_x"}) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Transfer> t, billing::FindTransfer(tx, base + part));
      if (!t) continue;
      if (t->rental_id != r->id || t->reference != "refund: " + req.reason)
        return FieldError("Idempotency-Key", "was used for another refund");
      repeated += t->amount.micros();
      out.transfers.push_back(*t);
    }
    if (!out.transfers.empty()) {
      if (repeated != req.amount.micros())
        return FieldError("Idempotency-Key", "was used for another refund");
      out.rental = *r;
      return Status::Ok();
    }
    if (!HasEnded(*r)) {
      return FailedPrecondition(
          "the rental is still billed: stop it first, then refund what it "
          "was charged");
    }
    const Usdc left = Usdc::Micros(r->charged.micros() - r->refunded.micros());
    if (req.amount > left) {
      return FieldError("amount_micro", "must be at most " + std::to_string(left.micros()) +
                                            " micro-USDC: the rental was charged " +
                                            Micros(r->charged) + " and refunded " +
                                            Micros(r->refunded) + " before");
    }
    // The commission's share in proportion, counted over all the rental's refunds so that
    // refunds in parts add up to the fee exactly.
    auto fee_share = [&](int64_t refunded) {
      return static_cast<int64_t>(static_cast<Int128>(refunded) * r->fee.micros() /
                                  r->charged.micros());
    };
    const int64_t fee =
        fee_share(r->refunded.micros() + req.amount.micros()) - fee_share(r->refunded.micros());
    int64_t provider = req.amount.micros() - fee;
    const std::string customer = billing::CustomerAccount(r->customer_id);
    const std::string pending = billing::ProviderPendingAccount(r->provider_id);
    const std::string available = billing::ProviderAvailableAccount(r->provider_id);
    GPUNEX_ASSIGN_OR_RETURN(auto held, billing::Balances(tx, {pending, available}));
    const std::string reference = "refund: " + req.reason;
    auto add = [&](const char* part, std::string_view kind, const std::string& from,
                   int64_t micros) {
      if (micros <= 0) return;
      out.transfers.push_back({base + part, std::string(kind), from, customer, Usdc::Micros(micros),
                               r->id, reference, now});
    };
    add("_f", billing::kRefundFee, std::string(billing::kPlatformCommission), fee);
    const int64_t from_pending = std::min(provider, held[pending].micros());
    add("_p", billing::kRefundProvider, pending, from_pending);
    provider -= std::max<int64_t>(from_pending, 0);
    const int64_t from_available = std::min(provider, held[available].micros());
    add("_a", billing::kRefundProvider, available, from_available);
    provider -= std::max<int64_t>(from_available, 0);
    // Paid out already: the platform gives it back (a commission refund in the books).
    add("_x", billing::kRefundFee, std::string(billing::kPlatformCommission), provider);
    auto posted = billing::Post(tx, out.transfers);
    if (!posted.ok()) {
      if (posted.status().code() == StatusCode::kFailedPrecondition) {
        return FailedPrecondition(
            "the platform's commission account does not hold enough for this refund");
      }
      return posted.status();
    }
    r->refunded = Usdc::Micros(r->refunded.micros() + req.amount.micros());
    r->updated_at = now;
    GPUNEX_RETURN_IF_ERROR(RentalsStore(tx).Update(*r));
    GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, r->customer_id));
    notify::Notice n;
    n.kind = "rental.refunded";
    n.title = "Your rental " + r->id + " was refunded " + Micros(req.amount);
    n.text = "An operator refunded " + Micros(req.amount) + " of what your rental of " +
             std::to_string(r->gpus) + " GPU(s) was charged: " + req.reason;
    n.link = "/#/rentals/" + r->id;
    GPUNEX_RETURN_IF_ERROR(
        notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices));
    out.rental = *r;
    return accounts::Audit(
        tx, now, p.user.id, "rental.refunded", r->id, p.ip,
        {{"amount_micro", std::to_string(req.amount.micros())}, {"refund_id", base}});
  }));
  return out;
}

StatusOr<fleet::LogPage> Rentals::Logs(const accounts::Principal& p, const std::string& id,
                                       const PageRequest& page) {
  GPUNEX_ASSIGN_OR_RETURN(Rental r, Get(p, id));
  // The workload's logs as its maker (the customer) or its machine's provider sees them.
  accounts::Principal as = p;
  as.user.id =
      p.IsAdmin() ? p.user.id : (r.customer_id == p.user.id ? r.customer_id : r.provider_id);
  return workloads_.Logs(as, r.workload_id, page);
}

StatusOr<BalanceView> Rentals::Balance(const accounts::Principal& p) {
  BalanceView v;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(v.balance, billing::Balance(tx, billing::CustomerAccount(p.user.id)));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> running, RentalsStore(tx).RunningOf({p.user.id}));
    v.running_rentals = static_cast<int64_t>(running.size());
    for (const auto& r : running) {
      GPUNEX_ASSIGN_OR_RETURN(Usdc hour, billing::HourlyCost(r.price, r.gpus));
      GPUNEX_ASSIGN_OR_RETURN(v.running_cost_per_hour, v.running_cost_per_hour.Plus(hour));
    }
    return Status::Ok();
  }));
  if (v.running_cost_per_hour.is_positive()) {
    v.seconds_left = billing::SecondsCovered(v.balance, v.running_cost_per_hour);
    v.low = *v.seconds_left < options_.low_balance_s;
  }
  return v;
}

StatusOr<Rentals::Cap> Rentals::Meter(Timestamp now, Timestamp until, Rental& r, Usdc& balance,
                                      std::vector<Transfer>& transfers) const {
  Cap cap;
  if (!r.running_at) return cap;
  int64_t s = WholeSeconds(until - *r.running_at);
  // A cap ends the rental once the seconds reach it (the next second would pass it),
  // billed to the cap, even when the tick comes later.
  auto limit = [&](int64_t at_most, EndReason reason, EndParty party) {
    if (s >= at_most) {
      s = at_most;
      cap.reason = reason;
      cap.party = party;
    }
  };
  if (r.max_duration_s) limit(*r.max_duration_s, EndReason::kMaxDuration, EndParty::kCustomer);
  if (r.max_cost)
    limit(billing::SecondsPaidFor(r.price, r.gpus, *r.max_cost), EndReason::kMaxCost,
          EndParty::kCustomer);
  GPUNEX_ASSIGN_OR_RETURN(Usdc can_owe, r.charged.Plus(balance));
  limit(billing::SecondsPaidFor(r.price, r.gpus, can_owe), EndReason::kBalanceExhausted,
        EndParty::kPlatform);
  s = std::max(s, r.billed_seconds);  // totals never go back
  GPUNEX_ASSIGN_OR_RETURN(billing::Metered m, billing::Meter(r.price, r.gpus, s, r.fee_bps));
  GPUNEX_ASSIGN_OR_RETURN(Usdc d_fee, m.fee.Minus(r.fee));
  GPUNEX_ASSIGN_OR_RETURN(Usdc d_provider, m.provider.Minus(r.provider_part));
  GPUNEX_ASSIGN_OR_RETURN(Usdc d_owed, m.owed.Minus(r.charged));
  GPUNEX_INVARIANT(!d_fee.is_negative() && !d_provider.is_negative() && !d_owed.is_negative(),
                   "rental " + r.id + ": its metered totals never go back");
  GPUNEX_INVARIANT(d_fee.micros() + d_provider.micros() == d_owed.micros(),
                   "rental " + r.id + ": the fee and the provider's part make up what is owed");
  if (d_provider.is_positive()) {
    transfers.push_back(Usage(r, billing::kUsageProvider,
                              billing::ProviderPendingAccount(r.provider_id), d_provider,
                              m.provider, now));
  }
  if (d_fee.is_positive()) {
    transfers.push_back(
        Usage(r, billing::kUsageFee, std::string(billing::kPlatformCommission), d_fee, m.fee, now));
  }
  GPUNEX_ASSIGN_OR_RETURN(balance, balance.Minus(d_owed));
  r.billed_seconds = s;
  r.charged = m.owed;
  r.fee = m.fee;
  r.provider_part = m.provider;
  r.updated_at = now;
  cap.billing_end = *r.running_at + Seconds(s);
  return cap;
}

Status Rentals::End(store::Tx& tx, Timestamp now, Rental& r, EndReason reason, EndParty party,
                    Timestamp billing_end, bool workload_ended, const std::string& detail) {
  EndReason why = reason;
  EndParty who = party;
  std::string text = detail;
  if (r.state == kRunning) {
    GPUNEX_ASSIGN_OR_RETURN(Usdc balance,
                            billing::Balance(tx, billing::CustomerAccount(r.customer_id)));
    std::vector<Transfer> transfers;
    GPUNEX_ASSIGN_OR_RETURN(
        Cap cap, Meter(now, std::max(billing_end, *r.running_at), r, balance, transfers));
    GPUNEX_RETURN_IF_ERROR(billing::Post(tx, transfers).status());
    // A cap that came before the end given is what ended it (the balance ran out before
    // the customer's stop arrived, say).
    if (cap.reason && cap.billing_end < billing_end) {
      why = *cap.reason;
      who = cap.party;
      text = "";
    }
    r.billing_end_at = cap.billing_end;
  } else {
    r.billing_end_at = now;
  }
  r.end_reason = why;
  r.end_party = who;
  if (text.empty()) {
    if (why == EndReason::kBalanceExhausted) text = "the balance ran out";
    if (why == EndReason::kMaxCost)
      text = "the rental reached its max cost of " + Micros(*r.max_cost);
    if (why == EndReason::kMaxDuration) text = "the rental reached its max duration";
  }
  r.detail = text;
  // RNT-3 and the documented refund: the provider's side ended it early.
  if (who == EndParty::kProvider && r.charged.is_positive() &&
      r.billed_seconds < options_.early_fault_refund_s) {
    const std::string customer = billing::CustomerAccount(r.customer_id);
    std::string from = billing::ProviderPendingAccount(r.provider_id);
    GPUNEX_ASSIGN_OR_RETURN(Usdc pending, billing::Balance(tx, from));
    if (pending < r.provider_part) from = billing::ProviderAvailableAccount(r.provider_id);
    std::vector<Transfer> refund;
    if (r.provider_part.is_positive()) {
      refund.push_back({r.id + "_rp", std::string(billing::kRefundProvider), from, customer,
                        r.provider_part, r.id, "ended by the provider's side in its first minutes",
                        now});
    }
    if (r.fee.is_positive()) {
      refund.push_back({r.id + "_rf", std::string(billing::kRefundFee),
                        std::string(billing::kPlatformCommission), customer, r.fee, r.id,
                        "ended by the provider's side in its first minutes", now});
    }
    GPUNEX_RETURN_IF_ERROR(billing::Post(tx, refund).status());
    r.refunded = r.charged;
  }
  if (workload_ended) {
    GPUNEX_RETURN_IF_ERROR(Move(r, kEnded));
    r.ended_at = now;
  } else if (why == EndReason::kAgentLost) {
    GPUNEX_RETURN_IF_ERROR(fleet::EndWorkloadNow(tx, now, r.workload_id, "agent lost",
                                                 {fleet::kCauseAgentLost, EndParty::kProvider})
                               .status());
    GPUNEX_RETURN_IF_ERROR(Move(r, kEnded));
    r.ended_at = now;
  } else {
    GPUNEX_RETURN_IF_ERROR(workloads_.StopInTx(tx, now, r.workload_id));
    GPUNEX_RETURN_IF_ERROR(Move(r, kEnding));
  }
  r.updated_at = now;
  GPUNEX_RETURN_IF_ERROR(RentalsStore(tx).Update(r));
  // The customer is told of every end but its own stop (issue 30 item 1).
  if (why != EndReason::kStopped) {
    GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, r.customer_id));
    notify::Notice n;
    n.kind = "rental.ended";
    n.title = "Your rental " + r.id + " ended";
    std::string said = text.empty() ? std::string(Name(why)) : text;
    if (said.ends_with('.')) said.pop_back();  // the sentences of fleet/endings.h end with one
    n.text = "Your rental of " + std::to_string(r.gpus) + " GPU(s) ended: " + said +
             ". It was billed " + Micros(r.charged) + " for " + std::to_string(r.billed_seconds) +
             " seconds" + (r.refunded.is_positive() ? ", refunded in full." : ".");
    n.link = "/#/rentals/" + r.id;
    n.email = why == EndReason::kBalanceExhausted || who == EndParty::kProvider;
    GPUNEX_RETURN_IF_ERROR(
        notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices));
  }
  if (who == EndParty::kProvider) GPUNEX_RETURN_IF_ERROR(NoticeProvider(tx, now, r));
  LogInfo("rental.ended", {{"rental_id", r.id},
                           {"reason", std::string(Name(why))},
                           {"party", std::string(Name(who))},
                           {"billed_seconds", r.billed_seconds},
                           {"charged_micro", r.charged.micros()}});
  return Status::Ok();
}

Status Rentals::NoticeProvider(store::Tx& tx, Timestamp now, const Rental& r) {
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Workload> w, fleet::LoadWorkload(tx, r.workload_id));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<fleet::Machine> m, fleet::LoadMachine(tx, r.machine_id));
  GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, r.provider_id));
  std::string machine = r.machine_id;  // as the dashboard names it: its name, else its host's
  if (m && !m->name.empty()) machine = m->name;
  if (m && m->name.empty() && !m->host.hostname.empty()) machine = m->host.hostname;
  notify::Notice n;
  n.kind = "rental.ended_provider_side";
  n.title = "A rental on " + machine + " ended because of the machine";
  n.text = "A customer's rental of " + std::to_string(r.gpus) + " GPU(s) on " + machine +
           " ended on your machine's side";
  n.text += r.refunded.is_positive() ? ", and was refunded to the customer. " : ". ";
  n.text += w ? fleet::ProviderAdvice(*w) : fleet::ProviderAdvice(fleet::Workload{});
  n.link = "/#/provider/overview";
  n.email = true;
  return notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices);
}

Status Rentals::OnWorkloadChange(store::Tx& tx, Timestamp now, const fleet::Workload& w) {
  if (w.purpose != fleet::WorkloadPurpose::kRental) return Status::Ok();
  RentalsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Rental> found, s.FindByWorkload(w.id));
  if (!found || found->state == kEnded) return Status::Ok();
  Rental& r = *found;
  if (fleet::IsActiveWorkloadState(w.state)) {
    if (w.state == fleet::WorkloadState::kStarting && r.state == kPending) {
      GPUNEX_RETURN_IF_ERROR(Move(r, kStarting));
    } else if (w.state == fleet::WorkloadState::kRunning &&
               (r.state == kPending || r.state == kStarting)) {
      // LED-2 / RNT-5: billing starts now, when the agent reports the container running.
      GPUNEX_RETURN_IF_ERROR(Move(r, kRunning));
      r.running_at = now;
      r.next_meter_at = now + Seconds(1);
    } else {
      return Status::Ok();
    }
    r.updated_at = now;
    return s.Update(r);
  }
  r.exit_code = w.exit_code;
  if (r.state == kEnding) {
    GPUNEX_RETURN_IF_ERROR(Move(r, kEnded));
    r.ended_at = now;
    r.updated_at = now;
    return s.Update(r);
  }
  auto [reason, party] = EndOfWorkload(r, w);
  // The customer reads a sentence; the agent's own words stay on the workload, for the
  // provider (they may name what is on its host and network).
  return End(tx, now, r, reason, party, now, true, fleet::CustomerSentence(w));
}

StatusOr<int64_t> Rentals::MeterDue() {
  const Timestamp now = options_.clock->Now();
  std::vector<std::string> due;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(due, RentalsStore(tx).CustomersDue(now, kCustomersPerRound));
    return Status::Ok();
  }));
  int64_t metered = 0;
  for (size_t start = 0; start < due.size(); start += kCustomersPerTx) {
    const size_t n = std::min(kCustomersPerTx, due.size() - start);
    std::vector<std::string> chunk(due.begin() + static_cast<std::ptrdiff_t>(start),
                                   due.begin() + static_cast<std::ptrdiff_t>(start + n));
    GPUNEX_RETURN_IF_ERROR(MeterCustomers(chunk, now, &metered));
  }
  return metered;
}

Status Rentals::MeterCustomers(const std::vector<std::string>& customers, Timestamp now,
                               int64_t* metered) {
  int64_t count = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    count = 0;
    RentalsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> running, s.RunningOf(customers));
    std::vector<std::string> machines;
    for (const auto& r : running) machines.push_back(r.machine_id);
    GPUNEX_ASSIGN_OR_RETURN(auto live, fleet::LivenessOf(tx, machines));
    std::vector<Transfer> transfers;
    std::vector<std::pair<Rental*, Cap>> ended;
    struct CustomerTotals {
      Usdc balance;
      Usdc per_hour;
    };
    std::map<std::string, CustomerTotals> totals;
    std::vector<std::string> accounts;
    for (const auto& c : customers) accounts.push_back(billing::CustomerAccount(c));
    GPUNEX_ASSIGN_OR_RETURN(auto balances, billing::Balances(tx, accounts));
    for (size_t i = 0; i < running.size();) {
      const std::string customer = running[i].customer_id;
      size_t j = i;
      while (j < running.size() && running[j].customer_id == customer) ++j;
      CustomerTotals& t = totals[customer];
      t.balance = balances[billing::CustomerAccount(customer)];
      for (size_t k = i; k < j; ++k) {
        GPUNEX_ASSIGN_OR_RETURN(Usdc hour, billing::HourlyCost(running[k].price, running[k].gpus));
        GPUNEX_ASSIGN_OR_RETURN(t.per_hour, t.per_hour.Plus(hour));
      }
      for (size_t k = i; k < j; ++k) {
        Rental& r = running[k];
        // A tick bills to the machine's last heartbeat: what it is known to have run. A
        // machine that goes quiet is thus never billed for its silence, whether or not it
        // is marked offline yet; the next heartbeat brings the billing up to date.
        Timestamp until = now;
        if (auto it = live.find(r.machine_id); it != live.end())
          until = std::min(now, it->second.last_seen);
        GPUNEX_ASSIGN_OR_RETURN(Cap cap, Meter(now, until, r, t.balance, transfers));
        ++count;
        if (cap.reason) ended.emplace_back(&r, cap);
      }
      // When to look again: the interval, or sooner when a cap or the balance's end comes.
      for (size_t k = i; k < j; ++k) {
        Rental& r = running[k];
        Timestamp next = now + Seconds(options_.meter_interval_s);
        if (r.max_duration_s) next = std::min(next, *r.running_at + Seconds(*r.max_duration_s));
        if (r.max_cost) {
          int64_t paid = billing::SecondsPaidFor(r.price, r.gpus, *r.max_cost);
          if (paid < kMaxDurationS) next = std::min(next, *r.running_at + Seconds(paid));
        }
        if (t.per_hour.is_positive()) {
          const int64_t left = billing::SecondsCovered(t.balance, t.per_hour);
          if (left < kMaxDurationS) next = std::min(next, now + Seconds(left));
        }
        r.next_meter_at = std::max(next, now + Seconds(1));
      }
      i = j;
    }
    GPUNEX_RETURN_IF_ERROR(billing::Post(tx, transfers).status());
    GPUNEX_RETURN_IF_ERROR(s.UpdateMetered(running));
    for (auto& [r, cap] : ended) {
      GPUNEX_RETURN_IF_ERROR(End(tx, now, *r, *cap.reason, cap.party, cap.billing_end, false, ""));
    }
    for (const auto& [customer, t] : totals) {
      GPUNEX_RETURN_IF_ERROR(WarnIfLow(tx, now, customer, t.balance, t.per_hour));
    }
    return Status::Ok();
  }));
  *metered += count;
  return Status::Ok();
}

Status Rentals::WarnIfLow(store::Tx& tx, Timestamp now, const std::string& customer_id,
                          Usdc balance, Usdc cost_per_hour) {
  RentalsStore s(tx);
  const int64_t covers_s = billing::SecondsCovered(balance, cost_per_hour);
  GPUNEX_ASSIGN_OR_RETURN(std::optional<Timestamp> alerted, s.AlertedAt(customer_id));
  if (covers_s >= options_.low_balance_s) {
    if (alerted) return s.SetAlerted(customer_id, std::nullopt);  // topped up: warn again later
    return Status::Ok();
  }
  if (alerted || !balance.is_positive()) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(accounts::User u, accounts::LoadUser(tx, customer_id));
  notify::Notice n;
  n.kind = "balance.low";
  n.title = "Your balance is running low";
  n.text = "Your balance of " + Micros(balance) + " covers about " + std::to_string(covers_s / 60) +
           " more minutes of your running rentals (" + Micros(cost_per_hour) +
           " per hour). When it runs out they are stopped. Add to your balance to keep them "
           "running.";
  n.link = "/#/balance";
  n.email = true;
  GPUNEX_RETURN_IF_ERROR(notify::SendNotice(tx, now, {u.id, u.email, u.name}, n, options_.notices));
  return s.SetAlerted(customer_id, now);
}

StatusOr<int64_t> Rentals::EndLost() {
  const Timestamp now = options_.clock->Now();
  const Timestamp cutoff = now - Seconds(options_.agent_lost_grace_s);
  std::vector<std::string> lost;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::vector<std::string> machines, RentalsStore(tx).ActiveMachines());
    GPUNEX_ASSIGN_OR_RETURN(auto live, fleet::LivenessOf(tx, machines));
    for (const auto& [id, l] : live) {
      if (!l.online && l.status_since <= cutoff) lost.push_back(id);
    }
    return Status::Ok();
  }));
  int64_t ended = 0;
  for (const auto& mid : lost) {
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(auto live, fleet::LivenessOf(tx, {mid}));
      auto l = live.find(mid);
      if (l == live.end() || l->second.online || l->second.status_since > cutoff)
        return Status::Ok();
      RentalsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> active, s.ActiveOnMachine(mid));
      for (Rental& r : active) {
        if (r.state == kEnding) {
          // Its end was decided and billed; the agent that was to confirm it is gone.
          GPUNEX_RETURN_IF_ERROR(
              fleet::EndWorkloadNow(tx, now, r.workload_id, "agent lost",
                                    {fleet::kCauseAgentLost, EndParty::kProvider})
                  .status());
          GPUNEX_RETURN_IF_ERROR(Move(r, kEnded));
          r.ended_at = r.updated_at = now;
          GPUNEX_RETURN_IF_ERROR(s.Update(r));
        } else {
          const Timestamp last = r.running_at ? std::max(*r.running_at, l->second.last_seen) : now;
          GPUNEX_RETURN_IF_ERROR(End(tx, now, r, EndReason::kAgentLost, EndParty::kProvider, last,
                                     false,
                                     "the machine's agent was offline for more than " +
                                         std::to_string(options_.agent_lost_grace_s) + " s"));
        }
        ++ended;
      }
      return Status::Ok();
    }));
  }
  return ended;
}

StatusOr<int64_t> Rentals::ReleaseEarnings() {
  const Timestamp now = options_.clock->Now();
  int64_t n = 0;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        n, billing::ReleaseEarnings(tx, now - Seconds(options_.earnings_hold_s), now));
    return Status::Ok();
  }));
  return n;
}

StatusOr<std::vector<market::RentalSample>> Rentals::Samples(store::Tx& tx,
                                                             const std::string& gpu_model,
                                                             const std::string& region,
                                                             Timestamp from, Timestamp to) {
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> rs,
                          RentalsStore(tx).RanBetween(gpu_model, region, from, to));
  std::vector<market::RentalSample> out;
  for (const auto& r : rs) {
    const Timestamp a = std::max(from, *r.running_at);
    const Timestamp b = std::min(to, r.billing_end_at.value_or(to));
    if (b <= a) continue;
    const double hours = std::chrono::duration<double>(b - a).count() / 3600.0;
    out.push_back({hours * static_cast<double>(r.gpus), r.price});
  }
  return out;
}

void Rentals::ScheduleOn(Background& background) {
  background.Add({.name = "rentals.meter",
                  .every = std::chrono::milliseconds(options_.sweep_ms),
                  .pass = [this] { return MeterAndRelease(); }});
}

Status Rentals::MeterAndRelease() {
  if (auto n = MeterDue(); !n.ok()) {
    LogWarn("rentals.meter_failed", {{"error", n.status().ToString()}});
  }
  if (auto n = EndLost(); !n.ok()) {
    LogWarn("rentals.lost_failed", {{"error", n.status().ToString()}});
  }
  MutexLock lock(&release_mu_);
  const Timestamp now = options_.clock->Now();
  if (now - last_release_ < Seconds(options_.release_interval_s)) return Status::Ok();
  if (auto n = ReleaseEarnings(); !n.ok()) {
    LogWarn("rentals.release_failed", {{"error", n.status().ToString()}});
  } else {
    last_release_ = now;
  }
  return Status::Ok();
}

}  // namespace gpunex::platform::rentals
