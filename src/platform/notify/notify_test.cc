#include "platform/notify/notify.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/ids.h"
#include "platform/notify/test_util.h"

namespace gpunex::platform::notify {
namespace {

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = test::OpenMigratedDb(dir_.path());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(test::InsertUser(*db_, "usr_alice").ok());
    ASSERT_TRUE(test::InsertUser(*db_, "usr_bob").ok());
  }

  // Adds `n` notifications for `user`, 2 ms apart so that their ids sort by time.
  std::vector<std::string> Add(const std::string& user, int n) {
    std::vector<std::string> titles;
    for (int i = 0; i < n; ++i) {
      std::string title = user + " #" + std::to_string(i);
      Status st = db_->Transact([&](store::Tx& tx) {
        return AddNotification(tx, user, "application.approved", title, "body " + title,
                               i % 2 == 0 ? "/applications/app_1" : "");
      });
      EXPECT_TRUE(st.ok()) << st.ToString();
      titles.push_back(title);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return titles;
  }

  NotificationPage List(const std::string& user, int limit, const std::string& cursor = "",
                        bool unread_only = false) {
    auto page = ListNotifications(*db_, user, limit, cursor, unread_only);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? *page : NotificationPage{};
  }

  int64_t CountOutbox() {
    auto rows = test::QueryDb(*db_, "SELECT COUNT(*) FROM email_outbox");
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? rows->at(0).Int(0) : -1;
  }

  test::TempDir dir_;
  std::unique_ptr<store::Database> db_;
};

TEST_F(NotifyTest, ListsNewestFirstAcrossPages) {
  std::vector<std::string> titles = Add("usr_alice", 5);
  Add("usr_bob", 2);

  NotificationPage p1 = List("usr_alice", 2);
  ASSERT_EQ(p1.items.size(), 2u);
  EXPECT_EQ(p1.items[0].title, titles[4]);
  EXPECT_EQ(p1.items[1].title, titles[3]);
  EXPECT_EQ(p1.items[0].kind, "application.approved");
  EXPECT_EQ(p1.items[0].body, "body " + titles[4]);
  EXPECT_EQ(p1.items[0].link, "/applications/app_1");
  EXPECT_EQ(p1.items[1].link, "");
  EXPECT_FALSE(p1.items[0].read);
  EXPECT_GT(p1.items[0].at, 0);
  EXPECT_EQ(p1.unread_count, 5);
  ASSERT_NE(p1.next_cursor, "");

  NotificationPage p2 = List("usr_alice", 2, p1.next_cursor);
  ASSERT_EQ(p2.items.size(), 2u);
  EXPECT_EQ(p2.items[0].title, titles[2]);
  EXPECT_EQ(p2.items[1].title, titles[1]);
  ASSERT_NE(p2.next_cursor, "");

  NotificationPage p3 = List("usr_alice", 2, p2.next_cursor);
  ASSERT_EQ(p3.items.size(), 1u);
  EXPECT_EQ(p3.items[0].title, titles[0]);
  EXPECT_EQ(p3.next_cursor, "");

  // Exactly one page's worth: no next page.
  NotificationPage all = List("usr_alice", 5);
  EXPECT_EQ(all.items.size(), 5u);
  EXPECT_EQ(all.next_cursor, "");

  NotificationPage bob = List("usr_bob", 100);
  EXPECT_EQ(bob.items.size(), 2u);
  EXPECT_EQ(bob.unread_count, 2);
}

TEST_F(NotifyTest, EmptyList) {
  NotificationPage p = List("usr_alice", 10);
  EXPECT_TRUE(p.items.empty());
  EXPECT_EQ(p.next_cursor, "");
  EXPECT_EQ(p.unread_count, 0);
}

TEST_F(NotifyTest, RejectsBadLimitAndCursor) {
  for (int limit : {0, -1, 101}) {
    auto p = ListNotifications(*db_, "usr_alice", limit, "", false);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(p.status().fields().count("limit"), 1u);
  }
  for (const std::string& cursor :
       {std::string("not a cursor!"), Base64UrlEncode("usr_01ABCDEFGHJKMNPQRSTVWXYZ0"),
        Base64UrlEncode("ntf_short"), Base64UrlEncode("ntf_01abcdefghjkmnpqrstvwxyz01"),
        Base64UrlEncode("ntf_01ABCDEFGHJKMNPQRSTVWXY' OR 1=1")}) {
    auto p = ListNotifications(*db_, "usr_alice", 10, cursor, false);
    ASSERT_FALSE(p.ok()) << cursor;
    EXPECT_EQ(p.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(p.status().fields().count("cursor"), 1u);
  }
}

TEST_F(NotifyTest, MarkReadAndUnreadOnly) {
  std::vector<std::string> titles = Add("usr_alice", 3);
  NotificationPage all = List("usr_alice", 10);
  ASSERT_EQ(all.items.size(), 3u);
  const std::string newest = all.items[0].id;

  ASSERT_TRUE(MarkNotificationRead(*db_, "usr_alice", newest).ok());
  // Marking again is fine.
  ASSERT_TRUE(MarkNotificationRead(*db_, "usr_alice", newest).ok());

  NotificationPage after = List("usr_alice", 10);
  EXPECT_TRUE(after.items[0].read);
  EXPECT_FALSE(after.items[1].read);
  EXPECT_EQ(after.unread_count, 2);

  NotificationPage unread = List("usr_alice", 1, "", /*unread_only=*/true);
  ASSERT_EQ(unread.items.size(), 1u);
  EXPECT_EQ(unread.items[0].title, titles[1]);
  ASSERT_NE(unread.next_cursor, "");
  NotificationPage unread2 = List("usr_alice", 1, unread.next_cursor, true);
  ASSERT_EQ(unread2.items.size(), 1u);
  EXPECT_EQ(unread2.items[0].title, titles[0]);
  EXPECT_EQ(unread2.next_cursor, "");

  int64_t changed = -1;
  ASSERT_TRUE(MarkAllRead(*db_, "usr_alice", &changed).ok());
  EXPECT_EQ(changed, 2);
  EXPECT_EQ(List("usr_alice", 10).unread_count, 0);
  EXPECT_TRUE(List("usr_alice", 10, "", true).items.empty());
  ASSERT_TRUE(MarkAllRead(*db_, "usr_alice", &changed).ok());
  EXPECT_EQ(changed, 0);
}

TEST_F(NotifyTest, AnotherUserCannotMarkYours) {
  Add("usr_alice", 1);
  Add("usr_bob", 1);
  const std::string alices = List("usr_alice", 10).items.at(0).id;

  Status st = MarkNotificationRead(*db_, "usr_bob", alices);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  // The same answer as for an id that does not exist.
  EXPECT_EQ(MarkNotificationRead(*db_, "usr_bob", "ntf_01ABCDEFGHJKMNPQRSTVWXYZ0").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(st.message(), MarkNotificationRead(*db_, "usr_bob", "ntf_nope").message());

  // Bob's MarkAllRead leaves Alice's alone.
  ASSERT_TRUE(MarkAllRead(*db_, "usr_bob").ok());
  EXPECT_EQ(List("usr_alice", 10).unread_count, 1);
  EXPECT_FALSE(List("usr_alice", 10).items.at(0).read);
}

TEST_F(NotifyTest, AddNotificationValidates) {
  auto add = [&](const std::string& user, std::string_view kind, std::string_view title,
                 std::string_view body) {
    return db_->Transact(
        [&](store::Tx& tx) { return AddNotification(tx, user, kind, title, body); });
  };
  EXPECT_EQ(add("usr_alice", "", "t", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "a\nb", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "t", "bad \xff").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(add("usr_alice", "k", "t", "multi\nline").ok());
  // The foreign key: no such user.
  EXPECT_FALSE(add("usr_nobody", "k", "t", "b").ok());
}

TEST_F(NotifyTest, EnqueueEmailWritesPendingRow) {
  std::string id;
  Email email{.to = "Alice <alice@example.com>",
              .subject = "Réglages mis à jour",
              .body = "Your agent token: gpx_a_secret\n",
              .kind = "agent.token_created"};
  ASSERT_TRUE(
      db_->Transact([&](store::Tx& tx) { return EnqueueEmail(tx, email, "gpunex.example", &id); })
          .ok());
  ASSERT_TRUE(id.starts_with("eml_")) << id;

  auto rows = test::QueryDb(*db_,
                            "SELECT to_addr, subject, body, body_sha256, message_id, kind, status, "
                            "attempts, next_attempt_at, created_at, lease_until, sent_at "
                            "FROM email_outbox WHERE id = ?",
                            {id});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const store::Row& r = rows->at(0);
  EXPECT_EQ(r.Str(0), email.to);
  EXPECT_EQ(r.Str(1), email.subject);
  EXPECT_EQ(r.Str(2), email.body);
  EXPECT_EQ(r.Str(3), Sha256Hex(email.body));
  EXPECT_EQ(r.Str(4), "<" + id + "@gpunex.example>");
  EXPECT_EQ(r.Str(5), "agent.token_created");
  EXPECT_EQ(r.Str(6), "pending");
  EXPECT_EQ(r.Int(7), 0);
  EXPECT_EQ(r.Int(8), r.Int(9));
  EXPECT_TRUE(r.IsNull(10));
  EXPECT_TRUE(r.IsNull(11));
}

TEST_F(NotifyTest, EnqueueEmailCommitsWithTheCallersTransaction) {
  Status st = db_->Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(EnqueueEmail(
        tx, {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k"}, "gpunex.example"));
    GPUNEX_RETURN_IF_ERROR(AddNotification(tx, "usr_alice", "k", "t", "b"));
    return FailedPrecondition("the event failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CountOutbox(), 0);
  EXPECT_TRUE(List("usr_alice", 10).items.empty());
}

TEST_F(NotifyTest, EnqueueEmailRejectsHeaderInjection) {
  const std::vector<Email> bad = {
      {.to = "a@example.com\r\nBcc: victim@example.com", .subject = "s", .body = "b", .kind = "k"},
      {.to = "a@example.com\nBcc: victim@example.com", .subject = "s", .body = "b", .kind = "k"},
      {.to = "a@example.com", .subject = "s\r\nBcc: victim@example.com", .body = "b", .kind = "k"},
      {.to = "a@example.com", .subject = "s\rX", .body = "b", .kind = "k"},
      {.to = "a@example.com, b@example.com", .subject = "s", .body = "b", .kind = "k"},
      {.to = "not an address", .subject = "s", .body = "b", .kind = "k"},
      {.to = "a@example.com", .subject = "", .body = "b", .kind = "k"},
      {.to = "a@example.com", .subject = "s", .body = "bad \xff", .kind = "k"},
      {.to = "a@example.com", .subject = "s", .body = "b", .kind = ""},
  };
  for (const Email& e : bad) {
    Status st = db_->Transact([&](store::Tx& tx) { return EnqueueEmail(tx, e, "gpunex.example"); });
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << e.to << " / " << e.subject;
  }
  Status st = db_->Transact([&](store::Tx& tx) {
    return EnqueueEmail(tx, {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k"},
                        "bad>domain");
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CountOutbox(), 0);
}

TEST_F(NotifyTest, MessageIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    std::string id;
    ASSERT_TRUE(db_->Transact([&](store::Tx& tx) {
                     return EnqueueEmail(
                         tx, {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k"},
                         "gpunex.example", &id);
                   })
                    .ok());
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 50u);
  auto rows = test::QueryDb(*db_, "SELECT COUNT(DISTINCT message_id) FROM email_outbox");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->at(0).Int(0), 50);
}

}  // namespace
}  // namespace gpunex::platform::notify
