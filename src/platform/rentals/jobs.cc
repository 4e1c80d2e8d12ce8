#include "platform/rentals/jobs.h"

#include <map>
#include <set>

#include "common/ids.h"
#include "common/log.h"
#include "platform/billing/ledger.h"
#include "platform/rentals/rentals_store.h"

namespace gpunex::platform::rentals {
namespace {

bool IsUpperAlpha2(const std::string& s) {
  return s.size() == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z';
}

market::OfferQuery QueryOf(const JobConstraints& c) {
  market::OfferQuery q;
  q.gpu_models = std::set<std::string>(c.gpu_models.begin(), c.gpu_models.end());
  q.min_gpus = c.gpus;
  q.max_price = c.max_price;
  q.min_reliability = c.min_reliability;
  q.min_performance = c.min_performance;
  q.min_vram_gb = c.min_vram_gb;
  q.region = c.region;
  q.country = c.country;
  return q;
}

CreateRentalRequest RentalOf(const Job& j, const market::Offer& o) {
  CreateRentalRequest r;
  r.offer_id = o.id;
  r.gpus = j.constraints.gpus;
  r.container = j.container;
  r.max_duration_s = j.max_duration_s;
  r.max_cost = j.max_cost;
  r.idempotency_key = "job:" + j.id;  // one rental per job, whatever is retried
  return r;
}

}  // namespace

std::vector<Placement> Plan(const market::Snapshot& snap, const std::vector<Job>& jobs) {
  std::vector<Placement> out;
  std::map<std::string, int64_t> taken;  // GPUs of each offer this plan gave away
  for (const Job& j : jobs) {
    for (const market::SearchHit& hit : market::RankAll(snap, QueryOf(j.constraints))) {
      int64_t& used = taken[hit.offer->id];
      if (hit.offer->gpus_available - used < j.constraints.gpus) continue;
      used += j.constraints.gpus;
      out.push_back({j.id, hit.offer});
      break;
    }
  }
  return out;
}

Jobs::Jobs(store::Database& db, Rentals& rentals, market::Market& market, const Clock* clock)
    : db_(db), rentals_(rentals), market_(market), clock_(clock) {}

Jobs::~Jobs() { Stop(); }

StatusOr<Job> Jobs::Submit(const accounts::Principal& p, const SubmitJobRequest& req) {
  const JobConstraints& c = req.constraints;
  FieldErrors errors;
  if (c.gpu_models.empty() || c.gpu_models.size() > 16) {
    errors.emplace("gpu_models", "must name 1 to 16 GPU models of the catalog");
  }
  for (size_t i = 0; i < c.gpu_models.size() && i < 16; ++i) {
    if (!market_.KnownModel(c.gpu_models[i])) {
      errors.emplace("gpu_models[" + std::to_string(i) + "]", "is not a GPU model of the catalog");
    }
  }
  if (c.gpus < 1 || c.gpus > kMaxGpus) errors.emplace("gpus", "must be from 1 to 8");
  if (c.max_price.micros() < 1 || c.max_price.micros() > kMaxJobPriceMicro) {
    errors.emplace("max_price_micro", "must be from 1 to 1000000000 micro-USDC per GPU-hour");
  }
  if (c.min_reliability && !(*c.min_reliability >= 0 && *c.min_reliability <= 100))
    errors.emplace("min_reliability", "must be from 0 to 100");
  if (c.min_performance && !(*c.min_performance >= 0 && *c.min_performance <= 1e6))
    errors.emplace("min_performance", "must be from 0 to 1000000");
  if (c.min_vram_gb && !(*c.min_vram_gb >= 0 && *c.min_vram_gb <= 4096))
    errors.emplace("min_vram_gb", "must be from 0 to 4096");
  if (c.region.size() > 32 || !IsCleanText(c.region, false))
    errors.emplace("region", "must be a region such as \"eu-south\"");
  if (!c.country.empty() && !IsUpperAlpha2(c.country))
    errors.emplace("country", "must be an ISO 3166-1 alpha-2 code such as \"IT\"");
  if (req.deadline_s && (*req.deadline_s < kMinDeadlineS || *req.deadline_s > kMaxDeadlineS))
    errors.emplace("deadline_s", "must be from 60 to 604800 seconds (a week)");
  // The container and the caps as a rental checks them.
  CreateRentalRequest as_rental;
  as_rental.offer_id = "ofr_job";
  as_rental.gpus = 1;
  as_rental.container = req.container;
  as_rental.max_duration_s = req.max_duration_s;
  as_rental.max_cost = req.max_cost;
  for (auto& [field, message] : ValidateRental(as_rental)) errors.emplace(field, message);
  fleet::CreateWorkloadRequest w;
  w.machine_id = "job";
  w.image = req.container.image;
  w.command = req.container.command;
  w.env = req.container.env;
  for (auto& [field, message] : fleet::ValidateWorkloadRequest(w)) errors.emplace(field, message);
  if (!errors.empty()) return ValidationFailed(std::move(errors));

  const Timestamp now = clock_->Now();
  Job j;
  j.id = NewId("job");
  j.customer_id = p.user.id;
  j.constraints = c;
  j.container = req.container;
  j.max_duration_s = req.max_duration_s;
  j.max_cost = req.max_cost;
  j.state = "queued";
  j.detail = "waiting for an offer that meets the constraints";
  j.idempotency_key = req.idempotency_key;
  j.created_at = j.updated_at = now;
  j.deadline_at = now + Seconds(req.deadline_s.value_or(kDefaultDeadlineS));
  Status st = db_.Transact([&](store::Tx& tx) -> Status {
    RentalsStore s(tx);
    // The balance must cover the first hour at the most the job would pay, as a rental's.
    GPUNEX_ASSIGN_OR_RETURN(
        Usdc need, Usdc::ForUsage(c.max_price, c.gpus,
                                  std::chrono::seconds(
                                      std::min<int64_t>(3600, req.max_duration_s.value_or(3600)))));
    if (req.max_cost) need = std::min(need, *req.max_cost);
    GPUNEX_ASSIGN_OR_RETURN(Usdc balance,
                            billing::Balance(tx, billing::CustomerAccount(p.user.id)));
    if (balance < need) {
      return FieldError("balance", "covers less than the first hour at max_price_micro (" +
                                       need.ToString() + " USDC needed, " + balance.ToString() +
                                       " held)");
    }
    if (!req.idempotency_key.empty()) {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> first,
                              s.FindJobByKey(p.user.id, req.idempotency_key));
      if (first) {
        j = *first;
        return Status::Ok();
      }
    }
    GPUNEX_RETURN_IF_ERROR(s.InsertJob(j));
    return accounts::Audit(tx, now, p.user.id, "job.submitted", j.id, p.ip);
  });
  if (st.code() == StatusCode::kAlreadyExists && !req.idempotency_key.empty()) {
    GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> first,
                              RentalsStore(tx).FindJobByKey(p.user.id, req.idempotency_key));
      if (!first) return Internal("the job of this key is gone");
      j = *first;
      return Status::Ok();
    }));
    return j;
  }
  GPUNEX_RETURN_IF_ERROR(st);
  // Placed at once when an offer fits now; otherwise the scheduler's rounds try again.
  if (j.state == "queued") {
    if (auto placed = ScheduleOnce(); !placed.ok())
      LogWarn("jobs.schedule_failed", {{"error", placed.status().ToString()}});
    return Get(p, j.id);
  }
  return j;
}

StatusOr<Job> Jobs::Get(const accounts::Principal& p, const std::string& id) {
  std::optional<Job> j;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(j, RentalsStore(tx).FindJob(id));
    return Status::Ok();
  }));
  if (!j || (!p.IsAdmin() && j->customer_id != p.user.id)) return NotFound("no such job");
  return std::move(*j);
}

StatusOr<Page<Job>> Jobs::List(const accounts::Principal& p, const PageRequest& page) {
  Page<Job> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, RentalsStore(tx).ListJobs(p.IsAdmin() ? "" : p.user.id, page));
    return Status::Ok();
  }));
  return out;
}

StatusOr<Job> Jobs::Cancel(const accounts::Principal& p, const std::string& id) {
  const Timestamp now = clock_->Now();
  Job out;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    RentalsStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> j, s.FindJob(id));
    if (!j || (j->customer_id != p.user.id && !p.IsAdmin())) return NotFound("no such job");
    if (j->customer_id != p.user.id) return PermissionDenied("only the customer cancels a job");
    if (j->state != "queued") return FailedPrecondition("the job is " + j->state + ", not queued");
    j->state = "cancelled";
    j->detail = "cancelled by the customer";
    j->ended_at = j->updated_at = now;
    GPUNEX_RETURN_IF_ERROR(s.UpdateJob(*j));
    out = *j;
    return accounts::Audit(tx, now, p.user.id, "job.cancelled", id, p.ip);
  }));
  return out;
}

StatusOr<int64_t> Jobs::ScheduleOnce() {
  MutexLock round(&schedule_mu_);
  const Timestamp now = clock_->Now();
  std::vector<Job> queued;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(queued, RentalsStore(tx).QueuedJobs(1000));
    return Status::Ok();
  }));
  std::vector<Job> live;
  for (Job& j : queued) {
    if (j.deadline_at > now) {
      live.push_back(std::move(j));
      continue;
    }
    GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
      RentalsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> cur, s.FindJob(j.id));
      if (!cur || cur->state != "queued") return Status::Ok();
      cur->state = "unplaceable";
      cur->detail = "no offer met the constraints before the deadline";
      cur->ended_at = cur->updated_at = now;
      return s.UpdateJob(*cur);
    }));
  }
  if (live.empty()) return int64_t{0};
  std::shared_ptr<const market::Snapshot> snap = market_.snapshot();
  if (!snap) return int64_t{0};
  std::map<std::string, const Job*> by_id;
  for (const Job& j : live) by_id[j.id] = &j;
  int64_t placed = 0;
  for (const Placement& pl : Plan(*snap, live)) {
    const Job& j = *by_id.at(pl.job_id);
    // The commit re-checks everything the plan assumed; a conflict keeps the job queued.
    Status st = db_.Transact([&](store::Tx& tx) -> Status {
      RentalsStore s(tx);
      GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> cur, s.FindJob(j.id));
      if (!cur || cur->state != "queued") return Status::Ok();
      auto rental =
          rentals_.CreateInTx(tx, now, j.customer_id, *pl.offer, RentalOf(j, *pl.offer), j.id);
      if (!rental.ok()) {
        if (rental.status().code() == StatusCode::kValidationFailed) {
          // Not a race: the customer's side (the balance) keeps it from any offer now.
          std::string why;
          const Status refused = rental.status();
          for (const auto& [field, message] : refused.fields()) why += field + " " + message;
          return FailedPrecondition(why);
        }
        return rental.status();
      }
      cur->state = "placed";
      cur->rental_id = rental->id;
      cur->offer_id = pl.offer->id;
      cur->detail = "placed on " + pl.offer->id;
      cur->placed_at = cur->updated_at = now;
      return s.UpdateJob(*cur);
    });
    if (st.ok()) {
      ++placed;
    } else if (st.code() == StatusCode::kFailedPrecondition) {
      // Lost a race (GPUs taken, price changed) or not payable now: the next round plans
      // it again against a fresher snapshot. Record why it waits.
      (void)db_.Transact([&](store::Tx& tx) -> Status {
        RentalsStore s(tx);
        GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> cur, s.FindJob(j.id));
        if (!cur || cur->state != "queued") return Status::Ok();
        cur->detail = "waiting: " + st.message();
        cur->updated_at = now;
        return s.UpdateJob(*cur);
      });
    } else {
      return st;
    }
  }
  return placed;
}

void Jobs::Start() {
  MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Jobs::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Jobs::Loop() {
  while (true) {
    if (auto n = ScheduleOnce(); !n.ok())
      LogWarn("jobs.schedule_failed", {{"error", n.status().ToString()}});
    MutexLock lock(&mu_);
    if (!stopping_) cv_.WaitFor(&mu_, std::chrono::milliseconds(1000));
    if (stopping_) return;
  }
}

}  // namespace gpunex::platform::rentals
