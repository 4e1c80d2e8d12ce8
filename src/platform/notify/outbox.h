// OutboxSender: the background worker that delivers the email outbox (notify.h
// EnqueueEmail) through an SmtpClient.
//
// Each message is first claimed in its own transaction: a conditional UPDATE moves it
// from 'pending' (due) to 'sending' with a lease, and only the sender whose UPDATE
// changed the row sends it. Several gpunexd instances can therefore run senders against
// one database. A sender that dies mid-send leaves its row 'sending'; once the lease
// expires any sender claims it again. Delivery is thus at least once: a message can
// reach the server twice (a crash after the server accepted it, a lost final reply), but
// every attempt carries the same Message-ID.
//
// Row life cycle (email_outbox.status):
//   pending --claim--> sending --accepted--> sent    (body set to NULL: it may hold a
//                         |                           one-time secret)
//                         +--transient failure--> pending, next_attempt_at = now + backoff
//                         +--permanent failure, or attempts used up--> failed
// `attempts` counts claims, so a message that keeps killing its sender also stops.
// (notify_store.h: EmailStatus names the statuses, EmailMayGo the moves, held ones too.)
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/background.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/notify/smtp.h"
#include "platform/store/db.h"

namespace gpunex::platform::notify {

class EmailVerifier;

struct OutboxOptions {
  // The From header and envelope sender: "GPUnex <noreply@gpunex.example>".
  std::string from;
  // How often the thread looks for due messages when not woken (real time, whatever
  // the clock).
  Duration poll_interval = std::chrono::seconds(1);
  // Claims per message before it is marked failed.
  int max_attempts = 12;
  // Retry n (n = 1, 2, ...) waits a random time in [d/2, d] where
  // d = min(backoff_max, backoff_base * 2^(n-1)).
  Duration backoff_base = std::chrono::seconds(5);
  Duration backoff_max = std::chrono::hours(1);
  // How long a claim lasts. Must exceed the SmtpClient's longest Send.
  Duration lease = std::chrono::minutes(5);
  // Where due times, leases and sent_at come from. Must outlive the sender.
  const Clock* clock = &SystemClock();
  // Sends, on each pass, the verification links that held emails wait on (verify.h
  // SendDueLinks). Null: none. Must outlive the sender.
  const EmailVerifier* verifier = nullptr;
};

// Monotonic counts since construction, for /metrics.
struct OutboxCounters {
  uint64_t sent = 0;     // accepted by the server
  uint64_t failed = 0;   // given up (permanent refusal or attempts used up)
  uint64_t retries = 0;  // transient failures scheduled for another attempt
};

// Returns every email claimed by a sender ('sending') to 'pending', due at `now`. Only
// for start-up when this process is the only sender (SQLite: one process per data
// directory); with several instances an expired lease does the same job safely.
Status ReleaseAbandonedClaims(store::Database& db, Timestamp now);

class OutboxSender {
 public:
  // `db` must outlive the sender. REQUIRES: options.clock is not null; options.from is a
  // valid mailbox (DeliverDue refuses to claim anything otherwise).
  OutboxSender(store::Database& db, std::unique_ptr<SmtpClient> smtp, OutboxOptions options);
  OutboxSender(const OutboxSender&) = delete;
  OutboxSender& operator=(const OutboxSender&) = delete;

  // Schedules the sending: SendDue() every poll_interval, and at once when woken. When
  // the background work stops, a send in progress completes and its outcome is recorded;
  // no new message is claimed.
  void ScheduleOn(Background& background);
  // Makes the sending look for due messages now. Register it with Tx::AfterCommit in the
  // transaction that enqueued a message (notify.h EnqueueEmail).
  void Wake() const;
  // One pass: the verification links that emails wait on, then DeliverDue(). Failures
  // are logged (a failing claim at most once a minute).
  Status SendDue() EXCLUDES(error_log_mu_);

  // Delivers the messages due now on the calling thread, one claim at a time, until
  // none is due or the background work is stopping. Returns how many were attempted. Fails with
  // kInvalidArgument for an invalid `from`, and with the database's status when a claim
  // fails (kOutcomeUnknown included: a claim that did commit is not acted on, and its
  // message is claimed again once the lease runs out). SendDue calls this; tests and
  // one-shot tools may too.
  StatusOr<int> DeliverDue();

  OutboxCounters counters() const;

 private:
  struct Claimed;

  // Claims one due message into `out` and sets `found`; `found` is false when none is
  // due.
  Status ClaimOne(Claimed* out, bool* found);
  // Sends a claimed message and records the outcome; logs, never fails.
  void Deliver(const Claimed& m);
  // The wait before the next attempt after `attempt` attempts.
  Duration Backoff(int64_t attempt) const;

  store::Database& db_;
  const std::unique_ptr<SmtpClient> smtp_;
  const OutboxOptions options_;

  TaskHandle task_;  // set by ScheduleOn, before the background work starts
  Mutex error_log_mu_;
  std::chrono::steady_clock::time_point last_error_log_ GUARDED_BY(error_log_mu_) =
      std::chrono::steady_clock::time_point::min();

  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> retries_{0};
};

}  // namespace gpunex::platform::notify
