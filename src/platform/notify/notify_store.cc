#include "platform/notify/notify_store.h"

#include <utility>

#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/sql_literal.h"

namespace gpunex::platform::notify {
namespace {

// Statuses are written into the statements as literals (store::SqlLiteral), spelt by
// kEmailStatusNames.
using store::SqlLiteral;

const store::RowMapper<NotificationRow>& NotificationRows() {
  static const auto* const m = new store::RowMapper<NotificationRow>({
      {"id", &NotificationRow::id},
      {"user_id", &NotificationRow::user_id},
      {"at", &NotificationRow::at},
      {"kind", &NotificationRow::kind},
      {"title", &NotificationRow::title},
      {"body", &NotificationRow::body},
      {"link", &NotificationRow::link},
      {"read_at", &NotificationRow::read_at},
  });
  return *m;
}

const store::RowMapper<EmailRow>& EmailRows() {
  static const auto* const m = new store::RowMapper<EmailRow>({
      {"id", &EmailRow::id},
      {"created_at", &EmailRow::created_at},
      {"to_addr", &EmailRow::to_addr},
      {"subject", &EmailRow::subject},
      {"body", &EmailRow::body},
      {"body_sha256", &EmailRow::body_sha256},
      {"message_id", &EmailRow::message_id},
      {"kind", &EmailRow::kind},
      {"status", [](EmailRow& e,
                    const store::Cell& c) { e.status = kEmailStatusNames.ParseStored(c.Str()); }},
      {"attempts", &EmailRow::attempts},
      {"next_attempt_at", &EmailRow::next_attempt_at},
      {"lease_until", &EmailRow::lease_until},
      {"last_error", &EmailRow::last_error},
      {"sent_at", &EmailRow::sent_at},
      {"user_id", &EmailRow::user_id},
      {"address", &EmailRow::address},
  });
  return *m;
}

const store::RowMapper<VerificationRow>& VerificationRows() {
  static const auto* const m = new store::RowMapper<VerificationRow>({
      {"user_id", &VerificationRow::user_id},
      {"address", &VerificationRow::address},
      {"created_at", &VerificationRow::created_at},
      {"last_sent_at", &VerificationRow::last_sent_at},
      {"verified_at", &VerificationRow::verified_at},
  });
  return *m;
}

store::Value OptValue(const std::optional<std::string>& s) {
  return s ? store::Value(*s) : store::Value(nullptr);
}

store::Value OptValue(const std::optional<Timestamp>& t) {
  return t ? store::Value(ToUnixMicros(*t)) : store::Value(nullptr);
}

// Due: pending and its time has come, or claimed by a sender whose lease ran out. Takes
// `now` twice.
std::string DueCondition() {
  return "((status = " + SqlLiteral(EmailStatus::kPending) +
         " AND next_attempt_at <= ?) OR (status = " + SqlLiteral(EmailStatus::kSending) +
         " AND lease_until <= ?))";
}

// The claim of a sender: the email is 'sending' with the lease `lease_until` (the
// statement's last parameter).
std::string Claimed() {
  return " WHERE id = ? AND status = " + SqlLiteral(EmailStatus::kSending) + " AND lease_until = ?";
}

}  // namespace

Status NotifyStore::InsertNotification(const NotificationRow& n) {
  return tx_
      .Exec(std::string("INSERT INTO notifications (") + NotificationRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            {n.id, n.user_id, ToUnixMicros(n.at), n.kind, n.title, n.body, OptValue(n.link),
             OptValue(n.read_at)})
      .status();
}

StatusOr<Page<NotificationRow>> NotifyStore::ListNotifications(const std::string& user_id,
                                                               bool unread_only,
                                                               const PageRequest& page) {
  store::PageQuery q;
  q.columns = NotificationRows().Select();
  q.from = "FROM notifications";
  q.where = unread_only ? "user_id = ? AND read_at IS NULL" : "user_id = ?";
  q.params = {user_id};
  q.key = {{"id", store::KeyColumn::Type::kText}};
  q.descending = true;
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return NotificationRows().DecodePage(rows);
}

StatusOr<int64_t> NotifyStore::CountUnread(const std::string& user_id) {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query("SELECT COUNT(*) AS n FROM notifications WHERE user_id = ? AND read_at IS NULL",
                {user_id}));
  return rows.at(0)["n"].Int();
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
      .Exec(std::string("INSERT INTO email_outbox (") + EmailRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {e.id, ToUnixMicros(e.created_at), e.to_addr, e.subject, OptValue(e.body),
             e.body_sha256, e.message_id, e.kind, std::string(Name(e.status)), e.attempts,
             ToUnixMicros(e.next_attempt_at), OptValue(e.lease_until), OptValue(e.last_error),
             OptValue(e.sent_at), OptValue(e.user_id), OptValue(e.address)})
      .status();
}

StatusOr<std::vector<EmailRow>> NotifyStore::DueEmails(Timestamp now, int64_t limit) {
  const int64_t t = ToUnixMicros(now);
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + EmailRows().Select() + " FROM email_outbox WHERE " +
                    DueCondition() + " ORDER BY next_attempt_at, id LIMIT ?",
                {t, t, limit}));
  return EmailRows().Decode(rows);
}

StatusOr<bool> NotifyStore::ClaimEmail(const std::string& id, Timestamp now,
                                       Timestamp lease_until) {
  const int64_t t = ToUnixMicros(now);
  // Conditional: with several senders (or READ COMMITTED isolation) another may have
  // claimed the row since it was read; only the UPDATE that changes it wins.
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kSending) +
                   ", lease_until = ?, attempts = attempts + 1 WHERE id = ? AND " + DueCondition(),
               {ToUnixMicros(lease_until), id, t, t}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::MarkEmailSent(const std::string& id, Timestamp lease_until,
                                          Timestamp at) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kSent) +
                   ", sent_at = ?, body = NULL, lease_until = NULL, last_error = NULL" + Claimed(),
               {ToUnixMicros(at), id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::RescheduleEmail(const std::string& id, Timestamp lease_until,
                                            Timestamp next_attempt_at, const std::string& error) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kPending) +
                   ", next_attempt_at = ?, lease_until = NULL, last_error = ?" + Claimed(),
               {ToUnixMicros(next_attempt_at), error, id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<bool> NotifyStore::MarkEmailFailed(const std::string& id, Timestamp lease_until,
                                            const std::string& error) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kFailed) +
                   ", lease_until = NULL, last_error = ?" + Claimed(),
               {error, id, ToUnixMicros(lease_until)}));
  return changed == 1;
}

StatusOr<int64_t> NotifyStore::ReleaseClaims(Timestamp now) {
  return tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kPending) +
                      ", lease_until = NULL, next_attempt_at = ? WHERE status = " +
                      SqlLiteral(EmailStatus::kSending),
                  {ToUnixMicros(now)});
}

StatusOr<int64_t> NotifyStore::CountEmailsSince(const std::string& user_id, Timestamp since) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) AS n FROM email_outbox WHERE user_id = ? AND "
                                    "created_at >= ? AND status <> " +
                                        SqlLiteral(EmailStatus::kSuppressed),
                                    {user_id, ToUnixMicros(since)}));
  return rows.at(0)["n"].Int();
}

StatusOr<int64_t> NotifyStore::ReleaseHeld(const std::string& user_id, const std::string& address,
                                           Timestamp since, Timestamp now) {
  return tx_.Exec("UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kPending) +
                      ", next_attempt_at = ? WHERE status = " + SqlLiteral(EmailStatus::kHeld) +
                      " AND user_id = ? AND address = ? AND created_at > ?",
                  {ToUnixMicros(now), user_id, address, ToUnixMicros(since)});
}

StatusOr<int64_t> NotifyStore::ExpireHeld(Timestamp before) {
  return tx_.Exec(
      "UPDATE email_outbox SET status = " + SqlLiteral(EmailStatus::kExpired) +
          ", body = NULL, last_error = 'its address was not verified in time' WHERE status = " +
          SqlLiteral(EmailStatus::kHeld) + " AND created_at <= ?",
      {ToUnixMicros(before)});
}

StatusOr<bool> NotifyStore::AnyHeldBefore(Timestamp before) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx_.Query("SELECT 1 FROM email_outbox WHERE status = " +
                                                          SqlLiteral(EmailStatus::kHeld) +
                                                          " AND created_at <= ? LIMIT 1",
                                                      {ToUnixMicros(before)}));
  return !rows.empty();
}

StatusOr<bool> NotifyStore::InsertVerification(const VerificationRow& v) {
  GPUNEX_ASSIGN_OR_RETURN(
      int64_t changed,
      tx_.Exec(std::string("INSERT INTO email_verifications (") + VerificationRows().Names() +
                   ") VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, address) DO NOTHING",
               {v.user_id, v.address, ToUnixMicros(v.created_at), OptValue(v.last_sent_at),
                OptValue(v.verified_at)}));
  return changed > 0;
}

StatusOr<std::optional<VerificationRow>> NotifyStore::FindVerification(const std::string& user_id,
                                                                       const std::string& address) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + VerificationRows().Select() +
                                        " FROM email_verifications WHERE user_id = ? AND "
                                        "address = ?",
                                    {user_id, address}));
  return VerificationRows().First(rows);
}

StatusOr<std::vector<VerificationRow>> NotifyStore::ListVerifications(const std::string& user_id) {
  static const auto* const with_held = new store::RowMapper<VerificationRow>(
      VerificationRows().With({{"held_emails", &VerificationRow::held_emails,
                                "(SELECT COUNT(*) FROM email_outbox e WHERE e.user_id = v.user_id "
                                "AND e.address = v.address AND e.status = " +
                                    SqlLiteral(EmailStatus::kHeld) + ")"}}));
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT " + with_held->Select("v") +
                                        " FROM email_verifications v WHERE v.user_id = ? "
                                        "ORDER BY v.address",
                                    {user_id}));
  return with_held->Decode(rows);
}

StatusOr<std::vector<VerificationRow>> NotifyStore::VerificationsWithoutLink(int64_t limit) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + VerificationRows().Select() +
                                        " FROM email_verifications WHERE verified_at IS NULL "
                                        "AND last_sent_at IS NULL ORDER BY created_at LIMIT ?",
                                    {limit}));
  return VerificationRows().Decode(rows);
}

Status NotifyStore::SetLinkSent(const std::string& user_id, const std::string& address,
                                Timestamp at) {
  return tx_
      .Exec("UPDATE email_verifications SET last_sent_at = ? WHERE user_id = ? AND address = ?",
            {ToUnixMicros(at), user_id, address})
      .status();
}

StatusOr<bool> NotifyStore::MarkVerified(const std::string& user_id, const std::string& address,
                                         Timestamp at) {
  GPUNEX_ASSIGN_OR_RETURN(int64_t changed,
                          tx_.Exec("UPDATE email_verifications SET verified_at = ? WHERE "
                                   "user_id = ? AND address = ? AND verified_at IS NULL",
                                   {ToUnixMicros(at), user_id, address}));
  return changed > 0;
}

StatusOr<std::string> NotifyStore::SigningKey(const std::string& name, const std::string& candidate,
                                              Timestamp now) {
  GPUNEX_RETURN_IF_ERROR(tx_.Exec("INSERT INTO signing_keys (name, secret, created_at) VALUES "
                                  "(?, ?, ?) ON CONFLICT (name) DO NOTHING",
                                  {name, candidate, ToUnixMicros(now)})
                             .status());
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT secret FROM signing_keys WHERE name = ?", {name}));
  return rows.at(0)["secret"].Str();
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
      // Email verification (verify.h): emails name the account they are for and their bare
      // address, and wait ('held') until that address is verified for that account; the
      // key that signs the links.
      {15,
       "notify",
       "email verification; emails' accounts; signing keys",
       {
           "ALTER TABLE email_outbox ADD COLUMN user_id TEXT",
           "ALTER TABLE email_outbox ADD COLUMN address TEXT",
           "CREATE INDEX email_outbox_user ON email_outbox (user_id, created_at)",
           R"(CREATE TABLE email_verifications (
                user_id TEXT NOT NULL REFERENCES users(id),
                address TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_sent_at BIGINT,
                verified_at BIGINT,
                PRIMARY KEY (user_id, address)))",
           R"(CREATE TABLE signing_keys (
                name TEXT PRIMARY KEY,
                secret TEXT NOT NULL,
                created_at BIGINT NOT NULL))",
       },
       {}},
  };
}

}  // namespace gpunex::platform::notify
