#include "platform/notify/verify.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "common/ascii.h"
#include "common/ids.h"
#include "common/log.h"
#include "platform/notify/notify.h"
#include "platform/notify/notify_store.h"

namespace gpunex::platform::notify {
namespace {

constexpr std::string_view kKeyName = "email_verification";
constexpr std::string_view kInvalidLink = "is not a valid verification link";

std::string Seconds(Duration d) {
  return std::to_string(std::chrono::ceil<std::chrono::seconds>(d).count());
}

// The parts of a token's payload.
struct Claim {
  std::string user_id;
  std::string address;
  int64_t expires_unix = 0;
};

std::optional<Claim> ParsePayload(std::string_view payload) {
  const size_t a = payload.find('\n');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = payload.find('\n', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  Claim c{std::string(payload.substr(0, a)), std::string(payload.substr(a + 1, b - a - 1)), 0};
  const std::string_view expiry = payload.substr(b + 1);
  if (c.user_id.empty() || c.address.empty() || expiry.empty() || expiry.size() > 12) {
    return std::nullopt;
  }
  for (const char ch : expiry) {
    if (ch < '0' || ch > '9') return std::nullopt;
    c.expires_unix = c.expires_unix * 10 + (ch - '0');
  }
  return c;
}

}  // namespace

StatusOr<std::unique_ptr<EmailVerifier>> EmailVerifier::Open(store::Database& db,
                                                             VerifierOptions options) {
  if (!options.account_email) return InvalidArgument("the verifier needs account_email");
  // A candidate that the first instance stores; later ones read the stored one.
  const std::string candidate = NewSecret("gpx_v");
  std::string key;
  GPUNEX_RETURN_IF_ERROR(db.Transact([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        key, NotifyStore(tx).SigningKey(std::string(kKeyName), candidate, options.clock->Now()));
    return Status::Ok();
  }));
  return std::unique_ptr<EmailVerifier>(new EmailVerifier(std::move(key), std::move(options)));
}

EmailVerifier::EmailVerifier(std::string key, VerifierOptions options)
    : key_(std::move(key)), options_(std::move(options)) {}

std::string EmailVerifier::MakeToken(const std::string& user_id, std::string_view address,
                                     Timestamp expires) const {
  const std::string payload =
      user_id + "\n" + AsciiLower(address) + "\n" +
      std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count());
  return Base64UrlEncode(payload) + "." + Base64UrlEncode(HmacSha256(key_, payload));
}

Status EmailVerifier::SendLink(store::Tx& tx, Timestamp now, const std::string& user_id,
                               std::string_view raw_address) const {
  const std::string address = AsciiLower(raw_address);
  NotifyStore s(tx);
  GPUNEX_RETURN_IF_ERROR(
      s.InsertVerification({user_id, address, now, std::nullopt, std::nullopt}).status());
  GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> row, s.FindVerification(user_id, address));
  if (!row || row->verified_at) return Status::Ok();
  GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> account, options_.account_email(tx, user_id));
  if (!account) return NotFound("no such account");

  const Timestamp expires = now + options_.link_lifetime;
  const std::string link =
      options_.public_url + "/#/verify-email?token=" + MakeToken(user_id, address, expires);
  const std::string what = *account == address
                               ? std::string("your gpunex account")
                               : "the gpunex account " + *account + ", as its contact address";
  Email e;
  e.to = address;
  e.subject = "gpunex: confirm your email address";
  e.body = "Hello,\n\nPlease confirm that " + address + " is your address for " + what +
           ", by opening this link:\n\n" + link + "\n\nThe link works until " +
           FormatRfc3339(expires) +
           ". Until the address is confirmed, gpunex sends it nothing but this email. If you "
           "did not expect it, ignore it: nothing more will come.\n\nThe gpunex team\n";
  e.kind = std::string(kVerificationKind);
  e.user_id = user_id;
  GPUNEX_RETURN_IF_ERROR(EnqueueEmail(tx, now, e, options_.mail_domain));
  GPUNEX_RETURN_IF_ERROR(s.SetLinkSent(user_id, address, now));
  if (options_.wake_outbox) tx.AfterCommit(options_.wake_outbox);
  return Status::Ok();
}

Status EmailVerifier::TellOwnerOfSignUp(store::Tx& tx, Timestamp now, const std::string& user_id,
                                        std::string_view address) const {
  Email e;
  e.to = AsciiLower(address);
  e.subject = "gpunex: a sign-up with your email address";
  e.body =
      "Hello,\n\nSomeone, perhaps you, tried to create a gpunex account with this address "
      "on " +
      FormatRfc3339(now) + ". You have an account already, so none was made. To use it, " +
      "log in at " + options_.public_url +
      "/#/login\n\nIf it was not you, there is nothing to do: your account is unchanged."
      "\n\nThe gpunex team\n";
  e.kind = "account.signup_existing";
  e.user_id = user_id;
  GPUNEX_RETURN_IF_ERROR(EnqueueEmail(tx, now, e, options_.mail_domain));
  if (options_.wake_outbox) tx.AfterCommit(options_.wake_outbox);
  return Status::Ok();
}

StatusOr<Verified> EmailVerifier::Verify(store::Database& db, std::string_view token) const {
  const size_t dot = token.find('.');
  std::string payload, mac;
  if (dot == std::string_view::npos || token.size() > 2048 ||
      !Base64UrlDecode(token.substr(0, dot), &payload) ||
      !Base64UrlDecode(token.substr(dot + 1), &mac) ||
      !ConstantTimeEquals(HmacSha256(key_, payload), mac)) {
    return FieldError("token", std::string(kInvalidLink));
  }
  const std::optional<Claim> claim = ParsePayload(payload);
  if (!claim) return FieldError("token", std::string(kInvalidLink));
  const Timestamp now = options_.clock->Now();
  if (std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() >=
      claim->expires_unix) {
    return FieldError("token",
                      "has expired; ask for a new link on your account page after logging in");
  }
  Verified out;
  GPUNEX_RETURN_IF_ERROR(db.Transact([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    out = Verified{claim->user_id, claim->address, false, 0};
    GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> row,
                            s.FindVerification(claim->user_id, claim->address));
    if (!row) return FieldError("token", std::string(kInvalidLink));
    GPUNEX_ASSIGN_OR_RETURN(bool changed, s.MarkVerified(claim->user_id, claim->address, now));
    out.already = !changed;
    GPUNEX_ASSIGN_OR_RETURN(
        out.released, s.ReleaseHeld(claim->user_id, claim->address, now - kHeldEmailLifetime, now));
    if (out.released > 0 && options_.wake_outbox) tx.AfterCommit(options_.wake_outbox);
    return Status::Ok();
  }));
  LogInfo("email.verified", {{"user_id", out.user_id},
                             {"already", out.already ? "true" : "false"},
                             {"released", std::to_string(out.released)}});
  return out;
}

Status EmailVerifier::Resend(store::Database& db, const std::string& user_id,
                             std::string_view raw_address, int64_t* retry_after_s) const {
  const std::string address = AsciiLower(raw_address);
  const Timestamp now = options_.clock->Now();
  return db.Transact([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> row,
                            s.FindVerification(user_id, address));
    if (!row) return NotFound("this address is not one of your account's");
    if (row->verified_at) return FailedPrecondition("this address is verified already");
    if (row->last_sent_at && now < *row->last_sent_at + options_.resend_after) {
      if (retry_after_s != nullptr) {
        *retry_after_s = std::chrono::ceil<std::chrono::seconds>(*row->last_sent_at +
                                                                 options_.resend_after - now)
                             .count();
      }
      return ResourceExhausted("a link went to this address less than " +
                               Seconds(options_.resend_after) + " s ago; ask again in " +
                               Seconds(*row->last_sent_at + options_.resend_after - now) + " s");
    }
    // SendLink sends only to a row that is not verified; clearing last_sent_at is not needed.
    return SendLink(tx, now, user_id, address);
  });
}

StatusOr<std::vector<AddressState>> EmailVerifier::List(store::Database& db,
                                                        const std::string& user_id) const {
  std::vector<AddressState> out;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    out.clear();
    GPUNEX_ASSIGN_OR_RETURN(std::optional<std::string> account,
                            options_.account_email(tx, user_id));
    GPUNEX_ASSIGN_OR_RETURN(std::vector<VerificationRow> rows, s.ListVerifications(user_id));
    // The account's own address first, the others by address as read.
    std::stable_partition(rows.begin(), rows.end(), [&](const VerificationRow& r) {
      return account && *account == r.address;
    });
    for (VerificationRow& r : rows) {
      const bool own = account && *account == r.address;
      out.push_back({std::move(r.address), own, r.verified_at, r.last_sent_at, r.held_emails});
    }
    return Status::Ok();
  }));
  return out;
}

StatusOr<bool> EmailVerifier::IsVerified(store::Database& db, const std::string& user_id,
                                         std::string_view address) const {
  bool verified = false;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> row,
                            NotifyStore(tx).FindVerification(user_id, AsciiLower(address)));
    verified = row && row->verified_at;
    return Status::Ok();
  }));
  return verified;
}

Status EmailVerifier::SendDueLinks(store::Database& db, int64_t limit) const {
  const Timestamp now = options_.clock->Now();
  const Timestamp expire_before = now - kHeldEmailLifetime;
  std::vector<VerificationRow> due;
  bool expire = false;
  // Read first: a pass with nothing to do writes nothing.
  GPUNEX_RETURN_IF_ERROR(db.Read([&](store::Tx& tx) -> Status {
    NotifyStore s(tx);
    GPUNEX_ASSIGN_OR_RETURN(due, s.VerificationsWithoutLink(limit));
    GPUNEX_ASSIGN_OR_RETURN(expire, s.AnyHeldBefore(expire_before));
    return Status::Ok();
  }));
  for (const VerificationRow& v : due) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&](store::Tx& tx) -> Status {
      // Another instance may have sent it since the read.
      GPUNEX_ASSIGN_OR_RETURN(std::optional<VerificationRow> row,
                              NotifyStore(tx).FindVerification(v.user_id, v.address));
      if (!row || row->verified_at || row->last_sent_at) return Status::Ok();
      return SendLink(tx, now, v.user_id, v.address);
    }));
  }
  if (!expire) return Status::Ok();
  return db.Transact(
      [&](store::Tx& tx) -> Status { return NotifyStore(tx).ExpireHeld(expire_before).status(); });
}

Status EmailVerifier::MarkVerified(store::Tx& tx, Timestamp now, const std::string& user_id,
                                   std::string_view raw_address) {
  const std::string address = AsciiLower(raw_address);
  NotifyStore s(tx);
  GPUNEX_RETURN_IF_ERROR(s.InsertVerification({user_id, address, now, std::nullopt, now}).status());
  GPUNEX_RETURN_IF_ERROR(s.MarkVerified(user_id, address, now).status());
  return s.ReleaseHeld(user_id, address, now - kHeldEmailLifetime, now).status();
}

}  // namespace gpunex::platform::notify
