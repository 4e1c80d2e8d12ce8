#include "platform/notify/notify.h"

#include <string>
#include <utility>

#include "common/ids.h"
#include "common/json.h"
#include "platform/notify/internal/mail_format.h"

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

// The opaque cursor is base64url of the last listed id; ids sort by creation time.
std::string EncodeCursor(const std::string& last_id) { return Base64UrlEncode(last_id); }

bool DecodeCursor(const std::string& cursor, std::string* last_id) {
  if (cursor.size() > 64 || !Base64UrlDecode(cursor, last_id)) return false;
  if (last_id->size() != kIdLength || !last_id->starts_with(kNotificationIdPrefix)) return false;
  for (char c : std::string_view(*last_id).substr(kNotificationIdPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

}  // namespace

Status EnqueueEmail(store::Tx& tx, const Email& email, std::string_view message_id_domain,
                    std::string* id_out) {
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

  std::string id = NewId("eml");
  std::string message_id = "<" + id + "@" + std::string(message_id_domain) + ">";
  UnixMicros now = NowMicros();
  auto r = tx.Exec(
      "INSERT INTO email_outbox (id, created_at, to_addr, subject, body, body_sha256, "
      "message_id, kind, status, attempts, next_attempt_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?)",
      {id, now, email.to, email.subject, email.body, Sha256Hex(email.body), message_id, email.kind,
       now});
  if (!r.ok()) return r.status();
  if (id_out != nullptr) *id_out = std::move(id);
  return Status::Ok();
}

Status AddNotification(store::Tx& tx, const std::string& user_id, std::string_view kind,
                       std::string_view title, std::string_view body, std::string_view link) {
  if (user_id.empty()) return InvalidArgument("user_id is required");
  GPUNEX_RETURN_IF_ERROR(CheckText(kind, "kind", kMaxKindLength, true, false));
  GPUNEX_RETURN_IF_ERROR(CheckText(title, "title", kMaxTitleLength, true, false));
  GPUNEX_RETURN_IF_ERROR(CheckText(body, "body", kMaxNotificationBodyLength, false, true));
  GPUNEX_RETURN_IF_ERROR(CheckText(link, "link", kMaxLinkLength, false, false));
  store::Value link_value = nullptr;
  if (!link.empty()) link_value = std::string(link);
  auto r = tx.Exec(
      "INSERT INTO notifications (id, user_id, at, kind, title, body, link, read_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
      {NewId("ntf"), user_id, NowMicros(), std::string(kind), std::string(title), std::string(body),
       link_value});
  return r.status();
}

StatusOr<NotificationPage> ListNotifications(store::Database& db, const std::string& user_id,
                                             int limit, const std::string& cursor,
                                             bool unread_only) {
  if (limit < 1 || limit > kMaxNotificationPageSize) {
    return FieldError("limit", "must be between 1 and " + std::to_string(kMaxNotificationPageSize));
  }
  std::string after_id;
  if (!cursor.empty() && !DecodeCursor(cursor, &after_id)) {
    return FieldError("cursor", "is not a cursor returned by this list");
  }

  std::string sql =
      "SELECT id, at, kind, title, body, link, read_at FROM notifications WHERE user_id = ?";
  std::vector<store::Value> params = {user_id};
  if (!after_id.empty()) {
    sql += " AND id < ?";
    params.emplace_back(after_id);
  }
  if (unread_only) sql += " AND read_at IS NULL";
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(int64_t{limit} + 1);  // one more tells whether there is a next page

  NotificationPage page;
  Status st = db.Read([&](store::Tx& tx) -> Status {
    page = NotificationPage{};
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(sql, params));
    for (const store::Row& row : rows) {
      if (page.items.size() == static_cast<size_t>(limit)) {
        page.next_cursor = EncodeCursor(page.items.back().id);
        break;
      }
      Notification n;
      n.id = row.Str(0);
      n.at = row.Int(1);
      n.kind = row.Str(2);
      n.title = row.Str(3);
      n.body = row.Str(4);
      n.link = row.OptStr(5).value_or("");
      n.read = !row.IsNull(6);
      page.items.push_back(std::move(n));
    }
    GPUNEX_ASSIGN_OR_RETURN(
        store::Rows count,
        tx.Query("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL",
                 {user_id}));
    page.unread_count = count.at(0).Int(0);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return page;
}

Status MarkNotificationRead(store::Database& db, const std::string& user_id,
                            const std::string& notification_id) {
  return db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(int64_t changed,
                            tx.Exec("UPDATE notifications SET read_at = ? "
                                    "WHERE id = ? AND user_id = ? AND read_at IS NULL",
                                    {NowMicros(), notification_id, user_id}));
    if (changed > 0) return Status::Ok();
    // Already read, or not this user's: the same answer whether or not it is someone
    // else's, so ids of others' notifications cannot be probed.
    GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                            tx.Query("SELECT 1 FROM notifications WHERE id = ? AND user_id = ?",
                                     {notification_id, user_id}));
    if (rows.empty()) return NotFound("notification not found");
    return Status::Ok();
  });
}

Status MarkAllRead(store::Database& db, const std::string& user_id, int64_t* count_out) {
  int64_t changed = 0;
  Status st = db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(changed, tx.Exec("UPDATE notifications SET read_at = ? "
                                             "WHERE user_id = ? AND read_at IS NULL",
                                             {NowMicros(), user_id}));
    return Status::Ok();
  });
  if (st.ok() && count_out != nullptr) *count_out = changed;
  return st;
}

}  // namespace gpunex::platform::notify
