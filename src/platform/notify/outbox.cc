#include "platform/notify/outbox.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <utility>

#include "common/json.h"
#include "common/log.h"
#include "platform/notify/internal/mail_format.h"
#include "platform/notify/notify_store.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::notify {
namespace {

constexpr size_t kMaxLastErrorLength = 1000;
// Candidates read per claim transaction; the first whose conditional UPDATE wins is
// taken, the others are left for later (or for other senders).
constexpr int64_t kClaimCandidates = 8;
// Real time between two logs of failing claims (the database may be down a while).
constexpr auto kErrorLogInterval = std::chrono::seconds(60);

bool IsPermanent(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kFailedPrecondition;
}

std::string Truncate(std::string s) {
  if (s.size() > kMaxLastErrorLength) s.resize(kMaxLastErrorLength);
  return s;
}

}  // namespace

struct OutboxSender::Claimed {
  EmailRow row;           // as read before the claim
  int64_t attempts = 0;   // including this claim
  Timestamp lease_until;  // our claim's fencing token
};

OutboxSender::OutboxSender(store::Database& db, std::unique_ptr<SmtpClient> smtp,
                           OutboxOptions options)
    : db_(db), smtp_(std::move(smtp)), options_(std::move(options)) {}

void OutboxSender::ScheduleOn(Background& background) {
  task_ = background.Add(
      {.name = "notify.outbox",
       .every = std::chrono::duration_cast<std::chrono::milliseconds>(options_.poll_interval),
       .pass = [this] { return SendDue(); }});
}

void OutboxSender::Wake() const { task_.Wake(); }

OutboxCounters OutboxSender::counters() const {
  return {.sent = sent_.load(), .failed = failed_.load(), .retries = retries_.load()};
}

Status OutboxSender::SendDue() {
  if (options_.verifier != nullptr) {
    // Links for addresses that emails wait on, before the due emails (the links are).
    if (Status st = options_.verifier->SendDueLinks(db_); !st.ok()) {
      LogError("notify.outbox.links_failed", {{"error", st.ToString()}});
    }
  }
  StatusOr<int> r = DeliverDue();
  if (!r.ok()) {
    const auto now = std::chrono::steady_clock::now();
    MutexLock lock(&error_log_mu_);
    if (now - last_error_log_ >= kErrorLogInterval) {
      last_error_log_ = now;
      LogError("notify.outbox.claim_failed", {{"error", r.status().ToString()}});
    }
  }
  return Status::Ok();
}

Status ReleaseAbandonedClaims(store::Database& db, Timestamp now) {
  return db.Transact([now](store::Tx& tx) { return NotifyStore(tx).ReleaseClaims(now).status(); });
}

StatusOr<int> OutboxSender::DeliverDue() {
  Status from_ok = internal::ParseMailbox(options_.from, "from").status();
  if (!from_ok.ok()) return InvalidArgument("outbox sender: " + from_ok.message());
  int attempted = 0;
  while (!task_.stopping()) {
    Claimed m;
    bool found = false;
    GPUNEX_RETURN_IF_ERROR(ClaimOne(&m, &found));
    if (!found) break;
    Deliver(m);
    ++attempted;
  }
  return attempted;
}

Status OutboxSender::ClaimOne(Claimed* out, bool* found) {
  *found = false;
  Status st = db_.Transact([&](store::Tx& tx) -> Status {
    *found = false;
    NotifyStore s(tx);
    const Timestamp now = options_.clock->Now();
    GPUNEX_ASSIGN_OR_RETURN(std::vector<EmailRow> due, s.DueEmails(now, kClaimCandidates));
    for (EmailRow& row : due) {
      const Timestamp lease_until = now + options_.lease;
      GPUNEX_ASSIGN_OR_RETURN(bool claimed, s.ClaimEmail(row.id, now, lease_until));
      if (!claimed) continue;
      out->attempts = row.attempts + 1;
      out->row = std::move(row);
      out->lease_until = lease_until;
      *found = true;
      return Status::Ok();
    }
    return Status::Ok();
  });
  // A claim whose commit failed, or whose outcome is unknown, is not ours to act on: if
  // it did commit, the message is claimed again once its lease runs out.
  if (!st.ok()) *found = false;
  return st;
}

void OutboxSender::Deliver(const Claimed& m) {
  const EmailRow& e = m.row;
  Status sent;
  if (!e.body.has_value()) {
    sent = FailedPrecondition("the message has no body");
  } else if (m.attempts > options_.max_attempts) {
    // Only a message reclaimed from a sender that stopped mid-send gets here.
    sent = FailedPrecondition("delivery was started " + std::to_string(m.attempts - 1) +
                              " times without an outcome");
  } else {
    // Date is when the message was enqueued, the same on every attempt.
    sent = smtp_->Send({.from = options_.from,
                        .to = e.to_addr,
                        .subject = e.subject,
                        .body = *e.body,
                        .message_id = e.message_id,
                        .date = e.created_at});
  }

  enum class Outcome { kSent, kRetry, kFailed } outcome;
  if (sent.ok()) {
    outcome = Outcome::kSent;
  } else if (!IsPermanent(sent) && m.attempts < options_.max_attempts) {
    outcome = Outcome::kRetry;
  } else {
    outcome = Outcome::kFailed;
  }
  const Timestamp now = options_.clock->Now();
  const Duration backoff = outcome == Outcome::kRetry ? Backoff(m.attempts) : Duration::zero();
  bool changed = false;
  Status recorded = db_.Transact([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    StatusOr<bool> r = false;
    if (outcome == Outcome::kSent) {
      // The body may hold a one-time secret (an agent token): it does not stay at rest.
      r = s.MarkEmailSent(e.id, m.lease_until, now);
    } else if (outcome == Outcome::kRetry) {
      r = s.RescheduleEmail(e.id, m.lease_until, now + backoff, Truncate(sent.ToString()));
    } else {
      r = s.MarkEmailFailed(e.id, m.lease_until, Truncate(sent.ToString()));
    }
    GPUNEX_ASSIGN_OR_RETURN(changed, std::move(r));
    return Status::Ok();
  });

  json::object fields = {{"id", e.id}, {"kind", e.kind}, {"attempts", m.attempts}};
  if (!sent.ok()) fields["error"] = sent.ToString();
  switch (outcome) {
    case Outcome::kSent:
      sent_.fetch_add(1);
      LogInfo("notify.email.sent", fields);
      break;
    case Outcome::kRetry:
      retries_.fetch_add(1);
      LogWarn("notify.email.retry", fields);
      break;
    case Outcome::kFailed:
      failed_.fetch_add(1);
      LogError("notify.email.failed", fields);
      break;
  }
  if (!recorded.ok()) {
    // The row stays 'sending' until the lease expires; then it is claimed again (an
    // outcome that did commit despite the error stands, and fences off our claim).
    fields["record_error"] = recorded.ToString();
    LogError("notify.outbox.record_failed", std::move(fields));
  } else if (!changed) {
    // Our lease ran out and another sender claimed the message: it will send it again.
    LogWarn("notify.outbox.lease_lost", std::move(fields));
  }
}

Duration OutboxSender::Backoff(int64_t attempt) const {
  const Duration max = std::max(options_.backoff_max, Duration(1));
  Duration d = std::clamp(options_.backoff_base, Duration(1), max);
  for (int64_t i = 1; i < attempt && d < max; ++i) d = std::min(d * 2, max);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> jitter(d.count() / 2, d.count());
  return Duration(jitter(rng));
}

}  // namespace gpunex::platform::notify
