#include "platform/notify/notify_store.h"

#include <utility>

#include "platform/store/paging.h"

namespace gpunex::platform::notify {
namespace {

constexpr const char* kNotificationColumns = "id, user_id, at, kind, title, body, link, read_at";

NotificationRow NotificationFrom(const store::Row& r) {
  return {r.Str(0), r.Str(1), r.Time(2), r.Str(3), r.Str(4), r.Str(5), r.OptStr(6), r.OptTime(7)};
}

constexpr const char* kEmailColumns =
    "id, created_at, to_addr, subject, body, body_sha256, message_id, kind, status, attempts, "
    "next_attempt_at, lease_until, last_error, sent_at";

EmailRow EmailFrom(const store::Row& r) {
  return {r.Str(0), r.Time(1), r.Str(2), r.Str(3),   r.OptStr(4),   r.Str(5),     r.Str(6),
          r.Str(7), r.Str(8),  r.Int(9), r.Time(10), r.OptTime(11), r.OptStr(12), r.OptTime(13)};
}

store::Value OptValue(const std::optional<std::string>& s) {
  return s ? store::Value(*s) : store::Value(nullptr);
}

store::Value OptValue(const std::optional<Timestamp>& t) {
  return t ? store::Value(ToUnixMicros(*t)) : store::Value(nullptr);
}

// Due: pending and its time has come, or claimed by a sender whose lease ran out. Takes
// `now` twice.
constexpr const char* kDueCondition =
    "((status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND lease_until <= ?))";

}  // namespace

Status NotifyStore::InsertNotification(const NotificationRow& n) {
  return tx_
      .Exec(std::string("INSERT INTO notifications (") + kNotificationColumns +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {n.id, n.user_id, ToUnixMicros(n.at), n.kind, n.title, n.body, OptValue(n.link),
             OptValue(n.read_at)})
      .status();
}

StatusOr<Page<NotificationRow>> NotifyStore::ListNotifications(const std::string& user_id,
                                                               bool unread_only,
                                                               const PageRequest& page) {
  store::PageQuery q;
  q.columns = kNotificationColumns;
  q.from = "FROM notifications";
  q.where = unread_only ? "user_id = ? AND read_at IS NULL" : "user_id = ?";
  q.params = {user_id};
  q.key = {{"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  Page<NotificationRow> out;
  out.next = std::move(rows.next);
  out.items.reserve(rows.items.size());
  for (const store::Row& r : rows.items) out.items.push_back(NotificationFrom(r));
  return out;
}

StatusOr<int64_t> NotifyStore::CountUnread(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL",
                {user_id}));
  return rows.at(0).Int(0);
}

StatusOr<bool> NotifyStore::MarkRead(const std::string& user_id, const std::string& id,
                                     Timestamp at) {
  GPUNEX_ASSIGN_OR_RETURN(int64_t changed,
                          tx_.Exec("UPDATE notifications SET read_at = ? WHERE id = ? "
                                   "AND user_id = ? AND read_at IS NULL",
                                   {ToUnixMicros(at), id, user_id}));
  return changed > 0;
}

StatusOr<bool> NotifyStore::HasNotification(const std::string& user_id, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT 1 FROM notifications WHERE id = ? AND user_id = ?", {id, user_id}));
  return !rows.empty();
}

StatusOr<int64_t> NotifyStore::MarkAllRead(const std::string& user_id, Timestamp at) {
  return tx_.Exec("UPDATE notifications SET read_at = ? WHERE user_id = ? AND read_at IS NULL",
                  {ToUnixMicros(at), user_id});
}

Status NotifyStore::InsertEmail(const EmailRow& e) {
  return tx_
      .Exec(
          std::string("INSERT INTO email_outbox (") + kEmailColumns +
              ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {e.id, ToUnixMicros(e.created_at), e.to_addr, e.subject, OptValue(e.body), e.body_sha256,
           e.message_id, e.kind, e.status, e.attempts, ToUnixMicros(e.next_attempt_at),
           OptValue(e.lease_until), OptValue(e.last_error), OptValue(e.sent_at)})
      .status();
}

StatusOr<std::vector<EmailRow>> NotifyStore::DueEmails(Timestamp now, int64_t limit) {
  const int64_t t = ToUnixMicros(now);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + kEmailColumns + " FROM email_outbox WHERE " +
                    kDueCondition + " ORDER BY next_attempt_at, id LIMIT ?",
                {t, t, limit}));
  std::vector<EmailRow> out;
  out.reserve(rows.size());
  for (const store::Row& r : rows) out.push_back(EmailFrom(r));
  return out;
}

StatusOr<bool> NotifyStore::ClaimEmail(const std::string& id, Timestamp now,
                                       Timestamp lease_until) {
  const int64_t t = ToUnixMicros(now);
  // Conditional: with several senders (or READ COMMITTED isolation) another may have
  // claimed the row since it was read; only the UPDATE that changes it wins.
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec(std::string("UPDATE email_outbox SET status = 'sending', lease_until = ?, "
                           "attempts = attempts + 1 WHERE id = ? AND ") +
                   kDueCondition,
               {ToUnixMicros(lease_until), id, t, t}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::MarkEmailSent(const std::string& id, Timestamp lease_until,
                                          Timestamp at) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = 'sent', sent_at = ?, body = NULL, "
               "lease_until = NULL, last_error = NULL WHERE id = ? AND status = 'sending' "
               "AND lease_until = ?",
               {ToUnixMicros(at), id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::RescheduleEmail(const std::string& id, Timestamp lease_until,
                                            Timestamp next_attempt_at, const std::string& error) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = 'pending', next_attempt_at = ?, "
               "lease_until = NULL, last_error = ? WHERE id = ? AND status = 'sending' "
               "AND lease_until = ?",
               {ToUnixMicros(next_attempt_at), error, id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::MarkEmailFailed(const std::string& id, Timestamp lease_until,
                                            const std::string& error) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = 'failed', lease_until = NULL, "
               "last_error = ? WHERE id = ? AND status = 'sending' AND lease_until = ?",
               {error, id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<int64_t> NotifyStore::ReleaseClaims(Timestamp now) {
  return tx_.Exec(
      "UPDATE email_outbox SET status = 'pending', lease_until = NULL, next_attempt_at = ? "
      "WHERE status = 'sending'",
      {ToUnixMicros(now)});
}

std::vector<store::Migration> NotifyMigrations() {
  return {
      {3,
       "notify",
       "notifications and email outbox",
       {
           R"(CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                link TEXT,
                read_at BIGINT))",
           "CREATE INDEX notifications_user ON notifications (user_id, id)",
           R"(CREATE TABLE email_outbox (
                id TEXT PRIMARY KEY,
                created_at BIGINT NOT NULL,
                to_addr TEXT NOT NULL,
                subject TEXT NOT NULL,
                body TEXT,
                body_sha256 TEXT NOT NULL,
                message_id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                lease_until BIGINT,
                last_error TEXT,
                sent_at BIGINT))",
           "CREATE INDEX email_outbox_due ON email_outbox (status, next_attempt_at)",
       },
       {}},
  };
}

}  // namespace gpunex::platform::notify
