#include "platform/rentals/jobs.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "common/ids.h"
#include "common/invariant.h"
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

// Jobs with equal keys have equal constraints.
std::string QueryKey(const JobConstraints& c) {
  std::string key;
  for (const auto& m : c.gpu_models) key += m + ",";
  auto num = [](const std::optional<double>& v) { return v ? std::to_string(*v) : "-"; };
  return key + "|" + std::to_string(c.gpus) + "|" + std::to_string(c.max_price.micros()) + "|" +
         num(c.min_reliability) + "|" + num(c.min_performance) + "|" + num(c.min_vram_gb) + "|" +
         c.region + "|" + c.country;
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

// OK when `balance`, less `held` (what the customer's active rentals hold for their first
// hour), covers the job's first hour at its max_price; a field error on "balance" when not.
Status CoversFirstHour(const Job& j, Usdc balance, const FirstHoursHeld& held) {
  const JobConstraints& c = j.constraints;
  GPUNEX_ASSIGN_OR_RETURN(Usdc need,
                          FirstHourCost(c.max_price, c.gpus, j.max_duration_s, j.max_cost));
  GPUNEX_ASSIGN_OR_RETURN(Usdc spare, balance.Minus(held.amount));
  if (spare >= need) return Status::Ok();
  std::string why = "covers less than the first hour at max_price_micro (" + need.ToString() +
                    " USDC needed, " + balance.ToString() + " USDC held";
  if (held.rentals > 0) {
    why += ", of which " + held.amount.ToString() + " USDC is the rest of the first hour of your " +
           std::to_string(held.rentals) + " active rental" + (held.rentals == 1 ? "" : "s");
  }
  return FieldError("balance", why + ")");
}

}  // namespace

std::vector<Placement> Plan(const market::Snapshot& snap, const std::vector<Job>& jobs,
                            const std::function<int64_t(const market::Offer&)>& taken_before,
                            const std::map<std::string, std::set<std::string>>* excluded) {
  std::vector<Placement> out;
  std::map<std::string, int64_t> taken;  // GPUs of each offer this plan gave away
  // Jobs with the same constraints share one ranking of the snapshot.
  // Jobs with the same constraints share one ranking of the snapshot, and a cursor: the
  // offers before it have no room for them any more.
  struct Ranking {
    std::vector<market::SearchHit> hits;
    size_t first_with_room = 0;
  };
  std::map<std::string, Ranking> rankings;
  for (const Job& j : jobs) {
    const std::string key = QueryKey(j.constraints);
    auto it = rankings.find(key);
    if (it == rankings.end())
      it = rankings.emplace(key, Ranking{market::RankAll(snap, QueryOf(j.constraints)), 0}).first;
    Ranking& r = it->second;
    const std::set<std::string>* skip = nullptr;
    if (excluded) {
      auto e = excluded->find(j.id);
      if (e != excluded->end()) skip = &e->second;
    }
    for (size_t k = r.first_with_room; k < r.hits.size(); ++k) {
      const market::Offer* o = r.hits[k].offer;
      if (skip && skip->count(o->id)) continue;
      if (!CheckPlacement(j.customer_id, o->provider_id).ok()) continue;
      auto [used, fresh] = taken.try_emplace(o->id, 0);
      if (fresh && taken_before) used->second = taken_before(*o);
      if (o->gpus_available - used->second < j.constraints.gpus) {
        if (k == r.first_with_room) ++r.first_with_room;
        continue;
      }
      used->second += j.constraints.gpus;
      out.push_back({j.id, o});
      break;
    }
  }
  return out;
}

Jobs::Jobs(store::Database& db, Rentals& rentals, market::Market& market, JobsOptions options)
    : db_(db), rentals_(rentals), market_(market), options_(options), clock_(options_.clock) {}

StatusOr<Job> Jobs::Submit(const accounts::Principal& p, const SubmitJobRequest& req) {
  auto promise = std::make_shared<std::promise<StatusOr<Job>>>();
  std::future<StatusOr<Job>> answer = promise->get_future();
  SubmitThen(p, req, [promise](StatusOr<Job> j) { promise->set_value(std::move(j)); });
  return answer.get();
}

void Jobs::Submission::Answer(StatusOr<Job> j) {
  if (answered.exchange(true)) return;
  answer(std::move(j));
}

void Jobs::SubmitThen(const accounts::Principal& p, const SubmitJobRequest& req,
                      std::function<void(StatusOr<Job>)> answer) {
  const JobConstraints& c = req.constraints;
  FieldErrors errors;
  if (c.gpu_models.empty() || c.gpu_models.size() > 16) {
    errors.emplace(req.models_field, "must name 1 to 16 GPU models of the catalog");
  }
  for (size_t i = 0; i < c.gpu_models.size() && i < 16; ++i) {
    if (!market_.KnownModel(c.gpu_models[i])) {
      errors.emplace(
          req.models_field == "gpu_model" ? "gpu_model" : "gpu_models[" + std::to_string(i) + "]",
          "is not a GPU model of the catalog");
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
  if (!c.region.empty() && !market::IsRegionName(c.region))
    errors.emplace("region", "must be a region name such as eu-south (a-z, 0-9, -; at most 64)");
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
  for (auto& [field, message] : ValidateRental(as_rental, rentals_.image_policy())) {
    errors.emplace(field, message);
  }
  if (!errors.empty()) {
    answer(ValidationFailed(std::move(errors)));
    return;
  }

  Job j;
  j.id = NewId("job");
  j.customer_id = p.user.id;
  j.constraints = c;
  j.container = req.container;
  j.max_duration_s = req.max_duration_s;
  j.max_cost = req.max_cost;
  j.state = JobState::kQueued;
  j.detail = "waiting for an offer that meets the constraints";
  j.idempotency_key = req.idempotency_key;
  // Its times are the round's: it is stored by the next round, with the others.
  auto submission = std::make_shared<Submission>();
  submission->job = std::move(j);
  submission->deadline_s = req.deadline_s.value_or(kDefaultDeadlineS);
  submission->answer = std::move(answer);
  bool run_here = false;
  {
    MutexLock lock(&mu_);
    inbox_.push_back(submission);
    // Without the scheduled rounds (tests, a stopping server) the caller runs the round.
    run_here = !rounds_.running();
  }
  if (!run_here) {
    rounds_.Wake();
    return;
  }
  // A failed round answers the jobs it took; this one may still wait in the inbox.
  while (!submission->answered) {
    if (Status st = ScheduleOnce().status(); !st.ok()) submission->Answer(st);
  }
}

namespace {

// Fills in where the rentals `jobs` placed stand, in the caller's transaction.
Status AddPlacedRentals(store::Tx& tx, std::vector<Job*> jobs) {
  std::vector<std::string> ids;
  for (const Job* j : jobs) {
    if (!j->rental_id.empty()) ids.push_back(j->rental_id);
  }
  if (ids.empty()) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(std::vector<Rental> rentals, FindRentals(tx, ids));
  for (Job* j : jobs) {
    for (const Rental& r : rentals) {
      if (r.id != j->rental_id) continue;
      j->rental = Job::PlacedRental{.state = r.state,
                                    .end_reason = r.end_reason,
                                    .exit_code = r.exit_code,
                                    .detail = r.detail};
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Job> Jobs::Get(const accounts::Principal& p, const std::string& id) {
  std::optional<Job> j;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(j, RentalsStore(tx).FindJob(id));
    if (j) GPUNEX_RETURN_IF_ERROR(AddPlacedRentals(tx, {&*j}));
    return Status::Ok();
  }));
  if (!j || (!p.IsAdmin() && j->customer_id != p.user.id)) return NotFound("no such job");
  return std::move(*j);
}

StatusOr<Page<Job>> Jobs::List(const accounts::Principal& p, const PageRequest& page) {
  Page<Job> out;
  GPUNEX_RETURN_IF_ERROR(db_.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(out, RentalsStore(tx).ListJobs(p.IsAdmin() ? "" : p.user.id, page));
    std::vector<Job*> jobs;
    for (Job& j : out.items) jobs.push_back(&j);
    return AddPlacedRentals(tx, jobs);
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
    if (!JobMayGo(j->state, JobState::kCancelled)) {
      return FailedPrecondition("the job is " + std::string(Name(j->state)) + ", not queued");
    }
    j->state = JobState::kCancelled;
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
  std::vector<std::shared_ptr<Submission>> batch;
  {
    MutexLock lock(&mu_);
    const size_t n = std::min(inbox_.size(), kBatch);
    batch.assign(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(n));
    inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  const Timestamp now = clock_->Now();
  const bool sweep = now - last_sweep_ >= Seconds(1) || batch.empty();
  auto placed = Round(batch, sweep, now);
  if (!placed.ok()) {
    for (auto& sub : batch) sub->Answer(placed.status());
    return placed.status();
  }
  if (sweep) last_sweep_ = now;
  return placed;
}

StatusOr<std::vector<Job>> Jobs::Waiting(store::Tx& tx, const market::Snapshot& snap,
                                         const std::function<int64_t(const market::Offer&)>& taken,
                                         GroupKey* next) const {
  RentalsStore s(tx);
  GPUNEX_ASSIGN_OR_RETURN(std::vector<RentalsStore::QueuedGroup> groups, s.QueuedGroups());
  std::vector<Job> out;
  if (groups.empty()) return out;
  // The snapshot's offers with free GPUs, by model, cheapest first: a group looks only at
  // the offers of its models that it could pay for.
  struct Free {
    const market::Offer* offer;
    int64_t gpus;
  };
  std::map<std::string, std::vector<Free>> by_model;
  for (const market::Offer* o : snap.offers()) {
    const int64_t n = o->gpus_available - taken(*o);
    if (n > 0) by_model[o->gpu_model].push_back({o, n});
  }
  for (auto& [model, offers] : by_model) {
    std::sort(offers.begin(), offers.end(),
              [](const Free& a, const Free& b) { return a.offer->price < b.offer->price; });
  }
  // How many of a group's jobs the offers have room for now, up to `want`.
  auto room = [&](const RentalsStore::QueuedGroup& g, int64_t want) -> int64_t {
    const JobConstraints& c = g.constraints;
    if (c.gpus < 1) return 0;
    const market::OfferQuery q = QueryOf(c);
    int64_t n = 0;
    for (const std::string& model : q.gpu_models) {
      auto it = by_model.find(model);
      if (it == by_model.end()) continue;
      for (const Free& f : it->second) {
        if (f.offer->price > c.max_price) break;
        if (!market::Matches(q, *f.offer) ||
            !CheckPlacement(g.customer_id, f.offer->provider_id).ok()) {
          continue;
        }
        n += f.gpus / c.gpus;
        if (n >= want) return want;
      }
    }
    return n;
  };
  // The groups take turns from *next (the groups are in a fixed order), so that past
  // kBatch every group's jobs are planned within a few rounds.
  auto before = [](const RentalsStore::QueuedGroup& g, const GroupKey& k) {
    return std::tie(g.customer_id, g.key) < std::tie(k.first, k.second);
  };
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return std::tie(a.customer_id, a.key) < std::tie(b.customer_id, b.key);
  });
  std::rotate(groups.begin(), std::lower_bound(groups.begin(), groups.end(), *next, before),
              groups.end());
  *next = {};
  int64_t budget = static_cast<int64_t>(kBatch);
  for (const RentalsStore::QueuedGroup& g : groups) {
    if (budget == 0) {
      *next = {g.customer_id, g.key};
      break;
    }
    const int64_t n = room(g, std::min(g.jobs, budget));
    if (n == 0) continue;
    GPUNEX_ASSIGN_OR_RETURN(std::vector<Job> jobs, s.QueuedJobsOf(g.customer_id, g.key, n));
    budget -= static_cast<int64_t>(jobs.size());
    for (Job& j : jobs) out.push_back(std::move(j));
  }
  return out;
}

StatusOr<int64_t> Jobs::Round(const std::vector<std::shared_ptr<Submission>>& batch, bool sweep,
                              Timestamp now) {
  std::shared_ptr<const market::Snapshot> snap = market_.snapshot();
  // Taken GPUs the snapshot shows by now (its machine was reloaded after the commit) are
  // forgotten.
  for (auto it = overlay_.begin(); it != overlay_.end();) {
    const market::MachineOffers* m = snap ? snap->Machine(it->second.machine_id) : nullptr;
    if (!m || m->stamp >= it->second.stamp) {
      it = overlay_.erase(it);
    } else {
      ++it;
    }
  }
  const std::map<std::string, Taken> overlay = overlay_;
  auto overlay_gpus = [&](const market::Offer& o) -> int64_t {
    auto it = overlay.find(o.id);
    return it == overlay.end() ? 0 : it->second.gpus;
  };
  // What this round decided, per attempt of its transaction (a retried attempt starts over).
  std::vector<StatusOr<Job>> answers;
  std::vector<size_t> same_as;  // answers[i] is answers[same_as[i]], unless npos
  struct Commit {
    const market::Offer* offer;
    int64_t gpus;
    int64_t stamp;  // the machine's offers stamp after the commit
  };
  std::vector<Commit> taken;
  int64_t placed = 0;
  const GroupKey first_turn = turn_;
  GroupKey turn;
  GPUNEX_RETURN_IF_ERROR(db_.Transact([&](store::Tx& tx) -> Status {
    answers.clear();
    taken.clear();
    placed = 0;
    turn = first_turn;
    RentalsStore s(tx);
    std::vector<Job> live;          // jobs to plan: the new ones, then those queued before
    std::vector<size_t> answer_of;  // live[i]'s answer, or npos for a job queued before
    // Repeats of one key within this batch get the answer of its first submission.
    std::map<std::pair<std::string, std::string>, size_t> first_of_key;
    same_as.assign(batch.size(), std::string::npos);
    for (const auto& sub : batch) {
      Job j = sub->job;
      j.created_at = j.updated_at = now;
      j.deadline_at = now + Seconds(sub->deadline_s);
      if (!j.idempotency_key.empty()) {
        auto [it, fresh] =
            first_of_key.try_emplace({j.customer_id, j.idempotency_key}, answers.size());
        if (!fresh) {
          same_as[answers.size()] = it->second;
          answers.emplace_back(Internal("answered as its first submission"));
          continue;
        }
        GPUNEX_ASSIGN_OR_RETURN(std::optional<Job> first,
                                s.FindJobByKey(j.customer_id, j.idempotency_key));
        if (first) {
          answers.emplace_back(std::move(*first));
          continue;
        }
      }
      // The balance must cover the first hour at the most the job would pay, as a
      // rental's. What the customer's active rentals hold for their first hour is left
      // out of it below, for a job that waits: a job placed now passed the same rule at
      // the offer's price when its rental was made (Rentals::CreateInTx).
      GPUNEX_ASSIGN_OR_RETURN(Usdc balance,
                              billing::Balance(tx, billing::CustomerAccount(j.customer_id)));
      if (Status st = CoversFirstHour(j, balance, FirstHoursHeld{}); !st.ok()) {
        if (st.code() != StatusCode::kValidationFailed) return st;
        answers.emplace_back(std::move(st));
        continue;
      }
      answer_of.push_back(answers.size());  // stored below, once planned
      answers.emplace_back(j);
      live.push_back(std::move(j));
    }
    if (sweep) {
      // The jobs queued before: past their deadline they end; those the snapshot has room
      // for are planned again.
      GPUNEX_RETURN_IF_ERROR(s.EndJobsPastDeadline(now).status());
      if (snap) {
        GPUNEX_ASSIGN_OR_RETURN(std::vector<Job> waiting, Waiting(tx, *snap, overlay_gpus, &turn));
        for (Job& j : waiting) {
          answer_of.push_back(std::string::npos);
          live.push_back(std::move(j));
        }
      }
    }
    if (live.empty()) return Status::Ok();
    std::vector<bool> changed(live.size(), false);
    if (snap) {
      // GPUs no plan may count on: taken by this process's earlier commits that the
      // snapshot does not show yet, and (per job) offers whose commit check failed in this
      // round.
      std::map<std::string, std::set<std::string>> lost;  // job id → offers
      std::map<std::string, size_t> index;
      for (size_t i = 0; i < live.size(); ++i) index[live[i].id] = i;
      // Oldest first: the jobs queued before, then the new ones in their order.
      std::vector<Job> pending = live;
      std::stable_sort(pending.begin(), pending.end(),
                       [](const Job& a, const Job& b) { return a.created_at < b.created_at; });
      for (int pass = 0; pass < 3 && !pending.empty(); ++pass) {
        std::map<std::string, int64_t> committed;  // GPUs this round's commits took so far
        for (const auto& t : taken) committed[t.offer->id] += t.gpus;
        auto taken_before = [&](const market::Offer& o) {
          auto c = committed.find(o.id);
          return overlay_gpus(o) + (c == committed.end() ? 0 : c->second);
        };
        bool refused_any = false;
        for (const Placement& pl : Plan(*snap, pending, taken_before, &lost)) {
          const size_t i = index.at(pl.job_id);
          Job& j = live[i];
          // The commit re-checks what the plan assumed (the placement rule, the GPUs, the
          // price, the balance). A placement that fails it is planned again without that
          // offer, with the jobs not placed yet (Nomad's re-plan of what was lost); after
          // three passes they wait for the next round.
          auto rental =
              rentals_.CreateInTx(tx, now, j.customer_id, *pl.offer, RentalOf(j, *pl.offer), j.id);
          if (!rental.ok()) {
            const Status refused = rental.status();
            if (refused.code() != StatusCode::kFailedPrecondition &&
                refused.code() != StatusCode::kValidationFailed) {
              return refused;
            }
            std::string why = refused.message();
            for (const auto& [field, message] : refused.fields()) why = field + " " + message;
            j.detail = "waiting: " + why;
            changed[i] = true;
            lost[j.id].insert(pl.offer->id);
            refused_any = true;
            continue;
          }
          GPUNEX_ASSIGN_OR_RETURN(std::optional<int64_t> stamp,
                                  fleet::OffersStamp(tx, pl.offer->machine_id));
          GPUNEX_INVARIANT(JobMayGo(j.state, JobState::kPlaced),
                           "job " + j.id + " is placed from " + std::string(Name(j.state)));
          j.state = JobState::kPlaced;
          j.rental_id = rental->id;
          j.offer_id = pl.offer->id;
          j.detail = "placed on " + pl.offer->id;
          j.placed_at = now;
          changed[i] = true;
          taken.push_back({pl.offer, j.constraints.gpus, stamp.value_or(0)});
          ++placed;
        }
        if (!refused_any) break;
        // The GPUs a refused placement held in the plan are free for the others: every job
        // not placed yet is planned again, in the same order.
        std::vector<Job> again;
        for (const Job& p : pending) {
          const Job& j = live[index.at(p.id)];
          if (j.state != JobState::kPlaced) again.push_back(j);
        }
        pending = std::move(again);
      }
    }
    for (size_t i = 0; i < live.size(); ++i) {
      if (answer_of[i] == std::string::npos && changed[i]) {
        live[i].updated_at = now;
        GPUNEX_RETURN_IF_ERROR(s.UpdateJob(live[i]));
      }
    }
    // A new job, as this round left it. One that waits only while the balance, less what
    // the customer's active rentals hold for their first hour, covers its first hour, and
    // its customer has fewer than max_queued_per_customer jobs queued (both counted after
    // this round's placements).
    struct Customer {
      Usdc balance;
      FirstHoursHeld held;
      int64_t queued = 0;
    };
    std::map<std::string, Customer> customers;
    for (size_t i = 0; i < live.size(); ++i) {
      if (answer_of[i] == std::string::npos) continue;
      Job& j = live[i];
      if (j.state == JobState::kQueued) {
        auto [it, fresh] = customers.try_emplace(j.customer_id);
        Customer& c = it->second;
        if (fresh) {
          GPUNEX_ASSIGN_OR_RETURN(c.balance,
                                  billing::Balance(tx, billing::CustomerAccount(j.customer_id)));
          GPUNEX_ASSIGN_OR_RETURN(c.held, HeldForFirstHours(tx, j.customer_id));
          GPUNEX_ASSIGN_OR_RETURN(c.queued, s.CountQueuedJobs(j.customer_id));
        }
        if (Status st = CoversFirstHour(j, c.balance, c.held); !st.ok()) {
          if (st.code() != StatusCode::kValidationFailed) return st;
          answers[answer_of[i]] = std::move(st);
          continue;
        }
        if (c.queued >= options_.max_queued_per_customer) {
          answers[answer_of[i]] = FailedPrecondition(
              "no offer meets the job's constraints now, and you have " + std::to_string(c.queued) +
              " jobs queued, the most one customer may have waiting: cancel one, or wait "
              "until one is placed or reaches its deadline");
          continue;
        }
        ++c.queued;
      }
      GPUNEX_RETURN_IF_ERROR(s.InsertJob(j));
      answers[answer_of[i]] = j;
    }
    return Status::Ok();
  }));
  // Durable now: remember the GPUs the commits took until the snapshot shows them, and
  // answer the submitters.
  if (sweep && snap) turn_ = turn;
  for (const auto& t : taken) {
    Taken& entry = overlay_[t.offer->id];
    entry.machine_id = t.offer->machine_id;
    entry.stamp = std::max(entry.stamp, t.stamp);
    entry.gpus += t.gpus;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (same_as[i] != std::string::npos) answers[i] = answers[same_as[i]];
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i]->Answer(std::move(answers[i]));
  return placed;
}

void Jobs::ScheduleOn(Background& background) {
  rounds_ = background.Add({.name = "jobs.schedule",
                            .every = std::chrono::seconds(1),
                            .pass = [this] { return ScheduledPass(); },
                            .after_stop = [this] { Drain(); }});
}

Status Jobs::ScheduledPass() {
  Status st = ScheduleOnce().status();
  MutexLock lock(&mu_);
  if (!inbox_.empty()) rounds_.Wake();  // more than a batch came: the next round at once
  return st;
}

// Submitters still waiting get their answer from the rounds run here.
void Jobs::Drain() {
  while (true) {
    {
      MutexLock lock(&mu_);
      if (inbox_.empty()) return;
    }
    (void)ScheduleOnce();
  }
}

}  // namespace gpunex::platform::rentals
