// The notify folder's tables and the only SQL that touches them: notifications (the
// dashboard's list of messages to a user), email_outbox (emails waiting for, or done
// with, delivery by OutboxSender), email_verifications (the addresses recorded for an
// account and whether they are verified) and signing_keys (the key of the verification
// links). Other folders reach these through notify.h, outbox.h and verify.h, never here.
//
// A NotifyStore is a view of one transaction: every method runs in it and fails with the
// transaction's status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::notify {

struct NotificationRow {
  std::string id;  // "ntf_...": sorts by creation time
  std::string user_id;
  Timestamp at;
  std::string kind;
  std::string title;
  std::string body;
  std::optional<std::string> link;
  std::optional<Timestamp> read_at;  // none while unread
};

// email_outbox.status: where an email is in its life cycle (outbox.h describes it).
// pending: due at next_attempt_at; sending: claimed by a sender until lease_until; sent;
// failed: refused for good or out of attempts.
// held: not sent while its address is not verified for its account (verify.h); 'pending'
// once it is, or 'expired' when that takes longer than kHeldEmailLifetime.
// suppressed: never sent: its account had kMaxEmailsPerAccountPerHour emails in the hour
// before.
enum class EmailStatus { kPending, kSending, kSent, kFailed, kHeld, kExpired, kSuppressed };
inline constexpr EnumNames<EmailStatus, 7> kEmailStatusNames{{{
    {EmailStatus::kPending, "pending"},
    {EmailStatus::kSending, "sending"},
    {EmailStatus::kSent, "sent"},
    {EmailStatus::kFailed, "failed"},
    {EmailStatus::kHeld, "held"},
    {EmailStatus::kExpired, "expired"},
    {EmailStatus::kSuppressed, "suppressed"},
}}};
inline std::string_view Name(EmailStatus s) { return kEmailStatusNames.Name(s); }

// Whether an email may go from status `from` to status `to` (outbox.h): pending → sending
// (a claim); sending → sent | failed | pending (a retry, or a claim released) | sending (a
// claim taken again when its lease ran out); held → pending | expired. Nothing leaves
// sent, failed, expired or suppressed.
constexpr bool EmailMayGo(EmailStatus from, EmailStatus to) {
  switch (from) {
    case EmailStatus::kPending:
      return to == EmailStatus::kSending;
    case EmailStatus::kSending:
      return to == EmailStatus::kSent || to == EmailStatus::kFailed ||
             to == EmailStatus::kPending || to == EmailStatus::kSending;
    case EmailStatus::kHeld:
      return to == EmailStatus::kPending || to == EmailStatus::kExpired;
    case EmailStatus::kSent:
    case EmailStatus::kFailed:
    case EmailStatus::kExpired:
    case EmailStatus::kSuppressed:
      return false;
  }
  return false;
}

struct EmailRow {
  std::string id;  // "eml_..."
  Timestamp created_at;
  std::string to_addr;
  std::string subject;
  std::optional<std::string> body;  // none once sent: it may have held a one-time secret
  std::string body_sha256;          // of the body as enqueued, kept after the body is gone
  std::string message_id;           // "<id@domain>", unique
  std::string kind;
  EmailStatus status = EmailStatus::kPending;
  int64_t attempts = 0;  // claims so far
  Timestamp next_attempt_at;
  std::optional<Timestamp> lease_until;  // while 'sending': the claim's expiry and token
  std::optional<std::string> last_error;
  std::optional<Timestamp> sent_at;
  // The account it is sent for and its bare address in lower case; none for the platform's
  // own mail (tests, operators' tools).
  std::optional<std::string> user_id;
  std::optional<std::string> address;
};

// An address of an account that is, or is to be, verified (verify.h).
struct VerificationRow {
  std::string user_id;
  std::string address;  // lower case
  Timestamp created_at;
  std::optional<Timestamp> last_sent_at;  // the latest link; none until one is sent
  std::optional<Timestamp> verified_at;
  int64_t held_emails = 0;  // read by ListVerifications only: its 'held' emails
};

class NotifyStore {
 public:
  explicit NotifyStore(store::Tx& tx) : tx_(tx) {}

  // --- notifications ---

  // Fails the foreign key (kInternal) when the user does not exist.
  Status InsertNotification(const NotificationRow& n);
  // One page of the user's notifications, newest first (key: id, descending). Fails with a
  // field error on "cursor" when the cursor does not have the key's shape.
  StatusOr<Page<NotificationRow>> ListNotifications(const std::string& user_id, bool unread_only,
                                                    const PageRequest& page);
  StatusOr<int64_t> CountUnread(const std::string& user_id);
  // Whether an unread notification `id` of `user_id` was marked read.
  StatusOr<bool> MarkRead(const std::string& user_id, const std::string& id, Timestamp at);
  // Whether `user_id` has a notification `id` (read or not).
  StatusOr<bool> HasNotification(const std::string& user_id, const std::string& id);
  // How many unread notifications of `user_id` were marked read.
  StatusOr<int64_t> MarkAllRead(const std::string& user_id, Timestamp at);

  // --- email_outbox ---

  // Fails with kAlreadyExists for a taken id or Message-ID.
  Status InsertEmail(const EmailRow& e);
  // Up to `limit` emails due at `now`, those due longest first: pending with
  // next_attempt_at <= now, or sending with a lease that ran out (lease_until <= now).
  StatusOr<std::vector<EmailRow>> DueEmails(Timestamp now, int64_t limit);
  // Claims email `id` if it is still due at `now` (another sender may have claimed it
  // since DueEmails read it): status 'sending', lease_until = `lease_until`, attempts + 1.
  // Whether this call claimed it.
  StatusOr<bool> ClaimEmail(const std::string& id, Timestamp now, Timestamp lease_until);
  // The outcomes of a claim. Each changes the row only while it is still claimed with the
  // lease `lease_until` (the fencing token of the claim), and returns whether it did.
  // Sent: the body is dropped.
  StatusOr<bool> MarkEmailSent(const std::string& id, Timestamp lease_until, Timestamp at);
  StatusOr<bool> RescheduleEmail(const std::string& id, Timestamp lease_until,
                                 Timestamp next_attempt_at, const std::string& error);
  StatusOr<bool> MarkEmailFailed(const std::string& id, Timestamp lease_until,
                                 const std::string& error);
  // Returns every claimed email to 'pending', due at `now`; how many there were.
  StatusOr<int64_t> ReleaseClaims(Timestamp now);
  // How many emails for `user_id` were enqueued at or after `since`, suppressed ones aside.
  StatusOr<int64_t> CountEmailsSince(const std::string& user_id, Timestamp since);
  // 'held' emails of (user_id, address) made after `since` become 'pending', due at `now`;
  // how many.
  StatusOr<int64_t> ReleaseHeld(const std::string& user_id, const std::string& address,
                                Timestamp since, Timestamp now);
  // 'held' emails made at or before `before` become 'expired'; how many.
  StatusOr<int64_t> ExpireHeld(Timestamp before);
  // Whether any 'held' email was made at or before `before`.
  StatusOr<bool> AnyHeldBefore(Timestamp before);

  // --- email_verifications ---

  // Adds the row unless (user_id, address) has one; whether it did.
  StatusOr<bool> InsertVerification(const VerificationRow& v);
  StatusOr<std::optional<VerificationRow>> FindVerification(const std::string& user_id,
                                                            const std::string& address);
  // The user's rows by address, with held counts.
  StatusOr<std::vector<VerificationRow>> ListVerifications(const std::string& user_id);
  // Up to `limit` unverified rows that never had a link, oldest first.
  StatusOr<std::vector<VerificationRow>> VerificationsWithoutLink(int64_t limit);
  Status SetLinkSent(const std::string& user_id, const std::string& address, Timestamp at);
  // Sets verified_at unless set; whether it did.
  StatusOr<bool> MarkVerified(const std::string& user_id, const std::string& address, Timestamp at);

  // --- signing_keys ---

  // The secret named `name`, storing `candidate` as it first when there is none.
  StatusOr<std::string> SigningKey(const std::string& name, const std::string& candidate,
                                   Timestamp now);

 private:
  store::Tx& tx_;
};

// The folder's migrations (store/migrations.h).
std::vector<store::Migration> NotifyMigrations();

}  // namespace gpunex::platform::notify
