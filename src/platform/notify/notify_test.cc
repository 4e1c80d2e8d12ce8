// Notifications and the outbox's enqueue side, on both store backends.
#include "platform/notify/notify.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "common/ids.h"
#include "common/testing/fake_clock.h"
#include "platform/notify/notify_store.h"
#include "platform/notify/test_util.h"

namespace gpunex::platform::notify {
namespace {

class NotifyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto db = test::OpenMigratedDb(GetParam());
    if (db.status().code() == StatusCode::kFailedPrecondition)
      GTEST_SKIP() << db.status().message();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    test_db_ = std::move(db).value();
    db_ = &test_db_->db();
    ASSERT_TRUE(test::InsertUser(*db_, "usr_alice", clock_.Now()).ok());
    ASSERT_TRUE(test::InsertUser(*db_, "usr_bob", clock_.Now()).ok());
  }

  // Adds `n` notifications for `user`, a second apart (by the fake clock); returns their
  // titles, oldest first. Ids sort by creation even within one millisecond (ids.h).
  std::vector<std::string> Add(const std::string& user, int n) {
    std::vector<std::string> titles;
    for (int i = 0; i < n; ++i) {
      std::string title = user + " #" + std::to_string(i);
      Status st = db_->Transact([&](store::Tx& tx) {
        return AddNotification(tx, clock_.Now(), user, "application.approved", title,
                               "body " + title, i % 2 == 0 ? "/applications/app_1" : "");
      });
      EXPECT_TRUE(st.ok()) << st.ToString();
      titles.push_back(title);
      clock_.Advance(kOneSecond);
    }
    return titles;
  }

  NotificationPage List(const std::string& user, int limit,
                        const std::optional<Cursor>& after = std::nullopt,
                        bool unread_only = false) {
    auto page = ListNotifications(*db_, user, PageRequest{limit, after}, unread_only);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? *page : NotificationPage{};
  }

  // As the API does: decodes the cursor's text, then lists.
  StatusOr<NotificationPage> ListWithCursorText(const std::string& user, int limit,
                                                const std::string& cursor_text) {
    GPUNEX_ASSIGN_OR_RETURN(Cursor c, Cursor::Decode(cursor_text));
    return ListNotifications(*db_, user, PageRequest{limit, c}, false);
  }

  int64_t CountOutbox() {
    auto rows = test::QueryDb(*db_, "SELECT COUNT(*) AS n FROM email_outbox");
    EXPECT_TRUE(rows.ok());
    return rows.ok() ? rows->at(0)["n"].Int() : -1;
  }

  gpunex::testing::FakeClock clock_;
  std::unique_ptr<store::testing::TestDatabase> test_db_;
  store::Database* db_ = nullptr;
};

TEST_P(NotifyTest, ListsNewestFirstAcrossPages) {
  const Timestamp first_at = clock_.Now();
  std::vector<std::string> titles = Add("usr_alice", 5);
  Add("usr_bob", 2);

  NotificationPage p1 = List("usr_alice", 2);
  ASSERT_EQ(p1.page.items.size(), 2u);
  EXPECT_EQ(p1.page.items[0].title, titles[4]);
  EXPECT_EQ(p1.page.items[1].title, titles[3]);
  EXPECT_EQ(p1.page.items[0].kind, "application.approved");
  EXPECT_EQ(p1.page.items[0].body, "body " + titles[4]);
  EXPECT_EQ(p1.page.items[0].link, "/applications/app_1");
  EXPECT_EQ(p1.page.items[1].link, "");
  EXPECT_FALSE(p1.page.items[0].read);
  EXPECT_GT(p1.page.items[0].at, Timestamp{});
  EXPECT_EQ(p1.page.items[0].at, first_at + 4 * kOneSecond);  // the time it was added
  EXPECT_EQ(p1.unread_count, 5);
  ASSERT_TRUE(p1.page.next.has_value());

  NotificationPage p2 = List("usr_alice", 2, p1.page.next);
  ASSERT_EQ(p2.page.items.size(), 2u);
  EXPECT_EQ(p2.page.items[0].title, titles[2]);
  EXPECT_EQ(p2.page.items[1].title, titles[1]);
  ASSERT_TRUE(p2.page.next.has_value());

  NotificationPage p3 = List("usr_alice", 2, p2.page.next);
  ASSERT_EQ(p3.page.items.size(), 1u);
  EXPECT_EQ(p3.page.items[0].title, titles[0]);
  EXPECT_FALSE(p3.page.next.has_value());

  // Exactly one page's worth: no next page.
  NotificationPage all = List("usr_alice", 5);
  EXPECT_EQ(all.page.items.size(), 5u);
  EXPECT_FALSE(all.page.next.has_value());

  NotificationPage bob = List("usr_bob", 100);
  EXPECT_EQ(bob.page.items.size(), 2u);
  EXPECT_EQ(bob.unread_count, 2);
}

TEST_P(NotifyTest, EmptyList) {
  NotificationPage p = List("usr_alice", 10);
  EXPECT_TRUE(p.page.items.empty());
  EXPECT_FALSE(p.page.next.has_value());
  EXPECT_EQ(p.unread_count, 0);
}

TEST_P(NotifyTest, RejectsBadLimitAndCursor) {
  for (int limit : {0, -1, 101}) {
    auto p = ListNotifications(*db_, "usr_alice", PageRequest{limit, std::nullopt}, false);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(p.status().fields().count("limit"), 1u);
  }
  const std::vector<std::string> bad_ids = {"usr_01ABCDEFGHJKMNPQRSTVWXYZ0", "ntf_short",
                                            "ntf_01abcdefghjkmnpqrstvwxyz01",
                                            "ntf_01ABCDEFGHJKMNPQRSTVWXY' OR 1=1"};
  // Text that is not a cursor at all, and the old format (base64url of a bare id): the
  // decoding the API does refuses them.
  std::vector<std::string> texts = {"not a cursor!"};
  for (const std::string& id : bad_ids) texts.push_back(Base64UrlEncode(id));
  // Well-formed cursors that no notifications list made.
  for (const std::string& id : bad_ids) texts.push_back(Cursor({id}).Encode());
  for (const std::string& cursor : texts) {
    auto p = ListWithCursorText("usr_alice", 10, cursor);
    ASSERT_FALSE(p.ok()) << cursor;
    EXPECT_EQ(p.status().code(), StatusCode::kValidationFailed);
    EXPECT_EQ(p.status().fields().count("cursor"), 1u);
  }
}

TEST_P(NotifyTest, PagesThroughEveryNotificationNewestFirst) {
  std::vector<std::string> titles = Add("usr_alice", 7);
  std::vector<std::string> seen;
  std::optional<Cursor> after;
  int pages = 0;
  do {
    NotificationPage p = List("usr_alice", 3, after);
    for (const Notification& n : p.page.items) seen.push_back(n.title);
    EXPECT_EQ(p.unread_count, pages == 0 ? 7 : 8);
    after = p.page.next;
    if (++pages == 1) {
      // A notification added between two pages goes to the top of the list: the later
      // pages neither repeat nor skip any of the older ones (a keyset, not an offset).
      Add("usr_alice", 1);
    }
  } while (after.has_value() && pages < 10);
  EXPECT_EQ(pages, 3);
  std::vector<std::string> newest_first(titles.rbegin(), titles.rend());
  EXPECT_EQ(seen, newest_first);
}

TEST_P(NotifyTest, UnreadOnlyPagesSkipReadOnes) {
  std::vector<std::string> titles = Add("usr_alice", 6);
  NotificationPage all = List("usr_alice", 10);
  ASSERT_EQ(all.page.items.size(), 6u);
  // Read: #5, #3, #1 (every other one, newest first).
  for (size_t i = 0; i < all.page.items.size(); i += 2) {
    ASSERT_TRUE(MarkNotificationRead(*db_, clock_.Now(), "usr_alice", all.page.items[i].id).ok());
  }
  std::vector<std::string> seen;
  std::optional<Cursor> after;
  do {
    NotificationPage p = List("usr_alice", 2, after, /*unread_only=*/true);
    EXPECT_EQ(p.unread_count, 3);
    for (const Notification& n : p.page.items) {
      EXPECT_FALSE(n.read);
      seen.push_back(n.title);
    }
    after = p.page.next;
  } while (after.has_value() && seen.size() < 10);
  EXPECT_EQ(seen, (std::vector<std::string>{titles[4], titles[2], titles[0]}));
}

TEST_P(NotifyTest, RefusesACursorFromAnotherList) {
  Add("usr_alice", 3);
  // Lists keyed by (time, id) or by number, and a list keyed by another kind of id.
  const std::vector<Cursor> foreign = {
      Cursor({int64_t{1'796'083'200'000'000}, std::string("app_01ABCDEFGHJKMNPQRSTVWXYZ0")}),
      Cursor({int64_t{42}}),
      Cursor({std::string("key_01ABCDEFGHJKMNPQRSTVWXYZ0")}),
      Cursor(
          {std::string("ntf_01ABCDEFGHJKMNPQRSTVWXYZ0"), std::string("ntf_01ABCDEFGHJKMNPQRST")}),
  };
  for (const Cursor& c : foreign) {
    for (bool unread_only : {false, true}) {
      auto p = ListNotifications(*db_, "usr_alice", PageRequest{10, c}, unread_only);
      ASSERT_FALSE(p.ok()) << c.Encode();
      EXPECT_EQ(p.status().code(), StatusCode::kValidationFailed) << c.Encode();
      EXPECT_EQ(p.status().fields().count("cursor"), 1u) << c.Encode();
    }
  }
  // The cursor of a real page of this list is accepted (by the unread list too: same key).
  NotificationPage first = List("usr_alice", 1);
  ASSERT_TRUE(first.page.next.has_value());
  EXPECT_EQ(List("usr_alice", 10, first.page.next, true).page.items.size(), 2u);
}

TEST_P(NotifyTest, MarkReadAndUnreadOnly) {
  std::vector<std::string> titles = Add("usr_alice", 3);
  NotificationPage all = List("usr_alice", 10);
  ASSERT_EQ(all.page.items.size(), 3u);
  const std::string newest = all.page.items[0].id;

  ASSERT_TRUE(MarkNotificationRead(*db_, clock_.Now(), "usr_alice", newest).ok());
  // Marking again is fine.
  ASSERT_TRUE(MarkNotificationRead(*db_, clock_.Now(), "usr_alice", newest).ok());

  NotificationPage after = List("usr_alice", 10);
  EXPECT_TRUE(after.page.items[0].read);
  EXPECT_FALSE(after.page.items[1].read);
  EXPECT_EQ(after.unread_count, 2);

  NotificationPage unread = List("usr_alice", 1, std::nullopt, /*unread_only=*/true);
  ASSERT_EQ(unread.page.items.size(), 1u);
  EXPECT_EQ(unread.page.items[0].title, titles[1]);
  ASSERT_TRUE(unread.page.next.has_value());
  NotificationPage unread2 = List("usr_alice", 1, unread.page.next, true);
  ASSERT_EQ(unread2.page.items.size(), 1u);
  EXPECT_EQ(unread2.page.items[0].title, titles[0]);
  EXPECT_FALSE(unread2.page.next.has_value());

  int64_t changed = -1;
  ASSERT_TRUE(MarkAllRead(*db_, clock_.Now(), "usr_alice", &changed).ok());
  EXPECT_EQ(changed, 2);
  EXPECT_EQ(List("usr_alice", 10).unread_count, 0);
  EXPECT_TRUE(List("usr_alice", 10, std::nullopt, true).page.items.empty());
  ASSERT_TRUE(MarkAllRead(*db_, clock_.Now(), "usr_alice", &changed).ok());
  EXPECT_EQ(changed, 0);
}

TEST_P(NotifyTest, ReadTimeIsTheCallersAndTheFirst) {
  Add("usr_alice", 2);
  NotificationPage all = List("usr_alice", 10);
  ASSERT_EQ(all.page.items.size(), 2u);
  const Timestamp t1 = clock_.Now();
  ASSERT_TRUE(MarkNotificationRead(*db_, t1, "usr_alice", all.page.items[0].id).ok());
  ASSERT_TRUE(MarkNotificationRead(*db_, t1 + kOneHour, "usr_alice", all.page.items[0].id).ok());
  ASSERT_TRUE(MarkAllRead(*db_, t1 + kOneDay, "usr_alice").ok());
  auto rows = test::QueryDb(*db_, "SELECT id, read_at FROM notifications ORDER BY id DESC");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rows->at(0)["read_at"].Time(), t1);
  EXPECT_EQ(rows->at(1)["read_at"].Time(), t1 + kOneDay);
}

TEST_P(NotifyTest, AnotherUserCannotMarkYours) {
  Add("usr_alice", 1);
  Add("usr_bob", 1);
  const std::string alices = List("usr_alice", 10).page.items.at(0).id;

  Status st = MarkNotificationRead(*db_, clock_.Now(), "usr_bob", alices);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  // The same answer as for an id that does not exist.
  EXPECT_EQ(
      MarkNotificationRead(*db_, clock_.Now(), "usr_bob", "ntf_01ABCDEFGHJKMNPQRSTVWXYZ0").code(),
      StatusCode::kNotFound);
  EXPECT_EQ(st.message(),
            MarkNotificationRead(*db_, clock_.Now(), "usr_bob", "ntf_nope").message());

  // Bob's MarkAllRead leaves Alice's alone.
  ASSERT_TRUE(MarkAllRead(*db_, clock_.Now(), "usr_bob").ok());
  EXPECT_EQ(List("usr_alice", 10).unread_count, 1);
  EXPECT_FALSE(List("usr_alice", 10).page.items.at(0).read);
}

TEST_P(NotifyTest, AddNotificationValidates) {
  auto add = [&](const std::string& user, std::string_view kind, std::string_view title,
                 std::string_view body) {
    return db_->Transact(
        [&](store::Tx& tx) { return AddNotification(tx, clock_.Now(), user, kind, title, body); });
  };
  EXPECT_EQ(add("usr_alice", "", "t", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "a\nb", "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add("usr_alice", "k", "t", "bad \xff").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(add("usr_alice", "k", "t", "multi\nline").ok());
  // The foreign key: no such user.
  EXPECT_FALSE(add("usr_nobody", "k", "t", "b").ok());
}

TEST_P(NotifyTest, EnqueueEmailWritesPendingRow) {
  std::string id;
  Email email{.to = "Alice <alice@example.com>",
              .subject = "Réglages mis à jour",
              .body = "Your agent token: gpx_a_secret\n",
              .kind = "agent.token_created",
              .user_id = ""};
  ASSERT_TRUE(db_->Transact([&](store::Tx& tx) {
                   return EnqueueEmail(tx, clock_.Now(), email, "gpunex.example", &id);
                 })
                  .ok());
  ASSERT_TRUE(id.starts_with("eml_")) << id;

  auto rows = test::QueryDb(*db_,
                            "SELECT to_addr, subject, body, body_sha256, message_id, kind, "
                            "status, attempts, next_attempt_at, created_at, lease_until, "
                            "sent_at FROM email_outbox WHERE id = ?",
                            {id});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const store::Row& r = rows->at(0);
  EXPECT_EQ(r["to_addr"].Str(), email.to);
  EXPECT_EQ(r["subject"].Str(), email.subject);
  EXPECT_EQ(r["body"].Str(), email.body);
  EXPECT_EQ(r["body_sha256"].Str(), Sha256Hex(email.body));
  EXPECT_EQ(r["message_id"].Str(), "<" + id + "@gpunex.example>");
  EXPECT_EQ(r["kind"].Str(), "agent.token_created");
  EXPECT_EQ(r["status"].Str(), "pending");
  EXPECT_EQ(r["attempts"].Int(), 0);
  EXPECT_EQ(r["next_attempt_at"].Int(), r["created_at"].Int());
  EXPECT_EQ(r["created_at"].Time(), clock_.Now());  // due at the time the caller gave
  EXPECT_TRUE(r["lease_until"].IsNull());
  EXPECT_TRUE(r["sent_at"].IsNull());
}

TEST_P(NotifyTest, EnqueueEmailCommitsWithTheCallersTransaction) {
  bool woken = false;
  Status st = db_->Transact([&](store::Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(EnqueueEmail(
        tx, clock_.Now(),
        {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k", .user_id = ""},
        "gpunex.example"));
    GPUNEX_RETURN_IF_ERROR(AddNotification(tx, clock_.Now(), "usr_alice", "k", "t", "b"));
    tx.AfterCommit([&woken] { woken = true; });  // how a caller wakes the sender
    return FailedPrecondition("the event failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CountOutbox(), 0);
  EXPECT_TRUE(List("usr_alice", 10).page.items.empty());
  EXPECT_FALSE(woken);
}

TEST_P(NotifyTest, EnqueueEmailRejectsHeaderInjection) {
  const std::vector<Email> bad = {
      {.to = "a@example.com\r\nBcc: victim@example.com",
       .subject = "s",
       .body = "b",
       .kind = "k",
       .user_id = ""},
      {.to = "a@example.com\nBcc: victim@example.com",
       .subject = "s",
       .body = "b",
       .kind = "k",
       .user_id = ""},
      {.to = "a@example.com",
       .subject = "s\r\nBcc: victim@example.com",
       .body = "b",
       .kind = "k",
       .user_id = ""},
      {.to = "a@example.com", .subject = "s\rX", .body = "b", .kind = "k", .user_id = ""},
      {.to = "a@example.com, b@example.com",
       .subject = "s",
       .body = "b",
       .kind = "k",
       .user_id = ""},
      {.to = "not an address", .subject = "s", .body = "b", .kind = "k", .user_id = ""},
      {.to = "a@example.com", .subject = "", .body = "b", .kind = "k", .user_id = ""},
      {.to = "a@example.com", .subject = "s", .body = "bad \xff", .kind = "k", .user_id = ""},
      {.to = "a@example.com", .subject = "s", .body = "b", .kind = "", .user_id = ""},
  };
  for (const Email& e : bad) {
    Status st = db_->Transact(
        [&](store::Tx& tx) { return EnqueueEmail(tx, clock_.Now(), e, "gpunex.example"); });
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << e.to << " / " << e.subject;
  }
  Status st = db_->Transact([&](store::Tx& tx) {
    return EnqueueEmail(
        tx, clock_.Now(),
        {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k", .user_id = ""},
        "bad>domain");
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CountOutbox(), 0);
}

TEST_P(NotifyTest, MessageIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    std::string id;
    ASSERT_TRUE(
        db_->Transact([&](store::Tx& tx) {
             return EnqueueEmail(
                 tx, clock_.Now(),
                 {.to = "a@example.com", .subject = "s", .body = "b", .kind = "k", .user_id = ""},
                 "gpunex.example", &id);
           })
            .ok());
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 50u);
  auto rows = test::QueryDb(*db_, "SELECT COUNT(DISTINCT message_id) AS n FROM email_outbox");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->at(0)["n"].Int(), 50);
}

INSTANTIATE_TEST_SUITE_P(Backends, NotifyTest, ::testing::ValuesIn(store::testing::TestBackends()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The stored values of email_outbox.status, and the moves outbox.h describes.
TEST(EmailStatus, NamesTheStoredValuesAndMovesAlongTheLifeCycle) {
  for (const auto& [status, name] : kEmailStatusNames.entries) {
    EXPECT_EQ(kEmailStatusNames.Parse(name), status) << name;
  }
  EXPECT_EQ(Name(EmailStatus::kPending), "pending");
  EXPECT_EQ(Name(EmailStatus::kSuppressed), "suppressed");
  EXPECT_FALSE(kEmailStatusNames.Parse("queued"));
  EXPECT_TRUE(EmailMayGo(EmailStatus::kPending, EmailStatus::kSending));
  EXPECT_TRUE(EmailMayGo(EmailStatus::kSending, EmailStatus::kPending));
  EXPECT_TRUE(EmailMayGo(EmailStatus::kHeld, EmailStatus::kExpired));
  EXPECT_FALSE(EmailMayGo(EmailStatus::kHeld, EmailStatus::kSending));
  EXPECT_FALSE(EmailMayGo(EmailStatus::kSent, EmailStatus::kPending));
  EXPECT_FALSE(EmailMayGo(EmailStatus::kSuppressed, EmailStatus::kPending));
}

}  // namespace
}  // namespace gpunex::platform::notify
