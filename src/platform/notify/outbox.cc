#include "platform/notify/outbox.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>

#include "common/log.h"
#include "common/time.h"
#include "platform/notify/internal/mail_format.h"

namespace gpunex::platform::notify {
namespace {

constexpr size_t kMaxLastErrorLength = 1000;
// Candidates read per claim transaction; the first whose conditional UPDATE wins is
// taken, the others are left for later (or for other senders).
constexpr int64_t kClaimCandidates = 8;
constexpr auto kErrorLogInterval = std::chrono::seconds(60);

// Due: pending and its time has come, or claimed by a sender whose lease ran out.
constexpr const char* kDueCondition =
    "((status = 'pending' AND next_attempt_at <= ?) OR "
    "(status = 'sending' AND lease_until <= ?))";

bool IsPermanent(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kFailedPrecondition;
}

std::string Truncate(std::string s) {
  if (s.size() > kMaxLastErrorLength) s.resize(kMaxLastErrorLength);
  return s;
}

int64_t Micros(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

struct OutboxSender::Claimed {
  std::string id;
  std::string to;
  std::string subject;
  std::optional<std::string> body;
  std::string message_id;
  std::string kind;
  int64_t attempts = 0;  // including this claim
  UnixMicros created_at = 0;
  UnixMicros lease_until = 0;  // our claim's fencing token
};

OutboxSender::OutboxSender(store::Database& db, std::unique_ptr<SmtpClient> smtp,
                           OutboxOptions options)
    : db_(db), smtp_(std::move(smtp)), options_(std::move(options)) {}

OutboxSender::~OutboxSender() { Stop(); }

void OutboxSender::Start() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  stopping_ = false;
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void OutboxSender::Stop() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    running_ = false;
    stopping_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  t.join();
}

void OutboxSender::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

OutboxCounters OutboxSender::counters() const {
  return {.sent = sent_.load(), .failed = failed_.load(), .retries = retries_.load()};
}

void OutboxSender::Run() {
  auto last_error_log = std::chrono::steady_clock::time_point::min();
  while (true) {
    StatusOr<int> r = DeliverDue();
    if (!r.ok()) {
      auto now = std::chrono::steady_clock::now();
      if (now - last_error_log >= kErrorLogInterval) {  // the database may be down a while
        last_error_log = now;
        LogError("notify.outbox.claim_failed", {{"error", r.status().ToString()}});
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, options_.poll_interval, [this] { return wake_ || stopping_.load(); });
    if (stopping_) return;
    wake_ = false;
  }
}

Status ReleaseAbandonedClaims(store::Database& db) {
  return db.Transact([](store::Tx& tx) {
    return tx
        .Exec("UPDATE email_outbox SET status = 'pending', lease_until = NULL, next_attempt_at = ? "
              "WHERE status = 'sending'",
              {NowMicros()})
        .status();
  });
}

StatusOr<int> OutboxSender::DeliverDue() {
  Status from_ok = internal::ParseMailbox(options_.from, "from").status();
  if (!from_ok.ok()) return InvalidArgument("outbox sender: " + from_ok.message());
  int attempted = 0;
  while (!stopping_) {
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
  return db_.Transact([&](store::Tx& tx) -> Status {
    *found = false;
    UnixMicros now = NowMicros();
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows rows,
        tx.Query(std::string("SELECT id, to_addr, subject, body, message_id, kind, attempts, "
                             "created_at FROM email_outbox WHERE ") +
                     kDueCondition + " ORDER BY next_attempt_at LIMIT ?",
                 {now, now, kClaimCandidates}));
    for (const store::Row& row : rows) {
      UnixMicros lease_until = now + Micros(options_.lease);
      // Conditional: with several senders (or READ COMMITTED isolation) another may
      // have claimed the row since the SELECT; only the UPDATE that changes it wins.
      GPUNEX_ASSIGN_OR_RETURN(
          int64_t changed,
          tx.Exec(std::string("UPDATE email_outbox SET status = 'sending', lease_until = ?, "
                              "attempts = attempts + 1 WHERE id = ? AND ") +
                      kDueCondition,
                  {lease_until, row.Str(0), now, now}));
      if (changed != 1) continue;
      out->id = row.Str(0);
      out->to = row.Str(1);
      out->subject = row.Str(2);
      out->body = row.OptStr(3);
      out->message_id = row.Str(4);
      out->kind = row.Str(5);
      out->attempts = row.Int(6) + 1;
      out->created_at = row.Int(7);
      out->lease_until = lease_until;
      *found = true;
      return Status::Ok();
    }
    return Status::Ok();
  });
}

void OutboxSender::Deliver(const Claimed& m) {
  Status sent;
  if (!m.body.has_value()) {
    sent = FailedPrecondition("the message has no body");
  } else if (m.attempts > options_.max_attempts) {
    // Only a message reclaimed from a sender that stopped mid-send gets here.
    sent = FailedPrecondition("delivery was started " + std::to_string(m.attempts - 1) +
                              " times without an outcome");
  } else {
    // Date is when the message was enqueued, the same on every attempt.
    sent = smtp_->Send({.from = options_.from,
                        .to = m.to,
                        .subject = m.subject,
                        .body = *m.body,
                        .message_id = m.message_id,
                        .date = m.created_at});
  }

  UnixMicros now = NowMicros();
  std::string sql;
  std::vector<store::Value> params;
  enum class Outcome { kSent, kRetry, kFailed } outcome;
  if (sent.ok()) {
    outcome = Outcome::kSent;
    // The body may hold a one-time secret (an agent token): it does not stay at rest.
    sql =
        "UPDATE email_outbox SET status = 'sent', sent_at = ?, body = NULL, "
        "lease_until = NULL, last_error = NULL "
        "WHERE id = ? AND status = 'sending' AND lease_until = ?";
    params = {now, m.id, m.lease_until};
  } else if (!IsPermanent(sent) && m.attempts < options_.max_attempts) {
    outcome = Outcome::kRetry;
    sql =
        "UPDATE email_outbox SET status = 'pending', next_attempt_at = ?, "
        "lease_until = NULL, last_error = ? "
        "WHERE id = ? AND status = 'sending' AND lease_until = ?";
    params = {now + Backoff(m.attempts).count(), Truncate(sent.ToString()), m.id, m.lease_until};
  } else {
    outcome = Outcome::kFailed;
    sql =
        "UPDATE email_outbox SET status = 'failed', lease_until = NULL, last_error = ? "
        "WHERE id = ? AND status = 'sending' AND lease_until = ?";
    params = {Truncate(sent.ToString()), m.id, m.lease_until};
  }

  int64_t changed = 0;
  Status recorded = db_.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(changed, tx.Exec(sql, params));
    return Status::Ok();
  });

  json::object fields = {{"id", m.id}, {"kind", m.kind}, {"attempts", m.attempts}};
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
    // The row stays 'sending' until the lease expires; then it is claimed again.
    fields["record_error"] = recorded.ToString();
    LogError("notify.outbox.record_failed", std::move(fields));
  } else if (changed != 1) {
    // Our lease ran out and another sender claimed the message: it will send it again.
    LogWarn("notify.outbox.lease_lost", std::move(fields));
  }
}

std::chrono::microseconds OutboxSender::Backoff(int64_t attempt) const {
  const int64_t max = std::max<int64_t>(Micros(options_.backoff_max), 1);
  int64_t d = std::clamp<int64_t>(Micros(options_.backoff_base), 1, max);
  for (int64_t i = 1; i < attempt && d < max; ++i) d = std::min(d * 2, max);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> jitter(d / 2, d);
  return std::chrono::microseconds(jitter(rng));
}

}  // namespace gpunex::platform::notify
