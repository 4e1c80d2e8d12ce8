// OutboxSender on both store backends: against a real SMTP server (aiosmtpd,
// testdata/smtp_sink.py), and under injected database faults with an SmtpClient that
// records what it was given. Due times, leases and backoff follow a FakeClock.
#include "platform/notify/outbox.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "common/background.h"
#include "common/testing/fake_clock.h"
#include "common/thread_annotations.h"
#include "platform/notify/notify.h"
#include "platform/notify/test_util.h"
#include "platform/store/testing/fault_injection.h"

namespace gpunex::platform::notify {
namespace {

using std::chrono::milliseconds;

// What a RecordingSmtp accepted.
class SentLog {
 public:
  void Add(const OutgoingEmail& e) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    emails_.push_back(e);
  }
  std::vector<OutgoingEmail> emails() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return emails_;
  }

 private:
  mutable Mutex mu_;
  std::vector<OutgoingEmail> emails_ GUARDED_BY(mu_);
};

// An SmtpClient that accepts every message into a SentLog.
class RecordingSmtp final : public SmtpClient {
 public:
  explicit RecordingSmtp(SentLog* log) : log_(log) {}
  Status Send(const OutgoingEmail& email) override {
    log_->Add(email);
    return Status::Ok();
  }

 private:
  SentLog* const log_;
};

class OutboxTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto db = test::OpenMigratedDb(GetParam());
    if (db.status().code() == StatusCode::kFailedPrecondition)
      GTEST_SKIP() << db.status().message();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    test_db_ = std::move(db).value();
    db_ = &test_db_->db();
  }

  // Options for tests: quick polls and backoff, time from the fake clock.
  OutboxOptions Options() {
    OutboxOptions o;
    o.from = "GPUnex <noreply@gpunex.example>";
    o.poll_interval = milliseconds(50);
    o.backoff_base = milliseconds(100);
    o.backoff_max = milliseconds(400);
    o.clock = &clock_;
    return o;
  }

  static std::unique_ptr<SmtpClient> Client(const std::string& url) {
    CurlSmtpOptions o;
    o.connect_timeout = std::chrono::seconds(5);
    o.total_timeout = std::chrono::seconds(20);
    return CurlSmtpClient(url, o);
  }

  std::string Enqueue(const Email& email) {
    std::string id;
    Status st = db_->Transact([&](store::Tx& tx) {
      return EnqueueEmail(tx, clock_.Now(), email, "gpunex.example", &id);
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return id;
  }

  std::string Enqueue(const std::string& to = "alice@example.com") {
    return Enqueue({.to = to,
                    .subject = "Agent token für Ihre Maschine",
                    .body = "Your agent token: gpx_a_0123456789\n",
                    .kind = "agent.token_created",
                    .user_id = ""});
  }

  // Reads the outbox row `id`: status, attempts, body, sent_at, last_error, lease_until,
  // next_attempt_at, message_id.
  store::Row Outbox(const std::string& id) {
    auto rows = test::QueryDb(*db_,
                              "SELECT status, attempts, body, sent_at, last_error, lease_until, "
                              "next_attempt_at, message_id FROM email_outbox WHERE id = ?",
                              {id});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(rows->size(), 1u);
    return rows->at(0);
  }
  std::string StatusOf(const std::string& id) { return Outbox(id)["status"].Str(); }

  // For waits on the background thread: while `id` waits for a retry, moves the clock
  // on by `step` (a backoff's most) and wakes the sender, so that the retry is due.
  void AdvanceWhilePending(const std::string& id, Duration step, OutboxSender& sender) {
    if (StatusOf(id) != "pending") return;
    clock_.Advance(step);
    sender.Wake();
  }

  test::TempDir dir_;  // the SMTP sink's
  gpunex::testing::FakeClock clock_;
  std::unique_ptr<store::testing::TestDatabase> test_db_;
  store::Database* db_ = nullptr;
  test::SmtpSink sink_;
};

// A sender scheduled on background work of its own, started until Stop().
class Sending {
 public:
  explicit Sending(OutboxSender& sender) {
    sender.ScheduleOn(background_);
    background_.Start();
  }
  void Stop() { background_.Stop(); }

 private:
  Background background_;
};

TEST_P(OutboxTest, DeliversOnceAndForgetsTheBody) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  Sending sending(sender);
  const std::string id = Enqueue();
  sender.Wake();

  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "sent"; }));
  store::Row row = Outbox(id);
  EXPECT_EQ(row["attempts"].Int(), 1);    // attempts
  EXPECT_TRUE(row["body"].IsNull());      // body: the token is gone from the database
  EXPECT_FALSE(row["sent_at"].IsNull());  // sent_at
  EXPECT_EQ(row["sent_at"].Time(), clock_.Now());
  EXPECT_TRUE(row["last_error"].IsNull());   // last_error
  EXPECT_TRUE(row["lease_until"].IsNull());  // lease_until

  // Several more polls: still exactly one message.
  std::this_thread::sleep_for(milliseconds(300));
  sending.Stop();
  std::vector<test::SinkMessage> got = sink_.Messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message_id, "<" + id + "@gpunex.example>");
  EXPECT_EQ(got[0].message_id, row["message_id"].Str());
  EXPECT_EQ(got[0].subject, "Agent token für Ihre Maschine");
  EXPECT_EQ(got[0].body, "Your agent token: gpx_a_0123456789\n");
  EXPECT_EQ(got[0].mail_from, "noreply@gpunex.example");
  EXPECT_EQ(got[0].rcpt_tos, std::vector<std::string>{"alice@example.com"});
  EXPECT_NE(got[0].raw.find("MIME-Version: 1.0\r\n"), std::string::npos);
  EXPECT_NE(got[0].raw.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  // Date: when it was enqueued, by the clock the caller used (2026-12-01T00:00:00Z).
  EXPECT_NE(got[0].raw.find("Date: Tue, 01 Dec 2026 00:00:00 +0000\r\n"), std::string::npos);

  OutboxCounters c = sender.counters();
  EXPECT_EQ(c.sent, 1u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.retries, 0u);
}

TEST_P(OutboxTest, RetriesWithBackoffUntilTheServerComesUp) {
  const int port = test::FreePort();
  const OutboxOptions o = Options();
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:" + std::to_string(port)), o);
  const std::string id = Enqueue();
  Sending sending(sender);

  // At least two failed attempts, each rescheduled into the future. (attempts counts
  // claims, so wait until the second claim has been answered too.)
  ASSERT_TRUE(test::WaitFor([&] {
    store::Row r = Outbox(id);
    if (r["attempts"].Int() >= 2 && r["status"].Str() == "pending") return true;
    AdvanceWhilePending(id, o.backoff_max, sender);
    return false;
  }));
  store::Row row = Outbox(id);
  EXPECT_EQ(row["status"].Str(), "pending");
  EXPECT_FALSE(row["body"].IsNull());        // the body stays until it is delivered
  EXPECT_FALSE(row["last_error"].IsNull());  // last_error says why
  EXPECT_NE(row["last_error"].Str().find("unavailable"), std::string::npos)
      << row["last_error"].Str();
  EXPECT_GT(row["next_attempt_at"].Time(), clock_.Now());  // not due before its backoff has passed
  EXPECT_GE(sender.counters().retries, 1u);
  EXPECT_EQ(sender.counters().sent, 0u);

  ASSERT_TRUE(sink_.Start(dir_.path(), port).ok());
  ASSERT_TRUE(test::WaitFor([&] {
    AdvanceWhilePending(id, o.backoff_max, sender);
    return StatusOf(id) == "sent";
  }));
  sending.Stop();
  ASSERT_EQ(sink_.Messages().size(), 1u);
  EXPECT_EQ(sink_.Messages()[0].message_id, "<" + id + "@gpunex.example>");
  EXPECT_EQ(sender.counters().sent, 1u);
  EXPECT_EQ(sender.counters().failed, 0u);
}

TEST_P(OutboxTest, BackoffDoublesWithJitterAndCap) {
  // No server: every attempt fails; check the delays the sender chose.
  OutboxOptions o = Options();
  o.backoff_base = milliseconds(1000);
  o.backoff_max = milliseconds(3000);
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:" + std::to_string(test::FreePort())), o);
  const std::string id = Enqueue();
  for (int64_t attempt = 1; attempt <= 4; ++attempt) {
    const Timestamp due = Outbox(id)["next_attempt_at"].Time();
    if (attempt > 1) {
      // Not due a moment before its time...
      clock_.Set(due - Duration(1));
      auto early = sender.DeliverDue();
      ASSERT_TRUE(early.ok()) << early.status().ToString();
      EXPECT_EQ(*early, 0) << attempt;
    }
    // ... and due at it.
    clock_.Set(due);
    const Timestamp now = clock_.Now();
    auto n = sender.DeliverDue();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 1);
    store::Row row = Outbox(id);
    EXPECT_EQ(row["attempts"].Int(), attempt);
    const Duration full = std::min<Duration>(
        std::chrono::seconds(1) * (int64_t{1} << (attempt - 1)), std::chrono::seconds(3));
    EXPECT_GE(row["next_attempt_at"].Time(), now + full / 2) << attempt;
    EXPECT_LE(row["next_attempt_at"].Time(), now + full) << attempt;
  }
  EXPECT_EQ(sender.counters().retries, 4u);
}

TEST_P(OutboxTest, RedeliversAfterACrashMidSend) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string crashed = Enqueue("crashed@example.com");
  const std::string busy = Enqueue("busy@example.com");
  // A previous process claimed both and died; one lease has expired, one has not.
  const Timestamp now = clock_.Now();
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 1, "
                            "lease_until = ? WHERE id = ?",
                            {ToUnixMicros(now - kOneSecond), crashed})
                  .ok());
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 1, "
                            "lease_until = ? WHERE id = ?",
                            {ToUnixMicros(now + kOneHour), busy})
                  .ok());

  OutboxSender sender(*db_, Client(sink_.url()), Options());
  auto n = sender.DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(StatusOf(crashed), "sent");
  EXPECT_EQ(Outbox(crashed)["attempts"].Int(), 2);
  EXPECT_EQ(StatusOf(busy), "sending");  // still someone else's
  ASSERT_EQ(sink_.Messages().size(), 1u);
  EXPECT_EQ(sink_.Messages()[0].rcpt_tos, std::vector<std::string>{"crashed@example.com"});
  EXPECT_EQ(sink_.Messages()[0].message_id, "<" + crashed + "@gpunex.example>");

  // Once the other claim's lease has run out, the message is this sender's to deliver.
  clock_.Advance(kOneHour);
  n = sender.DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(StatusOf(busy), "sent");
  ASSERT_EQ(sink_.Messages().size(), 2u);
  EXPECT_EQ(sink_.Messages()[1].rcpt_tos, std::vector<std::string>{"busy@example.com"});
}

TEST_P(OutboxTest, GivesUpOnAMessageThatKeepsCrashingTheSender) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxOptions o = Options();
  o.max_attempts = 3;
  const std::string id = Enqueue();
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 3, "
                            "lease_until = 1 WHERE id = ?",
                            {id})
                  .ok());
  OutboxSender sender(*db_, Client(sink_.url()), o);
  ASSERT_TRUE(sender.DeliverDue().ok());
  EXPECT_EQ(StatusOf(id), "failed");
  EXPECT_TRUE(sink_.Messages().empty());
  EXPECT_EQ(sender.counters().failed, 1u);
}

TEST_P(OutboxTest, NeverResendsASentMessage) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string id = Enqueue();
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sent', sent_at = ?, body = NULL, "
                            "attempts = 1, next_attempt_at = 0 WHERE id = ?",
                            {ToUnixMicros(clock_.Now()), id})
                  .ok());
  clock_.Advance(kOneDay);  // long past every due time and lease
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  auto n = sender.DeliverDue();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  Sending sending(sender);
  sender.Wake();
  std::this_thread::sleep_for(milliseconds(300));
  sending.Stop();
  EXPECT_TRUE(sink_.Messages().empty());
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(sender.counters().sent, 0u);
}

TEST_P(OutboxTest, PermanentRefusalMarksFailedAtOnce) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string id = Enqueue("rejected@example.com");
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  ASSERT_TRUE(sender.DeliverDue().ok());
  store::Row row = Outbox(id);
  EXPECT_EQ(row["status"].Str(), "failed");
  EXPECT_EQ(row["attempts"].Int(), 1);
  EXPECT_NE(row["last_error"].Str().find("550"), std::string::npos) << row["last_error"].Str();
  EXPECT_EQ(sender.counters().failed, 1u);
  EXPECT_EQ(sender.counters().retries, 0u);
}

TEST_P(OutboxTest, GivesUpAfterMaxAttempts) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxOptions o = Options();
  o.max_attempts = 3;
  o.backoff_base = milliseconds(10);
  o.backoff_max = milliseconds(20);
  const std::string id = Enqueue("tempfail@example.com");
  OutboxSender sender(*db_, Client(sink_.url()), o);
  Sending sending(sender);
  ASSERT_TRUE(test::WaitFor([&] {
    AdvanceWhilePending(id, o.backoff_max, sender);
    return StatusOf(id) == "failed";
  }));
  sending.Stop();
  store::Row row = Outbox(id);
  EXPECT_EQ(row["attempts"].Int(), 3);
  EXPECT_NE(row["last_error"].Str().find("451"), std::string::npos) << row["last_error"].Str();
  EXPECT_EQ(sender.counters().retries, 2u);
  EXPECT_EQ(sender.counters().failed, 1u);
  EXPECT_TRUE(sink_.Messages().empty());
}

TEST_P(OutboxTest, TwoSendersDeliverEachMessageExactlyOnce) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  // A second gpunexd: on SQLite its own connections to the same database file; on
  // PostgreSQL the same pool serves both (each transaction on its own connection).
  std::unique_ptr<store::Database> own_db2;
  store::Database* db2 = db_;
  if (GetParam() == "sqlite") {
    auto opened = store::OpenSqliteDatabase(test_db_->dir().string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    own_db2 = std::move(opened).value();
    db2 = own_db2.get();
  }

  constexpr int kMessages = 30;
  std::vector<std::string> ids;
  for (int i = 0; i < kMessages; ++i)
    ids.push_back(Enqueue("user" + std::to_string(i) + "@example.com"));

  OutboxSender a(*db_, Client(sink_.url()), Options());
  OutboxSender b(*db2, Client(sink_.url()), Options());
  Sending sending_a(a);
  Sending sending_b(b);
  ASSERT_TRUE(test::WaitFor([&] {
    auto rows = test::QueryDb(*db_, "SELECT COUNT(*) AS n FROM email_outbox WHERE status = 'sent'");
    return rows.ok() && rows->at(0)["n"].Int() == kMessages;
  }));
  sending_a.Stop();
  sending_b.Stop();

  std::map<std::string, int> seen;
  for (const test::SinkMessage& m : sink_.Messages()) ++seen[m.message_id];
  EXPECT_EQ(seen.size(), static_cast<size_t>(kMessages));
  for (const std::string& id : ids) {
    EXPECT_EQ(seen["<" + id + "@gpunex.example>"], 1) << id;
  }
  EXPECT_EQ(a.counters().sent + b.counters().sent, static_cast<uint64_t>(kMessages));
  RecordProperty("sent_by_a", std::to_string(a.counters().sent));
  RecordProperty("sent_by_b", std::to_string(b.counters().sent));
  auto attempts = test::QueryDb(*db_, "SELECT SUM(attempts) AS n FROM email_outbox");
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->at(0)["n"].Int(), kMessages);
}

TEST_P(OutboxTest, StopIsIdempotentAndRestartable) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  Background background;
  sender.ScheduleOn(background);
  background.Stop();  // not running: no effect
  background.Start();
  background.Start();  // already running: no effect
  background.Stop();
  background.Stop();
  const std::string id = Enqueue();
  background.Start();
  sender.Wake();
  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "sent"; }));
  // The destructor stops it.
}

TEST_P(OutboxTest, InvalidFromAddressClaimsNothing) {
  OutboxOptions o = Options();
  o.from = "not an address";
  const std::string id = Enqueue();
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:1"), o);
  auto n = sender.DeliverDue();
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusOf(id), "pending");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 0);
}

TEST_P(OutboxTest, ReleaseAbandonedClaimsMakesClaimsDueNow) {
  const std::string claimed = Enqueue("claimed@example.com");
  const std::string waiting = Enqueue("waiting@example.com");
  const Timestamp later = clock_.Now() + kOneHour;
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 1, "
                            "lease_until = ? WHERE id = ?",
                            {ToUnixMicros(later), claimed})
                  .ok());
  ASSERT_TRUE(test::QueryDb(*db_, "UPDATE email_outbox SET next_attempt_at = ? WHERE id = ?",
                            {ToUnixMicros(later), waiting})
                  .ok());
  clock_.Advance(kOneMinute);
  ASSERT_TRUE(ReleaseAbandonedClaims(*db_, clock_.Now()).ok());
  store::Row row = Outbox(claimed);
  EXPECT_EQ(row["status"].Str(), "pending");
  EXPECT_EQ(row["attempts"].Int(), 1);
  EXPECT_TRUE(row["lease_until"].IsNull());
  EXPECT_EQ(row["next_attempt_at"].Time(), clock_.Now());
  // A pending message keeps its own due time.
  EXPECT_EQ(Outbox(waiting)["next_attempt_at"].Time(), later);
}

// --- under injected database faults ---

class OutboxFaultTest : public OutboxTest {
 protected:
  void SetUp() override {
    OutboxTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    faulty_ = std::make_unique<store::testing::FaultInjectingDatabase>(*db_);
  }

  // A sender on the faulty database whose SMTP server accepts everything into log_.
  std::unique_ptr<OutboxSender> Sender() {
    return std::make_unique<OutboxSender>(*faulty_, std::make_unique<RecordingSmtp>(&log_),
                                          Options());
  }

  // How many times the server was given the message `id`.
  int Deliveries(const std::string& id) {
    int n = 0;
    for (const OutgoingEmail& e : log_.emails()) n += e.message_id == "<" + id + "@gpunex.example>";
    return n;
  }

  SentLog log_;
  std::unique_ptr<store::testing::FaultInjectingDatabase> faulty_;
};

// The claim's statement, and the statement that records a delivery.
constexpr const char* kClaim = "SET status = 'sending'";
constexpr const char* kMarkSent = "SET status = 'sent'";

TEST_P(OutboxFaultTest, ClaimThatCommittedUnbeknownIsSentOnceAfterItsLease) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailCommit(kClaim, /*committed=*/true);
  auto n = sender->DeliverDue();
  EXPECT_EQ(n.status().code(), StatusCode::kOutcomeUnknown) << n.status().ToString();
  // Not sent on a claim the sender cannot know it holds; not lost either.
  EXPECT_EQ(Deliveries(id), 0);
  EXPECT_EQ(StatusOf(id), "sending");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 1);
  EXPECT_FALSE(Outbox(id)["body"].IsNull());  // the body is still there to send

  // Nobody claims it while the lease lasts...
  clock_.Advance(Options().lease - Duration(1));
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(Deliveries(id), 0);

  // ... and once it has run out, it is claimed again and sent, once.
  clock_.Advance(Duration(1));
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 1);
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 2);

  clock_.Advance(kOneDay);
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(Deliveries(id), 1);
  EXPECT_EQ(faulty_->injected(), 1);
}

TEST_P(OutboxFaultTest, ClaimThatDidNotCommitIsSentOnceAtTheNextTry) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailCommit(kClaim, /*committed=*/false);
  auto n = sender->DeliverDue();
  EXPECT_EQ(n.status().code(), StatusCode::kOutcomeUnknown) << n.status().ToString();
  EXPECT_EQ(Deliveries(id), 0);
  EXPECT_EQ(StatusOf(id), "pending");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 0);

  // Still due: no lease to wait out.
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 1);
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 1);

  clock_.Advance(kOneDay);
  ASSERT_TRUE(sender->DeliverDue().ok());
  EXPECT_EQ(Deliveries(id), 1);
}

TEST_P(OutboxFaultTest, ConflictOnTheClaimIsRetriedAndSendsOnce) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailStatement(kClaim, Aborted("injected conflict"), 2);
  auto n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 1);
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(Outbox(id)["attempts"].Int(), 1);  // the rolled-back attempts left no claim behind
  EXPECT_EQ(faulty_->injected(), 2);
}

TEST_P(OutboxFaultTest, DatabaseOutageOnTheClaimSendsNothingAndLosesNothing) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailStatement("FROM email_outbox WHERE", Unavailable("injected outage"));
  auto n = sender->DeliverDue();
  EXPECT_EQ(n.status().code(), StatusCode::kUnavailable) << n.status().ToString();
  EXPECT_EQ(Deliveries(id), 0);
  EXPECT_EQ(StatusOf(id), "pending");

  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 1);
}

TEST_P(OutboxFaultTest, FailureToRecordTheDeliveryIsReclaimedAfterTheLease) {
  const std::string id = Enqueue();
  const Timestamp enqueued = clock_.Now();
  auto sender = Sender();
  faulty_->FailStatement(kMarkSent, Unavailable("injected outage"));
  auto n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 1);
  // The server has it, the database does not know: the row stays claimed, body and all.
  EXPECT_EQ(StatusOf(id), "sending");
  EXPECT_FALSE(Outbox(id)["body"].IsNull());

  // Not again while the lease lasts.
  clock_.Advance(Options().lease - Duration(1));
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(Deliveries(id), 1);

  // After it: delivered again (at least once), with the same Message-ID and Date, and
  // this time recorded.
  clock_.Advance(Duration(1));
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(Deliveries(id), 2);
  std::vector<OutgoingEmail> sent = log_.emails();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].message_id, sent[1].message_id);
  EXPECT_EQ(sent[0].date, enqueued);
  EXPECT_EQ(sent[1].date, enqueued);
  store::Row row = Outbox(id);
  EXPECT_EQ(row["status"].Str(), "sent");
  EXPECT_EQ(row["attempts"].Int(), 2);
  EXPECT_TRUE(row["body"].IsNull());
  EXPECT_EQ(row["sent_at"].Time(), clock_.Now());

  clock_.Advance(kOneDay);
  ASSERT_TRUE(sender->DeliverDue().ok());
  EXPECT_EQ(Deliveries(id), 2);
  EXPECT_EQ(sender->counters().sent, 2u);
}

TEST_P(OutboxFaultTest, RecordOfTheDeliveryThatCommittedUnbeknownStands) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailCommit(kMarkSent, /*committed=*/true);
  auto n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(StatusOf(id), "sent");
  clock_.Advance(kOneDay);
  n = sender->DeliverDue();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(Deliveries(id), 1);
}

TEST_P(OutboxFaultTest, RecordOfTheDeliveryThatDidNotCommitIsRedeliveredAfterTheLease) {
  const std::string id = Enqueue();
  auto sender = Sender();
  faulty_->FailCommit(kMarkSent, /*committed=*/false);
  ASSERT_TRUE(sender->DeliverDue().ok());
  EXPECT_EQ(StatusOf(id), "sending");
  EXPECT_EQ(Deliveries(id), 1);
  clock_.Advance(Options().lease);
  auto n = sender->DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(Deliveries(id), 2);
}

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Backends, OutboxTest, ::testing::ValuesIn(store::testing::TestBackends()),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, OutboxFaultTest,
                         ::testing::ValuesIn(store::testing::TestBackends()), BackendName);

}  // namespace
}  // namespace gpunex::platform::notify
