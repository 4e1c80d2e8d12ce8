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
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "platform/notify/smtp.h"
#include "platform/store/db.h"

namespace gpunex::platform::notify {

struct OutboxOptions {
  // The From header and envelope sender: "GPUnex <noreply@gpunex.example>".
  std::string from;
  // How often the thread looks for due messages when not woken.
  std::chrono::milliseconds poll_interval{1000};
  // Claims per message before it is marked failed.
  int max_attempts = 12;
  // Retry n (n = 1, 2, ...) waits a random time in [d/2, d] where
  // d = min(backoff_max, backoff_base * 2^(n-1)).
  std::chrono::milliseconds backoff_base{5'000};
  std::chrono::milliseconds backoff_max{3'600'000};
  // How long a claim lasts. Must exceed the SmtpClient's longest Send.
  std::chrono::milliseconds lease{300'000};
};

// Monotonic counts since construction, for /metrics.
struct OutboxCounters {
  uint64_t sent = 0;     // accepted by the server
  uint64_t failed = 0;   // given up (permanent refusal or attempts used up)
  uint64_t retries = 0;  // transient failures scheduled for another attempt
};

// Returns every email claimed by a sender ('sending') to 'pending', due now. Only for
// start-up when this process is the only sender (SQLite: one process per data
// directory); with several instances an expired lease does the same job safely.
Status ReleaseAbandonedClaims(store::Database& db);

class OutboxSender {
 public:
  // `db` must outlive the sender. REQUIRES: options.from is a valid mailbox.
  OutboxSender(store::Database& db, std::unique_ptr<SmtpClient> smtp, OutboxOptions options);
  // Stops the thread if running.
  ~OutboxSender();

  OutboxSender(const OutboxSender&) = delete;
  OutboxSender& operator=(const OutboxSender&) = delete;

  // Starts the background thread. No effect when already running.
  void Start();
  // Asks the thread to finish and waits for it: a send in progress completes and its
  // outcome is recorded; no new message is claimed. No effect when not running.
  void Stop();
  // Makes the thread look for due messages now, e.g. after a commit that enqueued one.
  void Wake();

  // Delivers the messages due now on the calling thread, one claim at a time, until
  // none is due or Stop() is called. Returns how many were attempted. The background
  // thread calls this; tests and one-shot tools may too.
  StatusOr<int> DeliverDue();

  OutboxCounters counters() const;

 private:
  struct Claimed;

  void Run();
  // Claims one due message into `out` and sets `found`; `found` is false when none is
  // due.
  Status ClaimOne(Claimed* out, bool* found);
  // Sends a claimed message and records the outcome; logs, never fails.
  void Deliver(const Claimed& m);
  // The wait before the next attempt after `attempt` attempts.
  std::chrono::microseconds Backoff(int64_t attempt) const;

  store::Database& db_;
  const std::unique_ptr<SmtpClient> smtp_;
  const OutboxOptions options_;

  std::mutex lifecycle_mu_;  // serialises Start and Stop
  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;                  // GUARDED_BY(mu_)
  bool running_ = false;               // GUARDED_BY(mu_)
  std::thread thread_;                 // GUARDED_BY(mu_); joined outside it
  std::atomic<bool> stopping_{false};  // written under mu_, read anywhere

  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> retries_{0};
};

}  // namespace gpunex::platform::notify
