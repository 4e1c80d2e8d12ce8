#include "platform/notify/notify.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/ascii.h"
#include "common/ids.h"
#include "common/json.h"
#include "common/log.h"
#include "common/utf8.h"
#include "platform/notify/internal/mail_format.h"
#include "platform/notify/notify_store.h"
#include "platform/notify/verify.h"

namespace gpunex::platform::notify {
namespace {

constexpr std::string_view kNotificationIdPrefix = "ntf_";
constexpr size_t kIdLength = 4 + 26;  // "ntf_" + 26 base32 characters (ids.h)
constexpr size_t kMaxKindLength = 64;
constexpr size_t kMaxTitleLength = 200;
constexpr size_t kMaxNotificationBodyLength = 4000;
constexpr size_t kMaxLinkLength = 2000;

bool ValidMessageIdDomain(std::string_view d) {
  if (d.empty() || d.size() > 253) return false;
  for (char c : d) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Status CheckText(std::string_view value, std::string_view name, size_t max_len, bool required,
                 bool multiline) {
  const std::string n(name);
  if (!multiline && internal::HasLineBreak(value)) {
    return InvalidArgument(n + " must not contain line breaks");
  }
  if (!IsCleanText(value, multiline)) {
    return InvalidArgument(n + " must be UTF-8 text without control characters");
  }
  if (required && value.empty()) return InvalidArgument(n + " is required");
  if (value.size() > max_len) {
    return InvalidArgument(n + " is longer than " + std::to_string(max_len) + " bytes");
  }
  return Status::Ok();
}

// Whether `c` can be a cursor of a notifications list: the id of the last notification
// shown. QueryPage checks the shape (one text part); this also refuses another list's
// text-id cursor ("usr_...") and anything not made by NewId("ntf").
bool IsNotificationCursor(const Cursor& c) {
  if (c.parts().size() != 1) return false;
  const std::string* id = std::get_if<std::string>(&c.parts()[0]);
  if (id == nullptr || id->size() != kIdLength || !id->starts_with(kNotificationIdPrefix)) {
    return false;
  }
  for (char ch : std::string_view(*id).substr(kNotificationIdPrefix.size())) {
    if (!((ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z'))) return false;
  }
  return true;
}

Notification NotificationFrom(NotificationRow r) {
  return {std::move(r.id),      r.at,
          std::move(r.kind),    std::move(r.title),
          std::move(r.body),    r.link.value_or(""),
          r.read_at.has_value()};
}

}  // namespace

Status EnqueueEmail(store::Tx& tx, Timestamp now, const Email& email,
                    std::string_view message_id_domain, std::string* id_out) {
  if (email.to.size() > kMaxEmailAddressLength) {
    return InvalidArgument("to is too long");
  }
  auto to = internal::ParseMailbox(email.to, "to");
  if (!to.ok()) return to.status();
  GPUNEX_RETURN_IF_ERROR(CheckText(email.subject, "subject", kMaxEmailSubjectLength,
                                   /*required=*/true, /*multiline=*/false));
  GPUNEX_RETURN_IF_ERROR(CheckText(email.body, "body", kMaxEmailBodyLength,
                                   /*required=*/false, /*multiline=*/true));
  GPUNEX_RETURN_IF_ERROR(
      CheckText(email.kind, "kind", kMaxKindLength, /*required=*/true, /*multiline=*/false));
  if (!ValidMessageIdDomain(message_id_domain)) {
    return InvalidArgument("the Message-ID domain must be a host name");
  }

  EmailRow row;
  row.id = NewId("eml");
  row.created_at = now;
  row.to_addr = email.to;
  row.subject = email.subject;
  row.body = email.body;
  row.body_sha256 = Sha256Hex(email.body);
  row.message_id = "<" + row.id + "@" + std::string(message_id_domain) + ">";
  row.kind = email.kind;
  row.status = EmailStatus::kPending;
  row.next_attempt_at = now;
  NotifyStore s(tx);
  if (!email.user_id.empty()) {
    row.user_id = email.user_id;
    row.address = AsciiLower(to->address);
    GPUNEX_ASSIGN_OR_RETURN(int64_t recent,
                            s.CountEmailsSince(email.user_id, now - std::chrono::hours(1)));
    GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> v,
                            s.FindVerification(email.user_id, *row.address));
    if (recent >= kMaxEmailsPerAccountPerHour) {
      row.status = EmailStatus::kSuppressed;
      row.last_error = "its account had " + std::to_string(kMaxEmailsPerAccountPerHour) +
                       " emails in the hour before";
      LogWarn("email.suppressed", {{"user_id", email.user_id}, {"kind", email.kind}});
    } else if (email.kind != kVerificationKind && !(v && v->verified_at)) {
      row.status = EmailStatus::kHeld;
      if (!v) {
        GPUNEX_RETURN_IF_ERROR(
            s.InsertVerification({email.user_id, *row.address, now, std::nullopt, std::nullopt})
                .status());
      }
    }
  }
  GPUNEX_RETURN_IF_ERROR(s.InsertEmail(row));
  if (id_out != nullptr) *id_out = std::move(row.id);
  return Status::Ok();
}

Status AddNotification(store::Tx& tx, Timestamp now, const std::string& user_id,
                       std::string_view kind, std::string_view title, std::string_view body,
                       std::string_view link) {
  if (user_id.empty()) return InvalidArgument("user_id is required");
  GPUNEX_RETURN_IF_ERROR(CheckText(kind, "kind", kMaxKindLength, true, false));
  GPUNEX_RETURN_IF_ERROR(CheckText(title, "title", kMaxTitleLength, true, false));
  GPUNEX_RETURN_IF_ERROR(CheckText(body, "body", kMaxNotificationBodyLength, false, true));
  GPUNEX_RETURN_IF_ERROR(CheckText(link, "link", kMaxLinkLength, false, false));
  NotificationRow row{.id = NewId("ntf"),
                      .user_id = user_id,
                      .at = now,
                      .kind = std::string(kind),
                      .title = std::string(title),
                      .body = std::string(body),
                      .link = link.empty() ? std::nullopt : std::optional<std::string>(link),
                      .read_at = std::nullopt};
  return NotifyStore(tx).InsertNotification(row);
}

StatusOr<NotificationPage> ListNotifications(store::Database& db, const std::string& user_id,
                                             const PageRequest& page, bool unread_only) {
  if (page.limit < 1 || page.limit > kMaxNotificationPageSize) {
    return FieldError("limit", "must be between 1 and " + std::to_string(kMaxNotificationPageSize));
  }
  if (page.after && !IsNotificationCursor(*page.after)) {
    return FieldError("cursor", "is not a cursor from a previous page of this list");
  }
  NotificationPage out;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(Page<NotificationRow> rows,
                            s.ListNotifications(user_id, unread_only, page));
    out = NotificationPage{};
    out.page.next = std::move(rows.next);
    for (NotificationRow& r : rows.items) out.page.items.push_back(NotificationFrom(std::move(r)));
    GPUNEX_ASSIGN_OR_RETURN(out.unread_count, s.CountUnread(user_id));
    return Status::Ok();
  }));
  return out;
}

Status MarkNotificationRead(store::Database& db, Timestamp now, const std::string& user_id,
                            const std::string& notification_id) {
  return db.Transact([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(bool changed, s.MarkRead(user_id, notification_id, now));
    if (changed) return Status::Ok();
    // Already read, or not this user's: the same answer whether or not it is someone
    // else's, so ids of others' notifications cannot be probed.
    GPUNEX_ASSIGN_OR_RETURN(bool exists, s.HasNotification(user_id, notification_id));
    if (!exists) return NotFound("notification not found");
    return Status::Ok();
  });
}

Status MarkAllRead(store::Database& db, Timestamp now, const std::string& user_id,
                   int64_t* count_out) {
  int64_t changed = 0;
  GPUNEX_RETURN_IF_ERROR(db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(changed, NotifyStore(tx).MarkAllRead(user_id, now));
    return Status::Ok();
  }));
  if (count_out != nullptr) *count_out = changed;
  return Status::Ok();
}

std::string GreetingName(std::string_view name) {
  const std::string visible = StripInvisible(name);
  std::string out;
  size_t chars = 0, pos = 0;
  while (pos < visible.size() && chars < kMaxGreetingNameChars) {
    const size_t start = pos;
    const char32_t cp = NextCodePoint(visible, &pos);
    // Line breaks and other controls never reach a greeting.
    if (cp == kInvalidUtf8 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) continue;
    out.append(visible, start, pos - start);
    ++chars;
  }
  if (pos < visible.size()) out += "\u2026";
  return out.empty() ? "there" : out;
}

Status SendNotice(store::Tx& tx, Timestamp now, const Recipient& to, const Notice& n,
                  const NoticeSettings& settings) {
  GPUNEX_RETURN_IF_ERROR(AddNotification(tx, now, to.user_id, n.kind, n.title, n.text, n.link));
  if (!n.email || to.email.empty()) return Status::Ok();
  std::string body = "Hello " + GreetingName(to.name) + ",\n\n" + n.text + "\n";
  if (!n.link.empty()) body += "\nSee your dashboard: " + settings.public_url + n.link + "\n";
  body += "\nThe gpunex team\n";
  GPUNEX_RETURN_IF_ERROR(EnqueueEmail(
      tx, now,
      {to.email, "gpunex: " + (n.subject.empty() ? n.title : n.subject), body, n.kind, to.user_id},
      settings.mail_domain));
  if (settings.wake_outbox) tx.AfterCommit(settings.wake_outbox);
  return Status::Ok();
}

}  // namespace gpunex::platform::notify
