// Notifications (SPEC NTF-1): what gpunexd tells a person about events that concern
// them, by email and in the dashboard.
//
// Both kinds of message are written inside the caller's transaction, in the same commit
// as the event that causes them: either the event and its messages are durable together
// or neither is. Emails go to a durable outbox (table email_outbox) that OutboxSender
// (outbox.h) delivers in the background, at least once; dashboard notifications go to
// table notifications, listed and marked read here. The tables are notify_store.h's;
// the times every write records are the `now` its caller passes.
//
// Thread-safety: free functions; a Tx belongs to the thread running its callback.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::notify {

// An email to one recipient, as the domain composes it.
struct Email {
  std::string to;       // "user@example.com" or "Name <user@example.com>"
  std::string subject;  // UTF-8, one line
  std::string body;     // UTF-8 plain text; '\n' line ends
  std::string kind;     // what caused it, for logs and metrics: "application.approved"
  // The account it is sent for: held until the address is verified for that account, and
  // counted against the account's hourly limit (verify.h). "" only for the platform's own
  // mail that no account causes.
  std::string user_id;
};

// Size limits enforced by EnqueueEmail (bytes).
inline constexpr size_t kMaxEmailAddressLength = 320;
inline constexpr size_t kMaxEmailSubjectLength = 998;
inline constexpr size_t kMaxEmailBodyLength = 256 * 1024;

// The caller wakes the sender from inside its transaction, so that the message goes out
// as soon as the transaction commits: `tx.AfterCommit([&sender] { sender.Wake(); })`.
// Never wake it by hand after the commit: that wakes it also for a transaction that
// rolled back or whose outcome is unknown. (Without a wake the sender finds the message
// at its next poll.)
//
// Adds `email` to the outbox in `tx`, status 'pending', due at `now`: 'held' instead when
// it has a user_id whose account has not verified its address (and that address is then
// recorded for a link, verify.h), unless it is the verification email itself; and
// 'suppressed' when that account had kMaxEmailsPerAccountPerHour emails in the hour
// before `now`. The message gets
// the stable Message-ID "<outbox-id@message_id_domain>", which every delivery attempt
// reuses so that recipients can recognise a repeat, and the Date `now`. Stores `id_out`
// (when not null) with the outbox row id ("eml_...").
// Fails with kInvalidArgument when the address or subject holds CR/LF (header
// injection) or is malformed, when the body is not clean UTF-8 text, or when a field is
// too long; with the Tx's status when the insert fails.
Status EnqueueEmail(store::Tx& tx, Timestamp now, const Email& email,
                    std::string_view message_id_domain, std::string* id_out = nullptr);

// Adds an unread dashboard notification for `user_id` in `tx`, made at `now`. `link` is a
// dashboard path such as "/applications/app_..."; "" for none. Fails with
// kInvalidArgument when kind or title is empty or a text is not clean UTF-8 or too long;
// with the Tx's status otherwise (a missing user fails the foreign key).
Status AddNotification(store::Tx& tx, Timestamp now, const std::string& user_id,
                       std::string_view kind, std::string_view title, std::string_view body,
                       std::string_view link = "");

struct Notification {
  std::string id;  // "ntf_..."
  Timestamp at;
  std::string kind;
  std::string title;
  std::string body;
  std::string link;  // "" when none
  bool read = false;
};

struct NotificationPage {
  Page<Notification> page;   // newest first
  int64_t unread_count = 0;  // of all the user's notifications, not just this page
};

// The largest page ListNotifications serves; the API's PageLimits{50, 100}.
inline constexpr int kMaxNotificationPageSize = 100;

// One page of `user_id`'s notifications, newest first (ids sort by creation time), with
// the number of unread ones, read in one snapshot. With `unread_only` only unread ones
// are listed. `page.after` is the `next` of the previous page of this list.
// Fails with kValidationFailed on field "limit" when page.limit is outside
// 1..kMaxNotificationPageSize (the API refuses those first), on field "cursor" when the
// cursor is not one of this list's (another list's, or made up); with the database's
// status otherwise.
StatusOr<NotificationPage> ListNotifications(store::Database& db, const std::string& user_id,
                                             const PageRequest& page, bool unread_only);

// Marks one of `user_id`'s notifications read at `now`; marking a read one again is OK
// (it keeps its first read time).
// Fails with kNotFound when no notification with that id belongs to `user_id` (whether
// or not it exists for someone else).
Status MarkNotificationRead(store::Database& db, Timestamp now, const std::string& user_id,
                            const std::string& notification_id);

// Marks every unread notification of `user_id` read at `now`. Stores in `count_out`
// (when not null) how many changed.
Status MarkAllRead(store::Database& db, Timestamp now, const std::string& user_id,
                   int64_t* count_out = nullptr);

// A message for one person about an event: always in the dashboard, by email too when
// `email`. The folders that tell people things compose these.
struct Notice {
  std::string kind;   // "maintenance.soon"
  std::string title;  // one line; also the email's subject after "gpunex: "
  std::string text;   // plain text
  std::string link;   // dashboard path ("/#/provider/performance"), "" for none
  bool email = false;
  // The email's subject after "gpunex: " when the title holds text someone typed (a machine
  // name): subjects carry fixed words only. "" for the title.
  std::string subject;
};
struct Recipient {
  std::string user_id;
  std::string email;
  std::string name;  // for the greeting; "" when unknown
};
struct NoticeSettings {
  std::string mail_domain = "gpunex.local";  // Message-ID domain
  std::string public_url;                    // before `link` in emails
  std::function<void()> wake_outbox;         // after the commit; may be empty
};
// How a name is greeted in an email ("Hello <name>,"): without invisible or control
// characters, at most kMaxGreetingNameChars characters (then "…"), "there" when empty.
inline constexpr size_t kMaxGreetingNameChars = 40;
std::string GreetingName(std::string_view name);

// Adds the dashboard notification and, with n.email, queues the email, in `tx`.
Status SendNotice(store::Tx& tx, Timestamp now, const Recipient& to, const Notice& n,
                  const NoticeSettings& settings);

}  // namespace gpunex::platform::notify
