// OutboxSender against SQLite and a real SMTP server (aiosmtpd, testdata/smtp_sink.py).
#include "platform/notify/outbox.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "platform/notify/notify.h"
#include "platform/notify/test_util.h"

namespace gpunex::platform::notify {
namespace {

using std::chrono::milliseconds;

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = test::OpenMigratedDb(dir_.path());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
  }

  // Options for tests: quick polls and backoff.
  static OutboxOptions Options() {
    OutboxOptions o;
    o.from = "GPUnex <noreply@gpunex.example>";
    o.poll_interval = milliseconds(50);
    o.backoff_base = milliseconds(100);
    o.backoff_max = milliseconds(400);
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
    Status st = db_->Transact(
        [&](store::Tx& tx) { return EnqueueEmail(tx, email, "gpunex.example", &id); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return id;
  }

  std::string Enqueue(const std::string& to = "alice@example.com") {
    return Enqueue({.to = to,
                    .subject = "Agent token für Ihre Maschine",
                    .body = "Your agent token: gpx_a_0123456789\n",
                    .kind = "agent.token_created"});
  }

  // Reads one column of the outbox row `id`.
  store::Row Outbox(const std::string& id) {
    auto rows = test::QueryDb(*db_,
                              "SELECT status, attempts, body, sent_at, last_error, lease_until, "
                              "next_attempt_at, message_id FROM email_outbox WHERE id = ?",
                              {id});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(rows->size(), 1u);
    return rows->at(0);
  }
  std::string StatusOf(const std::string& id) { return Outbox(id).Str(0); }

  test::TempDir dir_;
  std::unique_ptr<store::Database> db_;
  test::SmtpSink sink_;
};

TEST_F(OutboxTest, DeliversOnceAndForgetsTheBody) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  sender.Start();
  const std::string id = Enqueue();
  sender.Wake();

  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "sent"; }));
  store::Row row = Outbox(id);
  EXPECT_EQ(row.Int(1), 1);     // attempts
  EXPECT_TRUE(row.IsNull(2));   // body: the token is gone from the database
  EXPECT_FALSE(row.IsNull(3));  // sent_at
  EXPECT_TRUE(row.IsNull(4));   // last_error
  EXPECT_TRUE(row.IsNull(5));   // lease_until

  // Several more polls: still exactly one message.
  std::this_thread::sleep_for(milliseconds(300));
  sender.Stop();
  std::vector<test::SinkMessage> got = sink_.Messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message_id, "<" + id + "@gpunex.example>");
  EXPECT_EQ(got[0].message_id, row.Str(7));
  EXPECT_EQ(got[0].subject, "Agent token für Ihre Maschine");
  EXPECT_EQ(got[0].body, "Your agent token: gpx_a_0123456789\n");
  EXPECT_EQ(got[0].mail_from, "noreply@gpunex.example");
  EXPECT_EQ(got[0].rcpt_tos, std::vector<std::string>{"alice@example.com"});
  EXPECT_NE(got[0].raw.find("MIME-Version: 1.0\r\n"), std::string::npos);
  EXPECT_NE(got[0].raw.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);

  OutboxCounters c = sender.counters();
  EXPECT_EQ(c.sent, 1u);
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.retries, 0u);
}

TEST_F(OutboxTest, RetriesWithBackoffUntilTheServerComesUp) {
  const int port = test::FreePort();
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:" + std::to_string(port)), Options());
  const std::string id = Enqueue();
  sender.Start();

  // At least two failed attempts, each rescheduled into the future. (attempts counts
  // claims, so wait until the second claim has been answered too.)
  ASSERT_TRUE(test::WaitFor([&] {
    store::Row r = Outbox(id);
    return r.Int(1) >= 2 && r.Str(0) == "pending";
  }));
  store::Row row = Outbox(id);
  EXPECT_EQ(row.Str(0), "pending");
  EXPECT_FALSE(row.IsNull(2));  // the body stays until it is delivered
  EXPECT_FALSE(row.IsNull(4));  // last_error says why
  EXPECT_NE(row.Str(4).find("unavailable"), std::string::npos) << row.Str(4);
  EXPECT_GE(sender.counters().retries, 1u);
  EXPECT_EQ(sender.counters().sent, 0u);

  ASSERT_TRUE(sink_.Start(dir_.path(), port).ok());
  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "sent"; }));
  sender.Stop();
  ASSERT_EQ(sink_.Messages().size(), 1u);
  EXPECT_EQ(sink_.Messages()[0].message_id, "<" + id + "@gpunex.example>");
  EXPECT_EQ(sender.counters().sent, 1u);
  EXPECT_EQ(sender.counters().failed, 0u);
}

TEST_F(OutboxTest, BackoffDoublesWithJitterAndCap) {
  // No server: every attempt fails; check the delays the sender chose.
  OutboxOptions o = Options();
  o.backoff_base = milliseconds(1000);
  o.backoff_max = milliseconds(3000);
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:" + std::to_string(test::FreePort())), o);
  const std::string id = Enqueue();
  for (int64_t attempt = 1; attempt <= 4; ++attempt) {
    // Make the message due again without waiting.
    ASSERT_TRUE(
        test::QueryDb(*db_, "UPDATE email_outbox SET next_attempt_at = 0 WHERE id = ?", {id}).ok());
    UnixMicros before = NowMicros();
    auto n = sender.DeliverDue();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 1);
    UnixMicros after = NowMicros();
    store::Row row = Outbox(id);
    EXPECT_EQ(row.Int(1), attempt);
    int64_t full = std::min<int64_t>(int64_t{1'000'000} << (attempt - 1), 3'000'000);
    EXPECT_GE(row.Int(6), before + full / 2) << attempt;
    EXPECT_LE(row.Int(6), after + full) << attempt;
  }
  EXPECT_EQ(sender.counters().retries, 4u);
}

TEST_F(OutboxTest, RedeliversAfterACrashMidSend) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string crashed = Enqueue("crashed@example.com");
  const std::string busy = Enqueue("busy@example.com");
  // A previous process claimed both and died; one lease has expired, one has not.
  UnixMicros now = NowMicros();
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 1, "
                            "lease_until = ? WHERE id = ?",
                            {now - kMicrosPerSecond, crashed})
                  .ok());
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sending', attempts = 1, "
                            "lease_until = ? WHERE id = ?",
                            {now + 3600 * kMicrosPerSecond, busy})
                  .ok());

  OutboxSender sender(*db_, Client(sink_.url()), Options());
  auto n = sender.DeliverDue();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(StatusOf(crashed), "sent");
  EXPECT_EQ(Outbox(crashed).Int(1), 2);
  EXPECT_EQ(StatusOf(busy), "sending");  // still someone else's
  ASSERT_EQ(sink_.Messages().size(), 1u);
  EXPECT_EQ(sink_.Messages()[0].rcpt_tos, std::vector<std::string>{"crashed@example.com"});
  EXPECT_EQ(sink_.Messages()[0].message_id, "<" + crashed + "@gpunex.example>");
}

TEST_F(OutboxTest, GivesUpOnAMessageThatKeepsCrashingTheSender) {
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

TEST_F(OutboxTest, NeverResendsASentMessage) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string id = Enqueue();
  ASSERT_TRUE(test::QueryDb(*db_,
                            "UPDATE email_outbox SET status = 'sent', sent_at = ?, body = NULL, "
                            "attempts = 1, next_attempt_at = 0 WHERE id = ?",
                            {NowMicros(), id})
                  .ok());
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  auto n = sender.DeliverDue();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  sender.Start();
  sender.Wake();
  std::this_thread::sleep_for(milliseconds(300));
  sender.Stop();
  EXPECT_TRUE(sink_.Messages().empty());
  EXPECT_EQ(StatusOf(id), "sent");
  EXPECT_EQ(sender.counters().sent, 0u);
}

TEST_F(OutboxTest, PermanentRefusalMarksFailedAtOnce) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  const std::string id = Enqueue("rejected@example.com");
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  ASSERT_TRUE(sender.DeliverDue().ok());
  store::Row row = Outbox(id);
  EXPECT_EQ(row.Str(0), "failed");
  EXPECT_EQ(row.Int(1), 1);
  EXPECT_NE(row.Str(4).find("550"), std::string::npos) << row.Str(4);
  EXPECT_EQ(sender.counters().failed, 1u);
  EXPECT_EQ(sender.counters().retries, 0u);
}

TEST_F(OutboxTest, GivesUpAfterMaxAttempts) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxOptions o = Options();
  o.max_attempts = 3;
  o.backoff_base = milliseconds(10);
  o.backoff_max = milliseconds(20);
  const std::string id = Enqueue("tempfail@example.com");
  OutboxSender sender(*db_, Client(sink_.url()), o);
  sender.Start();
  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "failed"; }));
  sender.Stop();
  store::Row row = Outbox(id);
  EXPECT_EQ(row.Int(1), 3);
  EXPECT_NE(row.Str(4).find("451"), std::string::npos) << row.Str(4);
  EXPECT_EQ(sender.counters().retries, 2u);
  EXPECT_EQ(sender.counters().failed, 1u);
  EXPECT_TRUE(sink_.Messages().empty());
}

TEST_F(OutboxTest, TwoSendersDeliverEachMessageExactlyOnce) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  // A second gpunexd: its own connections to the same database file.
  auto db2 = store::OpenSqliteDatabase(dir_.path());
  ASSERT_TRUE(db2.ok()) << db2.status().ToString();

  constexpr int kMessages = 30;
  std::vector<std::string> ids;
  for (int i = 0; i < kMessages; ++i)
    ids.push_back(Enqueue("user" + std::to_string(i) + "@example.com"));

  OutboxSender a(*db_, Client(sink_.url()), Options());
  OutboxSender b(**db2, Client(sink_.url()), Options());
  a.Start();
  b.Start();
  ASSERT_TRUE(test::WaitFor([&] {
    auto rows = test::QueryDb(*db_, "SELECT COUNT(*) FROM email_outbox WHERE status = 'sent'");
    return rows.ok() && rows->at(0).Int(0) == kMessages;
  }));
  a.Stop();
  b.Stop();

  std::map<std::string, int> seen;
  for (const test::SinkMessage& m : sink_.Messages()) ++seen[m.message_id];
  EXPECT_EQ(seen.size(), static_cast<size_t>(kMessages));
  for (const std::string& id : ids) {
    EXPECT_EQ(seen["<" + id + "@gpunex.example>"], 1) << id;
  }
  EXPECT_EQ(a.counters().sent + b.counters().sent, static_cast<uint64_t>(kMessages));
  RecordProperty("sent_by_a", std::to_string(a.counters().sent));
  RecordProperty("sent_by_b", std::to_string(b.counters().sent));
  auto attempts = test::QueryDb(*db_, "SELECT SUM(attempts) FROM email_outbox");
  ASSERT_TRUE(attempts.ok());
  EXPECT_EQ(attempts->at(0).Int(0), kMessages);
}

TEST_F(OutboxTest, StopIsIdempotentAndRestartable) {
  ASSERT_TRUE(sink_.Start(dir_.path()).ok());
  OutboxSender sender(*db_, Client(sink_.url()), Options());
  sender.Stop();  // not running: no effect
  sender.Start();
  sender.Start();  // already running: no effect
  sender.Stop();
  sender.Stop();
  const std::string id = Enqueue();
  sender.Start();
  sender.Wake();
  ASSERT_TRUE(test::WaitFor([&] { return StatusOf(id) == "sent"; }));
  // The destructor stops it.
}

TEST_F(OutboxTest, InvalidFromAddressClaimsNothing) {
  OutboxOptions o = Options();
  o.from = "not an address";
  const std::string id = Enqueue();
  OutboxSender sender(*db_, Client("smtp://127.0.0.1:1"), o);
  auto n = sender.DeliverDue();
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusOf(id), "pending");
  EXPECT_EQ(Outbox(id).Int(1), 0);
}

}  // namespace
}  // namespace gpunex::platform::notify
